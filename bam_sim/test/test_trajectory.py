"""Bench trajectories of the identification protocol."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.bench.trajectory import TRAJECTORIES, get_trajectory
from bam_sim.common.errors import BamError


@pytest.mark.parametrize("name", sorted(TRAJECTORIES))
@pytest.mark.parametrize("duration", [0.5, 2.0, 6.0, 20.0])
def test_trajectories_are_finite_and_start_at_rest(name, duration):
    goal, enabled = get_trajectory(name).sample(0.005, duration)
    assert goal.size == round(duration / 0.005) + 1 == enabled.size
    assert np.all(np.isfinite(goal))
    assert goal[0] == 0.0 and enabled[0]
    assert np.max(np.abs(goal)) <= 1.6


def test_lift_drop_releases_and_raise_lower_comes_back_down():
    goal, enabled = get_trajectory("lift_drop").sample(0.005)
    assert enabled[:100].all() and not enabled[-100:].any()
    goal, _ = get_trajectory("raise_lower").sample(0.005)
    assert goal.max() == pytest.approx(1.5) and goal[-1] == 0.0
    top = np.flatnonzero(goal >= 1.5 - 1e-12)
    assert goal[top[-1]:].tolist() == sorted(goal[top[-1]:], reverse=True)  # lowered slowly


def test_unknown_trajectory():
    with pytest.raises(BamError, match="unknown trajectory 'zigzag'"):
        get_trajectory("zigzag")
