"""Table-driven eˣ in numba for the hot path of the Stribeck Φ_Z, exact to about one ulp.

The Stribeck Φ_Z needs one exponential per call (ψ₊ of eq. (25) in
``reference/chattering-free-stiction.md``) and evaluates W0 from it; libm's
``exp`` is an opaque call whose latency adds to W0's. This one is inlined and
hands out its table value t before the polynomial finishes, so the caller can
start its own table look-up from t while eʳ is still being evaluated.

Method (the classic table reduction, e.g. Tang, ACM TOMS 15(2), 1989):
z = (m·N + j)·ln2/N + r with N = 2^``EXP_TABLE_BITS``, |r| ≤ ln2/(2N), so
eᶻ = 2^m · 2^(j/N) · eʳ. The integer k = m·N + j is read from the bits of
z·N/ln2 + 1.5·2⁵², ln2/N is split in two so k·ln2/N is exact, 2^(j/N) comes
from a table rounded to nearest, and eʳ − 1 is its Taylor polynomial to r⁴
(truncation below 4e-20 relative). The table entries have j·2⁵²/N subtracted
from their bit pattern, so adding k·2⁵²/N to it both scales by 2^m and removes
j: one integer add instead of a shift, a mask and an add.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import numba as nb
import numpy as np

from bam_sim.models.elastoplastic.float_ops import bits_float, float_bits, fma
from bam_sim.models.kernel_inlining import into_rollouts

EXP_TABLE_BITS = 10
_N = 1 << EXP_TABLE_BITS
# Adding this to |y| < 2^51 leaves round(y) in the low bits of the sum.
ROUND_SHIFT = 1.5 * 2.0**52
# Arguments below this are taken as it: e^−700 ≈ 1e−304, where the scaling by
# bit arithmetic is still exact (subnormal results would need another path).
EXP_FLOOR = -700.0


def _constants() -> tuple[float, float, float, np.ndarray]:
    """N/ln2, ln2/N split as hi + lo (hi with 32 significant bits), and the table."""
    with localcontext() as ctx:
        ctx.prec = 40
        ln2 = Decimal(2).ln()
        step = ln2 / _N
        # Keep 32 significant bits so k·hi is exact for |k| < 2^21 (|z| ≤ 700).
        hi_bits = np.array([float(step)]).view(np.int64) & ~np.int64((1 << 21) - 1)
        hi = float(hi_bits.view(np.float64)[0])
        lo = float(step - Decimal(hi))
        inv = float(_N / ln2)
        table = np.array([float((ln2 * j / _N).exp()) for j in range(_N)])
    bits = table.view(np.int64) - (np.arange(_N, dtype=np.int64) << (52 - EXP_TABLE_BITS))
    return inv, hi, lo, bits


EXP_INV_STEP, EXP_STEP_HI, EXP_STEP_LO, _TABLE_BITS = _constants()


@nb.njit(cache=True, inline=into_rollouts)
def exp_split(z: float) -> tuple[float, float]:
    """(t, p) with eᶻ = t·(1 + p): t = 2^(k/N) exactly from the table, |p| < 3.4e-4.

    For EXP_FLOOR ≤ z ≤ 700; z below EXP_FLOOR is taken as EXP_FLOOR; NaN
    gives NaN. t is ready before p (it needs no polynomial).
    """
    if z < EXP_FLOOR:  # (not max(): NaN stays NaN)
        z = EXP_FLOOR
    kd = fma(z, EXP_INV_STEP, ROUND_SHIFT)
    ki = float_bits(kd)
    k = kd - ROUND_SHIFT
    r = fma(-k, EXP_STEP_LO, z - k * EXP_STEP_HI)  # z − k·EXP_STEP_HI is exact
    t = bits_float(_TABLE_BITS[ki & (_N - 1)] + (ki << (52 - EXP_TABLE_BITS)))
    r2 = r * r
    p = fma(r2, fma(r2, 1.0 / 24.0, fma(r, 1.0 / 6.0, 0.5)), r)
    return t, p


@nb.njit(cache=True)
def exp_table(z: float) -> float:
    """eᶻ for EXP_FLOOR ≤ z ≤ 700 (z below EXP_FLOOR is taken as EXP_FLOOR)."""
    t, p = exp_split(z)
    return fma(t, p, t)
