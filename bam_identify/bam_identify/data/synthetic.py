"""Synthetic bench recordings: logs simulated from a known parameter set.

Used to check identification end to end (recover a known truth) and to
benchmark it on a set shaped like the paper's (Table I configurations × the
section V-A trajectories).
"""

from __future__ import annotations

import itertools

import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.models.parameter_set import ParameterSet

PAPER_TRAJECTORIES = ("accelerated_oscillations", "slow_oscillations", "raise_lower", "lift_drop")


def record(truth: ParameterSet, bench: Bench, kp: float, trajectory: str, dt: float = 0.005,
           duration: float = 6.0, noise: float = 0.0,
           rng: np.random.Generator | None = None) -> BenchLog:
    """One log of ``trajectory`` as the bench would record it under ``truth``.

    ``noise`` (rad) adds Gaussian measurement noise to the recorded positions.
    """
    cmd = command_log(trajectory, bench, kp, dt, duration)
    sim = rollout(truth, cmd)
    position = sim.position
    if noise > 0.0:
        position = position + (rng or np.random.default_rng(0)).normal(0.0, noise, len(cmd))
    return BenchLog(bench=bench, kp=kp, dt=dt, goal=cmd.goal, enabled=cmd.enabled,
                    position=position, velocity=sim.velocity, control=sim.control,
                    name=f"{trajectory}_m{bench.mass:g}_l{bench.length:g}_kp{kp:g}",
                    meta={"trajectory": trajectory, "gain": kp},
                    supply_voltage=None, damping=None)


def paper_like_set(truth: ParameterSet, n_logs: int, arm_mass: float = 0.0,
                   trajectories: tuple[str, ...] = PAPER_TRAJECTORIES, dt: float = 0.005,
                   duration: float = 6.0, noise: float = 0.0, seed: int = 0) -> list[BenchLog]:
    """``n_logs`` logs spread over the actuator's Table I setups and the trajectories.

    Each trajectory is recorded equally often; masses, lengths and gains are
    drawn without repetition from their combinations (seeded).
    """
    act = truth.actuator_def
    rng = np.random.default_rng(seed)
    setups = list(itertools.product(act.masses, act.lengths, act.gains))
    order = rng.permutation(len(setups))
    logs = []
    for i in range(n_logs):
        mass, length, kp = setups[order[i % len(setups)]]
        bench = Bench(mass=mass, length=length, arm_mass=arm_mass)
        logs.append(record(truth, bench, kp, trajectories[i % len(trajectories)], dt, duration,
                           noise, rng))
    return logs
