"""The bench logs the throughput benchmarks roll out: Table I configurations × the
protocol's trajectories, "recorded" with a published set (noise 1 mrad, seeded)."""

from __future__ import annotations

import itertools

import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import PROTOCOL_TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named

MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")


def make_logs(actuator: str, n_logs: int, n_steps: int, dt: float, seed: int) -> list[BenchLog]:
    """Table I configurations × protocol trajectories, 'recorded' with the published M4
    (M1 where only that one is published)."""
    rng = np.random.default_rng(seed)
    truth = published_named(actuator, "m4" if "m4" in published_models(actuator) else "m1")
    act = truth.actuator
    configs = list(itertools.product(act.masses, act.lengths, act.gains,
                                     PROTOCOL_TRAJECTORIES))
    rng.shuffle(configs)
    logs = []
    for mass, length, kp, name in configs[:n_logs]:
        cmd = command_log(name, Bench(mass, length), kp, dt, duration=(n_steps - 1) * dt)
        sim = rollout(truth, cmd)
        logs.append(BenchLog(bench=cmd.bench, kp=kp, dt=dt, goal=cmd.goal, enabled=cmd.enabled,
                             position=sim.position + rng.normal(0, 1e-3, n_steps),
                             velocity=sim.velocity, name=name))
    return logs


def published_models(actuator: str) -> list[str]:
    """The models of M1..M6 with a published set for ``actuator``."""
    out = []
    for model in MODELS:
        try:
            published_named(actuator, model)
        except BamError:
            continue
        out.append(model)
    return out
