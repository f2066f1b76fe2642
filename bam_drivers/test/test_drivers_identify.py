"""End to end: the bench protocol through the driver and the emulator, recorded, fitted.

The emulator's joint is the published MX-64 M4 set on a 1 kg, 0.15 m
pendulum. The trajectory node plays a short protocol (two trajectories × two
gains, 4 s each) on the driver in real time, the recorder writes the bag, the
bag is read back as a dataset (bam_identify.data.dataset), one run of each
trajectory is held out, and M4 is fitted (bam_identify.fitting.fit, 1500 trials, about
1 s) on the two others.

Threshold. The MAE is the error of a model simulated from the recorded
commands against the recorded positions. The emulator's own parameters do not
reach 0 on these logs: positions are quantized (1.5 mrad), sampled by the bus
while the emulator's physics steps at 1 ms and the fit's at 5 ms. That floor,
measured on each run, was about 0.009 rad. The fitted model reproduces the
emulator's motion when its validation MAE is within 3 encoder counts (0.0046
rad) of that floor, i.e. indistinguishable at the sensor's resolution
(measured: 0.004-0.006 rad, below the floor, as the fit absorbs part of the
sampling effects); the error of assuming the arm follows its goal is about 0.5
rad. The motor constants k_t and R come back within 10 % (measured within
3 %); the friction terms trade off against each other on two training runs and
are not checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from protocol_recording import mae, record_protocol
from rclpy.parameter import Parameter

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.nodes.dynamixel_node import DynamixelNode
from bam_identify.data.dataset import load_dataset, split
from bam_identify.fitting.fit import FitSettings, SearchSpace, identify
from bam_sim.models.parameter_file import published
from bam_sim.testing.ros_context import private_context

PROTOCOL = """\
protocol:
  trajectories: [lift_drop, raise_lower]
  gains: [8, 16]
  repetitions: 1
  duration: 4.0
  settle: 0.5
"""
FLOOR_MARGIN = 3 * 2 * np.pi / 4096  # rad above the truth's MAE: 3 encoder counts


def record(tmp_path):
    with EmulatorProcess(protocol=1, servo_model="mx64_p1", physics="mx64:m4", mass=1.0,
                         length=0.15) as emulator, private_context() as ctx:
        driver = DynamixelNode(context=ctx, parameter_overrides=[
            Parameter("port", value=emulator.port), Parameter("rate", value=200.0),
            Parameter("mass", value=1.0), Parameter("length", value=0.15),
            Parameter("command_timeout", value=1.0)])
        return record_protocol(driver, ctx, PROTOCOL, tmp_path, timeout=90.0)


def test_a_recording_through_the_driver_identifies_the_emulator(tmp_path):
    dataset = load_dataset(record(tmp_path), actuator="mx64")
    assert len(dataset) == 4 and dataset.gains == [8.0, 16.0]
    assert {log.meta["bench_source"] for log in dataset} == {"hardware"}
    assert dataset.benches[0].mass == 1.0 and dataset.benches[0].length == 0.15
    train, validation = split(dataset, validation_fraction=0.5, seed=0)
    assert len(train) == 2 and len(validation) == 2

    space = SearchSpace.build("mx64", "m4")
    fitted = identify(space, train.logs, FitSettings(trials=1500, seed=0))
    fitted_mae = mae(space, validation.logs, fitted.values)

    truth = published("mx64", "m4").values
    floor = mae(space, validation.logs, {k: truth[k] for k in space.names if k in truth})
    follow = float(np.average([np.mean(np.abs(log.goal - log.position))
                               for log in validation.logs],
                              weights=[len(log) for log in validation.logs]))
    report = (f"validation MAE: fitted M4 {fitted_mae:.4f} rad, the emulator's M4 "
              f"{floor:.4f} rad, following the goal {follow:.4f} rad")
    assert floor < 0.03, report  # the recording itself is sound
    assert fitted_mae <= floor + FLOOR_MARGIN, report
    assert follow > 10 * (floor + FLOOR_MARGIN), report  # the runs do move the arm
    for name in ("kt", "R"):
        assert fitted.values[name] == pytest.approx(truth[name], rel=0.1), name
