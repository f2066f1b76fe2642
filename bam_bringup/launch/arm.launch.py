"""The 2R arm, simulated in MuJoCo or on hardware.

    ros2 launch bam_bringup arm.launch.py arm:=dynamixel params:=,out/mx64_m6.yaml
    ros2 launch bam_bringup arm.launch.py arm:=erob models:=m1 real_time_factor:=0.0
    ros2 launch bam_bringup arm.launch.py mjcf:=robot.xml joints:=joints.yaml params:=[...]
    ros2 launch bam_bringup arm.launch.py sim:=false port:=/dev/ttyUSB0 ids:="[1, 2]"
    ros2 launch bam_bringup arm.launch.py sim:=false arm:=feetech port:=/dev/ttyACM0
    ros2 launch bam_bringup arm.launch.py sim:=false arm:=erob interface:=eth0

sim:=true starts the MuJoCo arm node (bam_sim); sim:=false the arm's driver
(bam_drivers) on the real arm: arm:=dynamixel the Dynamixel driver on port:=,
arm:=feetech the Feetech driver (STS3215) on port:=, arm:=erob the eRob driver
on the EtherCAT line at interface:= (the shoulder's eRob80:100 first along the
line, then the elbow's eRob80:50). All publish the same topics, in
namespace:= with /clock remapped into it. Per-joint arguments of the simulated
arm (params, models, gains, actuators, joint_names) are lists in joint order
(shoulder, elbow), written a,b or [a, b]: one entry applies to
every joint, an empty entry keeps that joint's default, "" the node's own; ids
and the drivers' joint_names are YAML lists.

Where ROS 2 launch is absent, `bench serve --config arm` reads this file
itself (bam_bringup/launch_standin/, with a stand-in for the launch actions used
here) and starts the nodes it describes in one process.
"""

from typing import List

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import (
    AndSubstitution,
    EqualsSubstitution,
    LaunchConfiguration,
    NotSubstitution,
    PythonExpression,
)
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from bam_sim.mujoco_arm.shipped_arms import ARMS

CLOCK = [("/clock", "clock")]  # the arm's clock, in its namespace
# The simulated arm's per-joint lists: parameter, its argument and the entries' type.
PER_JOINT = {"params_files": ("params", str), "models": ("models", str),
             "gains": ("gains", float), "actuators": ("actuators", str),
             "joints": ("joint_names", str)}


def number(name: str) -> ParameterValue:
    """A float argument as a double parameter (real_time_factor:=0 reads as 0.0)."""
    return ParameterValue(LaunchConfiguration(name), value_type=float)


def real(arm: str) -> IfCondition:
    """sim:=false on this shipped arm:=."""
    return IfCondition(AndSubstitution(NotSubstitution(LaunchConfiguration("sim")),
                                       EqualsSubstitution(LaunchConfiguration("arm"), arm)))


def refuse(context) -> None:
    """Argument combinations that cannot work: one line naming the fix."""
    def value(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    for name, kind in PER_JOINT.values():  # a malformed list, whether or not it is used
        if value(name):
            per_joint(name, value(name), kind)
    sim = value("sim").lower() in ("true", "1")
    if not sim and value("arm") not in ARMS:
        raise RuntimeError("sim:=false drives a shipped arm's hardware: arm:=dynamixel "
                           "(Dynamixel servos on port), arm:=feetech (Feetech STS3215 servos on "
                           "port) or arm:=erob (eRob drives over EtherCAT on interface)")
    if not sim and value("gains"):
        raise RuntimeError("gains:= sets the simulated arm's initial gains; on the real arm "
                           "(sim:=false) send gains on /bam/commands")


def per_joint(name: str, text: str, kind: type = str) -> list:
    """A per-joint list written a,b or [a, b] (an entry may be empty: that joint's default)."""
    inner = text.strip()
    if inner.startswith("[") != inner.endswith("]"):
        raise RuntimeError(f"argument {name}:={text} is not a list; write a,b or [a, b]")
    items = inner.removeprefix("[").removesuffix("]").split(",")
    return [entry(name, item.strip().strip("'\""), kind) for item in items]


def entry(name: str, item: str, kind: type) -> object:
    """One entry of a per-joint list as ``kind``; a number must be a finite one."""
    if kind is str:
        return item
    try:
        value = kind(item)
    except ValueError:
        value = float("nan")
    if not abs(value) < float("inf"):
        raise RuntimeError(f"entry {item!r} of argument {name} must be a number")
    return value


def arm(context) -> list:
    """The simulated arm; a function to leave out the per-joint lists not given ("" keeps
    the node's own default), which launch_ros parameters cannot omit, and to read them."""
    given = {parameter: per_joint(name, text, kind)
             for parameter, (name, kind) in PER_JOINT.items()
             if (text := LaunchConfiguration(name).perform(context))}
    return [Node(package="bam_sim", executable="arm", name="arm",
                 namespace=LaunchConfiguration("namespace"),
                 parameters=[{"publish_clock": True, "arm": LaunchConfiguration("arm"),
                              "mjcf": LaunchConfiguration("mjcf"),
                              "joint_map": LaunchConfiguration("joints"),
                              "real_time_factor": number("real_time_factor"),
                              "viewer": LaunchConfiguration("viewer"), **given}],
                 remappings=CLOCK, output="screen")]


def generate_launch_description() -> LaunchDescription:
    sim = LaunchConfiguration("sim")
    namespace = LaunchConfiguration("namespace")
    # "" = the shipped arms' joints (the drivers would name them joint<id>)
    joints = ParameterValue(PythonExpression(["'", LaunchConfiguration("joint_names"),
                                              "' or '[shoulder, elbow]'"]),
                            value_type=List[str])
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="dynamixel", description=(
            "shipped arm (dynamixel = MX-106 shoulder, MX-64 elbow; feetech = STS3215 "
            "shoulder and elbow; erob = eRob80:100 shoulder, eRob80:50 elbow)")),
        DeclareLaunchArgument("mjcf", default_value="", description=(
            "MJCF file of another robot (\"\" = the shipped model of arm); with it, set "
            "joints (a joint map) or joint_names and actuators")),
        DeclareLaunchArgument("joints", default_value="", description=(
            "joint map of the mjcf robot (YAML: each servo joint's actuator, gain and motor), "
            "as the robot fit reads it")),
        DeclareLaunchArgument("params", default_value="", description=(
            "parameter file per joint, in joint order, e.g. ['', out/mx64_m6.yaml] (\"\" or an "
            "empty entry = the published set of the joint's actuator and model)")),
        DeclareLaunchArgument("models", default_value="", description=(
            "friction model per joint (m1..m6; ep_* with a parameter file), e.g. [m1] (\"\" = "
            "the file's, else the arm's default)")),
        DeclareLaunchArgument("gains", default_value="", description=(
            "initial gain kp per joint of the simulated arm, e.g. [32.0, 16.0] (\"\" = each "
            "actuator's second Table I gain)")),
        DeclareLaunchArgument("actuators", default_value="", description=(
            "bam_sim actuator per joint, for an mjcf robot (\"\" = the arm's)")),
        DeclareLaunchArgument("joint_names", default_value="", description=(
            "joint names in order (\"\" = the arm's, [shoulder, elbow])")),
        DeclareLaunchArgument("sim", default_value="true", description=(
            "simulate the arm in MuJoCo (false = the arm's driver on the real arm: Dynamixel, "
            "Feetech or eRob)")),
        DeclareLaunchArgument("real_time_factor", default_value="1.0", description=(
            "simulation speed relative to real time (0 = as fast as possible)")),
        DeclareLaunchArgument("viewer", default_value="false", description=(
            "open MuJoCo's viewer (needs a display; without one a warning only)")),
        DeclareLaunchArgument("port", default_value="/dev/ttyUSB0", description=(
            "serial port of the servo bus (sim:=false arm:=dynamixel or feetech)")),
        DeclareLaunchArgument("ids", default_value="[1, 2]", description=(
            "servo ids per joint, in joint order (sim:=false arm:=dynamixel or feetech)")),
        DeclareLaunchArgument("servo_model", default_value="mx106_p1", description=(
            "control table of the servos (sim:=false arm:=dynamixel; the MX-64 and MX-106 "
            "share the protocol 1.0 table)")),
        DeclareLaunchArgument("protocol", default_value="1", description=(
            "Dynamixel protocol, 1 or 2, matching servo_model (sim:=false arm:=dynamixel)")),
        DeclareLaunchArgument("interface", default_value="eth0", description=(
            "network interface of the EtherCAT line, drives in joint order along it "
            "(sim:=false arm:=erob)")),
        DeclareLaunchArgument("namespace", default_value="", description=(
            "namespace of the arm's nodes and topics, e.g. arm1 (\"\" = none); /clock is "
            "remapped into it")),
        OpaqueFunction(function=refuse),

        OpaqueFunction(function=arm, condition=IfCondition(sim)),

        Node(package="bam_drivers", executable="dynamixel", name="dynamixel", namespace=namespace,
             parameters=[{"port": LaunchConfiguration("port"), "ids": LaunchConfiguration("ids"),
                          "servo_model": LaunchConfiguration("servo_model"),
                          "protocol": LaunchConfiguration("protocol"), "joint_names": joints}],
             remappings=CLOCK, output="screen", condition=real("dynamixel")),

        # Its servo model (sts3215) and bench actuator are the driver's defaults.
        Node(package="bam_drivers", executable="feetech", name="feetech", namespace=namespace,
             parameters=[{"port": LaunchConfiguration("port"), "ids": LaunchConfiguration("ids"),
                          "joint_names": joints}],
             remappings=CLOCK, output="screen", condition=real("feetech")),

        Node(package="bam_drivers", executable="erob", name="erob", namespace=namespace,
             parameters=[{"interface": LaunchConfiguration("interface"),
                          "drive_models": [j.actuator for j in ARMS["erob"].joints],
                          "joint_names": joints}],
             remappings=CLOCK, output="screen", condition=real("erob")),
    ])
