"""A fit on a built workspace compiles nothing: the build left every kernel it calls in
numba's cache (``bam_sim.precompile``), so no stop can land in the compiler and no first
fit waits minutes for it.

The fit runs as a user runs it (its command line, in a process of its own) under a numba
event listener that records every compilation, a load from the cache being none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from robot_recordings import ACTION, STATE, write_lerobot

from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.servo.actuators import get_actuator
from bam_sim.mujoco_arm.shipped_arms import arm_spec

# The fit's command line, with a listener on numba's "numba:compile" events: a dispatcher
# found in the cache loads without one (numba.core.dispatcher.Dispatcher.compile).
PROGRAM = """
import sys
from numba.core import event

compiled = []

class Compiled(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass

event.register("numba:compile", Compiled())
from bam_identify.cli import fit_main
code = fit_main(sys.argv[1:])
print("compiled:", ", ".join(sorted(set(compiled))) or "nothing", flush=True)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    truth = published_named("mx64", "m6")
    folder = tmp_path_factory.mktemp("logs")
    for i, log in enumerate(paper_like_set(truth, 3, duration=1.0, seed=3)):
        write_legacy_log(folder / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    return folder


@pytest.mark.parametrize(("models", "groups"),
                         [(("m1", "m6"), ()), (("m1", "m6"), ("latency",)),
                          (("ep_stribeck",), ())],
                         ids=["plain", "latency", "elasto-plastic"])
def test_a_fit_on_the_build_compiles_nothing(logs, tmp_path, models, groups):
    argv = ["--logs", str(logs), "--actuator", "mx64", "--models", *models,
            "--trials", "40", "--output", str(tmp_path / "{model}.yaml"),
            "--report", str(tmp_path / "report"), "--quiet"]
    if groups:
        argv += ["--groups", *groups]
    run = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / f"{models[-1]}.yaml").is_file()
    assert (tmp_path / "report" / "report.md").is_file()
    assert "compiled: nothing" in run.stdout, run.stdout


def test_a_robot_fit_on_the_build_compiles_nothing(tmp_path):
    """The robot fit's rollouts (MuJoCo stepped from the kernel, a recording per call)."""
    joints = tmp_path / "joints.yaml"
    joints.write_text(yaml.safe_dump({"joints": [
        {"joint": name, "actuator": "sts3215", "gain": 32, "reading": {"column": i}}
        for i, name in enumerate(("shoulder", "elbow"))]}))
    goal = np.repeat(np.random.default_rng(0).uniform(-1.0, 1.0, (4, 2)), 15, axis=0)
    dataset = write_lerobot(tmp_path / "dataset", "v3.0", [{STATE: goal, ACTION: goal}] * 2,
                            30.0, names=["shoulder.pos", "elbow.pos"])
    argv = ["--robot", str(arm_spec("feetech").mjcf), "--joints", str(joints),
            "--lerobot", str(dataset), "--models", "m1", "m4", "--trials", "20",
            "--output", str(tmp_path / "{actuator}_{model}.yaml"),
            "--report", str(tmp_path / "report"), "--quiet"]
    run = subprocess.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "sts3215_m4.yaml").is_file()
    assert "compiled: nothing" in run.stdout, run.stdout
