"""Algorithm 1 through MuJoCo's DC-motor model with the population in SIMD lanes.

The sets that run through the DC-motor model (the dcmotor family, LuGre, and the
M1..M6 sets with the optional groups of :mod:`bam_sim.models.dcmotor.groups`;
:func:`bam_sim.models.dcmotor.motor_model.uses_motor`) take the layout of
:mod:`bam_sim.bench.lanes`: a job is one log and a block of :data:`~bam_sim.bench.lanes.BLOCK`
sets, the parameters ``lanes[block, parameter, lane]``. At the start of a job the
motor's rows of each lane (:func:`~bam_sim.models.dcmotor.motor_model.fill_motor`,
for the log's constants) and its states
(:func:`~bam_sim.models.dcmotor.motor_model.init_state`) are laid out the same way,
``rows[mode, parameter, lane]`` and ``state[slot, lane]``: one definition of both, and a
coefficient or a state of the block's lanes is one contiguous load.

One step of a block:

* the branches that are the same for every lane stay branches, outside the lane
  loops: the mode of the step (torque on, replayed, off: the log's enable flag and
  the batch's replay), the family's input (its loops compute the dcmotor's ``pos``,
  ``ff`` or ``voltage`` input; its signature, which ``fill_motor`` sets from the mode
  and the family alone, is read from lane 0), the model's joint (LuGre or M1..M6);
* the branches of one set become selects in the lane loops, each lane computing both
  sides from its own values: slew (s > 0), integral (k_i > 0) and its anti-windup
  (I_max > 0), the controller's v_max, R(T) and the thermal ODE (R_T > 0), the
  stateful current (t_e > 0) and its rate limit, the saturation clip, cogging
  (A ≠ 0) and the bristle (σ0 > 0). A block may thus hold sets with and without any
  of the optional states;
* the C library's functions stay where the scalar step calls them, one lane at a
  time in loops of their own: the Stribeck curve's and the bristle's exponentials
  (10), (11), skipped for a block without a bristle; the cogging sine (6), skipped
  for a block without cogging (a lane without one selects the scalar step's value);
  LuGre's τ_e with the C library's sine, as MuJoCo's. The factor 1 − e^{−Δt/t_c} of
  the current's update (4) depends on the set and the step only: it is computed once
  per job (by the same function, so to the same bits). These calls bound the speed:
  with every state, two exponentials and two sines per lane and step, most of a
  log-step's time (benchmarks/dcmotor_rollouts.py);
* the rest (the servo law, the controller, (2)-(4), (7), (8), (9b), the state updates
  and the joint) is arithmetic in lane loops the compiler vectorizes.

Each lane runs the operations of :func:`bam_sim.bench.pendulum.step_motor` in the same
order, through the same functions (the equations of
:func:`bam_sim.models.dcmotor.model.motor_step` as functions of scalar values, the servo
laws' scalar forms, :func:`bam_sim.bench.pendulum.lugre_update`,
:func:`bam_sim.bench.lanes.budget_joints`) and with no fused multiply-add, so positions
and errors are those of the single rollout and of the general kernel to the last bit.

The lanes take the voltage, current and dcmotor families, simulated or replayed, with
LuGre or a model of M1..M6, and score the recorded temperature of the sets with the
thermal group. A population of which only some sets use the motor model, an ``ep_*``
model with the motor groups (its joint would make this kernel's compile longer for a
rare case), and what :func:`bam_sim.bench.lanes.general_only` refuses go to the general
kernel (:func:`eligible`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.bench.lanes import (
    BLOCK,
    _job,
    _observe,
    budget_joints,
    general_only,
    latency_on,
)
from bam_sim.bench.pendulum import libm_external_torque, lugre_update
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.motor_model import (
    N_MODES,
    OFF,
    ON,
    REPLAY,
    fill_motor,
    init_state,
    torque_request,
    uses_motor,
)
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import LUGRE_ID, M1, M2, M3, M4, M5, M6, FrictionModel
from bam_sim.models.servo.actuator import (
    C_CURRENT_GAIN,
    C_DAMPING,
    C_DUTY_GAIN,
    C_FIRMWARE_CURRENT,
    C_MAX_DUTY,
    C_SUPPLY,
    CURRENT,
    DCMOTOR,
    VOLTAGE,
)
from bam_sim.models.servo.laws import _clip, current_law, duty_law, slew

# Rows of a job's scratch ``work[row, lane]``: values one lane loop hands to the next.
(U_POS, U_FF, U_VOLT, FORCE, A, Z_DOT, EXP_AH, COG, TAU_E, TAU, TAU_LUGRE, FACTOR, TC,
 DECAY) = range(14)
N_WORK = 14


def eligible(model: FrictionModel, family: int, population: np.ndarray,
             voltage: bool) -> bool:
    """Whether the motor lanes run this batch (module docstring); else the general kernel."""
    if model.model_id not in (M1, M2, M3, M4, M5, M6, LUGRE_ID):
        return False
    if family not in (VOLTAGE, CURRENT, DCMOTOR) or general_only(population, voltage):
        return False
    if latency_on(population).any():  # the delayed commands: M1..M6's lanes only
        return False
    return all(uses_motor(family, model.model_id, p) for p in population)


@nb.njit(cache=True)
def _rows_and_states(family: int, model: int, population: np.ndarray, c: np.ndarray, kp: float,
                     first: int, sets: int, replay: bool, goal: float, temperature: float,
                     dt: float, rows: np.ndarray, state: np.ndarray, work: np.ndarray) -> None:
    """The motor's rows ``rows[mode, parameter, lane]`` and states ``state[slot, lane]`` of
    a block at the start of a log (padding lanes: the last set), as the scalar rollout
    sets them for each set; the current's decay factor of each lane into ``work``."""
    one, states = np.empty((N_MODES, D.N_PARAMS)), np.empty(D.N_STATES)
    for b in range(BLOCK):
        fill_motor(family, model, population[min(first + b, sets - 1)], c, one)
        if family == DCMOTOR:
            one[ON, D.P_KP] = kp  # as motor_torque sets it at every step torque on
        init_state(one[REPLAY if replay else ON], states, goal, temperature)
        rows[:, :, b] = one
        state[:, b] = states
        work[TC, b], work[DECAY, b] = D.current_decay(one[ON, D.P_TE], dt)
        work[FACTOR, b] = 1.0  # M1, M3: never written, never read


@nb.njit(cache=True, inline=into_rollouts)
def _block_flags(rows: np.ndarray) -> tuple[bool, bool]:
    """Whether a lane of the block has a bristle (σ0 > 0), a cogging torque (A ≠ 0)."""
    lugre = cogged = False
    for b in range(BLOCK):
        lugre = lugre or rows[ON, D.P_SIGMA0, b] > 0.0
        cogged = cogged or rows[ON, D.P_COG_A, b] != 0.0
    return lugre, cogged


@nb.njit(cache=True, inline=into_rollouts)
def _inputs(mode: int, family: int, lanes: np.ndarray, c: np.ndarray, kp: float, q: np.ndarray,
            dq: np.ndarray, target: np.ndarray, control: float, work: np.ndarray) -> None:
    """The dcmotor's inputs of every lane (pos, ff, voltage; ``motor_torque``'s cases, one
    lane loop each): the law at the firmware's target, the replayed control, or none."""
    for b in range(BLOCK):
        work[U_POS, b] = work[U_FF, b] = work[U_VOLT, b] = 0.0
    if mode == REPLAY and family == CURRENT:
        for b in range(BLOCK):
            heat = lanes[P.I_HEAT, b]
            work[U_FF, b] = torque_request(lanes[P.KT, b], _clip(control, -heat, heat))
    elif mode == REPLAY:  # the recorded volts (drive/brake: the bridge passes them on)
        for b in range(BLOCK):
            work[U_VOLT, b] = control
    elif mode == ON and family == DCMOTOR:
        for b in range(BLOCK):
            work[U_POS, b] = target[b]
    elif mode == ON and family == CURRENT:
        for b in range(BLOCK):
            amps = current_law(kp * c[C_CURRENT_GAIN], lanes[P.GAIN_RATIO, b],
                               c[C_DAMPING] * np.sqrt(kp), lanes[P.I_HEAT, b], q[b], dq[b],
                               target[b])
            work[U_FF, b] = torque_request(lanes[P.KT, b], amps)
    elif mode == ON:
        duty_gain, limit, supply = kp * c[C_DUTY_GAIN], c[C_FIRMWARE_CURRENT], c[C_SUPPLY]
        for b in range(BLOCK):
            duty = duty_law(duty_gain, lanes[P.GAIN_RATIO, b], limit, supply, c[C_MAX_DUTY],
                            lanes[P.KT, b], lanes[P.R, b], q[b], dq[b], target[b])
            work[U_VOLT, b] = duty * supply


@nb.njit(cache=True, inline=into_rollouts)
def _electrical(d: np.ndarray, state: np.ndarray, q: np.ndarray, dq: np.ndarray,
                work: np.ndarray, dt: float) -> None:
    """Slew, integral, drive voltage, R(T), the thermal ODE and the current of every lane
    (``motor_step`` up to the saturation clip, selects for the per-set cases); the force
    into ``work``, the slew, integral, temperature and current states advanced."""
    spec = int(d[D.P_SPEC, 0])  # the same for every lane (module docstring)
    pos = (spec & D.INPUT_POS) != 0  # fill_motor gives pos, ff or voltage, never vel
    controller = spec != D.INPUT_NONE and (spec & D.CONTROLLER) != 0
    for b in range(BLOCK):
        rate, k, te, rt = d[D.P_SLEW, b], d[D.P_K, b], d[D.P_TE, b], d[D.P_RT, b]
        u_pos, u_ff = work[U_POS, b], work[U_FF, b]
        slewed, slew_dot = D.slew_input(rate, state[D.S_SLEW, b], u_pos if pos else u_ff, dt)
        u_pos = slewed if rate > 0.0 and pos else u_pos
        u_ff = slewed if rate > 0.0 and not pos else u_ff
        slew_dot = slew_dot if rate > 0.0 else 0.0
        integral = d[D.P_KI, b] > 0.0
        x_i = state[D.S_INTEGRAL, b] if integral else 0.0
        int_dot = D.integral_rate(x_i, u_pos, q[b], d[D.P_IMAX, b]) if integral else 0.0
        v = D.controller_voltage(controller, d[D.P_KP, b], d[D.P_KD, b], d[D.P_KI, b],
                                 d[D.P_R, b], k, d[D.P_VMAX, b], u_pos, 0.0, u_ff,
                                 work[U_VOLT, b], q[b], dq[b], x_i)
        rise, i = state[D.S_TEMPERATURE, b], state[D.S_CURRENT, b]
        r = (D.winding_resistance(d[D.P_R, b], d[D.P_ALPHA, b], rise, d[D.P_TA, b],
                                  d[D.P_T0, b]) if rt > 0.0 else d[D.P_R, b])
        i_thermal = i if te > 0.0 else D.stateless_current(v, k, dq[b], r)
        temp_dot = D.temperature_rate(r, i_thermal, rise, rt, d[D.P_C, b]) if rt > 0.0 else 0.0
        i_dot = D.current_rate(v, r, k, dq[b], i, te, d[D.P_DIMAX, b])
        current = D.current_update(i, i_dot, work[TC, b], work[DECAY, b])
        force = k * current if te > 0.0 else D.stateless_force(k, r, v, dq[b])
        limited = d[D.P_FORCELIMITED, b] != 0.0
        work[FORCE, b] = _clip(force, d[D.P_FMIN, b], d[D.P_FMAX, b]) if limited else force
        held = state[D.S_SLEW, b]
        state[D.S_SLEW, b] = held + slew_dot * dt if rate > 0.0 else held
        state[D.S_INTEGRAL, b] = (D.integral_update(x_i, int_dot, d[D.P_IMAX, b], dt)
                                  if integral else state[D.S_INTEGRAL, b])
        state[D.S_TEMPERATURE, b] = rise + temp_dot * dt if rt > 0.0 else rise
        state[D.S_CURRENT, b] = current if te > 0.0 else i


@nb.njit(cache=True, inline=into_rollouts)
def _libm(lugre: bool, cogged: bool, d: np.ndarray, state: np.ndarray, q: np.ndarray,
          dq: np.ndarray, work: np.ndarray, dt: float) -> None:
    """The C library's calls of the motor's step, one lane at a time: the bristle's a, ż
    and e^{aΔt} (9a), (10), (11) when the block has a lane with a bristle (``lugre``), the
    cogging sine (6) when it has a cogged one (``cogged``)."""
    if lugre:
        for b in range(BLOCK):
            g = D.stribeck_curve(d[D.P_FC, b], d[D.P_FS, b], d[D.P_VS, b], dq[b])
            a, work[Z_DOT, b] = D.bristle_rate(d[D.P_SIGMA0, b], g, state[D.S_BRISTLE, b], dq[b])
            work[A, b] = a
        for b in range(BLOCK):
            work[EXP_AH, b] = D.bristle_exp(work[A, b], dt)
    if cogged:
        for b in range(BLOCK):
            work[COG, b] = D.cogging(d[D.P_COG_A, b], d[D.P_COG_N, b], d[D.P_COG_PHASE, b], q[b])


@nb.njit(cache=True, inline=into_rollouts)
def _torques(mode: int, d: np.ndarray, state: np.ndarray, dq: np.ndarray, work: np.ndarray,
             dt: float) -> None:
    """Cogging and LuGre's (9b) added after the clip, the bristle advanced (11), the current
    dropped with the torque off: τ_m of every lane into ``work[TAU]``, the LuGre friction
    (``motor_torque``'s second value) into ``work[TAU_LUGRE]``."""
    for b in range(BLOCK):
        force = work[FORCE, b]
        force = force + work[COG, b] if d[D.P_COG_A, b] != 0.0 else force
        bristle = d[D.P_SIGMA0, b] > 0.0
        z = state[D.S_BRISTLE, b]
        lugre = d[D.P_SIGMA0, b] * z + d[D.P_SIGMA1, b] * work[Z_DOT, b] if bristle else 0.0
        force = force - lugre if bristle else force
        state[D.S_BRISTLE, b] = (D.bristle_update(work[A, b], work[EXP_AH, b], z, dq[b], dt)
                                 if bristle else z)
        work[TAU_LUGRE, b] = -lugre
        work[TAU, b] = force - work[TAU_LUGRE, b]
    if mode == OFF:  # the released bridge: the current dies out
        for b in range(BLOCK):
            state[D.S_CURRENT, b] = 0.0


@nb.njit(cache=True, inline=into_rollouts)
def _advance(model: int, family: int, mode: int, lanes: np.ndarray, rows: np.ndarray,
             c: np.ndarray, kp: float, load_inertia: float, gravity_torque: float,
             q: np.ndarray, dq: np.ndarray, target: np.ndarray, state: np.ndarray,
             work: np.ndarray, lugre: bool, cogged: bool, goal: float, control: float,
             dt: float) -> None:
    """One step of :func:`bam_sim.bench.pendulum.step_motor` for every lane of a block."""
    for b in range(BLOCK):
        target[b] = slew(lanes[P.TARGET_RATE, b], target[b], goal, dt)
    d = rows[mode]
    _inputs(mode, family, lanes, c, kp, q, dq, target, control, work)
    _electrical(d, state, q, dq, work, dt)
    _libm(lugre, cogged, d, state, q, dq, work, dt)
    _torques(mode, d, state, dq, work, dt)
    if model == LUGRE_ID:  # MuJoCo's Euler joint under τ_m and LuGre's friction
        for b in range(BLOCK):  # the C library's sine, as MuJoCo's
            work[TAU_E, b] = libm_external_torque(gravity_torque, q[b], lanes[P.Q_OFFSET, b])
        for b in range(BLOCK):
            q[b], dq[b] = lugre_update(lanes[P.LG_S2, b], load_inertia + lanes[P.ARMATURE, b],
                                       q[b], dq[b], work[TAU, b] + work[TAU_LUGRE, b],
                                       work[TAU_E, b], dt)
    else:
        budget_joints(model, lanes, load_inertia, gravity_torque, q, dq, work[TAU],
                      work[FACTOR], dt)


@nb.njit(cache=True, inline=into_rollouts)
def _score_temperature(k: int, recorded: np.ndarray, rows: np.ndarray, state: np.ndarray,
                       total: np.ndarray) -> int:
    """Entry k of a log's recorded temperature (NaN: missing): |T_sim − T_recorded| of each
    lane summed into ``total``; 1 where it was scored, else 0."""
    if recorded.size == 0 or recorded[k] != recorded[k]:
        return 0
    for b in range(BLOCK):
        total[b] += abs(rows[ON, D.P_TA, b] + state[D.S_TEMPERATURE, b] - recorded[k])
    return 1


@nb.njit(cache=True, error_model="numpy")
def _rollout(model, family, job, sets, lanes, population, consts, kp, load_inertia,
             gravity_torque, q0, dq0, goal, enabled, control, lengths, dt, replay, recorded,
             temperature, out_q, errors, errors_t):
    """Job ``job`` of :func:`motor_lanes_kernel` (one log, one block).

    Compiled apart from the kernel's parallel loop: numba's parallel passes then see a
    call, not the whole inlined step, and the kernel compiles in a fraction of the time,
    as fast. NumPy's error model: a select computes both sides, and the side of a lane
    whose state is off may divide by zero (t_e = 0 in (4), say); its inf or NaN is
    dropped by the select, where Python's model would raise (and the loops would not
    vectorize). The parallel loop's body has NumPy's model too."""
    n_logs = lengths.size
    j, block, first, width, n = _job(job, n_logs, sets, lengths)
    temp = temperature[j] if temperature.size > 0 else np.empty(0)
    rows, state = np.empty((N_MODES, D.N_PARAMS, BLOCK)), np.empty((D.N_STATES, BLOCK))
    work = np.zeros((N_WORK, BLOCK))
    _rows_and_states(family, model, population, consts[j], kp[j], first, sets, replay,
                     goal[j, 0], temp[0] if temp.size > 0 else np.nan, dt, rows, state,
                     work)
    lugre, cogged = _block_flags(rows)
    q, dq, target = np.full(BLOCK, q0[j]), np.full(BLOCK, dq0[j]), np.full(BLOCK, goal[j, 0])
    total, total_t, count_t = np.zeros(BLOCK), np.zeros(BLOCK), 0
    for k in range(n):
        _observe(q, k, j, first, width, recorded, out_q, total)
        count_t += _score_temperature(k, temp, rows, state, total_t)
        if k == n - 1:
            break
        mode = OFF if not enabled[j, k] else (REPLAY if replay else ON)
        _advance(model, family, mode, lanes[block], rows, consts[j], kp[j], load_inertia[j],
                 gravity_torque[j], q, dq, target, state, work, lugre, cogged, goal[j, k],
                 control[j, k], dt)
    for b in range(width):
        errors[first + b, j] = total[b] / n
        if rows[ON, D.P_RT, b] > 0.0 and count_t > 0:  # else NaN, as the general kernel
            errors_t[first + b, j] = total_t[b] / count_t


@nb.njit(cache=True, parallel=True)
def motor_lanes_kernel(model, family, sets, lanes, population, consts, kp, load_inertia,
                       gravity_torque, q0, dq0, goal, enabled, control, lengths, dt, replay,
                       recorded, temperature, out_q, errors, errors_t):
    """The sets of ``population`` (laid out in ``lanes[block, parameter, lane]``) through the
    DC-motor model on every log: q in out_q[set, log] and/or the MAE against ``recorded``
    in errors[set, log], the temperature's (``temperature``: the logs' recorded one, or
    empty) in errors_t[set, log] where the set has the thermal group and the log a
    recorded temperature (left as it is elsewhere): the general kernel's outputs."""
    for job in nb.prange(lengths.size * lanes.shape[0]):
        # int64, as the kernel's typing sees it (the parallel body's index is unsigned):
        # one compile of _rollout, not two
        _rollout(model, family, np.int64(job), sets, lanes, population, consts, kp,
                 load_inertia, gravity_torque, q0, dq0, goal, enabled, control, lengths, dt,
                 replay, recorded, temperature, out_q, errors, errors_t)
