"""The pendulum bench, simulated or on hardware.

    ros2 launch bam_bringup bench.launch.py actuator:=mx64 sim:=true record:=true
    ros2 launch bam_bringup bench.launch.py namespace:=bench1 real_time_factor:=0.0
    ros2 launch bam_bringup bench.launch.py sim:=false port:=/dev/ttyUSB0 ids:=[1]
    ros2 launch bam_bringup bench.launch.py sim:=false hardware:=emulated port:=/tmp/ttyDXL
    ros2 launch bam_bringup bench.launch.py sim:=false driver:=feetech actuator:=sts3215 \
        port:=/dev/ttyACM0 mass:=0.35 length:=0.1
    ros2 launch bam_bringup bench.launch.py sim:=false driver:=erob interface:=eth0 \
        actuator:=erob80_100 mass:=3.1 length:=0.5
    ros2 launch bam_bringup bench.launch.py sim:=false driver:=erob hardware:=emulated \
        interface:=bamec0 actuator:=erob80_100    # as root: the emulator's veth pair

sim:=true starts the simulated pendulum (bam_sim); sim:=false a driver of
bam_drivers: driver:=dynamixel or driver:=feetech (servos on port:=) or
driver:=erob (an eRob over EtherCAT on interface:=) and, with
hardware:=emulated, the driver's emulator (a plain process: options on its
command line; the EtherCAT one makes a veth pair in a network namespace of its
own, which needs root). The trajectory node (and with record:=true the
recorder) of bam_identify runs on either. Every node runs in namespace:= with
/clock remapped into it, so benches run side by side.

Where ROS 2 launch is absent, `bench serve` reads this file itself
(bam_bringup/launch_standin/, with a stand-in for the launch actions used here)
and starts the nodes it describes in one process.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, GroupAction, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import (
    AndSubstitution,
    EqualsSubstitution,
    LaunchConfiguration,
    NotEqualsSubstitution,
    NotSubstitution,
    OrSubstitution,
)
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import ExecutableInPackage

from bam_drivers.dynamixel.control_table import TABLES as DYNAMIXEL_TABLES
from bam_drivers.feetech.control_table import TABLES as FEETECH_TABLES
from bam_sim.models.servo.actuators import ACTUATORS, DRIVERS, driven_by

CLOCK = [("/clock", "clock")]  # the bench's clock, in its namespace
# What each driver of the registry drives, and on what; those on a serial port share
# one emulator (the others are on an EtherCAT interface).
BUSES = {"dynamixel": "Dynamixel servos on port", "feetech": "Feetech STS servos on port",
         "erob": "eRob drives over EtherCAT on interface"}
SERIAL = ("dynamixel", "feetech")


def number(name: str) -> ParameterValue:
    """A float argument as a double parameter (mass:=1 reads as 1.0)."""
    return ParameterValue(LaunchConfiguration(name), value_type=float)


def given(name: str) -> IfCondition:
    """The argument was given: "" keeps the node's own default."""
    return IfCondition(NotEqualsSubstitution(LaunchConfiguration(name), ""))


def equals(name: str, value: str) -> IfCondition:
    """The argument has this value."""
    return IfCondition(EqualsSubstitution(LaunchConfiguration(name), value))


def driven(driver: str) -> IfCondition:
    """sim:=false with this driver:=."""
    return IfCondition(AndSubstitution(NotSubstitution(LaunchConfiguration("sim")),
                                       EqualsSubstitution(LaunchConfiguration("driver"), driver)))


def serial_driver() -> IfCondition:
    """sim:=false with a driver of servos on a serial port (dynamixel or feetech)."""
    driver = LaunchConfiguration("driver")
    return IfCondition(AndSubstitution(
        NotSubstitution(LaunchConfiguration("sim")),
        OrSubstitution(*(EqualsSubstitution(driver, name) for name in SERIAL))))


def one_of(names) -> str:
    """``a, b or c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def refuse(context) -> None:
    """Argument combinations that cannot work: one line naming the fix. Which driver runs
    which actuator is the registry's (actuators.driven_by), not this file's."""
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    sim = value("sim").lower() in ("true", "1")
    driver, hardware, actuator = value("driver"), value("hardware"), value("actuator")
    emulated = hardware == "emulated"
    if driver not in DRIVERS:
        raise RuntimeError("driver:= must be " + one_of(
            f"{name} ({BUSES[name]})" for name in DRIVERS))
    if hardware not in ("real", "emulated"):
        raise RuntimeError("hardware:= must be real (the actuator on port or interface) or "
                           "emulated (the driver's emulator)")
    if sim and emulated:
        raise RuntimeError("hardware:=emulated runs the driver on the emulator; give "
                           "sim:=false with it")
    if not sim and actuator not in driven_by(driver):
        others = [name for name in DRIVERS if actuator in driven_by(name)]
        fix = f", or driver:={others[0]} for the {ACTUATORS[actuator].title}" if others else ""
        raise RuntimeError(f"driver:={driver} drives {BUSES[driver].split(' on ')[0]}: give "
                           f"actuator:={one_of(driven_by(driver))}{fix}")
    if emulated and driver in SERIAL and not value("port"):
        raise RuntimeError("hardware:=emulated needs port:=PATH, where the emulator creates "
                           "its pseudo-terminal (e.g. port:=/tmp/ttyDXL)")
    if emulated and driver not in SERIAL and not value("interface"):
        raise RuntimeError(f"hardware:=emulated with driver:={driver} needs interface:=NAME, "
                           "the name the emulator gives the master's end of its veth pair "
                           "(e.g. interface:=bamec0)")


def servo_model(context) -> str:
    """servo_model:=, else the driver's: Feetech's tables are named after the actuators."""
    model = LaunchConfiguration("servo_model").perform(context)
    if model or LaunchConfiguration("driver").perform(context) != "feetech":
        return model or "mx64_p1"
    return LaunchConfiguration("actuator").perform(context)


def servo_emulator(context) -> list:
    """The servos' emulator (Dynamixel or Feetech); a function to spread ids:=[1, 2] over
    --ids 1 2 and to pick the servo model."""
    ids = LaunchConfiguration("ids").perform(context).strip("[] ").replace(",", " ").split()
    return [ExecuteProcess(
        cmd=[ExecutableInPackage("serial_servo_emulator", "bam_drivers"),
             "--port", LaunchConfiguration("port"), "--ids", *ids,
             "--servo-model", servo_model(context),
             "--params-file", LaunchConfiguration("params"),
             "--mass", LaunchConfiguration("mass"), "--length", LaunchConfiguration("length"),
             "--arm-mass", LaunchConfiguration("arm_mass"), "--exit-with-parent"],
        name="serial_servo_emulator", output="screen")]


def generate_launch_description() -> LaunchDescription:
    sim = LaunchConfiguration("sim")
    namespace = LaunchConfiguration("namespace")
    bench = {"mass": number("mass"), "length": number("length"), "arm_mass": number("arm_mass")}
    return LaunchDescription([
        DeclareLaunchArgument("actuator", default_value="mx64", description=(
            f"actuator type ({', '.join(ACTUATORS)}; sim:=false: "
            + "; ".join(f"{', '.join(driven_by(d))} with driver:={d}" for d in DRIVERS)
            + ")")),
        DeclareLaunchArgument("model", default_value="m4", description=(
            "friction model of the simulated actuator (m1..m6; ep_* with params:=FILE)")),
        DeclareLaunchArgument("params", default_value="", description=(
            "parameter file of the simulated actuator (\"\" = published defaults; with "
            "hardware:=emulated, the emulator's physics)")),
        DeclareLaunchArgument("sim", default_value="true", description=(
            "simulate the bench (false = hardware drivers)")),
        DeclareLaunchArgument("real_time_factor", default_value="1.0", description=(
            "simulation speed relative to real time (0 = as fast as possible)")),
        DeclareLaunchArgument("record", default_value="false", description=(
            "record the bench topics to a rosbag2 bag")),
        DeclareLaunchArgument("bag", default_value="", description=(
            "bag path of the recording (\"\" = bags/bench_<date>)")),
        DeclareLaunchArgument("protocol", default_value="", description=(
            "protocol YAML (trajectories x gains x repetitions) to play at start")),
        DeclareLaunchArgument("mass", default_value="1.0", description=(
            "point mass of the pendulum, kg")),
        DeclareLaunchArgument("length", default_value="0.15", description=(
            "pendulum length, m")),
        DeclareLaunchArgument("arm_mass", default_value="0.0", description=(
            "mass of the pendulum arm (uniform rod), kg")),
        DeclareLaunchArgument("driver", default_value="dynamixel", description=(
            "hardware driver of sim:=false ("
            + "; ".join(f"{d}: {BUSES[d]}" for d in DRIVERS) + ")")),
        DeclareLaunchArgument("hardware", default_value="real", description=(
            "sim:=false on real hardware (real) or on the driver's emulator (emulated; "
            "driver:=erob needs root)")),
        DeclareLaunchArgument("port", default_value="", description=(
            "serial port of the servos (driver:=dynamixel or feetech; \"\" = the driver's "
            "/dev/ttyUSB0 or /dev/ttyACM0; with hardware:=emulated, the path where the emulator "
            "creates its pseudo-terminal)")),
        DeclareLaunchArgument("interface", default_value="", description=(
            "network interface of the EtherCAT line (driver:=erob; \"\" = the driver's eth0; "
            "with hardware:=emulated, the name the emulator gives the master's end of its veth "
            "pair, e.g. bamec0)")),
        DeclareLaunchArgument("ids", default_value="[1]", description=(
            "servo ids on the bus, a list such as [1, 2] (driver:=dynamixel or feetech; the "
            "first is the pendulum's joint)")),
        DeclareLaunchArgument("servo_model", default_value="", description=(
            f"control table of the servos (driver:=dynamixel: {', '.join(DYNAMIXEL_TABLES)}, "
            f"\"\" = mx64_p1; driver:=feetech: {', '.join(FEETECH_TABLES)}, \"\" = the "
            "actuator's)")),
        DeclareLaunchArgument("rate", default_value="", description=(
            "bus cycles (read, write, publish) per second of the driver, Hz (sim:=false; \"\" = "
            "the driver's: 200 Hz Dynamixel and Feetech, 1000 Hz eRob)")),
        DeclareLaunchArgument("namespace", default_value="", description=(
            "namespace of the bench's nodes and topics, e.g. bench1 (\"\" = none); /clock is "
            "remapped into it")),
        OpaqueFunction(function=refuse),

        Node(package="bam_sim", executable="pendulum", name="pendulum", namespace=namespace,
             parameters=[{"joint_name": "pendulum", "rate": 1000.0, "publish_clock": True,
                          "actuator": LaunchConfiguration("actuator"),
                          "model": LaunchConfiguration("model"),
                          "params_file": LaunchConfiguration("params"),
                          "real_time_factor": number("real_time_factor"), **bench}],
             remappings=CLOCK, output="screen", condition=IfCondition(sim)),

        # sim:=false: one driver (driver:=), after its emulator with hardware:=emulated.
        # port:= and rate:= "" leave the driver its own default.
        # Servos on a serial port (driver:=dynamixel or feetech): one emulator for both.
        # The servo model is servo_model:= if given, else the driver's: Feetech's is the
        # actuator's (the later SetParameter of a name wins).
        GroupAction(condition=serial_driver(), actions=[
            OpaqueFunction(function=servo_emulator, condition=equals("hardware", "emulated")),
            SetParameter("port", LaunchConfiguration("port"), condition=given("port")),
            SetParameter("rate", number("rate"), condition=given("rate")),
            SetParameter("servo_model", LaunchConfiguration("actuator"),
                         condition=equals("driver", "feetech")),
            SetParameter("servo_model", LaunchConfiguration("servo_model"),
                         condition=given("servo_model")),
            Node(package="bam_drivers", executable="dynamixel", name="dynamixel",
                 namespace=namespace,
                 parameters=[{"actuator": LaunchConfiguration("actuator"),
                              "ids": LaunchConfiguration("ids"), **bench}],
                 remappings=CLOCK, output="screen", condition=equals("driver", "dynamixel")),
            Node(package="bam_drivers", executable="feetech", name="feetech",
                 namespace=namespace,
                 parameters=[{"actuator": LaunchConfiguration("actuator"),
                              "ids": LaunchConfiguration("ids"), **bench}],
                 remappings=CLOCK, output="screen", condition=equals("driver", "feetech")),
        ]),
        GroupAction(condition=driven("erob"), actions=[
            ExecuteProcess(
                cmd=[ExecutableInPackage("ethercat_emulator", "bam_drivers"),
                     "--interface", LaunchConfiguration("interface"),
                     "--drives", LaunchConfiguration("actuator"),
                     "--params-file", LaunchConfiguration("params"),
                     "--mass", LaunchConfiguration("mass"),
                     "--length", LaunchConfiguration("length"),
                     "--arm-mass", LaunchConfiguration("arm_mass"),
                     "--exit-with-parent"],
                name="ethercat_emulator", output="screen",
                condition=equals("hardware", "emulated")),
            SetParameter("interface", LaunchConfiguration("interface"),
                         condition=given("interface")),
            SetParameter("rate", number("rate"), condition=given("rate")),
            Node(package="bam_drivers", executable="erob", name="erob", namespace=namespace,
                 parameters=[{"actuator": LaunchConfiguration("actuator"),
                              # a list of one string: the pendulum's drive
                              "drive_models": [[LaunchConfiguration("actuator")]], **bench}],
                 remappings=CLOCK, output="screen"),
        ]),

        Node(package="bam_identify", executable="trajectory", name="trajectory",
             namespace=namespace,
             parameters=[{"joint_name": "pendulum", "command_rate": 200.0, "use_sim_time": sim,
                          "protocol_file": LaunchConfiguration("protocol")}],
             remappings=CLOCK, output="screen"),

        Node(package="bam_identify", executable="recorder", name="recorder",
             namespace=namespace,
             parameters=[{"storage": "mcap", "use_sim_time": sim,
                          "output": LaunchConfiguration("bag")}],
             remappings=CLOCK, output="screen",
             condition=IfCondition(LaunchConfiguration("record"))),
    ])
