"""Latency identified in a round-trip fit of simulated logs, and the range the report
gives to randomize over."""

from __future__ import annotations

import json

import pytest

from bam_identify.cli import fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.latency import latency_range
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.servo.actuators import get_actuator

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DELAY = 0.012  # s: 2.4 ticks of the 5 ms logs


@pytest.fixture(scope="module")
def delayed_logs():
    truth = published_named("mx64", "m4").replace(**{"latency.command": DELAY})
    return paper_like_set(truth, 12, duration=4.0, seed=3, noise=1e-3)


def test_fit_recovers_the_command_latency(delayed_logs):
    space = SearchSpace.from_names("mx64", "m4", groups=("latency",))
    result = identify(space, delayed_logs, FitSettings(trials=1500, seed=0))
    assert result.values["latency.command"] == pytest.approx(DELAY, rel=0.1)
    delays = latency_range(Objective(space, delayed_logs), result.values)
    # the truth lies in the interval, which is a real interval and not the whole bounds
    assert delays["low"] <= DELAY <= delays["high"]
    assert 0.0 < delays["high"] - delays["low"] < 0.5 * space.bounds["latency.command"][1]
    # a fit without latency cannot explain the delayed logs as well
    plain = identify(SearchSpace.from_names("mx64", "m4"), delayed_logs,
                     FitSettings(trials=1500, seed=0))
    assert plain.train_mae > 1.5 * result.train_mae


def test_fit_command_writes_the_latency_and_its_range(delayed_logs, tmp_path):
    for i, log in enumerate(delayed_logs[:8]):
        write_legacy_log(tmp_path / "logs" / f"{i}.json", log, get_actuator("mx64"),
                         log.meta["trajectory"])
    report = tmp_path / "report"
    assert fit_main(["--logs", str(tmp_path / "logs"), "--models", "m4", "--groups",
                     "latency", "--trials", "600", "--seed", "1", "--quiet", "--output",
                     str(tmp_path / "{model}.yaml"), "--report", str(report)]) == 0
    fitted = load(tmp_path / "m4.yaml")
    low, high = fitted.provenance["latency_range"]
    assert low <= fitted.values["latency.command"] <= high
    summary = json.loads((report / "summary.json").read_text())
    assert summary["models"]["m4"]["latency"]["low"] == low
    text = (report / "report.md").read_text()
    assert "## Latency" in text and f"{1e3 * low:.2f} – {1e3 * high:.2f}" in text
