"""The pendulum bench (launch/bench.launch.py) as the runner composes it.

sim:=true starts the simulated pendulum of bam_sim; sim:=false a hardware
driver of bam_drivers: driver:=dynamixel the Dynamixel driver on the servos at
``port``, driver:=feetech the Feetech driver on the STS servos at ``port``,
driver:=erob the eRob driver on the EtherCAT line at ``interface``. With
hardware:=emulated the driver's emulator starts first (a plain process of
bam_drivers driven by bam_sim physics: Dynamixel or Feetech servos behind a
pseudo-terminal at ``port``, or an eRob drive behind a veth pair whose
master's end is ``interface``, which needs root). The trajectory node of
bam_identify runs on either, and with record:=true the recorder. Every node
runs in ``namespace`` with /clock remapped into it (see bam_bringup.runner).
"""

from __future__ import annotations

from dataclasses import dataclass

from bam_bringup.composition import Composition, NodeSpec, Refusal, argument, given, namespace


@dataclass(frozen=True)
class BenchArgs:
    """The launch arguments of the bench, with their defaults and descriptions."""

    actuator: str = argument("mx64", "actuator type (mx64, mx106, xl320, xl330, sts3215, "
                             "sts3215_12v, erob80_50, erob80_100; sim:=false: mx64, mx106, "
                             "xl320, xl330 with driver:=dynamixel, sts3215, sts3215_12v with "
                             "driver:=feetech, erob80_50, erob80_100 with driver:=erob)")
    model: str = argument("m4", "friction model of the simulated actuator (m1..m6; ep_* "
                          "with params:=FILE)")
    params: str = argument("", "parameter file of the simulated actuator (\"\" = published "
                           "defaults; with hardware:=emulated, the emulator's physics)")
    sim: bool = argument(True, "simulate the bench (false = hardware drivers)")
    real_time_factor: float = argument(1.0, "simulation speed relative to real time (0 = as "
                                       "fast as possible)")
    record: bool = argument(False, "record the bench topics to a rosbag2 bag")
    bag: str = argument("", "bag path of the recording (\"\" = bags/bench_<date>)")
    protocol: str = argument("", "protocol YAML (trajectories x gains x repetitions) to play "
                             "at start")
    mass: float = argument(1.0, "point mass of the pendulum, kg")
    length: float = argument(0.15, "pendulum length, m")
    arm_mass: float = argument(0.0, "mass of the pendulum arm (uniform rod), kg")
    driver: str = argument("dynamixel", "hardware driver of sim:=false (dynamixel: Dynamixel "
                           "servos on port; feetech: Feetech STS servos on port; erob: eRob "
                           "drives over EtherCAT on interface)")
    hardware: str = argument("real", "sim:=false on real hardware (real) or on the driver's "
                             "emulator (emulated; driver:=erob needs root)")
    port: str = argument("", "serial port of the servos (driver:=dynamixel or feetech; \"\" = "
                         "the driver's /dev/ttyUSB0 or /dev/ttyACM0; with hardware:=emulated, "
                         "the path where the emulator creates its pseudo-terminal)")
    interface: str = argument("", "network interface of the EtherCAT line (driver:=erob; "
                              "\"\" = the driver's eth0; with hardware:=emulated, the name the "
                              "emulator gives the master's end of its veth pair, e.g. bamec0)")
    ids: tuple[int, ...] = argument((1,), "servo ids on the bus, a list such as [1, 2] "
                                    "(driver:=dynamixel or feetech; the first is the "
                                    "pendulum's joint)")
    servo_model: str = argument("", "control table of the servos (driver:=dynamixel: mx64_p1, "
                                "mx106_p1, mx64_p2, mx106_p2, xm430_w350, xl330_m288, "
                                "xl320, \"\" = mx64_p1; driver:=feetech: sts3215, "
                                "sts3215_12v, \"\" = the actuator's)")
    rate: float | None = argument(None, "bus cycles (read, write, publish) per second of the "
                                  "driver, Hz (sim:=false; \"\" = the driver's: 200 Hz "
                                  "Dynamixel and Feetech, 1000 Hz eRob)")
    namespace: str = argument("", "namespace of the bench's nodes and topics, e.g. bench1 "
                              "(\"\" = none); /clock is remapped into it")


DYNAMIXEL_ACTUATORS = ("mx64", "mx106", "xl320", "xl330")
FEETECH_ACTUATORS = ("sts3215", "sts3215_12v")
SERIAL_DRIVERS = ("dynamixel", "feetech")  # servos on a serial port, one emulator
EROB_ACTUATORS = ("erob80_50", "erob80_100")

REFUSALS = (
    Refusal(lambda a: a.driver not in ("dynamixel", "feetech", "erob"),
            "driver:= must be dynamixel (Dynamixel servos on port), feetech (Feetech STS servos "
            "on port) or erob (eRob drives over EtherCAT on interface)"),
    Refusal(lambda a: a.hardware not in ("real", "emulated"),
            "hardware:= must be real (the actuator on port or interface) or emulated (the "
            "driver's emulator)"),
    Refusal(lambda a: a.sim and a.hardware == "emulated",
            "hardware:=emulated runs the driver on the emulator; give sim:=false with it"),
    Refusal(lambda a: not a.sim and a.driver == "dynamixel"
            and a.actuator not in DYNAMIXEL_ACTUATORS,
            "driver:=dynamixel drives MX and XL servos: give actuator:=mx64, mx106, xl320 or "
            "xl330, driver:=feetech for an STS3215 or driver:=erob for an eRob"),
    Refusal(lambda a: not a.sim and a.driver == "feetech"
            and a.actuator not in FEETECH_ACTUATORS,
            "driver:=feetech drives STS3215 servos: give actuator:=sts3215 or sts3215_12v"),
    Refusal(lambda a: not a.sim and a.driver == "erob" and a.actuator not in EROB_ACTUATORS,
            "driver:=erob drives eRob drives: give actuator:=erob80_50 or erob80_100, or "
            "driver:=dynamixel for an MX servo"),
    Refusal(lambda a: a.hardware == "emulated" and a.driver in SERIAL_DRIVERS and not a.port,
            "hardware:=emulated needs port:=PATH, where the emulator creates its "
            "pseudo-terminal (e.g. port:=/tmp/ttyDXL)"),
    Refusal(lambda a: a.hardware == "emulated" and a.driver == "erob" and not a.interface,
            "hardware:=emulated with driver:=erob needs interface:=NAME, the name the emulator "
            "gives the master's end of its veth pair (e.g. interface:=bamec0)"),
)


def bench_nodes(a: BenchArgs) -> list[NodeSpec]:
    """The nodes of the bench for ``a`` (checked against REFUSALS by the caller)."""
    ns = namespace(a.namespace)
    bench = {"mass": a.mass, "length": a.length, "arm_mass": a.arm_mass}
    nodes = []
    if a.sim:
        nodes.append(NodeSpec("pendulum", "bam_sim", "pendulum", given(
            joint_name="pendulum", rate=1000.0, publish_clock=True, actuator=a.actuator,
            model=a.model, params_file=a.params, real_time_factor=a.real_time_factor,
            **bench), ns))
    else:
        nodes += _driver(a, ns, bench)
    nodes.append(NodeSpec("trajectory", "bam_identify", "trajectory", given(
        joint_name="pendulum", command_rate=200.0, use_sim_time=a.sim,
        protocol_file=a.protocol), ns))
    if a.record:
        nodes.append(NodeSpec("recorder", "bam_identify", "recorder", given(
            storage="mcap", use_sim_time=a.sim, output=a.bag), ns))
    return nodes


def _driver(a: BenchArgs, ns: str, bench: dict) -> list[NodeSpec]:
    """The driver of ``a.driver``, after its emulator with hardware:=emulated."""
    nodes = []
    if a.driver in SERIAL_DRIVERS:
        # Feetech's tables are named after the actuators; "" keeps the Dynamixel default.
        model = a.servo_model or (a.actuator if a.driver == "feetech" else "")
        if a.hardware == "emulated":
            nodes.append(NodeSpec("dynamixel_emulator", "bam_drivers", "dynamixel_emulator",
                                  given(port=a.port, ids=a.ids, servo_model=model,
                                        params_file=a.params, **bench),
                                  ns, process=True, ready="READY"))
        nodes.append(NodeSpec(a.driver, "bam_drivers", a.driver, given(
            actuator=a.actuator, port=a.port, ids=a.ids, servo_model=model, rate=a.rate,
            **bench), ns))
        return nodes
    if a.hardware == "emulated":  # one eRob drive, the pendulum's, behind a veth pair
        nodes.append(NodeSpec("ethercat_emulator", "bam_drivers", "ethercat_emulator",
                              given(interface=a.interface, drives=(a.actuator,),
                                    params_file=a.params, **bench),
                              ns, process=True, ready="READY"))
    nodes.append(NodeSpec("erob", "bam_drivers", "erob", given(
        actuator=a.actuator, drive_models=(a.actuator,), interface=a.interface, rate=a.rate,
        **bench), ns))
    return nodes


BENCH = Composition("bench", BenchArgs, bench_nodes, REFUSALS)
