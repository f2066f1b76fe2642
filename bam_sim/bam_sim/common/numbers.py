"""The one number validator: user-written values to finite floats, or a one-line BamError.

Accepts ints, floats (numpy scalars too) and numeric strings: YAML 1.1, which
PyYAML and ROS parameter files follow, reads ``1e-2`` or ``5e-1`` (no decimal
point) as strings, and users write them all the time. Booleans are refused
(``True`` is not a mass). Callers name the value so the message says which
field is wrong and what range it must be in.
"""

from __future__ import annotations

import math
import numbers


def number(value: object, name: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False, text: bool = True) -> float:
    """``value`` as a finite float within [low, high] (open ends on request); else BamError.

    ``text=False`` refuses numeric strings: for values that come from code or
    messages (a command), not from a file a person wrote.
    """
    from bam_sim.common.errors import BamError

    x = None if isinstance(value, str) and not text else _as_float(value)
    if x is None:
        raise BamError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(x):
        raise BamError(f"{name} must be a finite number, got {x}")
    too_low = low is not None and (x <= low if low_open else x < low)
    too_high = high is not None and (x >= high if high_open else x > high)
    if too_low or too_high:
        raise BamError(f"{name} must be {_range_text(low, high, low_open, high_open)}, got {x:g}")
    return x


def finite_non_negative(name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (a rate factor, a timeout)."""
    return number(value, name, low=0.0)


def _as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _range_text(low, high, low_open, high_open) -> str:
    if low is not None and high is not None:
        return (f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}")
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    return f"{'<' if high_open else '<='} {high:g}"
