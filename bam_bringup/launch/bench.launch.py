"""The pendulum bench, simulated or on hardware.

    ros2 launch bam_bringup bench.launch.py actuator:=mx64 sim:=true record:=true
    ros2 launch bam_bringup bench.launch.py namespace:=bench1 real_time_factor:=0.0
    ros2 launch bam_bringup bench.launch.py sim:=false port:=/dev/ttyUSB0 ids:=[1]
    ros2 launch bam_bringup bench.launch.py sim:=false hardware:=emulated port:=/tmp/ttyDXL

sim:=true starts the simulated pendulum (bam_sim); sim:=false the Dynamixel
driver (bam_drivers) and, with hardware:=emulated, its emulator (a plain
process: options on its command line). The trajectory node (and with
record:=true the recorder) of bam_identify runs on either. Every node runs in
namespace:= with /clock remapped into it, so benches run side by side.

The in-process runner (`bench serve`) starts the same nodes from
bam_bringup/bench_composition.py; test_bringup_launch_agreement.py checks that
the two declare the same arguments, nodes and parameters.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, GroupAction, OpaqueFunction
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import EqualsSubstitution, LaunchConfiguration, NotEqualsSubstitution
from launch_ros.actions import Node, SetParameter
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import ExecutableInPackage

CLOCK = [("/clock", "clock")]  # the bench's clock, in its namespace


def number(name: str) -> ParameterValue:
    """A float argument as a double parameter (mass:=1 reads as 1.0)."""
    return ParameterValue(LaunchConfiguration(name), value_type=float)


def given(name: str) -> IfCondition:
    """The argument was given: "" keeps the node's own default."""
    return IfCondition(NotEqualsSubstitution(LaunchConfiguration(name), ""))


def equals(name: str, value: str) -> IfCondition:
    """The argument has this value."""
    return IfCondition(EqualsSubstitution(LaunchConfiguration(name), value))


def refuse(context) -> None:
    """Argument combinations that cannot work: one line naming the fix."""
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    sim = value("sim").lower() in ("true", "1")
    if not sim and value("driver") != "dynamixel":
        raise RuntimeError("sim:=false drives the hardware through driver:=dynamixel "
                           "(bam_drivers), the only driver of the bench")
    if value("hardware") not in ("real", "emulated"):
        raise RuntimeError("hardware:= must be real (servos on port) or emulated (the "
                           "Dynamixel emulator)")
    if sim and value("hardware") == "emulated":
        raise RuntimeError("hardware:=emulated runs the driver on the emulator; give "
                           "sim:=false with it")
    if value("hardware") == "emulated" and not value("port"):
        raise RuntimeError("hardware:=emulated needs port:=PATH, where the emulator creates "
                           "its pseudo-terminal (e.g. port:=/tmp/ttyDXL)")


def emulator(context) -> list:
    """The Dynamixel emulator; a function only to spread ids:=[1, 2] over --ids 1 2."""
    ids = LaunchConfiguration("ids").perform(context).strip("[] ").replace(",", " ").split()
    return [ExecuteProcess(
        cmd=[ExecutableInPackage("dynamixel_emulator", "bam_drivers"),
             "--port", LaunchConfiguration("port"), "--ids", *ids,
             "--servo-model", LaunchConfiguration("servo_model"),
             "--params-file", LaunchConfiguration("params"),
             "--mass", LaunchConfiguration("mass"), "--length", LaunchConfiguration("length"),
             "--arm-mass", LaunchConfiguration("arm_mass")],
        name="dynamixel_emulator", output="screen")]


def generate_launch_description() -> LaunchDescription:
    sim = LaunchConfiguration("sim")
    namespace = LaunchConfiguration("namespace")
    bench = {"mass": number("mass"), "length": number("length"), "arm_mass": number("arm_mass")}
    return LaunchDescription([
        DeclareLaunchArgument("actuator", default_value="mx64", description=(
            "actuator type (mx64, mx106, erob80_50, erob80_100; sim:=false mx64, mx106)")),
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
            "hardware driver of sim:=false (dynamixel)")),
        DeclareLaunchArgument("hardware", default_value="real", description=(
            "sim:=false on real servos (real) or on the Dynamixel emulator (emulated)")),
        DeclareLaunchArgument("port", default_value="", description=(
            "serial port of the servos (sim:=false; \"\" = the driver's /dev/ttyUSB0; with "
            "hardware:=emulated, the path where the emulator creates its pseudo-terminal)")),
        DeclareLaunchArgument("ids", default_value="[1]", description=(
            "Dynamixel ids on the bus, a list such as [1, 2] (sim:=false; the first is the "
            "pendulum's joint)")),
        DeclareLaunchArgument("servo_model", default_value="mx64_p1", description=(
            "control table of the servos (mx64_p1, mx106_p1, mx64_p2, mx106_p2, xm430_w350; "
            "sim:=false)")),
        DeclareLaunchArgument("rate", default_value="200.0", description=(
            "bus cycles (read, write, publish) per second of the driver, Hz (sim:=false)")),
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

        GroupAction(condition=UnlessCondition(sim), actions=[
            OpaqueFunction(function=emulator, condition=equals("hardware", "emulated")),
            # port:="" leaves the driver its own default port.
            SetParameter("port", LaunchConfiguration("port"), condition=given("port")),
            Node(package="bam_drivers", executable="dynamixel", name="dynamixel",
                 namespace=namespace,
                 parameters=[{"actuator": LaunchConfiguration("actuator"),
                              "ids": LaunchConfiguration("ids"),
                              "servo_model": LaunchConfiguration("servo_model"),
                              "rate": number("rate"), **bench}],
                 remappings=CLOCK, output="screen",
                 condition=equals("driver", "dynamixel")),
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
