"""How tightly the data hold each identified parameter: the intervals to randomize over.

Near the optimum the training error is flat in some directions: a fitted set is one
point of a region the data cannot tell apart. :func:`sensitivity` profiles the
training error along each identified parameter alone, every other one held at the
fit, and gives the interval around the fitted value where the error stays within
``percent`` % of the fit's (``fit --sensitivity``, 5 by default). One more axis
scales the whole friction budget (every friction magnitude times s, the shape
parameters held): the range of Isaac Lab's friction scale. A policy trained in
simulation should see every value of these intervals (domain randomization);
``export`` writes them for BAM's mjlab actuator and as randomization ranges
(:mod:`bam_sim.models.files.randomization`).

Each side of each axis is scanned from the fitted value to the search bound
(geometrically: ever larger steps), then the first crossing of the threshold
bisected. Every scan point of every axis is ONE population of the fit's
:class:`~bam_identify.fitting.objective.Objective` (the batched rollouts of
:func:`bam_sim.bench.rollouts.batch_errors`, as ``batch_mae``), and so is each
bisection step of all crossings at once. The error is the fit's own score: the
position MAE, plus the weighted temperature or voltage MAE where the fit scored them.
An end that reaches its bound without crossing is flagged ``clamped``, as BAM's
``bam.sensitivity`` does (Rhoban/bam, branch 4traj_xl330, commit 25faf46).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bam_sim.bench.bench_log import BenchLog

if TYPE_CHECKING:
    from bam_identify.fitting.objective import Objective

DEFAULT_PERCENT = 5.0
# Scan points per side, at 2^-15, 2^-14, ..., 1 of the way from the fitted value to the
# bound: a narrow interval is found as surely as a wide one, and the crossing's bracket
# is at most as wide as the distance to it.
SCAN = 16
BISECT = 12  # bisection steps per crossing: the end to 2^-12 of its distance to the fit
# The key of the friction-scale axis (not a parameter: every friction magnitude times s).
FRICTION_SCALE = "friction_scale"
# Friction magnitudes of M1..M6 scaled by it; dtheta_stribeck and alpha are shapes.
_FRICTION_PREFIXES = ("friction_", "load_friction_")


@dataclass(frozen=True)
class Axis:
    """One direction profiled: its value at the fit, its bounds, its candidate at x."""

    name: str
    value: float
    bounds: tuple[float, float]
    move: Callable[[float], dict[str, float]]


def parameter_axes(objective: Objective, values: dict[str, float],
                   names: list[str] | None = None) -> list[Axis]:
    """One axis per identified parameter (or per name of ``names``)."""
    bounds = objective.space.bounds
    return [Axis(name, float(values[name]), bounds[name], _mover(values, name))
            for name in (names if names is not None else list(bounds))]


def _mover(values: dict[str, float], name: str) -> Callable[[float], dict[str, float]]:
    return lambda x: {**values, name: float(x)}


def friction_scale_axis(objective: Objective, values: dict[str, float]) -> Axis | None:
    """The whole friction budget times s (s = 1 at the fit), within every bound; None
    when no friction magnitude is identified and nonzero."""
    bounds = objective.space.bounds
    # A robot's names are type/parameter: every type's friction scales together.
    scaled = [n for n in bounds if n.rpartition("/")[2].startswith(_FRICTION_PREFIXES)
              and values[n] > 0.0]
    if not scaled:
        return None
    high = min(bounds[n][1] / values[n] for n in scaled)
    low = max(max(bounds[n][0], 0.0) / values[n] for n in scaled)

    def move(s: float) -> dict[str, float]:
        return {**values, **{n: float(values[n] * s) for n in scaled}}

    return Axis(FRICTION_SCALE, 1.0, (min(low, 1.0), max(high, 1.0)), move)


def sensitivity(objective: Objective, values: dict[str, float],
                percent: float = DEFAULT_PERCENT, names: list[str] | None = None,
                logs: list[BenchLog] | None = None) -> dict:
    """{percent, base_mae, threshold_mae, parameters: {name: interval}, friction_scale,
    supply_voltage} of a fitted set (``names``: those parameters only, no friction scale;
    friction_scale and supply_voltage are left out where there is none).

    An interval is {value, lower, upper, lower_clamped, upper_clamped}, in the layout of
    BAM's ``*_sensitivity.json``. ``supply_voltage``: [lowest, highest] supply of the
    training ``logs`` (V; None without logs or a recorded supply), the vin range.
    """
    base = float(objective(objective.space.population_of([values]))[0])
    threshold = base * (1.0 + percent / 100.0)
    axes = parameter_axes(objective, values, names)
    scale = friction_scale_axis(objective, values) if names is None else None
    found = profile(objective, axes + ([scale] if scale else []), threshold)
    record = {"percent": float(percent), "base_mae": base, "threshold_mae": threshold,
              "parameters": {a.name: found[a.name] for a in axes},
              FRICTION_SCALE: found.get(FRICTION_SCALE),
              "supply_voltage": supply_range(logs or [])}
    return {k: v for k, v in record.items() if v is not None}  # a parameter file has no null


def profile(objective: Objective, axes: list[Axis], threshold: float) -> dict[str, dict]:
    """The interval of every axis where the score stays at most ``threshold``."""
    ends = [(axis, far) for axis in axes for far in (axis.bounds[0], axis.bounds[1])]
    inside = np.array([axis.value for axis, _ in ends])
    outside = np.array([far for _, far in ends])
    steps = 2.0 ** -np.arange(SCAN - 1, -1, -1)
    grid = inside[:, None] + (outside - inside)[:, None] * steps[None, :]
    scores = _scores(objective, ends, grid).reshape(grid.shape)
    crossed = ~(scores <= threshold)  # NaN and infeasible are outside
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    for i, k in enumerate(first):
        if k < 0:  # never crossed: the interval reaches the bound
            inside[i] = outside[i]
        else:
            inside[i], outside[i] = (grid[i, k - 1] if k > 0 else inside[i]), grid[i, k]
    bracketed = np.flatnonzero(first >= 0)
    for _ in range(BISECT if bracketed.size else 0):
        middle = 0.5 * (inside[bracketed] + outside[bracketed])
        ok = _scores(objective, [ends[i] for i in bracketed], middle[:, None]) <= threshold
        inside[bracketed[ok]] = middle[ok]
        outside[bracketed[~ok]] = middle[~ok]
    return {axis.name: _interval(axis, inside[2 * j], inside[2 * j + 1],
                                 first[2 * j] < 0, first[2 * j + 1] < 0)
            for j, axis in enumerate(axes)}


def _scores(objective: Objective, ends: list, points: np.ndarray) -> np.ndarray:
    """The score of every point (row i along end i), in one batched population."""
    candidates = [axis.move(x) for (axis, _), row in zip(ends, points, strict=True)
                  for x in row]
    return np.asarray(objective(objective.space.population_of(candidates)), dtype=float)


def _interval(axis: Axis, lower: float, upper: float, lower_clamped: bool,
              upper_clamped: bool) -> dict:
    return {"value": axis.value, "lower": float(lower), "upper": float(upper),
            "lower_clamped": bool(lower_clamped), "upper_clamped": bool(upper_clamped)}


def supply_range(logs: list[BenchLog]) -> list[float] | None:
    """[lowest, highest] supply voltage the logs ran at (V), None where none recorded it."""
    supplies = [float(log.supply_voltage) for log in logs if log.supply_voltage is not None]
    return [min(supplies), max(supplies)] if supplies else None
