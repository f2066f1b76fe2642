"""The end of a fit: its files, its report, and what it produced.

:func:`save_fit` writes a fitted set (beside an existing file when the fit was
interrupted); :func:`write_fit_report` moves the report into place whole; :func:`conclude`
gives the :class:`FitOutcome`, or raises
:class:`~bam_sim.common.cancellation.Cancelled` when the fit was cancelled,
its message the fit's summary and its files those written all the same.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from bam_identify.fitting.report import FIGURES_LEFT_OUT, ModelResult, mae_table, write_report
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.output_paths import output_folder, write_new
from bam_sim.models.files.parameter_file import dump_yaml
from bam_sim.models.parameter_set import ParameterSet


@dataclass(frozen=True)
class FitOutcome:
    """What a fit wrote: one result per model fitted, the report, and its summary (the
    MAE table and the files, as ``fit`` prints it)."""

    results: tuple[ModelResult, ...]
    report: Path | None
    summary: str


def write_fit_report(folder: Path, results: list[ModelResult], validation: list[BenchLog],
                     train: list[BenchLog], warnings: list[str], provenance: dict,
                     cancel: Cancellation, force: bool = False) -> Path | None:
    """The report of the models fitted (None when none was); once ``cancel`` is requested,
    without the figures not drawn yet.

    It is written beside ``folder`` and moved into place whole (output_paths): a
    report another fit wrote there meanwhile is kept, and this one says so, as it
    says a full disk, naming the parameter files written all the same."""
    if not results:
        return None
    try:
        with output_folder(folder, "--report", force) as where:
            path = write_report(where, results, validation, train, warnings, provenance,
                                cancel)
    except BamError as exc:
        written = ", ".join(str(r.output) for r in results)
        raise BamError(f"{one_line(exc)}; the parameter files are written: {written}") \
            from None
    return Path(folder) / path.name


def conclude(results: list[ModelResult], report: Path | None,
             cancel: Cancellation) -> FitOutcome:
    """The outcome: the MAE table and the files written; Cancelled, with that summary,
    when ``cancel`` was requested at any time of the fit."""
    files = "\n".join(f"  {r.model}: {r.output}" for r in results)
    summary = f"{mae_table(results)}\nparameters:\n{files}\nreport: {report}"
    bare = report is not None and _figures_left_out(report)
    if bare:
        summary += f"\n{FIGURES_LEFT_OUT}"
    if cancel.is_set():
        what = "with figures left out" if bare else "complete"
        written = [r.output for r in results] + ([report] if report is not None else [])
        raise Cancelled(f"{summary}\nfit interrupted: only the files above were written (the "
                        f"report {what}, for these models)", written)
    return FitOutcome(tuple(results), report, summary)


def _figures_left_out(report: Path) -> bool:
    """Whether the report written at ``report`` says a stop left figures out."""
    try:
        summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "figures_left_out" in summary


def save_fit(params: ParameterSet, output: Path, force: bool, interrupted: bool) -> Path:
    """Write a fitted set; an interrupted fit never replaces an existing file, even with
    ``force``: it goes beside it, as ``<name>.interrupted.yaml``."""
    if interrupted and output.exists():
        kept = output
        output = output.with_name(f"{output.stem}.interrupted{output.suffix or '.yaml'}")
        print(f"interrupted: the best {params.model.name} parameters found are in {output}; "
              f"{kept} is kept", file=sys.stderr)
    elif interrupted:
        print(f"interrupted: the best {params.model.name} parameters found are in {output}",
              file=sys.stderr)
    # Through a temporary file, never over a file another command wrote meanwhile.
    text = dump_yaml(params, output.parent.resolve())
    return write_new(output, text, "--output", force=force or interrupted)
