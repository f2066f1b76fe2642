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
    STALE,
    WARN,
    DriftTracker,
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
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet

DT = 0.005  # s: 200 Hz states, as the live tests run the pendulum
BENCH = Bench(mass=1.0, length=0.15, arm_mass=0.1)
TRAJECTORIES = ("accelerated_oscillations", "lift_drop", "steps", "slow_oscillations",
                "raise_lower")
TRUE = published_named("mx64", "m4")


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
    tracker = DriftTracker((0.5, 0.5))
    for _ in range(100):
        tracker.add(0.0, 0.0, 0.3)  # a joint held still: neither the scale nor a lag is seen
    assert tracker.update() == (1.0, 0.0)
    tracker.add(1.0, 0.0, 10.0)  # a wild window: one step is bounded
    assert tracker.update() == (pytest.approx(1.25), 0.0)
    tracker.add(0.0, -100.0, 100.0)  # the same for the lag
    assert tracker.update() == (pytest.approx(1.25), pytest.approx(0.0))  # floored at 0


def test_the_reference_mae_comes_from_the_files_provenance():
    fitted = ParameterSet.from_names("mx64", "m4", TRUE.values,
                                {"train_mae": 0.02, "validation_mae": 0.03})
    assert reference_mae(fitted, "f.yaml") == (0.03, "validation MAE")
    assert reference_mae(fitted, "f.yaml", given=0.5) == (0.5, "given reference MAE")
    # A fit without validation logs writes no validation_mae: its training MAE stands in,
    # and the diagnostics say so.
    train_only = ParameterSet.from_names("mx64", "m4", TRUE.values, {"train_mae": 0.02})
    mae, name = reference_mae(train_only, "f.yaml")
    assert mae == 0.02 and name == "training MAE (no validation_mae in the file)"
    shadow = shadow_of(simulate(TRUE)[:10])
    assert "= 0.0x the training MAE (no validation_mae in the file) 0.02 rad" in \
        assess(shadow, Thresholds(mae, reference_name=name))[1]
    with pytest.raises(BamError, match="f.yaml has no validation_mae.*reference_mae:="):
        reference_mae(TRUE, "f.yaml")  # a published set has none


@pytest.mark.parametrize("key", ["validation_mae", "train_mae"])
@pytest.mark.parametrize("value", [math.nan, 0.0, -0.01, math.inf, "0.02", True])
def test_a_provenance_mae_that_is_no_mae_is_refused_not_replaced(key, value):
    """A bad validation MAE is not silently replaced by the training MAE (nor a bad
    training MAE used where there is no validation MAE): the file is refused in one
    line, unless an MAE is given."""
    provenance = {"train_mae": 0.02} if key == "validation_mae" else {}
    provenance[key] = value
    bad = ParameterSet.from_names("mx64", "m4", TRUE.values, provenance)
    with pytest.raises(BamError, match=rf"f.yaml: provenance {key} is .*, not an MAE > 0 "
                       r"rad; .*reference_mae:=RAD") as caught:
        reference_mae(bad, "f.yaml")
    assert "\n" not in str(caught.value)
    assert reference_mae(bad, "f.yaml", given=0.5) == (0.5, "given reference MAE")


@pytest.mark.parametrize("thresholds, match", [
    (Thresholds(0.0), "reference MAE must be > 0"),
    (Thresholds(math.nan), "reference MAE must be > 0"),
    (Thresholds(0.01, warn_factor=5.0, error_factor=2.0), "warn_factor < error_factor"),
    (Thresholds(0.01, lag_tolerance=0.0), "lag_tolerance must be > 0"),
])
def test_bad_thresholds_are_refused(thresholds, match):
    with pytest.raises(BamError, match=match):
        thresholds.check()


@pytest.mark.parametrize("settings, match", [
    (dict(dt=0.0), "dt must be > 0"),
    (dict(dt=DT, resync_period=DT / 2), "at least one tick"),
    (dict(dt=DT, mae_window=math.inf), "mae_window must be > 0"),
    (dict(dt=DT, friction_rate=2.0), "friction_rate must be in"),
    (dict(dt=DT, lag_rate=-0.1), "lag_rate must be in"),
])
def test_bad_settings_are_refused(settings, match):
    with pytest.raises(BamError, match=match):
        ShadowSettings(**settings).check()


def test_levels_follow_the_thresholds(true_log):
    shadow = shadow_of(simulate(with_friction(TRUE, 1.5)))
    mae = shadow.mae_position
    assert mae > 0.0
    assert assess(shadow, Thresholds(mae / 3.0))[0] == WARN  # 3x
    assert assess(shadow, Thresholds(mae / 6.0))[0] == ERROR  # 6x
    # A friction drift past its tolerance is named; the level stays the MAE's.
    level, message = assess(shadow, Thresholds(mae))
    assert level == OK and "friction +50 %" in message, message


# -- a bus delay: the lag τ̂, and states slower than the bench's rate ---------------------

def late(params: ParameterSet, delay: float) -> ParameterSet:
    """``params`` with its commands acting ``delay`` s late: the closed form of a bus that
    delivers each goal that much after the state it follows was stamped."""
    return params.replace(**{"latency.command": delay})


def lag_message(shadow: Shadow) -> str:
    return assess(shadow, Thresholds(1.0))[1]  # a large MAE scale: only the names matter


@pytest.mark.parametrize("delay", [0.004, 0.012])
def test_a_command_delay_is_measured_and_named_from_its_tolerance(delay):
    shadow = shadow_of(simulate(late(TRUE, delay)))
    # The model's own law with the goals late: τ̂ finds the delay, ŝ stays.
    assert shadow.lag == pytest.approx(delay, abs=5e-4)
    assert shadow.friction_scale == pytest.approx(1.0, abs=0.05)
    named = re.search(r"measurement lags the model by (\d+) ms: bus delay",
                      lag_message(shadow))
    tolerance = Thresholds(1.0).lag_tolerance
    assert bool(named) == (delay >= tolerance), lag_message(shadow)
    if named:
        assert int(named[1]) == round(1e3 * shadow.lag)
    assert "friction" not in lag_message(shadow)


def test_friction_is_not_taken_for_a_delay_nor_a_delay_for_friction():
    more_friction = shadow_of(simulate(with_friction(TRUE, 1.5)))
    assert abs(more_friction.lag) < 1e-3  # the joint is braked, not late
    both = shadow_of(simulate(late(with_friction(TRUE, 1.5), 0.012), rounds=2))
    assert both.friction_scale == pytest.approx(1.5, abs=0.1)
    assert both.lag == pytest.approx(0.012, abs=1e-3)
    message = lag_message(both)
    assert "bus delay" in message and "friction +" in message, message


def test_states_slower_than_the_bench_rate_are_a_warned_bus_delay(true_log):
    period = 1.8 * DT  # every reply late past the cycle: the driver runs at 1/1.8 its rate
    shadow = Shadow(TRUE, BENCH, ShadowSettings(DT))
    for k, m in enumerate(true_log[:400]):
        shadow.step(m._replace(time=k * period), resync=k > 0)  # each sample after a gap
    level, message = assess(shadow, Thresholds(1.0))
    assert shadow.state_interval == pytest.approx(period)
    assert level == WARN, message
    assert f"states {1e3 * period:.1f} ms apart where the bench runs at 5.0 ms: bus delay" \
        in message
    # One held-up cycle among regular ones is not a slow bus (the median).
    regular = Shadow(TRUE, BENCH, ShadowSettings(DT))
    for k, m in enumerate(true_log[:400]):
        regular.step(m._replace(time=k * DT + (0.1 if k >= 300 else 0.0)), resync=k == 300)
    assert regular.state_interval == pytest.approx(DT)
    assert assess(regular, Thresholds(1.0))[0] == OK


# -- the thermal group: R(T) from the reported winding temperature -------------------------

THERMAL = TRUE.replace(**{"thermal.resistance": 5.0, "thermal.capacitance": 1.0,
                          "thermal.tempcoef": 0.0039})


def heated_log(cool: float, hot: float) -> list[Measurement]:
    """The thermal set's bench over the protocol at ``cool`` °C ambient, then, from the
    state it reached, again with the winding and its surroundings at ``hot`` °C."""
    goal, enabled = commands()
    kp = float(THERMAL.actuator.gains[1])
    log: list[Measurement] = []
    position = velocity = 0.0
    for ambient in (cool, hot):
        bench = BenchStepper(THERMAL.replace(**{"thermal.ambient": ambient}), BENCH, DT,
                             position=position, velocity=velocity, gain=kp)
        for g, e in zip(goal, enabled, strict=True):
            bench.set_command(goal=float(g), torque_enable=bool(e))
            s = bench.tick()
            log.append(Measurement(s.position, s.velocity, s.goal, s.torque_enable, s.gain,
                                   s.temperature, s.input_voltage))
        position, velocity = bench.state
    return log


def test_a_hotter_winding_is_named_from_the_reported_temperature():
    log = heated_log(30.0, 70.0)
    shadow = shadow_of(log, THERMAL)
    first, last = log[0].temperature, log[-1].temperature
    assert last > first + 35.0  # the winding did get hot
    alpha, t0 = THERMAL.values["thermal.tempcoef"], THERMAL.values.get("thermal.reftemp", 25.0)
    expected = (1 + alpha * (last - t0)) / (1 + alpha * (first - t0)) - 1  # R(T) of (8)
    assert shadow.resistance_change == pytest.approx(expected, rel=1e-9)
    level, message = assess(shadow, Thresholds(1.0))
    assert f"R +{100 * expected:.0f} %: hot" in message, message
    # The model runs its winding at the reported temperature: the heat is explained, not a
    # fault (no friction taken for it, the level stays OK).
    assert "friction" not in message and level == OK
    # At one temperature throughout, R is not named.
    steady = shadow_of(heated_log(30.0, 30.0), THERMAL)
    assert abs(steady.resistance_change) < 0.05
    assert not re.search(r"\bR [+-]\d+ %", assess(steady, Thresholds(1.0))[1])


# -- samples that say nothing: not numbers, or stamps that do not advance -----------------

@pytest.mark.parametrize("field", ["position", "velocity", "goal", "gain"])
def test_states_that_are_not_numbers_are_an_error_naming_the_joint_and_field(true_log, field):
    shadow = Shadow(TRUE, BENCH, ShadowSettings(DT), joint="elbow")
    bad_at = range(300, 305)
    for k, m in enumerate(true_log[:600]):
        residual = shadow.step(m._replace(**{field: math.nan}) if k in bad_at else m)
        if k in bad_at:
            assert math.isnan(residual.position)  # not compared
        if k == 320:
            level, message = assess(shadow, Thresholds(0.01))
            assert level == ERROR, message
            assert message.startswith(f"elbow: {field} nan in the states (5 samples so far")
    # The running MAE was never poisoned, and the model re-synced after the bad samples: a
    # window (200 samples) of good ones later, the verdict is the MAE's again.
    assert math.isfinite(shadow.mae_position) and shadow.mae_position < 1e-3
    assert shadow.nonfinite == 5
    level, message = assess(shadow, Thresholds(0.01))
    assert level == OK and "nan" not in message, message


def test_stamps_that_stop_advancing_are_stale_after_one_window_of_samples(true_log):
    shadow = Shadow(TRUE, BENCH, ShadowSettings(DT, resync_period=1.0), joint="elbow")
    assert shadow.stale_after == 200  # samples: one re-sync window at 200 Hz
    for k, m in enumerate(true_log[:400]):
        shadow.step(m._replace(time=k * DT))
    frozen_at = 399 * DT
    for k, m in enumerate(true_log[400:600]):  # the driver's clock stopped
        assert shadow.step(m._replace(time=frozen_at)) is None  # nothing compared
        level, message = assess(shadow, Thresholds(0.01))
        assert (level == STALE) == (k + 1 >= 200), (k, message)
    assert message.startswith(f"elbow: the states' stamps stay at {frozen_at:.6f} s for 200 "
                              "samples"), message
    # Stamps going back are no newer either.
    assert shadow.step(true_log[600]._replace(time=frozen_at - 1.0)) is None
    assert shadow.frozen == 201
    # Once they advance again the stream is followed (re-synced) and the verdict is back.
    shadow.step(true_log[601]._replace(time=frozen_at + DT), resync=True)
    assert shadow.frozen == 0 and assess(shadow, Thresholds(0.01))[0] == OK
