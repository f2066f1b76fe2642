"""The console scripts of bam_drivers (setup.py names them): each loads its module with a
stop before its start ending it quietly (:mod:`bam_sim.common.startup`)."""

from bam_sim.common.startup import Deferred

dynamixel = Deferred("bam_drivers.nodes.serial_servo_node")
serial_servo_emulator = Deferred("bam_drivers.emulators.serial_servo_emulator")
feetech = Deferred("bam_drivers.nodes.feetech_node")
erob = Deferred("bam_drivers.nodes.erob_node")
ethercat_emulator = Deferred("bam_drivers.emulators.ethercat_emulator")
