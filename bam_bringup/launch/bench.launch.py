"""The pendulum bench, simulated or on hardware.

    ros2 launch bam_bringup bench.launch.py actuator:=mx64 sim:=true record:=true

Arguments and nodes come from config/bench.yaml through
bam_bringup.composition, the same code the in-process runner (`bench serve`)
uses, so the two start the same nodes with the same parameters.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from bam_bringup.composition import arguments, compose


def _nodes(context):
    values = {name: LaunchConfiguration(name).perform(context) for name in arguments()}
    return [Node(package=spec.package, executable=spec.executable, name=spec.name,
                 parameters=[spec.parameters], output="screen", emulate_tty=True)
            for spec in compose(values)]


def generate_launch_description():
    declared = [DeclareLaunchArgument(a.name, default_value=str(a.default).lower()
                                      if isinstance(a.default, bool) else str(a.default),
                                      description=a.description)
                for a in arguments().values()]
    return LaunchDescription([*declared, OpaqueFunction(function=_nodes)])
