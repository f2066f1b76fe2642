#!/usr/bin/env python3
"""Time the published reference's own CMA-ES identification, trial by trial.

Executed with the reference venv (see benchmarks/setup_reference.sh)::

    .venv-ref/bin/python benchmarks/reference_fit_runner.py \
        --logs DIR --actuator mx64 --model m4 --trials 4000 --seed 0 \
        --output OUT.json [--thresholds 1e-3 1e-4] [--timeout SEC] \
        [--truth PARAMS.json|PARAMS.yaml] [--stop-at-thresholds]

What runs
    The reference's identification module ``bam.fit`` itself, executed
    in-process exactly as ``python -m bam.fit --logdir DIR --method cmaes
    --actuator A --model M --trials N --output TMP.json`` would run it
    (``runpy.run_module("bam.fit", run_name="__main__")`` with that argv; the
    module parses its arguments and runs the whole identification at import
    time). Its objective, sampler, parameter bounds, log loading and batching,
    and its own progress callback (``monitor``, which rewrites its params file
    and prints the best parameters at most every 0.2 s) are all its own.
    ``--validation_kp`` is left at its default 0, so every ``*.json`` file in
    DIR is a training log and none is held out (the reference only holds out
    the logs whose kp equals ``--validation_kp K`` when K > 0).

How trials are observed (nothing the reference computes is changed)
    Before ``bam.fit`` runs, two attributes of the *optuna* module are wrapped:

    * ``optuna.create_study``: calls the original and keeps the returned study;
      the study's ``optimize`` is wrapped so that one more callback is placed
      before the reference's own ``monitor``. It records, for every finished
      trial, ``time.perf_counter()`` and the trial's value, and calls
      ``study.stop()`` only for ``--timeout`` / ``--stop-at-thresholds``.
      The trial values are the reference's objective values as optuna stored
      them; optuna's own ``datetime_complete`` stamps are cross-checked
      against the callback times (``timing_crosscheck`` in the output).
    * ``optuna.samplers.CmaEsSampler``: the reference constructs it without a
      seed (``CmaEsSampler(restart_strategy="bipop")``), i.e. every run draws
      a fresh OS-entropy seed. With ``--seed S`` the runner adds ``seed=S`` to
      that constructor call (nothing else), which makes the run reproducible;
      ``--seed none`` leaves the call untouched (the reference's behaviour).

    Imports of the libraries ``bam.fit`` needs (numpy, optuna, wandb, bam.*)
    are done before the clock starts; ``seconds`` are measured from the start
    of ``bam.fit``'s execution (argument parsing, log loading, batching, then
    optimization), ``seconds_optimize`` from the start of ``study.optimize``.

Output JSON: reference/optuna/cmaes versions, the equivalent command, the
training log files, trials run, total seconds, best value and parameters (as
the study holds them, completed with the reference's values for parameters it
does not optimize), for each threshold the first trial whose best-so-far value
is <= threshold (0-based trial number, trials completed, seconds), a
downsampled best-so-far curve, the full per-trial trace, the CMA-ES state
(population size, generations, sigma), and with ``--truth`` the objective at
the true parameters and per-parameter errors.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import importlib
import json
import math
import os
import platform
import runpy
import shutil
import sys
import tempfile
import time
import warnings

REF_DIST = "better-actuator-models"
LOG_KEYS = ("mass", "length", "kp", "dt", "entries")
ENTRY_KEYS = ("timestamp", "position", "speed", "goal_position", "torque_enable")


def fail(msg: str, code: int = 2) -> "NoReturn":  # noqa: F821
    print(f"reference_fit_runner: error: {msg}", file=sys.stderr)
    sys.exit(code)


def warn(msg: str) -> None:
    print(f"reference_fit_runner: warning: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------
# Reference presence and inputs
# --------------------------------------------------------------------------


def import_reference() -> dict:
    """Import everything bam.fit imports (outside the timed region), or exit."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.util import find_spec

    hint = (f"run `bash benchmarks/setup_reference.sh` and use .venv-ref/bin/python "
            f"(this is {sys.executable})")
    try:
        spec = find_spec("bam.fit")
    except ImportError:
        spec = None
    if spec is None:
        fail(f"reference package '{REF_DIST}' (module bam.fit) is not installed; {hint}")
    try:
        for mod in ("numpy", "optuna", "cmaes", "wandb", "colorama", "bam.logs",
                    "bam.model", "bam.simulate", "bam.actuators", "bam.message"):
            importlib.import_module(mod)
    except ImportError as e:
        fail(f"reference identification dependencies not importable ({e}); {hint}")

    def v(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "unknown"

    return {"reference_package": REF_DIST, "reference_version": v(REF_DIST),
            "optuna": v("optuna"), "cmaes": v("cmaes"), "numpy": v("numpy"),
            "python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count()}


def check_logs(directory: str, output: str) -> list[str]:
    """The files bam.fit will read (glob DIR/*.json), checked for its format."""
    if not os.path.isdir(directory):
        fail(f"--logs {directory} is not a directory")
    files = sorted(glob.glob(f"{directory}/*.json"))  # the reference's own glob
    if not files:
        fail(f"no *.json logs in {directory}")
    out_dir = os.path.realpath(os.path.dirname(os.path.abspath(output)))
    if out_dir == os.path.realpath(directory) and output.endswith(".json"):
        fail(f"--output {output} is inside --logs {directory}: the reference would "
             f"read it as a log on the next run; write it elsewhere")
    keys0, lengths = None, []
    for path in files:
        try:
            with open(path) as f:
                log = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"cannot read log {path}: {e}")
        if not isinstance(log, dict):
            fail(f"{path} is not a processed log (JSON object expected)")
        missing = [k for k in LOG_KEYS if k not in log]
        if missing:
            fail(f"{path} lacks {missing} (processed log keys: {list(LOG_KEYS)})")
        if not log["entries"]:
            fail(f"{path} has no entries")
        miss_e = [k for k in ENTRY_KEYS if k not in log["entries"][0]]
        if miss_e:
            fail(f"{path}: entries lack {miss_e}")
        keys = set(log) | {"arm_mass"}  # the reference adds arm_mass=0 when absent
        if keys0 is None:
            keys0 = keys
        elif keys != keys0:
            fail(f"{path} has top-level keys {sorted(keys)} but the first log has "
                 f"{sorted(keys0)}; the reference's batching needs the same keys")
        lengths.append(len(log["entries"]))
    if max(lengths) != min(lengths):
        warn(f"logs have {min(lengths)}..{max(lengths)} entries; the reference's "
             f"make_batch truncates every log to the shortest ({min(lengths)})")
    return files


def load_truth(path: str) -> dict:
    """Parameter values from a reference JSON params file or a ROS YAML params file."""
    with open(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            fail(f"--truth {path} is not JSON and pyyaml is not installed")
        data = yaml.safe_load(text)
        if isinstance(data, dict) and "/**" in data:
            data = data["/**"].get("ros__parameters", {})
    if not isinstance(data, dict):
        fail(f"--truth {path}: expected a mapping of parameter values")
    return {k: float(v) for k, v in data.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


# --------------------------------------------------------------------------
# Observation hooks (optuna attributes only; bam.fit is not touched)
# --------------------------------------------------------------------------


class Observer:
    def __init__(self, thresholds, timeout, stop_at_thresholds):
        self.thresholds = sorted(thresholds, reverse=True)
        self.timeout = timeout
        self.stop_at = stop_at_thresholds
        self.t0 = None  # perf_counter at the start of bam.fit
        self.wall0 = None  # datetime at the same instant (optuna stamps)
        self.t_optimize = None
        self.studies = []
        self.trials = []  # (number, seconds, value or None, state)
        self.walls = []  # datetime.now() at the same instant, for the cross-check
        self.best = math.inf
        self.stopped = None

    def callback(self, study, trial):
        now = time.perf_counter() - self.t0
        self.walls.append(datetime.datetime.now())
        value = trial.value if trial.state.name == "COMPLETE" else None
        self.trials.append((trial.number, now, value, trial.state.name))
        if value is not None and value < self.best:
            self.best = value
        if self.timeout is not None and now >= self.timeout:
            self.stopped = f"timeout {self.timeout} s"
            study.stop()
        elif self.stop_at and self.best <= self.thresholds[-1]:
            self.stopped = f"best <= {self.thresholds[-1]}"
            study.stop()


@contextlib.contextmanager
def hooks(optuna, obs: Observer, seed):
    orig_create = optuna.create_study
    orig_cma = optuna.samplers.CmaEsSampler

    def create_study(*a, **kw):
        study = orig_create(*a, **kw)
        obs.studies.append(study)
        orig_optimize = study.optimize

        def optimize(func, *oa, callbacks=None, **okw):
            if obs.t_optimize is None:
                obs.t_optimize = time.perf_counter() - obs.t0
            return orig_optimize(func, *oa, callbacks=[obs.callback, *(callbacks or [])],
                                 **okw)

        study.optimize = optimize
        return study

    def cma_sampler(*a, **kw):
        if seed is not None and kw.get("seed") is None:
            kw["seed"] = seed
        return orig_cma(*a, **kw)

    optuna.create_study = create_study
    optuna.samplers.CmaEsSampler = cma_sampler
    try:
        yield
    finally:
        optuna.create_study = orig_create
        optuna.samplers.CmaEsSampler = orig_cma


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


def threshold_hits(trials, thresholds):
    out = {}
    for thr in thresholds:
        best, hit, completed = math.inf, None, 0
        for number, sec, value, _ in trials:
            completed += 1
            if value is not None and value < best:
                best = value
            if best <= thr:
                hit = {"trial": number, "trials_completed": completed, "seconds": sec,
                       "value": best}
                break
        out[f"{thr:g}"] = hit
    return out


def curve(trials, rel_step=0.02):
    """Best-so-far at every improvement of >= rel_step (relative), plus the ends."""
    pts, best, last_kept = [], math.inf, math.inf
    for number, sec, value, _ in trials:
        if value is not None and value < best:
            best = value
            if not pts or best <= last_kept * (1.0 - rel_step):
                pts.append([number, sec, best])
                last_kept = best
    if trials and (not pts or pts[-1][0] != trials[-1][0]):
        pts.append([trials[-1][0], trials[-1][1], best])
    return pts


def cma_state(g, study) -> dict | None:
    """Population size, generations and step size of the sampler's last CMA object."""
    sampler = g.get("sampler")
    try:
        completed = [t for t in study.trials if t.state.name == "COMPLETE"]
        opt = sampler._restore_optimizer(completed)
        if opt is None:
            return None
        return {"dimension": int(opt.dim), "population_size": int(opt.population_size),
                "generation": int(opt.generation), "sigma": float(opt._sigma),
                "class": type(opt).__name__}
    except Exception as e:  # private API of optuna; informative only
        return {"unavailable": f"{type(e).__name__}: {e}"}


def param_errors(estimate: dict, truth: dict, bounds: dict) -> dict:
    out = {}
    for name, (lo, hi, optimized) in bounds.items():
        if name not in truth:
            out[name] = {"estimate": estimate.get(name), "truth": None,
                         "optimized": optimized}
            continue
        est, tru = estimate[name], truth[name]
        err = est - tru
        out[name] = {
            "estimate": est, "truth": tru, "abs_error": abs(err),
            "rel_error": abs(err) / abs(tru) if tru != 0.0 else None,
            "error_over_bound_range": abs(err) / (hi - lo) if hi > lo else None,
            "bounds": [lo, hi], "optimized": optimized,
        }
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="Run and time the reference's CMA-ES identification (bam.fit).")
    p.add_argument("--logs", required=True, help="directory of processed JSON logs")
    p.add_argument("--actuator", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--trials", type=int, default=4000)
    p.add_argument("--seed", default="0",
                   help="seed added to the reference's CmaEsSampler(); 'none' keeps "
                        "the reference's unseeded sampler")
    p.add_argument("--output", required=True)
    p.add_argument("--thresholds", type=float, nargs="+", default=[1e-3, 1e-4])
    p.add_argument("--timeout", type=float, default=None,
                   help="stop after the trial finishing past SEC seconds")
    p.add_argument("--stop-at-thresholds", action="store_true",
                   help="stop once best-so-far <= the smallest threshold")
    p.add_argument("--set", default="",
                   help="passed to bam.fit --set (parameters held fixed), e.g. "
                        "\"{'q_offset': 0.0}\"; default: none (the reference's)")
    p.add_argument("--validation-kp", type=int, default=0,
                   help="passed to bam.fit --validation_kp; 0 (default) = train on "
                        "every log")
    p.add_argument("--truth", default=None,
                   help="true parameters (reference JSON or bam_sim/ROS YAML) for "
                        "parameter errors and the objective at the truth")
    p.add_argument("--reference-stdout", default=os.devnull,
                   help="where bam.fit's own progress printing goes (default: discarded)")
    args = p.parse_args(argv)
    if args.trials < 1:
        p.error("--trials must be >= 1")
    if args.seed.lower() in ("none", "null", ""):
        seed = None
    else:
        try:
            seed = int(args.seed)
        except ValueError:
            p.error("--seed must be an integer or 'none'")
    if args.timeout is not None and args.timeout <= 0:
        p.error("--timeout must be > 0")

    env = import_reference()
    import optuna
    from bam.actuators import actuators
    from bam.model import load_model_from_dict, models

    if args.actuator not in actuators:
        fail(f"unknown actuator {args.actuator!r}; the reference has {sorted(actuators)}")
    if args.model not in models:
        fail(f"unknown model {args.model!r}; the reference has {sorted(models)}")
    logdir = os.path.abspath(args.logs)
    files = check_logs(logdir, args.output)
    truth = load_truth(args.truth) if args.truth else None

    tmpdir = tempfile.mkdtemp(prefix="reference_fit_")
    params_file = os.path.join(tmpdir, "params.json")
    fit_argv = ["--logdir", logdir, "--method", "cmaes", "--actuator", args.actuator,
                "--model", args.model, "--trials", str(args.trials),
                "--output", params_file]
    if args.set:
        fit_argv += ["--set", args.set]
    if args.validation_kp:
        fit_argv += ["--validation_kp", str(args.validation_kp)]

    obs = Observer(args.thresholds, args.timeout, args.stop_at_thresholds)
    saved_argv, cwd = sys.argv, os.getcwd()
    print(f"reference_fit_runner: bam.fit {' '.join(fit_argv)} (seed {seed}, "
          f"{len(files)} logs)", file=sys.stderr)
    with open(args.reference_stdout, "w") as ref_out, \
            warnings.catch_warnings(record=True) as caught, hooks(optuna, obs, seed):
        os.chdir(tmpdir)  # anything bam.fit writes relative to cwd lands here
        sys.argv = ["bam.fit", *fit_argv]
        try:
            with contextlib.redirect_stdout(ref_out):
                obs.wall0 = datetime.datetime.now()
                obs.t0 = time.perf_counter()
                g = runpy.run_module("bam.fit", run_name="__main__", alter_sys=True)
                total = time.perf_counter() - obs.t0
        finally:
            sys.argv = saved_argv
            os.chdir(cwd)
    ref_warnings = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    for w in ref_warnings:
        warn(f"from the reference run: {w}")

    if not obs.studies:
        fail("bam.fit returned without creating an optuna study")
    study = obs.studies[-1]
    trials = obs.trials
    done = [t for t in trials if t[2] is not None]
    if not done:
        fail("no trial completed")

    # Cross-check callback times against optuna's own completion stamps: the
    # callback's lag behind datetime_complete (same wall clock), and how far the
    # wall clock drifted from the monotonic perf_counter over the run.
    stamps = {t.number: t.datetime_complete for t in study.trials}
    lags = [(w - stamps[n]).total_seconds()
            for (n, _, _, _), w in zip(trials, obs.walls) if stamps.get(n) is not None]
    drift = (obs.walls[-1] - obs.wall0).total_seconds() - trials[-1][1]

    # Best parameters, completed as the reference's monitor completes them.
    best_trial = study.best_trial
    model = g["make_model"]()
    mparams = model.get_parameters()
    best = dict(best_trial.params)
    for k, prm in mparams.items():
        best.setdefault(k, prm.value)
    bounds = {k: (prm.min, prm.max, bool(prm.optimize)) for k, prm in mparams.items()}
    optimized = [k for k, b in bounds.items() if b[2]]

    # Re-evaluate the reference's objective at the best point (untimed check).
    best_model = load_model_from_dict({**best, "model": args.model,
                                       "actuator": args.actuator})
    recheck = float(g["compute_score"](best_model, g["logs_batch"]))

    try:
        with open(params_file) as f:
            written = json.load(f)
    except (OSError, ValueError):
        written = None
    shutil.rmtree(tmpdir, ignore_errors=True)

    logs_obj = g["logs"]
    train_files = sorted(os.path.basename(f) for f in logs_obj.json_files)
    n_entries = len(g["logs_batch"]["entries"])
    out = {
        **env,
        "command": "python -m bam.fit " + " ".join(
            a if " " not in a else repr(a) for a in fit_argv),
        "options": {"logs": logdir, "actuator": args.actuator, "model": args.model,
                    "trials": args.trials, "seed": seed, "thresholds": args.thresholds,
                    "timeout": args.timeout, "stop_at_thresholds": args.stop_at_thresholds,
                    "set": args.set, "validation_kp": args.validation_kp},
        "method": (
            "bam.fit executed in-process via runpy (as `python -m bam.fit`); per-trial "
            "times from an extra optuna callback placed before the reference's monitor; "
            "seed injected into the reference's CmaEsSampler() call"
            + ("" if seed is not None else " (disabled: unseeded, as the reference)")),
        "objective": (
            "bam.fit compute_score(model, logs_batch): Simulator.rollout_log(batch of "
            "all training logs, reset_period=None, simulate_control=True), mean |q_sim - "
            "q_log| over every entry (entry 0 included) and every log"),
        "training_logs": train_files,
        "n_training_logs": len(train_files),
        "validation_logs": (sorted(os.path.basename(f) for f in
                                   g["validation_logs"].json_files)
                            if args.validation_kp else []),
        "entries_per_log": n_entries,
        "optimized_parameters": optimized,
        "bounds": {k: [b[0], b[1]] for k, b in bounds.items() if b[2]},
        "cma": cma_state(g, study),
        "n_trials": len(trials),
        "n_complete": len(done),
        "stopped": obs.stopped,
        "setup_seconds": obs.t_optimize,
        "total_seconds": total,
        "best_value": study.best_value,
        "best_value_recomputed": recheck,
        "best_trial": best_trial.number,
        "best_params": best,
        "reference_params_file_matches_best": (
            None if written is None else
            all(written.get(k) == v for k, v in best_trial.params.items())),
        "thresholds": threshold_hits(trials, args.thresholds),
        "curve": {"columns": ["trial", "seconds", "best"], "points": curve(trials)},
        "trace": {"trial": [t[0] for t in trials], "seconds": [t[1] for t in trials],
                  "value": [t[2] for t in trials]},
        "timing_crosscheck": {
            "callback_lag_after_optuna_datetime_complete_s": {
                "min": min(lags) if lags else None, "max": max(lags) if lags else None},
            "wall_clock_minus_perf_counter_over_run_s": drift},
        "reference_warnings": ref_warnings,
    }
    for hit in out["thresholds"].values():
        if hit is not None and obs.t_optimize is not None:
            hit["seconds_optimize"] = hit["seconds"] - obs.t_optimize

    if truth is not None:
        truth_full = {k: prm.value for k, prm in load_model_from_dict(
            {"model": args.model, "actuator": args.actuator}).get_parameters().items()}
        truth_full.update({k: v for k, v in truth.items() if k in truth_full})
        given = {k: v for k, v in truth.items() if k in truth_full}
        tm = load_model_from_dict({**truth_full, "model": args.model,
                                   "actuator": args.actuator})
        out["truth"] = {
            "path": os.path.abspath(args.truth),
            "values": given,
            "defaulted_to_reference": sorted(set(truth_full) - set(given)),
            "ignored": sorted(set(truth) - set(truth_full)),
            "objective_at_truth": float(g["compute_score"](tm, g["logs_batch"])),
        }
        out["parameter_errors"] = param_errors(best, given, bounds)

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)

    summary = ", ".join(
        f"<= {k}: " + ("never" if h is None else
                       f"trial {h['trial']} ({h['seconds']:.1f} s)")
        for k, h in out["thresholds"].items())
    print(f"reference_fit_runner: {len(trials)} trials in {total:.1f} s, best "
          f"{study.best_value:.3e} rad at trial {best_trial.number}; {summary}; "
          f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
