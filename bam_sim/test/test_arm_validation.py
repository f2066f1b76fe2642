"""End to end check of the arm validation experiment (benchmarks/arm_validation.py), tiny."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from bam_sim.models.files.parameter_file import published_named
from bam_sim.mujoco_arm.paths import arm_path
from bam_sim.mujoco_arm.shipped_arms import arm_spec

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "arm_validation.py"


@pytest.fixture(scope="module")
def experiment():
    spec = importlib.util.spec_from_file_location("arm_validation_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look the module up by name while the script is executed.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.mark.parametrize("name", ["dynamixel", "erob", "feetech"])
def test_geometry_read_from_the_mjcf_matches_the_path_kinematics(experiment, name):
    spec = arm_spec(name)
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    l1, l2, shoulder = experiment.arm_geometry(model)
    assert (l1, l2) == pytest.approx(spec.link_lengths, abs=1e-12)
    assert shoulder[2] == pytest.approx(spec.shoulder_height)
    path = arm_path("square", l1, l2, duration=2.0, rate=100.0)
    # MuJoCo's tip site at the IK targets lands on the drawn path.
    assert experiment.check_kinematics(model, path, shoulder) < 1e-12


def test_compare_path_is_zero_for_the_truth_and_not_for_m1(experiment):
    spec = arm_spec("dynamixel")
    truth = {j.joint: published_named(j.actuator, j.model) for j in spec.joints}
    m1 = {j.joint: published_named(j.actuator, "m1") for j in spec.joints}
    path = arm_path("triangle_wave", *spec.link_lengths, duration=0.4, rate=1000.0)
    row = experiment.compare_path("dynamixel", truth, {"same": truth, "m1": m1}, path, [8.0, 8.0])
    assert row["same"]["mae"] == 0.0  # deterministic simulation
    assert row["m1"]["mae"] > 1e-5 and row["m1"]["max"] >= row["m1"]["mae"]
    assert np.isfinite(row["tracking_mae_true"])


def test_run_arm_end_to_end_on_one_short_path(experiment):
    settings = experiment.Settings(duration=0.3, logs=2, trials=8, target=None)
    result = experiment.run_arm("dynamixel", settings, paths=("circle",))
    assert set(result["paths"]) == {"circle_LG", "circle_HG"}
    assert result["gains"] == {"LG": [4.0, 4.0], "HG": [32.0, 32.0]}
    for row in result["paths"].values():
        assert {"m1_published", "m1_refit", "m4_refit", "m4_robot"} <= set(row)
    fit = result["fits"]["elbow_m4"]
    assert fit["actuator"] == "mx64" and fit["trials"] == 8 and fit["logs"] == 2
    # The robot fit ran on the arm's own four recordings, with the arm's richer model.
    robot = result["fits"]["robot"]
    assert robot["model"] == "m4" and robot["recordings"] == 4 and robot["trials"] == 8
    assert np.isfinite(robot["train_mae"])
    assert result["kinematics_check_m"] < 1e-9
    labels = {"m1_published", "m1_refit", "m4_refit", "m4_robot"}
    assert set(result["summary"]["mean_mae"]) == labels
    means = result["summary"]["mean_mae"]
    assert result["summary"]["robot_over_bench_refit"] == pytest.approx(
        means["m4_robot"] / means["m4_refit"])
