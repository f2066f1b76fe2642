"""Timing figures of a node's loop, as the node benchmarks report them (milliseconds).

The nodes record when each tick starts (``record_timing`` / ``timing()`` of
``bam_sim.common.actuator_node.ActuatorNode``: wall start after the deadline wait, and its
lateness to the absolute deadline, both in ns).
"""

from __future__ import annotations

import numpy as np


def percentiles(values_ns: np.ndarray) -> dict[str, float | None]:
    """p50, p99 and max of the absolute values (ns), in ms (None without values)."""
    values = np.abs(np.asarray(values_ns, dtype=np.float64)) / 1e6
    if values.size == 0:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(float(np.percentile(values, 50)), 4),
            "p99": round(float(np.percentile(values, 99)), 4),
            "max": round(float(values.max()), 4)}


def loop_timing(timing: dict, period_ns: float) -> dict[str, dict]:
    """Period error (interval between two tick starts minus ``period_ns``) and lateness to
    the deadlines of the ticks a node recorded (its ``timing()``)."""
    return {"period_error_ms": percentiles(np.diff(timing["start_ns"]) - period_ns),
            "deadline_lateness_ms": percentiles(timing["late_ns"])}
