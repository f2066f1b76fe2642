"""The pendulum bench (launch/bench.launch.py) as the runner composes it.

sim:=true starts the simulated pendulum of bam_sim; sim:=false the Dynamixel
driver of bam_drivers on the servos at ``port`` and, with hardware:=emulated,
the Dynamixel emulator first (a plain process of bam_drivers: servos behind a
pseudo-terminal at ``port``, driven by bam_sim physics). The trajectory node of
bam_identify runs on either, and with record:=true the recorder. Every node
runs in ``namespace`` with /clock remapped into it (see bam_bringup.runner).
"""

from __future__ import annotations

from dataclasses import dataclass

from bam_bringup.composition import Composition, NodeSpec, Refusal, argument, given, namespace


@dataclass(frozen=True)
class BenchArgs:
    """The launch arguments of the bench, with their defaults and descriptions."""

    actuator: str = argument("mx64", "actuator type (mx64, mx106, erob80_50, erob80_100; "
                             "sim:=false mx64, mx106)")
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
    driver: str = argument("dynamixel", "hardware driver of sim:=false (dynamixel)")
    hardware: str = argument("real", "sim:=false on real servos (real) or on the Dynamixel "
                             "emulator (emulated)")
    port: str = argument("", "serial port of the servos (sim:=false; \"\" = the driver's "
                         "/dev/ttyUSB0; with hardware:=emulated, the path where the emulator "
                         "creates its pseudo-terminal)")
    ids: tuple[int, ...] = argument((1,), "Dynamixel ids on the bus, a list such as [1, 2] "
                                    "(sim:=false; the first is the pendulum's joint)")
    servo_model: str = argument("mx64_p1", "control table of the servos (mx64_p1, mx106_p1, "
                                "mx64_p2, mx106_p2, xm430_w350; sim:=false)")
    rate: float = argument(200.0, "bus cycles (read, write, publish) per second of the "
                           "driver, Hz (sim:=false)")
    namespace: str = argument("", "namespace of the bench's nodes and topics, e.g. bench1 "
                              "(\"\" = none); /clock is remapped into it")


REFUSALS = (
    Refusal(lambda a: not a.sim and a.driver != "dynamixel",
            "sim:=false drives the hardware through driver:=dynamixel (bam_drivers), the only "
            "driver of the bench"),
    Refusal(lambda a: a.hardware not in ("real", "emulated"),
            "hardware:= must be real (servos on port) or emulated (the Dynamixel emulator)"),
    Refusal(lambda a: a.sim and a.hardware == "emulated",
            "hardware:=emulated runs the driver on the emulator; give sim:=false with it"),
    Refusal(lambda a: a.hardware == "emulated" and not a.port,
            "hardware:=emulated needs port:=PATH, where the emulator creates its "
            "pseudo-terminal (e.g. port:=/tmp/ttyDXL)"),
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
    else:  # driver:=dynamixel, the only driver (REFUSALS)
        if a.hardware == "emulated":
            nodes.append(NodeSpec("dynamixel_emulator", "bam_drivers", "dynamixel_emulator",
                                  given(port=a.port, ids=a.ids, servo_model=a.servo_model,
                                        params_file=a.params, **bench),
                                  ns, process=True, ready="READY"))
        nodes.append(NodeSpec("dynamixel", "bam_drivers", "dynamixel", given(
            actuator=a.actuator, port=a.port, ids=a.ids, servo_model=a.servo_model,
            rate=a.rate, **bench), ns))
    nodes.append(NodeSpec("trajectory", "bam_identify", "trajectory", given(
        joint_name="pendulum", command_rate=200.0, use_sim_time=a.sim,
        protocol_file=a.protocol), ns))
    if a.record:
        nodes.append(NodeSpec("recorder", "bam_identify", "recorder", given(
            storage="mcap", use_sim_time=a.sim, output=a.bag), ns))
    return nodes


BENCH = Composition("bench", BenchArgs, bench_nodes, REFUSALS)
