"""The export executable: a fitted YAML in, a BAM JSON file out that the legacy importer
reads back to the same set; one-line errors and exit code 2 for bad input."""

from __future__ import annotations

from bam_identify.export_cli import export_main
from bam_sim.models.files.parameter_file import load, published_named, save


def run(args, capsys):
    code = export_main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _fitted(tmp_path, actuator="mx64", model="m6"):
    path = tmp_path / "fitted.yaml"
    save(published_named(actuator, model).replace(q_offset=0.0123), path)
    return path


def test_export_writes_json_the_importer_reads_back(tmp_path, capsys):
    src = _fitted(tmp_path)
    out = tmp_path / "model" / "m6.json"
    code, stdout, _ = run([src, "--format", "bam-json", "--output", out], capsys)
    assert code == 0 and f"wrote {out}" in stdout
    back, original = load(out), load(src)
    assert (back.actuator, back.model, back.values) == (original.actuator, original.model,
                                                        original.values)


def test_existing_output_is_kept_without_force(tmp_path, capsys):
    src = _fitted(tmp_path)
    out = tmp_path / "model.json"
    out.write_text("keep me")
    code, _, err = run([src, "--output", out], capsys)
    assert code == 2 and "already exists" in err and "--force" in err
    assert len(err.strip().splitlines()) == 1
    assert out.read_text() == "keep me"
    code, _, _ = run([src, "--output", out, "--force"], capsys)
    assert code == 0 and load(out).model.name == "m6"


def test_missing_input_is_one_line(tmp_path, capsys):
    out = tmp_path / "model.json"
    code, _, err = run([tmp_path / "none.yaml", "--output", out], capsys)
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_invalid_yaml_is_one_line(tmp_path, capsys):
    src = tmp_path / "bad.yaml"
    src.write_text("/**:\n  ros__parameters:\n    actuator: mx64\n    model: m1\n    kt: [\n")
    code, _, err = run([src, "--output", tmp_path / "m.json"], capsys)
    assert code == 2 and "not valid YAML" in err and len(err.strip().splitlines()) == 1


def test_a_set_bam_json_cannot_hold_is_refused_before_writing(tmp_path, capsys):
    src = tmp_path / "thermal.yaml"
    save(published_named("mx64", "m1").replace(**{"thermal.resistance": 5.0,
                                            "thermal.capacitance": 1.0,
                                            "thermal.tempcoef": 0.0039}), src)
    out = tmp_path / "m.json"
    code, _, err = run([src, "--output", out], capsys)
    assert code == 2 and "thermal" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_output_over_the_input_is_refused(tmp_path, capsys):
    src = tmp_path / "m.json"
    src.write_text('{"actuator": "mx64", "model": "m1", "kt": 1.6, "R": 2.3, '
                   '"armature": 0.01, "friction_base": 0.05, "friction_viscous": 0.01}')
    code, _, err = run([src, "--output", src, "--force"], capsys)
    assert code == 2 and "is the input params" in err


def test_unknown_format_is_a_usage_error(tmp_path, capsys):
    code = export_main([str(_fitted(tmp_path)), "--format", "urdf", "--output",
                        str(tmp_path / "m.json")])
    assert code == 2 and "invalid choice" in capsys.readouterr().err


def test_dcmotor_mjcf_export_is_mujocos_own_servo(tmp_path, capsys):
    import mujoco

    src = tmp_path / "sts.yaml"
    save(published_named("sts3215_12v", "m1"), src)
    out = tmp_path / "servo.xml"
    code, stdout, _ = run([src, "--format", "dcmotor-mjcf", "--gain", "32", "--output", out],
                          capsys)
    assert code == 0 and "dcmotor-mjcf" in stdout
    # one line for its reader, naming what the file's loss note holds
    (line,) = stdout.strip().splitlines()[1:]
    assert line.startswith("MuJoCo >= 3.12 dcmotor will not apply: pendulum: max_velocity = ")
    model = mujoco.MjModel.from_xml_path(str(out))
    assert model.nu == 1 and model.actuator_actnum[0] == 1  # the firmware target's slew
    text = out.read_text()
    assert "<dcmotor" in text and "max_velocity" in text  # the loss note says how to reset
    robot = tmp_path / "robot.xml"
    robot.write_text(text)
    code, _, err = run([src, "--format", "dcmotor-mjcf", "--mjcf", robot, "--output",
                        tmp_path / "r.xml"], capsys)
    assert code == 2 and "needs --joint NAME" in err and not (tmp_path / "r.xml").exists()


def test_dcmotor_mjcf_is_written_for_the_mujoco_version_asked(tmp_path, capsys):
    import mujoco

    from bam_identify.export_cli import MUJOCO_VERSIONS
    from bam_sim.mujoco_arm import dcmotor_export

    assert MUJOCO_VERSIONS == dcmotor_export.MUJOCO_VERSIONS
    src = tmp_path / "mx64.yaml"
    save(published_named("mx64", "m1").replace(**{"latency.command": 0.006}), src)
    texts = {}
    for version in (None, "4", "3.11"):
        out = tmp_path / f"servo_{version}.xml"
        extra = ["--mujoco", version] if version else []
        code, _, err = run([src, "--format", "dcmotor-mjcf", *extra, "--output", out], capsys)
        assert code == 0, err
        texts[version] = out.read_text()
    assert texts[None] == texts["4"] and 'input="pos"' in texts["4"]  # 4 by default
    assert 'input="position"' in texts["3.11"] and 'delay="0.006"' in texts["3.11"]
    model = mujoco.MjModel.from_xml_path(str(tmp_path / "servo_4.xml"))
    assert model.actuator_delay[0] == 0.006


def test_bad_mujoco_version_is_refused_in_one_line(tmp_path, capsys):
    src = _fitted(tmp_path, model="m1")
    out = tmp_path / "servo.xml"
    for bad in ("3.12", "5", "3.11.0", ""):
        code, _, err = run([src, "--format", "dcmotor-mjcf", "--mujoco", bad, "--output", out],
                           capsys)
        assert code == 2 and "--mujoco" in err and len(err.strip().splitlines()) == 1
    code, _, err = run([src, "--format", "bam-json", "--mujoco", "4", "--output", out], capsys)
    assert code == 2 and "--mujoco means nothing to --format bam-json" in err
    assert not out.exists()
