"""Resampling of recorded series onto the fixed time step of a bench log.

Recordings (bags, raw JSON logs) hold samples at irregular times; a
:class:`~bam_sim.bench.bench_log.BenchLog` holds them at t = t_0, t_0 + Δt, ...
Every series is linearly interpolated at those times; the torque enable is
interpolated as 0/1, then thresholded at 0.5 (the processing of the published
implementation). The grid starts at the first sample and ends at the last
grid point not after the last sample, so nothing is extrapolated from the
joint samples.
"""

from __future__ import annotations

import numpy as np


def grid(span: float, dt: float) -> np.ndarray:
    """t = 0, dt, 2·dt, ... up to ``span`` (a grid point within 1e-9·dt of it counts)."""
    count = int(np.floor(span / dt + 1e-9)) + 1
    return np.arange(count) * dt


def grid_ns(span_ns: int, dt_ns: int) -> np.ndarray:
    """The same grid on integer nanoseconds, as seconds: exact where it meets a sample."""
    count = int(span_ns) // int(dt_ns) + 1
    return (np.arange(count, dtype=np.int64) * int(dt_ns)) * 1e-9


def interpolate(at: np.ndarray, times: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of ``values`` sampled at increasing ``times``; held at the ends."""
    return np.interp(at, times, np.asarray(values, dtype=np.float64))


def interpolate_enable(at: np.ndarray, times: np.ndarray, enabled: np.ndarray) -> np.ndarray:
    """Torque enable: interpolated as 0/1, then ``> 0.5``."""
    return interpolate(at, times, np.asarray(enabled, dtype=np.float64)) > 0.5


def hold(at: np.ndarray, times: np.ndarray, values: np.ndarray,
         before: float = np.nan) -> np.ndarray:
    """Zero-order hold: each of ``values`` (k,) acts from its time in increasing ``times`` (k,)
    until the next; at ``at`` (T,); ``before`` ahead of the first."""
    k = np.searchsorted(times, at, side="right") - 1
    return np.where(k >= 0, np.asarray(values)[np.maximum(k, 0)], before)
