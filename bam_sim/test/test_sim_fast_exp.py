"""The table exponential of the Stribeck Φ_Z against 40-digit decimal exponentials."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from bam_sim.models.elastoplastic.fast_exp import EXP_FLOOR, EXP_TABLE_BITS, exp_split, exp_table

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


def grid() -> list[float]:
    """Uniform over the domain, log-spaced towards 0 on both sides, and the ends."""
    xs = np.concatenate([np.linspace(EXP_FLOOR, 700.0, 40001), -np.logspace(-20, 2.8, 3000),
                         np.logspace(-20, 2.8, 3000), [0.0, -0.0, EXP_FLOOR, 700.0]])
    return [float(x) for x in xs]


def test_exp_within_one_ulp() -> None:
    with localcontext() as ctx:
        ctx.prec = 40
        worst = 0.0
        for z in grid():
            ref = Decimal(z).exp()
            err = abs(Decimal(exp_table(z)) - ref) / Decimal(math.ulp(float(ref)))
            worst = max(worst, float(err))
    assert worst <= 1.0


def test_split_gives_a_table_value_and_a_small_remainder() -> None:
    """eᶻ = t·(1 + p): t is 2^(k/N) rounded to nearest, times a power of two;
    |p| ≤ e^(ln2/2N) − 1."""
    n = 1 << EXP_TABLE_BITS
    bound = math.expm1(math.log(2.0) / (2 * n)) * (1 + 1e-12)
    with localcontext() as ctx:
        ctx.prec = 40
        ln2 = Decimal(2).ln()
        for z in np.linspace(-50.0, 50.0, 2001):
            t, p = exp_split(float(z))
            k = round(float(z) * n / math.log(2.0))
            assert t == math.ldexp(float((ln2 * (k % n) / n).exp()), k // n)
            assert abs(p) <= bound


def test_below_the_floor_and_nan() -> None:
    assert exp_table(-1e6) == exp_table(EXP_FLOOR) == math.exp(EXP_FLOOR)
    assert exp_table(-math.inf) == math.exp(EXP_FLOOR)
    assert math.isnan(exp_table(math.nan))
