"""The ``export`` executable (``ros2 run bam_identify export``): an identified set in the
format an RL stack reads.

Examples::

    ros2 run bam_identify export fitted.yaml --format bam-json --output model.json
    ros2 run bam_identify export fitted.yaml --randomization --sim-dt 0.005 \
        --output model.json
    ros2 run bam_identify export fitted.yaml --for isaaclab --kp 400 --output model.json
    ros2 run bam_identify export fitted.yaml --format dcmotor-mjcf --output servo.xml
    ros2 run bam_identify export fitted.yaml --format dcmotor-mjcf --mujoco 3.11 \
        --output servo_mjlab.xml
    ros2 run bam_identify export fitted.yaml --format dcmotor-mjcf --mjcf robot.xml \
        --joint elbow --gain 32 --output robot_bam.xml

``bam-json`` is the BAM JSON parameter file that ``bam.model.load_model`` reads (and
through it mjlab's BAM actuator), with the firmware constants and the gain ``--kp`` that
Isaac Lab's ``BamActuatorCfg`` also reads, and beside it, when the set carries the
fit's sensitivity intervals (``fit --sensitivity``), ``<stem>_sensitivity.json``, the
file BAM's mjlab ``BamActuatorCfg(sensitivity_randomization=True)`` reads;
``--randomization`` also writes ``<stem>_randomization.yaml``, the ranges of mjlab's and
Isaac Lab's randomization terms (:mod:`bam_sim.models.files.randomization`). ``--for
isaaclab`` writes an M3 or M4 set as its exact M5 (then without the intervals, which are
the M3/M4 parameters') and refuses what Isaac Lab's law cannot run
(:func:`bam_sim.models.files.bam_json.parameters_to_json`). ``dcmotor-mjcf`` is MuJoCo's own
``dcmotor`` actuator (:mod:`bam_sim.mujoco_arm.dcmotor_export`, what it cannot express
written in the file's leading comment): on ``--joint`` of ``--mjcf``, else on a one-joint
pendulum of the actuator's middle bench setup, in the convention of the MuJoCo version
``--mujoco`` (4, the default: 3.12 and later; 3.11: 3.7 to 3.11, what mjlab pins). Each
export prints one line per reader of its format saying what that reader will not apply
(a BAM JSON's readers are :data:`bam_sim.models.files.bam_json.READERS`, and the file
holds the same under ``"not_applied"``; a dcmotor MJCF holds it in its leading comment). Bad
input (a missing or invalid file, a set the format cannot hold, an existing output
without ``--force``) ends the command with one line on stderr and exit code 2, before
anything is written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bam_identify.executable import run_executable
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number, option
from bam_sim.common.output_paths import check_output, write_new
from bam_sim.models.bam.equivalence import EQUIVALENT
from bam_sim.models.files.bam_json import (
    BAM,
    ISAACLAB,
    TARGETS,
    not_applied,
    parameters_to_json,
)
from bam_sim.models.files.parameter_file import load
from bam_sim.models.files.randomization import (
    randomization_yaml,
    sensitivity_json,
    sensitivity_of,
)
from bam_sim.models.parameter_set import ParameterSet

# A format's writer: the text, and per reader (its title) what it will not apply.
Written = tuple[str, dict[str, list[str]]]


def _bam_json(params: ParameterSet, args: argparse.Namespace) -> Written:
    text = parameters_to_json(params, args.kp, args.target or BAM)
    return text, not_applied(json.loads(text))


def _dcmotor_mjcf(params: ParameterSet, args: argparse.Namespace) -> Written:
    from bam_sim.bench.geometry import Bench
    from bam_sim.mujoco_arm.dcmotor_export import CURRENT, ExportJoint, export_dcmotor
    from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

    if args.mjcf is None:
        act = params.actuator
        bench = Bench(act.masses[len(act.masses) // 2], act.lengths[len(act.lengths) // 2])
        source, joint = pendulum_mjcf(bench), args.joint or "pendulum"
    elif not args.joint:
        raise BamError(f"--mjcf {args.mjcf} needs --joint NAME, the hinge the servo drives")
    else:
        source, joint = args.mjcf, args.joint
    version = args.mujoco or CURRENT
    result = export_dcmotor(source, [ExportJoint(joint, params, args.gain)],
                            mujoco_version=version)
    reader = "MuJoCo >= 3.12 dcmotor" if version == CURRENT else "MuJoCo 3.7 to 3.11 dcmotor"
    return result.xml, {reader: list(result.losses)}


FORMATS = {"bam-json": _bam_json, "dcmotor-mjcf": _dcmotor_mjcf}
# The options that only some formats read: given with another, they would be ignored.
FORMAT_OPTIONS = {"gain": ("dcmotor-mjcf",), "mjcf": ("dcmotor-mjcf",),
                  "joint": ("dcmotor-mjcf",), "mujoco": ("dcmotor-mjcf",),
                  "kp": ("bam-json",), "target": ("bam-json",),
                  "randomization": ("bam-json",), "sim_dt": ("bam-json",)}
# The MuJoCo versions dcmotor-mjcf writes for (bam_sim.mujoco_arm.dcmotor_export).
MUJOCO_VERSIONS = ("3.11", "4")
# How the messages name an option whose dest is another word.
OPTION_NAMES = {"target": "for", "sim_dt": "sim-dt"}
# A servo gain is > 0 (0 holds nothing) and at most the largest any actuator accepts;
# the actuator's own gain_limit is checked once the set is read.
GAIN = option(low=0.0, high=1.0e4, low_open=True)
# A simulator's physics step (s): above 0, at most a second.
SIM_DT = option(low=0.0, high=1.0, low_open=True)
DEFAULT_SIM_DT = 0.005  # s, where the set does not give the step it was fitted at


def export_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="export", description="Write an identified parameter set (YAML, or legacy "
        "JSON) in a format RL stacks read: bam-json is the BAM JSON parameter file of "
        "bam.model.load_model, Isaac Lab's BamActuatorCfg and mjlab's BAM actuator; "
        "dcmotor-mjcf is MuJoCo's own dcmotor actuator.")
    parser.add_argument("params", type=Path, help="the parameter file, e.g. written by fit")
    parser.add_argument("--format", choices=tuple(FORMATS), default="bam-json",
                        help="output format (default: bam-json)")
    parser.add_argument("--mjcf", type=Path, help="dcmotor-mjcf: the robot whose --joint "
                        "the servo drives (default: a one-joint pendulum)")
    parser.add_argument("--joint", help="dcmotor-mjcf: the hinge joint of --mjcf")
    parser.add_argument("--gain", type=GAIN, help="dcmotor-mjcf: the servo gain baked into "
                        "the controller (default: the actuator's second Table I gain)")
    parser.add_argument("--mujoco", choices=MUJOCO_VERSIONS, help="dcmotor-mjcf: the MuJoCo "
                        "version the file is written for (default 4: MuJoCo 3.12 and later, "
                        "input=\"pos\" and torque-space gains; 3.11: MuJoCo 3.7 to 3.11, what "
                        "mjlab and Isaac Lab pin, input=\"position\" and voltage-space gains)")
    parser.add_argument("--kp", type=GAIN, help="bam-json: the servo gain the set is meant "
                        "for, its \"kp\" (default: the gain of a set read from BAM JSON, else "
                        "the actuator's second Table I gain, as --gain)")
    parser.add_argument("--for", dest="target", choices=TARGETS, help="bam-json: the reader "
                        "(default bam: BAM's load_model and mjlab, every model; isaaclab: "
                        "Isaac Lab's BamMotorParams, m1 m2 m5 m6 with M3/M4 as their exact M5)")
    parser.add_argument("--randomization", action="store_true", default=None,
                        help="bam-json: also write <output stem>_randomization.yaml, the "
                        "ranges of mjlab's and Isaac Lab's randomization terms (friction "
                        "scale, vin range, vin drop, delay steps) from the fit's "
                        "sensitivity intervals")
    parser.add_argument("--sim-dt", dest="sim_dt", type=SIM_DT, metavar="SECONDS",
                        help="bam-json --randomization: the simulator's physics step the "
                        "delays are counted in (default: the step the set was fitted at, "
                        f"else {DEFAULT_SIM_DT:g})")
    parser.add_argument("--output", type=Path, required=True, help="the file to write")
    parser.add_argument("--force", action="store_true", help="overwrite --output (and the files "
                        "written beside it)")
    return parser


def check_export_args(args: argparse.Namespace) -> None:
    """Options the format reads, and an output that is none of the inputs (output_paths)."""
    for name, formats in FORMAT_OPTIONS.items():
        if getattr(args, name) is not None and args.format not in formats:
            raise BamError(f"--{OPTION_NAMES.get(name, name)} means nothing to --format "
                           f"{args.format}; it applies to "
                           f"{', '.join(formats)} only: leave it out or change the format")
    if args.sim_dt is not None and not args.randomization:
        raise BamError("--sim-dt means nothing without --randomization: add it or leave "
                       "--sim-dt out")
    inputs = [("params", args.params)] + ([("--mjcf", args.mjcf)] if args.mjcf else [])
    check_output(args.output, "--output", force=args.force, inputs=inputs)


def _beside(output: Path, suffix: str) -> Path:
    """``<output stem><suffix>`` in the output's folder."""
    return output.with_name(f"{output.stem}{suffix}")


def _extra_files(params: ParameterSet, args: argparse.Namespace,
                 text: str) -> list[tuple[Path, str]]:
    """The files written beside a BAM JSON: the sensitivity intervals (when the set
    carries them and its model is written as fitted) and the randomization ranges."""
    if args.format != "bam-json":
        return []
    extra = []
    converted = args.target == ISAACLAB and params.model in EQUIVALENT
    if sensitivity_of(params) is not None and not converted:
        extra.append((_beside(args.output, "_sensitivity.json"),
                      sensitivity_json(params, text, args.output.name)))
    if args.randomization:
        step = args.sim_dt or number(params.provenance.get("dt", DEFAULT_SIM_DT),
                                     "provenance.dt of the set", low=0.0, low_open=True)
        extra.append((_beside(args.output, "_randomization.yaml"),
                      randomization_yaml(params, step, args.output.name)))
    inputs = [("params", args.params), ("--output", args.output)]
    for path, _ in extra:
        check_output(path, "--output", force=args.force, inputs=inputs)
    return extra


def _check_gain(params: ParameterSet, gain: float | None, option: str) -> None:
    limit = params.actuator.gain_limit
    if gain is not None and limit > 0.0 and gain > limit:
        raise BamError(f"{option} {gain:g} is above the largest gain {limit:g} the "
                       f"{params.actuator.name} accepts; give a gain in (0, {limit:g}]")


def run_export(args: argparse.Namespace) -> str:
    check_export_args(args)
    params = load(args.params)
    _check_gain(params, args.gain, "--gain")
    _check_gain(params, args.kp, "--kp")
    text, readers = FORMATS[args.format](params, args)
    extra = _extra_files(params, args, text)
    written = [write_new(args.output, text, "--output", args.force)]
    try:
        for path, body in extra:
            written.append(write_new(path, body, "--output", args.force))
    except BamError as exc:  # a full disk: what was written is named
        raise BamError(f"{one_line(exc)}; written: {', '.join(map(str, written))}") from None
    written = "".join(f"\nwrote {path}" for path, _ in extra)
    return (f"wrote {args.output} ({params.actuator.name} {_model_written(params, args)}, "
            f"{args.format}){written}{_readers(readers)}")


def _readers(readers: dict[str, list[str]]) -> str:
    """One line per reader: what it will not apply of the file (also written in it)."""
    lines = []
    for title, lost in readers.items():
        if not lost:
            lines.append(f"{title}: applies every value")
        elif lost[0].startswith("cannot load it"):
            lines.append(f"{title}: {lost[0]}")
        else:
            lines.append(f"{title} will not apply: {'; '.join(lost)}")
    return "".join(f"\n{line}" for line in lines)


def _model_written(params: ParameterSet, args: argparse.Namespace) -> str:
    if args.target == ISAACLAB and params.model in EQUIVALENT:
        return (f"{params.model.name} as its exact {EQUIVALENT[params.model].name}, "
                f"for {ISAACLAB}")
    return params.model.name


def export_main(argv: list[str] | None = None) -> int:
    return run_executable(export_parser(), lambda args, cancel: run_export(args), argv)
