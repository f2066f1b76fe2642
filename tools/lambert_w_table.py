"""Generate bam_sim/bam_sim/models/elastoplastic/lambert_w_table.py: W0(ψ)/ψ on
[−e^−LOG_SPAN, 0] by pieces.

G(ψ) = W0(ψ)/ψ (= e^−W0(ψ)) is analytic on the span, which stops short of the
branch point −1/e; it is split into INTERVALS + 1 pieces centred on
ψ_j = −j/SCALE (SCALE = INTERVALS·e^LOG_SPAN rounded to a double), and on each
G(−(j + h)/SCALE) is interpolated by a polynomial of degree DEGREE in
h ∈ [−OVERLAP, OVERLAP] at its Chebyshev points. The overlap beyond ±½ lets a
caller choose the piece from an estimate of ψ a few per cent off.

Everything is computed in 50-digit decimal arithmetic (W0 by Halley's
iteration); the coefficients are then rounded to doubles, and the script
reports the largest relative error of the rounded polynomials against the
decimal W0 on a grid of each piece.

Run: ``python tools/lambert_w_table.py`` (standard library only; ~10 s).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from pathlib import Path

LOG_SPAN = Decimal("1.25")
INTERVALS = 160
DEGREE = 6
OVERLAP = 0.55
OUTPUT = (Path(__file__).resolve().parents[1]
          / "bam_sim/bam_sim/models/elastoplastic/lambert_w_table.py")


def w0(x: Decimal) -> Decimal:
    """W0(x) for x ≥ −1/e to ~45 digits (Halley's iteration)."""
    if x == 0:
        return Decimal(0)
    q = 1 + Decimal(1).exp() * x
    if q < Decimal("0.3"):  # branch-point series as the start
        p = (2 * q).sqrt()
        w = -1 + p - p * p / 3 + Decimal(11) / 72 * p**3
    else:
        w = x * (1 - x) if abs(x) < Decimal("0.1") else (1 + x).ln()
    for _ in range(200):
        ew = w.exp()
        f = w * ew - x
        fp = ew * (w + 1)
        step = f / (fp - f * ew * (w + 2) / (2 * fp))
        w -= step
        if abs(step) <= abs(w) * Decimal("1e-46"):
            break
    return w


def ratio(psi: Decimal) -> Decimal:
    """G(ψ) = W0(ψ)/ψ, 1 at ψ = 0."""
    return Decimal(1) if psi == 0 else w0(psi) / psi


def solve(matrix: list[list[Decimal]], rhs: list[Decimal]) -> list[Decimal]:
    """Gaussian elimination with partial pivoting (small dense systems)."""
    n = len(rhs)
    rows = [row[:] + [b] for row, b in zip(matrix, rhs, strict=True)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(rows[r][i]))
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(i + 1, n):
            f = rows[r][i] / rows[i][i]
            for c in range(i, n + 1):
                rows[r][c] -= f * rows[i][c]
    x = [Decimal(0)] * n
    for i in reversed(range(n)):
        x[i] = (rows[i][n] - sum(rows[i][c] * x[c] for c in range(i + 1, n))) / rows[i][i]
    return x


def horner(coefficients: list[Decimal], h: Decimal) -> Decimal:
    value = Decimal(0)
    for c in reversed(coefficients):
        value = value * h + c
    return value


def piece(j: int, scale: Decimal) -> tuple[list[float], float]:
    """Coefficients of piece j (rounded to doubles) and their worst relative error."""
    nodes = [Decimal(OVERLAP) * Decimal(math.cos(math.pi * (k + 0.5) / (DEGREE + 1)))
             for k in range(DEGREE + 1)]
    values = [ratio(-(j + h) / scale) for h in nodes]
    vandermonde = [[h**k if k else Decimal(1) for k in range(DEGREE + 1)] for h in nodes]
    rounded = [float(c) for c in solve(vandermonde, values)]
    exact = [Decimal(c) for c in rounded]
    worst = 0.0
    for k in range(-40, 41):
        h = Decimal(OVERLAP) * k / 40
        ref = ratio(-(j + h) / scale)
        worst = max(worst, abs(float(horner(exact, h) / ref - 1)))
    return rounded, worst


def _row(row: list[float]) -> str:
    """One piece as a tuple literal, three coefficients a line."""
    lines = [", ".join(repr(c) for c in row[i:i + 3]) for i in range(0, len(row), 3)]
    return "    (" + ",\n     ".join(lines) + "),"


def main() -> None:
    with localcontext() as ctx:
        ctx.prec = 50
        scale_double = float(INTERVALS * LOG_SPAN.exp())
        scale = Decimal(scale_double)
        rows, worst = [], 0.0
        for j in range(INTERVALS + 1):
            coefficients, error = piece(j, scale)
            rows.append(coefficients)
            worst = max(worst, error)
    body = "\n".join(_row(row) for row in rows)
    OUTPUT.write_text(f'''"""W0(ψ)/ψ on [−e^−{LOG_SPAN}, 0] in pieces (tools/lambert_w_table.py).

Piece j is a polynomial in h, Σ COEFFICIENTS[j][k]·hᵏ, equal to W0(ψ)/ψ at
ψ = −(j + h)/SCALE for |h| ≤ OVERLAP, to {worst:.1e} relative (coefficients
rounded to doubles, against W0 in 50-digit arithmetic). Do not edit: run the
script instead.
"""

LOG_SPAN = {float(LOG_SPAN)!r}
INTERVALS = {INTERVALS}
DEGREE = {DEGREE}
OVERLAP = {OVERLAP!r}
SCALE = {scale_double!r}  # INTERVALS·e^LOG_SPAN, rounded
COEFFICIENTS = (
{body}
)
''')
    print(f"wrote {OUTPUT} ({INTERVALS + 1} pieces of degree {DEGREE}); "
          f"worst relative error {worst:.2e}")


if __name__ == "__main__":
    main()
