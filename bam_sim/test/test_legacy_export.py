"""BAM JSON export (models/legacy.parameters_to_json): read back through the legacy
importer to the same parameters, refused where the format cannot hold a set, and loaded
by the reference implementation itself when its venv is set up."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.files.bam_json import (
    has_counterpart,
    parameters_from_json,
    parameters_to_json,
)
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import BAM_MODELS, EP_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet, identification_bounds
from bam_sim.models.servo.actuators import ACTUATORS

PUBLISHED = sorted(
    Path(__file__).resolve().parents[1].glob("bam_sim/models/files/published/*.yaml"))
EXPORTABLE = [a for a in ACTUATORS if has_counterpart(ACTUATORS[a])]
REFERENCE_PYTHON = Path(__file__).resolve().parents[2] / ".venv-ref" / "bin" / "python"


def _random_set(actuator: str, model: str, seed: int) -> ParameterSet:
    """A set as a fit leaves it: every value drawn inside its bounds, full float digits."""
    rng = np.random.default_rng(seed)
    bounds = identification_bounds(ACTUATORS[actuator], get_model(model))
    values = {n: float(rng.uniform(lo, hi)) for n, (lo, hi) in bounds.items()}
    values["q_offset"] = float(rng.uniform(-0.05, 0.05))
    return ParameterSet.from_names(actuator, model, values)


def _same(a: ParameterSet, b: ParameterSet) -> None:
    assert (a.actuator, a.model) == (b.actuator, b.model)
    assert a.values == b.values  # bit for bit: float repr round-trips exactly


def test_published_files_are_all_covered():
    # M1..M6 of the MX, XL and eRob servos and of the STS3215 at 7.4 V; M1 of the
    # STS3215 at 12 V; M4 and M6 of the ST3025 (Rhoban/bam 27f3fa5).
    assert len(PUBLISHED) == (len(EXPORTABLE) - 2) * len(BAM_MODELS) + 1 + 2
    assert set(ACTUATORS) - set(EXPORTABLE) == {"dcmotor", "xl330_current"}


def test_the_xl330_current_mode_is_not_written_as_bam_xl330i():
    # Same name family, other law (error gain 0.01 A, bus current): refused, not mislabelled.
    with pytest.raises(BamError, match="BAM's xl330i runs another current law.*dcmotor MJCF"):
        parameters_to_json(published_named("xl330_current", "m4"))


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.stem)
def test_published_set_round_trips(path):
    actuator, model = path.stem.rsplit("_", 1)
    params = published_named(actuator, model)
    _same(parameters_from_json(parameters_to_json(params)), params)


@pytest.mark.parametrize("actuator", EXPORTABLE)
@pytest.mark.parametrize("model", BAM_MODELS)
def test_fitted_set_round_trips(actuator, model):
    params = _random_set(actuator, model, BAM_MODELS.index(model))
    _same(parameters_from_json(parameters_to_json(params)), params)


def test_layout_is_flat_with_model_and_actuator():
    doc = json.loads(parameters_to_json(published_named("mx64", "m6")))
    assert (doc["model"], doc["actuator"]) == ("m6", "mx64")
    assert all(isinstance(v, float) for k, v in doc.items()
               if k not in ("model", "actuator", "max_current", "not_applied"))
    # what each reader will not apply: lines of text per reader, a key every reader skips
    assert all(isinstance(line, str) for lines in doc["not_applied"].values() for line in lines)
    assert doc["max_current"] is None  # the MX firmware has no current limit: null
    # the eRob's current limit is a constant of the reference's actuator, not a key
    assert "current_limit" not in json.loads(parameters_to_json(published_named("erob80_50", "m1")))


@pytest.mark.parametrize("model", EP_MODELS + ("lugre",))
def test_other_model_families_are_refused(model):
    params = ParameterSet.from_names("mx64", model, get_model(model).defaults(
        ACTUATORS["mx64"].scales) | {"kt": 1.6, "R": 2.3, "armature": 0.01})
    with pytest.raises(BamError, match=f"model {model} .*fit one of those"):
        parameters_to_json(params)


def test_sts3215_supply_travels_as_vin():
    doc = json.loads(parameters_to_json(published_named("sts3215_12v", "m1")))
    # the reference's registry has one STS3215: the 12 V set names it, with its supply
    assert (doc["actuator"], doc["vin"]) == ("sts3215", 12.0)
    assert json.loads(parameters_to_json(published_named("sts3215", "m1")))["vin"] == 7.4
    doc["vin"] = 9.0
    with pytest.raises(BamError, match=r"no sts3215 at vin = 9.0 V here \(known: 7.4 V and 12 V\)"):
        parameters_from_json(json.dumps(doc))


def test_the_authors_sts3215_files_import_with_the_release_defaults():
    # 7.4 V: the published file has neither error_gain_ratio nor max_velocity; the
    # authors' 12 V file names its actuator sts321512v.
    text = json.dumps({"kt": 1.2, "R": 2.7, "armature": 0.028, "friction_base": 0.05,
                       "friction_viscous": 0.06, "model": "m1", "actuator": "sts3215"})
    params = parameters_from_json(text)
    assert params.values["error_gain_ratio"] == 1.0
    assert params.values["max_velocity"] == pytest.approx(3400 * 2 * np.pi / 4096)
    twelve = parameters_from_json(text.replace('"sts3215"', '"sts321512v"'))
    assert twelve.actuator.name == "sts3215_12v"


def test_dcmotor_actuator_is_refused():
    values = {"motorconst": 0.5, "resistance": 2.0, "armature": 0.01,
              "friction_base": 0.05, "friction_viscous": 0.01}
    with pytest.raises(BamError, match="actuator dcmotor .*MuJoCo dcmotor MJCF"):
        parameters_to_json(ParameterSet.from_names("dcmotor", "m1", values))


def test_dc_motor_groups_are_refused():
    params = published_named("mx64", "m1").replace(**{"thermal.resistance": 5.0,
                                                "thermal.capacitance": 1.0,
                                                "thermal.tempcoef": 0.0039})
    with pytest.raises(BamError, match="group thermal .*without --groups"):
        parameters_to_json(params)


def test_a_current_limit_the_reference_hard_codes_otherwise_is_refused():
    params = published_named("erob80_50", "m1").replace(current_limit=10.0)
    with pytest.raises(BamError, match="current_limit = 10 .*fix it at 12"):
        parameters_to_json(params)


_LOAD = """
import json, sys
from bam.model import load_model
model = load_model(sys.argv[1])
print(json.dumps({"model": model.name, "actuator": model.actuator_name,
                  "values": {n: p.value for n, p in model.get_parameters().items()}}))
"""


@pytest.mark.skipif(not REFERENCE_PYTHON.exists(),
                    reason="reference venv absent (bash benchmarks/setup_reference.sh)")
# The reference venv holds better-actuator-models 1.0.2: the ST3025 came later (upstream
# pull request #12), so its files load on upstream main only.
@pytest.mark.parametrize("actuator", [a for a in EXPORTABLE if a != "st3025"])
def test_reference_load_model_reads_every_parameter(actuator, tmp_path):
    """bam.model.load_model sets each of its parameters from the file, none left default."""
    for model in BAM_MODELS:
        params = _random_set(actuator, model, 7)
        path = tmp_path / f"{model}.json"
        path.write_text(parameters_to_json(params))
        out = subprocess.run([str(REFERENCE_PYTHON), "-c", _LOAD, str(path)], check=True,
                             capture_output=True, text=True).stdout
        loaded = json.loads(out)
        # the reference's one STS3215 holds the 12 V set too (with "vin")
        named = {"sts3215_12v": "sts3215"}.get(actuator, actuator)
        assert (loaded["model"], loaded["actuator"]) == (model, named)
        expected = {n: v for n, v in params.values.items() if n != "current_limit"}
        assert loaded["values"] == expected
