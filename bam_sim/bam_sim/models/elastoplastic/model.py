"""Chattering-free elasto-plastic friction with stiction (Kikuuwe et al.; Cisneros et al.).

Equation numbers refer to ``reference/chattering-free-stiction.md`` (Cisneros,
Benallegue, Kikuuwe, Morisawa, Kanehiro, "Reliable chattering-free simulation
of friction torque in joints presenting high stiction").

Scheme (Section III, Algorithm 1). A virtual spring-damper (K, B) sits between
the joint, moving at u, and a massless friction element moving at v, with
f = Φ(v) (3) = K·e + B·ė (4). Implicit Euler with step T gives

    Z   = 1 / (K·T + B)                                                   (12)
    v*  = u_k + Z·K·e_{k−1}                                               (13)
    f_k = Φ_Z(v*)                                                         (17)
    e_k = Z·(B·e_{k−1} + f_k·T)                                           (18)

where Φ_Z is the implicit transformation (15)-(16): y = Φ(x − Z·y) when
|x| > Z·Φ(0⁺) (sliding), y = x/Z otherwise (sticking). f is the friction force
in the direction of v: the joint receives −f. While sticking, (17)-(18) reduce
to f = K·e_k + B·(e_k − e_{k−1})/T with e_k = e_{k−1} + T·u_k, a visco-elastic
pre-sliding spring, so a held joint neither drifts nor chatters.

Three friction functions Φ, each with a closed-form Φ_Z:

* Coulomb-viscous (19) → (20);
* Stribeck with α = 1 (21) → Lambert W solution (24)-(30);
* rational (33) with coefficients (39)-(42) → quadratic roots (43)-(48).

Φ_Z exists when condition (14) Φ'(x) > −1/Z holds ([9]); for these forms it is
also what keeps Φ_Z continuous at ±Z·F_S. For (21) and (33) Φ' increases
with x > 0, so its infimum is the limit at 0⁺, D − (F_S − F_C)/v_S (from (31)
and (37)-(38)), and (14) is exactly

    K·T + B ≥ r,   with r = (F_S − F_C)/v_S − D as in (38)

(equality allowed: the infimum is not attained). That is (49) with ≤, and it
holds for the Stribeck form as well, where the paper states only the
sufficient condition (32), Z ≤ v_S/F_S, which its own Section V set violates.
Note that (14) bounds the step from *below*: a larger T makes 1/Z larger.

Load-dependent stiction (``EP_LOAD``, an extension, not in the paper): the
levels follow the friction budget of BAM's model M4 (friction.py)::

    F_C = K_c + K_l·|τ_m − τ_e|
    F_S = F_C + K_c^s + K_l^s·|τ_m − τ_e|

evaluated each step from that step's torques, with D = K_v and v_S as in M4
(with α = 1, which the closed form needs). Φ_Z stays the Stribeck form (30).

Parameter vector: BAM's own (:mod:`bam_sim.models.parameter_vector`), so the
bench kernels hand it over unchanged; the ``EP_*`` indices name the entries
read here, with the meaning of BAM's names: K_c (F_C at zero load), K_c^s
(F_S − F_C at zero load), K_l, K_l^s, K_v (D), v_s, and the spring-damper
K (``contact_stiffness``), B (``contact_damping``). The Coulomb-viscous form
uses F = K_c.
"""

from __future__ import annotations

import math
import os
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass

import numba as nb
import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.elastoplastic.fast_exp import exp_split
from bam_sim.models.elastoplastic.float_ops import fma
from bam_sim.models.elastoplastic.lambert_w import TABLE_LIMIT as W0_TABLE_LIMIT
from bam_sim.models.elastoplastic.lambert_w import TABLE_SCALE as W0_TABLE_SCALE
from bam_sim.models.elastoplastic.lambert_w import (
    lambert_w0_branch,
    lambert_w0_ratio,
    lambert_w0_ratio_near,
)
from bam_sim.models.elastoplastic.lambert_w_table import LOG_SPAN as W0_TABLE_LOG_SPAN
from bam_sim.models.kernel_inlining import into_rollouts

EP_CV, EP_STRIBECK, EP_RATIONAL, EP_LOAD = 0, 1, 2, 3
FORM_NAMES = {EP_CV: "Coulomb-viscous", EP_STRIBECK: "Stribeck", EP_RATIONAL: "rational",
              EP_LOAD: "load-dependent Stribeck"}

EP_KC, EP_KCS, EP_KL, EP_KLS, EP_KV, EP_VS = P.KC, P.KCS, P.KL, P.KLS, P.KV, P.VS
EP_K, EP_B = P.CONTACT_K, P.CONTACT_B
EP_N_PARAMS = P.N_PARAMS

INV_E = 1.0 / math.e


# --------------------------------------------------------------------------
# Implicit transformations Φ_Z (hot path: no validation)
# --------------------------------------------------------------------------


@nb.njit(cache=True, inline=into_rollouts)
def phi_z_coulomb_viscous(x: float, Z: float, F: float, D: float) -> float:
    """Φ_Z of the Coulomb-viscous function Φ(x) = F·sgn(x) + D·x (19), eq. (20)."""
    ax = abs(x)
    if ax <= Z * F:
        return x / Z
    return math.copysign((F + D * ax) / (1.0 + Z * D), x)


# Sliding beyond s = NEAR_SLIDE (s in units of v_S·(1 + Z·D), see phi_z_stribeck)
# puts ψ₊ = −a·e^(−a−s) ≥ −e^(−1−s) in the table region of W0 whatever a is,
# since a·e^(−a) ≤ 1/e: −e^(−1−NEAR_SLIDE) is the table's lower end.
NEAR_SLIDE = W0_TABLE_LOG_SPAN - 1.0


# The Φ_Z and the small steps are inlined into the rollout kernels (kernel_inlining): a
# call's overhead is a sizeable part of the table path's cost, and a loop over SIMD lanes
# (bench.lanes) vectorizes only what has no call left in it.
@nb.njit(cache=True, inline=into_rollouts)
def phi_z_stribeck(x: float, Z: float, F_S: float, F_C: float, v_S: float, D: float) -> float:
    """Φ_Z of the Stribeck function (21) with α = 1, eqs. (24)-(30).

    For x > Z·F_S, y₊ = (F_C + D·x)/(1 + Z·D) − (v_S/Z)·W0(ψ₊) (27) with
    ψ₊ = −a·exp(−a − s) (25), where a = Z·F_SC/(v_S(1 + Z·D)) and
    s = (x − Z·F_S)/(v_S(1 + Z·D)). (28)-(29) is the mirror image, so y₋ is
    taken as −y₊(−x), which makes Φ_Z exactly odd.

    Beyond s = NEAR_SLIDE (the bulk of sliding), W0(ψ₊) = ψ₊·G(ψ₊) with G
    from the table of :mod:`bam_sim.models.elastoplastic.lambert_w`, and (27) becomes a sum
    of positive terms, y₊ = [F_C + D·x + F_SC·e^(−a−s)·G(ψ₊)]/(1 + Z·D),
    with one table exponential, no division by Z and the table piece chosen
    from e^(−a−s)'s own table value while its polynomial runs. Closer to the
    threshold, :func:`phi_z_stribeck_near`.
    """
    ax = abs(x)
    if ax <= Z * F_S:
        return x / Z
    if stribeck_near(ax, Z, F_S, F_C, v_S, D):
        return phi_z_stribeck_near(x, Z, F_S, F_C, v_S, D)
    return stribeck_sliding(x, Z, F_S, F_C, v_S, D)


@nb.njit(cache=True, inline=into_rollouts)
def stribeck_near(ax: float, Z: float, F_S: float, F_C: float, v_S: float, D: float) -> bool:
    """Whether a sliding |x| is below NEAR_SLIDE (or the set has no stiction): the
    case of :func:`phi_z_stribeck_near`, not of :func:`stribeck_sliding`."""
    return ax < fma(NEAR_SLIDE, v_S * fma(Z, D, 1.0), Z * F_S) or F_S - F_C <= 0.0


@nb.njit(cache=True, inline=into_rollouts)
def stribeck_sliding(x: float, Z: float, F_S: float, F_C: float, v_S: float, D: float) -> float:
    """(27) on the table path, for |x| beyond NEAR_SLIDE (:func:`phi_z_stribeck`).

    Only arithmetic and two table reads whose index is masked to the table, so a
    vector lane may compute it for any x and select another case's value."""
    ax = abs(x)
    vA = v_S * fma(Z, D, 1.0)
    f_sc = F_S - F_C
    g = 1.0 / vA
    t, p = exp_split((Z * F_C - ax) * g)  # e^(−a−s) = t·(1 + p)
    e_as = fma(t, p, t)
    scale = Z * f_sc * g * W0_TABLE_SCALE  # −ψ₊·W0_TABLE_SCALE = scale·e^(−a−s)
    ratio = lambert_w0_ratio_near(t * scale, e_as * scale)
    # v_S·g = 1/(1 + Z·D)
    return math.copysign(v_S * g * fma(f_sc * e_as, ratio, fma(D, ax, F_C)), x)


@nb.njit(cache=True)
def phi_z_stribeck_near(x: float, Z: float, F_S: float, F_C: float, v_S: float,
                         D: float) -> float:
    """(27)-(30) for Z·F_S < |x| < Z·F_S + NEAR_SLIDE·v_S(1 + Z·D), and without stiction.

    Near the threshold ψ₊ may be close to the branch point −1/e (a → 1 is the
    edge of condition (14)); W0 is then computed from q = 1 + e·ψ₊, written
    as u·e^t − (e^t − 1) with u = 1 − a and t = u − s, whose rounding error is
    of the order of u·ε, so √(2q) and W0 keep an absolute error at the
    rounding level and Φ_Z stays continuous at ±Z·F_S.
    """
    ax = abs(x)
    A = 1.0 + Z * D
    f_sc = F_S - F_C
    if f_sc <= 0.0:  # no stiction: ψ₊ = 0, W0 = 0 and (27) is (20)
        return math.copysign((F_C + D * ax) / A, x)
    g = 1.0 / (v_S * A)
    a = Z * f_sc * g
    u = 1.0 - a
    t = u - (ax - Z * F_S) * g
    # e^t = e_tab·(1 + p) and e^t − 1 = (e_tab − 1) + e_tab·p, where e_tab − 1 is
    # exact (e_tab is a double in (0, e]): both to about one ulp, e^t − 1 too as t → 0.
    e_tab, p = exp_split(t)
    et = fma(e_tab, p, e_tab)
    em1 = fma(e_tab, p, e_tab - 1.0)
    psi = -a * et * INV_E
    if psi > W0_TABLE_LIMIT:
        w = psi * lambert_w0_ratio(psi)
    else:
        w = lambert_w0_branch(u * et - em1)
    return math.copysign((F_C + D * ax) / A - v_S * w / Z, x)


@nb.njit(cache=True, inline=into_rollouts)
def phi_z_rational(x: float, Z: float, F_S: float, F_C: float, v_S: float, D: float) -> float:
    """Φ_Z of the rational function (33), coefficients (39)-(42), roots (43)-(48).

    (38) and (40) give δ = (F_S − F_C)/(r + D) = v_S, so (33) is
    Φ(ξ) = D·ξ + F_C + δ·F_SC/(ξ + δ) for ξ ≥ 0 (with α = Dδ + F_C, β = F_S·δ).
    The quadratic (43) a·y² + b₊·y + c₊ = 0 of (46)-(48) is solved in
    ξ = x − Z·y (y = (x − ξ)/Z turns Z·(a·y² + b₊·y + c₊) into
    (1 + ZD)·ξ² + b'·ξ − δ·(x − Z·F_S), b' = (1 + ZD)·δ − (x − Z·F_C)).
    Root (44), the smaller y, is the positive ξ; it is taken in the form
    without cancellation, and y = Φ(ξ) is a sum of positive terms. x < 0 uses
    oddness, y₋(x) = −y₊(−x) (the paper's (45) with b₋ of (47) has a sign slip).
    """
    ax = abs(x)
    if ax <= Z * F_S:
        return x / Z
    A = 1.0 + Z * D
    delta = v_S
    excess = ax - Z * F_S
    b = A * delta - (ax - Z * F_C)
    root = math.sqrt(b * b + 4.0 * A * delta * excess)
    if b >= 0.0:
        xi = 2.0 * delta * excess / (b + root)
    else:
        xi = (root - b) / (2.0 * A)
    y = D * xi + F_C + delta * (F_S - F_C) / (xi + delta)
    return math.copysign(y, x)


@nb.njit(cache=True)
def phi(form: int, x: float, F_S: float, F_C: float, v_S: float, D: float) -> float:
    """The friction function Φ itself, (19), (21) with α = 1, or (33), for x ≠ 0.

    Φ(±0) is taken as ±F_S (the limits x → 0±). Coulomb-viscous uses F = F_C.
    """
    ax = abs(x)
    if form == EP_CV:
        y = F_C + D * ax
    elif form == EP_RATIONAL:
        y = D * ax + F_C + v_S * (F_S - F_C) / (ax + v_S)
    else:
        y = (F_S - F_C) * math.exp(-ax / v_S) + F_C + D * ax
    return math.copysign(y, x)


# --------------------------------------------------------------------------
# Discrete scheme (Algorithm 1)
# --------------------------------------------------------------------------


@nb.njit(cache=True, inline=into_rollouts)
def compliance(K: float, B: float, T: float) -> float:
    """Z = 1/(K·T + B), eq. (12)."""
    return 1.0 / (K * T + B)


# A set's elasto-plastic coefficients: K, B of the spring-damper (4), the levels' K_c,
# K_c^s, K_l, K_l^s, v_S and the viscous D (parameter_vector names in the docstrings).
EpCoefficients = namedtuple("EpCoefficients", "K B kc kcs kl kls vs kv")


@nb.njit(cache=True, inline=into_rollouts)
def ep_coefficients(p: np.ndarray) -> EpCoefficients:
    """The elasto-plastic coefficients of parameter vector ``p``."""
    return EpCoefficients(p[EP_K], p[EP_B], p[EP_KC], p[EP_KCS], p[EP_KL], p[EP_KLS],
                          p[EP_VS], p[EP_KV])


@nb.njit(cache=True, inline=into_rollouts)
def ep_lane_coefficients(lanes: np.ndarray, i: int) -> EpCoefficients:
    """The elasto-plastic coefficients of lane ``i`` of ``lanes[parameter, set]``."""
    return EpCoefficients(lanes[EP_K, i], lanes[EP_B, i], lanes[EP_KC, i], lanes[EP_KCS, i],
                          lanes[EP_KL, i], lanes[EP_KLS, i], lanes[EP_VS, i], lanes[EP_KV, i])


@nb.njit(cache=True)
def friction_levels(form: int, p: np.ndarray, tau_m: float, tau_e: float) -> tuple[float, float]:
    """(F_S, F_C) of this step: constant, or load-dependent for ``EP_LOAD`` (M4 budget)."""
    return levels(form, ep_coefficients(p), tau_m, tau_e)


@nb.njit(cache=True, inline=into_rollouts)
def levels(form: int, k: EpCoefficients, tau_m: float, tau_e: float) -> tuple[float, float]:
    """:func:`friction_levels` of coefficients ``k``."""
    if form == EP_CV:
        return k.kc, k.kc
    if form == EP_LOAD:
        load = abs(tau_m - tau_e)
        f_c = k.kc + k.kl * load
        return f_c + k.kcs + k.kls * load, f_c
    return k.kc + k.kcs, k.kc


@nb.njit(cache=True, inline=into_rollouts)
def phi_z(form: int, x: float, Z: float, F_S: float, F_C: float, v_S: float, D: float) -> float:
    """Dispatch to the Φ_Z of ``form`` (``EP_LOAD`` is the Stribeck form at its levels)."""
    if form == EP_CV:
        return phi_z_coulomb_viscous(x, Z, F_C, D)
    if form == EP_RATIONAL:
        return phi_z_rational(x, Z, F_S, F_C, v_S, D)
    return phi_z_stribeck(x, Z, F_S, F_C, v_S, D)


@nb.njit(cache=True)
def friction_level(form: int, p: np.ndarray, tau_m: float, tau_e: float, speed: float) -> float:
    """|Φ(speed)| at this load's levels: F_S at rest, the sliding friction at |v| > 0.

    The static threshold and the steady sliding friction of the scheme: a held
    joint sticks while |τ_m + τ_e| ≤ F_S, and steady sliding at v has f = Φ(v).
    """
    F_S, F_C = friction_levels(form, p, tau_m, tau_e)
    return abs(phi(form, abs(speed), F_S, F_C, p[EP_VS], p[EP_KV]))


@nb.njit(cache=True, inline=into_rollouts)
def hypothetical_velocity(u: float, e_prev: float, Z: float, K: float) -> float:
    """v*_k = u_k + Z·K·e_{k−1}, eq. (13): the velocity reached without friction."""
    return u + Z * K * e_prev


@nb.njit(cache=True)
def ep_step(form: int, p: np.ndarray, T: float, u: float, e_prev: float,
            tau_m: float, tau_e: float) -> tuple[float, float]:
    """One step of Algorithm 1: (f_k, e_k) from the current joint velocity u_k and e_{k−1}.

    Lines 5, 6 and 8: (13), (17), (18), with Z from (12). ``tau_m`` and
    ``tau_e`` only matter for ``EP_LOAD``. The joint receives the torque −f_k.
    """
    return ep_step_of(form, ep_coefficients(p), T, u, e_prev, tau_m, tau_e)


@nb.njit(cache=True, inline=into_rollouts)
def ep_step_of(form: int, k: EpCoefficients, T: float, u: float, e_prev: float,
               tau_m: float, tau_e: float) -> tuple[float, float]:
    """:func:`ep_step` of coefficients ``k``."""
    Z = compliance(k.K, k.B, T)
    F_S, F_C = levels(form, k, tau_m, tau_e)
    f = phi_z(form, hypothetical_velocity(u, e_prev, Z, k.K), Z, F_S, F_C, k.vs, k.kv)
    return f, deflection(Z, k.B, e_prev, f, T)


@nb.njit(cache=True, inline=into_rollouts)
def deflection(Z: float, B: float, e_prev: float, f: float, T: float) -> float:
    """e_k = Z·(B·e_k−1 + f_k·T), eq. (18)."""
    return Z * (B * e_prev + f * T)


# --------------------------------------------------------------------------
# Parameters and the validity condition (14) (not on the hot path)
# --------------------------------------------------------------------------


def _finite(name: str, value: float, low: float, strict: bool) -> float:
    x = float(value)
    if not math.isfinite(x) or x < low or (strict and x == low):
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise BamError(f"elasto-plastic parameter {name} = {value!r} must be finite and {bound}")
    return x


@dataclass(frozen=True)
class ElastoPlasticParams:
    """One elasto-plastic friction set: Φ form, levels, virtual spring-damper, load bound.

    ``F_S`` and ``F_C`` are the levels at zero load; ``K_l``, ``K_ls`` raise
    them with |τ_m − τ_e| (``EP_LOAD`` only), up to ``max_load``, the bound on
    |τ_m − τ_e| over which condition (14) is checked. Coulomb-viscous (19) has
    a single level F: give F_S = F_C = F.
    """

    form: int
    F_S: float
    F_C: float
    v_S: float
    D: float
    K: float
    B: float
    K_l: float = 0.0
    K_ls: float = 0.0
    max_load: float = 0.0

    def __post_init__(self) -> None:
        if self.form not in FORM_NAMES:
            raise BamError(f"unknown elasto-plastic form {self.form!r}; use EP_CV, "
                           "EP_STRIBECK, EP_RATIONAL or EP_LOAD")
        for name, low, strict in (("F_C", 0.0, False), ("v_S", 0.0, True), ("D", 0.0, False),
                                  ("K", 0.0, True), ("B", 0.0, True), ("K_l", 0.0, False),
                                  ("K_ls", 0.0, False), ("max_load", 0.0, False)):
            _finite(name, getattr(self, name), low, strict)
        _finite("F_S", self.F_S, self.F_C, False)
        if self.form == EP_CV and self.F_S != self.F_C:
            raise BamError("Coulomb-viscous friction (19) has one level F: give F_S = F_C = F")

    @classmethod
    def paper(cls, form: int = EP_STRIBECK) -> ElastoPlasticParams:
        """The Section V set: K = 5000, B = 50 (Z = 1/55 at T = 1 ms), F_S = 2.5,
        F_C = 0.2, v_S = 0.04, D = 4.5; Coulomb-viscous: F = 1.0, D = 4.5."""
        if form == EP_CV:
            return cls(EP_CV, 1.0, 1.0, 0.04, 4.5, 5000.0, 50.0)
        return cls(form, 2.5, 0.2, 0.04, 4.5, 5000.0, 50.0)

    @classmethod
    def from_vector(cls, form: int, p: np.ndarray, max_load: float = 0.0) -> ElastoPlasticParams:
        """The set held by a parameter vector (the inverse of :meth:`vector`)."""
        f_c = float(p[EP_KC])
        f_s = f_c if form == EP_CV else f_c + float(p[EP_KCS])
        # (19) has no v_S: any positive value stands in for the unused entry.
        v_s = 1.0 if form == EP_CV else float(p[EP_VS])
        load = {"K_l": float(p[EP_KL]), "K_ls": float(p[EP_KLS]),
                "max_load": float(max_load)} if form == EP_LOAD else {}
        return cls(form, f_s, f_c, v_s, float(p[EP_KV]), float(p[EP_K]), float(p[EP_B]),
                   **load)

    def vector(self) -> np.ndarray:
        """The parameter vector read by the numba kernels (BAM's layout, ``EP_*`` entries)."""
        p = np.zeros(EP_N_PARAMS)
        p[EP_KC], p[EP_KCS] = self.F_C, self.F_S - self.F_C
        p[EP_KL], p[EP_KLS], p[EP_KV], p[EP_VS] = self.K_l, self.K_ls, self.D, self.v_S
        p[EP_K], p[EP_B] = self.K, self.B
        return p

    def max_gap(self) -> float:
        """Largest F_S − F_C over the admissible loads (the worst case for (14))."""
        load = self.max_load if self.form == EP_LOAD else 0.0
        return self.F_S - self.F_C + self.K_ls * load

    def steepest_slope(self) -> float:
        """inf Φ'(x) over x ≠ 0 and the admissible loads: D − gap/v_S, or D (19).

        Φ'' > 0 for x > 0 in (21) (Φ' = D − F_SC/v_S·e^(−x/v_S), (31)) and in
        (33) (Φ' = D − δ·F_SC/(x + δ)²), so the infimum is the limit at 0⁺.
        """
        if self.form == EP_CV:
            return self.D
        return self.D - self.max_gap() / self.v_S

    def required_admittance(self) -> float:
        """The smallest 1/Z = K·T + B that satisfies (14): −steepest slope (≤ 0: any)."""
        return -self.steepest_slope()

    def satisfies_14(self, T: float) -> bool:
        """Condition (14) at step T: K·T + B ≥ −inf Φ' (the infimum is not attained)."""
        return self.K * T + self.B >= self.required_admittance()

    def min_step(self) -> float:
        """Smallest step T > 0 that satisfies (14); 0.0 when any step does."""
        r = self.required_admittance()
        if self.B >= r:
            return 0.0
        return _first_passing((r - self.B) / self.K, self.satisfies_14)

    def min_stiffness(self, T: float) -> float:
        """Smallest K that satisfies (14) at step T (with this B)."""
        r = self.required_admittance()
        return _first_passing(max((r - self.B) / T, 0.0),
                              lambda K: K * T + self.B >= r)

    def min_damping(self, T: float) -> float:
        """Smallest B that satisfies (14) at step T (with this K)."""
        r = self.required_admittance()
        return _first_passing(max(r - self.K * T, 0.0), lambda B: self.K * T + B >= r)

    def validate(self, T: float) -> ElastoPlasticParams:
        """Raise :class:`BamError` unless step ``T`` satisfies condition (14); return self."""
        T = _finite("T", T, 0.0, True)
        if self.satisfies_14(T):
            return self
        r = self.required_admittance()
        where = " at the largest load" if self.form == EP_LOAD else ""
        raise BamError(
            f"elasto-plastic {FORM_NAMES[self.form]} friction violates condition (14) "
            f"Φ'(x) > −1/Z: inf Φ' = D − (F_S − F_C)/v_S = {-r:.6g} N·m·s/rad{where} but −1/Z = "
            f"−(K·T + B) = {-(self.K * T + self.B):.6g}; use a step T ≥ {self.min_step()!r} s "
            f"(the smallest admissible step), or K ≥ {self.min_stiffness(T)!r} N·m/rad, "
            f"or B ≥ {self.min_damping(T)!r} N·m·s/rad")


def _first_passing(x: float, passes: Callable[[float], bool]) -> float:
    """The smallest double near x for which the monotone test ``passes`` holds.

    x is the exact-arithmetic bound; rounding may put the boundary a few doubles
    to either side of it, so step up until it passes, then down while it does.
    """
    while not passes(x):
        x = math.nextafter(x, math.inf)
    for _ in range(64):
        below = math.nextafter(x, -math.inf)
        if below <= 0.0 or not passes(below):
            break
        x = below
    return x


# --------------------------------------------------------------------------
# 1-DOF joint simulation (tests, paper scenario)
# --------------------------------------------------------------------------


def coupling_step_limit(K: float, B: float, J: float) -> float:
    """Largest step T for which sticking is stable when the friction uses the current velocity.

    Algorithm 1 feeds u_k to (13) and the joint is then integrated by
    semi-implicit Euler with inertia J, so while sticking the joint is a
    spring-damper (K, B) driven explicitly. Its characteristic polynomial is
    λ² − (2 − aKT − aB)λ + (1 − aB) with a = T/J, and Jury's test reduces to
    T·(K·T + 2B) < 4J. Not part of (14): (14) bounds T from below, this from above.
    """
    return (-B + math.sqrt(B * B + 4.0 * K * J)) / K


@nb.njit(cache=True)
def _joint_kernel(form: int, p: np.ndarray, J: float, T: float, tau_m: np.ndarray,
                  tau_ext: np.ndarray, mgl: float, q0: float, u0: float) -> np.ndarray:
    """Rows (q, u, f, e, τ_e, sliding) at the start of each step; semi-implicit Euler."""
    n = tau_m.shape[0]
    out = np.empty((n, 6))
    q, u, e = q0, u0, 0.0
    Z = compliance(p[EP_K], p[EP_B], T)
    for k in range(n):
        tau_e = tau_ext[k] - mgl * math.sin(q)
        F_S, _ = friction_levels(form, p, tau_m[k], tau_e)
        sliding = abs(hypothetical_velocity(u, e, Z, p[EP_K])) > Z * F_S
        f, e = ep_step(form, p, T, u, e, tau_m[k], tau_e)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = q, u, f, e
        out[k, 4], out[k, 5] = tau_e, 1.0 if sliding else 0.0
        u += T * (tau_m[k] + tau_e - f) / J
        q += T * u
    return out


@dataclass(frozen=True)
class JointRun:
    """A 1-DOF run, sampled at the start of each step (f acts on the joint as −f)."""

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    f: np.ndarray
    e: np.ndarray
    tau_e: np.ndarray
    sliding: np.ndarray


def check_coupling(params: ElastoPlasticParams, T: float, J: float) -> None:
    """Raise :class:`BamError` unless T·(K·T + 2B) < 4J (:func:`coupling_step_limit`)."""
    _finite("J", J, 0.0, True)
    limit = coupling_step_limit(params.K, params.B, J)
    if not T < limit:
        raise BamError(f"sticking is unstable with the explicit coupling: T·(K·T + 2B) < 4J "
                       f"fails at T = {T:g} s; use T < {limit:.6g} s or a smaller K or B")


def simulate_joint(params: ElastoPlasticParams, T: float, J: float, tau_m: np.ndarray,
                   tau_ext: np.ndarray | None = None, mgl: float = 0.0,
                   q0: float = 0.0, u0: float = 0.0) -> JointRun:
    """Rotor (``mgl`` = 0) or pendulum (gravity torque −mgl·sin q) with elasto-plastic friction.

    J·q̈ = τ_m + τ_e − f, with τ_e = ``tau_ext`` − mgl·sin q (BAM's sign
    convention), integrated by semi-implicit Euler at fixed step T; f from
    :func:`ep_step` with the current velocity, as in Algorithm 1.
    """
    params.validate(T)
    check_coupling(params, T, J)
    tau_m = np.ascontiguousarray(tau_m, dtype=np.float64)
    ext = np.zeros_like(tau_m) if tau_ext is None else np.ascontiguousarray(tau_ext, np.float64)
    if tau_m.ndim != 1 or ext.shape != tau_m.shape:
        raise BamError(f"tau_m and tau_ext must be 1-D and of one length, not {tau_m.shape} "
                       f"and {ext.shape}")
    out = _joint_kernel(params.form, params.vector(), float(J), float(T), tau_m, ext,
                        float(mgl), float(q0), float(u0))
    return JointRun(T * np.arange(len(tau_m)), out[:, 0], out[:, 1], out[:, 2], out[:, 3],
                    out[:, 4], out[:, 5] > 0.5)


# Section V-B. The joint inertia is not given; Fig. 10 (no integral term) gives
# it: at t = 0 the step of 90° with k_p = 20 s⁻² asks 5.8 N·m, so
# M = 5.8/(20·π/2) ≈ 0.185 kg·m² (no gravity on the wrist joint is assumed).
PAPER_INERTIA = 0.185
PAPER_KP, PAPER_KV, PAPER_LAMBDA = 50.0, 14.0, 1.0
PAPER_GOAL = math.pi / 2.0
PAPER_STEP = 1.0e-3
# Long enough for several stick-slip cycles of the Stribeck and rational forms
# (the paper does not give the length of Fig. 13).
PAPER_DURATION = 150.0


@nb.njit(cache=True)
def _integral_kernel(form: int, p: np.ndarray, M: float, T: float, n: int, kp: float,
                     kv: float, lam: float, goal: float) -> np.ndarray:
    """Rows (q, u, τ_r, τ_p, f, sliding): posture PD (50) with integral term (51)."""
    out = np.empty((n, 6))
    q, u, e, integral = 0.0, 0.0, 0.0, 0.0
    Z = compliance(p[EP_K], p[EP_B], T)
    for k in range(n):
        qdd_r = kp * (goal - q) - kv * u        # (50), q̇_d = q̈_d = 0
        integral += qdd_r * T
        tau_p = lam * M * (integral - u)        # (51), K_I = λM
        tau_r = M * qdd_r + tau_p               # computed torque + compensation
        F_S, _ = friction_levels(form, p, tau_r, 0.0)
        sliding = abs(hypothetical_velocity(u, e, Z, p[EP_K])) > Z * F_S
        f, e = ep_step(form, p, T, u, e, tau_r, 0.0)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = q, u, tau_r, tau_p
        out[k, 4], out[k, 5] = f, 1.0 if sliding else 0.0
        u += T * (tau_r - f) / M
        q += T * u
    return out


@dataclass(frozen=True)
class IntegralRun:
    """Section V-B run: joint angle, reference torque τ_r = τ_c + τ_p, friction f."""

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    tau_r: np.ndarray
    tau_p: np.ndarray
    f: np.ndarray
    sliding: np.ndarray


def simulate_integral_compensation(params: ElastoPlasticParams,
                                   duration: float = PAPER_DURATION,
                                   T: float = PAPER_STEP, M: float = PAPER_INERTIA,
                                   kp: float = PAPER_KP, kv: float = PAPER_KV,
                                   lam: float = PAPER_LAMBDA,
                                   goal: float = PAPER_GOAL) -> IntegralRun:
    """The Section V-B experiment: a 0 → 90° step under PD (50) plus integral term (51).

    The joint (inertia M, equal to the controller's model) starts at rest;
    the inverse dynamics of a single joint is τ_c = M·q̈_r, and
    τ_r = τ_c + λM(∫q̈_r dt − q̇) is applied, friction −f subtracted.
    """
    params.validate(T)
    check_coupling(params, T, M)
    n = int(round(_finite("duration", duration, 0.0, True) / T))
    out = _integral_kernel(params.form, params.vector(), float(M), float(T), n, float(kp),
                           float(kv), float(lam), float(goal))
    return IntegralRun(T * np.arange(n), out[:, 0], out[:, 1], out[:, 2], out[:, 3],
                       out[:, 4], out[:, 5] > 0.5)


def plot_integral_compensation(path: str | os.PathLike,
                               duration: float = PAPER_DURATION) -> dict[str, IntegralRun]:
    """Draw the Fig. 13 analogue (angle, reference torque) for the three forms into a PNG.

    Returns the runs that were drawn, keyed by form name.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {FORM_NAMES[form]: simulate_integral_compensation(ElastoPlasticParams.paper(form),
                                                             duration)
            for form in (EP_STRIBECK, EP_RATIONAL, EP_CV)}
    fig, (ax_q, ax_tau) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for name, run in runs.items():
        ax_q.plot(run.t, np.degrees(run.q), lw=1.0, label=name)
        ax_tau.plot(run.t, run.tau_r, lw=1.0, label=name)
    f_s = ElastoPlasticParams.paper().F_S
    ax_q.axhline(math.degrees(PAPER_GOAL), color="k", ls="--", lw=0.8, label="desired")
    for level in (f_s, -f_s):
        ax_tau.axhline(level, color="k", ls=":", lw=0.8)
    ax_tau.set_ylim(-1.6 * f_s, 1.6 * f_s)  # the sawtooth, not the initial step torque
    ax_q.set_ylabel("joint angle [deg]")
    ax_tau.set_ylabel(r"reference torque $\tau_r$ [N·m]")
    ax_tau.set_xlabel("time [s]")
    ax_q.legend(loc="lower right")
    ax_q.set_title(r"PD + integral term (51), $\lambda$ = 1 s$^{-1}$, $\pm F_S$ dotted")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return runs
