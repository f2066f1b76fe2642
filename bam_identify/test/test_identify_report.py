"""Identification report: warnings, files, figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bam_identify.data.synthetic import paper_like_set, record
from bam_identify.fitting.report import (
    ModelResult,
    check_report_folder,
    envelope_voltage,
    identifiability_warnings,
    mae_table,
    write_report,
)
from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuators import get_actuator


def test_warnings_for_what_the_data_cannot_identify():
    truth = published_named("mx64", "m4")
    one_setup = [record(truth, Bench(1.0, 0.15), kp, "slow_oscillations", duration=1.0)
                 for kp in (8.0, 8.0)]
    warnings = identifiability_warnings(one_setup, ["m1", "m4"])
    assert any("single mass/length setup" in w and "m4" in w for w in warnings)
    assert any("no torque-off segment" in w for w in warnings)
    assert any("kp=8" in w for w in warnings)
    # One setup warns for every model; the load-dependent terms only for M3..M6.
    first = identifiability_warnings(one_setup, ["m1", "m2"])[0]
    assert "single mass/length setup" in first and "load-dependent" not in first
    varied = paper_like_set(truth, 8, duration=3.0)
    assert identifiability_warnings(varied, ["m4"]) == []


def test_one_setup_names_the_fixed_combinations_and_what_to_record():
    """Real-data identifiability: one mass and length, kt and R through the firmware gain."""
    truth = published_named("xl330", "m4")
    act = get_actuator("xl330")
    one_setup = [record(truth, Bench(0.49, 0.1), kp, "lift_drop", duration=2.0)
                 for kp in (100.0, 200.0)]
    warnings = identifiability_warnings(one_setup, ["m1", "m4"], (), act)
    setup = [w for w in warnings if "single mass/length setup" in w]
    assert len(setup) == 1 and "0.49 kg at 0.1 m" in setup[0]
    assert "another mass or another length" in setup[0] and "m4" in setup[0]
    motor = [w for w in warnings if w.startswith("kt and R are not fixed apart")]
    assert len(motor) == 1
    assert "kt/R" in motor[0] and "kt²/R" in motor[0] and "free swing" in motor[0]
    assert "present current" in motor[0]
    # Two masses: no mass warning; the motor constants still need a free swing and a current.
    two_masses = one_setup + [record(truth, Bench(0.2, 0.1), 100.0, "lift_drop",
                                     duration=2.0)]
    warnings = identifiability_warnings(two_masses, ["m1", "m4"], (), act)
    assert not any("mass/length setup" in w for w in warnings)
    assert any(w.startswith("kt and R are not fixed apart") for w in warnings)
    # The current-law servos (no firmware duty) get no kt/R warning.
    erob = [record(published_named("erob80_100", "m4"), Bench(5.0, 0.5), kp, "lift_drop",
                   duration=2.0) for kp in (10.0, 50.0)]
    assert not any(w.startswith("kt and R") for w in identifiability_warnings(
        erob, ["m1"], (), get_actuator("erob80_100")))


def test_report_files(tmp_path):
    truth = published_named("mx64", "m4")
    logs = paper_like_set(truth, 4, duration=2.0)
    results = [ModelResult(published_named("mx64", m), 0.01 / i, 0.012 / i, 100, 1.5,
                           tmp_path / f"{m}.yaml") for i, m in enumerate(["m1", "m4"], start=1)]
    path = write_report(tmp_path / "report", results, logs[:2], logs[2:], ["beware"],
                        {"actuator": "mx64", "seed": 3, "version": "test", "date": "today"})
    folder = path.parent
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["models"]["m4"]["validation_mae"] == pytest.approx(0.006)
    assert summary["warnings"] == ["beware"]
    assert summary["data"]["validation_logs"] == [log.name for log in logs[:2]]
    text = path.read_text()
    assert "| m4 | 5.000e-03 | 6.000e-03 | 100 |" in text and "- beware" in text
    for figure in ("mae.png", "validation.png", "drive_backdrive.png"):
        assert (folder / figure).read_bytes()[:4] == b"\x89PNG", figure
    assert np.isclose(float(mae_table(results).splitlines()[2].split()[1]), 0.005)


def test_report_folder_is_not_overwritten(tmp_path):
    (tmp_path / "old.md").write_text("keep")
    with pytest.raises(BamError, match="not empty.*--force"):
        check_report_folder(tmp_path, force=False)
    check_report_folder(tmp_path, force=True)
    check_report_folder(tmp_path / "new", force=False)


def test_validation_figure_with_repeated_trajectories(tmp_path):
    """More validation logs than trajectories: the figure still picks one per trajectory."""
    from bam_identify.fitting.report import _pick_logs

    logs = paper_like_set(published_named("mx64", "m1"), 6, duration=1.0, trajectories=("steps",))
    assert [id(log) for log in _pick_logs(logs, 4)] == [id(log) for log in logs[:4]]


def test_report_draws_the_dc_motor_curves_of_motor_sets_only(tmp_path):
    lugre = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01,
             "saturation.torque": 2.0, "lugre.stiffness": 300.0, "lugre.damping": 0.5,
             "lugre.coulomb": 0.1, "lugre.static": 0.2, "lugre.stribeck": 0.3,
             "lugre.viscous": 0.05}
    motor = ParameterSet.from_names("dcmotor", "lugre", lugre)
    logs = paper_like_set(published_named("mx64", "m1"), 2, duration=1.0)
    results = [ModelResult(motor, 0.01, 0.01, 10, 1.0, tmp_path / "lugre.yaml")]
    folder = write_report(tmp_path / "motor", results, [], logs, [], {"actuator": "dcmotor"}
                          ).parent
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["figures"]["dcmotor"] == "dcmotor_curves.png"
    assert (folder / "dcmotor_curves.png").read_bytes()[:4] == b"\x89PNG"
    assert "Stribeck curve (Fig. 6)" in (folder / "report.md").read_text()
    # the envelope is drawn at the controller's v_max, else the supply
    assert envelope_voltage(motor) == motor.actuator.supply_voltage
    plain = [ModelResult(published_named("mx64", "m1"), 0.01, 0.01, 10, 1.0, tmp_path / "m1.yaml")]
    folder = write_report(tmp_path / "plain", plain, [], logs, [], {"actuator": "mx64"}).parent
    assert "dcmotor" not in json.loads((folder / "summary.json").read_text())["figures"]
    assert not (folder / "dcmotor_curves.png").exists()
