"""An SO-101-class arm identified from its own recordings: the robot fit beside mujoco.sysid.

The truth: the SO-101-class arm (``bam_sim/mjcf/so101_class.xml``), six STS3215 servos
running the published M1 set under their firmware law, each fed through ``--sag`` Ω of
series resistance (its supply sags with the current it draws: the ``supply`` group) and
acting on each goal ``--latency`` s after it was sent (the bus and the firmware: the
``latency`` group). Recordings of teleoperation-like motion (slow minimum-jerk reaches,
fast flicks, holds under gravity), the goals sampled at ``--rate`` Hz (30: LeRobot's
rate) and held between samples, the readings quantized to the STS3215's 4096 ticks per
turn with Gaussian noise of ``--noise`` ticks. Four recordings train, two validate. The
floor: the truth's own MAE on the validation recordings (what noise and quantization
leave).

* **ours**: ``fit --robot``'s search (:class:`bam_identify.robot.objective.RobotObjective`,
  M1 with the ``latency`` and ``supply`` groups the truth has, CMA-ES and the polish), the
  firmware's error gain ratio and slew held at the release's values (they trade with k_t
  and R on step goals, see the robot tutorial);
* **mujoco.sysid**: mujoco_playground's recipe for the SO-101, with ``mujoco.sysid``
  (Gauss-Newton over ``mujoco.rollout``): each joint a MuJoCo ``<position>`` actuator
  (force limited to the STS3215's stall torque), its armature, damping, frictionloss and
  stiffness kp fitted per joint (24 parameters), the recorded goal as the control.

Each fitted model rolls out the validation recordings at their sample times; the figure
is the position MAE over joints and samples. Wall times: each fit's, and how long ours
took to reach mujoco.sysid's final training MAE (its result, on the same measure).
mujoco.sysid's extra dependencies go into ``benchmarks/.venv-sysid`` (made on first run,
the workspace's packages seen through a .pth).

Run: ``tools/workspace.sh exec python benchmarks/so101_sysid.py [--rate 30] [--trials N]``;
writes ``benchmarks/results/so101_sysid_<rate>hz.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout
from provenance import environment, write_result

from bam_identify.fitting.fit import FitSettings, run_search
from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import RobotSpace
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.shipped_arms import models_dir
from bam_sim.robot.joint_map import joint_map
from bam_sim.robot.recording import RobotRecording
from bam_sim.robot.rollout import bind, simulated_recording

HERE = Path(__file__).resolve().parent
# mujoco.sysid's extra dependencies live in a venv of their own that sees the workspace's
# packages (the same MuJoCo): the workspace installs none of them.
SYSID_VENV = HERE / ".venv-sysid"
MJCF = models_dir() / "so101_class.xml"
NAMES = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]
GAIN = 32.0  # the STS3215's firmware P gain of the release
TICK = 2.0 * np.pi / 4096
TRAIN, VALIDATE = 4, 2


def teleoperation(rng: np.random.Generator, seconds: float, rate: float) -> np.ndarray:
    """Goals (T, 6) at ``rate`` Hz: reaches (minimum jerk, 1-2.5 s), flicks (a step, a
    quarter second held) and holds (1 s), in random order, within each joint's range."""
    model = mujoco.MjModel.from_xml_path(str(MJCF))
    low, high = model.jnt_range[:, 0] * 0.7, model.jnt_range[:, 1] * 0.7
    goals, pose = [], np.zeros(len(NAMES))
    while len(goals) < seconds * rate:
        kind = rng.integers(3)
        target = rng.uniform(low, high)
        if kind == 0:  # reach
            n = int(rng.uniform(1.0, 2.5) * rate)
            s = np.linspace(0.0, 1.0, n)[:, None]
            goals.extend(pose + (target - pose) * (10 * s**3 - 15 * s**4 + 6 * s**5))
            pose = target
        elif kind == 1:  # flick: a step to a nearby pose
            pose = np.clip(pose + rng.uniform(-0.4, 0.4, pose.size), low, high)
            goals.extend([pose] * int(0.25 * rate))
        else:  # hold under gravity
            goals.extend([pose] * int(rate))
    return np.array(goals[:int(seconds * rate)])


def truth_set(args) -> ParameterSet:
    """The published M1 set, with the supply's series resistance ``--sag`` where > 0."""
    truth = published_named("sts3215", "m1")
    if args.sag <= 0.0:
        return truth
    return truth.replace(**{"supply.resistance": args.sag, "supply.min_voltage": 0.0})


def groups(args) -> tuple[str, ...]:
    """The optional groups the truth has, which the robot fit identifies."""
    return tuple(g for g, on in (("latency", args.latency > 0.0), ("supply", args.sag > 0.0))
                 if on)


def recordings(args) -> tuple[list[RobotRecording], list[RobotRecording], float]:
    """(train, validation, the truth's validation MAE) of the simulated arm."""
    joints = joint_map({"joints": [{"joint": n, "actuator": "sts3215", "gain": GAIN}
                                   for n in NAMES]})
    truth = truth_set(args)
    arm = bind(mujoco.MjModel.from_xml_path(str(MJCF)), joints, [truth] * len(NAMES))
    latency = np.full(len(NAMES), args.latency)
    rng = np.random.default_rng(args.seed)
    out, floor = [], []
    for k in range(TRAIN + VALIDATE):
        goal = teleoperation(rng, args.seconds, args.rate)
        time_ = np.arange(len(goal)) / args.rate
        gain, zero = np.full(len(NAMES), GAIN), np.zeros(len(NAMES))
        exact = simulated_recording(arm, f"teleop{k}", time_, goal, gain, zero,
                                    latency=latency)
        sensed = simulated_recording(arm, f"teleop{k}", time_, goal, gain, zero, tick=TICK,
                                     noise=args.noise * TICK, seed=args.seed + k,
                                     latency=latency)
        floor.append(np.abs(sensed.position - exact.position).mean())
        out.append(sensed)
    return out[:TRAIN], out[TRAIN:], float(np.mean(floor[TRAIN:]))


def ours(train, validation, args, reference_train_mae: float) -> dict:
    """The robot fit; besides its own wall time, when its best training MAE first reached
    ``reference_train_mae`` (mujoco.sysid's, on the same recordings)."""
    joints = joint_map({"joints": [{"joint": n, "actuator": "sts3215", "gain": GAIN}
                                   for n in NAMES]})
    truth = truth_set(args)
    truths = {**truth.values, "latency.command": args.latency}  # the reading's delay: 0
    held = {k: truth.values[k] for k in ("error_gain_ratio", "max_velocity")}
    model = mujoco.MjModel.from_xml_path(str(MJCF))
    space = RobotSpace.build(joints.with_model(get_model("m1")), held, groups(args),
                             identify_offsets=False)
    started = time.perf_counter()
    reached: list[float] = []

    def progress(count: int, best: float) -> None:
        if not reached and best <= reference_train_mae:
            reached.append(time.perf_counter() - started)

    objective = RobotObjective(space, model, train)
    result = run_search(space, objective, FitSettings(trials=args.trials, seed=args.seed),
                        {"data": objective.fingerprint()}, True, progress)
    seconds = time.perf_counter() - started
    vectors = space.population_of([result.values])[0]
    mae = float(RobotObjective(space, model, validation).per_joint(vectors).mean())
    found = {k.split("/", 1)[1]: v for k, v in result.values.items()}
    return {"validation_mae": mae, "train_mae": result.train_mae, "seconds": seconds,
            "seconds_to_sysid_train_mae": reached[0] if reached else None,
            "trials": result.trials, "values": found,
            "truth": {k: truths[k] for k in found},
            "relative_error": {k: abs(v / truths[k] - 1.0) if truths[k] else None
                               for k, v in found.items()},
            "damping_kt2_over_R_plus_Kv": {
                "found": found["kt"] ** 2 / found["R"] + found["friction_viscous"],
                "truth": truth.values["kt"] ** 2 / truth.values["R"]
                + truth.values["friction_viscous"]}}


def position_spec(stall: float) -> mujoco.MjSpec:
    """The arm with each servo a MuJoCo position actuator (force within ±``stall`` N·m)
    and a joint position sensor."""
    spec = mujoco.MjSpec.from_file(str(MJCF))
    for name in NAMES:
        actuator = spec.actuator(name)
        actuator.set_to_position(kp=10.0)
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = [-stall, stall]
        spec.add_sensor(name=f"{name}_pos", type=mujoco.mjtSensor.mjSENS_JOINTPOS,
                        objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=name)
    return spec


def _set_joint(spec, joint: str, key: str, value: float) -> None:
    """A joint's ``key`` in ``spec``; an array field (MuJoCo 4's damping) gets it first."""
    current = getattr(spec.joint(joint), key)
    if np.ndim(current):
        current = np.array(current, dtype=float)
        current[0] = value
        value = current
    setattr(spec.joint(joint), key, value)


def _held_goals(rec: RobotRecording, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """(times, goals) at every model step, each goal held until the next sample."""
    steps = int(round(rec.time[-1] / dt))
    times = np.arange(steps + 1) * dt
    index = np.clip(np.searchsorted(rec.time, times + 1e-9, side="right") - 1, 0, None)
    return times, rec.goal[index]


def _initial(model: mujoco.MjModel, rec: RobotRecording) -> np.ndarray:
    from mujoco import sysid

    data = mujoco.MjData(model)
    data.qpos[:] = rec.position[0]
    return sysid.create_initial_state(model, data.qpos, data.qvel, data.act)


def sysid_fit(train, validation, stall: float, iterations: int) -> dict:
    """mujoco_playground's SO-101 recipe with mujoco.sysid; its validation MAE (run in the
    sysid venv: :func:`run_sysid`)."""
    from mujoco import sysid

    spec = position_spec(stall)
    model = spec.compile()
    params = sysid.ParameterDict()
    for name in NAMES:
        for key, nominal, low, high in (("armature", 0.01, 1e-4, 0.2),
                                        ("damping", 0.5, 0.0, 5.0),
                                        ("frictionloss", 0.05, 0.0, 1.0)):
            params.add(sysid.Parameter(
                f"{name}_{key}", nominal=nominal, min_value=low, max_value=high,
                modifier=lambda s, p, name=name, key=key: _set_joint(s, name, key,
                                                                     p.value[0])))
        params.add(sysid.Parameter(
            f"{name}_kp", nominal=10.0, min_value=1.0, max_value=200.0,
            modifier=lambda s, p, name=name: sysid.apply_pgain(s, name, p.value[0])))
    controls, sensors, states = [], [], []
    for rec in train:
        times, goals = _held_goals(rec, model.opt.timestep)
        controls.append(sysid.TimeSeries(times, goals))
        sensors.append(sysid.TimeSeries.from_names(rec.time, rec.position, model))
        states.append(_initial(model, rec))
    sequences = sysid.ModelSequences("so101", spec, [r.name for r in train], states,
                                     controls, sensors)
    started = time.perf_counter()
    fitted, _ = sysid.optimize(initial_params=params,
                               residual_fn=sysid.build_residual_fn(models_sequences=[sequences]),
                               optimizer="mujoco", verbose=False, max_iters=iterations)
    seconds = time.perf_counter() - started
    best = sysid.apply_param_modifiers(fitted, spec)

    def mae(recs: list[RobotRecording]) -> float:
        return float(np.mean([np.abs(_positions(best, r) - r.position).mean() for r in recs]))

    return {"validation_mae": mae(validation), "train_mae": mae(train), "seconds": seconds,
            "values": {k: float(p.value[0]) for k, p in fitted.items()}}


def _positions(model: mujoco.MjModel, rec: RobotRecording) -> np.ndarray:
    """The joint positions (T, 6) of ``model`` at the recording's sample times."""
    times, goals = _held_goals(rec, model.opt.timestep)
    state, _ = mj_rollout.rollout(model, mujoco.MjData(model), _initial(model, rec),
                                  goals[None, :-1])
    qpos = state[0, :, 1:1 + model.nq]  # state: time, qpos, qvel, act (FULLPHYSICS)
    steps = np.rint(rec.time / model.opt.timestep).astype(int)
    start = np.concatenate([[rec.position[0]], qpos])  # the rollout starts after step 0
    return start[steps]


def sysid_python() -> Path:
    """The sysid venv's interpreter, made on first use (the workspace's packages seen
    through a .pth, mujoco[sysid]'s extra dependencies installed into it)."""
    python = SYSID_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(SYSID_VENV)], check=True)
        site = next((SYSID_VENV / "lib").glob("python3*/site-packages"))
        (site / "workspace.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    f"mujoco[sysid]=={mujoco.__version__}"], check=True)
    return python


def run_sysid(train, validation, args) -> dict:
    """:func:`sysid_fit` in the sysid venv, the recordings handed over in a file."""
    truth = truth_set(args)
    stall = truth.values["kt"] * truth.actuator.supply_voltage / truth.values["R"]
    with tempfile.TemporaryDirectory() as folder:
        job, out = Path(folder) / "job.npz", Path(folder) / "out.json"
        arrays = {f"{part}{k}_{field}": getattr(rec, field)
                  for part, recs in (("train", train), ("validation", validation))
                  for k, rec in enumerate(recs)
                  for field in ("time", "position", "goal", "gain", "enabled")}
        np.savez(job, stall=stall, iterations=args.sysid_iters, **arrays)
        subprocess.run([str(sysid_python()), __file__, "--sysid-job", str(job), str(out)],
                       check=True)
        return json.loads(out.read_text())


def _sysid_job(job: Path, out: Path) -> None:
    """The sysid venv's half: read the recordings, fit, write the result."""
    arrays = np.load(job)

    def recs(part: str) -> list[RobotRecording]:
        count = len({k.split("_")[0] for k in arrays.files if k.startswith(part)})
        return [RobotRecording(f"{part}{k}", *(arrays[f"{part}{k}_{f}"] for f in
                                               ("time", "position", "goal", "gain", "enabled")))
                for k in range(count)]

    result = sysid_fit(recs("train"), recs("validation"), float(arrays["stall"]),
                       int(arrays["iterations"]))
    out.write_text(json.dumps(result))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--noise", type=float, default=0.5, help="ticks (1 sigma)")
    parser.add_argument("--latency", type=float, default=0.01,
                        help="s from a goal sent to the servo acting on it (0: none)")
    parser.add_argument("--sag", type=float, default=0.5,
                        help="Ω of series resistance feeding each servo (0: a stiff supply)")
    parser.add_argument("--trials", type=int, default=1500)
    parser.add_argument("--sysid-iters", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sysid-job", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sysid_job:
        _sysid_job(*args.sysid_job)
        return 0
    logging.getLogger().setLevel(logging.WARNING)
    train, validation, floor = recordings(args)
    theirs = run_sysid(train, validation, args)
    print(f"mujoco.sysid: {theirs['validation_mae']:.4g} rad in {theirs['seconds']:.0f} s")
    mine = ours(train, validation, args, theirs["train_mae"])
    print(f"ours: {mine['validation_mae']:.4g} rad ({mine['validation_mae'] / floor:.2f}x "
          f"the floor {floor:.3g}) in {mine['seconds']:.0f} s; mujoco.sysid's training MAE "
          f"reached after {mine['seconds_to_sysid_train_mae']} s")
    doc = {"benchmark": "so101_sysid", "settings": vars(args), "floor_mae": floor,
           "ours": mine, "mujoco_sysid": theirs,
           "ours_vs_floor": mine["validation_mae"] / floor,
           "sysid_vs_ours": theirs["validation_mae"] / mine["validation_mae"],
           "targets": {"ours_within_1_2_floor": mine["validation_mae"] <= 1.2 * floor,
                       "twice_lower_than_sysid": 2.0 * mine["validation_mae"]
                       <= theirs["validation_mae"],
                       "no_slower_than_sysid_to_its_result":
                           mine["seconds_to_sysid_train_mae"] is not None
                           and mine["seconds_to_sysid_train_mae"] <= theirs["seconds"]},
           "environment": environment()}
    write_result(HERE / "results" / f"so101_sysid_{int(args.rate)}hz.json", doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
