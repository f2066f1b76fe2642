"""The paper's 2R arm validation (section VI-B, Fig. 7) on the simulated arms.

On each shipped arm (``dynamixel``: MX-106 + MX-64, ``erob``: eRob80:100 +
eRob80:50, ``feetech``: two STS3215) a *true* arm is simulated with the richer
published model (M4 for the Dynamixel joints, M6 for the eRob joints, M1, the
only one published, for the STS3215; ``bam_sim.models.files.parameter_file
.published``). It plays the four test paths of Fig. 6 (``bam_sim.mujoco_arm.paths``)
with a low and a high servo gain (LG / HG: the first and the last Table I gain
of the joint's actuator), and is compared with the same arm simulated with

* ``m1_published``: the published M1 sets (identified by the authors on their
  own benches, as a user would take them);
* ``m1_refit``: M1 re-identified from pendulum logs of the true model;
* ``m4_refit`` / ``m6_refit``: the richer model re-identified from the same logs;
* ``m4_robot`` / ``m6_robot``: the richer model identified on the arm itself, by the robot
  fit (:mod:`bam_identify.robot`): four recordings of the true arm (random reaches and
  steps sent at 50 Hz, two at each gain, ``duration`` s each, none of them a test path),
  one set per actuator, the fit's MuJoCo step 5 ms as the bench fit's logs'.

Pendulum logs: ``bam_identify.data.synthetic.paper_like_set`` per joint actuator
(Table I masses, lengths and gains, the four section V-A trajectories, 6 s at
5 ms), fitted with ``bam_identify.fitting.fit.identify`` (CMA-ES, fixed seed, modest
budget, bench offset not identified: the logs have none).

Metric: MAE (rad) between the joint positions of the model arm and of the true
arm over the path, both joints (joint space, as in Fig. 7). The arms start at
rest on the path's first point; targets are given every MuJoCo step (1 ms).
Writes ``benchmarks/results/arm_validation.json`` and ``.png`` (``--quick``:
a smoke run, written to ``out/``).

Run: ``tools/workspace.sh exec python benchmarks/arm_validation.py [--quick]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify, run_search
from bam_identify.fitting.space import SearchSpace
from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import RobotSpace
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.paths import PATH_NAMES, ArmPath, arm_path, forward_kinematics
from bam_sim.mujoco_arm.shipped_arms import ArmSpec, arm_spec, load_arm
from bam_sim.robot.joint_map import JointMap, joint_map
from bam_sim.robot.recording import RobotRecording
from bam_sim.robot.rollout import bind, simulated_recording

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ARMS = ("dynamixel", "erob", "feetech")
# Arm (rod) mass of the synthetic pendulum benches, as benchmarks/identification.py.
BENCH_ARM_MASS = {"mx64": 0.1, "mx106": 0.1, "erob80_50": 0.0, "erob80_100": 0.0,
                  "sts3215": 0.02}


@dataclass(frozen=True)
class Settings:
    duration: float = 8.0      # s per path
    logs: int = 24             # pendulum logs per joint actuator
    trials: int = 4000         # CMA-ES budget per fit
    target: float = 1e-4       # stop a fit once its training MAE is at most this (rad)
    noise: float = 0.0         # Gaussian noise on the logged positions (rad)
    seed: int = 0


QUICK = Settings(duration=1.0, logs=4, trials=120, target=1e-3)


def arm_geometry(model: mujoco.MjModel, joints: tuple[str, str] = ("shoulder", "elbow"),
                 tip: str = "tip") -> tuple[float, float, np.ndarray]:
    """(l1, l2, shoulder position) of a 2R arm, read from the compiled MJCF at q = 0."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints]
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, tip)
    if min(ids) < 0 or site < 0:
        raise BamError(f"the arm MJCF needs joints {joints} and a site '{tip}'")
    shoulder, elbow = data.xanchor[ids[0]], data.xanchor[ids[1]]
    return (float(np.linalg.norm(elbow - shoulder)),
            float(np.linalg.norm(data.site_xpos[site] - elbow)), shoulder.copy())


def check_kinematics(model: mujoco.MjModel, path: ArmPath, shoulder: np.ndarray,
                     joints: tuple[str, str] = ("shoulder", "elbow"), tip: str = "tip") -> float:
    """Largest distance (m) between MuJoCo's tip and the path's FK over some targets."""
    data = mujoco.MjData(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, tip)
    qadr = [model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)]
            for j in joints]
    worst = 0.0
    for q in path.q[:: max(1, len(path.q) // 50)]:
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        xz = forward_kinematics(q, path.l1, path.l2)
        tip_xz = data.site_xpos[site][[0, 2]] - shoulder[[0, 2]]
        worst = max(worst, float(np.linalg.norm(tip_xz - xz)))
    return worst


def play(arm_name: str, params: dict[str, ParameterSet], path: ArmPath,
         gains: list[float]) -> np.ndarray:
    """Joint positions (N, 2) of the arm following the path's targets, one per step."""
    arm = load_arm(arm_name, params, gains=gains)
    if abs(arm.dt * (len(path.t) - 1) - path.duration) > 1e-9:
        raise BamError(f"path sampled at {1 / (path.t[1] - path.t[0]):g} Hz; the arm steps at "
                       f"{1 / arm.dt:g} Hz, sample the path at the arm's rate")
    arm.reset(path.q[0])
    out = np.empty_like(path.q)
    qadr = [arm.model.jnt_qposadr[mujoco.mj_name2id(arm.model, mujoco.mjtObj.mjOBJ_JOINT, j)]
            for j in arm.names]
    for k, goal in enumerate(path.q):
        out[k] = arm.data.qpos[qadr]
        arm.set_command(goals=goal)
        arm.step()
    return out


def compare_path(arm_name: str, truth: dict[str, ParameterSet],
                 candidates: dict[str, dict[str, ParameterSet]], path: ArmPath,
                 gains: list[float]) -> dict:
    """MAE (rad, both joints) of each candidate arm against the true arm on one path."""
    q_true = play(arm_name, truth, path, gains)
    row = {"tracking_mae_true": float(np.mean(np.abs(q_true - path.q)))}
    for label, params in candidates.items():
        err = np.abs(play(arm_name, params, path, gains) - q_true)
        row[label] = {"mae": float(err.mean()), "mae_per_joint": err.mean(axis=0).tolist(),
                      "max": float(err.max())}
    return row


def refit(truth: ParameterSet, model: str, settings: Settings) -> tuple[ParameterSet, dict]:
    """``model`` identified from synthetic pendulum logs of ``truth`` (seeded)."""
    logs = paper_like_set(truth, settings.logs, arm_mass=BENCH_ARM_MASS[truth.actuator.name],
                          noise=settings.noise, seed=settings.seed)
    space = SearchSpace.build(truth.actuator, get_model(model), identify_offset=False)
    result = identify(space, logs, FitSettings(trials=settings.trials, seed=settings.seed,
                                               target=settings.target))
    info = {"actuator": truth.actuator.name, "model": model, "truth_model": truth.model.name,
            "logs": len(logs), "train_mae": result.train_mae, "trials": result.trials,
            "seconds": result.seconds, "restarts": result.restarts, "values": result.values}
    params = space.parameter_set(result.values, {"source": "arm_validation refit",
                                                 "train_mae": result.train_mae})
    return params, info


ROBOT_RATE = 50.0  # Hz: the goals of the arm's own recordings
ROBOT_DT = 0.005  # s: the robot fit's MuJoCo step
UNLIMITED = (-2.0, 2.0)  # rad: the range of a joint without limits


def arm_recordings(spec: ArmSpec, truth: dict[str, ParameterSet], gains: dict[str, list],
                   settings: Settings) -> tuple[JointMap, list[RobotRecording]]:
    """The joint map of the arm (gains as recorded) and four recordings of the true arm:
    random reaches (minimum jerk) and steps within 60 % of each joint's range (of
    ``UNLIMITED`` where it has none), two at each gain."""
    joints = joint_map({"joints": [{"joint": j.joint, "actuator": j.actuator,
                                    "motor": j.actuator_name, "gain": "recorded"}
                                   for j in spec.joints]})
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    arm = bind(model, joints, [truth[j.joint] for j in spec.joints])
    ids = [model.joint(j.joint).id for j in spec.joints]
    ranges = np.where(model.jnt_limited[ids, None].astype(bool), model.jnt_range[ids],
                      UNLIMITED)  # the shipped arms' joints have no limits
    low, high = 0.6 * ranges[:, 0], 0.6 * ranges[:, 1]
    rng = np.random.default_rng(settings.seed)
    n = int(settings.duration * ROBOT_RATE)
    out = []
    for k, label in enumerate(("LG", "HG", "LG", "HG")):
        goal, pose = [], 0.5 * (low + high)
        while len(goal) < n:
            target = rng.uniform(low, high)
            steps = int(rng.uniform(0.5, 1.5) * ROBOT_RATE)
            if rng.random() < 0.5:  # a reach
                s = np.linspace(0.0, 1.0, steps)[:, None]
                goal.extend(pose + (target - pose) * (10 * s**3 - 15 * s**4 + 6 * s**5))
            else:  # a step, held
                goal.extend([target] * steps)
            pose = target
        out.append(simulated_recording(arm, f"{label}{k}", np.arange(n) / ROBOT_RATE,
                                       np.array(goal[:n]), np.array(gains[label]),
                                       np.zeros(len(spec.joints)), noise=settings.noise,
                                       seed=settings.seed + k))
    return joints, out


def robot_refit(spec: ArmSpec, truth: dict[str, ParameterSet], model_name: str,
                gains: dict[str, list], settings: Settings) -> tuple[dict, dict]:
    """``model_name`` identified by the robot fit on the arm's own recordings: each
    joint's set, and what the fit did."""
    joints, recordings = arm_recordings(spec, truth, gains, settings)
    space = RobotSpace.build(joints.with_model(get_model(model_name)), {},
                             identify_offsets=False)
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    model.opt.timestep = ROBOT_DT
    objective = RobotObjective(space, model, recordings)
    result = run_search(space, objective, FitSettings(trials=settings.trials,
                                                      seed=settings.seed,
                                                      target=settings.target),
                        {"data": objective.fingerprint()}, True)
    sets = space.parameter_sets(result.values, {"source": "arm_validation robot fit",
                                                "train_mae": result.train_mae})
    info = {"model": model_name, "recordings": len(recordings), "train_mae": result.train_mae,
            "trials": result.trials, "seconds": result.seconds, "values": result.values}
    return {j.joint: sets[j.servo_type] for j in joints.joints}, info


def run_arm(arm_name: str, settings: Settings, paths: tuple[str, ...] = PATH_NAMES) -> dict:
    spec = arm_spec(arm_name)
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    l1, l2, shoulder = arm_geometry(model)
    rich = spec.joints[0].model
    truth = {j.joint: published_named(j.actuator, j.model) for j in spec.joints}
    candidates: dict[str, dict[str, ParameterSet]] = {
        "m1_published": {j.joint: published_named(j.actuator, "m1") for j in spec.joints},
        "m1_refit": {}, f"{rich}_refit": {}}
    fits = {}
    for j in spec.joints:
        for model_name in ("m1", rich):
            params, info = refit(truth[j.joint], model_name, settings)
            candidates[f"{model_name}_refit"][j.joint] = params
            fits[f"{j.joint}_{model_name}"] = info
            print(f"  {arm_name} {j.joint} ({j.actuator}) {model_name}: train MAE "
                  f"{info['train_mae']:.2e} rad, {info['trials']} trials, "
                  f"{info['seconds']:.1f} s")
    acts = [truth[j.joint].actuator for j in spec.joints]
    gains = {"LG": [a.gains[0] for a in acts], "HG": [a.gains[-1] for a in acts]}
    robot_sets, fits["robot"] = robot_refit(spec, truth, rich, gains, settings)
    candidates = {**candidates, f"{rich}_robot": robot_sets}
    print(f"  {arm_name} robot fit {rich}: train MAE {fits['robot']['train_mae']:.2e} rad, "
          f"{fits['robot']['trials']} trials, {fits['robot']['seconds']:.1f} s")
    rate = 1.0 / model.opt.timestep
    results, shapes, kin = {}, {}, 0.0
    for name in paths:
        path = arm_path(name, l1, l2, duration=settings.duration, rate=rate)
        shapes[name] = path.shape.__dict__
        kin = max(kin, check_kinematics(model, path, shoulder))
        for label, g in gains.items():
            row = compare_path(arm_name, truth, candidates, path, g)
            results[f"{name}_{label}"] = row
            print(f"  {arm_name} {name} {label}: "
                  + ", ".join(f"{k} {row[k]['mae'] * 1e3:.3f} mrad" for k in candidates))
    if kin > 1e-9:
        raise BamError(f"arm_paths kinematics and the {arm_name} MJCF disagree by {kin:.3g} m")
    return {
        "title": spec.title, "mjcf": spec.filename,
        "mjcf_sha256": hashlib.sha256(spec.mjcf.read_bytes()).hexdigest(),
        "link_lengths_m": [l1, l2], "shoulder_position_m": shoulder.tolist(),
        "kinematics_check_m": kin, "path_shapes_m": shapes, "true_model": rich,
        "actuators": [j.actuator for j in spec.joints], "gains": gains,
        "fits": fits, "paths": results, "summary": summary(results, list(candidates), rich),
    }


def summary(results: dict, labels: list[str], rich: str) -> dict:
    """Mean MAE of each model over paths and gains; the published and refit M1 against
    the richer bench refit, and the robot fit's against it."""
    means = {k: float(np.mean([r[k]["mae"] for r in results.values()])) for k in labels}
    bench = [k for k in labels if not k.endswith("_robot")]
    refit_, robot = f"{rich}_refit", f"{rich}_robot"
    return {"mean_mae": means,
            "m1_published_over_rich": means["m1_published"] / means[refit_],
            "m1_refit_over_rich": means["m1_refit"] / means[refit_],
            "robot_over_bench_refit": means[robot] / means[refit_],
            "rich_best_everywhere": all(r[refit_]["mae"] <= min(r[k]["mae"] for k in bench)
                                        for r in results.values())}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = result["arms"]
    fig, axes = plt.subplots(len(arms), 1, figsize=(10, 3.6 * len(arms)), squeeze=False)
    for ax, arm in zip(axes[:, 0], arms.values()):
        groups = list(arm["paths"])
        labels = list(arm["summary"]["mean_mae"])
        width = 0.8 / len(labels)
        x = np.arange(len(groups))
        for i, label in enumerate(labels):
            values = [arm["paths"][g][label]["mae"] * 1e3 for g in groups]
            ax.bar(x + (i - (len(labels) - 1) / 2) * width, values, width, label=label)
        ax.set_xticks(x, [g.replace("_LG", "\nLG").replace("_HG", "\nHG") for g in groups],
                      fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("MAE vs true arm / mrad")
        ax.set_title(f"{arm['title']}: true model {arm['true_model'].upper()} (published)")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: short paths, tiny fits, written to out/")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--trials", type=int, help="CMA-ES budget per fit")
    parser.add_argument("--noise", type=float, help="noise on the pendulum logs, rad")
    parser.add_argument("--output", type=Path, help="JSON path (the PNG goes next to it)")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    changes = {k: v for k, v in (("trials", args.trials), ("noise", args.noise)) if v is not None}
    settings = Settings(**{**settings.__dict__, **changes})
    output = args.output or (ROOT / "out" / "arm_validation_quick.json" if args.quick
                             else HERE / "results" / "arm_validation.json")
    sys.path.insert(0, str(HERE))
    from provenance import environment

    start = time.perf_counter()
    result = {"environment": environment(), "settings": settings.__dict__,
              "method": __doc__.split("\n\n", 1)[1].split("\n\nRun:")[0], "arms": {}}
    for name in args.arms:
        print(f"{name}:")
        result["arms"][name] = run_arm(name, settings)
    result["seconds"] = time.perf_counter() - start
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    plot(result, output.with_suffix(".png"))
    for name, arm in result["arms"].items():
        s = arm["summary"]
        print(f"{name}: mean MAE " + ", ".join(f"{k} {v * 1e3:.3f} mrad"
                                                for k, v in s["mean_mae"].items())
              + f"; M1 published / {arm['true_model']} refit = "
              f"{s['m1_published_over_rich']:.1f}")
    print(f"wrote {output} and {output.with_suffix('.png')} in {result['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
