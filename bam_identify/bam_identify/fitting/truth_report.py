"""The truth beside the fit: for a recording simulated from a known set, how close each
identified parameter came.

A fit of a simulated bench can be scored twice: by its MAE (does it reproduce
the motion) and against the set the bench ran (did it find the servo). The
second tells what the data fix and what trades against another parameter (kt
against R through the firmware gain, for one): a low MAE with a large error on
a parameter is such a trade, not a failure. :func:`append_truth` adds that
section to a fit's report.md and the same numbers to its summary.json.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from bam_identify.fitting.report import ModelResult
from bam_sim.models.files.parameter_file import write_atomic

HEADING = "## Truth of the simulated bench"
# q_offset is identified too, but its truth is 0: an error in % means nothing there.
NOT_COMPARED = ("q_offset",)
# A truth below this share of the parameter's search range is a zero in effect (a
# published 2e-10 where the search spans 0..1): its % error would be noise over nothing.
NEGLIGIBLE = 1.0e-3
Bounds = Mapping[str, tuple[float, float]]


def relative_error(identified: float, truth: float) -> float:
    """Error of ``identified`` in % of ``truth`` (which is non-zero)."""
    return 100.0 * (identified - truth) / truth


def _span(name: str, identified: Mapping[str, Bounds]) -> float:
    return max(hi - lo for bounds in identified.values() if name in bounds
               for lo, hi in (bounds[name],))


def _found(truth: Mapping[str, float], identified: Mapping[str, Bounds]) -> list[str]:
    names = {n for bounds in identified.values() for n in bounds}
    return [n for n in truth if n in names and n not in NOT_COMPARED]


def compared(truth: Mapping[str, float], identified: Mapping[str, Bounds]) -> list[str]:
    """Parameters of the truth some model identified (``identified``: each model's search
    bounds), in the truth's order; truths that are zero in effect left out."""
    return [n for n in _found(truth, identified)
            if abs(truth[n]) > NEGLIGIBLE * _span(n, identified)]


def negligible(truth: Mapping[str, float], identified: Mapping[str, Bounds]) -> list[str]:
    """The identified parameters whose truth is zero in effect (no % error for them)."""
    kept = set(compared(truth, identified))
    return [n for n in _found(truth, identified) if n not in kept]


def errors(truth: Mapping[str, float], results: Sequence[ModelResult],
           identified: Mapping[str, Bounds]) -> dict[str, dict[str, float]]:
    """Per model, the error in % of each parameter it identified that the truth has."""
    names = compared(truth, identified)
    return {r.model: {n: relative_error(r.params.values[n], truth[n]) for n in names
                      if n in identified.get(r.model, ()) and n in r.params.values}
            for r in results}


def truth_markdown(truth: Mapping[str, float], truth_model: str,
                   results: Sequence[ModelResult], identified: Mapping[str, Bounds],
                   settings: Sequence[tuple[str, str]]) -> str:
    """The section: the bench's settings, then truth and identified values with errors."""
    out = ["", HEADING, "",
           f"The bench ran the published {truth_model} set below through the sensor "
           "listed; each cell is the identified value and its error in % of the truth "
           "(blank: the model does not identify it).", "",
           "| setting | value |", "|---|---|"]
    out += [f"| {name} | {value} |" for name, value in settings]
    table = errors(truth, results, identified)
    out += ["", "| parameter | truth | " + " | ".join(r.model for r in results) + " |",
            "|---|---|" + "---|" * len(results)]
    for name in compared(truth, identified):
        cells = [_cell(r.params.values[name], table[r.model][name])
                 if name in table[r.model] else "" for r in results]
        out.append(f"| {name} | {truth[name]:.6g} | " + " | ".join(cells) + " |")
    zero = negligible(truth, identified)
    if zero:
        found = "; ".join(f"{n} (truth {truth[n]:.3g}): " + ", ".join(
            f"{r.model} {r.params.values[n]:.3g}" for r in results
            if n in identified.get(r.model, ())) for n in zero)
        out += ["", f"Zero in effect in the truth (below {100 * NEGLIGIBLE:g} % of the search "
                f"range), so no % error: {found}."]
    return "\n".join(out) + "\n"


def _cell(value: float, error: float) -> str:
    return f"{value:.6g} ({error:+.1f} %)" if math.isfinite(error) else f"{value:.6g}"


def append_truth(report: Path, section: str, record: dict) -> None:
    """Add ``section`` to report.md and ``record`` under "truth" in summary.json."""
    write_atomic(report, report.read_text(encoding="utf-8") + section)
    summary_path = report.parent / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["truth"] = record
    write_atomic(summary_path, json.dumps(summary, indent=2) + "\n")
