"""Parameter files: ROS 2 YAML round trip, legacy JSON, published sets, bad input."""

from __future__ import annotations

import json

import pytest
import yaml
from bam_sim_cases import ACTUATORS, MODELS

from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import dump_yaml, load, published_named, save
from bam_sim.models.parameter_set import ParameterSet


@pytest.mark.parametrize("actuator", ACTUATORS)
@pytest.mark.parametrize("model", MODELS)
def test_published_sets_load_with_citation(actuator, model):
    params = published_named(actuator, model)
    assert (params.actuator.name, params.model.name) == (actuator, model)
    assert "Extended Friction Models" in params.provenance["citation"]
    assert set(params.model.params) <= set(params.values)


def test_published_values_match_the_paper_table():
    # Spot checks against reference/identified-parameters.md.
    assert published_named("mx64", "m4").values["load_friction_stribeck"] == 0.23429
    assert published_named("erob80_100", "m6").values["R"] == 2.0  # no R listed -> 2.0 Ω
    assert published_named("erob80_50", "m3").values["current_limit"] == 12.0


def test_yaml_round_trip_is_a_ros_parameter_file(tmp_path):
    params = published_named("mx106", "m5").replace(q_offset=-0.012)
    params = ParameterSet.build(params.actuator, params.model, params.values,
                                {"seed": 7, "logs": ["a.mcap", "b.mcap"], "mae": 0.0123})
    path = save(params, tmp_path / "p.yaml")
    doc = yaml.safe_load(path.read_text())
    assert doc["/**"]["ros__parameters"]["model"] == "m5"
    back = load(path)
    assert back.values == params.values
    assert back.provenance == {"seed": 7, "logs": ["a.mcap", "b.mcap"], "mae": 0.0123}


def test_save_never_overwrites_without_permission(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("precious")
    with pytest.raises(BamError, match="already exists.*--force"):
        save(published_named("mx64", "m1"), path)
    assert path.read_text() == "precious"
    save(published_named("mx64", "m1"), path, overwrite=True)
    assert load(path).model.name == "m1"
    assert [p.name for p in tmp_path.iterdir()] == ["p.yaml"]  # no temporary left


def test_legacy_json_import(tmp_path):
    values = published_named("erob80_100", "m6").values
    legacy = {k: v for k, v in values.items() if k not in ("R", "current_limit", "q_offset")}
    path = tmp_path / "m6.json"
    path.write_text(json.dumps({**legacy, "model": "m6", "actuator": "erob80_100"}))
    params = load(path)
    assert params.values == values
    assert params.provenance["source"] == "legacy BAM JSON"


def _write(tmp_path, body: str, name: str = "p.yaml"):
    path = tmp_path / name
    path.write_text(body)
    return path


def _yaml(**entries) -> str:
    body = {"actuator": "mx64", "model": "m1", "kt": 1.6, "R": 3.9, "armature": 0.012,
            "friction_base": 0.09, "friction_viscous": 0.01}
    body.update(entries)
    body = {k: v for k, v in body.items() if v is not None}
    return yaml.safe_dump({"/**": {"ros__parameters": body}})


@pytest.mark.parametrize(("entries", "message"), [
    ({"actuator": "xl999"}, "unknown actuator 'xl999'"),
    ({"model": "m9"}, "unknown friction model 'm9'"),
    ({"friction_base": None}, "missing parameter friction_base for mx64 m1"),
    ({"friction_viscous": float("nan")},
     "parameter 'friction_viscous' in .* must be a finite number, got nan"),
    ({"frcition_base": 0.1}, "unknown parameter 'frcition_base'; did you mean 'friction_base'"),
    ({"load_friction_base": 0.1}, "'load_friction_base' is not a parameter of model m1"),
    ({"armature": -0.01}, r"parameter 'armature' .* = -0.01 is outside its plausible range \[0, "),
    ({"kt": 1e30}, r"parameter 'kt' .* = 1e\+30 is outside its plausible range \(0, 1000\] N·m/A"),
    ({"kt": "fast"}, "parameter 'kt' .* must be a number"),
    ({"model": None}, "has no 'model' entry"),
])
def test_bad_parameter_files_name_the_field(tmp_path, entries, message):
    with pytest.raises(BamError, match=message):
        load(_write(tmp_path, _yaml(**entries)))


def test_nan_written_as_yaml_nan_is_rejected(tmp_path):
    text = _yaml().replace("kt: 1.6", "kt: .nan")
    with pytest.raises(BamError, match="parameter 'kt' .* must be a finite number, got nan"):
        load(_write(tmp_path, text))


@pytest.mark.parametrize(("body", "message"), [
    ("a: [unclosed", "not valid YAML at line"),
    ("- 1\n- 2\n", "must hold a mapping"),
    ("node:\n  other: 1\n", "no 'ros__parameters' block"),
])
def test_malformed_yaml_is_a_one_line_error(tmp_path, body, message):
    with pytest.raises(BamError, match=message) as info:
        load(_write(tmp_path, body))
    assert "\n" not in str(info.value)


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(BamError, match="does not exist"):
        load(tmp_path / "nope.yaml")
    with pytest.raises(BamError, match="not valid JSON"):
        load(_write(tmp_path, "{kt: 1", "p.json"))
    with pytest.raises(BamError, match='no "actuator" entry'):
        load(_write(tmp_path, '{"model": "m1"}', "q.json"))


def test_dump_is_loadable_text():
    text = dump_yaml(published_named("mx64", "m2"))
    assert text.startswith("# BAM actuator parameters: Dynamixel MX-64, friction model m2")


def test_identification_bounds_lie_inside_the_plausible_ranges():
    from bam_sim.models import parameter_vector as P
    from bam_sim.models.model_registry import FRICTION_MODELS
    from bam_sim.models.parameter_set import identification_bounds
    from bam_sim.models.servo.actuators import ACTUATORS

    for actuator in ACTUATORS.values():
        for model in FRICTION_MODELS.values():
            for name, (low, high) in identification_bounds(actuator, model).items():
                for value in (low, high):
                    P.check_value(name, value, f"bounds of {actuator.name} {model.name}")
