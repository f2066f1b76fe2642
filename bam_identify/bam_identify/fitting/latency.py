"""The command latencies a fitted model is consistent with: the range to randomize over.

A fit that frees ``latency.command`` (``fit --groups latency``) finds one value,
but the data rarely pin a delay to the millisecond: near the optimum the error
is flat. The interval of L_c is the one :mod:`bam_identify.fitting.sensitivity`
gives every identified parameter (the training error profiled along L_c, every
other parameter held at the fit, within a relative rise, 5 % by default, of the
fit's); this module reads it as a delay. A policy trained in simulation should see
every delay of that interval (domain randomization); the bench only sees
L_c + L_r (:mod:`bam_sim.bench.rollouts`), so the interval bounds the total delay of
the link.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bam_identify.fitting.sensitivity import DEFAULT_PERCENT, sensitivity

if TYPE_CHECKING:
    from bam_identify.fitting.objective import Objective
    from bam_identify.fitting.space import SearchSpace

NAME = "latency.command"
DEFAULT_RISE = DEFAULT_PERCENT / 100.0


def latency_range(objective: Objective, values: dict[str, float],
                  rise: float = DEFAULT_RISE) -> dict[str, float] | None:
    """{identified, low, high, rise, reading} (s) of a fit that freed L_c, else None.

    ``objective`` is the fit's :class:`bam_identify.fitting.objective.Objective` on the
    training logs; ``values`` the fitted parameters.
    """
    if NAME not in objective.space.bounds:
        return None
    found = sensitivity(objective, values, 100.0 * rise, names=[NAME])
    return latency_of(found, objective.space)


def latency_of(found: dict, space: SearchSpace) -> dict[str, float] | None:
    """The latency entry of a :func:`~bam_identify.fitting.sensitivity.sensitivity`
    record (None when L_c was not identified)."""
    interval = found["parameters"].get(NAME)
    if interval is None:
        return None
    return {"identified": interval["value"], "low": interval["lower"],
            "high": interval["upper"], "rise": found["percent"] / 100.0,
            "reading": float(space.fixed.get("latency.reading", 0.0))}
