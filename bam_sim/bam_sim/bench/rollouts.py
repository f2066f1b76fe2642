"""Algorithm 1 compiled with numba: single and batched rollouts of bench logs.

Two modes:

* simulated control (``replay=False``): the servo's control law is evaluated
  from the simulated state, as when identifying a model (paper V-B);
* replayed control (``replay=True``): the control recorded in the log (volts
  or amperes) drives the motor model.

A rollout starts from the log's first recorded state; entry k's command drives
the step k → k+1 (see :mod:`bam_sim.bench.bench_log`), and the simulated position of
entry k is the state before that step, as in the published implementation.

The batched kernels run every (parameter set, log) pair of a population and a
batch of logs in parallel over the cores (``numba.prange``); each pair is
independent, so the result does not depend on the number of threads. All
kernels call one compiled per-log loop (:func:`_simulate`), so a batched
rollout is bit-for-bit the single rollout of the same pair. It is called, not
inlined: a call per log costs nothing beside its thousands of steps, and numba
then compiles the loop once for every kernel (about 50 s less on a fresh
build), not once inlined in each. Compiled code is cached on disk
(``cache=True``): numba compiles once per installation.

The elasto-plastic models (``ep_*``) carry a deflection e between steps: a
local of that loop, 0 at the start of every log (Algorithm 1 line 1 of
Cisneros et al.), so a log's rollout still depends on nothing but its own
inputs. The loop branches once per step on the model id, the same way for the
whole log, and M1..M6 run exactly the arithmetic they ran without it. A set
that violates condition (14) or the coupling limit at the logs' step is
refused before any simulation (:mod:`bam_sim.models.elastoplastic.validity`).

The STS firmware's target (:func:`bam_sim.models.servo.laws.firmware_target`) is a
local too, at the first goal at the start; every other servo's target is the goal.

With the ``latency`` group, the commands act late: :mod:`bam_sim.bench.latency`.
With the ``backlash`` group the motor's lead on the output and its rate are locals too
(:mod:`bam_sim.bench.backlash`), the load leaning on the gear at the start.

A set that runs through MuJoCo's DC-motor model (dcmotor family, LuGre, or an
optional group; :func:`bam_sim.models.dcmotor.motor_model.uses_motor`) carries its
five states the same way, as locals of the loop: slew (at the first goal),
integral, temperature rise (from the log's first recorded temperature),
bristle, current. Such a rollout also yields the motor current and the
winding temperature, and is scored on the recorded temperature when both
exist (:func:`batch_errors`). A LuGre set must hold a stable stick at the
step (:func:`bam_sim.models.elastoplastic.validity.lugre_violation`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from bam_sim.bench import lanes, motor_lanes
from bam_sim.bench.backlash import initial_lead, step_backlash
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.latency import delay_ticks, delayed_command
from bam_sim.bench.pendulum import step_any, step_motor
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.motor_model import (
    N_MODES,
    ON,
    REPLAY,
    fill_motor,
    init_state,
    motor_torque,
    uses_motor,
)
from bam_sim.models.elastoplastic.validity import check_step, violation
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import C_SUPPLY
from bam_sim.models.servo.laws import (
    firmware_target,
    input_voltage,
    servo_torque,
    torque_from_control,
)


@nb.njit(cache=True)
def _simulate(
    model: int, family: int, p: np.ndarray, c: np.ndarray, kp: float, inertia: float,
    gravity_torque: float, q0: float, dq0: float, goal: np.ndarray, enabled: np.ndarray,
    control: np.ndarray, n: int, dt: float, replay: bool, recorded: np.ndarray,
    out_q: np.ndarray, out_dq: np.ndarray, out_tau: np.ndarray, out_control: np.ndarray,
    temperature: np.ndarray, out_current: np.ndarray, out_temperature: np.ndarray,
    voltage: np.ndarray, out_voltage: np.ndarray,
) -> tuple[float, float, int, float, int]:
    """Roll one log out: (Σ|q_sim − q_recorded|, Σ|T_sim − T_recorded|, temperatures
    scored, Σ|V_sim − V_recorded|, voltages scored).

    Outputs are written only where the arrays are non-empty, so the error
    kernel runs the same loop without storing anything. ``temperature`` is
    the recorded temperature (°C, the servo's sensor; NaN where missing; empty: none):
    a set with the thermal group starts from its first value and is scored
    on it. ``voltage`` is the input voltage the bus reported (V, NaN where
    missing; empty: not scored), against the one of the servo model
    (:func:`bam_sim.models.servo.laws.input_voltage`, sagged with the supply group).
    """
    q, dq, e = q0, dq0, 0.0  # e: elasto-plastic deflection (ep_* only)
    target = goal[0]  # the servo firmware's target (the goal but on an STS)
    delay = delay_ticks(p[P.LATENCY_COMMAND], p[P.LATENCY_READING], dt)
    goal_k, enabled_k, control_k = goal[0], enabled[0], control[0]
    store, store_all, score = out_q.size > 0, out_tau.size > 0, recorded.size > 0
    motor = uses_motor(family, model, p)
    backlash = p[P.BACKLASH] > 0.0  # never with the motor model (ParameterSet refuses it)
    s, ds = 0.0, 0.0  # the motor's lead on the output and its rate (backlash only)
    if backlash:
        s = initial_lead(p, gravity_torque, q0)
    pd = np.zeros((N_MODES, D.N_PARAMS))  # the set's dcmotor rows (motor only)
    state = np.zeros(D.N_STATES)  # slew, integral, temperature, bristle, current
    thermal = False
    if motor:
        fill_motor(family, model, p, c, pd)
        thermal = pd[ON, D.P_RT] > 0.0
        init_state(pd[REPLAY if replay else ON], state, goal[0],
                   temperature[0] if temperature.size > 0 else np.nan)
    score_t = thermal and temperature.size > 0
    error, error_t, count_t = 0.0, 0.0, 0
    error_v, count_v = 0.0, 0
    volts = voltage.size > 0 or out_voltage.size > 0
    current = np.nan
    for k in range(n):
        if store:
            out_q[k] = q
        if score:
            error += abs(q - recorded[k])
        if thermal:
            t_sim = pd[ON, D.P_TA] + state[D.S_TEMPERATURE]
            if out_temperature.size > 0:
                out_temperature[k] = t_sim
            if score_t and temperature[k] == temperature[k]:
                error_t += abs(t_sim - temperature[k])
                count_t += 1
        goal_k, enabled_k, control_k = delayed_command(goal, enabled, control, k, delay)
        target = firmware_target(p, target, goal_k, dt)
        if volts:
            v_sim = input_voltage(family, p, c, kp, q, dq + ds, target, enabled_k)
            if out_voltage.size > 0:
                out_voltage[k] = v_sim
            if voltage.size > 0 and voltage[k] == voltage[k]:
                error_v += abs(v_sim - voltage[k])
                count_v += 1
        if k == n - 1:
            break
        if motor:
            q_next, dq_next, e, tau_m, applied, current = step_motor(
                model, family, p, pd, c, kp, inertia, gravity_torque, q, dq, e, state,
                target, enabled_k, replay, control_k, dt,
            )
        elif backlash:
            q_next, dq_next, s, ds, tau_m, applied = step_backlash(
                model, family, p, c, kp, inertia, gravity_torque, q, dq, s, ds, target,
                enabled_k, replay, control_k, dt)
        else:
            q_next, dq_next, e, tau_m, applied = step_any(
                model, family, p, c, kp, inertia, gravity_torque, q, dq, e,
                target, enabled_k, replay, control_k, dt,
            )
        if store_all:
            out_dq[k] = dq
            out_tau[k] = tau_m
            out_control[k] = applied
            out_current[k] = current
        q, dq = q_next, dq_next
    if store_all:
        _last_entry(motor, family, p, c, pd, state, kp, q, dq, target, enabled_k, replay,
                    control_k, dt, n - 1, out_dq, out_tau, out_control, out_current)
    return error, error_t, count_t, error_v, count_v


@nb.njit(cache=True)
def _last_entry(motor, family, p, c, pd, state, kp, q, dq, target, enabled, replay, control,
                dt, last, out_dq, out_tau, out_control, out_current):
    """The command of the last entry acts after the log ends: report the torque it would
    produce, as a servo reading would. Once a log, so compiled apart (not inlined)."""
    out_dq[last] = dq
    if motor:
        tau_m, _, applied, current = motor_torque(
            family, p, c, pd, state.copy(), kp, q, dq, target, enabled, replay, control, dt)
        out_tau[last], out_control[last], out_current[last] = tau_m, applied, current
    elif replay:
        out_control[last] = control if enabled else 0.0
        out_tau[last] = torque_from_control(family, p, c, control, dq, enabled)
    else:
        out_tau[last], out_control[last] = servo_torque(family, p, c, kp, q, dq, target,
                                                        enabled)


@nb.njit(cache=True)
def _rollout_kernel(model, family, p, c, kp, inertia, gravity_torque, q0, dq0, goal, enabled,
                    control, dt, replay, temperature, out_q, out_dq, out_tau, out_control,
                    out_current, out_temperature, out_voltage):
    _simulate(model, family, p, c, kp, inertia, gravity_torque, q0, dq0, goal, enabled,
              control, goal.size, dt, replay, np.empty(0), out_q, out_dq, out_tau, out_control,
              temperature, out_current, out_temperature, np.empty(0), out_voltage)


@nb.njit(cache=True)
def _pair(job, model, family, consts, population, kp, load_inertia, gravity_torque, q0, dq0,
          goal, enabled, control, lengths, dt, replay, recorded, temperature, voltage, out_q,
          errors, errors_t, errors_v):
    """Pair ``job`` of :func:`_batch_kernel` (set job // logs, log job % logs).

    Compiled apart from the kernel's parallel loop: numba's parallel passes then see a
    call, not the whole loop of :func:`_simulate`, and the kernel compiles in half the
    time (benchmarks/throughput.py)."""
    n_logs = lengths.size
    empty = np.empty(0)
    i = job // n_logs
    j = job % n_logs
    p = population[i]
    rec = recorded[j] if recorded.size > 0 else empty
    temp = temperature[j] if temperature.size > 0 else empty
    volts = voltage[j] if voltage.size > 0 else empty
    out = out_q[i, j] if out_q.size > 0 else empty
    total, total_t, count_t, total_v, count_v = _simulate(
        model, family, p, consts[j], kp[j], load_inertia[j] + p[P.ARMATURE],
        gravity_torque[j], q0[j], dq0[j], goal[j], enabled[j], control[j], lengths[j], dt,
        replay, rec, out, empty, empty, empty, temp, empty, empty, volts, empty)
    errors[i, j] = total / lengths[j]
    errors_t[i, j] = total_t / count_t if count_t > 0 else np.nan
    errors_v[i, j] = total_v / count_v if count_v > 0 else np.nan


@nb.njit(cache=True, parallel=True)
def _batch_kernel(model, family, consts, population, kp, load_inertia, gravity_torque, q0, dq0,
                  goal, enabled, control, lengths, dt, replay, recorded, temperature, voltage,
                  out_q, errors, errors_t, errors_v):
    """Every (parameter set i, log j) pair; stores q in out_q[i, j] and/or scores it.

    ``errors_t`` and ``errors_v`` get the mean absolute temperature and input-voltage
    errors of each pair (NaN where nothing was scored: no thermal group or no
    recorded temperature; no voltage asked for or recorded).
    """
    for job in nb.prange(population.shape[0] * lengths.size):
        # int64, as the kernel's typing sees it (the parallel body's index is unsigned):
        # one compile of _pair, not two
        _pair(np.int64(job), model, family, consts, population, kp, load_inertia,
              gravity_torque, q0, dq0, goal, enabled, control, lengths, dt, replay, recorded,
              temperature, voltage, out_q, errors, errors_t, errors_v)


@dataclass(frozen=True)
class Rollout:
    """A simulated log: position (rad), velocity (rad/s), τ_m (N·m), control (V or A)."""

    time: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    motor_torque: np.ndarray
    control: np.ndarray
    # Through the DC-motor model: the motor current (A) and winding temperature (°C);
    # NaN where the set does not model them.
    current: np.ndarray | None = None
    temperature: np.ndarray | None = None
    # The input voltage the servo's bus would report (V; NaN off the voltage law).
    input_voltage: np.ndarray | None = None


def _control_of(log: BenchLog, replay: bool) -> np.ndarray:
    if log.control is not None:
        return log.control
    if replay:
        name = f" '{log.name}'" if log.name else ""
        raise BamError(f"log{name} has no recorded control to replay; use simulated control")
    return np.zeros(len(log))


def rollout(params: ParameterSet, log: BenchLog, replay: bool = False) -> Rollout:
    """Simulate one log with one parameter set (Algorithm 1 at the log's Δt)."""
    act = params.actuator
    p = params.vector()
    n = len(log)
    q, dq, tau, ctrl = (np.empty(n) for _ in range(4))
    current, temperature, voltage = (np.full(n, np.nan) for _ in range(3))
    q0, dq0 = log.initial_state
    consts = log.consts(act)
    inertia = log.bench.inertia(p[P.ARMATURE])
    check_step(params.model, act, p, log.dt, inertia, log.bench.gravity_torque,
               consts[C_SUPPLY])
    recorded_t = log.temperature if log.temperature is not None else np.empty(0)
    _rollout_kernel(params.model_id, act.family, p, consts, float(log.kp), inertia,
                    log.bench.gravity_torque, q0, dq0, log.goal, log.enabled,
                    _control_of(log, replay), log.dt, replay, recorded_t, q, dq, tau, ctrl,
                    current, temperature, voltage)
    return Rollout(log.time, q, dq, tau, ctrl, current, temperature, voltage)


def _population(population: np.ndarray) -> np.ndarray:
    population = np.ascontiguousarray(population, dtype=np.float64)
    if population.ndim == 1:
        population = population[None, :]
    if population.ndim != 2 or population.shape[1] != P.N_PARAMS:
        raise BamError(f"population must have shape (sets, {P.N_PARAMS}), got {population.shape}")
    if not np.all(np.isfinite(population)):
        raise BamError("population holds non-finite parameter values")
    return population


def batch_violation(model: FrictionModel, population: np.ndarray,
                    batch: LogBatch) -> np.ndarray:
    """0 for each set that may run on every log of ``batch``, else how far it is from it.

    Condition (14) and the coupling limit of the ``ep_*`` models at the batch's
    step, for the smallest inertia and the largest load of its logs (0 for M1..M6).
    """
    population = _population(population)
    inertia = batch.load_inertia.min() + population[:, P.ARMATURE]
    return violation(model, batch.actuator, population, batch.dt, inertia,
                     float(batch.gravity_torque.max()),
                     float(batch.consts[:, C_SUPPLY].max()))


def _check_batch(mdl: FrictionModel, population: np.ndarray, batch: LogBatch) -> None:
    """Raise the one-line error of the first set that may not run on the batch."""
    bad = np.flatnonzero(batch_violation(mdl, population, batch) > 0.0)
    if bad.size:
        p = population[bad[0]]
        inertia = batch.load_inertia.min() + p[P.ARMATURE]
        check_step(mdl, batch.actuator, p, batch.dt, inertia, float(batch.gravity_torque.max()),
                   float(batch.consts[:, C_SUPPLY].max()))
        # check_step agrees with violation(); should rounding ever differ, still refuse.
        raise BamError(f"{mdl.name} parameter set {bad[0]} violates condition (14) or the "
                       f"coupling limit at the step {batch.dt:g} s")


def _run_batch(mdl: FrictionModel, population: np.ndarray, batch: LogBatch, replay: bool,
               recorded: np.ndarray, out_q: np.ndarray, voltage: bool = False,
               checked: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if replay:
        for log in batch.logs:
            _control_of(log, True)
    if (mdl.elastoplastic or mdl.lugre) and not checked:
        _check_batch(mdl, population, batch)
    errors = np.zeros((population.shape[0], len(batch)))
    errors_t = np.full((population.shape[0], len(batch)), np.nan)
    errors_v = np.full((population.shape[0], len(batch)), np.nan)
    temperature = batch.temperature if batch.has_temperature else np.empty((0, 0))
    volts = (batch.input_voltage if voltage and batch.has_input_voltage
             else np.empty((0, 0)))
    if motor_lanes.eligible(mdl, batch.actuator.family, population, voltage):
        # the lanes, the motor's rows and states laid out per job from the population
        motor_lanes.motor_lanes_kernel(
            mdl.model_id, batch.actuator.family, population.shape[0], lanes.layout(population),
            population, batch.consts, batch.kp, batch.load_inertia, batch.gravity_torque,
            batch.q0, batch.dq0, batch.goal, batch.enabled, batch.control, batch.lengths,
            batch.dt, replay, recorded, temperature, out_q, errors, errors_t)
        return errors, errors_t, errors_v
    if lanes.eligible(mdl, batch.actuator.family, population, voltage):
        lanes.kernel_of(mdl, population)(
            mdl.model_id, batch.actuator.family, population.shape[0], lanes.layout(population),
            batch.consts, batch.kp, batch.load_inertia, batch.gravity_torque, batch.q0,
            batch.dq0, batch.goal, batch.enabled, batch.control, batch.lengths, batch.dt,
            replay, recorded, out_q, errors)
        return errors, errors_t, errors_v
    _batch_kernel(mdl.model_id, batch.actuator.family, batch.consts, population,
                  batch.kp, batch.load_inertia, batch.gravity_torque, batch.q0, batch.dq0,
                  batch.goal, batch.enabled, batch.control, batch.lengths, batch.dt, replay,
                  recorded, temperature, volts, out_q, errors, errors_t, errors_v)
    return errors, errors_t, errors_v


def batch_rollout(model: FrictionModel, population: np.ndarray, batch: LogBatch,
                  replay: bool = False, checked: bool = False) -> np.ndarray:
    """Positions q[set, log, entry] for every parameter set and log (padding left 0).

    ``checked``: the caller has found every set may run on the batch
    (:func:`batch_violation` 0), so it is not computed again.
    """
    population = _population(population)
    out = np.zeros((population.shape[0], len(batch), batch.goal.shape[1]))
    _run_batch(model, population, batch, replay, np.empty((0, 0)), out,
               checked=checked)
    return out


def batch_errors(model: FrictionModel, population: np.ndarray, batch: LogBatch,
                 replay: bool = False, voltage: bool = False,
                 checked: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(position MAE[set, log] in rad, temperature MAE[set, log] in K, input-voltage
    MAE[set, log] in V) in one pass.

    The temperature error is NaN for a log without a recorded temperature and
    for a set without the thermal group; the voltage error is NaN unless
    ``voltage`` is asked for and the log recorded the input voltage.
    ``checked`` as for :func:`batch_rollout`.
    """
    population = _population(population)
    missing = [i for i, log in enumerate(batch.logs) if log.position is None]
    if missing:
        raise BamError(f"log {missing[0]} has no recorded positions to compute an error against")
    return _run_batch(model, population, batch, replay, batch.position,
                      np.empty((0, 0, 0)), voltage, checked)


def batch_mae(model: FrictionModel, population: np.ndarray, batch: LogBatch,
              replay: bool = False) -> np.ndarray:
    """Mean absolute position error MAE[set, log] against the recorded positions."""
    return batch_errors(model, population, batch, replay)[0]
