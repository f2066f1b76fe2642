"""Bench trajectories of the identification protocol (paper section V-A).

Each trajectory is a goal position q_d(t) (rad, arm down = 0) and a torque
enable e(t), starting from rest at q = 0:

* ``accelerated_oscillations`` — constant amplitude, frequency rising
  linearly (a chirp): phase and amplitude shifts of the controller;
* ``slow_oscillations`` — a large slow sine plus small faster sub-oscillations;
* ``raise_lower`` — raise the mass, then lower it slowly: a plateau where the
  joint stays static until it is backdriven;
* ``lift_drop`` — lift, hold, then release (torque off: H-bridge released or
  current zero), so the fall shows friction without back-EMF;
* ``steps`` — position steps of both signs;
* ``heat_cool`` — raise the mass near horizontal and hold it there (the largest
  gravity torque: high current, copper losses) for 60 % of the run, then lower
  it and let the motor cool: the winding temperature the thermal group of
  MuJoCo's DC-motor model (R_T, C, α; "MuJoCo DC Motor Model" (7)-(8)) is
  identified from. A protocol plays it for minutes (a run's own ``duration``,
  ``config/protocol_thermal.yaml`` of bam_identify: 300 s).

These are numerical functions only; the ROS trajectory node plays them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError


def _smoothstep(x: np.ndarray) -> np.ndarray:
    """0 → 1 with zero slope at both ends, for x in [0, 1] (clipped outside)."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _accelerated(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    f0, f1, amplitude = 0.2, 2.0, 1.0
    phase = 2.0 * np.pi * (f0 * t + 0.5 * (f1 - f0) * t**2 / duration)
    return amplitude * np.sin(phase) * _smoothstep(t / 0.5), np.ones(t.size, bool)


def _slow(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    slow = 1.2 * np.sin(2.0 * np.pi * t / duration)
    fast = 0.15 * np.sin(2.0 * np.pi * 2.5 * t)
    return slow + fast * _smoothstep(t / 0.5), np.ones(t.size, bool)


def _raise_lower(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    # Raise over the first sixth, hold briefly, lower slowly until 11/12, rest.
    top, rise, hold, end = 1.5, duration / 6.0, duration / 4.0, duration * 11.0 / 12.0
    lower = top * (1.0 - np.clip((t - hold) / (end - hold), 0.0, 1.0))
    return np.where(t < rise, top * _smoothstep(t / rise), lower), np.ones(t.size, bool)


def _lift_drop(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    top, rise, release = 1.5, min(1.5, 0.25 * duration), 0.45 * duration
    return top * _smoothstep(t / rise), t < release


def _heat_cool(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    # Raise to near horizontal, hold there (the largest gravity torque, hence the
    # largest current and copper losses) for 60 % of the run, lower, rest hanging.
    top, ramp, hold = 1.5, min(2.0, duration / 10.0), 0.6 * duration
    up = top * _smoothstep(t / ramp)
    down = top * (1.0 - _smoothstep((t - hold) / ramp))
    return np.where(t < hold, up, down), np.ones(t.size, bool)


def _steps(t: np.ndarray, duration: float) -> tuple[np.ndarray, np.ndarray]:
    levels = np.array([0.0, 0.6, -0.4, 1.2, 0.2, -0.8])
    index = np.minimum((t / duration * levels.size).astype(int), levels.size - 1)
    return levels[index], np.ones(t.size, bool)


@dataclass(frozen=True)
class Trajectory:
    name: str
    description: str
    duration: float
    law: Callable[[np.ndarray, float], tuple[np.ndarray, np.ndarray]]

    def sample(self, dt: float, duration: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(goal, enabled) at t = 0, dt, ... up to ``duration`` (default: its own)."""
        duration = self.duration if duration is None else duration
        if dt <= 0.0 or duration <= dt:
            raise BamError(f"trajectory needs 0 < dt < duration, got dt={dt}, duration={duration}")
        t = np.arange(int(round(duration / dt)) + 1) * dt
        return self.law(t, duration)


TRAJECTORIES: dict[str, Trajectory] = {
    tr.name: tr
    for tr in (
        Trajectory("accelerated_oscillations", "constant amplitude, rising frequency", 6.0,
                   _accelerated),
        Trajectory("slow_oscillations", "slow oscillation with faster sub-oscillations", 6.0,
                   _slow),
        Trajectory("raise_lower", "raise the mass, then lower it slowly", 6.0, _raise_lower),
        Trajectory("lift_drop", "lift, hold, release with torque off", 6.0, _lift_drop),
        Trajectory("steps", "position steps of both signs", 6.0, _steps),
        # 6 s like the others by default; a protocol run gives it minutes (protocol_thermal)
        Trajectory("heat_cool", "hold against gravity to heat the motor, then cool", 6.0,
                   _heat_cool),
    )
}
# The trajectories of the paper's protocol (section V-A); heat_cool is for the thermal group.
PROTOCOL_TRAJECTORIES = ("accelerated_oscillations", "slow_oscillations", "raise_lower",
                         "lift_drop", "steps")


def get_trajectory(name: str) -> Trajectory:
    key = str(name).strip().lower()
    if key not in TRAJECTORIES:
        raise BamError(f"unknown trajectory '{name}'; choose one of {', '.join(TRAJECTORIES)}")
    return TRAJECTORIES[key]


def played(names: tuple[str, ...], dt: float) -> tuple[list[float], list[bool]]:
    """(goal, torque enable) per tick of the trajectories ``names`` played one after the
    other at step ``dt``."""
    goals: list[float] = []
    enables: list[bool] = []
    for name in names:
        goal, enabled = get_trajectory(name).sample(dt)
        goals += goal.tolist()
        enables += enabled.tolist()
    return goals, enables


def command_log(name: str, bench: Bench, kp: float, dt: float = 0.005,
                duration: float | None = None) -> BenchLog:
    """A log holding only the commands of a trajectory (to be simulated or played)."""
    goal, enabled = get_trajectory(name).sample(dt, duration)
    return BenchLog(bench=bench, kp=kp, dt=dt, goal=goal, enabled=enabled, name=name,
                    meta={"trajectory": name})
