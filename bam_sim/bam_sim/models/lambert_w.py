"""Principal branch W0 of the Lambert W function, in numba, to double precision.

W0(x) is the solution w ≥ −1 of w·eʷ = x, defined for x ≥ −1/e (Corless et
al., "On the Lambert W function", the paper's reference [20]). The elasto-plastic
Stribeck friction of Cisneros et al. needs it on [−1/e, 0) (equations (24)-(27)
of ``reference/chattering-free-stiction.md``), close to the branch point −1/e
when the spring-damper is tuned near the edge of condition (14), so that region
gets its own formulation:

* branch region: with q = 1 + e·x (distance to the branch point, computed
  without cancellation) and p = √(2q), η = 1 + W is a smooth function of p,
  evaluated as a rational function of p to full precision. No iteration there:
  the textbook residual w·eʷ − x loses its precision as w → −1 (Newton and
  Halley divide it by 1 + w), which is what limits most implementations near
  the branch point;
* near zero: the Taylor series of W;
* elsewhere: Fritsch's iteration w ← w(1 + ε) on the logarithmic form
  ln(x/w) − w, which never evaluates eˣ and so cannot overflow for huge x:
  two steps from Winitzki's logarithmic guess for x > 0, one step from the
  branch value on (−0.3, 0).

:func:`lambert_w0_branch` exposes the branch-region formula for callers (the
Stribeck friction) that know q more accurately than ``1 + e·x`` would give it;
it needs one square root and no transcendental function.
"""

from __future__ import annotations

import math

import numba as nb

E = math.e
# 1/e split in two doubles: x + INV_E_HI is exact for x near −1/e (Sterbenz), so
# q = 1 + e·x keeps its relative precision right up to the branch point.
INV_E_HI = 0.36787944117144233
INV_E_LO = -1.2428753672788363e-17
# The double nearest −1/e lies below −1/e by 1.2e-17; it is accepted as the
# branch point (W = −1) rather than refused, since it is what callers write.
BRANCH_POINT = -INV_E_HI

# Below this |x| the Taylor series (to x⁷) is exact to rounding.
SERIES_LIMIT = 1.0e-3
# At or below this x the branch formulation keeps W's *relative* error at the
# rounding level (|W| ≥ 0.48); between it and −SERIES_LIMIT Fritsch takes over.
BRANCH_LIMIT = -0.3

# η(p)/p ≈ N(p)/D(p), a (6, 6) rational in the branch variable p = √(2q) over
# p ∈ [0, √2] (x ∈ [−1/e, 0]). Obtained by Sanathanan-Koerner weighted least
# squares on relative error at 300 Chebyshev nodes, in 60-digit decimal
# arithmetic against η solved to 50 digits; its own error is below 1e-17, so
# what remains is the rounding of the double evaluation. All coefficients are
# positive: Horner's scheme has no cancellation.
_N = (1.0, 1.7368107242707236, 1.0891841910568238, 0.29865257335590073,
      0.03417648914435574, 0.0012322960027307574, 3.1883001389434235e-06)
_D = (1.0, 2.070144057604055, 1.6264544324805181, 0.6041616716758217,
      0.10742010898659235, 0.008108997557588619, 0.0001794363884265479)


@nb.njit(cache=True)
def _series(x: float) -> float:
    """Taylor series W(x) = Σ (−k)^(k−1)/k! xᵏ to k = 7 (|x| < SERIES_LIMIT)."""
    return x * (1.0 + x * (-1.0 + x * (1.5 + x * (-8.0 / 3.0 + x * (
        125.0 / 24.0 + x * (-54.0 / 5.0 + x * (16807.0 / 720.0)))))))


@nb.njit(cache=True)
def _fritsch(x: float, w: float) -> float:
    """One step of Fritsch's iteration (quartic convergence) for w·eʷ = x.

    z = ln(x/w) − w is the relative residual in log form, so neither eʷ nor
    x·w is ever formed and x up to the largest double is safe.
    """
    z = math.log(x / w) - w
    w1 = 1.0 + w
    q = 2.0 * w1 * (w1 + (2.0 / 3.0) * z)
    return w * (1.0 + z / w1 * (q - z) / (q - 2.0 * z))


@nb.njit(cache=True)
def lambert_w0_branch(q: float) -> float:
    """W0(x) given q = 1 + e·x ∈ [0, 1], i.e. x ∈ [−1/e, 0], without transcendentals.

    W0 = η − 1 with η = p·N(p)/D(p), p = √(2q): in the spirit of Fukushima
    (the paper's [21]), a rational function of the branch variable replaces the
    iteration, whose residual w·eʷ − x is ill-conditioned as w → −1. Absolute
    error at the rounding level over the whole interval; the relative error
    grows as W → 0 (x → 0⁻), where :func:`lambert_w0` refines it.
    """
    p = math.sqrt(2.0 * max(q, 0.0))
    num = _N[0] + p * (_N[1] + p * (_N[2] + p * (_N[3] + p * (_N[4] + p * (_N[5] + p * _N[6])))))
    den = _D[0] + p * (_D[1] + p * (_D[2] + p * (_D[3] + p * (_D[4] + p * (_D[5] + p * _D[6])))))
    return p * num / den - 1.0


@nb.njit(cache=True)
def _branch_distance(x: float) -> float:
    """q = 1 + e·x without cancellation near x = −1/e, clamped to ≥ 0."""
    return max(E * ((x + INV_E_HI) + INV_E_LO), 0.0)


@nb.njit(cache=True)
def _positive(x: float) -> float:
    """W0 for x ≥ SERIES_LIMIT: Winitzki's log guess, then two Fritsch steps."""
    if x == math.inf:
        return math.inf
    lx = math.log1p(x)
    w = lx * (1.0 - math.log1p(lx) / (2.0 + lx))
    return _fritsch(x, _fritsch(x, w))


@nb.njit(cache=True)
def lambert_w0(x: float) -> float:
    """Principal branch W0(x) for x ≥ −1/e; NaN below −1/e or for NaN.

    W0(0) = 0 exactly (with the sign of zero kept), W0(−1/e) = −1, and x up to
    the largest finite double is handled without overflow.
    """
    if abs(x) < SERIES_LIMIT:
        return _series(x)
    if x > 0.0:
        return _positive(x)
    if not x >= BRANCH_POINT:  # also catches NaN
        return math.nan
    q = _branch_distance(x)
    if x <= BRANCH_LIMIT:
        return lambert_w0_branch(q)
    # Relative precision matters as W → 0⁻: the branch value (absolute error at
    # the rounding level) starts one Fritsch step, whose quartic convergence
    # restores the relative precision.
    return _fritsch(x, lambert_w0_branch(q))
