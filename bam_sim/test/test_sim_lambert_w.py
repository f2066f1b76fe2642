"""Lambert W0 against a 50-digit reference, scipy, its defining identity and special values;
its table region (W0(x)/x in pieces) against the reference, piece by piece."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from bam_sim.models.elastoplastic import lambert_w_table as table
from bam_sim.models.elastoplastic.lambert_w import (
    BRANCH_POINT,
    SERIES_LIMIT,
    TABLE_LIMIT,
    TABLE_SCALE,
    lambert_w0,
    lambert_w0_branch,
    lambert_w0_ratio,
    lambert_w0_ratio_near,
)

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

REL = 1.0e-14
EM1 = -math.exp(-1.0)  # the double nearest −1/e (just below it)


def reference(x: float | Decimal) -> Decimal:
    """W0(x) by Halley's iteration in 50-digit decimal arithmetic (x exact as given)."""
    with localcontext() as ctx:
        ctx.prec = 50
        X = Decimal(x)
        if X == 0:
            return Decimal(0)
        q = 1 + Decimal(1).exp() * X
        if q <= 0:
            return Decimal(-1)
        if q < Decimal("0.5"):  # branch-point series as the start
            p = (2 * q).sqrt()
            w = -1 + p - p * p / 3 + Decimal(11) / 72 * p**3
        elif X < 3:
            w = (1 + X).ln() * Decimal("0.6") if X > 0 else X
        else:
            w = X.ln() - X.ln().ln()
        for _ in range(200):
            ew = w.exp()
            f = w * ew - X
            fp = ew * (w + 1)
            step = f / (fp - f * ew * (w + 2) / (2 * fp))
            w -= step
            if abs(step) <= abs(w) * Decimal("1e-45"):
                break
        return +w


def grid() -> list[float]:
    """Log grids over [−1/e, 0) (by distance to −1/e and to 0) and (0, 1e300]."""
    near_branch = [EM1 + d for d in np.logspace(-16, math.log10(0.36), 120)]
    negative = list(-np.logspace(-300, math.log10(0.3678), 120))
    positive = list(np.logspace(-300, 300, 240))
    return [float(x) for x in near_branch + negative + positive if x >= EM1]


def test_special_values() -> None:
    assert lambert_w0(0.0) == 0.0
    assert math.copysign(1.0, lambert_w0(-0.0)) == -1.0
    assert lambert_w0(EM1) == -1.0
    assert lambert_w0(BRANCH_POINT) == -1.0
    assert lambert_w0(1.0) == pytest.approx(0.5671432904097838, rel=2e-16)
    assert lambert_w0(math.e) == pytest.approx(1.0, rel=2e-16)
    assert lambert_w0(math.inf) == math.inf
    assert math.isnan(lambert_w0(math.nan))
    assert math.isnan(lambert_w0(math.nextafter(EM1, -1.0)))
    assert math.isnan(lambert_w0(-1.0))


def test_against_decimal_reference() -> None:
    worst = 0.0
    for x in grid():
        ref = reference(x)
        if ref != 0:
            worst = max(worst, abs(float((Decimal(lambert_w0(x)) - ref) / ref)))
    assert worst <= REL


def test_against_scipy() -> None:
    """scipy's iteration loses digits within ~1e-4 of −1/e (its residual is ill-conditioned
    there), so that strip is left to the decimal reference."""
    special = pytest.importorskip("scipy.special")
    xs = np.array([x for x in grid() if x > EM1 + 1e-4])
    ours = np.array([lambert_w0(x) for x in xs])
    theirs = special.lambertw(xs).real
    nonzero = theirs != 0
    assert np.all(np.abs(ours[nonzero] / theirs[nonzero] - 1.0) <= REL)


def test_defining_identity() -> None:
    """w·eʷ = x, in the well-conditioned log form ln w + w = ln x for x > e
    (there eʷ multiplies w's rounding by w)."""
    for x in grid():
        w = lambert_w0(x)
        if x == 0.0:
            assert w == 0.0
        elif x > math.e:
            assert math.log(w) + w == pytest.approx(math.log(x), rel=REL)
        else:
            assert w * math.exp(w) == pytest.approx(x, rel=REL, abs=0.0)


def test_largest_double() -> None:
    x = 1.7976931348623157e308
    w = lambert_w0(x)
    assert math.isfinite(w)
    assert math.log(w) + w == pytest.approx(math.log(x), rel=REL)
    assert w == pytest.approx(float(reference(x)), rel=REL)


def test_subnormal_arguments() -> None:
    for x in (5e-324, -5e-324, 1e-310, -1e-310):
        assert lambert_w0(x) == x


def piece_edges() -> list[float]:
    """The x where the table switches from one piece to the next (h = ±½)."""
    return [-(j + 0.5) / TABLE_SCALE for j in range(table.INTERVALS)]


def test_monotone_across_region_boundaries() -> None:
    """No jumps where the algorithm switches form (branch, table pieces, series, Fritsch)."""
    edges = [TABLE_LIMIT, SERIES_LIMIT, *piece_edges()]
    around = [b + d for b in edges for d in np.linspace(-1e-12, 1e-12, 41)]
    xs = np.unique(np.concatenate([np.linspace(EM1, 3.0, 20001), around]))
    ws = np.array([lambert_w0(x) for x in xs])
    assert np.all(np.diff(ws) >= 0.0)


def test_branch_form_given_distance() -> None:
    """lambert_w0_branch(q) with q = 1 + e·x: absolute error at rounding level on [−1/e, 0]."""
    with localcontext() as ctx:
        ctx.prec = 50
        e = Decimal(1).exp()
        worst = 0.0
        for q in np.concatenate([np.logspace(-30, 0, 200), np.linspace(0.0, 1.0, 201)]):
            x = (Decimal(float(q)) - 1) / e  # exact q, the x it stands for
            worst = max(worst, abs(float(Decimal(lambert_w0_branch(float(q))) - reference(x))))
    assert lambert_w0_branch(0.0) == -1.0
    assert worst <= 1e-15


def test_defining_identity_on_dense_log_grid() -> None:
    """w·eʷ = x to 1e-15 relative, the residual evaluated in 50 digits from the double w.

    Grids log-spaced by distance to −1/e, by distance to 0 on both sides, and
    up to the largest doubles. Beyond x = e the residual is divided by the
    condition number |1 + w| of w ↦ w·eʷ (a relative error δ in w moves
    w·eʷ by (1 + w)·δ): no double w does better there.
    """
    near_branch = [EM1 + d for d in np.logspace(-17, math.log10(0.36), 1500)]
    negative = list(-np.logspace(-300, math.log10(0.3678), 1500))
    positive = list(np.logspace(-300, 308, 3000))
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 50
        for x in (float(v) for v in near_branch + negative + positive):
            if x < EM1:
                continue
            w = Decimal(lambert_w0(x))
            residual = abs((w * w.exp() - Decimal(x)) / Decimal(x))
            worst = max(worst, float(residual / max(Decimal(1), abs(1 + w))))
    assert worst <= 1e-15


def test_table_ratio_against_decimal_reference() -> None:
    """W0(x)/x from the table on a dense grid of its region and at every piece edge."""
    xs = [float(x) for x in np.linspace(TABLE_LIMIT, 0.0, 4001)[1:-1]]
    xs += [e + d for e in piece_edges() for d in (-1e-15, 1e-15)]
    worst = 0.0
    for x in xs:
        ref = reference(x) / Decimal(x)
        worst = max(worst, abs(float(Decimal(lambert_w0_ratio(x)) / ref - 1)))
    assert lambert_w0_ratio(0.0) == 1.0
    assert worst <= 5e-16


@pytest.mark.parametrize("offset", [-0.05, 0.05])
def test_table_piece_chosen_from_an_estimate(offset: float) -> None:
    """A piece chosen from an estimate of x a few per cent off still gives W0(x)/x."""
    worst = 0.0
    for x in np.linspace(TABLE_LIMIT, 0.0, 1601)[1:-1]:
        u = -float(x) * TABLE_SCALE
        estimate = min(max(u + offset, 0.0), float(table.INTERVALS))
        ref = reference(float(x)) / Decimal(float(x))
        worst = max(worst, abs(float(Decimal(lambert_w0_ratio_near(estimate, u)) / ref - 1)))
    assert worst <= 5e-16


def test_table_reads_no_memory_beyond_its_pieces() -> None:
    """An index from a NaN lands in the padding, which gives NaN, not another piece."""
    assert math.isnan(lambert_w0_ratio(math.nan))
    assert math.isnan(lambert_w0_ratio_near(200.0, 200.0))
