"""The one number validator: user-written values to finite floats, or a one-line BamError.

Accepts ints, floats (numpy scalars too) and numeric strings: YAML 1.1, which
PyYAML and ROS parameter files follow, reads ``1e-2`` or ``5e-1`` (no decimal
point) as strings, and users write them all the time. Booleans are refused
(``True`` is not a mass). Callers name the value so the message says which
field is wrong and what range it must be in.

The command-line tools use the same checks through :func:`option`, an argparse
``type=``: a bad value ends the parse with one line naming the option, the
range and the value, before any work.
"""

from __future__ import annotations

import argparse
import math
import numbers
from collections.abc import Callable


def number(value: object, name: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False, text: bool = True) -> float:
    """``value`` as a finite float within [low, high] (open ends on request); else BamError.

    ``text=False`` refuses numeric strings: for values that come from code or
    messages (a command), not from a file a person wrote.
    """
    from bam_sim.common.errors import BamError

    x = None if isinstance(value, str) and not text else _as_float(value)
    problem = _problem(value, x, low, high, low_open, high_open)
    if problem:
        raise BamError(f"{name} {problem}")
    return x


def integer(value: object, name: str, *, low: int | None = None,
            high: int | None = None) -> int:
    """``value`` as an int within [low, high]: a count, a seed, a number of threads.

    A float is taken only when whole (``1e3`` is 1000); ``2.5`` trials is refused.
    """
    from bam_sim.common.errors import BamError

    x = _as_int(value)
    problem = (f"must be a whole number, got {value!r}" if x is None
               else _problem(value, x, low, high, False, False))
    if problem:
        raise BamError(f"{name} {problem}")
    return x


def checked(value: object, name: str, *, whole: bool = False, low: float | None = None,
            high: float | None = None, low_open: bool = False,
            high_open: bool = False) -> float | int:
    """:func:`integer` when ``whole``, else :func:`number`: one range spec (a dict of
    these keywords) serves a value from code and an option's text alike."""
    if whole:
        return integer(value, name, low=_int_or_none(low), high=_int_or_none(high))
    return number(value, name, low=low, high=high, low_open=low_open, high_open=high_open)


def finite_non_negative(name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (a rate factor, a timeout)."""
    return number(value, name, low=0.0)


def option(*, low: float | None = None, high: float | None = None, low_open: bool = False,
           high_open: bool = False, whole: bool = False,
           why: str = "") -> Callable[[str], float | int]:
    """An argparse ``type=`` checking an option's text with :func:`number` (or
    :func:`integer` when ``whole``); argparse prefixes the option's name.

    ``why`` is appended to the message (what the range protects against).
    """
    from bam_sim.common.errors import BamError

    def parse(text: str) -> float | int:
        try:
            return checked(text, "", whole=whole, low=low, high=high, low_open=low_open,
                           high_open=high_open)
        except BamError as exc:
            raise argparse.ArgumentTypeError(f"{str(exc).strip()}{why}") from None

    parse.__name__ = "integer" if whole else "number"  # argparse's fallback message
    return parse


def _problem(value: object, x: float | int | None, low, high, low_open: bool,
             high_open: bool) -> str:
    """What is wrong with ``x`` (parsed from ``value``), or "" when it is in range."""
    if x is None:
        return f"must be a number, got {value!r}"
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 2 ** 53:
        return f"must be at most 2**53 in size, got a number of {len(str(abs(x)))} digits"
    if not math.isfinite(x):
        return f"must be a finite number, got {x}"
    too_low = low is not None and (x <= low if low_open else x < low)
    too_high = high is not None and (x >= high if high_open else x > high)
    if too_low or too_high:
        return f"must be {_range_text(low, high, low_open, high_open)}, got {_fmt(x)}"
    return ""


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


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip(), 10)
        except ValueError:
            pass
    x = _as_float(value)
    if x is not None and math.isfinite(x) and x.is_integer():
        return int(x)
    return None


def _int_or_none(x: float | None) -> int | None:
    return None if x is None else int(x)


def _fmt(x: float | int) -> str:
    """Floats shortest-readable, ints exact (a seed bound of 4294967295, not 4.29e+09)."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def _range_text(low, high, low_open, high_open) -> str:
    if low is not None and high is not None:
        return (f"in {'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}"
                f"{')' if high_open else ']'}")
    if low is not None:
        return f"{'>' if low_open else '>='} {_fmt(low)}"
    return f"{'<' if high_open else '<='} {_fmt(high)}"
