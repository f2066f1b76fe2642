"""``fit --robot`` and ``eval --robot`` from the command line, on recordings written here.

The Feetech 2R arm's truth (published STS3215 M1, joint offsets) records three
episodes of step goals at 30 fps as a LeRobot dataset, in degrees with the shoulder
turning against its axis, as a user's SO-arm dataset would read. ``fit`` writes the
type's parameter file, the report and the joint map with the offsets it found; ``eval``
scores that file with that map on the same dataset, per joint, as the fit did. Bad
requests are refused in one line.
"""

from __future__ import annotations

import json
import math

import mujoco
import numpy as np
import pytest
import yaml
from identify_cases import run
from robot_recordings import ACTION, STATE, Commands, write_lerobot, write_robot_bag

from bam_identify.cli import eval_main, fit_main
from bam_identify.export_cli import export_main
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import load, published_named, save
from bam_sim.mujoco_arm.shipped_arms import arm_spec
from bam_sim.robot.joint_map import joint_map
from bam_sim.robot.rollout import bind, simulated_recording

TICK = 2.0 * math.pi / 4096
OFFSETS = np.array([0.03, -0.02])
FPS = 30.0
DIRECTIONS = np.array([-1.0, 1.0])



@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    """(folder, MJCF, joint map file, dataset, the truth's floor MAE)."""
    folder = tmp_path_factory.mktemp("robot")
    mjcf = folder / "arm.xml"
    text = arm_spec("feetech").mjcf.read_text()
    mjcf.write_text(text.replace('timestep="0.001"', 'timestep="0.005"'))
    doc = {"joints": [
        {"joint": "shoulder", "actuator": "sts3215", "gain": 32,
         "reading": {"column": 0, "unit": "deg", "direction": -1}},
        {"joint": "elbow", "actuator": "sts3215", "gain": 32,
         "reading": {"column": 1, "unit": "deg"}}]}
    joints = folder / "joints.yaml"
    joints.write_text(yaml.safe_dump(doc))
    truth = published_named("sts3215", "m1")
    arm = bind(mujoco.MjModel.from_xml_path(str(mjcf)), joint_map(doc), [truth, truth])
    rng = np.random.default_rng(3)
    episodes, floor = [], []
    n = 120  # 4 s at 30 fps, a new pair of goals every 0.5 s
    for k in range(3):
        goal = np.repeat(rng.uniform(-1.2, 1.2, (n // 15, 2)), 15, axis=0)
        rec = simulated_recording(arm, f"e{k}", np.arange(n) / FPS, goal, np.full(2, 32.0),
                                  OFFSETS, tick=TICK)
        exact = simulated_recording(arm, f"e{k}", np.arange(n) / FPS, goal, np.full(2, 32.0),
                                    OFFSETS)
        floor.append(np.abs(rec.position - exact.position).mean())
        degrees = np.degrees(DIRECTIONS)  # what each column reads per radian
        episodes.append({STATE: rec.position * degrees, ACTION: goal * degrees})
    dataset = write_lerobot(folder / "dataset", "v3.0", episodes, FPS,
                            names=["shoulder.pos", "elbow.pos"])
    return folder, mjcf, joints, dataset, float(np.mean(floor)), truth


def test_a_robot_fit_from_a_lerobot_dataset_is_scored_again_by_eval(robot, capsys) -> None:
    folder, mjcf, joints, dataset, floor, truth = robot
    out, report = folder / "out" / "{actuator}_{model}.yaml", folder / "report"
    held = [f"--set=error_gain_ratio={truth.values['error_gain_ratio']!r}",
            f"--set=max_velocity={truth.values['max_velocity']!r}"]
    code, stdout, err = run(fit_main, [
        "--robot", mjcf, "--joints", joints, "--lerobot", dataset, "--models", "m1",
        "--trials", 3000, "--target-mae", 1.1 * floor, "--validation-fraction", 0.34,
        *held, "--output", out, "--report", report, "--quiet"], capsys)
    assert code == 0, err
    assert "validation MAE" in stdout
    params = load(folder / "out" / "sts3215_m1.yaml")
    assert params.provenance["source"] == "bam_identify fit --robot"
    assert len(params.provenance["validation"]) == 1  # one episode of three held out
    summary = json.loads((report / "summary.json").read_text())
    assert summary["joints"] == ["shoulder", "elbow"]
    assert (report / "m1_rollout.png").stat().st_size > 0
    exported = mujoco.MjModel.from_xml_path(str(report / "m1_robot.xml"))  # MuJoCo alone
    assert exported.nu == 2 and "m1_robot.xml" in (report / "report.md").read_text()
    found = yaml.safe_load((report / "m1_joints.yaml").read_text())
    offsets = [j["offset"] for j in found["joints"]]
    np.testing.assert_allclose(offsets, OFFSETS, atol=2 * TICK)
    code, stdout, err = run(eval_main, [
        "--robot", mjcf, "--joints", report / "m1_joints.yaml", "--lerobot", dataset,
        "--params", folder / "out" / "sts3215_m1.yaml", "--json", folder / "eval.json"], capsys)
    assert code == 0, err
    scores = json.loads((folder / "eval.json").read_text())
    assert set(scores["mae"]) == {"shoulder", "elbow"}
    per_recording = np.array(scores["per_recording"])
    assert per_recording.shape == (3, 2)
    # At the noise floor on every episode, the held-out one included.
    assert per_recording.mean() <= 1.2 * floor
    assert params.vector()[P.Q_OFFSET] == 0.0  # offsets live in the joint map
    # Each free value's interval within 5 % of the fit's error, in the bench fit's layout
    # (the type's own parameter names), so that export --randomization reads the file.
    found = params.provenance["sensitivity"]
    assert found["percent"] == 5.0
    assert set(found["parameters"]) == {"kt", "R", "armature", "friction_base",
                                        "friction_viscous"}  # M1's, the firmware's held
    for name, interval in found["parameters"].items():
        assert interval["lower"] <= params.values[name] <= interval["upper"], name
    assert found["friction_scale"]["lower"] <= 1.0 <= found["friction_scale"]["upper"]
    offsets = summary["models"]["m1"]["sensitivity"]["parameters"]
    assert {"shoulder/offset", "elbow/offset"} <= set(offsets)
    assert "5 % interval" in (report / "report.md").read_text()
    code, _, err = run(export_main, [folder / "out" / "sts3215_m1.yaml", "--randomization",
                                     "--output", folder / "servo.json"], capsys)
    assert code == 0, err
    ranges = yaml.safe_load((folder / "servo_randomization.yaml").read_text())["ranges"]
    assert ranges["friction_scale"] == [found["friction_scale"]["lower"],
                                        found["friction_scale"]["upper"]]


def test_a_bag_of_the_robot_reads_as_the_dataset_does(robot, tmp_path, capsys) -> None:
    """The same truth through a bag (joint_states and joint_commands) scores as well."""
    folder, mjcf, joints, _, floor, truth = robot
    arm = bind(mujoco.MjModel.from_xml_path(str(mjcf)), joint_map(yaml.safe_load(
        joints.read_text())), [truth, truth])
    n, rate = 400, 100.0
    goal = np.repeat(np.random.default_rng(5).uniform(-1, 1, (8, 2)), 50, axis=0)
    rec = simulated_recording(arm, "bag", np.arange(n) / rate, goal, np.full(2, 32.0), OFFSETS,
                              tick=TICK)
    every = slice(None, None, 10)  # goals sent at 10 Hz
    bag = write_robot_bag(tmp_path / "bag", (rec.time, ["elbow", "shoulder"],
                                             np.ascontiguousarray(rec.position[:, ::-1])),
                          [Commands("joint_commands", rec.time[every], ["shoulder", "elbow"],
                                    goal[every])], namespace="so101")
    truth_file = tmp_path / "truth.yaml"
    truth_file.write_text(yaml.safe_dump({"joints": [
        {"joint": "shoulder", "actuator": "sts3215", "gain": 32, "offset": float(OFFSETS[0])},
        {"joint": "elbow", "actuator": "sts3215", "gain": 32, "offset": float(OFFSETS[1])}]}))
    from bam_sim.models.files.parameter_file import dump_yaml

    params = tmp_path / "truth_params.yaml"
    params.write_text(dump_yaml(truth.replace(q_offset=0.0)))
    code, stdout, err = run(eval_main, ["--robot", mjcf, "--joints", truth_file, "--bags", bag,
                                        "--params", params], capsys)
    assert code == 0, err
    mae = float(stdout.splitlines()[-1].split()[1])
    assert mae <= 0.5 * TICK  # the truth meets its own quantized readings


@pytest.mark.parametrize("args, phrase", [
    (["--robot", "arm.xml"], "needs both --robot MJCF and --joints YAML"),
    (["--lerobot", "d"], "--lerobot: give the robot too"),
    (["--robot", "{mjcf}", "--joints", "{joints}", "--logs", "x"], "--logs is an option of the"),
    (["--robot", "{mjcf}", "--joints", "{joints}"], "give the robot's recordings"),
    (["--robot", "missing.xml", "--joints", "{joints}", "--lerobot", "{dataset}"],
     "robot model missing.xml does not exist"),
    (["--robot", "{mjcf}", "--joints", "{joints}", "--lerobot", "{dataset}", "--models",
      "ep_cv"], "elasto-plastic models are identified on the bench"),
    (["--robot", "{mjcf}", "--joints", "{joints}", "--lerobot", "{dataset}", "--groups",
      "thermal"], "--groups thermal: robot recordings carry no winding temperature"),
])
def test_a_wrong_robot_request_is_refused_in_one_line(robot, tmp_path, capsys, args,
                                                      phrase) -> None:
    folder, mjcf, joints, dataset, _, _ = robot
    args = [a.format(mjcf=mjcf, joints=joints, dataset=dataset) for a in args]
    code, _, err = run(fit_main, [*args, "--trials", 10, "--report", tmp_path / "r",
                                  "--output", tmp_path / "{actuator}_{model}.yaml"], capsys)
    assert code == 2
    assert phrase in err and len(err.strip().splitlines()) == 1, err


def test_a_richer_model_starts_from_the_simpler_one_fitted(robot, tmp_path, capsys) -> None:
    """`--models m1 m3`: M3 starts where M1 ended (its set reproduces M1's exactly), so on
    the training recordings it ends no worse, whatever the budget; the start is recorded."""
    folder, mjcf, joints, dataset, floor, truth = robot
    code, _, err = run(fit_main, [
        "--robot", mjcf, "--joints", joints, "--lerobot", dataset, "--models", "m1", "m3",
        "--trials", 300, "--output", tmp_path / "{actuator}_{model}.yaml",
        "--report", tmp_path / "report", "--quiet"], capsys)
    assert code == 0, err
    m1, m3 = (load(tmp_path / f"sts3215_{m}.yaml").provenance for m in ("m1", "m3"))
    assert m3["warm_start"] == "m1" and "warm_start" not in m1
    assert m3["train_mae"] <= m1["train_mae"]


def test_a_joint_map_that_names_each_joints_model_is_fitted_as_it_stands(robot, tmp_path,
                                                                         capsys) -> None:
    """Without --models, a map giving each joint (here each its own type) a model is one
    fit of those models, a file per type with its own model; the report's joint map keeps
    them. A map naming some joints' models and not others is refused in one line."""
    folder, mjcf, joints, dataset, _, truth = robot
    doc = yaml.safe_load(joints.read_text())
    for joint, model in zip(doc["joints"], ("m1", "m3")):
        joint.update(type=joint["joint"], model=model)
    mapped = tmp_path / "mapped.yaml"
    mapped.write_text(yaml.safe_dump(doc))
    options = ["--robot", mjcf, "--joints", mapped, "--lerobot", dataset, "--trials", 40,
               "--output", tmp_path / "{actuator}_{model}.yaml", "--report",
               tmp_path / "report", "--quiet"]
    code, stdout, err = run(fit_main, options, capsys)
    assert code == 0, err
    assert stdout.startswith("m1+m3: train MAE")
    shoulder, elbow = (load(tmp_path / name) for name in ("shoulder_m1.yaml", "elbow_m3.yaml"))
    assert (shoulder.model.name, elbow.model.name) == ("m1", "m3")
    assert shoulder.actuator is elbow.actuator is truth.actuator
    found = yaml.safe_load((tmp_path / "report" / "m1+m3_joints.yaml").read_text())
    assert [j["model"] for j in found["joints"]] == ["m1", "m3"]
    del doc["joints"][1]["model"]
    mapped.write_text(yaml.safe_dump(doc))
    code, _, err = run(fit_main, [*options, "--force"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "joint 'shoulder' names its model and joint 'elbow' does not" in err


def test_eval_draws_the_recording_a_set_misses_most(robot, tmp_path, capsys) -> None:
    """``eval --figure``: the worst recording by MAE, a PNG read back; the figure is an
    output like any other (not over an input, not over a file without --force, a format
    matplotlib writes), and the bench's eval has none."""
    folder, mjcf, joints, dataset, _, truth = robot
    params = tmp_path / "m1.yaml"
    save(truth, params)
    figure = tmp_path / "worst.png"
    options = ["--robot", mjcf, "--joints", joints, "--lerobot", dataset, "--params", params]
    code, stdout, err = run(eval_main, [*options, "--json", tmp_path / "scores.json",
                                        "--figure", figure], capsys)
    assert code == 0, err
    per_recording = np.array(json.loads((tmp_path / "scores.json").read_text())
                             ["per_recording"]).mean(axis=1)
    worst = f"dataset#episode {int(np.argmax(per_recording))}"
    assert f"figure: {figure} ({worst}, MAE" in stdout
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for extra, phrase in ((["--figure", figure], "already exists; choose another path or "
                                                 "pass --force"),
                          (["--figure", params, "--force"], "is the input --params"),
                          (["--figure", tmp_path / "w.gif"], "unsupported file type '.gif'")):
        code, _, err = run(eval_main, [*options, *extra], capsys)
        assert code == 2 and phrase in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run(eval_main, ["--logs", folder, "--params", params, "--figure", figure],
                       capsys)
    assert code == 2 and "--figure draws a robot's recordings" in err, err
