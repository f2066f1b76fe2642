"""Replay goal positions on one-joint dcmotor MJCFs with whichever MuJoCo imports.

Used by ``mujoco_versions.py`` in each MuJoCo version's own environment, so it
needs mujoco and numpy only. ``python mujoco_goal_runner.py JOB.json OUT.npz``:
the job is a list of cases ``{"name", "xml", "goals", "q0", "slew"}``; the
output holds, per case name, the joint position at each step (before it) and,
under ``version``, the MuJoCo version that ran.
"""

from __future__ import annotations

import json
import sys

import mujoco
import numpy as np


def replay(xml: str, goals: np.ndarray, q0: float, slew: bool) -> np.ndarray:
    """Positions of the joint driven by ``goals`` (one per step), from rest at ``q0``.

    As the servo at power-on: a set with a target slew starts its slew state at
    the joint, and a delayed actuator's history holds the first goal.
    """
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[0] = q0
    if slew:
        data.act[model.actuator_actadr[0]] = q0
    samples = int(model.actuator_history[0, 0])
    if samples > 0:
        mujoco.mj_initCtrlHistory(model, data, 0, None, np.full(samples, goals[0]))
    out = np.empty(len(goals))
    for k, goal in enumerate(goals):
        out[k] = data.qpos[0]
        data.ctrl[0] = goal
        mujoco.mj_step(model, data)
    return out


def main(job: str, output: str) -> None:
    with open(job, encoding="utf-8") as stream:
        cases = json.load(stream)
    results = {case["name"]: replay(case["xml"], np.asarray(case["goals"], dtype=float),
                                    float(case["q0"]), bool(case["slew"]))
               for case in cases}
    np.savez(output, version=np.array(mujoco.__version__), **results)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
