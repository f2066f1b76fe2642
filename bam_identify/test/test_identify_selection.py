"""``fit --select`` (bam_identify.fitting.selection): the simplest model within one standard
error of the best on the validation logs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import record
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.plan import plan_fit
from bam_identify.fitting.run import fit
from bam_identify.fitting.selection import Candidate, select
from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.servo.actuators import get_actuator


def test_a_richer_model_wins_only_beyond_one_standard_error():
    simple = Candidate("m1", np.array([1.00, 1.10, 0.90, 1.00]))
    noise = Candidate("m6", np.array([0.99, 1.12, 0.88, 0.98]))  # better on average, by less
    assert select([simple, noise]).winner == "m1"
    better = Candidate("m6", np.array([0.50, 0.60, 0.45, 0.52]))  # better on every log
    choice = select([simple, better])
    assert (choice.winner, choice.best) == ("m6", "m6")
    assert "selected m6" in choice.lines()[0]
    assert [row[0] for row in choice.rows] == ["m1", "m6"]


def logs_folder(folder: Path) -> Path:
    """Legacy logs of the published MX-64 M1 set: two setups, three gains (seeded 1 mrad
    noise), so that nothing is held and M6 has every term free."""
    folder.mkdir()
    truth, rng, i = published_named("mx64", "m1"), np.random.default_rng(1), 0
    for bench in (Bench(mass=1.0, length=0.15), Bench(mass=1.5, length=0.2)):
        for kp in (16.0, 32.0, 64.0):
            for trajectory in ("slow_oscillations", "lift_drop"):
                log = record(truth, bench, kp, trajectory, duration=4.0, noise=1e-3, rng=rng)
                write_legacy_log(folder / f"{i:02d}.json", log, get_actuator("mx64"), trajectory)
                i += 1
    return folder


def job(tmp_path: Path, **options) -> FitJob:
    return FitJob(logs=(tmp_path / "logs",), actuator="mx64", quiet=True, select=True,
                  output=str(tmp_path / "out" / "{model}.yaml"), report=tmp_path / "report",
                  **options)


def test_select_needs_validation_logs(tmp_path):
    logs_folder(tmp_path / "logs")
    with pytest.raises(BamError, match="--select chooses on the validation logs"):
        plan_fit(job(tmp_path, validation_fraction=0.0))


@pytest.mark.numerics
def test_on_m1_logs_select_recommends_m1_not_m6(tmp_path):
    logs_folder(tmp_path / "logs")
    outcome = fit(job(tmp_path, models=("m1", "m6"), trials=500, validation_kp=64.0))
    written = load(tmp_path / "out" / "selected.yaml")
    assert written.model.name == "m1", outcome.summary
    assert written.provenance["selected"]["candidates"].keys() == {"m1", "m6"}
    assert "selected m1" in outcome.summary
    assert "## Model selection" in (tmp_path / "report" / "report.md").read_text()
