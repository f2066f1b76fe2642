"""Identification speed and accuracy, side by side with the reference implementation.

Two synthetic sets shaped like the paper's (issue 3):

* ``mx64_m4``: the published MX-64 M4 parameters, Table I Dynamixel setups
  (masses 0.5/1/1.5 kg, lengths 0.1/0.15/0.2 m, arm mass 0.1 kg, gains
  4/8/16/32), the four trajectories of section V-A, 24 logs of 6 s at 5 ms;
* ``erob80_100_m6``: the published eRob80:100 M6 set, masses 3.1-19.6 kg,
  length 0.5 m, gains 10/25/50/100, 20 logs.

For each, all logs for training, several seeds, in one run:

* ours (CMA-ES, then Levenberg–Marquardt once in the basin) and ours with
  CMA-ES only (``--no-polish``) until the training MAE is at most 1e-4 rad:
  evaluations and wall time to 1e-3 and 1e-4; then the final error at the
  reference's budget (4,000 candidates);
* the reference's ``python -m bam.fit --method cmaes`` for its 4,000 trials on
  the same logs, written in its JSON log format (``reference_fit_runner.py``,
  in .venv-ref), and the ratio of the median wall times to each threshold;
* (MX-64 M4) 1, 2 and 4 ``fit`` processes sharing one study on a real
  PostgreSQL (``--storage postgresql+psycopg://... --workers N``) until 1e-4
  rad: evaluations, the fit's own time and the processes' wall time;
* (MX-64 M4, once) the overhead of a 10,000-candidate fit: the share of its wall
  time spent in the batched simulation, and the candidate rate between
  candidates 500-1,500 and 9,000-10,000 (default; CMA-ES only; CMA-ES only
  without restarts, i.e. a constant population).

And once: the start-up of the ``fit`` command (process start to its first
evaluation, after a first run has filled numba's cache), and the time the
report of six models takes (figures drawn inline, and by the workers warmed
up during the fit). The machine's load average is recorded at each step: it
is shared, so compare ratios measured in the same run. Writes
benchmarks/results/identification.json.

Run: ``tools/workspace.sh exec python benchmarks/identification.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from provenance import environment, write_result

from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.files.parameter_file import load as load_parameters
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THRESHOLDS = (1e-3, 1e-4)
CASES = {
    "mx64_m4": {"actuator": "mx64", "model": "m4", "logs": 24, "arm_mass": 0.1},
    "erob80_100_m6": {"actuator": "erob80_100", "model": "m6", "logs": 20, "arm_mass": 0.0,
                      "reference_set": "{'R': 2.0}"},
}
VARIANTS = {"ours": {}, "ours_cma_only": {"polish": False}}
OVERHEAD_TRIALS = 10_000
PARTS = ("startup", "report", "overhead", "workers", "cases")
WORKER_COUNTS = (1, 2, 4)


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def first_reaching(history: list[tuple[int, float, float]], threshold: float) -> dict | None:
    for trials, seconds, best in history:
        if best <= threshold:
            return {"trials": trials, "seconds": seconds}
    return None


def run_ours(case: dict, logs, seeds: list[int], budget: int, same_budget: int,
             options: dict) -> dict:
    truth = published_named(case["actuator"], case["model"])
    space = SearchSpace.from_names(case["actuator"], case["model"])
    runs = []
    for seed in seeds:
        result = identify(space, logs, FitSettings(trials=budget, seed=seed,
                                                   target=THRESHOLDS[-1], **options))
        errors = {name: abs(result.values[name] - truth.values[name])
                  / max(abs(truth.values[name]), 1e-3) for name in space.names
                  if name != "q_offset"}
        runs.append({
            "seed": seed, "trials": result.trials, "seconds": result.seconds,
            "train_mae": result.train_mae,
            "reached": {f"{t:g}": first_reaching(result.history, t) for t in THRESHOLDS},
            "polishes": result.polishes, "q_offset": result.values.get("q_offset", 0.0),
            "relative_parameter_errors": errors, "load_average": load(),
        })
        print(f"    seed {seed}: {result.train_mae:.2e} rad after {result.trials} "
              f"evaluations in {result.seconds:.2f} s; "
              + ", ".join(f"<= {t:g} at {_fmt(runs[-1]['reached'][f'{t:g}'])}"
                          for t in THRESHOLDS))
    # The same budget as the reference, without stopping at a target: the final error of
    # each side for equal work.
    final = []
    for seed in seeds:
        result = identify(space, logs, FitSettings(trials=same_budget, seed=seed, **options))
        final.append({"seed": seed, "trials": result.trials, "seconds": result.seconds,
                      "train_mae": result.train_mae, "restarts": result.restarts})
        print(f"    seed {seed}, {same_budget} evaluations: {result.train_mae:.2e} rad in "
              f"{result.seconds:.1f} s ({result.restarts} restarts)")
    return {"settings": options, "runs": runs, "same_budget": final}


def rate(history: list[tuple[int, float, float]], first: int, last: int) -> float:
    """Candidates per second between the generations ending nearest ``first`` and ``last``."""
    a = min(history, key=lambda h: abs(h[0] - first))
    b = min(history, key=lambda h: abs(h[0] - last))
    return (b[0] - a[0]) / (b[1] - a[1])


def run_overhead(case: dict, logs) -> dict:
    """A long fit's simulation share and candidate rate, early and late."""
    space = SearchSpace.from_names(case["actuator"], case["model"])
    out = {}
    for name, options in {"default": {}, "cma_only": {"polish": False},
                          "cma_only_constant_population": {"polish": False,
                                                           "restarts": False}}.items():
        result = identify(space, logs, FitSettings(trials=OVERHEAD_TRIALS, seed=0, **options))
        early = rate(result.history, 500, 1500)
        late = rate(result.history, OVERHEAD_TRIALS - 1000, OVERHEAD_TRIALS)
        out[name] = {"settings": options, "trials": result.trials, "seconds": result.seconds,
                     "simulation_share": result.simulation_seconds / result.seconds,
                     "rate_500_1500_per_s": early,
                     f"rate_{OVERHEAD_TRIALS - 1000}_{OVERHEAD_TRIALS}_per_s": late,
                     "late_over_early": late / early, "restarts": result.restarts,
                     "train_mae": result.train_mae, "load_average": load()}
        print(f"    {name}: {result.trials} in {result.seconds:.1f} s, simulation "
              f"{100 * out[name]['simulation_share']:.0f} %, {early:.0f}/s early, "
              f"{late:.0f}/s late ({result.restarts} restarts)")
    return out


def run_reference(name: str, case: dict, logs, trials: int, seeds: list[int],
                  folder: Path) -> dict | None:
    """The reference's own CMA-ES fit on the same logs, once per seed (it varies a lot)."""
    python = ROOT / ".venv-ref" / "bin" / "python"
    setup = subprocess.run(["bash", str(HERE / "setup_reference.sh")], capture_output=True,
                           text=True)
    if setup.returncode != 0:
        print(f"  reference unavailable, skipped: {setup.stderr.strip()[-200:]}")
        return None
    log_dir = write_logs(folder / f"{name}_logs", logs, case["actuator"])
    truth = save(published_named(case["actuator"], case["model"]), folder / f"{name}_truth.yaml")
    runs = []
    for seed in seeds:
        output = folder / f"{name}_reference_{seed}.json"
        command = [str(python), str(HERE / "reference_fit_runner.py"), "--logs", str(log_dir),
                   "--actuator", case["actuator"], "--model", case["model"],
                   "--trials", str(trials), "--seed", str(seed), "--output", str(output),
                   "--truth", str(truth), "--thresholds", *map(str, THRESHOLDS)]
        # Our bam_sim holds the eRob80:100's R at 2.0 Ω; the reference frees it unless told.
        command += [f"--set={case['reference_set']}"] if case.get("reference_set") else []
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        raw = json.loads(output.read_text())
        reached = {f"{t:g}": _reference_reached(raw["thresholds"].get(str(t))) for t in THRESHOLDS}
        runs.append({"seed": seed, "trials": raw["n_trials"], "seconds": raw["total_seconds"],
                     "best_value": raw["best_value"], "reached": reached,
                     "parameter_errors": raw.get("parameter_errors"), "load_average": load()})
        print(f"    reference seed {seed}: {raw['best_value']:.2e} rad after "
              f"{raw['n_trials']} trials in {raw['total_seconds']:.0f} s; "
              + ", ".join(f"<= {t:g} at {_fmt(reached[f'{t:g}'])}" for t in THRESHOLDS))
    first = json.loads((folder / f"{name}_reference_{seeds[0]}.json").read_text())
    return {"runs": runs, "version": first.get("reference_version"),
            "command": first.get("command"), "optimized_parameters":
            first.get("optimized_parameters"), "bounds": first.get("bounds")}


def write_logs(folder: Path, logs, actuator: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, log in enumerate(logs):
        write_legacy_log(folder / f"{i:03d}.json", log, get_actuator(actuator),
                         log.meta["trajectory"])
    return folder


def _reference_reached(entry: dict | None) -> dict | None:
    if not entry:
        return None
    return {"trials": entry["trials_completed"], "seconds": entry["seconds"]}


def _median(runs: list[dict], key: str, field: str) -> float | None:
    values = [r["reached"][key][field] for r in runs if r["reached"][key]]
    return statistics.median(values) if values else None


def compare(entry: dict) -> dict:
    """Median evaluations and time to each threshold over the seeds that reached it (a
    seed that did not counts as not reached), and the ratios to the reference."""
    reference = entry.get("reference")
    out = {}
    for t in THRESHOLDS:
        key = f"{t:g}"
        row = {}
        for variant in VARIANTS:
            runs = entry[variant]["runs"]
            row[variant] = {"median_evaluations": _median(runs, key, "trials"),
                            "median_seconds": _median(runs, key, "seconds"),
                            "reached": f"{sum(bool(r['reached'][key]) for r in runs)}"
                                       f"/{len(runs)}"}
        if reference:
            runs = reference["runs"]
            row["reference"] = {"median_evaluations": _median(runs, key, "trials"),
                                "median_seconds": _median(runs, key, "seconds"),
                                "reached": f"{sum(bool(r['reached'][key]) for r in runs)}"
                                           f"/{len(runs)}"}
            for variant in VARIANTS:
                mine, theirs = row[variant]["median_seconds"], row["reference"]["median_seconds"]
                if mine and theirs:
                    row[f"speedup_{variant}"] = theirs / mine
        out[key] = row
    out["final_error_same_budget"] = {
        variant: statistics.median(r["train_mae"] for r in entry[variant]["same_budget"])
        for variant in VARIANTS}
    if reference:
        out["final_error_same_budget"]["reference"] = statistics.median(
            r["best_value"] for r in reference["runs"])
    return out


# Process start to the fit's first evaluation: the real fit command, stopped there.
STARTUP = r"""
import json, os, sys, time
spawned = float(sys.argv[1])
import bam_identify.fitting.search as search
marks = {}
score = search.Search.score
def first(self, x):
    marks["ready_s"] = time.time() - spawned
    score(self, x)
    marks["first_evaluation_s"] = time.time() - spawned
    print(json.dumps(marks), flush=True)
    os._exit(0)
search.Search.score = first
from bam_identify.cli import fit_main
fit_main(sys.argv[2:])
"""


def run_startup(log_dir: Path, folder: Path, repeats: int = 3) -> dict:
    """``fit`` from process start to its first evaluation, after one warm-up run."""
    runs = []
    for i in range(repeats + 1):
        out = folder / f"startup{i}"
        command = [sys.executable, "-c", STARTUP, repr(time.time()), "--logs", str(log_dir),
                   "--models", "m4", "--quiet", "--output", str(out / "{model}.yaml"),
                   "--report", str(out / "report")]
        answer = subprocess.run(command, check=True, capture_output=True, text=True)
        marks = json.loads(answer.stdout.strip().splitlines()[-1])
        if i:  # the first run fills numba's cache if needed
            runs.append(marks)
    ready = statistics.median(r["ready_s"] for r in runs)
    first = statistics.median(r["first_evaluation_s"] for r in runs)
    print(f"  fit start-up: ready to evaluate {ready:.2f} s, first evaluation done "
          f"{first:.2f} s after the process started (median of {repeats})")
    return {"runs": runs, "median_ready_s": ready, "median_first_evaluation_s": first,
            "load_average": load()}


def run_report(log_dir: Path, folder: Path, trials: int, repeats: int = 3) -> dict:
    """Six models fitted by :func:`bam_identify.fitting.run.fit`, the time of its report; then
    the same report again ``repeats`` times (the machine is shared: the median is reported).
    The figures are drawn in the process, one after the other (the first report of a
    process imports matplotlib)."""
    import bam_identify.fitting.report as report
    from bam_identify.fitting.job import FitJob
    from bam_identify.fitting.run import fit

    captured = {}
    original = report.write_report

    def write_report(*args, **kwargs):
        started = time.perf_counter()
        path = original(*args, **kwargs)
        captured.update(args=args, seconds=time.perf_counter() - started)
        return path

    report.write_report = write_report
    try:
        target = folder / "report_fit"
        started = time.perf_counter()
        fit(FitJob(logs=(log_dir,), models=("m1", "m2", "m3", "m4", "m5", "m6"),
                   trials=trials, quiet=True, output=str(target / "{model}.yaml"),
                   report=target / "report"))
        out = {"models": 6, "trials_per_model": trials,
               "in_fit": {"report_seconds": captured["seconds"],
                          "fit_and_report_seconds": time.perf_counter() - started,
                          "load_average": load()}}
    finally:
        report.write_report = original
    args = captured["args"]
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        original(folder / f"report_again_{i}", *args[1:6])
        times.append(time.perf_counter() - started)
    out["again"] = {"report_seconds": times, "median_s": statistics.median(times),
                    "load_average": load()}
    print(f"  report of six models at the end of their fit: {captured['seconds']:.2f} s; "
          f"again: median {statistics.median(times):.2f} s of {[round(t, 2) for t in times]}")
    return out


FIT = "from bam_identify.cli import fit_main; raise SystemExit(fit_main())"


def run_workers(log_dir: Path, folder: Path, seeds: list[int], budget: int) -> dict:
    """MX-64 M4 to 1e-4 rad by 1, 2 and 4 ``fit`` processes sharing one study on a real
    PostgreSQL 16 (the pgserver wheel), each with cores / workers simulation threads."""
    import pgserver

    server = pgserver.get_server(folder / "pgdata", cleanup_mode="stop")
    cores = os.cpu_count() or 1
    out: dict = {"budget": budget, "target_rad": THRESHOLDS[-1], "cores": cores}
    try:
        for count in (0, *WORKER_COUNTS):  # 0: the same fit without storage, for scale
            runs = []
            for seed in seeds:
                database = f"w{count}_s{seed}"
                url = None
                if count:
                    server.psql(f"CREATE DATABASE {database};")
                    url = server.get_uri(database).replace("postgresql://",
                                                           "postgresql+psycopg://", 1)
                runs.append(_shared_fit(url, log_dir, folder / database, count, seed,
                                        budget, max(1, cores // max(count, 1))))
            out[str(count) if count else "no_storage"] = {
                "runs": runs, "median_fit_seconds": statistics.median(
                    r["fit_seconds"] for r in runs),
                "median_wall_seconds": statistics.median(r["wall_seconds"] for r in runs),
                "median_evaluations": statistics.median(r["evaluations"] for r in runs),
                "reached": f"{sum(r['train_mae'] <= THRESHOLDS[-1] for r in runs)}/{len(runs)}"}
            row = out[str(count) if count else "no_storage"]
            label = f"{count} worker(s) on PostgreSQL" if count else "1 fit, no storage"
            print(f"  {label}: {row['median_evaluations']:.0f} "
                  f"evaluations, fit {row['median_fit_seconds']:.2f} s, processes "
                  f"{row['median_wall_seconds']:.2f} s (median), reached {row['reached']}")
    finally:
        server.cleanup()
    return out


def _shared_fit(url: str | None, log_dir: Path, folder: Path, count: int, seed: int,
                budget: int, jobs: int) -> dict:
    """``count`` fit processes on one study at ``url`` (0: one without storage) until 1e-4
    rad: wall time from the first start to the last exit, what their files record."""
    sharing = ["--storage", url, "--study", "bench", "--workers", str(count)] if url else []
    count = max(count, 1)
    started = time.perf_counter()
    processes = [subprocess.Popen(
        [sys.executable, "-c", FIT, "--logs", str(log_dir), "--models", "m4",
         "--trials", str(budget), "--seed", str(seed), "--target-mae", str(THRESHOLDS[-1]),
         *sharing, "--jobs", str(jobs),
         "--quiet", "--output", str(folder / f"w{i}" / "{model}.yaml"),
         "--report", str(folder / f"w{i}" / "report")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for i in range(count)]
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"a fit worker failed: {err.strip()[-300:]}")
    wall = time.perf_counter() - started
    records = [load_parameters(folder / f"w{i}" / "m4.yaml").provenance for i in range(count)]
    return {"seed": seed, "workers": count, "jobs_per_worker": jobs, "wall_seconds": wall,
            "fit_seconds": max(r["seconds"] for r in records),
            "evaluations": records[0]["trials"], "train_mae": records[0]["train_mae"],
            "evaluated_per_worker": [r.get("evaluated_here", r["trials"]) for r in records],
            "load_average": load()}


def _fmt(reached: dict | None) -> str:
    return "never" if reached is None else f"{reached['seconds']:.2f} s ({reached['trials']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=20_000, help="our evaluations at most")
    parser.add_argument("--reference-trials", type=int, default=4000)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "identification.json")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS),
                        help="run these parts only, replacing theirs in --output")
    args = parser.parse_args()

    result = (json.loads(args.output.read_text()) if args.output.exists()
              and set(args.only) != set(PARTS) else {"cases": {}})
    result.update({"environment": environment(), "load_average_start": load(),
                   "thresholds_rad": list(THRESHOLDS)})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        mx = CASES["mx64_m4"]
        mx_logs = paper_like_set(published_named(mx["actuator"], mx["model"]), mx["logs"],
                                 arm_mass=mx["arm_mass"], seed=0)
        mx_dir = write_logs(folder / "mx64_m4_cli_logs", mx_logs, mx["actuator"])
        if "startup" in args.only:
            result["startup"] = run_startup(mx_dir, folder)
        if "report" in args.only:
            result["report"] = run_report(mx_dir, folder, trials=1500)
        if "workers" in args.only:
            print("mx64_m4 shared by fit workers:")
            result["workers_mx64_m4"] = run_workers(mx_dir, folder, args.seeds, args.budget)
        if "overhead" in args.only:
            print("mx64_m4 overhead:")
            result["overhead_mx64_m4"] = run_overhead(mx, mx_logs)
        for name in args.cases if "cases" in args.only else []:
            case = CASES[name]
            truth = published_named(case["actuator"], case["model"])
            logs = paper_like_set(truth, case["logs"], arm_mass=case["arm_mass"], seed=0)
            space = SearchSpace.from_names(case["actuator"], case["model"])
            print(f"{name}: {len(logs)} logs of {logs[0].time[-1]:.1f} s, "
                  f"{len(space.names)} parameters")
            entry = {"case": case}
            for variant, options in VARIANTS.items():
                print(f"  {variant}:")
                entry[variant] = run_ours(case, logs, args.seeds, args.budget,
                                          args.reference_trials, options)
            if not args.no_reference:
                entry["reference"] = run_reference(name, case, logs, args.reference_trials,
                                                   args.seeds, folder)
            entry["comparison"] = compare(entry)
            for key, row in entry["comparison"].items():
                print(f"  {key}: {json.dumps(row)}")
            result["cases"][name] = entry
            result["load_average_end"] = load()
            write_result(args.output, result)
        result["load_average_end"] = load()
        write_result(args.output, result)


if __name__ == "__main__":
    sys.exit(main())
