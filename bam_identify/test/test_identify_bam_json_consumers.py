"""BAM JSON as its consumers read it today (issue 25, item 1): Isaac Lab's field contract,
M3/M4 written as their exact M5 for it, the firmware constants, kp and command_delay
through import and export, and one-line refusals of every bad option value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from bam_identify.export_cli import export_main
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import PROTOCOL_TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files import bam_json
from bam_sim.models.files.bam_json import (
    ISAACLAB,
    law_constants,
    parameters_from_json,
    parameters_to_json,
)
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet, identification_bounds
from bam_sim.models.servo.actuator import VOLTAGE
from bam_sim.models.servo.actuators import ACTUATORS

PUBLISHED = sorted(p.stem.rsplit("_", 1) for p in (
    Path(bam_json.__file__).resolve().parent / "published").glob("*.yaml"))

# Isaac Lab's loader, as read in isaac-sim/IsaacLab at commit
# 82c9059eacf0daf4429f12a6e783b409b55b6b02 (the develop-branch loader issue 25 names):
# source/isaaclab/isaaclab/actuators/bam_model.py, BamMotorParams.from_json. It keeps the
# keys that name a field of the dataclass, raises KeyError for a "model" outside its flag
# table and TypeError for a missing field without default; the four flags come from the
# model, so a file must not give them.
ISAACLAB_MODELS = ("m1", "m2", "m5", "m6")
ISAACLAB_REQUIRED = {"kt": float, "R": float, "armature": float, "error_gain": float,
                     "max_pwm": float, "max_current": (float, type(None)), "kp": float,
                     "vin": float, "friction_base": float, "friction_viscous": float}
ISAACLAB_DEFAULTED = ("friction_stribeck", "dtheta_stribeck", "alpha", "load_friction_motor",
                      "load_friction_external", "load_friction_motor_stribeck",
                      "load_friction_external_stribeck", "load_friction_motor_quad",
                      "load_friction_external_quad")
ISAACLAB_FLAGS = ("stribeck", "load_dependent", "directional", "quadratic")
# The friction fields each model's flags switch on (bam_model.py's _BAM_MODEL_FLAGS):
# left at the dataclass default they would be silently wrong, so the contract needs them.
ISAACLAB_MODEL_FIELDS = {
    "m1": (),
    "m2": ISAACLAB_DEFAULTED[:3],
    "m5": ISAACLAB_DEFAULTED[:7],
    "m6": ISAACLAB_DEFAULTED,
}


def isaaclab_contract_problems(doc: dict) -> list[str]:
    """What Isaac Lab's from_json would refuse or silently default in ``doc``."""
    problems = []
    if doc.get("model") not in ISAACLAB_MODELS:
        return [f"model {doc.get('model')!r} is not one of {ISAACLAB_MODELS}"]
    for name in ISAACLAB_REQUIRED | dict.fromkeys(ISAACLAB_MODEL_FIELDS[doc["model"]], float):
        if name not in doc:
            problems.append(f"{name} missing")
    for name, kind in (ISAACLAB_REQUIRED | dict.fromkeys(ISAACLAB_DEFAULTED, float)).items():
        if name in doc and (isinstance(doc[name], bool) or not isinstance(doc[name], kind)):
            problems.append(f"{name} is a {type(doc[name]).__name__}")
    problems += [f"{flag} given by the file" for flag in ISAACLAB_FLAGS if flag in doc]
    return problems


def _isaaclab_runs(actuator: str) -> bool:
    """Isaac Lab's law is the voltage law without the STS firmware's target slew."""
    act = ACTUATORS[actuator]
    return act.family == VOLTAGE and "max_velocity" not in act.motor_bounds


def _random_set(actuator: str, model: str, seed: int, **extra: float) -> ParameterSet:
    rng = np.random.default_rng(seed)
    bounds = identification_bounds(ACTUATORS[actuator], get_model(model))
    values = {n: float(rng.uniform(lo, hi)) for n, (lo, hi) in bounds.items()}
    return ParameterSet.from_names(actuator, model, values | extra)


def run(args: list, capsys) -> tuple[int, str, str]:
    code = export_main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- Isaac Lab's contract -------------------------------------------------------------

@pytest.mark.parametrize(("actuator", "model"), PUBLISHED, ids="_".join)
def test_every_published_set_meets_isaaclabs_contract_or_is_refused(actuator, model):
    params = published_named(actuator, model)
    if not _isaaclab_runs(actuator):
        with pytest.raises(BamError, match="Isaac Lab's BAM actuator .*--for bam") as caught:
            parameters_to_json(params, target=ISAACLAB)
        assert "\n" not in str(caught.value)
        return
    doc = json.loads(parameters_to_json(params, target=ISAACLAB))
    assert isaaclab_contract_problems(doc) == []
    assert doc["model"] == {"m3": "m5", "m4": "m5"}.get(model, model)
    if model in ISAACLAB_MODELS:  # a supported model's plain file is Isaac Lab's too
        plain = json.loads(parameters_to_json(params))
        if "error_gain_ratio" in plain:  # the ST3025's ratio, folded into error_gain
            plain["error_gain"] *= plain.pop("error_gain_ratio")
        # what the readers do not apply differs: BAM keeps error_gain in code
        plain.pop("not_applied"), doc.pop("not_applied")
        assert plain == doc


def test_the_contract_holds_isaaclabs_own_vendored_file():
    # source/isaaclab/isaaclab/actuators/data/bam_xl330_m6.json at the same commit
    assert isaaclab_contract_problems(ISAACLAB_XL330_M6) == []
    assert isaaclab_contract_problems({**ISAACLAB_XL330_M6, "model": "m4"})
    assert isaaclab_contract_problems({**ISAACLAB_XL330_M6, "kp": None})


@pytest.mark.parametrize(("actuator", "model"), PUBLISHED, ids="_".join)
def test_every_plain_export_carries_the_laws_constants(actuator, model):
    doc = json.loads(parameters_to_json(published_named(actuator, model)))
    act = ACTUATORS[actuator]
    for key, value in law_constants(act).items():
        assert doc[key] == value and (value is None or isinstance(doc[key], float))
    params = published_named(actuator, model)
    assert doc["kp"] == act.gains[1]
    assert doc["command_delay"] == params.values.get("latency.command", 0.0)
    assert ("error_gain" in doc) == (act.family == VOLTAGE)


# --- M3 and M4 as their exact M5 ------------------------------------------------------

def _worst_gap(a: ParameterSet, b: ParameterSet) -> float:
    act = a.actuator
    bench = Bench(act.masses[-1], act.lengths[-1])
    gaps = [np.max(np.abs(rollout(a, log).position - rollout(b, log).position))
            for log in (command_log(name, bench, act.gains[1]) for name in PROTOCOL_TRAJECTORIES)]
    return float(max(gaps))


@pytest.mark.parametrize("actuator", [a for a in ACTUATORS if _isaaclab_runs(a)])
@pytest.mark.parametrize("model", ["m3", "m4"])
def test_m3_and_m4_written_for_isaaclab_move_as_the_original(actuator, model):
    shipped = [published_named(actuator, model)] if [actuator, model] in PUBLISHED else []
    for params in [*shipped, _random_set(actuator, model, 3)]:
        written = parameters_from_json(parameters_to_json(params, target=ISAACLAB))
        assert written.model.name == "m5"
        assert _worst_gap(params, written) <= 1e-12


def test_a_model_without_an_exact_form_is_refused_naming_the_supported(monkeypatch):
    monkeypatch.setattr(bam_json, "EQUIVALENT", {})
    with pytest.raises(BamError, match=r"no model m4: it supports m1, m2, m5, m6;") as caught:
        parameters_to_json(published_named("mx64", "m4"), target=ISAACLAB)
    assert "\n" not in str(caught.value)


# --- the new keys through import and export -------------------------------------------

# Isaac Lab's vendored XL330 M6 file (commit above): every key it reads.
ISAACLAB_XL330_M6 = {
    "actuator": "xl330", "model": "m6", "kt": 0.36601349688984386, "R": 2.8113923539223227,
    "armature": 0.0018077432831600838, "q_offset": 0.0271132870444849,
    "error_gain": 0.0028773775022263564, "max_pwm": 1.0, "max_current": 1.75, "kp": 400.0,
    "vin": 7.5, "friction_base": 0.004771183165566, "friction_stribeck": 0.004676345799486616,
    "friction_viscous": 0.005359668274599504, "dtheta_stribeck": 2.890372094130307,
    "alpha": 8.683259907618984, "load_friction_motor": 0.2667860954283698,
    "load_friction_external": 8.515871897059342e-06,
    "load_friction_motor_stribeck": 1.0722918395099123e-05,
    "load_friction_external_stribeck": 0.08077928978935671,
    "load_friction_motor_quad": 0.009972471242139415,
    "load_friction_external_quad": 0.004902565732332559}
# Upstream BAM's STS3215 M4 (Rhoban/bam bam/params/feetech_sts3215_7_4V/m4.json at commit
# 31e5b97b3cabfe2b909850d483c4e84afa9781c4): command_delay, error_gain_ratio, max_velocity.
BAM_STS3215_M4 = {
    "kt": 1.2652576224140986, "error_gain_ratio": 1.179917121362492, "R": 2.4723714900674616,
    "armature": 0.02335771893803744, "q_offset": -0.06594814555776674,
    "max_velocity": 5.071148781184456, "command_delay": 0.004944939195123091,
    "friction_base": 0.05185523033166987, "friction_stribeck": 0.011100113067732035,
    "load_friction_base": 0.20787198380836144, "load_friction_stribeck": 4.889373048017924e-05,
    "dtheta_stribeck": 0.4432191636630576, "alpha": 9.985595141530244,
    "friction_viscous": 0.03382996203412605, "model": "m4", "actuator": "sts3215"}


@pytest.mark.parametrize("upstream", [ISAACLAB_XL330_M6, BAM_STS3215_M4],
                         ids=["isaaclab_xl330_m6", "bam_sts3215_m4"])
def test_upstream_files_import_with_every_key_and_export_back_the_same(upstream):
    params = parameters_from_json(json.dumps(upstream))
    if "command_delay" in upstream:
        assert params.values["latency.command"] == upstream["command_delay"]
    if "kp" in upstream:
        assert params.provenance["kp"] == upstream["kp"]
    back = json.loads(parameters_to_json(params))
    assert {k: back[k] for k in upstream} == upstream


@pytest.mark.parametrize("actuator", ["mx64", "xl330", "sts3215", "sts3215_12v", "erob80_50"])
def test_kp_and_command_delay_round_trip(actuator):
    params = _random_set(actuator, "m6", 5, **{"latency.command": 0.0123})
    text = parameters_to_json(params, kp=27.5)
    back = parameters_from_json(text)
    assert back.values == params.values and back.provenance["kp"] == 27.5
    assert parameters_to_json(back) == text  # the file's kp is the default of its set
    doc = json.loads(text)
    assert (doc["command_delay"], doc["kp"]) == (0.0123, 27.5)
    if "max_velocity" in params.values:
        assert doc["max_velocity"] == params.values["max_velocity"]
        assert doc["error_gain_ratio"] == params.values["error_gain_ratio"]


def test_a_reading_delay_bam_json_cannot_hold_is_refused():
    params = published_named("mx64", "m1").replace(**{"latency.command": 0.01,
                                                "latency.reading": 0.002})
    with pytest.raises(BamError, match="latency.reading = 0.002 s .*command_delay"):
        parameters_to_json(params)


@pytest.mark.parametrize(("change", "message"), [
    ({"error_gain": 0.2}, r"\"error_gain\" = 0.2, but the xl330's firmware here has 0.00287"),
    ({"max_current": None}, r"\"max_current\" = None, but the xl330's firmware here has 1.75"),
    ({"max_pwm": "full"}, r"\"max_pwm\" in .* must be a number"),
    ({"kp": 0}, r"\"kp\" in .* must be"),
    ({"kp": float("nan")}, r"\"kp\" in .* must be a finite number"),
    ({"command_delay": -0.01}, r"\"command_delay\" in .* must be"),
    ({"vin": 12.0}, r"no xl330 at vin = 12.0 V here \(known: 7.5 V\)"),
    ({"vin": [7.5]}, r"\"vin\" in x.json must be a number"),
])
def test_bad_firmware_keys_in_a_file_are_one_line(change, message):
    with pytest.raises(BamError, match=message) as caught:
        parameters_from_json(json.dumps({**ISAACLAB_XL330_M6, **change}), "x.json")
    assert "\n" not in str(caught.value)


def test_a_voltage_law_key_in_an_erob_file_is_refused():
    doc = json.loads(parameters_to_json(published_named("erob80_50", "m1")))
    with pytest.raises(BamError, match="\"max_pwm\" is no constant of the erob80_50's current"):
        parameters_from_json(json.dumps({**doc, "max_pwm": 1.0}))


# --- the executable's new options -----------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    (["--kp", "0"], "argument --kp: must be in (0, 10000], got 0"),
    (["--kp", "-3"], "argument --kp: must be in (0, 10000]"),
    (["--kp", "nan"], "argument --kp: must be a finite number"),
    (["--kp", "inf"], "argument --kp: must be a finite number"),
    (["--kp", "many"], "argument --kp: must be a number"),
    (["--kp", "300"], "--kp 300 is above the largest gain 254 the mx64 accepts"),
    (["--for", "gazebo"], "argument --for: invalid choice: 'gazebo'"),
    (["--format", "dcmotor-mjcf", "--for", "isaaclab"], "--for means nothing to --format "
     "dcmotor-mjcf; it applies to bam-json only"),
    (["--format", "dcmotor-mjcf", "--kp", "8"], "--kp means nothing to --format dcmotor-mjcf"),
])
def test_bad_option_values_are_one_line(tmp_path, capsys, options, message):
    src, out = tmp_path / "m4.yaml", tmp_path / "out.json"
    save(published_named("mx64", "m4"), src)
    code, _, err = run([src, *options, "--output", out], capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("actuator", ["erob80_50", "sts3215"])
def test_a_set_isaaclab_cannot_run_is_one_line(tmp_path, capsys, actuator):
    src, out = tmp_path / "m1.yaml", tmp_path / "out.json"
    save(published_named(actuator, "m1"), src)
    code, _, err = run([src, "--for", "isaaclab", "--output", out], capsys)
    assert code == 2 and "Isaac Lab's BAM actuator" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_export_for_isaaclab_says_what_it_wrote(tmp_path, capsys):
    src, out = tmp_path / "m4.yaml", tmp_path / "out.json"
    save(published_named("xl330", "m4"), src)
    code, stdout, _ = run([src, "--for", "isaaclab", "--kp", "400", "--output", out], capsys)
    assert code == 0 and "xl330 m4 as its exact m5, for isaaclab" in stdout
    doc = json.loads(out.read_text())
    assert isaaclab_contract_problems(doc) == [] and doc["kp"] == 400.0


def test_a_bad_kp_in_a_sets_provenance_is_one_line():
    params = published_named("mx64", "m1")
    bad = ParameterSet(params.actuator, params.model, params.values, {"kp": "fast"})
    with pytest.raises(BamError, match="provenance.kp of the set must be a number"):
        parameters_to_json(bad)


# --- the supply group travels; each reader is told what it will not apply -------------

SAG = {"supply.resistance": 0.7, "supply.min_voltage": 0.0, "latency.command": 0.006,
       "latency.reading": 0.0}


def _supply_set(model: str, tmp_path: Path) -> tuple[Path, ParameterSet]:
    """An MX-64 set as `make run` fits it (--groups supply latency), with the sensitivity
    intervals fit stores, saved."""
    values = _random_set("mx64", model, 7, **SAG).values
    kt = values["kt"]
    found = {"percent": 5.0, "base_mae": 1e-3, "threshold_mae": 1.05e-3,
             "parameters": {name: {"value": v, "lower": lo, "upper": hi,
                                   "lower_clamped": False, "upper_clamped": False}
                            for name, (v, lo, hi) in {
                                 "kt": (kt, 0.98 * kt, 1.02 * kt),
                                 "supply.resistance": (0.7, 0.5, 0.9),
                                 "latency.command": (0.006, 0.004, 0.008)}.items()},
             "friction_scale": {"value": 1.0, "lower": 0.9, "upper": 1.1}}
    params = ParameterSet.from_names("mx64", model, values, {"sensitivity": found, "dt": 0.005})
    return save(params, tmp_path / f"mx64_{model}.yaml"), params


@pytest.mark.parametrize("randomization", [False, True], ids=["plain", "randomization"])
@pytest.mark.parametrize("model", ["m1", "m2", "m3", "m4", "m5", "m6"])
def test_a_set_fitted_with_the_supply_group_exports_and_reads_back(tmp_path, capsys, model,
                                                                   randomization):
    src, params = _supply_set(model, tmp_path)
    out = tmp_path / "servo.json"
    code, stdout, err = run([src, "--output", out]
                            + (["--randomization"] if randomization else []), capsys)
    assert code == 0, err
    back = parameters_from_json(out.read_text())
    # the supply group too, for our importer; a reading delay of 0 is no delay
    assert back.values == {k: v for k, v in params.values.items() if k != "latency.reading"}
    doc = json.loads(out.read_text())
    assert (doc["supply.resistance"], doc["command_delay"]) == (0.7, 0.006)
    # no reader applies the sag: each that loads the file says so, in the file and once
    # on stdout
    for title, lost in doc["not_applied"].items():
        if not lost[0].startswith("cannot load it"):
            assert any(line.startswith("supply.resistance = 0.7: ") for line in lost), lost
            assert f"{title} will not apply: " in stdout
    assert "supply.min_voltage" not in json.dumps(doc["not_applied"])  # 0: nothing lost
    if not randomization:
        return
    ranges = yaml.safe_load((tmp_path / "servo_randomization.yaml").read_text())
    kt = params.values["kt"]
    assert ranges["mjlab"]["vin_drop_resistance_range"] == [0.5, 0.9]
    assert ranges["isaaclab"]["vin_drop_gain_range"] == [0.5 / kt, 0.9 / kt]
    assert [ranges["mjlab"]["delay_min_lag"], ranges["mjlab"]["delay_max_lag"]] == [1, 2]
    # BAM's sensitivity file holds BAM's parameters only
    sensitivity = json.loads((tmp_path / "servo_sensitivity.json").read_text())["sensitivity"]
    assert set(sensitivity) == {"kt", "command_delay"}


def test_each_reader_is_told_what_it_will_not_apply(tmp_path, capsys):
    """Upstream's STS3215 M6 (command delay, ratio, target slew) exported for BAM: BAM
    1.0.2 has no command_delay (the M6 moves 2.1e-2 rad otherwise there), Isaac Lab's
    BamMotorParams no ratio nor slew (0.16 rad on a step); one line per reader."""
    src, out = tmp_path / "sts.yaml", tmp_path / "sts.json"
    params = published_named("sts3215", "m6")
    save(params, src)
    code, stdout, _ = run([src, "--output", out], capsys)
    assert code == 0
    lines = stdout.strip().splitlines()[1:]
    assert len(lines) == 3, lines
    bam, old, isaaclab = lines
    v = params.values
    assert bam.startswith("BAM load_model (Rhoban/bam 17d9addc) and its mjlab "
                          "BamActuatorCfg will not apply: kp = 16: ")
    assert "command_delay" not in bam
    assert old.startswith("BAM 1.0.2 (PyPI)") and \
        f"command_delay = {v['latency.command']:.6g}: 1.0.2 predates it" in old
    assert isaaclab.startswith("Isaac Lab BamActuatorCfg")
    for name in ("error_gain_ratio", "max_velocity", "q_offset"):
        assert f"{name} = {v[name]:.6g}: " in isaaclab, name
    assert f"command_delay = {v['latency.command']:.6g}: give it as min_delay" in isaaclab
    # the file says the same, per reader, under a key every reader skips
    doc = json.loads(out.read_text())
    assert [f"{t} will not apply: {'; '.join(lost)}" for t, lost in
            doc["not_applied"].items()] == lines
    assert parameters_from_json(out.read_text()).values == params.values


def test_a_reader_that_cannot_load_the_file_says_so(tmp_path, capsys):
    src, out = tmp_path / "st.yaml", tmp_path / "st.json"
    save(published_named("st3025", "m6"), src)
    code, stdout, _ = run([src, "--for", "isaaclab", "--output", out], capsys)
    assert code == 0
    bam, old, isaaclab = stdout.strip().splitlines()[1:]
    assert "error_gain = 0.207944: BAM keeps the firmware's constants in code" in bam
    assert old.endswith(": cannot load it: it has no actuator waveshare_st3025; install BAM "
                        "from its repository")
    assert "error_gain" not in isaaclab  # Isaac Lab reads it: the ratio travels there
    # an MX-64 M1 without offset or delay: Isaac Lab applies all of it
    src = save(published_named("mx64", "m1"), tmp_path / "mx.yaml")
    code, stdout, _ = run([src, "--for", "isaaclab", "--output", out, "--force"], capsys)
    assert stdout.strip().splitlines()[-1].endswith(": applies every value")


# What Isaac Lab's law does without a key it skips (bam_model.py at the commit above): no
# bench offset, no command delay, no ratio, no target slew, no supply sag.
ISAACLAB_WITHOUT = {"q_offset": 0.0, "command_delay": 0.0, "error_gain_ratio": 1.0,
                    "max_velocity": None, "supply.resistance": 0.0, "supply.min_voltage": 0.0}


@pytest.mark.parametrize(("actuator", "model"), PUBLISHED, ids="_".join)
def test_isaaclab_is_told_every_key_it_skips_that_changes_the_motion(actuator, model):
    """Held to Isaac Lab's field contract above (ISAACLAB_REQUIRED, ISAACLAB_DEFAULTED): a
    key of a --for bam file that is none of its fields is named where its value matters."""
    params = published_named(actuator, model).replace(**SAG) if ACTUATORS[actuator].family == \
        VOLTAGE else published_named(actuator, model)
    doc = json.loads(parameters_to_json(params))
    lost = doc["not_applied"]["Isaac Lab BamActuatorCfg (BamMotorParams.from_json, "
                              "IsaacLab 82c9059)"]
    if lost[0].startswith("cannot load it"):
        assert model not in ISAACLAB_MODELS or not _isaaclab_runs(actuator)
        return
    fields = set(ISAACLAB_REQUIRED) | set(ISAACLAB_DEFAULTED) | {"model", "actuator",
                                                                 "not_applied"}
    for key in set(doc) - fields:
        matters = ISAACLAB_WITHOUT[key] is None or doc[key] != ISAACLAB_WITHOUT[key]
        assert matters == any(line.startswith(f"{key} = ") for line in lost), (key, lost)
