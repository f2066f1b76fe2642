"""A stand-in of ROS 2 launch: the launch files of launch/ read and composed without it.

``launch`` and ``launch_ros`` have no PyPI wheels, so ``bench serve`` and the tests read
a launch file with those names bound to the classes here (:mod:`.actions`,
:mod:`.substitutions`) and compose its description into the nodes to start
(:class:`.launch_file.LaunchFile`); :mod:`.values` types and checks the ``name:=value``
arguments. Only what the launch files of this project use is stood in for.
"""
