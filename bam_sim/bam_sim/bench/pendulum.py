"""One step of the paper's Algorithm 1 on the pendulum bench.

The bench (:class:`bam_sim.bench.geometry.Bench`) enters through::

    J   = mass·l² + arm_mass·l²/3 + J_m                                  (Alg. 1, line 3)
    τ_e = −(mass + arm_mass/2)·g·l·sin(q + q_offset)                     (Alg. 1, line 2)

One step (Algorithm 1)::

    τ_m   = S(q_k, q̇_k, q_d,k+1)                        servo model, servo.py
    τ_f^m = M(τ_m, τ_e, q̇_k)                            friction model, friction.py
    τ_stop = −(J/Δt·q̇_k + τ_m + τ_e)                    (4)
    τ_f   = clip(τ_stop, ±τ_f^m)                         (5)
    q̈     = (τ_m + τ_e + τ_f)/J                          (1)
    q̇_k+1 = clip(q̇_k + q̈·Δt, ±100 rad/s)
    q_k+1 = q_k + q̇_k+1·Δt + ½·q̈·Δt²

The position update uses the *updated* velocity, as the published
implementation with which the parameter sets were identified (line 9 of
Algorithm 1 as printed uses q̇_k). That integrator is slightly dissipative:
for small oscillations of angular frequency ω it multiplies the phase-space
area, hence the energy, by 1 − ω²Δt²/2 per step.

When the joint is at rest and |τ_m + τ_e| ≤ τ_f^m, τ_f is exactly −(τ_m + τ_e)
and q̈ is exactly zero in floating point: the sums below are written so that
they are evaluated in the same order, which is what keeps a static joint
static for ever (no drift, no chattering).

The elasto-plastic models (``ep_*``, :func:`step_ep`) replace lines (4)-(5)
by Algorithm 1 of Cisneros et al. (``reference/chattering-free-stiction.md``)
and carry its deflection e_k from step to step; the joint is integrated as
:func:`bam_sim.models.elastoplastic.model.simulate_joint` does, semi-implicit Euler
without the ½q̈Δt² term, the integration for which the core's holding tests
and its stability bound T·(K·T + 2B) < 4J (the sticking spring-damper read
explicitly) were derived::

    f_k, e_k = Φ_Z(q̇_k + Z·K·e_k−1), Z·(B·e_k−1 + f_k·Δt)     (13), (17), (18)
    q̇_k+1   = clip(q̇_k + Δt·(τ_m + τ_e − f_k)/J, ±100 rad/s)
    q_k+1   = q_k + Δt·q̇_k+1

Holding needs no special care there: while sticking the joint is the
spring-damper (K, B), which neither drifts nor chatters.

The sine of τ_e in the M1..M6 step is :func:`bam_sim.models.vector_math.sin`, so
that the population's lanes (:mod:`bam_sim.bench.lanes`) vectorize and every
kernel of that family gives the same trajectory; the ``ep_*`` and LuGre joints
keep the C library's, as their references (``simulate_joint``, MuJoCo) do.

A set that runs through MuJoCo's DC-motor model (the dcmotor family, the
``lugre`` friction model, or any optional group of
:mod:`bam_sim.models.dcmotor.groups`) is stepped by :func:`step_motor`: the motor
torque of :func:`bam_sim.models.dcmotor.motor_model.motor_torque` (with its states)
replaces S(q, q̇, q_d) and the friction model applies as above; LuGre, a
friction force of the motor model, gets MuJoCo's Euler joint (semi-implicit,
σ2 implicit), so that the bench is MuJoCo's pendulum.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models import vector_math
from bam_sim.models.bam.friction import applied_friction, friction_budget
from bam_sim.models.dcmotor.motor_model import motor_torque
from bam_sim.models.elastoplastic.model import ep_step
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import EP_FIRST, LUGRE_ID
from bam_sim.models.servo.laws import _clip, servo_torque, torque_from_control

MAX_VELOCITY = 100.0  # rad/s, velocity clip of the published implementation


@nb.njit(cache=True, inline=into_rollouts)
def _motor(family: int, p: np.ndarray, c: np.ndarray, kp: float, q: float, dq: float,
           goal: float, enabled: bool, replay: bool, control: float) -> tuple[float, float]:
    """(τ_m, control): the servo law, or the recorded ``control`` with ``replay``."""
    if replay:
        tau_m = torque_from_control(family, p, c, control, dq, enabled)
        return tau_m, (control if enabled else 0.0)
    return servo_torque(family, p, c, kp, q, dq, goal, enabled)


@nb.njit(cache=True, inline=into_rollouts)
def step(
    model: int,
    family: int,
    p: np.ndarray,
    c: np.ndarray,
    kp: float,
    inertia: float,
    gravity_torque: float,
    q: float,
    dq: float,
    goal: float,
    enabled: bool,
    replay: bool,
    control: float,
    dt: float,
) -> tuple[float, float, float, float]:
    """Algorithm 1: returns (q_k+1, q̇_k+1, τ_m, control).

    Inlined into the rollout kernels; also callable from Python (one dispatch
    per call), e.g. by a node stepping the bench in real time. With
    ``replay`` the recorded ``control`` (V or A) drives the motor model
    instead of the control law, which then is not evaluated.
    """
    tau_m, applied = _motor(family, p, c, kp, q, dq, goal, enabled, replay, control)
    q_next, dq_next = _budget_joint(model, p, inertia, gravity_torque, q, dq, tau_m, dt)
    return q_next, dq_next, tau_m, applied


@nb.njit(cache=True, inline=into_rollouts)
def _budget_joint(model: int, p: np.ndarray, inertia: float, gravity_torque: float, q: float,
                  dq: float, tau_m: float, dt: float) -> tuple[float, float]:
    """Lines (4)-(5), (1) and the integration of Algorithm 1 for a motor torque τ_m."""
    tau_e = external_torque(gravity_torque, q, p[P.Q_OFFSET])
    budget = friction_budget(model, p, tau_m, tau_e, dq)
    return budget_update(inertia, q, dq, tau_m, tau_e, budget, dt)


@nb.njit(cache=True, inline=into_rollouts)
def external_torque(gravity_torque: float, q: float, q_offset: float) -> float:
    """τ_e = −m·g·l·sin(q + q_offset) (Alg. 1, line 2), with the vectorizable sine."""
    return -gravity_torque * vector_math.sin(q + q_offset)


@nb.njit(cache=True, inline=into_rollouts)
def budget_update(inertia: float, q: float, dq: float, tau_m: float, tau_e: float,
                  budget: float, dt: float) -> tuple[float, float]:
    """(q_k+1, q̇_k+1): lines (4)-(5), (1) and the integration, given the friction budget."""
    tau_f = applied_friction(-(inertia / dt * dq + tau_m + tau_e), budget)
    ddq = (tau_m + tau_e + tau_f) / inertia
    dq_next = _clip(dq + ddq * dt, -MAX_VELOCITY, MAX_VELOCITY)
    q_next = q + dq_next * dt + 0.5 * ddq * dt * dt
    return q_next, dq_next


@nb.njit(cache=True, inline=into_rollouts)
def step_ep(
    model: int,
    family: int,
    p: np.ndarray,
    c: np.ndarray,
    kp: float,
    inertia: float,
    gravity_torque: float,
    q: float,
    dq: float,
    e: float,
    goal: float,
    enabled: bool,
    replay: bool,
    control: float,
    dt: float,
) -> tuple[float, float, float, float, float]:
    """One step with an elasto-plastic model: returns (q_k+1, q̇_k+1, e_k, τ_m, control).

    ``e`` is the deflection e_k−1 of the previous step (0 at the start,
    Algorithm 1 line 1). The velocity and position updates are written as in
    :func:`bam_sim.models.elastoplastic.model.simulate_joint`, operation for
    operation, so both give the same trajectory to the last bit.
    """
    tau_m, applied = _motor(family, p, c, kp, q, dq, goal, enabled, replay, control)
    q_next, dq_next, e_next = _ep_joint(model, p, inertia, gravity_torque, q, dq, e, tau_m, dt)
    return q_next, dq_next, e_next, tau_m, applied


@nb.njit(cache=True, inline=into_rollouts)
def _ep_joint(model: int, p: np.ndarray, inertia: float, gravity_torque: float, q: float,
              dq: float, e: float, tau_m: float, dt: float) -> tuple[float, float, float]:
    """The elasto-plastic friction and the semi-implicit Euler joint for a motor torque τ_m."""
    tau_e = libm_external_torque(gravity_torque, q, p[P.Q_OFFSET])
    return ep_update(model, p, inertia, q, dq, e, tau_m, tau_e, dt)


@nb.njit(cache=True, inline=into_rollouts)
def libm_external_torque(gravity_torque: float, q: float, q_offset: float) -> float:
    """τ_e with the C library's sine, as the elasto-plastic and LuGre references
    (``simulate_joint``, MuJoCo) compute it."""
    return -gravity_torque * np.sin(q + q_offset)


@nb.njit(cache=True, inline=into_rollouts)
def ep_update(model: int, p: np.ndarray, inertia: float, q: float, dq: float, e: float,
              tau_m: float, tau_e: float, dt: float) -> tuple[float, float, float]:
    """(q_k+1, q̇_k+1, e_k): the elasto-plastic friction (Algorithm 1 of Cisneros et
    al.) and the semi-implicit Euler joint, given τ_m and τ_e."""
    f, e_next = ep_step(model - EP_FIRST, p, dt, dq, e, tau_m, tau_e)
    q_next, dq_next = ep_joint_update(inertia, q, dq, tau_m, tau_e, f, dt)
    return q_next, dq_next, e_next


@nb.njit(cache=True, inline=into_rollouts)
def ep_joint_update(inertia: float, q: float, dq: float, tau_m: float, tau_e: float, f: float,
                    dt: float) -> tuple[float, float]:
    """(q_k+1, q̇_k+1): the semi-implicit Euler joint under τ_m + τ_e − f, as
    :func:`bam_sim.models.elastoplastic.model.simulate_joint` steps it."""
    dq_next = _clip(dq + dt * (tau_m + tau_e - f) / inertia, -MAX_VELOCITY, MAX_VELOCITY)
    return q + dt * dq_next, dq_next


@nb.njit(cache=True, inline=into_rollouts)
def _lugre_joint(p: np.ndarray, inertia: float, gravity_torque: float, q: float, dq: float,
                 force: float, dt: float) -> tuple[float, float]:
    """MuJoCo's Euler step of the joint under the actuator force (LuGre included)."""
    tau_e = libm_external_torque(gravity_torque, q, p[P.Q_OFFSET])
    return lugre_update(p[P.LG_S2], inertia, q, dq, force, tau_e, dt)


@nb.njit(cache=True, inline=into_rollouts)
def lugre_update(sigma2: float, inertia: float, q: float, dq: float, force: float, tau_e: float,
                 dt: float) -> tuple[float, float]:
    """(q_k+1, q̇_k+1): MuJoCo's Euler step under the actuator force and τ_e.

    The viscous σ2 of (9b) is MuJoCo's joint damping, implicit in the Euler
    integrator (section 2.4): q̈ = (τ + τ_e − σ2 q̇)/(J + Δt σ2), then
    q̇_k+1 = q̇_k + Δt q̈ and q_k+1 = q_k + Δt q̇_k+1.
    """
    ddq = (force + tau_e - sigma2 * dq) / (inertia + dt * sigma2)
    dq_next = _clip(dq + dt * ddq, -MAX_VELOCITY, MAX_VELOCITY)
    return q + dt * dq_next, dq_next


@nb.njit(cache=True, inline=into_rollouts)
def step_motor(
    model: int,
    family: int,
    p: np.ndarray,
    pd: np.ndarray,
    c: np.ndarray,
    kp: float,
    inertia: float,
    gravity_torque: float,
    q: float,
    dq: float,
    e: float,
    state: np.ndarray,
    goal: float,
    enabled: bool,
    replay: bool,
    control: float,
    dt: float,
) -> tuple[float, float, float, float, float, float]:
    """One step through the DC-motor model: (q_k+1, q̇_k+1, e_k, τ_m, control, current).

    ``pd`` holds the set's dcmotor rows (:func:`bam_sim.models.dcmotor.motor_model.fill_motor`)
    and ``state`` its states (slew, integral, temperature, bristle, current),
    advanced in place. The friction is the model's: LuGre inside the motor
    model with MuJoCo's Euler joint (:func:`_lugre_joint`), an ``ep_*`` model
    as :func:`step_ep`, or a budget of M1..M6 as :func:`step`, each for the
    motor torque τ_m of the DC-motor model.
    """
    tau_m, lugre, applied, current = motor_torque(family, p, c, pd, state, kp, q, dq, goal,
                                                  enabled, replay, control, dt)
    if model == LUGRE_ID:
        q_next, dq_next = _lugre_joint(p, inertia, gravity_torque, q, dq, tau_m + lugre, dt)
        return q_next, dq_next, e, tau_m, applied, current
    if model >= EP_FIRST:
        q_next, dq_next, e_next = _ep_joint(model, p, inertia, gravity_torque, q, dq, e, tau_m,
                                            dt)
        return q_next, dq_next, e_next, tau_m, applied, current
    q_next, dq_next = _budget_joint(model, p, inertia, gravity_torque, q, dq, tau_m, dt)
    return q_next, dq_next, e, tau_m, applied, current


@nb.njit(cache=True, inline=into_rollouts)
def step_any(
    model: int,
    family: int,
    p: np.ndarray,
    c: np.ndarray,
    kp: float,
    inertia: float,
    gravity_torque: float,
    q: float,
    dq: float,
    e: float,
    goal: float,
    enabled: bool,
    replay: bool,
    control: float,
    dt: float,
) -> tuple[float, float, float, float, float]:
    """:func:`step` (M1..M6, ``e`` passed through) or :func:`step_ep` (``ep_*``), by id."""
    if model >= EP_FIRST:
        return step_ep(model, family, p, c, kp, inertia, gravity_torque, q, dq, e, goal,
                       enabled, replay, control, dt)
    q_next, dq_next, tau_m, applied = step(model, family, p, c, kp, inertia, gravity_torque,
                                           q, dq, goal, enabled, replay, control, dt)
    return q_next, dq_next, e, tau_m, applied
