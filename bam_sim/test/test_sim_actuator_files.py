"""Actuator files: the shipped servos are data, a new servo is a file and no code."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import load, published_named, save
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet, allowed_names
from bam_sim.models.servo.actuator_file import actuator_document, parse_actuator
from bam_sim.models.servo.actuators import ACTUATORS, declare, declare_file, get_actuator
from bam_sim.robot.joint_map import load_joint_map

SHIPPED = Path(__file__).resolve().parents[1] / "bam_sim" / "models" / "servo" / "shipped"


def hobby_servo(tmp_path: Path, name: str = "hobby_sts", supply: float = 6.0) -> Path:
    """An actuator file of a servo the project does not ship: the STS law at 6 V."""
    doc = actuator_document(get_actuator("sts3215"))
    doc.update(name=name, title=f"Hobby servo ({supply:g} V)")
    doc["law"]["supply_voltage"] = supply
    del doc["hardware"]
    path = tmp_path / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", list(ACTUATORS))
def test_every_shipped_actuator_is_its_file_and_reads_back(name):
    actuator = ACTUATORS[name]
    assert (SHIPPED / f"{name}.yaml").is_file()
    again = parse_actuator(yaml.safe_load(yaml.safe_dump(actuator_document(actuator))), name)
    assert again == actuator
    # Every field was written: a field the document forgot would come back as its default.
    for field in dataclasses.fields(actuator):
        if field.compare:
            assert getattr(again, field.name) == getattr(actuator, field.name), field.name


def test_the_shipped_files_hold_the_constants_the_published_sets_were_identified_with():
    # Independent of the files: the values the paper's reference lists (Table I, the
    # authors' release), spot-checked.
    mx64, xl330, sts = get_actuator("mx64"), get_actuator("xl330"), get_actuator("sts3215")
    assert (mx64.supply_voltage, mx64.duty_gain, mx64.max_duty) == (15.0, 0.158, 0.9625)
    assert xl330.duty_gain == pytest.approx(4096 / (2 * 3.141592653589793) / (256 * 885))
    assert xl330.firmware_current_limit == 1.75
    assert sts.motor_bounds["max_velocity"][0] == pytest.approx(0.1 * 3400 * 2 * 3.14159265 / 4096)
    assert get_actuator("erob80_100").fixed == {"current_limit": 12.0, "R": 2.0}
    # The XL330 in current-based position mode: 4096/(2π) counts per rad over the divisor
    # 256, in mA (Rhoban/bam#14 measured the release's 0.01 about 4 times too large).
    current = get_actuator("xl330_current")
    assert current.current_gain == pytest.approx(4096 / (2 * 3.141592653589793) / 256e3)
    assert 3.5 < 0.01 / current.current_gain < 4.5
    assert current.fixed == {"current_limit": 1.75}


def test_the_docs_actuator_files_are_valid_files():
    """The examples of docs/how-to/actuator-files.md read as they are written."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "how-to" /
            "actuator-files.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    found = {a.name: a for a in (parse_actuator(yaml.safe_load(b), "docs") for b in blocks)}
    assert set(found) == {"hobby_sts6v", "hls2915"}
    assert found["hls2915"].family == get_actuator("erob80_50").family
    assert "error_gain_ratio" in allowed_names(found["hls2915"], get_model("m1"))


BAD = [
    (lambda d: d["law"].update(suply_voltage=7.0), "did you mean 'supply_voltage'"),
    (lambda d: d["law"].update(family="pwm"), "must be one of voltage, current, dcmotor"),
    (lambda d: d["identification"]["motor"].pop("kt"), "needs 'kt'"),
    (lambda d: d["identification"]["motor"].update(R=[3.0, 1.0]), "low < high"),
    (lambda d: d["identification"]["motor"].update(friction_base=[0.0, 1.0]),
     "unknown key 'friction_base'"),
    (lambda d: d["identification"]["scales"].update(frictoin=1.0), "did you mean 'friction'"),
    (lambda d: d["law"].update(max_duty=1.5), "max_duty in (0, 1]"),
    (lambda d: d.pop("bam_actuator"), "bam_actuator: 1"),
    (lambda d: d.update(name="My Servo"), "lower-case"),
    (lambda d: d["bench"].update(gains=[]), "non-empty list"),
    (lambda d: d["hardware"].update(driver="can"), "dynamixel, feetech, erob"),
    (lambda d: d["hardware"].pop("control_table"), "needs hardware.control_table"),
    (lambda d: d["hardware"].update(emulator_model="m9"), "unknown"),
    (lambda d: d["law"].update(current_gain=-0.01), "current_gain must be a finite number"),
]


@pytest.mark.parametrize(("spoil", "words"), BAD)
def test_a_bad_actuator_file_is_refused_in_one_line_naming_it(spoil, words, tmp_path):
    doc = copy.deepcopy(actuator_document(get_actuator("sts3215")))
    spoil(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with pytest.raises(BamError) as info:
        declare_file(path)
    message = str(info.value)
    assert words in message and "\n" not in message and str(path) in message


def test_a_declared_servo_is_named_like_a_shipped_one_and_cannot_shadow_one(tmp_path):
    path = hobby_servo(tmp_path, "hobby_named")
    with pytest.raises(BamError, match="--actuator-file"):
        get_actuator("hobby_named")
    declared = declare_file(path)
    assert get_actuator("hobby_named") is declared and declared.supply_voltage == 6.0
    assert declare_file(path) is declared  # the same file again: nothing changes
    other = hobby_servo(tmp_path / "other", "hobby_named", supply=7.0)
    with pytest.raises(BamError, match="other values; give it another name"):
        declare_file(other)
    with pytest.raises(BamError, match="a shipped actuator"):
        declare(dataclasses.replace(get_actuator("mx64"), supply_voltage=12.0))


def test_a_parameter_file_of_a_declared_servo_refers_to_its_file_and_loads_elsewhere(tmp_path):
    servo = declare_file(hobby_servo(tmp_path / "servos"))
    values = published_named("sts3215", "m1").values
    params = ParameterSet.build(servo, get_model("m1"), values, {"source": "test"})
    written = save(params, tmp_path / "sets" / "hobby_m1.yaml")
    body = yaml.safe_load(written.read_text())["/**"]["ros__parameters"]
    assert body["actuator"] == "hobby_sts"
    assert body["actuator_file"] == "../servos/hobby_sts.yaml"  # relative: the folder moves
    # A fresh process (nothing declared) reads the set and its servo from the file alone,
    # from another working directory.
    code = ("import sys; from bam_sim.models.files.parameter_file import load; "
            "p = load(sys.argv[1]); print(p.actuator.name, p.actuator.supply_voltage, "
            "p.values['kt'])")
    out = subprocess.run([sys.executable, "-c", code, str(written)], cwd=tmp_path / "servos",
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["hobby_sts", "6.0", repr(values["kt"])]
    assert load(written).values == params.values


def test_a_parameter_file_whose_actuator_file_declares_another_servo_is_refused(tmp_path):
    declare_file(hobby_servo(tmp_path, "hobby_a"))
    path = tmp_path / "set.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": {
        "actuator": "hobby_b", "actuator_file": "hobby_a.yaml", "model": "m1"}}}))
    with pytest.raises(BamError, match="names actuator 'hobby_b' but its actuator_file"):
        load(path)


def test_a_joint_map_declares_its_servos_relative_to_itself(tmp_path, monkeypatch):
    hobby_servo(tmp_path / "robot" / "servos", "hobby_joint")
    robot = tmp_path / "robot" / "joints.yaml"
    robot.write_text(yaml.safe_dump({
        "actuator_files": ["servos/hobby_joint.yaml"],
        "joints": [{"joint": "elbow", "actuator": "hobby_joint", "gain": 32},
                   {"joint": "wrist", "actuator": "sts3215", "gain": 32}]}))
    monkeypatch.chdir(tmp_path)  # not the map's folder
    joints = load_joint_map(robot)
    assert [j.actuator.name for j in joints.joints] == ["hobby_joint", "sts3215"]
    assert joints.joints[0].actuator.supply_voltage == 6.0
    # Written back, the map names the file by its absolute path, and reads back the same.
    again = tmp_path / "elsewhere" / "joints.yaml"
    again.parent.mkdir()
    again.write_text(joints.dump())
    assert load_joint_map(again).joints == joints.joints
    robot.write_text(yaml.safe_dump({"actuator_file": ["servos/hobby_joint.yaml"],
                                     "joints": [{"joint": "elbow", "actuator": "sts3215"}]}))
    with pytest.raises(BamError, match="unknown key 'actuator_file'"):
        load_joint_map(robot)
