"""Backlash in the MuJoCo arm against the bench's (bam_sim.bench.backlash).

The one-joint MuJoCo pendulum of :mod:`test_arm_equivalence`, its servo with a dead band
of 0.02 rad, against the numba pendulum with the same band, every identification
trajectory: within the arm's bound against the bench without backlash (2 mrad), while the
band itself moves the pendulum by more than that (measured: at most 0.95 mrad apart, on
accelerated oscillations where the teeth part most often; the band moves the bench by up
to 13 mrad).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_arm_equivalence import BENCHES, DT, MAX_MAE, mujoco_positions

from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.models.files.parameter_file import published_named

WIDTH = 0.02  # rad


@pytest.mark.parametrize(("actuator", "model"), [("mx64", "m1"), ("mx64", "m4"),
                                                 ("erob80_100", "m1")])
def test_the_arm_runs_the_benchs_dead_band(actuator, model):
    bench, kp = BENCHES[actuator]
    rigid = published_named(actuator, model)
    params = rigid.replace(**{"backlash.width": WIDTH})
    effects = []
    for name in TRAJECTORIES:
        log = command_log(name, bench, kp, dt=DT)
        reference = rollout(params, log).position
        ours = mujoco_positions(params, log, identification=True)
        mae = float(np.mean(np.abs(ours - reference)))
        assert mae <= MAX_MAE, f"{actuator} {model} {name}: MAE {mae * 1e3:.3f} mrad"
        effects.append(np.abs(reference - rollout(rigid, log).position).max())
    assert max(effects) > 2 * MAX_MAE  # the band does move the pendulum
