"""The end of a fit: its report written whole, and what it produced.

:func:`write_fit_report` moves the report into place whole, whatever signal
comes; :func:`conclude` gives the :class:`FitOutcome`, or raises
:class:`~bam_identify.fitting.interrupted.FitInterrupted` (exit status 128 +
signal) when a stop cut a search short, its message naming the files that
were written all the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bam_identify.fitting.figure_pool import FigurePool
from bam_identify.fitting.interrupted import FitInterrupted
from bam_identify.fitting.report import FIGURES_LEFT_OUT, ModelResult, mae_table, write_report
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.command import current, signal_name, stop_requested
from bam_sim.common.output_paths import output_folder


@dataclass(frozen=True)
class FitOutcome:
    """What a fit wrote: one result per model fitted, the report, and its summary (the
    MAE table and the files, as ``fit`` prints it)."""

    results: tuple[ModelResult, ...]
    report: Path | None
    summary: str


def write_fit_report(folder: Path, results: list[ModelResult], validation: list[BenchLog],
                     train: list[BenchLog], warnings: list[str], provenance: dict,
                     pool: FigurePool, force: bool = False) -> Path | None:
    """The report of the models fitted (None when none was), then the workers closed.

    It is written beside ``folder`` and moved into place whole (output_paths): a
    report another fit wrote there meanwhile is kept, and this one says so."""
    try:
        if not results:
            return None
        with output_folder(folder, "--report", force) as where:
            path = write_report(where, results, validation, train, warnings, provenance, pool)
        return Path(folder) / path.name
    finally:
        # After a stop the workers are killed, not waited for: one may still be importing
        # matplotlib for seconds before it reads the end of its input.
        pool.close(at_once=stop_requested(), stopped=stop_requested)


def conclude(results: list[ModelResult], report: Path | None, stopped: bool) -> FitOutcome:
    """The outcome: the MAE table and the files written; FitInterrupted when a signal
    stopped a search."""
    files = "\n".join(f"  {r.model}: {r.output}" for r in results)
    summary = f"{mae_table(results)}\nparameters:\n{files}\nreport: {report}"
    bare = report is not None and _figures_left_out(report)
    if bare:
        summary += f"\n{FIGURES_LEFT_OUT}"
    # A signal that came once every search was done (during the report, written whole)
    # stopped nothing: the summary as usual, and the exit code says a signal came.
    stop = current()
    if stopped or (results and results[-1].interrupted):
        name = signal_name(stop.signum if stop else 0)
        what = "without its figures" if bare else "complete"
        raise FitInterrupted(f"{summary}\nfit interrupted by {name}: only the files above "
                             f"were written (the report {what}, for these models)")
    return FitOutcome(tuple(results), report, summary)


def _figures_left_out(report: Path) -> bool:
    """Whether the report written at ``report`` says a stop left its figures out."""
    try:
        summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "figures_left_out" in summary
