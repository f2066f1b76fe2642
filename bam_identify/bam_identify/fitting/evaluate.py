"""Parameter sets scored on recordings: what ``eval`` prints and writes.

The score of a set is the step-weighted mean absolute position error of its
simulated-control rollouts (recorded control with ``replay``), and for sets
with the thermal group, on logs that recorded it, that of the winding
temperature.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import numpy as np

from bam_identify.fitting.inputs import DataRequest, load_data, read_paths
from bam_identify.fitting.provenance import version
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_output, write_new
from bam_sim.models.files.parameter_file import load


class EvalRequest(DataRequest, Protocol):
    """``eval``'s options: the sets, the data, the rollouts, the scores' file."""

    params: list[Path]
    replay: bool
    json: Path | None
    force: bool


def evaluate(request: EvalRequest, cancel: Cancellation | None = None) -> str:
    """Score every set of ``request`` on its logs: the table (and ``--json`` written).
    ``cancel`` is checked at each log read and before each set is scored."""
    from bam_identify.fitting.objective import Objective
    from bam_identify.fitting.space import SearchSpace

    if request.json:
        inputs = [("--params", p) for p in request.params] + read_paths(request)
        check_output(request.json, "--json", force=request.force, inputs=inputs)
    sets = [(path, load(path)) for path in request.params]
    cancel = cancel or Cancellation()
    dataset = load_data(request, cancel)
    weights = [len(log) for log in dataset.logs]
    scores = {}
    rows = []
    for path, params in sets:
        cancel.check()
        if params.actuator.name != dataset.actuator.name:
            raise BamError(f"{path} is for {params.actuator.name} but the logs are of "
                           f"{dataset.actuator.name}; pass matching --params or --actuator")
        space = SearchSpace.build(params.actuator, params.model, params.values, False)
        objective = Objective(space, dataset.logs, request.replay)
        per_log = objective.per_log({})
        mae = float(np.average(per_log, weights=weights))
        _, temperature = objective.errors({})
        scores[str(path)] = {"model": params.model.name, "mae": mae,
                             "per_log": dict(zip([log.name for log in dataset.logs],
                                                 per_log.tolist(), strict=True))}
        if temperature is not None:
            scores[str(path)]["temperature_mae"] = temperature
        rows.append((f"{str(path):<40} {params.model.name:<6} {mae:>10.3e}", temperature))
        if "population" in params.provenance:  # a type's set of fit --units
            from bam_identify.fitting.population import unit_check

            scores[str(path)]["population"] = unit_check(params, dataset.logs, cancel=cancel)
    lines = _table(rows)
    for path, _ in sets:
        if "population" in scores[str(path)]:
            from bam_identify.fitting.population import check_lines

            lines += [f"{path}:", *check_lines(scores[str(path)]["population"])]
    if request.json:
        summary = {"logs": len(dataset.logs), "actuator": dataset.actuator.name,
                   "replay": request.replay, "scores": scores, "version": version()}
        write_new(request.json, json.dumps(summary, indent=2) + "\n", "--json", request.force)
        lines.append(f"wrote {request.json}")
    return "\n".join(lines)


def _table(rows: list[tuple[str, float | None]]) -> list[str]:
    """The score table; the winding-temperature column only when a set was scored on it."""
    heated = any(t is not None for _, t in rows)
    lines = [f"{'file':<40} {'model':<6} {'MAE [rad]':>10}" + (f" {'MAE [K]':>8}" if heated
                                                               else "")]
    lines += [row + (f" {_kelvin(t):>8}" if heated else "") for row, t in rows]
    return lines


def _kelvin(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"
