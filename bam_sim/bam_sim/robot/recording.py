"""A recording of a robot: measured positions and the goals sent, joints in map order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bam_sim.common.errors import BamError


@dataclass(frozen=True, eq=False)
class RobotRecording:
    """One recording (a bag, a LeRobot episode), on a regular time grid.

    Shapes, with T samples and n joints (the joint map's order):

    - ``time`` (T,): s from the first sample, a constant period apart;
    - ``position`` (T, n): measured joint positions, rad;
    - ``goal`` (T, n): the goal in effect from ``time[k]`` to ``time[k+1]``, rad;
    - ``gain`` (n,): each servo's firmware P gain during the recording;
    - ``enabled`` (T, n): torque on, the same way as ``goal``.

    ``name`` says where it came from (file, episode) in every message and figure.
    """

    name: str
    time: np.ndarray
    position: np.ndarray
    goal: np.ndarray
    gain: np.ndarray
    enabled: np.ndarray

    def __post_init__(self) -> None:
        t, q, goal = self.time, self.position, self.goal
        if t.ndim != 1 or t.size < 2:
            raise BamError(f"{self.name}: a recording needs at least 2 samples")
        if q.shape != (t.size, q.shape[1] if q.ndim == 2 else -1) or goal.shape != q.shape \
                or self.enabled.shape != q.shape or self.gain.shape != (q.shape[1],):
            raise BamError(f"{self.name}: time {t.shape}, position {q.shape}, goal {goal.shape}, "
                           f"enabled {self.enabled.shape} and gain {self.gain.shape} disagree")
        if not (np.isfinite(q).all() and np.isfinite(goal).all() and np.isfinite(t).all()):
            raise BamError(f"{self.name}: positions, goals and times must be finite numbers")
        steps = np.diff(t)
        if not (steps > 0.0).all() or np.ptp(steps) > 1e-6 * steps.mean() + 1e-9:
            raise BamError(f"{self.name}: samples must be a constant period apart "
                           "(the readers resample them)")

    @property
    def period(self) -> float:
        return float(self.time[1] - self.time[0])

    @property
    def n_joints(self) -> int:
        return int(self.position.shape[1])

    def __len__(self) -> int:
        return int(self.time.size)
