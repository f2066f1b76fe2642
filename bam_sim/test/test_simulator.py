"""Batched numba rollouts against single rollouts, replay mode, scoring."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from bam_sim_cases import MODELS, SEED

from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae, batch_rollout, rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_vector import from_vector

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


def bench_logs(actuator: str, rng: np.random.Generator, n_logs: int = 6) -> list[BenchLog]:
    """Logs of varied length, bench and gain, every trajectory, some torque-off."""
    act = published_named(actuator, "m1").actuator
    names = list(TRAJECTORIES)
    logs = []
    for i in range(n_logs):
        bench = Bench(mass=float(rng.choice(act.masses)), length=float(rng.choice(act.lengths)),
                      arm_mass=0.1 * i)
        log = command_log(names[i % len(names)], bench, float(rng.choice(act.gains)),
                          duration=2.0 + 0.5 * i)
        recorded = rollout(published_named(actuator, "m4"), log)
        noise = rng.normal(0.0, 0.01, len(log))
        logs.append(BenchLog(bench=bench, kp=log.kp, dt=log.dt, goal=log.goal,
                             enabled=log.enabled, position=recorded.position + noise,
                             velocity=recorded.velocity, control=recorded.control,
                             name=log.name, supply_voltage=14.0 + 0.2 * i))
    return logs


def population(actuator: str, model: str, rng: np.random.Generator, size: int = 4) -> np.ndarray:
    base = published_named(actuator, model).vector()
    return base * rng.uniform(0.8, 1.2, (size, base.size))


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("actuator", ["mx64", "erob80_50"])
def test_batched_rollouts_equal_single_rollouts(actuator, model, replay):
    rng = np.random.default_rng(SEED)
    logs = bench_logs(actuator, rng)
    batch = LogBatch.pack(logs, published_named(actuator, model).actuator)
    pop = population(actuator, model, rng)
    positions = batch_rollout(get_model(model), pop, batch, replay=replay)
    errors = batch_mae(get_model(model), pop, batch, replay=replay)
    for i, vec in enumerate(pop):
        base = published_named(actuator, model)
        params = base.replace(**from_vector(vec, list(base.values)))
        for j, log in enumerate(logs):
            single = rollout(params, log, replay=replay).position
            np.testing.assert_allclose(positions[i, j, : len(log)], single, rtol=0, atol=1e-12)
            mae = np.mean(np.abs(single - log.position))
            assert errors[i, j] == pytest.approx(mae, rel=1e-12)


@pytest.mark.parametrize("actuator", ["mx106", "erob80_100"])
def test_replaying_recorded_control_reproduces_the_rollout(actuator):
    params = published_named(actuator, "m6")
    log = command_log("lift_drop", Bench(*((1.0, 0.2) if actuator == "mx106" else (8.2, 0.5))),
                      params.actuator.gains[1])
    sim = rollout(params, log)
    recorded = BenchLog(bench=log.bench, kp=log.kp, dt=log.dt, goal=log.goal,
                        enabled=log.enabled, position=sim.position, control=sim.control)
    replayed = rollout(params, recorded, replay=True)
    np.testing.assert_array_equal(replayed.position, sim.position)
    np.testing.assert_array_equal(replayed.motor_torque, sim.motor_torque)


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(SEED)
    logs = bench_logs("mx64", rng)
    batch = LogBatch.pack(logs, published_named("mx64", "m5").actuator)
    pop = population("mx64", "m5", rng, size=8)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = batch_mae(get_model("m5"), pop, batch)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(one, batch_mae(get_model("m5"), pop, batch))


def test_supply_voltage_of_the_log_is_used():
    params = published_named("mx64", "m1")
    log = command_log("steps", Bench(1.0, 0.15), 16.0)
    low = BenchLog(bench=log.bench, kp=log.kp, dt=log.dt, goal=log.goal, enabled=log.enabled,
                   supply_voltage=10.0)
    assert np.max(np.abs(rollout(params, low).control)) == pytest.approx(0.9625 * 10.0)
    assert np.max(np.abs(rollout(params, log).control)) == pytest.approx(0.9625 * 15.0)


def test_bad_batches_are_clear_errors():
    rng = np.random.default_rng(SEED)
    logs = bench_logs("mx64", rng, 2)
    act = published_named("mx64", "m1").actuator
    with pytest.raises(BamError, match="different time steps"):
        other = BenchLog(bench=logs[0].bench, kp=8.0, dt=0.01, goal=logs[0].goal,
                         enabled=logs[0].enabled)
        LogBatch.pack([logs[0], other], act)
    no_control = BenchLog(bench=logs[0].bench, kp=8.0, dt=logs[0].dt, goal=logs[0].goal,
                          enabled=logs[0].enabled, name="cmd")
    m1 = published_named("mx64", "m1")
    with pytest.raises(BamError, match="log 'cmd' has no recorded control"):
        batch_rollout(m1.model, m1.vector(), LogBatch.pack([no_control], act), replay=True)
    with pytest.raises(BamError, match="no recorded positions"):
        batch_mae(m1.model, m1.vector(), LogBatch.pack([no_control], act))
    bad = m1.vector()
    bad[0] = np.nan
    with pytest.raises(BamError, match="non-finite"):
        batch_mae(m1.model, bad, LogBatch.pack(logs, act))


def test_nan_in_a_log_names_the_entry():
    goal = np.zeros(10)
    goal[4] = np.nan
    with pytest.raises(BamError, match="'goal' is not finite at entry 4"):
        BenchLog(bench=Bench(1.0, 0.1), kp=8.0, dt=0.005, goal=goal, enabled=np.ones(10))


@pytest.mark.parametrize("actuator", ["sts3215", "sts3215_12v"])
def test_sts_rollout_follows_the_slewed_target(actuator):
    """The rollout of a goal step equals the rollout, without slew, of the ramp the
    firmware's target makes of it (closed form), bit for bit; and the slew matters."""
    params = published_named(actuator, "m1")
    rate, dt = params.values["max_velocity"], 0.005
    n = 400
    goal = np.where(np.arange(n) < 50, 0.0, 1.2)
    ramp = np.minimum(goal, np.maximum(0.0, (np.arange(n) - 49) * rate * dt))
    bench = Bench(0.35, 0.15)
    step_log = BenchLog(bench=bench, kp=32.0, dt=dt, goal=goal, enabled=np.ones(n, bool))
    ramp_log = BenchLog(bench=bench, kp=32.0, dt=dt, goal=ramp, enabled=np.ones(n, bool))
    fast = params.replace(max_velocity=1000.0)  # no ramp is steeper than 5 rad/step here
    slewed = rollout(params, step_log).position
    np.testing.assert_allclose(slewed, rollout(fast, ramp_log).position, rtol=0, atol=1e-15)
    assert np.max(np.abs(slewed - rollout(fast, step_log).position)) > 0.01
