"""ros2_control on the bench or a shipped arm: controller_manager beside our sim or driver.

    ros2 launch bam_bringup control.launch.py                  # the simulated pendulum bench
    ros2 launch bam_bringup control.launch.py sim:=false driver:=feetech actuator:=sts3215 \
        port:=/dev/ttyACM0
    ros2 launch bam_bringup control.launch.py arm:=erob namespace:=arm1
    ros2 launch bam_bringup control.launch.py arm:=dynamixel sim:=false port:=/dev/ttyUSB0

arm:="" (the default) includes bench.launch.py, arm:=NAME arm.launch.py with that
shipped arm; sim:= picks our simulator or the driver there, and every other
argument is that file's own (see its arguments). Beside it, in its namespace:
robot_state_publisher with urdf/<robot>.urdf (robot: the arm, else pendulum),
whose <ros2_control> block is topic_based_ros2_control's TopicBasedSystem on
the node's relative topics joint_commands and joint_states; controller_manager
(ros2_control_node) with config/<robot>_controllers.yaml; spawners that start
joint_state_broadcaster and joint_trajectory_controller and load
forward_position_controller inactive (both claim the position commands).

Needs ros2_control, ros2_controllers, robot_state_publisher and
topic_based_ros2_control (or joint_state_topic_hardware_interface, which loads
under the same plugin name). None installs where ROS 2 is absent: there the
tests evaluate this file with the stand-in (bam_bringup/launch_standin/), and
`bench serve` does not run it.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import (
    EqualsSubstitution,
    FileContent,
    LaunchConfiguration,
    NotEqualsSubstitution,
    PythonExpression,
)
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterFile, ParameterValue
from launch_ros.substitutions import FindPackageShare

SHARE = FindPackageShare("bam_bringup")
ROBOT = PythonExpression(["'", LaunchConfiguration("arm"), "' or 'pendulum'"])
CLOCK = [("/clock", "clock")]  # the bench's clock, in its namespace


def generate_launch_description() -> LaunchDescription:
    arm, sim = LaunchConfiguration("arm"), LaunchConfiguration("sim")
    namespace = LaunchConfiguration("namespace")
    description = ParameterValue(FileContent([SHARE, "/urdf/", ROBOT, ".urdf"]), value_type=str)
    controllers = ParameterFile([SHARE, "/config/", ROBOT, "_controllers.yaml"])
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="", description=(
            "shipped arm to control (dynamixel, feetech or erob: arm.launch.py); \"\" = the "
            "pendulum bench (bench.launch.py)")),
        DeclareLaunchArgument("sim", default_value="true", description=(
            "control our simulator (false = the hardware driver of the bench or arm)")),
        DeclareLaunchArgument("namespace", default_value="", description=(
            "namespace of the nodes, their topics and controller_manager, e.g. bench1 (\"\" "
            "= none)")),

        # Our sim or driver: the bench's or the arm's launch file, with its own arguments.
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource([SHARE, "/launch/bench.launch.py"]),
            condition=IfCondition(EqualsSubstitution(arm, ""))),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource([SHARE, "/launch/arm.launch.py"]),
            condition=IfCondition(NotEqualsSubstitution(arm, ""))),

        Node(package="robot_state_publisher", executable="robot_state_publisher",
             namespace=namespace,
             parameters=[{"robot_description": description, "use_sim_time": sim}],
             remappings=CLOCK, output="screen"),
        Node(package="controller_manager", executable="ros2_control_node", namespace=namespace,
             parameters=[controllers, {"use_sim_time": sim}],
             remappings=[*CLOCK, ("~/robot_description", "robot_description")],
             output="screen"),
        Node(package="controller_manager", executable="spawner", namespace=namespace,
             arguments=["joint_state_broadcaster", "joint_trajectory_controller"],
             output="screen"),
        Node(package="controller_manager", executable="spawner", namespace=namespace,
             arguments=["forward_position_controller", "--inactive"], output="screen"),
    ])
