"""Robot-steps per second of a robot fit's rollouts, beside a bare ``mujoco.rollout``.

For the SO-101-class arm (``bam_sim/mjcf/so101_class.xml``, six STS3215, M1) and the
Feetech 2R arm, a population of candidate sets rolled out over a batch of recordings
(step goals at 50 Hz) as the robot fit does (:class:`bam_identify.robot.objective.
RobotObjective`: the servo law and friction of every joint each MuJoCo step, goals held
between samples), on 1 thread and on one thread per core (the fit's ``--jobs``); and the
bare ``mujoco.rollout`` of the same model, timestep and number of steps, zero control, no
servo law, on 1 thread and on one thread per core; and the bare rollout with the friction
rows a servo joint adds, then with all that ServoArm hands MuJoCo on a servo joint (rows,
implicit damping, armature), which leaves our kernel's own cost apart. The figure is
robot-steps/s (one step of the whole robot); the median of interleaved repetitions.
Target (issue 37): ours at least 0.8x bare.

Run: ``tools/workspace.sh exec python benchmarks/robot_rollouts.py``; writes
``benchmarks/results/robot_rollouts.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from provenance import environment, write_result

from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import RobotSpace
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.mujoco_arm.servo_arm import STIFF_IMPEDANCE
from bam_sim.mujoco_arm.shipped_arms import arm_spec, models_dir
from bam_sim.robot.joint_map import joint_map
from bam_sim.robot.rollout import bind, simulated_recording

HERE = Path(__file__).resolve().parent
TARGET = 0.8


def thread_counts(cores: int) -> tuple[tuple[int, str], ...]:
    """The thread counts measured and their roles."""
    return ((1, "1_core"), (cores, "all_cores"))
ROBOTS = {
    "so101_class": (models_dir() / "so101_class.xml",
                    ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll",
                     "gripper"]),
    "feetech_2r": (arm_spec("feetech").mjcf, ["shoulder", "elbow"]),
}


def recordings(mjcf: Path, names: list[str], count: int, seconds: float) -> tuple:
    joints = joint_map({"joints": [{"joint": n, "actuator": "sts3215", "gain": 32}
                                   for n in names]})
    truth = published_named("sts3215", "m1")
    arm = bind(mujoco.MjModel.from_xml_path(str(mjcf)), joints, [truth] * len(names))
    rng = np.random.default_rng(0)
    n = int(seconds * 50)
    out = []
    for k in range(count):
        goal = np.repeat(rng.uniform(-0.8, 0.8, (n // 25 + 1, len(names))), 25, axis=0)[:n]
        out.append(simulated_recording(arm, f"r{k}", np.arange(n) * 0.02, goal,
                                       np.full(len(names), 32.0), np.zeros(len(names))))
    return joints, truth, out


def ours(mjcf: Path, joints, truth, recs, candidates: int, threads: int) -> tuple[float, int]:
    """(seconds, robot-steps) of scoring a population of ``candidates`` sets over ``recs``
    on ``threads`` threads, as the robot fit does (``fit --jobs``)."""
    model = mujoco.MjModel.from_xml_path(str(mjcf))
    space = RobotSpace.build(joints.with_model(get_model("m1")), {})
    objective = RobotObjective(space, model, recs, threads=threads)
    population = np.stack([np.stack([truth.vector()] * len(joints.joints))] * candidates)
    objective.residuals(population[:threads])  # every thread's robot warm
    per_candidate = sum(int(round(r.time[-1] / model.opt.timestep)) for r in recs)
    start = time.perf_counter()
    objective.residuals(population)
    return time.perf_counter() - start, candidates * per_candidate


def bare(mjcf: Path, steps: int, batch: int, threads: int,
         friction: dict[str, float] | None = None,
         servo: tuple[float, float] | None = None) -> tuple[float, int]:
    """(seconds, robot-steps) of ``mujoco.rollout``, zero control; ``friction``: the
    frictionloss (N·m) of named joints, the constraint rows a servo joint adds; ``servo``
    (damping, armature) adds what else ServoArm hands MuJoCo on those joints: the viscous
    friction as implicit damping, the rotor's armature and the stiff friction rows."""
    model = mujoco.MjModel.from_xml_path(str(mjcf))
    for joint, value in (friction or {}).items():
        dof = model.joint(joint).dofadr[0]
        model.dof_frictionloss[dof] = value
        if servo is not None:
            model.dof_damping[dof], model.dof_armature[dof] = servo
            model.dof_solref[dof] = (2.0 * model.opt.timestep, 1.0)
            model.dof_solimp[dof, :2] = STIFF_IMPEDANCE
    datas = [mujoco.MjData(model) for _ in range(threads)]
    state = np.zeros((batch, mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
    for i in range(batch):
        mujoco.mj_getState(model, datas[0], state[i], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    control = np.zeros((batch, steps // batch, model.nu))
    start = time.perf_counter()
    mj_rollout.rollout(model, datas if threads > 1 else datas[0], state, control)
    return time.perf_counter() - start, (steps // batch) * batch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--recordings", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    results = {}
    for name, (mjcf, names) in ROBOTS.items():
        joints, truth, recs = recordings(mjcf, names, args.recordings, args.seconds)
        friction = dict.fromkeys(names, truth.values["friction_base"])
        servo = (truth.values["friction_viscous"], truth.values["armature"])
        ours(mjcf, joints, truth, recs, 1, 1)  # kernels loaded, caches warm
        rows: dict[str, list[float]] = {}
        # Keys name the thread counts by role ("1_core", "all_cores"): the docs read them
        # whatever the machine's core count (recorded beside).
        for _ in range(args.repeats):
            for threads, role in thread_counts(cores):
                seconds, steps = ours(mjcf, joints, truth, recs, args.candidates, threads)
                rows.setdefault(f"ours_{role}", []).append(steps / seconds)
                batch = args.candidates * len(recs)
                seconds, done = bare(mjcf, steps, batch, threads)
                rows.setdefault(f"bare_{role}", []).append(done / seconds)
                seconds, done = bare(mjcf, steps, batch, threads, friction)
                rows.setdefault(f"bare_friction_{role}", []).append(done / seconds)
                seconds, done = bare(mjcf, steps, batch, threads, friction, servo)
                rows.setdefault(f"bare_servo_{role}", []).append(done / seconds)
        rates = {k: statistics.median(v) for k, v in rows.items()}
        ratios = {f"ratio_{role}": rates[f"ours_{role}"] / rates[f"bare_{role}"]
                  for _, role in thread_counts(cores)}
        # How much of the gap is MuJoCo's own: the bare model with the friction rows, and
        # with everything a servo joint hands MuJoCo (the servo kernel's own cost is the rest).
        ratios["ratio_friction_1_core"] = rates["ours_1_core"] / rates["bare_friction_1_core"]
        ratios["ratio_servo_1_core"] = rates["ours_1_core"] / rates["bare_servo_1_core"]
        results[name] = {"robot_steps_per_s": rates, **ratios,
                         "met": all(ratios[f"ratio_{role}"] >= TARGET
                                    for _, role in thread_counts(cores))}
        print(name, {k: f"{v:.3g}" for k, v in {**rates, **ratios}.items()})
    doc = {"benchmark": "robot_rollouts", "target_ratio": TARGET, "cores": cores,
           "settings": vars(args), "results": results, "environment": environment()}
    write_result(HERE / "results" / "robot_rollouts.json", doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
