"""Simulated time of a fixed-rate loop, as exact integer nanoseconds."""

from __future__ import annotations

import math
from fractions import Fraction


class SimTime:
    """Stamps of ticks at ``rate`` Hz from ``start_time`` s: t_k = start + k·10⁹/rate ns.

    Exact integers: the rate is taken as a fraction (denominator ≤ 10⁶), and
    the division rounds half up, so no float error accumulates over a run.
    """

    def __init__(self, rate: float, start_time: float = 0.0) -> None:
        self.rate = float(rate)
        fraction = Fraction(rate).limit_denominator(1_000_000)
        self._num = 2 * 1_000_000_000 * fraction.denominator
        self._den = 2 * fraction.numerator
        self.start_ns = int(round(start_time * 1e9))

    def ns(self, tick: int) -> int:
        return self.start_ns + (tick * self._num + self._den // 2) // self._den

    def ticks(self, seconds: float) -> int:
        """Whole ticks covering ``seconds`` (rounded up; 0 for 0)."""
        return int(math.ceil(seconds * self.rate - 1e-9)) if seconds > 0.0 else 0
