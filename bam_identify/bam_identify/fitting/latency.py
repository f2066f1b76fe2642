"""The command latencies a fitted model is consistent with: the range to randomize over.

A fit that frees ``latency.command`` (``fit --groups latency``) finds one value,
but the data rarely pin a delay to the millisecond: near the optimum the error
is flat. :func:`latency_range` profiles the training error along L_c, every
other parameter held at the fit, and reports the interval around the optimum
where the error stays within a relative rise (5 % by default) of the best. A
policy trained in simulation should see every delay of that interval (domain
randomization); the bench only sees L_c + L_r (:mod:`bam_sim.bench.rollouts`),
so the interval bounds the total delay of the link.
"""

from __future__ import annotations

import numpy as np

NAME = "latency.command"
DEFAULT_RISE = 0.05
DEFAULT_POINTS = 201


def latency_range(objective, values: dict[str, float], rise: float = DEFAULT_RISE,
                  points: int = DEFAULT_POINTS) -> dict[str, float] | None:
    """{identified, low, high, rise, reading} (s) of a fit that freed L_c, else None.

    ``objective`` is the fit's :class:`bam_identify.fitting.fit.Objective` on the
    training logs; ``values`` the fitted parameters.
    """
    bounds = objective.space.bounds.get(NAME)
    if bounds is None:
        return None
    grid = np.union1d(np.linspace(bounds[0], bounds[1], points), [values[NAME]])
    scores = objective([{**values, NAME: float(delay)} for delay in grid])
    best = int(np.argmin(scores))
    inside = scores <= scores[best] * (1.0 + rise)
    low = high = best
    while low > 0 and inside[low - 1]:
        low -= 1
    while high < grid.size - 1 and inside[high + 1]:
        high += 1
    reading = objective.space.fixed.get("latency.reading", 0.0)
    return {"identified": float(values[NAME]), "low": float(grid[low]),
            "high": float(grid[high]), "rise": rise, "reading": float(reading)}
