"""The bench's sensor model (issue 26, item 5), recovered from what it records: the
encoder step from the positions alone, and the bus's read latency by a fit of the
``latency`` group, on logs simulated through the bench stepper the pendulum node runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import command_log
from bam_sim.models.files.parameter_file import published_named

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DT = 0.005  # s, the logs' step
STEP = 2.0 * math.pi / 4096  # rad, the MX-64's encoder step
READ_TICKS = 2  # the bus reports the state of two ticks ago: 10 ms
SETUPS = [(1.0, 0.15, 32.0, "lift_drop"), (0.5, 0.2, 16.0, "steps"),
          (1.5, 0.1, 32.0, "raise_lower"), (1.0, 0.2, 16.0, "accelerated_oscillations")]


def recorded(mass: float, length: float, kp: float, name: str) -> BenchLog:
    """One run through the stepper with the sensor on, as the pendulum node publishes it."""
    commands = command_log(name, Bench(mass, length), kp, DT, duration=4.0)
    stepper = BenchStepper(published_named("mx64", "m4"), commands.bench, DT, gain=kp,
                           goal=float(commands.goal[0]), quantization=STEP,
                           latency=READ_TICKS, seed=7)
    samples = []
    for goal, enabled in zip(commands.goal, commands.enabled, strict=True):
        stepper.set_command(goal=float(goal), torque_enable=bool(enabled))
        samples.append(stepper.tick())
    return BenchLog(bench=commands.bench, kp=kp, dt=DT, goal=commands.goal,
                    enabled=commands.enabled, name=name,
                    position=np.array([s.position for s in samples]),
                    meta={"trajectory": name})


@pytest.fixture(scope="module")
def logs() -> list[BenchLog]:
    return [recorded(*setup) for setup in SETUPS]


def test_the_encoder_step_is_read_off_the_positions(logs):
    q = np.concatenate([log.position for log in logs])
    moves = np.abs(np.diff(q))
    smallest = moves[moves > 0.5 * STEP].min()
    assert smallest == pytest.approx(STEP, rel=1e-9)  # one count is the smallest move
    counts = q / smallest
    assert np.max(np.abs(counts - np.round(counts))) < 1e-6  # every reading a whole count


def test_the_read_latency_is_recovered_by_the_latency_group(logs):
    """A bench starting at rest shows only the sum of the delays, which the fit frees as
    the command's: it comes back within half a tick of the bus's read latency. The
    quantization (0.77 mrad rms of error at most) is the only noise, far below what a
    tick of delay costs on these trajectories."""
    truth = published_named("mx64", "m4").values
    held = {name: truth[name] for name in truth}
    space = SearchSpace.from_names("mx64", "m4", groups=("latency",), fixed=held)
    result = identify(space, logs, FitSettings(trials=300, seed=0))
    assert result.values["latency.command"] == pytest.approx(READ_TICKS * DT, abs=0.5 * DT)
    assert result.train_mae < 0.5 * STEP  # the rest is the rounding to the encoder's step
