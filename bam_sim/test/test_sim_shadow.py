"""The health monitor's ROS-free core (bam_sim.bench.shadow) on simulated logs.

The logs are made by the bench stepper the pendulum node runs (BenchStepper), with the
true set or a faulty one, over the protocol's trajectories back to back; the shadow
runs the identified set beside them as the monitor node does, one sample at a time.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.bench.shadow import (
    ERROR,
    OK,
    WARN,
    FrictionTracker,
    Measurement,
    Shadow,
    ShadowSettings,
    Thresholds,
    assess,
    friction_names,
    reference_mae,
    with_friction,
)
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import get_trajectory
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published
from bam_sim.models.parameter_set import ParameterSet

DT = 0.005  # s: 200 Hz states, as the live tests run the pendulum
BENCH = Bench(mass=1.0, length=0.15, arm_mass=0.1)
TRAJECTORIES = ("accelerated_oscillations", "lift_drop", "steps", "slow_oscillations",
                "raise_lower")
TRUE = published("mx64", "m4")


def commands(rounds: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(goal, enabled): the protocol's trajectories back to back, ``rounds`` times."""
    parts = [get_trajectory(name).sample(DT) for name in TRAJECTORIES] * rounds
    return (np.concatenate([g for g, _ in parts]), np.concatenate([e for _, e in parts]))


def simulate(truth: ParameterSet, rounds: int = 1) -> list[Measurement]:
    """What a bench with ``truth`` reports along :func:`commands`."""
    goal, enabled = commands(rounds)
    kp = float(truth.actuator.gains[1])
    bench = BenchStepper(truth, BENCH, DT, gain=kp)
    log = []
    for g, e in zip(goal, enabled, strict=True):
        bench.set_command(goal=float(g), torque_enable=bool(e))
        s = bench.tick()
        log.append(Measurement(s.position, s.velocity, s.goal, s.torque_enable, s.gain,
                               s.temperature, s.input_voltage))
    return log


def shadow_of(log: list[Measurement], params: ParameterSet = TRUE, **settings) -> Shadow:
    shadow = Shadow(params, BENCH, ShadowSettings(DT, **settings))
    for m in log:
        shadow.step(m)
    return shadow


@pytest.fixture(scope="module")
def true_log() -> list[Measurement]:
    return simulate(TRUE)


def test_the_residual_is_zero_on_the_models_own_rollout(true_log):
    shadow = Shadow(TRUE, BENCH, ShadowSettings(DT, resync_period=1.0))
    residuals = np.array([shadow.step(m)[:2] for m in true_log])
    assert np.all(residuals == 0.0)  # the same stepper, the same arithmetic: bit for bit
    assert shadow.mae_position == 0.0 and shadow.windows >= 29
    # Nothing drifts either: ŝ stays 1, no jam, OK.
    assert shadow.friction_scale == pytest.approx(1.0, abs=1e-9) and not shadow.jammed
    assert assess(shadow, Thresholds(0.01))[0] == OK


def test_the_friction_scale_is_recovered_on_a_log_with_half_more_friction():
    log = simulate(with_friction(TRUE, 1.5), rounds=2)  # 60 s, 60 windows
    shadow = Shadow(TRUE, BENCH, ShadowSettings(DT, resync_period=1.0))
    scales = []
    for k, m in enumerate(log):
        shadow.step(m)
        if k % round(1.0 / DT) == 0:
            scales.append(shadow.friction_scale)
    assert np.mean(scales[-20:]) == pytest.approx(1.5, abs=0.1), scales
    level, message = assess(shadow, Thresholds(shadow.mae_position / 3.0))
    named = re.search(r"friction \+(\d+) % since start", message)
    assert level == WARN and named and 40 <= int(named[1]) <= 60, message


def test_the_friction_scale_of_a_log_with_less_friction_goes_down():
    shadow = shadow_of(simulate(with_friction(TRUE, 0.6)))
    assert shadow.friction_scale == pytest.approx(0.6, abs=0.1)


def test_a_jammed_joint_is_named(true_log):
    jammed = TRUE.replace(friction_base=500.0)  # the stop-torque clip holds it anywhere
    shadow = shadow_of(simulate(jammed))
    level, message = assess(shadow, Thresholds(0.01))
    assert shadow.jammed and level == ERROR and "jammed" in message, message


def test_friction_names_and_scaling():
    assert friction_names(TRUE) == ("friction_base", "friction_stribeck", "friction_viscous",
                                    "load_friction_base", "load_friction_stribeck")
    scaled = with_friction(TRUE, 2.0)
    assert scaled.values["friction_base"] == 2.0 * TRUE.values["friction_base"]
    assert scaled.values["alpha"] == TRUE.values["alpha"]  # shapes stay
    assert with_friction(TRUE, 1.0) is TRUE


def test_the_tracker_ignores_windows_without_sensitivity():
    tracker = FrictionTracker(0.5)
    for _ in range(100):
        tracker.add(0.0, 0.3)  # a joint held still: the scale cannot be seen
    assert tracker.update() == 1.0
    tracker.add(1.0, 10.0)  # a wild window: one step is bounded
    assert tracker.update() == pytest.approx(1.25)


def test_the_reference_mae_comes_from_the_files_provenance():
    fitted = ParameterSet.build("mx64", "m4", TRUE.values,
                                {"train_mae": 0.02, "validation_mae": 0.03})
    assert reference_mae(fitted, "f.yaml") == 0.03
    assert reference_mae(fitted, "f.yaml", given=0.5) == 0.5
    train_only = ParameterSet.build("mx64", "m4", TRUE.values, {"train_mae": 0.02})
    assert reference_mae(train_only, "f.yaml") == 0.02
    with pytest.raises(BamError, match="f.yaml has no validation_mae.*reference_mae:="):
        reference_mae(TRUE, "f.yaml")  # a published set has none


@pytest.mark.parametrize("thresholds, match", [
    (Thresholds(0.0), "reference MAE must be > 0"),
    (Thresholds(math.nan), "reference MAE must be > 0"),
    (Thresholds(0.01, warn_factor=5.0, error_factor=2.0), "warn_factor < error_factor"),
])
def test_bad_thresholds_are_refused(thresholds, match):
    with pytest.raises(BamError, match=match):
        thresholds.check()


@pytest.mark.parametrize("settings, match", [
    (dict(dt=0.0), "dt must be > 0"),
    (dict(dt=DT, resync_period=DT / 2), "at least one tick"),
    (dict(dt=DT, mae_window=math.inf), "mae_window must be > 0"),
    (dict(dt=DT, friction_rate=2.0), "friction_rate must be in"),
])
def test_bad_settings_are_refused(settings, match):
    with pytest.raises(BamError, match=match):
        ShadowSettings(**settings).check()


def test_levels_follow_the_thresholds(true_log):
    shadow = shadow_of(simulate(with_friction(TRUE, 1.5)))
    mae = shadow.mae_position
    assert mae > 0.0
    assert assess(shadow, Thresholds(mae))[0] == OK  # 1x
    assert assess(shadow, Thresholds(mae / 3.0))[0] == WARN  # 3x
    assert assess(shadow, Thresholds(mae / 6.0))[0] == ERROR  # 6x
