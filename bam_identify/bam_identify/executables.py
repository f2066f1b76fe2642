"""The console scripts of bam_identify (setup.py names them): each loads its module with a
stop before its start ending it quietly (:mod:`bam_sim.common.startup`)."""

from bam_sim.common.startup import Deferred

fit = Deferred("bam_identify.cli", "fit_main")
eval = Deferred("bam_identify.cli", "eval_main")
recover = Deferred("bam_identify.cli", "recover_main")
campaign = Deferred("bam_identify.campaign_cli", "campaign_main")
export = Deferred("bam_identify.export_cli", "export_main")
trajectory = Deferred("bam_identify.nodes.trajectory_node")
recorder = Deferred("bam_identify.nodes.recorder_node")
