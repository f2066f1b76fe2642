"""Algorithm 1 with the population in SIMD lanes: batched rollouts of the M1..M6 sets.

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
  does not have are a few multiplications. (A loop per model pair compiled
  30 s longer for a few per cent; a copy of the whole step per model, two
  minutes longer.)
* the sine of τ_e and the Stribeck factor's power and exponential are the
  polynomials of :mod:`bam_sim.models.vector_math`, not C-library calls.

Each lane runs the operations of :func:`bam_sim.bench.pendulum.step` in the same
order, through the same functions (:func:`bam_sim.models.bam.friction.stribeck_budget`,
the servo laws' scalar forms, :func:`bam_sim.bench.pendulum.budget_update`),
and without fused multiply-adds, so its positions and errors are those of the
single rollout and of the general kernel to the last bit, whatever the block,
the vector width or the number of threads.

The lanes take the sets the paper's algorithm covers: a friction model of
M1..M6 on the voltage or current law, with the STS firmware's ratio and slew
and the XL330's current window. A population with any optional group that
changes the step (the DC-motor model's, latency, supply sag, drive/coast
bridge) or an input-voltage score goes to the general kernel
(:func:`eligible`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.bench.pendulum import budget_update, external_torque
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import lane_coefficients, stribeck, stribeck_budget
from bam_sim.models.dcmotor.motor_model import uses_motor
from bam_sim.models.model_registry import M1, M2, M3, M4, M5, M6, FrictionModel
from bam_sim.models.servo.actuators import (
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


def layout(population: np.ndarray) -> np.ndarray:
    """``lanes[block, parameter, lane]`` of a population ``[set, parameter]`` (module
    docstring): one copy of the parameters, O(sets × parameters), per batch."""
    sets = population.shape[0]
    blocks = (sets + BLOCK - 1) // BLOCK
    padded = np.concatenate([population, np.repeat(population[-1:], blocks * BLOCK - sets, 0)])
    return np.ascontiguousarray(padded.reshape(blocks, BLOCK, -1).transpose(0, 2, 1))


def eligible(model: FrictionModel, family: int, population: np.ndarray,
             voltage: bool) -> bool:
    """Whether the lanes run this batch (module docstring); else the general kernel."""
    if model.model_id not in (M1, M2, M3, M4, M5, M6) or family not in (VOLTAGE, CURRENT):
        return False
    if voltage or population.shape[0] == 0:  # no set: nothing to lay out in blocks
        return False
    latency = population[:, P.LATENCY_COMMAND] + population[:, P.LATENCY_READING]
    if (latency > 0.0).any() or (population[:, P.SUPPLY_R] > 0.0).any():
        return False
    if (population[:, P.HB_PERIOD] > 0.0).any():
        return False
    return not any(uses_motor(family, model.model_id, p) for p in population)


@nb.njit(cache=True, inline="always")
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


@nb.njit(cache=True, inline="always")
def _motor_torques(family: int, replay: bool, lanes: np.ndarray, law: tuple, q: np.ndarray,
                   dq: np.ndarray, target: np.ndarray, on: bool, control: float,
                   tau: np.ndarray) -> None:
    """τ_m of every lane into ``tau``: the servo law at the firmware's target, or the
    replayed control; 0 with the torque off.

    ``law``: the log's (kp·k_duty, I_max of the firmware, V_s, duty_max, U_max, damping,
    kp), read once per step rather than in the lanes (a load under a lane's condition
    becomes a masked gather). The branches here are the same for every lane, so each
    case has a lane loop of its own: inside one loop the vectorizer would compute every
    case and select."""
    _, limit, _, _, max_voltage, damping, kp = law
    if not on:
        for b in range(BLOCK):
            tau[b] = 0.0
    elif replay and family == VOLTAGE:
        for b in range(BLOCK):
            tau[b] = voltage_torque(lanes[P.KT, b], lanes[P.R, b], control, dq[b])
    elif replay:
        for b in range(BLOCK):
            tau[b] = current_torque(lanes[P.KT, b], lanes[P.R, b], max_voltage,
                                    lanes[P.I_HEAT, b], control, dq[b])
    elif family == VOLTAGE and limit > 0.0:
        _voltage_law(lanes, law, limit, q, dq, target, tau)
    elif family == VOLTAGE:
        _voltage_law(lanes, law, 0.0, q, dq, target, tau)
    else:
        for b in range(BLOCK):
            amps = current_law(kp, damping, lanes[P.I_HEAT, b], q[b], dq[b], target[b])
            tau[b] = current_torque(lanes[P.KT, b], lanes[P.R, b], max_voltage,
                                    lanes[P.I_HEAT, b], amps, dq[b])


@nb.njit(cache=True, inline="always")
def _advance(model: int, family: int, replay: bool, lanes: np.ndarray, c: np.ndarray,
             kp: float, load_inertia: float, gravity_torque: float, q: np.ndarray,
             dq: np.ndarray, target: np.ndarray, tau: np.ndarray, factor: np.ndarray,
             goal: float, on: bool, control: float, dt: float) -> None:
    """One step of Algorithm 1 for every lane of a block, ``lanes[parameter, lane]``;
    ``tau`` and ``factor`` hold the lanes' τ_m and Stribeck factor between the loops."""
    law = (kp * c[C_DUTY_GAIN], c[C_FIRMWARE_CURRENT], c[C_SUPPLY], c[C_MAX_DUTY],
           c[C_MAX_VOLTAGE], c[C_DAMPING], kp)
    for b in range(BLOCK):
        target[b] = slew(lanes[P.TARGET_RATE, b], target[b], goal, dt)
    _motor_torques(family, replay, lanes, law, q, dq, target, on, control, tau)
    if model != M1 and model != M3:
        for b in range(BLOCK):
            factor[b] = stribeck(lane_coefficients(lanes, b), dq[b])
    for b in range(BLOCK):
        tau_e = external_torque(gravity_torque, q[b], lanes[P.Q_OFFSET, b])
        limit = stribeck_budget(model, lane_coefficients(lanes, b), tau[b], tau_e, dq[b],
                                factor[b])
        q[b], dq[b] = budget_update(load_inertia + lanes[P.ARMATURE, b], q[b], dq[b], tau[b],
                                    tau_e, limit, dt)


@nb.njit(cache=True, parallel=True)
def lanes_kernel(model, family, sets, lanes, consts, kp, load_inertia, gravity_torque, q0, dq0,
                 goal, enabled, control, lengths, dt, replay, recorded, out_q, errors):
    """The first ``sets`` lanes of ``lanes[block, parameter, lane]`` on every log: q in
    out_q[set, log] and/or the MAE against ``recorded`` in errors[set, log] (the general
    kernel's outputs)."""
    n_logs = lengths.size
    store, score = out_q.size > 0, recorded.size > 0
    for job in nb.prange(n_logs * lanes.shape[0]):
        j = job % n_logs
        block = job // n_logs
        first = block * BLOCK
        width = min(BLOCK, sets - first)
        n = lengths[j]
        q = np.full(BLOCK, q0[j])
        dq = np.full(BLOCK, dq0[j])
        target = np.full(BLOCK, goal[j, 0])
        total = np.zeros(BLOCK)
        tau = np.empty(BLOCK)
        factor = np.ones(BLOCK)  # M1, M3: never written, never read
        for k in range(n):
            if score:
                for b in range(BLOCK):
                    total[b] += abs(q[b] - recorded[j, k])
            if store:
                for b in range(width):
                    out_q[first + b, j, k] = q[b]
            if k == n - 1:
                break
            _advance(model, family, replay, lanes[block], consts[j], kp[j], load_inertia[j],
                     gravity_torque[j], q, dq, target, tau, factor, goal[j, k], enabled[j, k],
                     control[j, k], dt)
        for b in range(width):
            errors[first + b, j] = total[b] / n
