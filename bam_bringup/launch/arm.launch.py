"""The 2R arm, simulated in MuJoCo or on hardware.

    ros2 launch bam_bringup arm.launch.py arm:=dynamixel params:=,out/mx64_m6.yaml
    ros2 launch bam_bringup arm.launch.py arm:=erob models:=m1 real_time_factor:=0.0
    ros2 launch bam_bringup arm.launch.py sim:=false port:=/dev/ttyUSB0 ids:=1,2

Arguments and nodes come from config/arm.yaml through bam_bringup.composition,
the same code the in-process runner (`bench serve --config arm`) uses, so the
two start the same nodes with the same parameters. Per-joint arguments (params,
models, gains, ids, joint_names) are lists in joint order, written a,b or [a, b].
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from bam_bringup.composition import arguments, compose, launch_default, load_config

CONFIG = "arm"


def _nodes(context, config):
    values = {name: LaunchConfiguration(name).perform(context) for name in arguments(config)}
    return [Node(package=spec.package, executable=spec.executable, name=spec.name,
                 parameters=[spec.parameters], output="screen", emulate_tty=True)
            for spec in compose(values, config)]


def generate_launch_description():
    config = load_config(CONFIG)
    declared = [DeclareLaunchArgument(a.name, default_value=launch_default(a),
                                      description=a.description)
                for a in arguments(config).values()]
    return LaunchDescription([*declared, OpaqueFunction(function=_nodes,
                                                        args=[config])])
