"""The population in SIMD lanes (bench.lanes) and its polynomial math (models.vector_math).

The lanes must give the single rollout's positions and errors to the last bit, for every
model, law and mode they take; the general kernel must still take what they do not.
The polynomials are checked against the C library (math) over the ranges the bench
reaches, to a few units in the last place.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
import pytest
from bam_sim_cases import MODELS, MOTOR_CONTROLLER, MOTOR_GROUPS, SEED, ep_set

from bam_sim.bench import lanes, motor_lanes
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.latency import delayed_command
from bam_sim.bench.pendulum import ep_update
from bam_sim.bench.rollouts import batch_errors, batch_rollout, rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.models import parameter_vector as P
from bam_sim.models import vector_math
from bam_sim.models.elastoplastic.model import (
    EP_CV,
    EP_RATIONAL,
    NEAR_SLIDE,
    compliance,
    ep_coefficients,
    hypothetical_velocity,
    levels,
    phi_z_stribeck_near,
    stribeck_near,
    stribeck_sliding,
)
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import EP_FIRST, EP_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.parameter_vector import from_vector
from bam_sim.models.servo.actuators import get_actuator

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

# Every law the lanes take: drive/brake voltage (MX-64), its firmware current window
# (XL330), the STS firmware's ratio and slew (STS3215), the current law (eRob).
ACTUATORS = ("mx64", "xl330", "sts3215", "erob80_50")
SETS = lanes.BLOCK + 5  # two blocks, the second partial


def logs_of(actuator: str, rng: np.random.Generator) -> list[BenchLog]:
    """Logs of every trajectory, lengths and benches varied, with recorded control."""
    act = published_named(actuator, "m1").actuator
    logs = []
    for i, name in enumerate(TRAJECTORIES):
        bench = Bench(mass=float(rng.choice(act.masses)), length=float(rng.choice(act.lengths)))
        log = command_log(name, bench, float(rng.choice(act.gains)), duration=1.5 + 0.25 * i)
        sim = rollout(published_named(actuator, "m4"), log)
        logs.append(BenchLog(bench=bench, kp=log.kp, dt=log.dt, goal=log.goal,
                             enabled=log.enabled, control=sim.control, name=name,
                             position=sim.position + rng.normal(0.0, 0.01, len(log))))
    return logs


def population(actuator: str, model: str, rng: np.random.Generator) -> np.ndarray:
    """Sets around the published one, without its latency (the STS3215's: a kernel of its
    own, tested apart)."""
    base = published_named(actuator, model).vector()
    base[[P.LATENCY_COMMAND, P.LATENCY_READING]] = 0.0
    return base * rng.uniform(0.7, 1.3, (SETS, base.size))


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("actuator", ACTUATORS)
def test_lanes_equal_the_single_rollout_to_the_last_bit(actuator, model, replay):
    rng = np.random.default_rng(SEED)
    logs = logs_of(actuator, rng)
    base = published_named(actuator, model)
    batch = LogBatch.pack(logs, base.actuator)
    pop = population(actuator, model, rng)
    assert lanes.eligible(get_model(model), base.actuator.family, pop, voltage=False)
    positions = batch_rollout(get_model(model), pop, batch, replay=replay)
    errors = batch_errors(get_model(model), pop, batch, replay=replay)[0]
    for i, vec in enumerate(pop):
        params = base.replace(**from_vector(vec, list(base.values)))
        for j, log in enumerate(logs):
            single = rollout(params, log, replay=replay).position
            np.testing.assert_array_equal(positions[i, j, : len(log)], single)
            # numpy sums pairwise, the kernels in order: close here, equal below.
            assert errors[i, j] == pytest.approx(np.mean(np.abs(single - log.position)),
                                                 rel=1e-14)


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("actuator", ["sts3215", "mx64", "erob80_50"])
def test_sets_with_latency_in_lanes_equal_the_single_rollout_to_the_last_bit(actuator, replay):
    """Each lane acts on its own delayed command; delays of 0 to 4 ticks within a block put
    the lanes on both sides of lift_drop's torque switch at once (a mixed enable)."""
    rng = np.random.default_rng(SEED)
    logs = logs_of(actuator, rng)
    base = published_named(actuator, "m6")
    batch = LogBatch.pack(logs, base.actuator)
    pop = population(actuator, "m6", rng)
    ticks = rng.uniform(0.0, 4.0, SETS)
    ticks[::4] = 0.0  # lanes without latency beside lanes with it
    pop[:, P.LATENCY_COMMAND] = 0.75 * ticks * batch.dt
    pop[:, P.LATENCY_READING] = 0.25 * ticks * batch.dt
    model = get_model("m6")
    assert lanes.eligible(model, base.actuator.family, pop, voltage=False)
    assert lanes.kernel_of(model, pop) is lanes.delayed_lanes_kernel
    switch = next(j for j, log in enumerate(logs) if not log.enabled.all())
    mixed = [k for k in range(len(logs[switch]))
             if len({delayed_command(logs[switch].goal, logs[switch].enabled,
                                     logs[switch].goal, k, d / batch.dt)[1]
                     for d in pop[:lanes.BLOCK, P.LATENCY_COMMAND]
                     + pop[:lanes.BLOCK, P.LATENCY_READING]}) == 2]
    assert mixed  # the case the select in _motor_torques is for
    positions = batch_rollout(get_model("m6"), pop, batch, replay=replay)
    names = sorted({*base.values, "latency.command", "latency.reading"})
    for i, vec in enumerate(pop):
        params = base.replace(**from_vector(vec, names))
        for j, log in enumerate(logs):
            single = rollout(params, log, replay=replay).position
            np.testing.assert_array_equal(positions[i, j, : len(log)], single)


def test_latency_keeps_the_elastoplastic_models_on_the_general_kernel():
    pop = population("mx64", "m6", np.random.default_rng(SEED))
    pop[2, P.LATENCY_COMMAND] = 0.004
    assert lanes.eligible(get_model("m6"), 0, pop, voltage=False)
    assert not lanes.eligible(get_model(EP_MODELS[0]), 0, pop, voltage=False)
    pop[2, P.LATENCY_COMMAND] = 0.0
    assert lanes.kernel_of(get_model("m6"), pop) is lanes.lanes_kernel


def test_lanes_and_the_general_kernel_agree_on_the_mae_to_the_last_bit():
    """The MAE sums in the same order in both kernels: equal, not close."""
    rng = np.random.default_rng(SEED)
    logs = logs_of("mx64", rng)
    batch = LogBatch.pack(logs, published_named("mx64", "m6").actuator)
    pop = population("mx64", "m6", rng)
    in_lanes = batch_errors(get_model("m6"), pop, batch)[0]
    # voltage: the general kernel
    general = batch_errors(get_model("m6"), pop, batch, voltage=True)[0]
    np.testing.assert_array_equal(in_lanes, general)


@pytest.mark.parametrize("column, value", [
    (P.SUPPLY_R, 0.5), (P.HB_PERIOD, 5e-5), (P.TH_R, 2.0),
    (P.COG_A, 0.01)])
def test_a_set_with_an_optional_group_goes_to_the_general_kernel(column, value):
    """One set with a group among sets without: neither lanes (the motor lanes take a
    population of which every set runs through the motor model)."""
    pop = population("mx64", "m6", np.random.default_rng(SEED))
    model = get_model("m6")
    assert lanes.eligible(model, 0, pop, voltage=False)
    pop[3, column] = value
    assert not lanes.eligible(model, 0, pop, voltage=False)
    assert not motor_lanes.eligible(model, 0, pop, voltage=False)


@pytest.mark.parametrize("column, value", [(P.TH_R, 2.0), (P.COG_A, 0.01), (P.IND_L, 0.004)])
def test_sets_that_all_use_the_motor_model_go_to_the_motor_lanes(column, value):
    pop = population("mx64", "m6", np.random.default_rng(SEED))
    pop[:, column] = value
    for model in ("m6", "lugre"):
        assert motor_lanes.eligible(get_model(model), 0, pop, voltage=False)
        assert not lanes.eligible(get_model(model), 0, pop, voltage=False)
    for other in ((P.LATENCY_READING, 0.004), (P.SUPPLY_R, 0.5), (P.HB_PERIOD, 5e-5)):
        changed = pop.copy()
        changed[5, other[0]] = other[1]  # steps the lanes do not take
        assert not motor_lanes.eligible(get_model("m6"), 0, changed, voltage=False)
    assert not motor_lanes.eligible(get_model("m6"), 0, pop, voltage=True)
    assert not motor_lanes.eligible(get_model("ep_cv"), 0, pop, voltage=False)


def test_an_empty_population_gives_empty_results():
    logs = logs_of("mx64", np.random.default_rng(SEED))
    batch = LogBatch.pack(logs, published_named("mx64", "m6").actuator)
    empty = np.zeros((0, P.N_PARAMS))
    assert not lanes.eligible(get_model("m6"), 0, empty, voltage=False)
    assert batch_errors(get_model("m6"), empty, batch)[0].shape == (0, len(logs))


def test_other_models_and_voltage_scores_go_to_the_general_kernel():
    pop = population("mx64", "m1", np.random.default_rng(SEED))
    assert not lanes.eligible(get_model("m1"), 0, pop, voltage=True)
    # The dcmotor family and LuGre run through the motor model: the motor lanes.
    assert not lanes.eligible(get_model("lugre"), 2, pop, voltage=False)
    assert not lanes.eligible(get_model("m1"), 2, pop, voltage=False)  # dcmotor family
    assert motor_lanes.eligible(get_model("lugre"), 2, pop, voltage=False)
    assert motor_lanes.eligible(get_model("m1"), 2, pop, voltage=False)
    assert not motor_lanes.eligible(get_model("lugre"), 2, pop, voltage=True)
    assert not motor_lanes.eligible(get_model("m1"), 0, pop, voltage=False)  # no group
    for model in EP_MODELS:  # elasto-plastic: the lanes (test_sim_elastoplastic_rollouts)
        assert lanes.eligible(get_model(model), 0, pop, voltage=False)


# LuGre, with every state and group of bam_sim_cases.MOTOR_GROUPS.
LUGRE = {"lugre.stiffness": 150.0, "lugre.damping": 1.5, "lugre.coulomb": 0.05,
         "lugre.static": 0.1, "lugre.stribeck": 0.2, "lugre.viscous": 0.05}
# What a lane may switch off (its states and selects on, in the other lanes of its block).
SWITCHES = {
    "inductance": ("inductance.L",),
    "thermal": tuple(n for n in MOTOR_GROUPS if n.startswith("thermal.")),
    "saturation": ("saturation.torque",),
    "rate limit": ("saturation.current_rate",),
    "cogging": ("cogging.amplitude", "cogging.poles", "cogging.phase"),
    "integral": ("controller.ki",),
    "anti-windup": ("controller.Imax",),
    "slew": ("controller.slewmax",),
    "v_max": ("controller.Vmax",),
}


def motor_base(actuator: str, model: str) -> ParameterSet:
    """Every group on: the dcmotor family's own motor and controller, else the motor of
    the actuator's published M1 (LuGre) or its published set (M1..M6)."""
    if actuator == "dcmotor":
        values = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01, **MOTOR_CONTROLLER}
        if model != "lugre":
            values.update({"friction_base": 0.05, "friction_viscous": 0.02})
    elif model == "lugre":
        m1 = published_named(actuator, "m1").values
        values = {name: m1[name] for name in ("kt", "R", "armature")}
    else:
        values = dict(published_named(actuator, model).values)
        values.update({"latency.command": 0.0, "latency.reading": 0.0})
    if actuator == "erob80_50":  # a stronger motor: its saturation, stick and cogging
        values.update({"saturation.torque": 40.0, "cogging.amplitude": 0.5})
        if model == "lugre":
            values.update({"lugre.stiffness": 2.0e4, "lugre.damping": 200.0})
    groups = {**MOTOR_GROUPS, **(LUGRE if model == "lugre" else {})}
    return ParameterSet.from_names(actuator, model, {**groups, **values})


def motor_logs(base: ParameterSet, rng: np.random.Generator) -> list[BenchLog]:
    """Logs of every trajectory (one with the torque off), their recorded control,
    position and temperature (one without) from the base set's rollout."""
    act = get_actuator(base.actuator.name)
    logs = []
    for i, name in enumerate(TRAJECTORIES):
        bench = Bench(mass=float(rng.choice(act.masses)), length=float(rng.choice(act.lengths)))
        log = command_log(name, bench, float(rng.choice(act.gains)), duration=1.0 + 0.25 * i)
        sim = rollout(base, log)
        temperature = sim.temperature + rng.normal(0.0, 0.1, len(log))
        logs.append(BenchLog(bench=bench, kp=log.kp, dt=log.dt, goal=log.goal,
                             enabled=log.enabled, control=sim.control, name=name,
                             position=sim.position + rng.normal(0.0, 0.01, len(log)),
                             temperature=None if i == 2 else temperature))
    return logs


def motor_population(base: ParameterSet, rng: np.random.Generator) -> np.ndarray:
    """SETS sets around ``base`` (every value ±10 %), each optional state or select
    switched off in about a third of them (every one in some lane of the first block,
    on in the others); set 0 keeps every one."""
    names = list(base.values)
    pop = np.tile(base.vector(), (SETS, 1))
    columns = [P.INDEX[name] for name in names]
    pop[:, columns] *= rng.uniform(0.9, 1.1, (SETS, len(columns)))
    switches = [s for s, group in SWITCHES.items() if group[0] in names]
    if base.model.name != "lugre" and base.actuator.name != "dcmotor":
        switches.remove("inductance")  # kept on: every set must use the motor model
    for s in switches:
        off = rng.random(SETS) < 1 / 3
        off[0], off[1 + switches.index(s)] = False, True
        pop[np.ix_(off, [P.INDEX[name] for name in SWITCHES[s]])] = 0.0
    return pop


def set_of(base: ParameterSet, vector: np.ndarray) -> ParameterSet:
    """The ParameterSet of a set of :func:`motor_population` (its groups switched off
    left out)."""
    names = [name for name in base.values
             if not (name.startswith("thermal.") and vector[P.TH_R] == 0.0)
             and not (name.startswith("cogging.") and vector[P.COG_A] == 0.0)]
    return ParameterSet.build(base.actuator, base.model, from_vector(vector, names))


MOTOR_CASES = [("dcmotor", "lugre"), ("mx64", "lugre"), ("erob80_50", "lugre"),
               ("dcmotor", "m1"), ("mx64", "m6"), ("xl330", "m4"), ("sts3215", "m2"),
               ("erob80_50", "m3")]


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("actuator, model", MOTOR_CASES)
def test_motor_lanes_equal_the_single_rollout_to_the_last_bit(actuator, model, replay):
    """Every family and joint through the DC-motor model, simulated and replayed, a full
    and a partial block, the optional states on in some lanes and off in others."""
    rng = np.random.default_rng(SEED)
    base = motor_base(actuator, model)
    logs = motor_logs(base, rng)
    batch = LogBatch.pack(logs, base.actuator)
    pop = motor_population(base, rng)
    assert motor_lanes.eligible(base.model, base.actuator.family, pop, voltage=False)
    positions = batch_rollout(get_model(model), pop, batch, replay=replay)
    for i, vec in enumerate(pop):
        params = set_of(base, vec)
        for j, log in enumerate(logs):
            single = rollout(params, log, replay=replay).position
            np.testing.assert_array_equal(positions[i, j, : len(log)], single)
    assert not np.array_equal(positions[0], positions[1])  # the sets differ


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("actuator, model", [("dcmotor", "lugre"), ("mx64", "m6")])
def test_motor_lanes_and_the_general_kernel_agree_on_both_maes_to_the_last_bit(actuator, model,
                                                                              replay):
    """Position and temperature MAE (NaN for a set without the thermal group)."""
    rng = np.random.default_rng(SEED)
    base = motor_base(actuator, model)
    logs = motor_logs(base, rng)
    batch = LogBatch.pack(logs, base.actuator)
    pop = motor_population(base, rng)
    in_lanes = batch_errors(get_model(model), pop, batch, replay=replay)
    # voltage: the general kernel
    general = batch_errors(get_model(model), pop, batch, replay=replay, voltage=True)
    np.testing.assert_array_equal(in_lanes[0], general[0])
    np.testing.assert_array_equal(in_lanes[1], general[1])
    thermal = pop[:, P.TH_R] > 0.0
    recorded = np.array([log.temperature is not None for log in logs])
    scored = thermal[:, None] & recorded[None, :]
    assert np.isnan(in_lanes[1][~scored]).all() and np.isfinite(in_lanes[1][scored]).all()
    assert (~thermal).any() and thermal.any() and (~recorded).any()


@nb.njit(cache=True)
def _ep_lanes_step(form: int, block: np.ndarray, inertia: float, q: np.ndarray,
                   dq: np.ndarray, e: np.ndarray, tau: np.ndarray, tau_e: np.ndarray,
                   dt: float) -> None:
    """The elasto-plastic part of one lane step, q, q̇, e advanced in place."""
    f, near = np.empty(lanes.BLOCK), np.zeros(lanes.BLOCK, dtype=np.bool_)
    if form == EP_CV or form == EP_RATIONAL:
        lanes._ep_closed_form(form, block, inertia, q, dq, e, tau, tau_e, dt)
    else:
        lanes._ep_stribeck(form, block, inertia, q, dq, e, tau, tau_e, f, near, dt)


@pytest.mark.parametrize("model", EP_MODELS)
def test_each_phi_z_case_in_lanes_is_the_scalar_step_to_the_last_bit(model):
    """One step from hypothetical velocities x spread over sticking, the near-threshold
    path and the table path of the Stribeck Φ_Z (the lanes compute the table path for
    every lane and redo the near ones): each lane equals the scalar step."""
    params = ep_set("mx64", model)
    p = params.vector()
    k = ep_coefficients(p)
    dt, inertia = 0.005, 0.02
    rng = np.random.default_rng(SEED)
    tau, tau_e = rng.uniform(-0.3, 0.3, lanes.BLOCK), rng.uniform(-0.3, 0.3, lanes.BLOCK)
    e = rng.uniform(-1e-4, 1e-4, lanes.BLOCK)
    Z = compliance(k.K, k.B, dt)
    levels_of = [levels(model_form(model), k, tau[b], tau_e[b]) for b in range(lanes.BLOCK)]
    # Two lanes stick, two slide far, twelve slide near the threshold; signs alternate.
    low = max(Z * fs for fs, _ in levels_of)
    edge = min(Z * fs + NEAR_SLIDE * k.vs * (1.0 + Z * k.kv) for fs, _ in levels_of)
    x = np.concatenate([[0.5 * low], np.linspace(1.001 * low, 0.999 * edge, 12),
                        [1.5 * edge, 3.0 * edge, -0.5 * low]])
    x[1::2] *= -1.0
    dq = x - Z * k.K * e
    x = np.array([hypothetical_velocity(dq[b], e[b], Z, k.K) for b in range(lanes.BLOCK)])
    if model in ("ep_stribeck", "ep_load"):
        cases = ["stick" if abs(x[b]) <= Z * fs else
                 "near" if stribeck_near(abs(x[b]), Z, fs, fc, k.vs, k.kv) else "far"
                 for b, (fs, fc) in enumerate(levels_of)]
        assert cases.count("stick") == 2 and cases.count("far") == 2
        # The table path is close near the threshold but not the same: a lane left
        # with it would differ from the scalar step.
        assert any(phi_z_stribeck_near(x[b], Z, fs, fc, k.vs, k.kv)
                   != stribeck_sliding(x[b], Z, fs, fc, k.vs, k.kv)
                   for b, (fs, fc) in enumerate(levels_of) if cases[b] == "near")
    q = rng.uniform(-1.0, 1.0, lanes.BLOCK)
    block = np.ascontiguousarray(np.tile(p, (lanes.BLOCK, 1)).T)
    want = [ep_update(params.model.model_id, p, inertia + p[P.ARMATURE], q[b], dq[b], e[b],
                      tau[b], tau_e[b], dt) for b in range(lanes.BLOCK)]
    _ep_lanes_step(model_form(model), block, inertia, q, dq, e, tau, tau_e, dt)
    np.testing.assert_array_equal(np.column_stack([q, dq, e]), np.array(want))


def model_form(model: str) -> int:
    return get_model(model).model_id - EP_FIRST


@nb.njit(cache=True)
def _apply(which: int, x: np.ndarray, a: float) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.size):
        if which == 0:
            out[i] = vector_math.sin(x[i])
        elif which == 1:
            out[i] = vector_math.exp(x[i])
        elif which == 2:
            out[i] = vector_math.log(x[i])
        else:
            out[i] = vector_math.power(x[i], a)
    return out


def ulps(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference in units of the last place of the C library's result."""
    return float(np.max(np.abs(got - want) / np.spacing(np.abs(want))))


def test_sine_within_two_ulps_where_the_bench_reaches():
    x = np.random.default_rng(SEED).uniform(-2000.0, 2000.0, 20000)
    x = np.concatenate([x, [0.0, math.pi / 4, math.pi / 2, -math.pi, 1e-9, 1e3]])
    want = np.array([math.sin(v) for v in x])
    got = _apply(0, x, 0.0)
    big = np.abs(want) > 1e-2  # near its zeros the reduction's absolute error is what counts
    assert ulps(got[big], want[big]) <= 2.0  # measured: 2 (1 where |sin x| > 0.1)
    assert np.max(np.abs(got - want)) <= 4e-16  # measured: 1.1e-16, half an ulp of 1


def test_exp_and_log_within_two_ulps():
    rng = np.random.default_rng(SEED)
    z = np.concatenate([rng.uniform(-700.0, 700.0, 20000), rng.uniform(-1.0, 1.0, 5000), [0.0]])
    assert ulps(_apply(1, z, 0.0), np.exp(z)) <= 2.0
    assert _apply(1, np.array([0.0, -0.0]), 0.0).tolist() == [1.0, 1.0]
    x = np.exp(rng.uniform(-600.0, 600.0, 20000))
    want = np.log(x)
    away = np.abs(want) > 1e-2  # ln's zero at 1: absolute there
    assert ulps(_apply(2, x, 0.0)[away], want[away]) <= 2.0
    assert np.max(np.abs(_apply(2, x, 0.0) - want)) <= 1e-13


def test_power_as_the_stribeck_factor_uses_it():
    """x^α for the ratios |q̇/v_s| and exponents of the published sets: relative 1e-14."""
    rng = np.random.default_rng(SEED)
    x = np.concatenate([np.exp(rng.uniform(-20.0, 8.0, 20000)), [0.0, 1.0]])
    for alpha in (0.5, 1.0, 1.37, 2.0, 3.3):
        want = x ** alpha
        np.testing.assert_allclose(_apply(3, x, alpha), want, rtol=1e-14, atol=0.0)
    assert _apply(3, np.array([0.0]), 1.37)[0] == 0.0
