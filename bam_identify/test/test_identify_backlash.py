"""The backlash group identified in a round-trip fit of simulated bench logs, written by
the fit, and carried (or listed as lost) by the exports."""

from __future__ import annotations

import json

import pytest

from bam_identify.cli import fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.files.bam_json import parameters_from_json, parameters_to_json
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.servo.actuators import get_actuator
from bam_sim.mujoco_arm.dcmotor_export import losses

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

WIDTH = 0.02  # rad, about 1.1°


@pytest.fixture(scope="module")
def logs():
    truth = published_named("mx64", "m1").replace(**{"backlash.width": WIDTH})
    return paper_like_set(truth, 8, duration=4.0, seed=3, noise=1e-3)


def test_fit_recovers_the_backlash(logs):
    """Everything free: the width within 5 % (measured 0.6 %) at the noise floor, and the
    rigid model cannot explain the logs as well (measured: 1.5 times the error)."""
    result = identify(SearchSpace.from_names("mx64", "m1", groups=("backlash",)), logs,
                      FitSettings(trials=1500, seed=0))
    assert result.values["backlash.width"] == pytest.approx(WIDTH, rel=0.05)
    rigid = identify(SearchSpace.from_names("mx64", "m1"), logs,
                     FitSettings(trials=1500, seed=0))
    assert rigid.train_mae > 1.3 * result.train_mae


def test_fit_command_writes_the_backlash_and_the_exports_carry_it(logs, tmp_path):
    for i, log in enumerate(logs):
        write_legacy_log(tmp_path / "logs" / f"{i}.json", log, get_actuator("mx64"),
                         log.meta["trajectory"])
    assert fit_main(["--logs", str(tmp_path / "logs"), "--models", "m1", "--groups",
                     "backlash", "--trials", "300", "--seed", "1", "--quiet", "--output",
                     str(tmp_path / "{model}.yaml"), "--report", str(tmp_path / "report")]) == 0
    fitted = load(tmp_path / "m1.yaml")  # searched within its bounds (a short search)
    assert fitted.groups == ("backlash",) and 0.0 < fitted.values["backlash.width"] <= 0.05
    text = parameters_to_json(fitted)
    assert parameters_from_json(text).values["backlash.width"] == fitted.values["backlash.width"]
    for reader, lost in json.loads(text)["not_applied"].items():
        assert any(line.startswith("backlash.width") for line in lost), reader
    assert any(line.startswith("backlash.width") for line in losses(fitted))
