"""A stop while the report's figures are drawn: they are abandoned at once, the workers
killed, and the report is written whole without them, saying so."""

from __future__ import annotations

import json
import time

import pytest

from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.figure_pool import WARM_AFTER, FigurePool, FiguresAbandoned
from bam_identify.fitting.report import FIGURES_LEFT_OUT, ModelResult, write_report
from bam_sim.models.files.parameter_file import published

HOURS = 3600.0  # a figure that would hold the stop for an hour if it were waited for


@pytest.fixture
def pool():
    started = FigurePool()
    started.began -= 2 * WARM_AFTER  # as if the fit had run that long
    started.tick()
    yield started
    started.close(at_once=True)


def stopped_after(checks: int):
    """A stop request that comes after ``checks`` looks (none sooner, whatever the load)."""
    seen = []

    def stopped() -> bool:
        seen.append(None)
        return len(seen) > checks
    return stopped


def test_a_stop_while_the_workers_draw_kills_them_instead_of_waiting(pool):
    workers = list(pool.workers)
    started = time.monotonic()
    with pytest.raises(FiguresAbandoned):
        pool.draw({"slow": (time.sleep, (HOURS,)), "other": (time.sleep, (HOURS,))},
                  stopped_after(3))
    assert time.monotonic() - started < 60.0  # not the hour of the figure
    assert pool.workers == []
    assert all(w.returncode is not None and w.returncode < 0 for w in workers)


def test_a_stop_before_inline_figures_draws_none():
    drawn = []
    with pytest.raises(FiguresAbandoned):
        FigurePool(enabled=False).draw({"a": (drawn.append, (1,)), "b": (drawn.append, (2,))},
                                       stopped_after(2))
    assert drawn == [1]


def test_an_interrupted_report_is_whole_without_figures(pool, tmp_path):
    logs = paper_like_set(published("mx64", "m1"), 3, duration=1.0)
    results = [ModelResult(published("mx64", "m1"), 0.01, 0.02, 10, 0.5, tmp_path / "m1.yaml",
                           interrupted=True)]
    provenance = {"actuator": "mx64", "seed": 0, "version": "test", "date": "today"}
    path = write_report(tmp_path / "report", results, logs[:1], logs[1:], [], provenance,
                        pool, stopped=lambda: True)
    summary = json.loads((path.parent / "summary.json").read_text())
    assert summary["figures"] == {} and summary["figures_left_out"] == FIGURES_LEFT_OUT
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.md", "summary.json"]
    text = path.read_text()
    assert "| m1 (interrupted) |" in text and "figures were left out" in text
    assert text.rstrip().splitlines()[-1].startswith("| ")  # the parameter table, to the end
    assert pool.workers == []
