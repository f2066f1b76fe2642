"""The console scripts of bam_sim (setup.py names them): each loads its module with a
stop before its start ending it quietly (:mod:`bam_sim.common.startup`)."""

from bam_sim.common.startup import Deferred

simulate = Deferred("bam_sim.simulate_cli")
pendulum = Deferred("bam_sim.nodes.pendulum_node")
arm = Deferred("bam_sim.nodes.arm_node")
monitor = Deferred("bam_sim.nodes.monitor_node")
