"""BenchStepper without ROS: the tick convention against rollout, commands, effects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bam_sim_cases import SEED

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.stepper import BenchStepper, Command
from bam_sim.bench.trajectory import command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DT = 0.005


def benches(actuator: str) -> Bench:
    if actuator.startswith("sts"):
        return Bench(mass=0.35, length=0.15, arm_mass=0.02)
    return Bench(mass=1.0, length=0.15, arm_mass=0.05) if actuator.startswith("mx") \
        else Bench(mass=8.2, length=0.5)


def drive(sim: BenchStepper, goals, enables) -> list:
    samples = []
    for goal, enable in zip(goals, enables):
        sim.set_command(goal=float(goal), torque_enable=bool(enable))
        samples.append(sim.tick())
    return samples


def as_log(samples, bench, supply_voltage=None) -> BenchLog:
    """A bench log of the samples, as identification builds it from a recording."""
    gains = {s.gain for s in samples}
    assert len(gains) == 1
    return BenchLog(bench=bench, kp=gains.pop(), dt=DT,
                    goal=np.array([s.goal for s in samples]),
                    enabled=np.array([s.torque_enable for s in samples]),
                    position=np.array([s.position for s in samples]),
                    velocity=np.array([s.velocity for s in samples]),
                    supply_voltage=supply_voltage)


@pytest.mark.parametrize(("actuator", "model"), [
    *((a, m) for a in ("mx64", "erob80_50") for m in ("m1", "m4", "m6")),
    ("sts3215", "m1"),  # the STS firmware's target is a state of the stepper too
])
def test_ticks_equal_rollout_bit_for_bit(actuator, model):
    params = published_named(actuator, model)
    bench = benches(actuator)
    kp = params.actuator.gains[2]
    # steps: goals faster than the STS firmware's target rate, which the stepper slews
    commands = command_log("steps" if actuator.startswith("sts") else "lift_drop", bench, kp,
                           DT, duration=3.0)
    volts = 14.2 if actuator == "mx64" else None
    # the goal held before (a rollout's STS target starts at the log's first goal)
    sim = BenchStepper(params, bench, DT, position=0.1, velocity=-0.2, gain=kp,
                       supply_voltage=volts, goal=float(commands.goal[0]))
    samples = drive(sim, commands.goal, commands.enabled)
    run = rollout(params, as_log(samples, bench, volts))
    np.testing.assert_array_equal([s.position for s in samples], run.position)
    np.testing.assert_array_equal([s.velocity for s in samples], run.velocity)
    np.testing.assert_array_equal([s.motor_torque for s in samples], run.motor_torque)
    np.testing.assert_array_equal([s.control for s in samples], run.control)
    assert np.ptp(run.position) > 0.3  # the joint really moved
    assert [s.tick for s in samples] == list(range(len(samples)))
    assert samples[7].time == 7 * DT
    assert sim.tick_count == len(samples)


def test_torque_off_means_no_motor_torque():
    params = published_named("mx64", "m4")
    sim = BenchStepper(params, Bench(1.0, 0.15), DT, position=1.0, torque_enable=False)
    samples = [sim.tick() for _ in range(200)]
    assert all(s.motor_torque == 0.0 and s.control == 0.0 for s in samples)
    assert not any(s.torque_enable for s in samples)
    assert min(s.position for s in samples) < 0.5  # it falls
    sim.set_command(torque_enable=True, goal=1.0)
    assert sim.tick().motor_torque != 0.0


def test_sample_reports_the_command_of_its_tick():
    sim = BenchStepper(published_named("mx64", "m1"), Bench(1.0, 0.15), DT)
    assert sim.command == Command(0.0, True, 8.0)  # goal = initial position, Table I gain
    sim.set_command(goal=0.3)
    first = sim.tick()
    assert (first.goal, first.torque_enable, first.gain, first.position) == (0.3, True, 8.0, 0.0)
    assert first.control > 0.0 and first.motor_torque > 0.0
    sim.set_command(gain=16.0)
    second = sim.tick()
    assert (second.goal, second.gain) == (0.3, 16.0)
    assert second.position > 0.0


@pytest.mark.parametrize("change", [
    {"goal": math.nan}, {"goal": math.inf}, {"gain": -1.0}, {"gain": math.nan},
    {"goal": "1.0"}, {"torque_enable": 1}, {"goal": 0.2, "gain": math.inf},
])
def test_bad_commands_are_rejected_and_change_nothing(change):
    sim = BenchStepper(published_named("mx64", "m4"), Bench(1.0, 0.15), DT, goal=0.1)
    before = sim.command
    with pytest.raises(BamError):
        sim.set_command(**change)
    assert sim.command == before
    assert math.isfinite(sim.tick().position)


def test_bench_change_is_validated_and_applied():
    params = published_named("mx64", "m4")
    sim = BenchStepper(params, Bench(1.0, 0.15), DT, position=0.5, torque_enable=False)
    for bad in ({"length": 0.0}, {"mass": -1.0}, {"mass": math.nan}, {"arm_mass": math.inf}):
        with pytest.raises(BamError):
            sim.set_bench(**bad)
    assert sim.bench == Bench(1.0, 0.15)
    for _ in range(10):
        sim.tick()
    new = sim.set_bench(mass=0.5, length=0.2)
    assert new == Bench(0.5, 0.2) and sim.bench == new
    q, dq = sim.state
    samples = [sim.tick() for _ in range(100)]
    log = BenchLog(bench=new, kp=sim.command.gain, dt=DT, goal=np.zeros(100),
                   enabled=np.zeros(100, bool), position=np.full(100, q),
                   velocity=np.full(100, dq))
    np.testing.assert_array_equal([s.position for s in samples], rollout(params, log).position)


def test_parameter_swap_must_keep_the_actuator():
    sim = BenchStepper(published_named("mx64", "m4"), Bench(1.0, 0.15), DT)
    with pytest.raises(BamError, match="mx106"):
        sim.set_parameters(published_named("mx106", "m4"))
    assert sim.params.model.name == "m4"
    sim.set_parameters(published_named("mx64", "m6"))
    assert sim.params.model.name == "m6" and sim.actuator.name == "mx64"


def test_constructor_validates():
    params = published_named("mx64", "m4")
    with pytest.raises(BamError):
        BenchStepper(params, Bench(1.0, 0.15), 0.0)
    with pytest.raises(BamError):
        BenchStepper(params, Bench(1.0, 0.15), DT, position=math.nan)
    with pytest.raises(BamError):
        BenchStepper(params, Bench(1.0, 0.15), DT, latency=-1)
    with pytest.raises(BamError):
        BenchStepper(params, Bench(1.0, 0.15), DT, position_noise=-0.1)
    with pytest.raises(BamError):
        BenchStepper(params, Bench(1.0, 0.15), DT, supply_voltage=0.0)


def run_with_effects(**effects):
    params = published_named("mx64", "m4")
    bench = Bench(1.0, 0.15)
    commands = command_log("steps", bench, 16.0, DT, duration=2.0)
    sim = BenchStepper(params, bench, DT, gain=16.0, **effects)
    return drive(sim, commands.goal, commands.enabled), sim.state


def test_measurement_effects_do_not_touch_the_physics():
    clean, clean_state = run_with_effects()
    truth = np.array([s.position for s in clean])
    velocity = np.array([s.velocity for s in clean])
    step = 2 * math.pi / 4096

    late, state = run_with_effects(latency=3)
    assert state == clean_state
    got = np.array([s.position for s in late])
    np.testing.assert_array_equal(got[3:], truth[:-3])
    np.testing.assert_array_equal(got[:3], truth[0])
    np.testing.assert_array_equal([s.velocity for s in late][3:], velocity[:-3])
    # The command and the servo output are those of the true state.
    assert [s.motor_torque for s in late] == [s.motor_torque for s in clean]

    noisy, state = run_with_effects(position_noise=0.01, seed=SEED)
    assert state == clean_state
    error = np.array([s.position for s in noisy]) - truth
    assert 0.008 < error.std() < 0.012
    again, _ = run_with_effects(position_noise=0.01, seed=SEED)
    assert [s.position for s in again] == [s.position for s in noisy]

    coarse, state = run_with_effects(quantization=step)
    assert state == clean_state
    q = np.array([s.position for s in coarse])
    np.testing.assert_allclose(q / step, np.round(q / step), rtol=0, atol=1e-9)
    assert np.max(np.abs(q - truth)) <= step / 2 + 1e-12


def test_effects_can_change_at_run_time():
    sim = BenchStepper(published_named("mx64", "m4"), Bench(1.0, 0.15), DT, position=0.3)
    sim.set_measurement(quantization=0.1)
    assert sim.tick().position == pytest.approx(0.3)
    with pytest.raises(BamError):
        sim.set_measurement(position_noise=math.nan)
    assert sim.quantization == 0.1 and sim.position_noise == 0.0


def test_latency_ticks_equal_rollout_and_delay_the_response():
    """A set with L_c (and L_r) on the stepper: with L_r = 0 the ticks are the rollout's
    bit for bit (the same interpolated commands); the response is the undelayed one
    shifted by L_c where L_c is whole ticks; L_r shifts the readings alone."""
    base = published_named("mx64", "m4")
    bench = benches("mx64")
    commands = command_log("steps", bench, 32.0, DT, duration=2.0)
    goal0 = float(commands.goal[0])
    for delay in (0.0123, 3 * DT):
        params = base.replace(**{"latency.command": delay})
        sim = BenchStepper(params, bench, DT, gain=32.0, goal=goal0)
        samples = drive(sim, commands.goal, commands.enabled)
        run = rollout(params, as_log(samples, bench, None))
        np.testing.assert_array_equal([s.position for s in samples], run.position)
        assert [s.goal for s in samples] == list(commands.goal)  # reported as given
    plain = [s.position for s in drive(BenchStepper(base, bench, DT, gain=32.0, goal=goal0),
                                       commands.goal, commands.enabled)]
    np.testing.assert_array_equal([s.position for s in samples][3:], plain[:-3])
    read = base.replace(**{"latency.reading": 2 * DT})
    late = [s.position for s in drive(BenchStepper(read, bench, DT, gain=32.0, goal=goal0),
                                      commands.goal, commands.enabled)]
    np.testing.assert_array_equal(late[2:], plain[:-2])
    assert np.ptp(plain) > 0.3


def test_a_sagging_supply_is_reported_like_the_rollout():
    params = published_named("mx64", "m1").replace(**{"supply.resistance": 1.0})
    bench = benches("mx64")
    commands = command_log("steps", bench, 32.0, DT, duration=2.0)
    sim = BenchStepper(params, bench, DT, gain=32.0, goal=float(commands.goal[0]))
    samples = drive(sim, commands.goal, commands.enabled)
    run = rollout(params, as_log(samples, bench, None))
    volts = np.array([s.input_voltage for s in samples])
    np.testing.assert_array_equal(volts, run.input_voltage)
    assert volts.min() < 14.0 and volts.max() == 15.0  # sags while it drives, never rises
    plain = BenchStepper(published_named("mx64", "m1"), bench, DT, gain=32.0).tick()
    assert plain.input_voltage == 15.0
