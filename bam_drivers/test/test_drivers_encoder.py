"""The step of an actuator's reading: its driver's table's, else its file's resolution."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bam_drivers.encoder import counts_per_turn, encoder_step
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator


def test_a_driven_servo_reads_in_its_tables_counts():
    # The MX-64's present position: 4096 counts per turn (protocol 1.0 table).
    assert counts_per_turn(encoder_step(get_actuator("mx64"))) == pytest.approx(4096)
    assert counts_per_turn(encoder_step(get_actuator("sts3215"))) == pytest.approx(4096)


def test_a_declared_servo_without_a_driver_reads_in_its_files_counts():
    st3025 = get_actuator("st3025")  # no driver: nothing says its resolution
    assert encoder_step(st3025) == 0.0
    declared = dataclasses.replace(st3025, name="st3025_4096", encoder_resolution=4096)
    assert encoder_step(declared) == pytest.approx(2.0 * math.pi / 4096)


def test_a_file_that_disagrees_with_its_drivers_table_is_refused():
    wrong = dataclasses.replace(get_actuator("mx64"), name="mx64_1024", encoder_resolution=1024)
    with pytest.raises(BamError, match="encoder_resolution 1024 counts per turn, but its "
                                       "dynamixel table mx64_p1 reads 4096"):
        encoder_step(wrong)
