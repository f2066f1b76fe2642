"""Algorithm 1 with the population in SIMD lanes: batched rollouts of the M1..M6 and
``ep_*`` sets.

The batched kernel of :mod:`bam_sim.bench.rollouts` runs one (set, log) pair at
a time, one scalar lane of the vector unit. Here a job is one log and a block
of up to :data:`BLOCK` sets, and each step advances every set of the block in
one loop over its lanes:

* structure-of-arrays in blocks: the population is held as
  ``lanes[block, parameter, lane]`` (:func:`layout`; the last block padded
  with copies of the last set, whose results are dropped), so that a
  coefficient of the block's lanes is one contiguous load and every lane loop
  has the same, constant trip count; the states q, q̇ and the STS firmware's
  target are one array per block;
* branch-free: the clips of the servo law, of the friction (5) and of the
  velocity are ternaries the compiler turns into min/max and selects;
* the branches that are the same for every lane stay branches: the servo
  law's cases (torque off, replayed control, voltage law with and without the
  firmware's current window, current law) each have a lane loop of their own,
  since within one loop the vectorizer computes every case and selects. So does
  the Stribeck factor, skipped for M1 and M3 (the models without one). The
  rest of the budget and the joint share one loop for M1..M6: the terms a model
  does not have are a few multiplications. (A loop per model pair, or a copy of
  the whole step per model, compiled far longer for a few per cent: benchmarks/simd_lanes.py.)
* the sine of τ_e and the Stribeck factor's power and exponential are the
  polynomials of :mod:`bam_sim.models.vector_math`, not C-library calls.

The elasto-plastic models (Cisneros et al., Algorithm 1) take the same servo-law
loops, then τ_e with the C library's sine one lane at a time (their references,
``simulate_joint`` and MuJoCo, use it, so the lanes keep their bits), then a loop
per Φ_Z form: the Coulomb-viscous (20) and rational (43)-(48) forms are one
expression per case, selected; the Stribeck form's table path (27) is computed for
every lane, and the lanes near the sliding threshold, where a step of a stick-slip
transition takes the careful path of (27)-(30), are redone one at a time.

Each lane runs the operations of :func:`bam_sim.bench.pendulum.step` (or ``step_ep``)
in the same order, through the same functions
(:func:`bam_sim.models.bam.friction.stribeck_budget`, the servo laws' scalar forms,
:func:`bam_sim.bench.pendulum.budget_update`, the elasto-plastic model's stages),
and with no fused multiply-add but the elasto-plastic model's explicit ones, so its
positions and errors are those of the
single rollout and of the general kernel to the last bit, whatever the block,
the vector width or the number of threads.

With the latency group (:mod:`bam_sim.bench.latency`), each lane acts on its own
delayed command: goal and control per lane, and an enable that may differ between
lanes around a switch, when the lanes' torque is computed on and then set to 0 where
a lane's is off (a select). That takes a kernel of its own, :func:`delayed_lanes_kernel`:
in the one kernel the test for it slowed the sets without latency (benchmarks/simd_lanes.py).

The lanes take a friction model of M1..M6 or ``ep_*`` on the voltage or current
law, with the STS firmware's ratio and slew and the XL330's current window, and
M1..M6 with latency. The populations that run through the DC-motor model (the
dcmotor family, LuGre, the sets with the DC-motor model's groups) take the lanes of
:mod:`bam_sim.bench.motor_lanes`, which reuse this module's layout, jobs and joint.
A population with supply sag or the drive/coast bridge, with latency and an ``ep_*``
model or the DC-motor model, one of which only some sets use the DC-motor model, an
``ep_*`` population with the DC-motor model's groups, and an input-voltage score go to
the general kernel (:func:`eligible`, :func:`general_only`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.bench.latency import delay_ticks, delayed_command
from bam_sim.bench.pendulum import (
    budget_update,
    ep_joint_update,
    external_torque,
    libm_external_torque,
)
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import lane_coefficients, stribeck, stribeck_budget
from bam_sim.models.dcmotor.motor_model import uses_motor
from bam_sim.models.elastoplastic.model import (
    EP_CV,
    EP_LOAD,
    EP_RATIONAL,
    EP_STRIBECK,
    compliance,
    deflection,
    ep_lane_coefficients,
    ep_step_of,
    hypothetical_velocity,
    levels,
    phi_z_stribeck_near,
    stribeck_near,
    stribeck_sliding,
)
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import EP_FIRST, M1, M2, M3, M4, M5, M6, FrictionModel
from bam_sim.models.servo.actuator import (
    C_CURRENT_GAIN,
    C_DAMPING,
    C_DUTY_GAIN,
    C_FIRMWARE_CURRENT,
    C_MAX_DUTY,
    C_MAX_VOLTAGE,
    C_SUPPLY,
    CURRENT,
    VOLTAGE,
)
from bam_sim.models.servo.laws import (
    current_law,
    current_torque,
    duty_law,
    slew,
    voltage_torque,
)

BLOCK = 16  # sets per job: two AVX-512 or four AVX2 registers of float64 per state
# The torque enable of a step over a block's lanes: the same for every lane unless their
# latencies differ around a switch (:func:`_commands`).
ALL_OFF, ALL_ON, MIXED = 0, 1, 2


def layout(population: np.ndarray) -> np.ndarray:
    """``lanes[block, parameter, lane]`` of a population ``[set, parameter]`` (module
    docstring): one copy of the parameters, O(sets × parameters), per batch."""
    sets = population.shape[0]
    blocks = (sets + BLOCK - 1) // BLOCK
    padded = np.concatenate([population, np.repeat(population[-1:], blocks * BLOCK - sets, 0)])
    return np.ascontiguousarray(padded.reshape(blocks, BLOCK, -1).transpose(0, 2, 1))


def latency_on(population: np.ndarray) -> np.ndarray:
    """Whether each set of ``population`` has the latency group on."""
    return population[:, P.LATENCY_COMMAND] + population[:, P.LATENCY_READING] > 0.0


def eligible(model: FrictionModel, family: int, population: np.ndarray,
             voltage: bool) -> bool:
    """Whether the lanes run this batch (module docstring); else the general kernel."""
    bam = model.model_id in (M1, M2, M3, M4, M5, M6)
    if not (bam or model.elastoplastic) or family not in (VOLTAGE, CURRENT):
        return False
    if general_only(population, voltage):
        return False
    if model.elastoplastic and latency_on(population).any():
        return False
    return not any(uses_motor(family, model.model_id, p) for p in population)


def general_only(population: np.ndarray, voltage: bool) -> bool:
    """Whether a batch must run the general kernel whatever its model: no set (nothing to
    lay out in blocks), an input-voltage score, or a set with supply sag, the
    drive/coast bridge or backlash (steps the lanes do not take)."""
    if voltage or population.shape[0] == 0:
        return True
    return bool((population[:, P.SUPPLY_R] > 0.0).any()
                or (population[:, P.HB_PERIOD] > 0.0).any()
                or (population[:, P.BACKLASH] > 0.0).any())


@nb.njit(cache=True, inline=into_rollouts)
def _voltage_law(lanes: np.ndarray, law: tuple, limit: float, q: np.ndarray, dq: np.ndarray,
                 target: np.ndarray, tau: np.ndarray) -> None:
    """τ_m of every lane under the voltage law (12, 13), the firmware's current window
    ``limit`` passed apart so that a literal 0 folds it away."""
    duty_gain, _, supply, max_duty, _, _, _ = law
    for b in range(BLOCK):
        kt, resistance = lanes[P.KT, b], lanes[P.R, b]
        duty = duty_law(duty_gain, lanes[P.GAIN_RATIO, b], limit, supply, max_duty, kt,
                        resistance, q[b], dq[b], target[b])
        tau[b] = voltage_torque(kt, resistance, duty * supply, dq[b])


@nb.njit(cache=True, inline=into_rollouts)
def _motor_torques(family: int, replay: bool, lanes: np.ndarray, law: tuple, q: np.ndarray,
                   dq: np.ndarray, target: np.ndarray, command: tuple, tau: np.ndarray) -> None:
    """τ_m of every lane into ``tau``: the servo law at the firmware's target, or the
    replayed control; 0 with the torque off. ``command``: :func:`_advance`'s; with the
    enable :data:`MIXED`, a lane's torque is 0 where its own is off, as
    :func:`bam_sim.models.servo.laws.servo_torque` gives.

    ``law``: the log's (kp·k_duty, I_max of the firmware, V_s, duty_max, U_max, d·√kp,
    kp·k_I), read once per step rather than in the lanes (a load under a lane's condition
    becomes a masked gather). The branches here are the same for every lane, so each
    case has a lane loop of its own: inside one loop the vectorizer would compute every
    case and select."""
    _, limit, _, _, max_voltage, damping, current_gain = law
    delayed, _, on, control, _, lane_enabled, lane_control = command
    if on == ALL_OFF:
        for b in range(BLOCK):
            tau[b] = 0.0
        return
    if replay and family == VOLTAGE:
        for b in range(BLOCK):
            tau[b] = voltage_torque(lanes[P.KT, b], lanes[P.R, b],
                                    _lane(delayed, lane_control, control, b), dq[b])
    elif replay:
        for b in range(BLOCK):
            tau[b] = current_torque(lanes[P.KT, b], lanes[P.R, b], max_voltage,
                                    lanes[P.I_HEAT, b],
                                    _lane(delayed, lane_control, control, b), dq[b])
    elif family == VOLTAGE and limit > 0.0:
        _voltage_law(lanes, law, limit, q, dq, target, tau)
    elif family == VOLTAGE:
        _voltage_law(lanes, law, 0.0, q, dq, target, tau)
    else:
        for b in range(BLOCK):
            amps = current_law(current_gain, lanes[P.GAIN_RATIO, b], damping,
                               lanes[P.I_HEAT, b], q[b], dq[b], target[b])
            tau[b] = current_torque(lanes[P.KT, b], lanes[P.R, b], max_voltage,
                                    lanes[P.I_HEAT, b], amps, dq[b])
    if on == MIXED:
        for b in range(BLOCK):
            tau[b] = tau[b] if lane_enabled[b] else 0.0


@nb.njit(cache=True, inline=into_rollouts)
def _advance(model: int, family: int, replay: bool, lanes: np.ndarray, c: np.ndarray,
             kp: float, load_inertia: float, gravity_torque: float, q: np.ndarray,
             dq: np.ndarray, target: np.ndarray, tau: np.ndarray, factor: np.ndarray,
             command: tuple, dt: float) -> None:
    """One step of Algorithm 1 for every lane of a block, ``lanes[parameter, lane]``;
    ``tau`` and ``factor`` hold the lanes' τ_m and Stribeck factor between the loops;
    ``command``: (delayed, the log's goal, the enable over the lanes, the log's control,
    the lanes' goal, enable and control) of :func:`_commands`."""
    delayed, goal, lane_goal = command[0], command[1], command[4]
    law = (kp * c[C_DUTY_GAIN], c[C_FIRMWARE_CURRENT], c[C_SUPPLY], c[C_MAX_DUTY],
           c[C_MAX_VOLTAGE], c[C_DAMPING] * np.sqrt(kp), kp * c[C_CURRENT_GAIN])
    for b in range(BLOCK):
        target[b] = slew(lanes[P.TARGET_RATE, b], target[b],
                         _lane(delayed, lane_goal, goal, b), dt)
    _motor_torques(family, replay, lanes, law, q, dq, target, command, tau)
    budget_joints(model, lanes, load_inertia, gravity_torque, q, dq, tau, factor, dt)


@nb.njit(cache=True, inline=into_rollouts)
def budget_joints(model: int, lanes: np.ndarray, load_inertia: float, gravity_torque: float,
                  q: np.ndarray, dq: np.ndarray, tau: np.ndarray, factor: np.ndarray,
                  dt: float) -> None:
    """Lines (4)-(5), (1) and the integration of Algorithm 1 (M1..M6) for every lane, given
    the lanes' τ_m in ``tau``; the Stribeck factor (in ``factor``) skipped for M1 and M3."""
    if model != M1 and model != M3:
        for b in range(BLOCK):
            factor[b] = stribeck(lane_coefficients(lanes, b), dq[b])
    for b in range(BLOCK):
        tau_e = external_torque(gravity_torque, q[b], lanes[P.Q_OFFSET, b])
        limit = stribeck_budget(model, lane_coefficients(lanes, b), tau[b], tau_e, dq[b],
                                factor[b])
        q[b], dq[b] = budget_update(load_inertia + lanes[P.ARMATURE, b], q[b], dq[b], tau[b],
                                    tau_e, limit, dt)


@nb.njit(cache=True, inline=into_rollouts)
def _advance_ep(model: int, family: int, replay: bool, lanes: np.ndarray, c: np.ndarray,
                kp: float, load_inertia: float, gravity_torque: float, q: np.ndarray,
                dq: np.ndarray, e: np.ndarray, target: np.ndarray, tau: np.ndarray,
                tau_e: np.ndarray, f: np.ndarray, near: np.ndarray, command: tuple,
                dt: float) -> None:
    """One step of an ``ep_*`` model for every lane: the servo law's loops as in
    :func:`_advance`, τ_e with the C library's sine one lane at a time (the
    elasto-plastic references use it, so the lanes keep their bits), then the friction
    element (Algorithm 1 of Cisneros et al.) and the joint in a loop per form."""
    delayed, goal, lane_goal = command[0], command[1], command[4]
    law = (kp * c[C_DUTY_GAIN], c[C_FIRMWARE_CURRENT], c[C_SUPPLY], c[C_MAX_DUTY],
           c[C_MAX_VOLTAGE], c[C_DAMPING] * np.sqrt(kp), kp * c[C_CURRENT_GAIN])
    for b in range(BLOCK):
        target[b] = slew(lanes[P.TARGET_RATE, b], target[b],
                         _lane(delayed, lane_goal, goal, b), dt)
    _motor_torques(family, replay, lanes, law, q, dq, target, command, tau)
    for b in range(BLOCK):
        tau_e[b] = libm_external_torque(gravity_torque, q[b], lanes[P.Q_OFFSET, b])
    form = model - EP_FIRST
    if form == EP_CV:
        _ep_closed_form(EP_CV, lanes, load_inertia, q, dq, e, tau, tau_e, dt)
    elif form == EP_RATIONAL:
        _ep_closed_form(EP_RATIONAL, lanes, load_inertia, q, dq, e, tau, tau_e, dt)
    elif form == EP_STRIBECK:
        _ep_stribeck(EP_STRIBECK, lanes, load_inertia, q, dq, e, tau, tau_e, f, near, dt)
    else:
        _ep_stribeck(EP_LOAD, lanes, load_inertia, q, dq, e, tau, tau_e, f, near, dt)


@nb.njit(cache=True, inline=into_rollouts)
def _ep_closed_form(form: int, lanes: np.ndarray, load_inertia: float, q: np.ndarray,
                    dq: np.ndarray, e: np.ndarray, tau: np.ndarray, tau_e: np.ndarray,
                    dt: float) -> None:
    """(13), (17), (18) and the joint for a Φ_Z of one expression per case (the
    Coulomb-viscous (20), the rational (43)-(48)): selects in one lane loop."""
    for b in range(BLOCK):
        f, e[b] = ep_step_of(form, ep_lane_coefficients(lanes, b), dt, dq[b], e[b], tau[b],
                             tau_e[b])
        q[b], dq[b] = ep_joint_update(load_inertia + lanes[P.ARMATURE, b], q[b], dq[b],
                                      tau[b], tau_e[b], f, dt)


@nb.njit(cache=True, inline=into_rollouts)
def _ep_stribeck(form: int, lanes: np.ndarray, load_inertia: float, q: np.ndarray,
                 dq: np.ndarray, e: np.ndarray, tau: np.ndarray, tau_e: np.ndarray,
                 f: np.ndarray, near: np.ndarray, dt: float) -> None:
    """(13), (17), (18) and the joint for the Stribeck Φ_Z (24)-(30): sticking and the
    table path in a vector loop over the lanes, the lanes near the threshold (a few
    steps of a stick-slip transition) redone one by one on their own path."""
    for b in range(BLOCK):
        k = ep_lane_coefficients(lanes, b)
        Z = compliance(k.K, k.B, dt)
        F_S, F_C = levels(form, k, tau[b], tau_e[b])
        x = hypothetical_velocity(dq[b], e[b], Z, k.K)
        stick = abs(x) <= Z * F_S
        sliding = stribeck_sliding(x, Z, F_S, F_C, k.vs, k.kv)
        f[b] = x / Z if stick else sliding
        near[b] = not stick and stribeck_near(abs(x), Z, F_S, F_C, k.vs, k.kv)
    for b in range(BLOCK):
        if near[b]:
            k = ep_lane_coefficients(lanes, b)
            Z = compliance(k.K, k.B, dt)
            F_S, F_C = levels(form, k, tau[b], tau_e[b])
            x = hypothetical_velocity(dq[b], e[b], Z, k.K)
            f[b] = phi_z_stribeck_near(x, Z, F_S, F_C, k.vs, k.kv)
    for b in range(BLOCK):
        k = ep_lane_coefficients(lanes, b)
        e[b] = deflection(compliance(k.K, k.B, dt), k.B, e[b], f[b], dt)
        q[b], dq[b] = ep_joint_update(load_inertia + lanes[P.ARMATURE, b], q[b], dq[b],
                                      tau[b], tau_e[b], f[b], dt)


@nb.njit(cache=True, inline=into_rollouts)
def _job(job: int, n_logs: int, sets: int, lengths: np.ndarray) -> tuple:
    """(log, block, its first set, its sets, the log's length) of job ``job``."""
    j = job % n_logs
    block = job // n_logs
    first = block * BLOCK
    return j, block, first, min(BLOCK, sets - first), lengths[j]


@nb.njit(cache=True, inline=into_rollouts)
def _delays(lanes: np.ndarray, dt: float, delay: np.ndarray) -> bool:
    """Each lane's command delay in ticks into ``delay``; whether any lane has one."""
    for b in range(BLOCK):
        delay[b] = delay_ticks(lanes[P.LATENCY_COMMAND, b], lanes[P.LATENCY_READING, b], dt)
    return delay.max() > 0.0


@nb.njit(cache=True, inline=into_rollouts)
def _commands(goal: np.ndarray, enabled: np.ndarray, control: np.ndarray, k: int,
              scratch: tuple) -> tuple:
    """The command of step k of a log (``goal``, ``enabled``, ``control``) as
    :func:`_advance` takes it: (delayed, the log's goal, the enable over the lanes
    (:data:`ALL_ON`, :data:`ALL_OFF` or :data:`MIXED`), the log's control, the lanes' goal,
    enable and control). ``scratch``: the job's arrays (:func:`_commands_of`). Delayed
    (the latency group), each lane's own command
    (:func:`bam_sim.bench.latency.delayed_command`) goes into them; else step k's is
    every lane's, and they are left as they are (:func:`_lane` reads the log's)."""
    delayed, delay, lane_goal, lane_enabled, lane_control = scratch
    if not delayed:
        on = ALL_ON if enabled[k] else ALL_OFF
    else:
        count = 0
        for b in range(BLOCK):
            lane_goal[b], lane_enabled[b], lane_control[b] = delayed_command(
                goal, enabled, control, k, delay[b])
            count += lane_enabled[b]
        on = ALL_ON if count == BLOCK else (ALL_OFF if count == 0 else MIXED)
    return delayed, goal[k], on, control[k], lane_goal, lane_enabled, lane_control


@nb.njit(cache=True, inline=into_rollouts)
def _lane(delayed: bool, lane_values: np.ndarray, value: float, b: int) -> float:
    """Lane b's goal or control: its own with the latency group, else the log's. In a
    lane loop ``delayed`` is the same every turn: the compiler takes the test out of the
    loop, and the loop without latency reads a scalar, as it did before the group."""
    return lane_values[b] if delayed else value


@nb.njit(cache=True, inline=into_rollouts)
def _observe(q: np.ndarray, k: int, j: int, first: int, width: int, recorded: np.ndarray,
             out_q: np.ndarray, total: np.ndarray) -> None:
    """Entry k of log j: |q − q_recorded| summed into ``total``, q stored into ``out_q``
    (each where its array is not empty)."""
    if recorded.size > 0:
        for b in range(BLOCK):
            total[b] += abs(q[b] - recorded[j, k])
    if out_q.size > 0:
        for b in range(width):
            out_q[first + b, j, k] = q[b]


@nb.njit(cache=True, inline=into_rollouts)
def _commands_of(latency: bool, lanes: np.ndarray, dt: float) -> tuple:
    """A job's (delayed, delay, goal, enable, control) arrays for :func:`_commands`:
    ``latency`` is the kernel's (a literal), ``delayed`` whether a lane of the block has
    a delay."""
    delay, lane_goal, lane_control = np.zeros(BLOCK), np.empty(BLOCK), np.empty(BLOCK)
    lane_enabled = np.ones(BLOCK, dtype=np.bool_)
    delayed = latency and _delays(lanes, dt, delay)
    return delayed, delay, lane_goal, lane_enabled, lane_control


@nb.njit(cache=True, inline=into_rollouts)
def _bam_job(latency, job, model, family, sets, lanes, consts, kp, load_inertia, gravity_torque,
             q0, dq0, goal, enabled, control, lengths, dt, replay, recorded, out_q, errors):
    """Job ``job`` of :func:`lanes_kernel` (``latency`` False) or
    :func:`delayed_lanes_kernel` (True)."""
    j, block, first, width, n = _job(job, lengths.size, sets, lengths)
    q, dq, target = np.full(BLOCK, q0[j]), np.full(BLOCK, dq0[j]), np.full(BLOCK, goal[j, 0])
    total, tau = np.zeros(BLOCK), np.empty(BLOCK)
    factor = np.ones(BLOCK)  # M1, M3: never written, never read
    scratch = _commands_of(latency, lanes[block], dt)
    for k in range(n):
        _observe(q, k, j, first, width, recorded, out_q, total)
        if k == n - 1:
            break
        _advance(model, family, replay, lanes[block], consts[j], kp[j], load_inertia[j],
                 gravity_torque[j], q, dq, target, tau, factor,
                 _commands(goal[j], enabled[j], control[j], k, scratch), dt)
    errors[first:first + width, j] = total[:width] / n


@nb.njit(cache=True, parallel=True)
def lanes_kernel(model, family, sets, lanes, consts, kp, load_inertia, gravity_torque, q0, dq0,
                 goal, enabled, control, lengths, dt, replay, recorded, out_q, errors):
    """M1..M6: the first ``sets`` lanes of ``lanes[block, parameter, lane]`` on every log:
    q in out_q[set, log] and/or the MAE against ``recorded`` in errors[set, log] (the
    general kernel's outputs)."""
    for job in nb.prange(lengths.size * lanes.shape[0]):
        _bam_job(False, job, model, family, sets, lanes, consts, kp, load_inertia,
                 gravity_torque, q0, dq0, goal, enabled, control, lengths, dt, replay,
                 recorded, out_q, errors)


@nb.njit(cache=True, parallel=True)
def delayed_lanes_kernel(model, family, sets, lanes, consts, kp, load_inertia, gravity_torque,
                         q0, dq0, goal, enabled, control, lengths, dt, replay, recorded, out_q,
                         errors):
    """:func:`lanes_kernel` for a population with the latency group: each lane acts on its
    own delayed command (a kernel of its own: without latency, the lanes read the log's
    command as a scalar and keep their speed)."""
    for job in nb.prange(lengths.size * lanes.shape[0]):
        _bam_job(True, job, model, family, sets, lanes, consts, kp, load_inertia,
                 gravity_torque, q0, dq0, goal, enabled, control, lengths, dt, replay,
                 recorded, out_q, errors)


@nb.njit(cache=True, parallel=True)
def ep_lanes_kernel(model, family, sets, lanes, consts, kp, load_inertia, gravity_torque, q0,
                    dq0, goal, enabled, control, lengths, dt, replay, recorded, out_q, errors):
    """:func:`lanes_kernel` for the ``ep_*`` models, the deflection e a state of each lane
    (a kernel of its own: M1..M6 do not wait for it to compile)."""
    n_logs = lengths.size
    for job in nb.prange(n_logs * lanes.shape[0]):
        j, block, first, width, n = _job(job, n_logs, sets, lengths)
        q, dq, target = np.full(BLOCK, q0[j]), np.full(BLOCK, dq0[j]), np.full(BLOCK, goal[j, 0])
        total, tau, tau_e, f = np.zeros(BLOCK), np.empty(BLOCK), np.empty(BLOCK), np.empty(BLOCK)
        e = np.zeros(BLOCK)  # Algorithm 1 line 1: no deflection at the start
        near = np.zeros(BLOCK, dtype=np.bool_)
        scratch = _commands_of(False, lanes[block], dt)
        for k in range(n):
            _observe(q, k, j, first, width, recorded, out_q, total)
            if k == n - 1:
                break
            _advance_ep(model, family, replay, lanes[block], consts[j], kp[j], load_inertia[j],
                        gravity_torque[j], q, dq, e, target, tau, tau_e, f, near,
                        _commands(goal[j], enabled[j], control[j], k, scratch), dt)
        errors[first:first + width, j] = total[:width] / n


def kernel_of(model: FrictionModel, population: np.ndarray):
    """The lanes' kernel for ``model`` and ``population`` (``eligible`` must hold); it
    fills ``out_q`` and ``errors`` as the general kernel does."""
    if model.elastoplastic:
        return ep_lanes_kernel
    return delayed_lanes_kernel if latency_on(population).any() else lanes_kernel
