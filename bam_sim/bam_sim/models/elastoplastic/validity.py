"""When an elasto-plastic set (``ep_*``) may be simulated at a step: (14) and the coupling limit.

(And the LuGre model's stable stick, :func:`lugre_violation`.)

Equation numbers refer to ``reference/chattering-free-stiction.md``. Two
conditions, both depending on the step T, so they are checked where T is known
(a rollout, a bench stepper, a fit, an evaluation), not when a file is read:

* condition (14), Φ'(x) > −1/Z, i.e. K·T + B ≥ r with r = (F_S − F_C)/v_S − D
  (:meth:`ElastoPlasticParams.satisfies_14`). It bounds T from *below*. For
  ``ep_load`` the gap F_S − F_C grows with |τ_m − τ_e|, and it is checked at the
  largest load of the bench: the actuator's stall torque plus the pendulum's
  gravity torque (a backdriven motor can exceed its stall torque; such a step
  may then see the Φ_Z discontinuity (14) guards against, nothing worse);
* the coupling limit T·(K·T + 2B) < 4J (:func:`coupling_step_limit`): Algorithm 1
  reads the current velocity and the joint is integrated explicitly, so the
  sticking spring-damper is stable only below it. It bounds T from *above*.

:func:`check_step` raises a one-line :class:`BamError` for one set;
:func:`violation` scores a whole population at once (0 where both hold), with
the very expressions of the core's checks, so the two always agree.
"""

from __future__ import annotations

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.elastoplastic.model import (
    EP_CV,
    EP_LOAD,
    ElastoPlasticParams,
    check_coupling,
)
from bam_sim.models.model_registry import EP_FIRST, FrictionModel
from bam_sim.models.servo.actuator import DCMOTOR, VOLTAGE, Actuator


def ep_form(model: FrictionModel) -> int:
    """The :mod:`~bam_sim.models.elastoplastic.model` form (EP_CV, ...) of an ``ep_*`` model."""
    return model.model_id - EP_FIRST


def stall_torque(actuator: Actuator, p: np.ndarray, supply_voltage: float) -> np.ndarray:
    """Largest |τ_m| at rest for parameter vector(s) ``p`` (equations 13, 14-15 at q̇ = 0)."""
    p = np.asarray(p, dtype=np.float64)
    kt, resistance = p[..., P.KT], p[..., P.R]
    if actuator.family == VOLTAGE:
        return kt / resistance * supply_voltage * actuator.max_duty
    if actuator.family == DCMOTOR:
        # the controller's voltage clip, else the supply
        vmax = p[..., P.CT_VMAX]
        return kt / resistance * np.where(vmax > 0.0, vmax, supply_voltage)
    return np.minimum(kt * p[..., P.I_HEAT], kt / resistance * actuator.max_voltage)


def max_load(model: FrictionModel, actuator: Actuator, p: np.ndarray, gravity_torque: float,
             supply_voltage: float) -> np.ndarray:
    """The bound on |τ_m − τ_e| over which (14) is checked (0 unless ``ep_load``)."""
    if ep_form(model) != EP_LOAD:
        return np.zeros(np.shape(p)[:-1])
    return stall_torque(actuator, p, supply_voltage) + gravity_torque


def check_step(model: FrictionModel, actuator: Actuator, p: np.ndarray, dt: float,
               inertia: float, gravity_torque: float, supply_voltage: float) -> None:
    """Raise a one-line :class:`BamError` unless (14) and the coupling limit hold at ``dt``.

    ``inertia`` is the joint's J (bench and armature); nothing is checked for M1..M6.
    LuGre has its own limit (:func:`lugre_violation`).
    """
    if model.lugre:
        bad = float(lugre_violation(p[None, :], dt, np.array([inertia]))[0])
        if bad > 0.0:
            raise BamError(f"lugre parameters at the step {dt:g} s (J = {inertia:.4g} kg·m²): "
                           "the bristle spring-damper is unstable on the joint; it needs "
                           "T·σ0 < σ1 + σ2, T·(2(σ1 + σ2) − T·σ0) < 4(J + T·σ2) and "
                           "T·(2σ1 − σ2) < 2J (a smaller step or lugre.stiffness, a "
                           "lugre.damping between)")
        return
    if not model.elastoplastic:
        return
    load = float(max_load(model, actuator, p, gravity_torque, supply_voltage))
    try:
        params = ElastoPlasticParams.from_vector(ep_form(model), p, load)
        params.validate(dt)
        check_coupling(params, dt, inertia)
    except BamError as exc:
        raise BamError(f"{model.name} parameters at the step {dt:g} s (J = {inertia:.4g} "
                       f"kg·m²): {exc}") from None


def violation(model: FrictionModel, actuator: Actuator, population: np.ndarray, dt: float,
              inertia: np.ndarray, gravity_torque: float, supply_voltage: float) -> np.ndarray:
    """How far each set of ``population`` is from (14) and the coupling limit; 0 if valid.

    ``inertia`` is each set's smallest J over the logs and ``gravity_torque``,
    ``supply_voltage`` the largest (the worst case of both conditions). The
    measure is relative (the shortfall of K·T + B over r, the excess of
    T·(K·T + 2B) over 4J), so candidates can be ranked by it.
    """
    population = np.asarray(population, dtype=np.float64)
    out = np.zeros(population.shape[0])
    if model.lugre:
        return lugre_violation(population, dt, inertia)
    if not model.elastoplastic:
        return out
    form = ep_form(model)
    K, B = population[:, P.CONTACT_K], population[:, P.CONTACT_B]
    if form == EP_CV:
        required = -population[:, P.KV]
    else:
        # ElastoPlasticParams.from_vector, max_gap and required_admittance, in
        # their order of operations: F_S − F_C + K_l^s·load, then −(D − gap/v_S).
        f_c = population[:, P.KC]
        load = max_load(model, actuator, population, gravity_torque, supply_voltage)
        gap = (f_c + population[:, P.KCS]) - f_c + population[:, P.KLS] * load
        required = -(population[:, P.KV] - gap / population[:, P.VS])
    admittance = K * dt + B
    short = np.where(admittance >= required, 0.0,
                     (required - admittance) / np.maximum(np.abs(required), 1e-300))
    # coupling_step_limit and check_coupling: T < (−B + √(B² + 4KJ))/K.
    limit = (-B + np.sqrt(B * B + 4.0 * K * inertia)) / K
    excess = np.where(dt < limit, 0.0, dt * (K * dt + 2.0 * B) / (4.0 * inertia) - 1.0)
    # A set on the boundary itself is invalid too: never report exactly 0 for it.
    return short + np.where(dt < limit, 0.0, np.maximum(excess, 1e-12))


def lugre_violation(population: np.ndarray, dt: float, inertia: np.ndarray) -> np.ndarray:
    """How far each LuGre set is from a stable joint at the step T; 0 if stable.

    The motor model takes the bristle force −σ0 z − σ1 ż with z and ż at t
    (MuJoCo's order, DC-motor document section 2.4), z advances with the
    velocity at t, and the joint's Euler step treats σ2 implicitly. Two modes
    bound T (J' = J + Tσ2, σ1' = σ1 + σ2):

    * sticking (|ω| ≪ ω_s, so a ≈ 0 in (11)): (z, ω) evolves by
      [[1, T], [−Tσ0/J', 1 − Tσ1'/J']], whose eigenvalues lie inside the unit
      circle (Jury) iff T·σ0 < σ1' and T·(2σ1' − T·σ0) < 4J';
    * sliding with the velocity reversing every step (the period-2 mode of an
      explicit damper): z is saturated at g/σ0 of the previous direction, so
      ż = a z + ω ≈ 2ω and the bristle acts as an explicit damper 2σ1 beside
      the implicit σ2: ω_k+1 = (1 − T(2σ1 + σ2)/J')·ω_k, stable iff
      T·(2σ1 − σ2) < 2J.

    The measure is relative, like :func:`violation`.
    """
    population = np.asarray(population, dtype=np.float64)
    s0, s1 = population[:, P.LG_S0], population[:, P.LG_S1] + population[:, P.LG_S2]
    inertia = np.asarray(inertia, dtype=np.float64)
    sigma2 = population[:, P.LG_S2]
    total = inertia + dt * sigma2
    spring = dt * s0
    out = _excess(spring, s1) + _excess(dt * (2.0 * s1 - spring), 4.0 * total)
    return out + _excess(dt * (2.0 * population[:, P.LG_S1] - sigma2), 2.0 * inertia)


def _excess(load: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """0 where load < limit, else the relative excess (never exactly 0 on the boundary)."""
    return np.where(load < limit, 0.0,
                    np.maximum((load - limit) / np.maximum(np.abs(limit), 1e-300), 1e-12))
