"""A servo the project does not ship, identified from its logs with no code: a file."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from bam_identify.cli import fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator_file import actuator_document, load_actuator_file
from bam_sim.models.servo.actuators import get_actuator

NAME = "hobby_sts6v"


@pytest.fixture(scope="module")
def declared(tmp_path_factory):
    """The file of a 6 V STS-like servo with its own bench, and logs of its truth."""
    folder = tmp_path_factory.mktemp("hobby")
    doc = actuator_document(get_actuator("sts3215"))
    doc.update(name=NAME, title="Hobby STS servo (6 V)")
    doc["law"]["supply_voltage"] = 6.0
    doc["bench"] = {"gains": [16.0, 32.0], "masses": [0.2, 0.3], "lengths": [0.12, 0.18]}
    del doc["hardware"]
    path = folder / f"{NAME}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    # The truth: the STS3215's published M1 on this servo (declared in this process too,
    # as the file is read; the fit below declares it itself from the command line).
    truth = ParameterSet.build(load_actuator_file(path), get_model("m1"),
                               published_named("sts3215", "m1").values)
    logs = folder / "logs"
    for i, log in enumerate(paper_like_set(truth, 8, duration=3.0, seed=3)):
        write_legacy_log(logs / f"{i}.json", log, truth.actuator, log.meta["trajectory"])
    return path, logs, truth


def _fresh(code: str, *args, cwd) -> subprocess.CompletedProcess:
    """A new interpreter: nothing declared but what it reads itself."""
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_logs_of_a_declared_servo_need_its_file(declared, tmp_path):
    _, logs, _ = declared
    run = _fresh("import sys; from bam_identify.cli import fit_main; "
                 "sys.exit(fit_main(sys.argv[1:]))", "--logs", logs, "--models", "m1",
                 "--trials", 10, "--output", tmp_path / "m1.yaml", cwd=tmp_path)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert f"unknown actuator '{NAME}'" in last and "--actuator-file" in last
    assert "Traceback" not in run.stderr and not (tmp_path / "m1.yaml").exists()


@pytest.mark.numerics
def test_a_declared_servo_is_fitted_and_its_set_names_its_file(declared, tmp_path):
    path, logs, truth = declared
    out = tmp_path / "sets" / "hobby_m1.yaml"
    code = fit_main([str(a) for a in (
        "--logs", logs, "--actuator-file", path, "--models", "m1", "--trials", 3000,
        "--seed", 1, "--output", out, "--report",
        tmp_path / "report", "--quiet")])
    assert code == 0
    body = yaml.safe_load(out.read_text())["/**"]["ros__parameters"]
    assert body["actuator"] == NAME
    assert (out.parent / body["actuator_file"]).resolve() == path.resolve()
    # A fresh process loads the set from the file alone; the fit found the truth's motor
    # (noise-free logs of 8 x 3 s fix k_t and R to about 1 %; the band is 5 %) on the
    # declared 6 V supply.
    run = _fresh("import sys; from bam_sim.models.files.parameter_file import load; "
                 "p = load(sys.argv[1]); print(p.actuator.supply_voltage, p.values['kt'], "
                 "p.values['R'])", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    supply, kt, resistance = map(float, run.stdout.split())
    assert supply == 6.0
    assert kt == pytest.approx(truth.values["kt"], rel=0.05)
    assert resistance == pytest.approx(truth.values["R"], rel=0.05)
