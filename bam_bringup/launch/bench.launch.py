"""The pendulum bench, simulated or on hardware.

    ros2 launch bam_bringup bench.launch.py actuator:=mx64 sim:=true record:=true
    ros2 launch bam_bringup bench.launch.py sim:=false driver:=dynamixel port:=/dev/ttyUSB0 ids:=1
    ros2 launch bam_bringup bench.launch.py sim:=false hardware:=emulated port:=/tmp/ttyDXL

Arguments and nodes come from config/bench.yaml through
bam_bringup.composition, the same code the in-process runner (`bench serve`)
uses, so the two start the same nodes with the same parameters.
"""

import os

from ament_index_python.packages import get_package_prefix
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from bam_bringup.composition import arguments, command_line, compose


def _action(spec):
    if spec.process:  # a plain executable (the hardware emulator): options, no ROS arguments
        path = os.path.join(get_package_prefix(spec.package), "lib", spec.package,
                            spec.executable)
        return ExecuteProcess(cmd=[path, *command_line(spec)], name=spec.name, output="screen")
    return Node(package=spec.package, executable=spec.executable, name=spec.name,
                parameters=[spec.parameters], output="screen", emulate_tty=True)


def _nodes(context):
    values = {name: LaunchConfiguration(name).perform(context) for name in arguments()}
    return [_action(spec) for spec in compose(values)]


def generate_launch_description():
    declared = [DeclareLaunchArgument(a.name, default_value=str(a.default).lower()
                                      if isinstance(a.default, bool) else str(a.default),
                                      description=a.description)
                for a in arguments().values()]
    return LaunchDescription([*declared, OpaqueFunction(function=_nodes)])
