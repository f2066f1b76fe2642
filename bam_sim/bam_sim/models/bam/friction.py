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
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models.model_registry import M1, M2, M3, M4, M6


@nb.njit(cache=True, inline="always")
def stribeck(p: np.ndarray, dq: float) -> float:
    """Stribeck factor exp(−|q̇/v_s|^α) of equations (6), (8)-(10)."""
    x = abs(dq / p[P.VS])
    if x == 0.0:
        return 1.0
    return np.exp(-(x ** p[P.ALPHA]))


@nb.njit(cache=True, inline="always")
def quadratic_term(p: np.ndarray, tau_m: float, tau_e: float) -> float:
    """Q of equation (10), with the published opposite-sign condition."""
    if tau_m * tau_e >= 0.0:
        return 0.0
    if abs(tau_m) > abs(tau_e):
        return p[P.KEQ] * tau_e * tau_e
    return p[P.KMQ] * tau_m * tau_m


@nb.njit(cache=True)
def friction_budget(model: int, p: np.ndarray, tau_m: float, tau_e: float, dq: float) -> float:
    """Friction budget τ_f^m(τ_m, τ_e, q̇) ≥ 0 of model ``model`` (1..6)."""
    base = p[P.KV] * abs(dq) + p[P.KC]
    if model == M1:
        return base
    if model == M2:
        return base + stribeck(p, dq) * p[P.KCS]
    if model == M3:
        return base + p[P.KL] * abs(tau_m - tau_e)
    if model == M4:
        load = abs(tau_m - tau_e)
        return base + p[P.KL] * load + stribeck(p, dq) * (p[P.KCS] + p[P.KLS] * load)
    directional = abs(p[P.KM] * tau_m - p[P.KE] * tau_e)
    static = p[P.KCS] + abs(p[P.KMS] * tau_m - p[P.KES] * tau_e)
    if model == M6:
        static += quadratic_term(p, tau_m, tau_e)
    return base + directional + stribeck(p, dq) * static


@nb.njit(cache=True, inline="always")
def applied_friction(tau_stop: float, budget: float) -> float:
    """Equation (5): the stopping torque limited to ±budget.

    Written with comparisons because ``np.clip`` on scalars is not supported
    in numba's nopython mode.
    """
    if tau_stop > budget:
        return budget
    if tau_stop < -budget:
        return -budget
    return tau_stop
