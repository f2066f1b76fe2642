"""The ``fit``, ``eval`` and ``recover`` executables (``ros2 run bam_identify fit|eval``).

Example::

    ros2 run bam_identify fit --bags recordings/ --actuator mx64 --models m1 m4 m6 \\
        --output params.yaml --report report/

Every problem a user can cause (a missing bag, a typo in ``--set``, an output
that exists) ends the command with one line on stderr and exit code 2, before
anything is written. Ctrl-C during a fit keeps the best parameters found.

This module only reads the command lines: the work is the library's
(:mod:`bam_identify.fitting.run` for the fit, :mod:`bam_identify.fitting.evaluate`,
:mod:`bam_identify.data.bag_recovery`), run through
:func:`bam_identify.executable.run_executable` for the exit codes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bam_identify.executable import run_executable
from bam_identify.fit_options import data_arguments, fit_parser
from bam_identify.fitting.job import NUMBERS, FitJob, output_paths
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import shared_outputs

# The job and fit's options, importable from here as they always were (tests, benchmarks/).
__all__ = ["NUMBERS", "FitJob", "eval_main", "eval_parser", "fit_main", "fit_parser",
           "output_paths", "recover_main", "recover_parser"]


def fit_main(argv: list[str] | None = None) -> int:
    """``fit``: identify the models, write their parameter files and the report."""
    return run_executable(fit_parser(), _fit, argv)


def _fit(args: argparse.Namespace, cancel: Cancellation) -> str:
    """The fit of the parsed options; its summary."""
    if robot_fit(args):
        from bam_identify.robot.run import fit_robot

        return fit_robot(args, cancel)
    for option in ("payload", "inertia"):
        if getattr(args, option):
            raise BamError(f"--{option} identifies a body of a robot: give --robot MJCF and "
                           "--joints YAML (a bench's pendulum is its mass and length)")
    job = FitJob.from_args(args)
    # Imported once the command line is read: --help and bad options answer at once.
    from bam_identify.fitting.run import fit

    if job.workers is None:
        return fit(job, cancel).summary
    # The workers of one shared study may write the same files (--force), on purpose: all
    # end on the same parameters. None claims them (output_paths).
    with shared_outputs():
        return fit(job, cancel).summary


# Options of the pendulum bench that a robot's recordings do not have.
BENCH_ONLY = {"logs": "--logs", "actuator": "--actuator", "replay": "--replay",
              "validation_kp": "--validation-kp"}


def robot_fit(args: argparse.Namespace) -> bool:
    """Whether the options ask for a robot (--robot with --joints), refusing a half or mixed
    request in one line."""
    given = [o for o in ("robot", "joints") if getattr(args, o, None) is not None]
    if not given:
        if args.lerobot:
            raise BamError("--lerobot: give the robot too, --robot MJCF --joints YAML")
        return False
    if len(given) == 1:
        raise BamError("a robot needs both --robot MJCF and --joints YAML (the joint map)")
    for name, option in BENCH_ONLY.items():
        if getattr(args, name, None) not in (None, False, []):
            raise BamError(f"{option} is an option of the pendulum bench; a robot reads "
                           "--bags or --lerobot")
    return True


def eval_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="eval", description="Score parameter files (YAML or legacy JSON) on logs: "
        "mean absolute position error of simulated-control rollouts (and of the simulated "
        "winding temperature against the recorded one, the servo's sensor, for sets with "
        "the thermal group on logs that recorded it).")
    parser.add_argument("--params", nargs="+", type=Path, required=True, metavar="FILE")
    data_arguments(parser)
    parser.add_argument("--replay", action="store_true", help="replay the recorded control")
    parser.add_argument("--json", type=Path, help="write the scores to this file")
    parser.add_argument("--figure", type=Path, metavar="PNG",
                        help="with --robot: draw the recording the files miss most, joint by "
                        "joint (recorded, simulated, goal); .png, .pdf or .svg")
    parser.add_argument("--force", action="store_true", help="overwrite --json and --figure")
    return parser


def eval_main(argv: list[str] | None = None) -> int:
    """``eval``: score parameter files on recordings."""
    return run_executable(eval_parser(), _evaluate, argv)


def _evaluate(args: argparse.Namespace, cancel: Cancellation) -> str:
    if robot_fit(args):
        from bam_identify.robot.run import eval_robot

        return eval_robot(args, cancel)
    if args.figure is not None:
        raise BamError("--figure draws a robot's recordings: give --robot and --joints (a "
                       "bench fit's report holds its figures)")
    # Imported once the command line is read, as for the fit.
    from bam_identify.fitting.evaluate import evaluate

    return evaluate(args, cancel)


def recover_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="recover", description="Recover a bag whose recording stopped without closing "
        "it (no metadata.yaml, MCAP without its end): its complete records become a new, "
        "complete bag beside it; the original is left as it is.")
    parser.add_argument("bag", type=Path, help="the unterminated bag folder or .mcap file")
    parser.add_argument("--output", type=Path, help="the new bag (default: <bag>_recovered)")
    return parser


def recover_main(argv: list[str] | None = None) -> int:
    """``recover``: a complete bag from one whose recording was cut short."""
    return run_executable(recover_parser(), _recover, argv)


def _recover(args: argparse.Namespace, cancel: Cancellation) -> str:
    # rosbags is imported once the command line is read.
    from bam_identify.data.bag_recovery import recover

    return recover(args.bag, args.output, cancel)
