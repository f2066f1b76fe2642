"""A cancellation while the report is written: the figures not drawn yet are left out,
those drawn are kept whole, and the report is written whole, saying so."""

from __future__ import annotations

import json

import pytest

import bam_identify.fitting.report as report
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.report import FIGURES_LEFT_OUT, ModelResult, write_report
from bam_sim.common.cancellation import Cancellation
from bam_sim.models.files.parameter_file import published_named

PROVENANCE = {"actuator": "mx64", "seed": 0, "version": "test", "date": "today"}


@pytest.fixture(scope="module")
def logs():
    return paper_like_set(published_named("mx64", "m1"), 3, duration=1.0)


def _results(tmp_path):
    return [ModelResult(published_named("mx64", "m1"), 0.01, 0.02, 10, 0.5, tmp_path / "m1.yaml",
                        interrupted=True)]


def test_a_cancellation_before_the_report_draws_no_figure(logs, tmp_path):
    cancel = Cancellation()
    cancel.request("test")
    path = write_report(tmp_path / "report", _results(tmp_path), logs[:1], logs[1:], [],
                        PROVENANCE, cancel)
    summary = json.loads((path.parent / "summary.json").read_text())
    assert summary["figures"] == {} and summary["figures_left_out"] == FIGURES_LEFT_OUT
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.md", "summary.json"]
    text = path.read_text()
    assert "| m1 (interrupted) |" in text and "Figures were left out" in text
    assert text.rstrip().splitlines()[-1].startswith("| ")  # the parameter table, to the end


def test_a_cancellation_while_a_figure_is_drawn_keeps_it_and_leaves_out_the_rest(
        logs, tmp_path, monkeypatch):
    cancel = Cancellation()
    real = report._plot_mae

    def cancelled_while_drawn(*args):
        cancel.request("test")  # as a signal would, in the middle of the figure
        return real(*args)

    monkeypatch.setattr(report, "_plot_mae", cancelled_while_drawn)
    path = write_report(tmp_path / "report", _results(tmp_path), logs[:1], logs[1:], [],
                        PROVENANCE, cancel)
    summary = json.loads((path.parent / "summary.json").read_text())
    assert summary["figures"] == {"mae": "mae.png"} and "figures_left_out" in summary
    assert (path.parent / "mae.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in path.parent.iterdir()) == ["mae.png", "report.md",
                                                             "summary.json"]


def test_without_a_cancellation_every_figure_is_drawn(logs, tmp_path):
    path = write_report(tmp_path / "report", _results(tmp_path), logs[:1], logs[1:], [],
                        PROVENANCE)
    summary = json.loads((path.parent / "summary.json").read_text())
    assert set(summary["figures"]) == {"mae", "validation", "diagrams", "friction"}
    assert "figures_left_out" not in summary
