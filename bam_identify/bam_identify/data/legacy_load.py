"""The ``load`` of a legacy Dynamixel log: what its recorder wrote, as a signed fraction.

The published implementation's recorders put a firmware register in each
entry's ``load``, and which one depends on the servo:

* MX-64, MX-106 (protocol 1.0): Present Load, 0.1 % of the maximum torque per
  count, signed (the recorder decodes the direction bit 10), at most 1023
  counts.
* XL330 (protocol 2.0): Present PWM, the duty the firmware applies, 885
  counts = full duty (its PWM Limit), stored as the unsigned 16-bit register
  (two's complement: 65535 is -1). The published XL330 logs show it: their
  ``load`` equals 885·kp·duty_gain·(goal − position) with a slope of 1.00
  wherever the torque is on, which no 0.1 %-of-torque reading would do. The
  authors' later recorder writes the same duty already divided by 885
  (|load| ≤ 1), which is read as it is.

A processed log was resampled from the unsigned register, so a sample where
the duty crosses zero may be a blend of 65535 and 0: a value no register
holds once the sign is decoded. Those lone samples are rebuilt from their
neighbours; a log with many of them is not this register and is refused.

Other actuators' logs carry no ``load`` of a known unit: it is not read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bam_identify.data.plausibility import Source

# A processed log holds one blend per zero crossing of the duty: a few in a thousand
# samples. Beyond this share the column is not the register the actuator names.
MAX_BLENDED = 0.02


@dataclass(frozen=True)
class LoadUnit:
    """The register a recorder wrote in ``load`` for one actuator, and its scale."""

    meaning: str  # what the fraction is, for the log's meta and the report
    full_scale: float  # counts of a fraction of 1
    limit: float  # the largest magnitude the register holds, counts
    wrap: int = 0  # 2**16 where the unsigned 16-bit register was stored, else 0


_MX_LOAD = LoadUnit("present load, fraction of the maximum torque (Present Load, "
                    "0.1 % per count)", 1000.0, 1023.0)
LOAD_UNITS: dict[str, LoadUnit] = {
    "mx64": _MX_LOAD,
    "mx106": _MX_LOAD,
    "xl330": LoadUnit("applied PWM duty (Present PWM, 885 counts = full duty)", 885.0,
                      885.0, 1 << 16),
}


def load_fraction(counts: np.ndarray, unit: LoadUnit, source: Source,
                  at: Callable[[int], str]) -> np.ndarray:
    """``counts`` (one per entry) as a signed fraction of ``unit``'s full scale; ``at(k)``
    names entry k in an error."""
    values = np.asarray(counts, dtype=np.float64)
    if np.all(np.abs(values) <= 1.0) and np.any(values != np.round(values)):
        return values  # already a fraction: the later recorders divide by the full scale
    if unit.wrap:
        values = np.where(values >= unit.wrap // 2, values - unit.wrap, values)
    held = np.abs(values) <= unit.limit
    blended = np.flatnonzero(~held)
    if blended.size > MAX_BLENDED * values.size or blended.size == values.size:
        k = int(blended[0])
        raise source.fail(f"'load' is {counts[k]:g} at {at(k)}, and {blended.size} of "
                          f"{values.size} entries lie outside the register's ±{unit.limit:g} "
                          f"counts ({unit.meaning})",
                          "give that register in 'load', or drop the field")
    if blended.size:  # lone zero-crossing blends of a resampled unsigned register
        index = np.arange(values.size)
        values[blended] = np.interp(blended, index[held], values[held])
    return values / unit.full_scale


def load_counts(fraction: np.ndarray, unit: LoadUnit) -> np.ndarray:
    """The signed register counts of ``fraction`` (what :func:`load_fraction` reads back)."""
    return np.asarray(fraction, dtype=np.float64) * unit.full_scale
