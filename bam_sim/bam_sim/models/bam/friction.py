"""Extended friction models M1..M6 (Duclusaud, Passault et al., section III).

A friction model does not give a friction torque directly: it gives the
*friction budget* τ_f^m ≥ 0, the largest torque friction can exert to keep the
joint from moving (equation 3 and its extensions). Algorithm 1 then applies
the torque that would stop the joint within one step, limited to that budget
(equations 4 and 5, :func:`applied_friction`)::

    τ_f^stop = −(J/Δt·q̇ + τ_m + τ_e)                                       (4)
    τ_f      = clip(τ_f^stop, −τ_f^m, τ_f^m)                                (5)

With s(q̇) = exp(−|q̇/v_s|^α) the Stribeck factor, the budgets are::

    M1  K_v|q̇| + K_c                                                        (3)
    M2  K_v|q̇| + K_c + s·K_c^s                                              (6)
    M3  K_v|q̇| + K_c + K_l|τ_m − τ_e|                                       (7)
    M4  K_v|q̇| + K_c + K_l|τ_m − τ_e| + s·(K_c^s + K_l^s|τ_m − τ_e|)        (8)
    M5  K_v|q̇| + K_c + |K_m τ_m − K_e τ_e| + s·(K_c^s + |K_m^s τ_m − K_e^s τ_e|)      (9)
    M6  M5 + s·Q                                                            (10)

M6 follows the convention the published parameter sets were identified with
(``reference/identified-parameters.md``): Q is non-zero only when τ_m and τ_e
have opposite signs, and then Q = K_e^q τ_e² if |τ_m| > |τ_e|, else
Q = K_m^q τ_m². Equation (10) of the paper omits the sign condition.

Each model is written out on its own below, rather than as one general
formula with zeroed terms, so that the reduction tests (M4 with K_l = K_l^s = 0
equals M2, ...) compare independent code paths.

The budgets are functions of a set's coefficients (:class:`Coefficients`), read
once from a parameter vector (:func:`coefficients`) or from one lane of a
population held as structure-of-arrays (:func:`lane_coefficients`, for
:mod:`bam_sim.bench.lanes`): both run the same operations in the same order.
The Stribeck factor's power and exponential are those of
:mod:`bam_sim.models.vector_math`, which a loop over lanes vectorizes.
"""

from __future__ import annotations

from collections import namedtuple

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models import vector_math
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import M1, M2, M3, M4, M6

# A set's friction coefficients (the parameter_vector names in the docstring's symbols).
Coefficients = namedtuple("Coefficients", "kv kc kcs kl kls km ke kms kes kmq keq vs alpha")


@nb.njit(cache=True, inline=into_rollouts)
def coefficients(p: np.ndarray) -> Coefficients:
    """The friction coefficients of parameter vector ``p``."""
    return Coefficients(p[P.KV], p[P.KC], p[P.KCS], p[P.KL], p[P.KLS], p[P.KM], p[P.KE],
                        p[P.KMS], p[P.KES], p[P.KMQ], p[P.KEQ], p[P.VS], p[P.ALPHA])


@nb.njit(cache=True, inline=into_rollouts)
def lane_coefficients(lanes: np.ndarray, i: int) -> Coefficients:
    """The friction coefficients of lane ``i`` of ``lanes[parameter, set]``."""
    return Coefficients(lanes[P.KV, i], lanes[P.KC, i], lanes[P.KCS, i], lanes[P.KL, i],
                        lanes[P.KLS, i], lanes[P.KM, i], lanes[P.KE, i], lanes[P.KMS, i],
                        lanes[P.KES, i], lanes[P.KMQ, i], lanes[P.KEQ, i], lanes[P.VS, i],
                        lanes[P.ALPHA, i])


@nb.njit(cache=True, inline=into_rollouts)
def stribeck(k: Coefficients, dq: float) -> float:
    """Stribeck factor exp(−|q̇/v_s|^α) of equations (6), (8)-(10); 1 at rest."""
    return vector_math.exp(-vector_math.power(abs(dq / k.vs), k.alpha))


@nb.njit(cache=True, inline=into_rollouts)
def quadratic_term(k: Coefficients, tau_m: float, tau_e: float) -> float:
    """Q of equation (10), with the published opposite-sign condition."""
    if tau_m * tau_e >= 0.0:
        return 0.0
    if abs(tau_m) > abs(tau_e):
        return k.keq * tau_e * tau_e
    return k.kmq * tau_m * tau_m


@nb.njit(cache=True, inline=into_rollouts)
def budget(model: int, k: Coefficients, tau_m: float, tau_e: float, dq: float) -> float:
    """Friction budget τ_f^m(τ_m, τ_e, q̇) ≥ 0 of model ``model`` (1..6), coefficients ``k``."""
    s = 1.0 if model == M1 or model == M3 else stribeck(k, dq)
    return stribeck_budget(model, k, tau_m, tau_e, dq, s)


@nb.njit(cache=True, inline=into_rollouts)
def stribeck_budget(model: int, k: Coefficients, tau_m: float, tau_e: float, dq: float,
                    s: float) -> float:
    """:func:`budget` given the Stribeck factor ``s`` = :func:`stribeck` (k, q̇), unused
    by M1 and M3: the lanes compute it in a loop of its own, skipped for those two."""
    base = k.kv * abs(dq) + k.kc
    if model == M1:
        return base
    if model == M2:
        return base + s * k.kcs
    if model == M3:
        return base + k.kl * abs(tau_m - tau_e)
    if model == M4:
        load = abs(tau_m - tau_e)
        return base + k.kl * load + s * (k.kcs + k.kls * load)
    directional = abs(k.km * tau_m - k.ke * tau_e)
    static = k.kcs + abs(k.kms * tau_m - k.kes * tau_e)
    if model == M6:
        static += quadratic_term(k, tau_m, tau_e)
    return base + directional + s * static


@nb.njit(cache=True)
def friction_budget(model: int, p: np.ndarray, tau_m: float, tau_e: float, dq: float) -> float:
    """Friction budget τ_f^m(τ_m, τ_e, q̇) ≥ 0 of model ``model`` (1..6), parameters ``p``."""
    return budget(model, coefficients(p), tau_m, tau_e, dq)


@nb.njit(cache=True, inline=into_rollouts)
def applied_friction(tau_stop: float, budget: float) -> float:
    """Equation (5): the stopping torque limited to ±budget.

    Written with comparisons because ``np.clip`` on scalars is not supported
    in numba's nopython mode; a loop over lanes compiles them to selects.
    """
    if tau_stop > budget:
        return budget
    if tau_stop < -budget:
        return -budget
    return tau_stop
