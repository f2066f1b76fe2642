"""The robot fit and its evaluation: recordings in, parameter files and a report out.

``fit --robot robot.xml --joints joints.yaml --bags ...`` (or ``--lerobot DIR``):
every servo type's set (shared by its joints, or one per joint) and each joint's
offset, identified by CMA-ES and the LM polish of the bench fit
(:func:`bam_identify.fitting.fit.run_search`) on rollouts of the whole robot
(:class:`~bam_identify.robot.objective.RobotObjective`). The recordings are split
into training and validation by recording, seeded. Written: one parameter file per
servo type and model (``--output``, ``{actuator}`` being the type), and the report
folder (``report.md``, ``summary.json``, a figure per model of a validation recording).
Each model of ``--models`` is fitted on every joint; without ``--models``, a joint map
that gives each joint its ``model`` is fitted as it stands (one fit, its label the
models joined, e.g. ``m4+m6``), and one that gives none is fitted with the bench fit's
default models.

Each type's file records the interval of each of its parameters within ``--sensitivity``
% of the fit's training error (:mod:`bam_identify.fitting.sensitivity`, profiled on the
robot's rollouts; the friction scale moves every type's friction together), as the bench
fit's do: ``export --randomization`` reads them. The offsets' intervals are in the report.

``eval --robot ... --params FILE...`` scores parameter files on a robot's
recordings: each joint runs the file of its actuator (or ``joint=FILE``), with the
offsets of the joint map (the fit writes the map with its offsets into the report
folder, ``<model>_joints.yaml``); per joint MAE.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bam_identify.fitting.fit import FitResult, FitSettings, run_search
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.outcome import save_fit
from bam_identify.fitting.provenance import version
from bam_identify.fitting.report import check_report_folder
from bam_identify.fitting.sensitivity import FRICTION_SCALE, sensitivity
from bam_identify.fitting.space import best_nested, parse_assignments
from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import OFFSET, RobotSpace, apply_bodies, robot_bodies
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_output, output_file, write_new
from bam_sim.models.files.parameter_file import load
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm import mujoco_warnings
from bam_sim.robot.joint_map import JointMap, load_joint_map
from bam_sim.robot.recording import RobotRecording
from bam_sim.robot.rollout import bind, latencies, load_model, rollout

FIGURE_FORMATS = (".png", ".pdf", ".svg")  # eval --figure: what matplotlib writes here
# Optional groups a robot fit does not identify yet, and why.
ROBOT_LACKS = {
    "thermal": "robot recordings carry no winding temperature to fit it on",
}


@dataclass
class RobotData:
    """A robot, its joint map and its recordings, split by recording."""

    mjcf: Path
    joints: JointMap
    train: list[RobotRecording]
    validation: list[RobotRecording]
    sources: list[str] = field(default_factory=list)


def read_recordings(joints: JointMap, bags: list[Path], lerobot: list[Path],
                    cancel: Cancellation) -> tuple[list[RobotRecording], list[str]]:
    """Every recording of ``bags`` and LeRobot datasets ``lerobot``, and their sources."""
    if not bags and not lerobot:
        raise BamError("give the robot's recordings: --bags (rosbag2 with joint_states and "
                       "the commands sent) or --lerobot (a LeRobot dataset folder)")
    recordings: list[RobotRecording] = []
    sources: list[str] = []
    if bags:
        from bam_identify.data.dataset import bag_paths
        from bam_identify.data.robot_bags import read_robot_bag

        for path in bag_paths(bags):
            cancel.check()
            recordings.extend(read_robot_bag(path, joints))
            sources.append(str(path))
    if lerobot:
        from bam_identify.data.lerobot import read_lerobot

        for folder in lerobot:
            cancel.check()
            recordings.extend(read_lerobot(folder, joints))
            sources.append(str(folder))
    return recordings, sources


def split(recordings: list[RobotRecording], fraction: float, seed: int
          ) -> tuple[list[RobotRecording], list[RobotRecording]]:
    """(train, validation) by recording: round(fraction·count) held out, seeded; at least
    one recording is trained on."""
    count = min(round(fraction * len(recordings)), len(recordings) - 1)
    order = np.random.default_rng(seed).permutation(len(recordings))
    held = set(order[:count].tolist())
    return ([r for i, r in enumerate(recordings) if i not in held],
            [r for i, r in enumerate(recordings) if i in held])


def load_robot(args, cancel: Cancellation) -> RobotData:
    joints = load_joint_map(args.joints)
    if getattr(args, "per_joint", False):
        joints = joints.per_joint()
    load_model(args.robot)  # refused before the recordings are read
    recordings, sources = read_recordings(joints, args.bags, args.lerobot, cancel)
    train, validation = split(recordings, getattr(args, "validation_fraction", 0.0),
                              getattr(args, "seed", 0))
    return RobotData(Path(args.robot), joints, train, validation, sources)


@dataclass
class RobotResult:
    model: str  # the label of the fit's models (RobotSpace.label)
    joints: JointMap  # with the models fitted
    fitted: FitResult
    sets: dict[str, ParameterSet]
    offsets: dict[str, float]
    intervals: dict  # sensitivity(): each free value's interval, keyed as the space's names
    train_mae: np.ndarray  # (joints,)
    validation_mae: np.ndarray | None
    outputs: list[Path]
    diverged: int = 0  # candidates of the search that made MuJoCo diverge
    export_note: str = ""
    space: RobotSpace | None = None
    vectors: np.ndarray | None = None  # the fitted candidate's rows (RobotSpace.population)

    @property
    def bodies(self) -> dict[str, dict[str, float]]:
        """Each identified body's mass and inertia scale."""
        return {} if self.space is None else self.space.body_values(self.fitted.values)


def fit_robot(args, cancel: Cancellation) -> str:
    """The robot fit of the parsed ``fit`` options (``args.robot`` given); its summary."""
    check_report_folder(args.report, args.force)
    data = load_robot(args, cancel)
    model = load_model(data.mjcf)
    results: list[RobotResult] = []
    candidates = fit_candidates(args.models, data.joints)
    for joints in candidates:
        results.append(_fit_model(args, data, model, joints, len(candidates) > 1, cancel,
                                  _warm_start(args, joints, results)))
    _write_report(args.report, data, results, args.force)
    lines = [f"{r.model}: train MAE {r.train_mae.mean():.4g} rad" +
             ("" if r.validation_mae is None else
              f", validation MAE {r.validation_mae.mean():.4g} rad") + _diverged(r)
             for r in results]
    return "\n".join([*lines, f"report: {args.report / 'report.md'}"])


def fit_candidates(models: list[str] | None, joints: JointMap) -> list[JointMap]:
    """The joint maps to fit, each with its models (module docstring)."""
    if models:
        return [joints.with_model(get_model(name)) for name in dict.fromkeys(models)]
    if joints.modelled:
        return [joints]
    given = [j.joint for j in joints.joints if j.model is not None]
    if given:
        missing = next(j.joint for j in joints.joints if j.model is None)
        raise BamError(f"{joints.source}: joint '{given[0]}' names its model and joint "
                       f"'{missing}' does not; give every joint a 'model', or --models")
    return [joints.with_model(get_model(name)) for name in FitJob.models]


def _warm_start(args, joints: JointMap, results: list[RobotResult]) -> RobotResult | None:
    """The best nested simpler model fitted so far, to start from (None: start cold): the
    richer model then ends no worse than it on the training recordings. Only where one
    model runs on every joint."""
    models = {j.model.name for j in joints.joints}
    if args.no_warm_start or len(models) != 1:
        return None
    by_name = {r.model: r for r in results}
    best = best_nested(models.pop(), {name: r.fitted.train_mae for name, r in by_name.items()})
    return None if best is None else by_name[best]


def _fit_model(args, data: RobotData, model, joints: JointMap, several: bool,
               cancel: Cancellation, base: RobotResult | None) -> RobotResult:
    for j in joints.joints:
        if j.model.elastoplastic:
            raise BamError(f"joint '{j.joint}': {j.model.name}: a robot fit runs M1..M6 and "
                           "lugre; the elasto-plastic models are identified on the bench")
    unsupported = sorted(set(args.groups) & ROBOT_LACKS.keys())
    if unsupported:
        raise BamError(f"--groups {unsupported[0]}: {ROBOT_LACKS[unsupported[0]]}")
    bodies = robot_bodies(model, args.payload, args.inertia)
    space = RobotSpace.build(joints, parse_assignments(args.set), tuple(args.groups),
                             not args.no_offset, bodies)
    label = space.label
    objective = RobotObjective(space, model, data.train, cancel, threads=args.jobs)
    # A stored study is recorded, resumed or shared by workers as a bench fit's is.
    study = args.study or f"bam_robot_{label}_seed{args.seed}"
    if args.study and several:
        study = f"{args.study}_{label}"
    settings = FitSettings(trials=args.trials, seed=args.seed, popsize=args.popsize,
                           target=args.target_mae, storage=args.storage, study_name=study,
                           shares=args.workers, polish=not args.no_polish,
                           start=space.nested_start(base.fitted.values) if base else None)
    fingerprint = {"robot": str(data.mjcf), "model": label, "data": objective.fingerprint(),
                   "bounds": {k: list(v) for k, v in space.bounds.items()},
                   "seed": args.seed}
    progress = None if args.quiet else _Progress(f"{label} ({len(space.names)} parameters)",
                                                 args.trials)
    try:
        with mujoco_warnings.silenced():  # counted in objective.diverged, said once below
            fitted = run_search(space, objective, settings, fingerprint, True,
                                progress, cancel)
    finally:
        if progress is not None:
            progress.close()
    vectors = space.population_of([fitted.values])[0]
    train_mae = objective.per_joint(vectors).mean(axis=0)
    validation_mae = None
    if data.validation:
        check = RobotObjective(space, model, data.validation, cancel)
        validation_mae = check.per_joint(vectors).mean(axis=0)
    provenance = _provenance(args, data, label, fitted)
    if base is not None:
        provenance["warm_start"] = base.model
    diverged = objective.diverged  # the search's, before the profile probes the bounds
    intervals = sensitivity(objective, fitted.values, args.sensitivity)
    sets = {kind: dataclasses.replace(params, provenance={
                **params.provenance, "sensitivity": _of_type(intervals, kind)})
            for kind, params in space.parameter_sets(fitted.values, provenance).items()}
    outputs = [save_fit(params, Path(str(args.output).format(actuator=kind,
                                                             model=params.model.name)),
                        args.force, fitted.interrupted) for kind, params in sets.items()]
    return RobotResult(label, joints, fitted, sets, space.offsets(fitted.values), intervals,
                       train_mae, validation_mae, outputs, diverged, space=space,
                       vectors=vectors)


def _of_type(intervals: dict, kind: str) -> dict:
    """The sensitivity record of servo type ``kind``, in a bench fit's layout."""
    own = {k: v for k, v in intervals.items() if k != "parameters"}
    return {**own, "parameters": RobotSpace.of_type(intervals["parameters"], kind)}


def _diverged(result: RobotResult) -> str:
    return (f"; MuJoCo diverged on {result.diverged} candidate(s), scored infinite"
            if result.diverged else "")


def _provenance(args, data: RobotData, model: str, fitted: FitResult) -> dict:
    return {"source": "bam_identify fit --robot", "version": version(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "robot": str(data.mjcf), "joints": data.joints.source, "model": model,
            "seed": args.seed, "data": data.sources,
            "train": [r.name for r in data.train],
            "validation": [r.name for r in data.validation] or ["none"],
            "trials": fitted.trials, "train_mae": fitted.train_mae,
            "interrupted": fitted.interrupted, "python": platform.python_version()}


class _Progress:
    """A progress bar on stderr (tqdm), the best training MAE beside it."""

    def __init__(self, label: str, total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=label, unit="cand", leave=True)

    def __call__(self, count: int, best: float) -> None:
        self.bar.update(count)
        self.bar.set_postfix_str(f"MAE {best:.3g} rad", refresh=False)

    def close(self) -> None:
        self.bar.close()


# -- the report ----------------------------------------------------------------------------

def _write_report(folder: Path, data: RobotData, results: list[RobotResult],
                  force: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"robot": str(data.mjcf), "joints": data.joints.names,
               "train": [r.name for r in data.train],
               "validation": [r.name for r in data.validation],
               "models": {r.model: _summary(r, data.joints) for r in results}}
    write_new(folder / "summary.json", json.dumps(summary, indent=2) + "\n", "--report", force)
    for r in results:  # the map with the identified offsets: what eval --joints reads
        write_new(folder / f"{r.model}_joints.yaml", r.joints.with_offsets(r.offsets).dump(),
                  "--report", force)
        r.export_note = _export_robot(folder / f"{r.model}_robot.xml", data, r, force)
    figures = {r.model: _plot(folder / f"{r.model}_rollout.png", data, r) for r in results}
    write_new(folder / "report.md", _markdown(data, results, figures), "--report", force)


def _summary(result: RobotResult, joints: JointMap) -> dict:
    per_joint = {j: {"train_mae": float(result.train_mae[i]),
                     "validation_mae": (None if result.validation_mae is None
                                        else float(result.validation_mae[i])),
                     "offset": result.offsets[j]} for i, j in enumerate(joints.names)}
    return {"joints": per_joint, "trials": result.fitted.trials,
            "seconds": result.fitted.seconds, "interrupted": result.fitted.interrupted,
            "diverged_candidates": result.diverged,
            "sets": {k: s.values for k, s in result.sets.items()},
            "bodies": result.bodies,
            "sensitivity": result.intervals,
            "outputs": [str(p) for p in result.outputs]}


def _markdown(data: RobotData, results: list[RobotResult], figures: dict[str, Path]) -> str:
    lines = [f"# Robot fit: {data.mjcf.name}", "",
             f"Training recordings: {len(data.train)}; validation recordings: "
             f"{len(data.validation) or 'none (only one recording: record more to validate)'}.",
             "", "| model | joint | train MAE (rad) | validation MAE (rad) | offset (rad) |",
             "|---|---|---|---|---|"]
    for r in results:
        for i, j in enumerate(data.joints.names):
            val = "–" if r.validation_mae is None else f"{r.validation_mae[i]:.4g}"
            lines.append(f"| {r.model} | {j} | {r.train_mae[i]:.4g} | {val} | "
                         f"{r.offsets[j]:+.4f} |")
    for r in results:
        percent = r.intervals["percent"]
        lines += ["", f"## {r.model}", "", f"Intervals: where the training MAE stays within "
                  f"{percent:g} % of the fit's ({r.intervals['base_mae']:.4g} rad), each value "
                  "moved alone; `*` marks an end at the search bound.", "",
                  f"| type | parameter | value | {percent:g} % interval |", "|---|---|---|---|"]
        free = r.intervals["parameters"]
        for kind, params in r.sets.items():
            lines += [f"| {kind} | {k} | {v:.6g} | {_interval(free.get(f'{kind}/{k}'))} |"
                      for k, v in params.values.items() if k != "q_offset"]
        lines += [f"| {j} | offset | {r.offsets[j]:+.5f} | "
                  f"{_interval(free.get(f'{j}/{OFFSET}'))} |" for j in data.joints.names]
        lines += [f"| {b} | {key} | {v:.6g} | {_interval(free.get(f'{b}/{key}'))} |"
                  for b, found in r.bodies.items() for key, v in found.items()]
        if FRICTION_SCALE in r.intervals:
            lines += ["", f"Friction scale (every friction magnitude times s): "
                      f"{_interval(r.intervals[FRICTION_SCALE])}."]
        lines += ["", f"MuJoCo: {r.export_note}", "", f"![{r.model}]({figures[r.model].name})"]
    return "\n".join(lines) + "\n"


def _interval(found: dict | None) -> str:
    """``[lower, upper]`` of a profiled value ("held" where it was not searched)."""
    if found is None:
        return "held"
    ends = [f"{found[end]:.4g}{'*' if found[f'{end}_clamped'] else ''}"
            for end in ("lower", "upper")]
    return f"[{ends[0]}, {ends[1]}]"


def _export_robot(path: Path, data: RobotData, result: RobotResult, force: bool) -> str:
    """The robot's MJCF with each servo a native ``<dcmotor>`` (what MuJoCo alone can hold
    of the identified sets); what it loses, or why it could not be written."""
    from bam_sim.mujoco_arm.dcmotor_export import ExportJoint, export_dcmotor

    joints = [ExportJoint(j.joint, result.sets[j.servo_type], j.gain)
              for j in data.joints.joints]
    try:
        source = with_bodies(data.mjcf, result.space, result.vectors)
        export = export_dcmotor(source, joints)
    except BamError as exc:  # e.g. assets the export cannot resolve from the report folder
        return f"no MJCF written ({exc})"
    write_new(path, export.xml, "--report", force)
    lost = "; ".join(export.losses) or "nothing"
    bodies = f", the identified {', '.join(result.bodies)} in place" if result.bodies else ""
    return f"`{path.name}`, each servo a native dcmotor{bodies} (lost: {lost})"


def with_bodies(mjcf: Path, space: RobotSpace, vectors: np.ndarray) -> str | Path:
    """The robot's MJCF text with each identified body's inertial (mass, principal
    moments, as MuJoCo compiled them) replaced by the fitted one; the file itself where
    no body was identified."""
    if not space.bodies:
        return mjcf
    import xml.etree.ElementTree as ET

    model = load_model(mjcf)
    apply_bodies(model, space.bodies, vectors[len(space.joints.joints):])
    root = ET.fromstring(Path(mjcf).read_text(encoding="utf-8"))
    for b in space.bodies:
        body = root.find(f".//body[@name='{b.name}']")
        inertial = body.find("inertial")
        if inertial is None:
            inertial = ET.Element("inertial")
            body.insert(0, inertial)
        inertial.attrib.clear()
        inertial.attrib.update({
            "pos": " ".join(f"{v:.12g}" for v in model.body_ipos[b.id]),
            "quat": " ".join(f"{v:.12g}" for v in model.body_iquat[b.id]),
            "mass": f"{model.body_mass[b.id]:.12g}",
            "diaginertia": " ".join(f"{v:.12g}" for v in model.body_inertia[b.id])})
    return ET.tostring(root, encoding="unicode")


def _plot(path: Path, data: RobotData, result: RobotResult) -> Path:
    recording = (data.validation or data.train)[0]
    objective = RobotObjective(result.space, load_model(data.mjcf), [recording])
    simulated = objective.simulate(result.vectors)[0]
    return plot_rollout(path, data.joints.names, recording, simulated, result.model)


def plot_rollout(path: Path, names: list[str], recording: RobotRecording,
                 simulated: np.ndarray, label: str) -> Path:
    """A figure of ``recording``, joint by joint: the goal, the reading and the simulated
    reading (T, n) of ``label``; written to ``path`` (its suffix gives the format)."""
    from bam_identify.fitting.report import _pyplot

    plt = _pyplot()
    n = recording.n_joints
    fig, axes = plt.subplots(n, 1, figsize=(8, 1.8 * n + 0.6), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.plot(recording.time, recording.goal[:, i], color="0.7", lw=0.8, label="goal")
        ax.plot(recording.time, recording.position[:, i], color="k", lw=1.0, label="recorded")
        ax.plot(recording.time, simulated[:, i], color="C1", lw=1.0, ls="--", label=label)
        ax.set_ylabel(f"{names[i]}\n(rad)")
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].set_title(f"{recording.name}: {label}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# -- eval ----------------------------------------------------------------------------------

def eval_robot(args, cancel: Cancellation) -> str:
    """Per joint MAE of parameter files on a robot's recordings (``eval --robot``); with
    ``--figure``, the recording they miss most, joint by joint."""
    inputs = [("--params", str(p).split("=", 1)[-1]) for p in args.params]  # [joint=]FILE
    inputs += [("--robot", args.robot), ("--joints", args.joints)]
    inputs += [(option, path) for option, paths in (("--bags", args.bags),
                                                    ("--lerobot", args.lerobot))
               for path in paths or ()]
    for path, what, suffixes in ((args.json, "--json", ()),
                                 (args.figure, "--figure", FIGURE_FORMATS)):
        if path is not None:
            check_output(path, what, force=args.force, inputs=inputs, suffixes=suffixes)
    joints = load_joint_map(args.joints)
    model = load_model(args.robot)
    sets = _sets_per_joint(joints, args.params)
    recordings, _ = read_recordings(joints, args.bags, args.lerobot, cancel)
    arm = bind(model, joints, sets)
    latency = latencies(np.stack([s.vector() for s in sets]))
    simulated = [rollout(arm, rec, joints.offsets, latency) for rec in recordings]
    mae = np.array([np.abs(sim - rec.position).mean(axis=0)
                    for sim, rec in zip(simulated, recordings)])
    lines = [f"{'joint':<16} {'MAE (rad)':>10}"]
    lines += [f"{j:<16} {mae[:, i].mean():>10.4g}" for i, j in enumerate(joints.names)]
    lines.append(f"{'all':<16} {mae.mean():>10.4g}  ({len(recordings)} recordings)")
    if args.json is not None:
        doc = {"robot": str(args.robot), "recordings": [r.name for r in recordings],
               "mae": {j: float(mae[:, i].mean()) for i, j in enumerate(joints.names)},
               "per_recording": mae.tolist()}
        write_new(args.json, json.dumps(doc, indent=2) + "\n", "--json", args.force)
    if args.figure is not None:
        worst = int(np.argmax(mae.mean(axis=1)))
        label = "+".join(dict.fromkeys(s.model.name for s in sets))
        with output_file(args.figure, "--figure", args.force) as tmp:
            plot_rollout(tmp, joints.names, recordings[worst], simulated[worst], label)
        lines.append(f"figure: {args.figure} ({recordings[worst].name}, "
                     f"MAE {mae[worst].mean():.4g} rad, the worst)")
    return "\n".join(lines)


def _sets_per_joint(joints: JointMap, files: list[str]) -> list[ParameterSet]:
    """Each joint's set: ``joint=FILE`` for that joint, else the one FILE of its actuator."""
    by_joint: dict[str, ParameterSet] = {}
    by_actuator: dict[str, ParameterSet] = {}
    for item in files:
        name, sep, path = str(item).partition("=")
        if sep:
            if name not in joints.names:
                raise BamError(f"--params {item}: no joint '{name}' in the joint map; its "
                               f"joints are {', '.join(joints.names)}")
            by_joint[name] = load(path)
            continue
        params = load(item)
        if params.actuator.name in by_actuator:
            raise BamError(f"--params: two files for the {params.actuator.name}; give one, or "
                           "name each joint's as joint=FILE")
        by_actuator[params.actuator.name] = params
    sets = []
    for j in joints.joints:
        chosen = by_joint.get(j.joint) or by_actuator.get(j.actuator.name)
        if chosen is None:
            raise BamError(f"--params: no parameter file for joint '{j.joint}' "
                           f"({j.actuator.name}); give one for its actuator or joint=FILE")
        sets.append(chosen)
    return sets
