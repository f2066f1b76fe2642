"""The report's figures drawn by worker processes warmed up during the fit."""

from __future__ import annotations

import json
import math
import os

import pytest

from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.figure_pool import WARM_AFTER, FigurePool
from bam_identify.fitting.report import ModelResult, write_report
from bam_sim.models.files.parameter_file import published


@pytest.fixture
def pool():
    started = FigurePool()
    started.began -= 2 * WARM_AFTER  # as if the fit had run that long
    started.tick()
    yield started
    started.close()


def test_a_short_fit_starts_no_worker():
    idle = FigurePool()
    idle.tick()  # well within WARM_AFTER of its creation
    assert idle.workers == []
    assert idle.draw({"root": (math.sqrt, (9.0,))}) == {"root": 3.0}


def test_calls_run_in_the_workers(pool):
    assert len(pool.workers) == 2
    answers = pool.draw({f"pid{i}": (os.getpid, ()) for i in range(4)}
                        | {"root": (math.sqrt, (16.0,))})
    assert answers["root"] == 4.0
    pids = {answers[f"pid{i}"] for i in range(4)}
    assert pids == {w.pid for w in pool.workers} and os.getpid() not in pids


def test_a_failing_figure_raises_its_own_error(pool):
    with pytest.raises(ValueError, match="math domain error"):
        pool.draw({"bad": (math.sqrt, (-1.0,))})


def test_a_dead_worker_leaves_the_figures_to_be_drawn_here(pool):
    for worker in pool.workers:
        worker.kill()
        worker.wait()
    assert pool.draw({"pid": (os.getpid, ())}) == {"pid": os.getpid()}
    assert pool.workers == []


def test_the_report_drawn_by_the_workers_is_the_report(pool, tmp_path):
    truth = published("mx64", "m4")
    logs = paper_like_set(truth, 4, duration=1.0)
    results = [ModelResult(published("mx64", m), 0.01, 0.02, 10, 0.5, tmp_path / f"{m}.yaml")
               for m in ("m1", "m4")]
    provenance = {"actuator": "mx64", "seed": 0, "version": "test", "date": "today"}
    inline = write_report(tmp_path / "inline", results, logs[:2], logs[2:], [], provenance)
    drawn = write_report(tmp_path / "pool", results, logs[:2], logs[2:], [], provenance, pool)
    assert drawn.read_text() == inline.read_text()
    summary = json.loads((drawn.parent / "summary.json").read_text())
    for figure in summary["figures"].values():
        assert (drawn.parent / figure).read_bytes()[:4] == b"\x89PNG", figure
    assert all(w.poll() is None for w in pool.workers)  # still up for the next report
    workers = list(pool.workers)
    pool.close()
    assert pool.workers == [] and all(w.returncode == 0 for w in workers)
