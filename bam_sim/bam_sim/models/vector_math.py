"""sin, exp, ln and x^α in plain arithmetic, so that a loop over SIMD lanes vectorizes.

numba compiles ``np.sin``, ``np.exp`` and ``**`` to calls into the C library,
one lane at a time: a loop that calls them is not vectorized (numba has no
vector math library here). The functions below use only additions,
multiplications, one division, min/max, selects and bit casts, so the loop
over a population's lanes in :mod:`bam_sim.bench.lanes` becomes packed
vector code. Every kernel of the BAM friction family calls them (the single
rollout, the bench stepper, the batched kernels and the lanes alike), so a
set's trajectory is the same to the last bit whichever runs it.

Accuracy: about one unit in the last place, not the C library's correctly
rounded result; a trajectory moves by a few 1e-15 rad over a log against one
computed with libm (``benchmarks/simd_lanes.py`` measures it). The results are
pure IEEE-754 arithmetic, so they are the same on every x86-64 CPU and vector
width: no fused multiply-add is formed (numba compiles without fastmath).

* sin: Cody-Waite reduction x = k·π/2 + r with π/2 in three parts (k·hi exact
  for |k| < 2²⁰, i.e. |x| < 1.6e6 rad), Taylor polynomials of sin r to r¹⁹ and
  cos r to r¹⁸ on |r| ≤ π/4, the quadrant choosing ±sin r or ±cos r.
* exp: z = k·ln2 + r (ln2 in two parts), |r| ≤ ln2/2, Taylor to r¹³ (Horner),
  times 2^k built in the exponent bits; z is clamped to [−700, 700] (e^−700 ≈
  1e−304 stands for 0: it only ever multiplies a friction term).
* ln: x = 2^e·m with m in [√½, √2), ln m = 2·atanh((m − 1)/(m + 1)) by its
  series to degree 21; for normal x > 0.
* x^α = e^(α·ln x), 0 at x = 0, for x ≥ 0.
"""

from __future__ import annotations

import math

import numba as nb

from bam_sim.models.elastoplastic.float_ops import bits_float, float_bits
from bam_sim.models.kernel_inlining import into_rollouts

_PIO2_HI = 1.5707963267341256  # π/2 = hi + mid + lo; hi has 33 significant bits
_PIO2_MID = 6.077100506506192e-11
_PIO2_LO = 2.0222662487959506e-21
_LN2_HI = 0.6931471803691238  # ln2 = hi + lo; hi has 32 significant bits
_LN2_LO = 1.9082149292705877e-10
_SHIFT = 1.5 * 2.0**52  # x + SHIFT rounds x to an integer held in the low mantissa bits
_SQRT2 = math.sqrt(2.0)
_TINY = 1e-300  # the smallest argument ln is asked for (x^α at 0 is selected apart)


@nb.njit(cache=True, inline=into_rollouts)
def sin(x: float) -> float:
    """sin x for |x| < 1.6e6 (module docstring)."""
    kd = x * (2.0 / math.pi) + _SHIFT
    k = kd - _SHIFT
    r = ((x - k * _PIO2_HI) - k * _PIO2_MID) - k * _PIO2_LO
    r2 = r * r
    s = r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (
        1.0 / 362880.0 + r2 * (-1.0 / 39916800.0 + r2 * (1.0 / 6227020800.0 + r2 * (
            -1.0 / 1307674368000.0 + r2 * (1.0 / 355687428096000.0 + r2 * (
                -1.0 / 121645100408832000.0)))))))))
    c = r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0 + r2 * (
        -1.0 / 3628800.0 + r2 * (1.0 / 479001600.0 + r2 * (-1.0 / 87178291200.0 + r2 * (
            1.0 / 20922789888000.0 + r2 * (-1.0 / 6402373705728000.0)))))))))
    quadrant = float_bits(kd) & 3
    value = r + r * s if (quadrant & 1) == 0 else 1.0 + c
    return -value if quadrant >= 2 else value


@nb.njit(cache=True, inline=into_rollouts)
def exp(z: float) -> float:
    """eᶻ, z clamped to [−700, 700] (module docstring)."""
    z = min(max(z, -700.0), 700.0)
    kd = z * (1.0 / math.log(2.0)) + _SHIFT
    k = kd - _SHIFT
    r = (z - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    for n in (479001600.0, 39916800.0, 3628800.0, 362880.0, 40320.0, 5040.0, 720.0, 120.0,
              24.0, 6.0, 2.0, 1.0, 1.0):
        p = p * r + 1.0 / n
    return p * bits_float((float_bits(kd) - float_bits(_SHIFT) + 1023) << 52)


@nb.njit(cache=True, inline=into_rollouts)
def log(x: float) -> float:
    """ln x for normal x > 0 (module docstring)."""
    bits = float_bits(x)
    e = ((bits >> 52) & 2047) - 1023
    m = bits_float((bits & 0xFFFFFFFFFFFFF) | 0x3FF0000000000000)  # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    t = 1.0 / 21.0
    for n in (19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0):
        t = t * s2 + 1.0 / n
    ln_m = 2.0 * s + 2.0 * s * s2 * t
    return e * _LN2_HI + (e * _LN2_LO + ln_m)


@nb.njit(cache=True, inline=into_rollouts)
def power(x: float, alpha: float) -> float:
    """x^α for x ≥ 0 (0 at x = 0), as e^(α·ln x)."""
    value = exp(alpha * log(max(x, _TINY)))
    return 0.0 if x == 0.0 else value
