"""The fit and eval executables end to end: bag -> fit -> parameter files -> eval."""

from __future__ import annotations

import json
import os
import signal

import pytest
import yaml
from identify_cases import run

from bam_identify.cli import eval_main, fit_main, output_paths
from bam_identify.data.bag_writer import BagSession, BagTrial, write_bag
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.models.files.parameter_file import load, published_named, save
from bam_sim.models.servo.actuators import get_actuator


@pytest.fixture(scope="module")
def truth_logs():
    """12 logs recorded under the published MX-64 M4 set (the truth to recover)."""
    return paper_like_set(published_named("mx64", "m4"), 12, arm_mass=0.1, duration=3.0, seed=4)


@pytest.fixture(scope="module")
def bag(truth_logs, tmp_path_factory):
    # One session per bench setup, as a recording publishes a new BenchInfo for each.
    sessions = [BagSession(get_actuator("mx64"), [BagTrial(log, log.meta["trajectory"], log.kp,
                                                           i + 1, 0)])
                for i, log in enumerate(truth_logs)]
    return write_bag(tmp_path_factory.mktemp("bags") / "bench", sessions)



@pytest.mark.numerics  # CI reruns it with numpy's SIMD dispatch off
def test_fit_from_a_bag_recovers_the_truth(bag, tmp_path, capsys):
    out = tmp_path / "m4.yaml"
    code, stdout, _ = run(fit_main, ["--bags", bag, "--models", "m4", "--trials", 6000,
                                     "--seed", 0, "--target-mae", 1e-4, "--output", out,
                                     "--report", tmp_path / "report", "--quiet"], capsys)
    assert code == 0, stdout
    fitted = load(out)
    prov = fitted.provenance
    assert prov["train_mae"] <= 1e-4
    assert prov["validation_mae"] <= 5e-4  # logs it never saw
    # Stratified: one of the three logs of each of the four trajectories is held out.
    assert len(prov["train_logs"]) == 8 and len(prov["validation_logs"]) == 4
    truth = published_named("mx64", "m4").values
    for name in ("kt", "R", "armature"):
        assert fitted.values[name] == pytest.approx(truth[name], rel=0.05), name
    # K_v trades off against the back-EMF k_t²/R on 24 s of data: looser, still bounded.
    assert fitted.values["friction_viscous"] == pytest.approx(truth["friction_viscous"], rel=0.2)
    assert "m4" in stdout and str(out) in stdout
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["models"]["m4"]["validation_mae"] == pytest.approx(prov["validation_mae"])
    # eval scores the written file on the same bag with the same objective.
    code, stdout, _ = run(eval_main, ["--params", out, "--bags", bag, "--json",
                                      tmp_path / "scores.json"], capsys)
    assert code == 0
    scores = json.loads((tmp_path / "scores.json").read_text())["scores"][str(out)]
    assert scores["mae"] <= 5e-4 and len(scores["per_log"]) == 12


def test_eval_scores_yaml_and_legacy_json(truth_logs, tmp_path, capsys):
    folder = tmp_path / "logs"
    for i, log in enumerate(truth_logs[:4]):
        write_legacy_log(folder / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    truth = save(published_named("mx64", "m4"), tmp_path / "truth.yaml")
    legacy = tmp_path / "m1.json"
    legacy.write_text(json.dumps({**published_named("mx64", "m1").values, "model": "m1",
                                  "actuator": "mx64"}))
    code, stdout, _ = run(eval_main, ["--params", truth, legacy, "--logs", folder], capsys)
    assert code == 0
    rows = {line.split()[0]: float(line.split()[-1]) for line in stdout.splitlines()[1:]}
    assert rows[str(truth)] < 1e-9  # the truth reproduces its own recordings
    assert rows[str(legacy)] > 1e-3  # M1 does not


def test_existing_output_is_kept_without_force(bag, tmp_path, capsys):
    out = tmp_path / "m1.yaml"
    out.write_text("precious")
    code, _, err = run(fit_main, ["--bags", bag, "--models", "m1", "--trials", 10,
                                  "--output", out, "--report", tmp_path / "r", "--quiet"], capsys)
    assert code == 2 and "already exists" in err and "--force" in err
    assert err.count("\n") == 1
    assert out.read_text() == "precious" and not (tmp_path / "r").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (["--models", "m1", "--set", "load_friction_base=0.1"],
     "--set load_friction_base: 'load_friction_base' is not a parameter of m1"),
    (["--models", "m1", "--set", "kt=one"], "parameter 'kt' must be a number, got 'one'"),
    (["--models", "m1", "--actuator", "xl999"], "xl999"),
    (["--models", "m1", "--validation-kp", 3.0], "3"),
])
def test_bad_fit_requests_write_nothing(bag, tmp_path, capsys, extra, message):
    code, _, err = run(fit_main, ["--bags", bag, "--trials", 10, "--output",
                                  tmp_path / "p.yaml", "--report", tmp_path / "r", "--quiet",
                                  *extra], capsys)
    assert code == 2, err
    assert message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_corrupt_bag_and_no_data(tmp_path, capsys):
    broken = tmp_path / "broken.mcap"
    broken.write_bytes(b"not a bag at all")
    code, _, err = run(fit_main, ["--bags", broken, "--output", tmp_path / "p.yaml",
                                  "--report", tmp_path / "r", "--quiet"], capsys)
    assert code == 2 and "broken" in err and err.count("\n") == 1
    code, _, err = run(fit_main, ["--output", tmp_path / "p.yaml", "--report", tmp_path / "r",
                                  "--quiet"], capsys)
    assert code == 2 and "no data" in err, err  # not the checkout's out/ (a user's report)


def test_eval_rejects_parameters_of_another_actuator(bag, tmp_path, capsys):
    other = save(published_named("mx106", "m2"), tmp_path / "mx106.yaml")
    code, _, err = run(eval_main, ["--params", other, "--bags", bag], capsys)
    assert code == 2 and "is for mx106 but the logs are of mx64" in err


def test_output_paths_per_model():
    assert output_paths("p.yaml", "mx64", ["m1"]) == {"m1": __import__("pathlib").Path("p.yaml")}
    paths = output_paths("out/p.yaml", "mx64", ["m1", "m4"])
    assert [str(p) for p in paths.values()] == ["out/p_m1.yaml", "out/p_m4.yaml"]
    paths = output_paths("fit/{actuator}_{model}.yaml", "mx64", ["m2"])
    assert str(paths["m2"]) == "fit/mx64_m2.yaml"


def test_written_parameters_are_a_ros_parameter_file(tmp_path):
    path = save(published_named("mx64", "m4"), tmp_path / "p.yaml")
    doc = yaml.safe_load(path.read_text())
    assert set(doc) == {"/**"} and "ros__parameters" in doc["/**"]


def test_fit_job_defaults_are_the_command_line_defaults():
    """The runner builds a FitJob, the command line parses one: same defaults."""
    from pathlib import Path

    from bam_identify.cli import FitJob, fit_parser

    parsed = FitJob.from_args(fit_parser().parse_args(["--bags", "a", "b"]))
    assert parsed == FitJob(bags=(Path("a"), Path("b")))
    args = fit_parser().parse_args(["--logs", "x", "--set", "kt=1", "--set", "R=2",
                                    "--target-mae", "1e-4", "--no-offset"])
    job = FitJob.from_args(args)
    assert job.set == ("kt=1", "R=2") and job.target_mae == 1e-4 and job.no_offset


def test_an_interrupted_fit_never_replaces_a_parameter_file(bag, tmp_path, capsys,
                                                            monkeypatch):
    """Ctrl-C during a fit (a real SIGINT, in its first generation's progress report):
    exit 130, the existing file kept even with --force, the best set found written
    beside it."""
    from bam_identify.fitting import run as fit_run

    def interrupted(space, logs, settings, quiet, identify, check_logs=None, cancel=None):
        def progress(count, best):
            os.kill(os.getpid(), signal.SIGINT)
        return identify(space, logs, settings, progress, check_logs=check_logs, cancel=cancel)

    monkeypatch.setattr(fit_run, "_fit_one", interrupted)
    out = tmp_path / "m1.yaml"
    out.write_text("precious")
    code, stdout, err = run(fit_main, ["--bags", bag, "--models", "m1", "m4", "--trials", 50,
                                       "--output", tmp_path / "{model}.yaml", "--report",
                                       tmp_path / "r", "--quiet", "--force"], capsys)
    assert code == 130, err
    assert out.read_text() == "precious"
    beside = load(tmp_path / "m1.interrupted.yaml")
    assert beside.model.name == "m1" and beside.provenance["interrupted"] is True
    assert not (tmp_path / "m4.yaml").exists()  # the fit stopped before the next model
    assert "m1.interrupted.yaml" in err and f"{out} is kept" in err
