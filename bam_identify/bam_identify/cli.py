"""The ``fit`` and ``eval`` executables (``ros2 run bam_identify fit|eval``).

Example::

    ros2 run bam_identify fit --bags recordings/ --actuator mx64 --models m1 m4 m6 \\
        --output params.yaml --report report/

Every problem a user can cause (a missing bag, a typo in ``--set``, an output
that exists) ends the command with one line on stderr and exit code 2, before
anything is written. Ctrl-C during a fit keeps the best parameters found.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path

import numpy as np

from bam_sim.common.arguments import ArgumentParser
from bam_sim.common.command import (
    Interrupted,
    current,
    record_written,
    run_command,
    shielded,
    signal_name,
    stop_requested,
)
from bam_sim.common.errors import BamError
from bam_sim.common.numbers import checked, option
from bam_sim.common.output_paths import check_length, check_output, output_folder, write_new
from bam_sim.models.model_registry import MODELS, get_model
from bam_sim.models.motor_groups import DEFAULT_TEMPERATURE_WEIGHT, GROUPS
from bam_sim.models.parameter_file import dump_yaml, load

DEFAULT_OUTPUT = "out/fit/{actuator}_{model}.yaml"


def version() -> str:
    try:
        return metadata.version("bam_identify")
    except metadata.PackageNotFoundError:
        return "unknown"


MIN_DT = 1.0e-4  # s: the finest resampling step; 10 kHz is beyond any bench

# The range of every numeric option of fit and eval, by FitJob field: the options' argparse
# types and FitJob's own check of a job built in code (a bench session, a campaign's
# stored job) use the same spec, so both refuse the same values with the same words.
NUMBERS: dict[str, dict] = {
    "dt": {"low": MIN_DT, "high": 1.0, "high_open": True},  # a finer step: memory
    "trials": {"low": 1, "high": 10**8, "whole": True},
    "seed": {"low": 0, "high": 2**32 - 1, "whole": True},  # numpy's seed range
    "jobs": {"low": 1, "high": 4096, "whole": True},
    "popsize": {"low": 2, "high": 100_000, "whole": True},  # CMA-ES samples two at least
    "target_mae": {"low": 0.0, "high": 10.0, "low_open": True},  # rad: 0 is never reached
    "validation_fraction": {"low": 0.0, "high": 1.0, "high_open": True},
    "validation_kp": {"low": 0.0, "high": 1.0e4, "low_open": True},
    "workers": {"low": 1, "high": 1000, "whole": True},
    "temperature_weight": {"low": 0.0, "high": 1.0e3},  # rad/K
}


def number_option(field: str):
    return option(**NUMBERS[field])


def argument_type(check):
    """An argparse ``type=`` from a check that raises BamError: one line, argparse's exit 2."""
    def parse(text: str):
        try:
            return check(text)
        except BamError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(check, "__name__", "value")
    return parse


def _storage(text: str) -> str:
    from bam_identify.fitting.study_record import storage_url

    return storage_url(text)


def _assignment(text: str) -> str:
    """``--set NAME=VALUE``: a known parameter and a plausible finite value."""
    from bam_sim.models import parameters as P

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise BamError(f"'{text}' is not NAME=VALUE; write it as e.g. --set kt=1.6")
    P.check_value(name.strip(), value)
    return f"{name.strip()}={value.strip()}"


STORAGE_OPTION = argument_type(_storage)


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bags", nargs="+", type=Path, default=[], metavar="BAG",
                        help="rosbag2 bags (folders or .mcap/.db3 files) or folders of bags")
    parser.add_argument("--logs", nargs="+", type=Path, default=[], metavar="PATH",
                        help="legacy BAM JSON logs (files or folders)")
    parser.add_argument("--actuator", help="keep the logs of this actuator (mx64, ...)")
    parser.add_argument("--dt", type=number_option("dt"), default=0.005,
                        help="resampling step, s")


def _load(args: FitJob | argparse.Namespace):
    from bam_identify.data.dataset import load_dataset

    if not args.bags and not args.logs:
        raise BamError("no data: give --bags and/or --logs")
    for option_name, paths in (("--bags", args.bags), ("--logs", args.logs)):
        for path in paths:
            _check_input(Path(path), option_name)
    return load_dataset(bags=args.bags, logs=args.logs, dt=args.dt, actuator=args.actuator)


@dataclass(frozen=True)
class FitJob:
    """What ``fit`` does, typed: the command line parses into it, the bench runner builds it.

    Field names are those of the command-line options (``--target-mae`` is
    ``target_mae``).
    """

    bags: tuple[Path, ...] = ()
    logs: tuple[Path, ...] = ()
    actuator: str | None = None
    dt: float = 0.005
    models: tuple[str, ...] = ("m1", "m4", "m6")
    trials: int = 4000
    seed: int = 0
    jobs: int | None = None
    popsize: int | None = None
    target_mae: float | None = None
    set: tuple[str, ...] = ()
    no_offset: bool = False
    no_warm_start: bool = False
    no_polish: bool = False
    validation_fraction: float = 0.25
    validation_kp: float | None = None
    storage: str | None = None
    study: str | None = None
    workers: int | None = None
    output: str = DEFAULT_OUTPUT
    report: Path = Path("out/fit/report")
    force: bool = False
    quiet: bool = False
    groups: tuple[str, ...] = ()
    temperature_weight: float = DEFAULT_TEMPERATURE_WEIGHT

    def __post_init__(self) -> None:
        # The options' own checks, for jobs built in code as for the command line.
        for name, spec in NUMBERS.items():
            value = getattr(self, name)
            if value is not None:
                checked(value, f"--{name.replace('_', '-')}", **spec)
        names = [item.partition("=")[0].strip() for item in self.set]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise BamError(f"--set {twice[0]} is given {names.count(twice[0])} times; hold "
                           "each parameter once")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> FitJob:
        values = {f.name: getattr(args, f.name) for f in fields(cls)}
        for name in ("bags", "logs", "models", "set", "groups"):
            values[name] = tuple(values[name] or ())
        return cls(**values)


def fit_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="fit", description="Identify friction models (M1..M6, elasto-plastic ep_*) from "
        "bench recordings "
        "(CMA-ES on the simulated-control position error).")
    _data_arguments(parser)
    parser.add_argument("--models", nargs="+", default=list(FitJob.models),
                        choices=sorted(MODELS), metavar="MODEL",
                        help=f"among {', '.join(MODELS)}")
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
                        type=argument_type(_assignment),
                        help="hold a parameter fixed (repeatable)")
    parser.add_argument("--groups", nargs="+", default=[], choices=list(GROUPS),
                        metavar="GROUP", help="optional parameter groups to identify too, "
                        f"among {', '.join(GROUPS)} (thermal: R_T, C and α from "
                        "the recorded winding temperature; hold thermal.ambient and "
                        "thermal.reftemp with --set, else both are the coolest first "
                        "temperature of the training logs; supply: the series resistance of "
                        "a sagging supply; latency: the command delay, and the report gives "
                        "the delays to randomize over)")
    parser.add_argument("--temperature-weight", type=number_option("temperature_weight"),
                        default=DEFAULT_TEMPERATURE_WEIGHT, metavar="RAD_PER_K",
                        help="weight of the winding-temperature MAE added to the position MAE "
                        f"(rad/K, default {DEFAULT_TEMPERATURE_WEIGHT:g}: 1 K counts as 1 mrad)")
    parser.add_argument("--no-offset", action="store_true", help="do not identify q_offset")
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
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help="parameter file per model; {actuator} and {model} are replaced")
    parser.add_argument("--report", type=Path, default=FitJob.report,
                        help="report folder")
    parser.add_argument("--force", action="store_true", help="overwrite existing outputs")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def output_paths(template: str, actuator: str, models: list[str]) -> dict[str, Path]:
    """One output path per model; a template without {model} gets _<model> if several."""
    paths = {}
    for model in models:
        name = template.replace("{actuator}", actuator)
        if "{model}" in name:
            name = name.replace("{model}", model)
        elif len(models) > 1:
            path = Path(name)
            name = str(path.with_name(f"{path.stem}_{model}{path.suffix or '.yaml'}"))
        paths[model] = Path(name)
    return paths


def _check_fit_outputs(args: FitJob, actuator: str, models: list[str]) -> dict[str, Path]:
    """The parameter file of each model and the report folder, checked (output_paths)."""
    inputs = [("--bags", p) for p in args.bags] + [("--logs", p) for p in args.logs]
    outputs = output_paths(args.output, actuator, models)
    for path in outputs.values():
        check_output(path, "--output", force=args.force,
                     inputs=[*inputs, ("--report", args.report)])
    check_output(args.report, "--report", force=args.force, inputs=inputs, folder=True)
    return outputs


def _check_input(path: Path, option_name: str) -> None:
    """A data path is an existing file or folder (not a device, a pipe, a socket)."""
    check_length(path, option_name)  # before the OS refuses it with ENAMETOOLONG
    if not path.exists():
        raise BamError(f"{option_name} {path} does not exist; give a bag, a log or a folder "
                       "of them")
    if not (path.is_file() or path.is_dir()):
        raise BamError(f"{option_name} {path} is not a file or folder (a device or a pipe); "
                       "give a bag, a log or a folder of them")


def _fixed_per_model(fixed: dict[str, float], actuator: str, models: list[str],
                     groups: tuple[str, ...] = ()):
    """--set values each model has; a name no model has is an error, and so is a value
    outside the range the fit would search for that parameter on this actuator (a held
    value replaces the identified one, so it must be as plausible)."""
    from bam_sim.models.actuators import get_actuator
    from bam_sim.models.parameter_set import allowed_names

    act = get_actuator(actuator)
    per_model = {}
    for model in models:
        names = allowed_names(act, get_model(model))
        per_model[model] = {k: v for k, v in fixed.items() if k in names}
        _check_held(per_model[model], act, model, groups)
    for name in fixed:
        if not any(name in values for values in per_model.values()):
            raise BamError(f"--set {name}: '{name}' is not a parameter of "
                           f"{', '.join(models)} on {actuator}")
    return per_model


def run_fit(args: FitJob) -> str:
    """Fit every model of ``args`` and write its parameter files and report; the summary."""
    from bam_identify.data.dataset import split
    from bam_identify.fitting.figure_pool import FigurePool
    from bam_identify.fitting.fit import (
        NESTED_IN,
        FitSettings,
        Objective,
        SearchSpace,
        identify,
        nested_start,
        parse_assignments,
    )
    from bam_identify.fitting.latency import latency_range
    from bam_identify.fitting.report import ModelResult, identifiability_warnings

    _check_sharing(args)
    # Simpler models first: each richer one can start from a nested simpler fit.
    models = sorted(dict.fromkeys(get_model(m).name for m in args.models),
                    key=list(MODELS).index)
    _check_fit_outputs(args, args.actuator or "actuator", models)  # before loading the data
    fixed = parse_assignments(args.set)
    dataset = _load(args)
    outputs = _check_fit_outputs(args, dataset.actuator, models)
    per_model = _fixed_per_model(fixed, dataset.actuator, models, args.groups)
    train, validation = split(dataset, args.validation_fraction, args.seed, args.validation_kp)
    held = group_defaults(args.groups, train.logs)
    spaces = {m: SearchSpace.build(dataset.actuator, m, {**held, **per_model[m]},
                                   not args.no_offset, args.groups)
              for m in models}
    warnings = identifiability_warnings(train.logs, models)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.jobs:
        import numba

        numba.set_num_threads(max(1, min(args.jobs, numba.config.NUMBA_NUM_THREADS)))
    provenance = _provenance(args, dataset, train, validation)
    results = []
    stopped = False
    # Figure-drawing processes, started once the fit has run for a second (figure_pool).
    pool = FigurePool()
    try:
        for model in models:
            simpler = [r for r in results if r.model in NESTED_IN.get(model, ())]
            base = None if args.no_warm_start or not simpler else min(
                simpler, key=lambda r: r.train_mae)
            settings = FitSettings(trials=args.trials, seed=args.seed, popsize=args.popsize,
                                   target=args.target_mae, storage=args.storage,
                                   study_name=_study_name(args, dataset.actuator, model,
                                                          len(models)),
                                   shares=args.workers,
                                   start=nested_start(spaces[model], base.params.values)
                                   if base else None,
                                   temperature_weight=args.temperature_weight,
                                   polish=not args.no_polish)
            fitted = _fit_one(spaces[model], train.logs, settings, args.quiet, identify,
                              validation.logs, pool.tick)
            with shielded():  # a finished fit is saved whole, whatever signal comes
                train_mae, train_t = Objective(spaces[model], train.logs).errors(fitted.values)
                val_mae, val_t = (Objective(spaces[model], validation.logs).errors(fitted.values)
                                  if validation.logs else (None, None))
                record = {**provenance, "model": model, "trials": fitted.trials,
                          "seconds": round(fitted.seconds, 3), "train_mae": train_mae,
                          "interrupted": fitted.interrupted}
                if args.storage:  # the others were read from the study (resumed, other workers)
                    record.update(study=settings.study_name, evaluated_here=fitted.evaluated)
                if val_mae is not None:
                    record["validation_mae"] = val_mae
                if train_t is not None:
                    record.update(train_temperature_mae=train_t,
                                  temperature_weight=args.temperature_weight,
                                  objective=fitted.train_mae)
                if val_t is not None:
                    record["validation_temperature_mae"] = val_t
                if args.groups:
                    record["groups"] = list(args.groups)
                delays = latency_range(Objective(spaces[model], train.logs), fitted.values)
                if delays is not None:
                    record["latency_range"] = [delays["low"], delays["high"]]
                if per_model[model]:
                    record["fixed"] = per_model[model]
                if base is not None:
                    record["warm_start"] = base.model
                params = spaces[model].parameter_set(fitted.values, record)
                output = _save_fit(params, outputs[model], args.force, fitted.interrupted)
                results.append(ModelResult(params, train_mae, val_mae, fitted.trials,
                                           fitted.seconds, output, fitted.interrupted, train_t,
                                           val_t, delays))
            if fitted.interrupted or stop_requested():
                break
    except KeyboardInterrupt:  # between two searches: the models fitted so far are kept
        if not results:
            raise
        stopped = True
    finally:
        # Written whole, whatever signal comes (the first one stopped the fit; later ones
        # are absorbed by bam_sim.common.command); then the figure workers end.
        with shielded():
            report = _report(args.report, results, validation.logs, train.logs, warnings,
                             provenance, pool, args.force)
    return _fit_summary(results, report, stopped)


def _report(folder: Path, results: list, validation: list, train: list, warnings: list[str],
            provenance: dict, pool, force: bool = False) -> Path | None:
    """The report of the models fitted (None when none was), then the workers closed.

    It is written beside ``folder`` and moved into place whole (output_paths): a
    report another fit wrote there meanwhile is kept, and this one says so."""
    from bam_identify.fitting.report import write_report

    try:
        if not results:
            return None
        with output_folder(folder, "--report", force) as where:
            path = write_report(where, results, validation, train, warnings, provenance, pool)
        return Path(folder) / path.name
    finally:
        # After a stop the workers are killed, not waited for: one may still be importing
        # matplotlib for seconds before it reads the end of its input.
        pool.close(at_once=stop_requested(), stopped=stop_requested)


def _fit_summary(results: list, report: Path | None, stopped: bool) -> str:
    """The MAE table and the files written; FitInterrupted when a signal stopped a search."""
    from bam_identify.fitting.report import FIGURES_LEFT_OUT, mae_table

    files = "\n".join(f"  {r.model}: {r.output}" for r in results)
    summary = f"{mae_table(results)}\nparameters:\n{files}\nreport: {report}"
    bare = report is not None and _figures_left_out(report)
    if bare:
        summary += f"\n{FIGURES_LEFT_OUT}"
    # A signal that came once every search was done (during the report, written whole)
    # stopped nothing: the summary as usual, and the exit code says a signal came.
    stop = current()
    if stopped or (results and results[-1].interrupted):
        name = signal_name(stop.signum if stop else 0)
        what = "without its figures" if bare else "complete"
        raise FitInterrupted(f"{summary}\nfit interrupted by {name}: only the files above "
                             f"were written (the report {what}, for these models)")
    return summary


def _figures_left_out(report: Path) -> bool:
    """Whether the report written at ``report`` says a stop left its figures out."""
    try:
        summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "figures_left_out" in summary


def _check_held(held: dict[str, float], act, model: str, groups: tuple[str, ...]) -> None:
    from bam_identify.fitting.fit import identification_bounds
    from bam_sim.models.motor_groups import get_group

    bounds = dict(identification_bounds(act, get_model(model)))
    for name in groups:
        group = get_group(name)
        if group.family is None or group.family == act.family:
            bounds.update(group.bounds(act.scales))
    for name, value in held.items():
        low, high = bounds.get(name, (-np.inf, np.inf))
        if not low <= value <= high:
            raise BamError(f"--set {name}={value:g} is outside [{low:g}, {high:g}], the "
                           f"range the fit searches for {name} on {act.name}; hold a value "
                           "inside it")


def group_defaults(groups: tuple[str, ...], logs) -> dict[str, float]:
    """Values held for the groups fitted, unless --set: the thermal group's ambient and
    reference temperatures are the coolest first temperature of the training logs (a
    motor at rest is at ambient, and R is identified at that temperature)."""
    if "thermal" not in groups:
        return {}
    first = [float(log.temperature[0]) for log in logs if log.temperature is not None]
    if not first:
        raise BamError("--groups thermal needs the winding temperature, but no training log "
                       "recorded one (bam/actuator_states temperature); record it, or leave "
                       "thermal out")
    return {"thermal.ambient": min(first), "thermal.reftemp": min(first)}


def _check_sharing(args: FitJob) -> None:
    if (args.study is not None or args.workers is not None) and args.storage is None:
        raise BamError("--study and --workers name a study in a storage: give --storage too "
                       "(e.g. sqlite:///fit.db or postgresql+psycopg://user@host/db)")
    if args.study is not None and not args.study.strip():
        raise BamError("--study must not be empty")


def _study_name(args: FitJob, actuator: str, model: str, count: int) -> str:
    if args.study is None:
        return f"bam_{actuator}_{model}_seed{args.seed}"
    return args.study if count == 1 else f"{args.study}_{model}"


class FitInterrupted(Interrupted):
    """Ctrl-C stopped a fit; its summary says what was written (exit status 128 + signal)."""


def _save_fit(params, output: Path, force: bool, interrupted: bool) -> Path:
    """Write a fitted set; an interrupted fit never replaces an existing file, even with
    ``force``: it goes beside it, as ``<name>.interrupted.yaml``."""
    if interrupted and output.exists():
        kept = output
        output = output.with_name(f"{output.stem}.interrupted{output.suffix or '.yaml'}")
        print(f"interrupted: the best {params.model} parameters found are in {output}; "
              f"{kept} is kept", file=sys.stderr)
    elif interrupted:
        print(f"interrupted: the best {params.model} parameters found are in {output}",
              file=sys.stderr)
    # Through a temporary file, never over a file another command wrote meanwhile.
    return write_new(output, dump_yaml(params), "--output", force=force or interrupted)


def _fit_one(space, logs, settings, quiet: bool, identify, check_logs=None, tick=None):
    """One model's fit with its progress bar; ``tick`` is called at every generation."""
    from tqdm import tqdm

    with tqdm(total=settings.trials, desc=f"fit {space.model}", unit="trial", disable=quiet,
              mininterval=0.5, file=sys.stderr) as bar:
        def progress(count: int, best: float) -> None:
            bar.update(count)
            bar.set_postfix_str(f"best MAE {best:.3e} rad", refresh=False)
            if tick is not None:
                tick()

        # The validation logs are checked too: an ep_* set valid on every training
        # bench must also run on the validation ones.
        return identify(space, logs, settings, progress, check_logs=check_logs or None)


def _provenance(args, dataset, train, validation) -> dict:
    return {
        "source": "bam_identify fit",
        "version": version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "actuator": dataset.actuator,
        "seed": args.seed,
        "dt": args.dt,
        "data": [str(s) for s in dataset.sources],
        "train_logs": [log.name for log in train.logs],
        "validation_logs": [log.name for log in validation.logs] or ["none"],
        "validation": (f"kp={args.validation_kp:g}" if args.validation_kp is not None
                       else f"fraction {args.validation_fraction:g}, stratified by trajectory"),
        "python": platform.python_version(),
    }


def eval_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="eval", description="Score parameter files (YAML or legacy JSON) on logs: "
        "mean absolute position error of simulated-control rollouts (and of the winding "
        "temperature, for sets with the thermal group on logs that recorded it).")
    parser.add_argument("--params", nargs="+", type=Path, required=True, metavar="FILE")
    _data_arguments(parser)
    parser.add_argument("--replay", action="store_true", help="replay the recorded control")
    parser.add_argument("--json", type=Path, help="write the scores to this file")
    parser.add_argument("--force", action="store_true", help="overwrite --json")
    return parser


def run_eval(args: argparse.Namespace) -> str:
    from bam_identify.fitting.fit import Objective, SearchSpace

    if args.json:
        inputs = ([("--params", p) for p in args.params] + [("--bags", p) for p in args.bags]
                  + [("--logs", p) for p in args.logs])
        check_output(args.json, "--json", force=args.force, inputs=inputs)
    sets = [(path, load(path)) for path in args.params]
    dataset = _load(args)
    weights = [len(log) for log in dataset.logs]
    scores = {}
    rows = []
    for path, params in sets:
        if params.actuator != dataset.actuator:
            raise BamError(f"{path} is for {params.actuator} but the logs are of "
                           f"{dataset.actuator}; pass matching --params or --actuator")
        space = SearchSpace.build(params.actuator, params.model, params.values, False)
        objective = Objective(space, dataset.logs, args.replay)
        per_log = objective.per_log({})
        mae = float(np.average(per_log, weights=weights))
        _, temperature = objective.errors({})
        scores[str(path)] = {"model": params.model, "mae": mae,
                             "per_log": dict(zip([log.name for log in dataset.logs],
                                                 per_log.tolist(), strict=True))}
        if temperature is not None:
            scores[str(path)]["temperature_mae"] = temperature
        rows.append((f"{str(path):<40} {params.model:<6} {mae:>10.3e}", temperature))
    # the winding-temperature column only when a set was scored on temperature
    heated = any(t is not None for _, t in rows)
    lines = [f"{'file':<40} {'model':<6} {'MAE [rad]':>10}" + (f" {'MAE [K]':>8}" if heated
                                                               else "")]
    lines += [row + (f" {_kelvin(t):>8}" if heated else "") for row, t in rows]
    if args.json:
        summary = {"logs": len(dataset.logs), "actuator": dataset.actuator,
                   "replay": args.replay, "scores": scores, "version": version()}
        with shielded():  # written whole or not at all, and named if a stop follows
            write_new(args.json, json.dumps(summary, indent=2) + "\n", "--json", args.force)
            record_written(args.json)
        lines.append(f"wrote {args.json}")
    return "\n".join(lines)


def _kelvin(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _main(parser: argparse.ArgumentParser, run, argv: list[str] | None) -> int:
    """Run a command: its output on stdout, a BamError as one line on stderr (exit 2),
    Ctrl-C or SIGTERM as a clean interruption (128 + signal; bam_sim.common.command):
    what a fit has found is kept, a campaign job goes back to its queue."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or one line on a bad option (2)
        return int(exit_.code or 0)
    return run_command(parser.prog, lambda stop: run(args))


def fit_main(argv: list[str] | None = None) -> int:
    return _main(fit_parser(), lambda args: run_fit(FitJob.from_args(args)), argv)


def recover_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="recover", description="Recover a bag whose recording stopped without closing "
        "it (no metadata.yaml, MCAP without its end): its complete records become a new, "
        "complete bag beside it; the original is left as it is.")
    parser.add_argument("bag", type=Path, help="the unterminated bag folder or .mcap file")
    parser.add_argument("--output", type=Path, help="the new bag (default: <bag>_recovered)")
    return parser


def run_recover(args: argparse.Namespace) -> str:
    from bam_identify.data.bag_recovery import needs_recovery, recover_bag

    output = args.output or args.bag.with_name(f"{args.bag.stem}_recovered")
    check_output(output, "--output", force=None, inputs=[("bag", args.bag)], folder=True)
    if not needs_recovery(args.bag):
        raise BamError(f"{args.bag} is not an unterminated mcap bag (it has its metadata and "
                       "end, or is not an mcap recording); nothing to recover")
    return recover_bag(args.bag, output).summary()


def recover_main(argv: list[str] | None = None) -> int:
    return _main(recover_parser(), run_recover, argv)


def eval_main(argv: list[str] | None = None) -> int:
    return _main(eval_parser(), run_eval, argv)
