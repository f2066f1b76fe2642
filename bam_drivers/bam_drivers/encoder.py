"""The step of an actuator's position reading, read from the driver's own tables.

A simulated bench that emulates a servo's sensor rounds the position to the
step the real driver reads it in. That step is a fact of the hardware tables
(the present-position register of a Dynamixel or Feetech control table, the
encoder increments per output turn of an eRob drive model), so it is derived
from them here rather than written again.
"""

from __future__ import annotations

import math

from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import Actuator


def encoder_step(actuator: Actuator) -> float:
    """Radians per count of ``actuator``'s position reading: its driver's table's, else its
    file's ``encoder_resolution``; 0.0 for an actuator with neither (a continuous
    reading). A file whose resolution disagrees with its driver's table is refused."""
    step = _table_step(actuator)
    counts = actuator.encoder_resolution
    if counts and step and abs(counts_per_turn(step) - counts) > 0.5:
        raise BamError(f"{actuator.name}: encoder_resolution {counts} counts per turn, but "
                       f"its {actuator.driver} table {actuator.control_table} reads "
                       f"{counts_per_turn(step):.0f}; fix the actuator file")
    return step or (2.0 * math.pi / counts if counts else 0.0)


def _table_step(actuator: Actuator) -> float:
    if actuator.driver == "dynamixel":
        from bam_drivers.dynamixel.control_table import TABLES
        from bam_drivers.serial_servo.control_table import get_table

        return get_table(actuator.control_table, TABLES).field("present_position").scale
    if actuator.driver == "feetech":
        from bam_drivers.feetech.control_table import TABLES
        from bam_drivers.serial_servo.control_table import get_table

        return get_table(actuator.control_table, TABLES).field("present_position").scale
    if actuator.driver == "erob":
        from bam_drivers.ethercat.drive_models import get_drive_model

        return get_drive_model(actuator.control_table).position(1)
    if actuator.driver:
        raise BamError(f"no encoder known for driver '{actuator.driver}' of {actuator.name}")
    return 0.0


def counts_per_turn(step: float) -> float:
    """Counts per output turn of a position step (rad); 0 for no step."""
    return 2.0 * math.pi / step if step > 0.0 else 0.0
