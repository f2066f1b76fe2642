"""The console scripts of bam_bringup (setup.py names them): each loads its module with a
stop before its start ending it quietly (:mod:`bam_sim.common.startup`)."""

from bam_sim.common.startup import Deferred

bench = Deferred("bam_bringup.runner")
