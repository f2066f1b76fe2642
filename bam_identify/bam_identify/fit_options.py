"""The options of ``fit``, shared by ``fit``, ``eval`` and ``campaign add``.

The argparse types apply the library's own checks (the ranges of
:data:`~bam_identify.fitting.job.NUMBERS`, the ``--set`` rule of
:func:`~bam_identify.fitting.held.held_item`, the storage URL), so a bad
value is refused as the command line is parsed, in one line, exit code 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bam_identify.fitting.held import held_item
from bam_identify.fitting.job import DEFAULT_OUTPUT, NUMBERS, FitJob
from bam_sim.common.command_line import ArgumentParser, add_actuator_files, argument_type
from bam_sim.common.numbers import option
from bam_sim.models.dcmotor.groups import DEFAULT_TEMPERATURE_WEIGHT, GROUPS
from bam_sim.models.model_registry import FRICTION_MODELS


def number_option(field: str) -> Callable[[str], float]:
    """The argparse type of the numeric option of FitJob field ``field``."""
    return option(**NUMBERS[field])


def _storage(text: str) -> str:
    # Imported when a --storage is given: the study record pulls in sqlalchemy.
    from bam_identify.fitting.study_record import storage_url

    return storage_url(text)


STORAGE_OPTION = argument_type(_storage)



def data_arguments(parser: argparse.ArgumentParser) -> None:
    """The recordings to read (fit, eval)."""
    parser.add_argument("--bags", nargs="+", type=Path, default=[], metavar="BAG",
                        help="rosbag2 bags (folders or .mcap/.db3 files) or folders of bags")
    parser.add_argument("--logs", nargs="+", type=Path, default=[], metavar="PATH",
                        help="legacy BAM JSON logs (files or folders)")
    parser.add_argument("--actuator", help="keep the logs of this actuator (mx64, ...)")
    add_actuator_files(parser)
    parser.add_argument("--dt", type=number_option("dt"), default=0.005,
                        help="resampling step, s")
    robot = parser.add_argument_group(
        "a robot", "any MuJoCo model whose servo joints a joint map names; its recordings are "
        "rosbag2 bags (--bags: joint_states and the commands sent) or LeRobot datasets")
    robot.add_argument("--robot", type=Path, metavar="MJCF",
                       help="the robot's MuJoCo model (MJCF, or URDF through MuJoCo)")
    robot.add_argument("--joints", type=Path, metavar="YAML",
                       help="the joint map: each servo joint's actuator, gain and reading")
    robot.add_argument("--lerobot", nargs="+", type=Path, default=[], metavar="DIR",
                       help="LeRobot datasets (format v2.x or v3.0)")


def fit_parser() -> argparse.ArgumentParser:
    """``fit``'s options; they parse into a :class:`FitJob` (``FitJob.from_args``)."""
    parser = ArgumentParser(
        prog="fit", description="Identify friction models (M1..M6, elasto-plastic ep_*) from "
        "bench recordings "
        "(CMA-ES on the simulated-control position error).")
    data_arguments(parser)
    _search_arguments(parser)
    _sharing_arguments(parser)
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help="parameter file per model; {actuator} and {model} are replaced")
    parser.add_argument("--report", type=Path, default=FitJob.report,
                        help="report folder")
    parser.add_argument("--force", action="store_true", help="overwrite existing outputs")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _search_arguments(parser: argparse.ArgumentParser) -> None:
    """What is searched, and how."""
    parser.add_argument("--models", nargs="+", choices=sorted(FRICTION_MODELS),
                        metavar="MODEL",
                        help=f"among {', '.join(FRICTION_MODELS)} (default: "
                        f"{' '.join(FitJob.models)}; a robot: the joint map's models, where "
                        "it gives them)")
    parser.add_argument("--trials", type=number_option("trials"),
                        default=FitJob.trials, help="candidates per model")
    parser.add_argument("--seed", type=number_option("seed"), default=0)
    parser.add_argument("--jobs", type=number_option("jobs"),
                        help="threads for the simulation (default: cores)")
    parser.add_argument("--popsize", type=number_option("popsize"),
                        help="CMA-ES population (default 4 + 3 ln n)")
    parser.add_argument("--target-mae", type=number_option("target_mae"),
                        help="stop a model once its training "
                        "MAE is at most this (rad)")
    parser.add_argument("--set", action="append", metavar="NAME=VALUE",
                        type=argument_type(held_item),
                        help="hold a parameter fixed (repeatable)")
    parser.add_argument("--groups", nargs="+", default=[], choices=list(GROUPS),
                        metavar="GROUP", help="optional parameter groups to identify too, "
                        f"among {', '.join(GROUPS)} (thermal: R_T, C and α from "
                        "the recorded temperature, the servo's sensor; hold thermal.ambient and "
                        "thermal.reftemp with --set, else both are the coolest first "
                        "temperature of the training logs; supply: the series resistance of "
                        "a sagging supply; latency: the command delay, and the report gives "
                        "the delays to randomize over)")
    parser.add_argument("--temperature-weight", type=number_option("temperature_weight"),
                        default=DEFAULT_TEMPERATURE_WEIGHT, metavar="RAD_PER_K",
                        help="weight of the temperature MAE (winding model against the servo's "
                        "sensor) added to the position MAE "
                        f"(rad/K, default {DEFAULT_TEMPERATURE_WEIGHT:g}: 1 K counts as 1 mrad)")
    parser.add_argument("--sensitivity", type=number_option("sensitivity"),
                        default=FitJob.sensitivity, metavar="PERCENT",
                        help="the report and the parameter files give, for every identified "
                        "parameter, the interval where the training error stays within this "
                        f"percentage of the fit's, the others held (in (0, 100], default "
                        f"{FitJob.sensitivity:g}); export writes them for randomization")
    parser.add_argument("--no-offset", action="store_true",
                        help="do not identify q_offset (a robot's joint offsets)")
    parser.add_argument("--per-joint", action="store_true",
                        help="a robot fit identifies a set per joint, not per servo type")
    parser.add_argument("--units", action="store_true",
                        help="a population fit: the recordings of each folder are one unit of "
                        "the servo; the type's set and each unit's deviation are fitted "
                        "together, with the spread across units (docs: how-to/units)")
    parser.add_argument("--unit-parameters", nargs="+", default=[], metavar="NAME",
                        help="with --units: the parameters each unit has its own of "
                        "(default: kt and the model's friction magnitudes)")
    parser.add_argument("--unit-spread", type=number_option("unit_spread"),
                        default=FitJob.unit_spread, metavar="SIGMA",
                        help="with --units: the spread the first round assumes (log scale, "
                        f"default {FitJob.unit_spread:g}: about 20 %%); the second uses the "
                        "one the first found")
    parser.add_argument("--payload", nargs="+", default=[], metavar="BODY",
                        help="a robot fit identifies these bodies' masses too (a payload: "
                        "the inertia scales with the mass), within 0.1 to 4 times the MJCF's")
    parser.add_argument("--inertia", nargs="+", default=[], metavar="BODY",
                        help="a robot fit identifies a scale on these bodies' MJCF inertia "
                        "too (0.25 to 4: a link whose inertia is not trusted)")
    parser.add_argument("--select", action="store_true",
                        help="recommend a model on the validation logs: the simplest within "
                        "one standard error of the best, written as {model}=selected (the "
                        "report says why it won)")
    parser.add_argument("--free-load-terms", action="store_true",
                        help="search the load-dependent friction terms even when the training "
                        "logs hold one mass/length setup (by default they are held at 0, "
                        "the nested load-free model: at one load they take up what the "
                        "model misses)")
    parser.add_argument("--no-warm-start", action="store_true",
                        help="start every model from scratch, not from a nested simpler "
                        "model fitted in the same run")
    parser.add_argument("--no-polish", action="store_true",
                        help="CMA-ES only: no Levenberg-Marquardt finish on the position "
                        "residuals once CMA-ES has found the basin")
    parser.add_argument("--validation-fraction", type=number_option("validation_fraction"),
                        default=FitJob.validation_fraction)
    parser.add_argument("--validation-kp", type=number_option("validation_kp"),
                        help="validate on every log of this gain instead")


def _sharing_arguments(parser: argparse.ArgumentParser) -> None:
    """A study recorded in a storage: resumed, or shared between workers."""
    parser.add_argument("--storage", type=STORAGE_OPTION,
                        help="optuna storage URL (sqlite:///fit.db, "
                        "postgresql+psycopg://user@host/db) to record, resume or share the "
                        "study")
    parser.add_argument("--study", help="study name in --storage (default "
                        "bam_<actuator>_<model>_seed<seed>; with several models, "
                        "<study>_<model>)")
    parser.add_argument("--workers", type=number_option("workers"),
                        help="fit processes (on any machines) that "
                        "run this same command on the study: each generation is cut into "
                        "this many shares, each evaluated by one of them (default 1; a "
                        "stored study keeps the number it was started with)")
