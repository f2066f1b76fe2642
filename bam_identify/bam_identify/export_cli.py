"""The ``export`` executable (``ros2 run bam_identify export``): an identified set in the
format an RL stack reads.

Examples::

    ros2 run bam_identify export fitted.yaml --format bam-json --output model.json
    ros2 run bam_identify export fitted.yaml --format dcmotor-mjcf --output servo.xml
    ros2 run bam_identify export fitted.yaml --format dcmotor-mjcf --mjcf robot.xml \
        --joint elbow --gain 32 --output robot_bam.xml

``bam-json`` is the legacy BAM JSON parameter file that ``bam.model.load_model``
reads, and through it Isaac Lab's ``BamActuatorCfg`` and mjlab's BAM actuator
(:func:`bam_sim.models.legacy.parameters_to_json`). ``dcmotor-mjcf`` is MuJoCo's own
``dcmotor`` actuator (:mod:`bam_sim.mujoco_arm.dcmotor_export`, what it cannot express
written in the file's leading comment): on ``--joint`` of ``--mjcf``, else on a one-joint
pendulum of the actuator's middle bench setup. Bad input (a missing or invalid file, a
set the format cannot hold, an existing output without ``--force``) ends the command
with one line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bam_identify.cli import _main
from bam_sim.common.arguments import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_writable
from bam_sim.models.legacy import parameters_to_json
from bam_sim.models.parameter_file import load, write_atomic
from bam_sim.models.parameter_set import ParameterSet


def _bam_json(params: ParameterSet, args: argparse.Namespace) -> str:
    return parameters_to_json(params)


def _dcmotor_mjcf(params: ParameterSet, args: argparse.Namespace) -> str:
    from bam_sim.bench.geometry import Bench
    from bam_sim.mujoco_arm.dcmotor_export import ExportJoint, export_dcmotor
    from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

    if args.mjcf is None:
        act = params.actuator_def
        bench = Bench(act.masses[len(act.masses) // 2], act.lengths[len(act.lengths) // 2])
        source, joint = pendulum_mjcf(bench), args.joint or "pendulum"
    elif not args.joint:
        raise BamError(f"--mjcf {args.mjcf} needs --joint NAME, the hinge the servo drives")
    else:
        source, joint = args.mjcf, args.joint
    return export_dcmotor(source, [ExportJoint(joint, params, args.gain)]).xml


FORMATS = {"bam-json": _bam_json, "dcmotor-mjcf": _dcmotor_mjcf}


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
    parser.add_argument("--gain", type=float, help="dcmotor-mjcf: the servo gain baked into "
                        "the controller (default: the actuator's second Table I gain)")
    parser.add_argument("--output", type=Path, required=True, help="the file to write")
    parser.add_argument("--force", action="store_true", help="overwrite --output")
    return parser


def run_export(args: argparse.Namespace) -> str:
    if args.output.exists() and not args.force:
        raise BamError(f"{args.output} already exists; choose another --output or pass --force")
    if args.output.resolve() == args.params.resolve():
        raise BamError(f"--output {args.output} is the input file; choose another path")
    check_writable(args.output, "--output")
    params = load(args.params)
    text = FORMATS[args.format](params, args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.output, text)
    return f"wrote {args.output} ({params.actuator} {params.model}, {args.format})"


def export_main(argv: list[str] | None = None) -> int:
    return _main(export_parser(), run_export, argv)
