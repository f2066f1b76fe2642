#!/usr/bin/env python3
"""Run the published reference implementation on one of our neutral workloads.

Executed with the reference venv (see benchmarks/setup_reference.sh)::

    .venv-ref/bin/python benchmarks/reference_runner.py \
        --workload W.json --mode throughput|rollout --output OUT.json [--repeat N]

The workload format is documented in benchmarks/throughput.py, which writes it.
It is converted to the reference's own processed-log dicts (top level: mass,
arm_mass, length, kp, dt; entries: timestamp, position, speed, goal_position,
torque_enable) and parameter dicts (parameter names plus "model" and
"actuator"), then loaded through the reference's API (bam.logs.Logs batching,
bam.model.load_model_from_dict, bam.simulate.Simulator).

mode throughput
    For each model and each of its P parameter sets, one batched rollout over
    all logs, exactly as the reference's identification objective evaluates a
    candidate: logs vectorized into one batch log (Logs.make_batch), then
    Simulator.rollout_log(batch, simulate_control=True) -- the control law is
    recomputed from the simulated state -- followed by the mean absolute
    position error.  One warm-up rollout per model is excluded from timing.
    Reports log-steps simulated, seconds and log-steps/s per model.

mode rollout
    For each model and parameter set, the simulated positions of every log
    (list of lists, one list per log in workload order) plus per-log MAE
    against the recorded positions, for numerical cross-checks.

Logs of unequal length are batched per length group (the reference's
make_batch would otherwise truncate every log to the shortest one); with
equal lengths there is one batch, identical to the reference's path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

ACTUATORS = ("mx64", "mx106", "erob80_50", "erob80_100")
REF_DIST = "better-actuator-models"


def fail(msg: str, code: int = 2) -> "NoReturn":  # noqa: F821
    print(f"reference_runner: error: {msg}", file=sys.stderr)
    sys.exit(code)


def import_reference():
    """Import the reference modules, or exit with a one-line hint."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        import bam.simulate as simulate
        import numpy as np  # noqa: F401
        from bam.logs import Logs
        from bam.model import load_model_from_dict, models

        try:
            ref_version = version(REF_DIST)
        except PackageNotFoundError:
            ref_version = "unknown"
    except ImportError as e:
        fail(
            f"reference package '{REF_DIST}' (module bam) not importable by "
            f"{sys.executable} ({e}); run `bash benchmarks/setup_reference.sh` and "
            f"use .venv-ref/bin/python"
        )
    return simulate, Logs, load_model_from_dict, models, ref_version


# --------------------------------------------------------------------------
# Workload -> reference formats
# --------------------------------------------------------------------------


def load_workload(path: str, ref_models: dict) -> dict:
    try:
        with open(path) as f:
            w = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read workload {path}: {e}")

    for key in ("actuator", "dt", "logs", "models", "population"):
        if key not in w:
            fail(f"workload {path} lacks key '{key}'")
    if w["actuator"] not in ACTUATORS:
        fail(f"unknown actuator {w['actuator']!r}; expected one of {ACTUATORS}")
    if not w["logs"]:
        fail("workload has no logs")
    for m in w["models"]:
        if m not in ref_models:
            fail(f"unknown model {m!r}; the reference has {sorted(ref_models)}")
        if not w["population"].get(m):
            fail(f"population has no parameter sets for model {m!r}")

    fields = ("time", "goal_position", "torque_enable", "position", "velocity")
    for i, log in enumerate(w["logs"]):
        for key in ("kp", "mass", "length") + fields:
            if key not in log:
                fail(f"log {i} lacks key '{key}'")
        n = len(log["time"])
        if n == 0 or any(len(log[k]) != n for k in fields):
            fail(f"log {i}: time/goal_position/torque_enable/position/velocity "
                 f"lengths differ or are empty")
    return w


def to_reference_log(log: dict, dt: float) -> dict:
    """One workload log as a reference processed log dict."""
    entries = [
        {
            "timestamp": float(t),
            "position": float(q),
            "speed": float(dq),
            "goal_position": float(qd),
            "torque_enable": bool(en),
        }
        for t, q, dq, qd, en in zip(
            log["time"],
            log["position"],
            log["velocity"],
            log["goal_position"],
            log["torque_enable"],
        )
    ]
    supply = {"vin": float(log["vin"])} if "vin" in log else {}
    return {
        **supply,
        "mass": float(log["mass"]),
        "arm_mass": float(log.get("arm_mass", 0.0)),
        "length": float(log["length"]),
        "kp": float(log["kp"]),
        "dt": float(dt),
        "entries": entries,
    }


def make_batches(Logs, ref_logs: list[dict]) -> list[tuple[list[int], dict]]:
    """Vectorize logs with the reference's Logs.make_batch, one batch per length."""
    groups: dict[int, list[int]] = {}
    for i, log in enumerate(ref_logs):
        groups.setdefault(len(log["entries"]), []).append(i)
    batches = []
    for n in sorted(groups):
        idx = groups[n]
        logs = Logs.__new__(Logs)  # a Logs without reading a directory
        logs.directory = None
        logs.json_files = [f"workload_log_{i}" for i in idx]
        logs.logs = [ref_logs[i] for i in idx]
        batches.append((idx, logs.make_batch()))
    return batches


def build_model(load_model_from_dict, model_name: str, actuator: str,
                params: dict, strict: bool):
    """A reference Model from one workload parameter set (reference params format)."""
    data = {k: float(v) for k, v in params.items()}
    data["model"] = model_name
    data["actuator"] = actuator
    model = load_model_from_dict(data)
    known = model.get_parameters()
    unknown = sorted(set(params) - set(known))
    if unknown and strict:
        fail(
            f"{model_name}: parameters {unknown} do not exist in the reference's "
            f"{model_name} on {actuator} (it has {sorted(known)}); "
            f"pass --ignore-unknown-params to drop them"
        )
    return model


def defaults_used(load_model_from_dict, model_name, actuator, params) -> dict:
    model = load_model_from_dict({"model": model_name, "actuator": actuator})
    return {
        k: p.value for k, p in model.get_parameters().items() if k not in params
    }


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------


def rollout_batched(simulate, np, model, batches, n_logs):
    """Positions (per log) and per-log MAE from one batched rollout per batch."""
    positions = [None] * n_logs
    maes = [None] * n_logs
    for idx, batch in batches:
        sim = simulate.Simulator(model)
        pos, _, _ = sim.rollout_log(batch, simulate_control=True)
        pos = np.array(pos)  # (steps, logs in batch)
        rec = np.array([e["position"] for e in batch["entries"]])
        mae = np.mean(np.abs(pos - rec), axis=0)
        for j, i in enumerate(idx):
            positions[i] = pos[:, j].tolist()
            maes[i] = float(mae[j])
    return positions, maes


def rollout_per_log(simulate, np, model, ref_logs):
    """Same, one scalar rollout per log (the path of the reference's bam.mae)."""
    positions, maes = [], []
    for log in ref_logs:
        sim = simulate.Simulator(model)
        pos, _, _ = sim.rollout_log(log, simulate_control=True)
        pos = np.array(pos, dtype=float)
        rec = np.array([e["position"] for e in log["entries"]])
        positions.append(pos.tolist())
        maes.append(float(np.mean(np.abs(pos - rec))))
    return positions, maes


def score_batched(simulate, np, model, batches):
    """The identification objective: batched rollout + MAE (mean over batch)."""
    total, count = 0.0, 0
    for _, batch in batches:
        sim = simulate.Simulator(model)
        pos, _, _ = sim.rollout_log(batch, simulate_control=True)
        rec = np.array([e["position"] for e in batch["entries"]])
        err = np.abs(np.array(pos) - rec)
        total += float(err.sum())
        count += err.size
    return total / count


def environment(np, ref_version) -> dict:
    import bam

    return {
        "reference_package": REF_DIST,
        "reference_version": ref_version,
        # Relative to the repository (.venv-ref), so the results name no machine's folders.
        "reference_path": os.path.relpath(os.path.dirname(bam.__file__),
                                          os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Run the reference (better-actuator-models) on a neutral workload."
    )
    p.add_argument("--workload", required=True)
    p.add_argument("--mode", required=True, choices=("throughput", "rollout"))
    p.add_argument("--output", required=True)
    p.add_argument("--repeat", type=int, default=1,
                   help="timed repetitions per model (throughput); median reported")
    p.add_argument("--models", default=None,
                   help="comma list restricting the workload's models")
    p.add_argument("--max-sets", type=int, default=None,
                   help="use only the first K parameter sets of each model")
    p.add_argument("--per-log", action="store_true",
                   help="rollout mode: one scalar rollout per log instead of the "
                        "batched one (cross-checks batched vs unbatched)")
    p.add_argument("--ignore-unknown-params", action="store_true",
                   help="drop parameter names the reference model does not have")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")

    simulate, Logs, load_model_from_dict, ref_models, ref_version = import_reference()
    import numpy as np

    w = load_workload(args.workload, ref_models)
    actuator = w["actuator"]
    dt = float(w["dt"])
    models = w["models"]
    if args.models:
        wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        missing = [m for m in wanted if m not in models]
        if missing:
            fail(f"models {missing} are not in the workload ({models})")
        models = wanted

    ref_logs = [to_reference_log(log, dt) for log in w["logs"]]
    n_logs = len(ref_logs)
    lengths = [len(log["entries"]) for log in ref_logs]
    for i, log in enumerate(w["logs"]):
        t = np.asarray(log["time"], dtype=float)
        if len(t) > 1 and np.max(np.abs(np.diff(t) - dt)) > 0.01 * dt:
            print(f"reference_runner: warning: log {i} time steps differ from dt="
                  f"{dt}; the reference only uses dt", file=sys.stderr)
    batches = make_batches(Logs, ref_logs)

    population = {}
    for m in models:
        sets = w["population"][m]
        if args.max_sets is not None:
            sets = sets[: args.max_sets]
        population[m] = sets

    env = environment(np, ref_version)
    out: dict = {
        "mode": args.mode,
        **env,
        "workload": {
            "path": os.path.abspath(args.workload),
            "actuator": actuator,
            "dt": dt,
            "n_logs": n_logs,
            "steps_per_log_min": min(lengths),
            "steps_per_log_max": max(lengths),
            "log_steps_per_set": int(sum(lengths)),
            "batches": [len(idx) for idx, _ in batches],
        },
        "method": (
            "bam.simulate.Simulator.rollout_log(batch, simulate_control=True) on "
            "bam.logs.Logs.make_batch() of all logs, per parameter set, + MAE"
            if args.mode == "throughput" or not args.per_log
            else "bam.simulate.Simulator.rollout_log(log, simulate_control=True) "
                 "per log"
        ),
        "models": {},
    }

    strict = not args.ignore_unknown_params

    def make(m, params):
        return build_model(load_model_from_dict, m, actuator, params, strict)

    for m in models:
        sets = population[m]
        used = defaults_used(load_model_from_dict, m, actuator, sets[0])
        model_out: dict = {"param_sets": len(sets), "reference_defaults_used": used}

        if args.mode == "throughput":
            # warm-up, not timed
            t0 = time.perf_counter()
            score_batched(simulate, np, make(m, sets[0]), batches)
            warmup = time.perf_counter() - t0

            per_repeat, scores = [], []
            for _ in range(args.repeat):
                scores = []
                t0 = time.perf_counter()
                for params in sets:
                    scores.append(score_batched(simulate, np, make(m, params), batches))
                per_repeat.append(time.perf_counter() - t0)
            seconds = statistics.median(per_repeat)
            log_steps = len(sets) * int(sum(lengths))
            model_out.update(
                {
                    "log_steps": log_steps,
                    "seconds": seconds,
                    "log_steps_per_s": log_steps / seconds,
                    "seconds_per_repeat": per_repeat,
                    "warmup_seconds": warmup,
                    "mae_per_set": scores,
                }
            )
            print(
                f"{m}: {len(sets)} sets x {n_logs} logs x "
                f"{int(sum(lengths)) // n_logs} steps = {log_steps} log-steps in "
                f"{seconds:.3f} s -> {log_steps / seconds:,.0f} log-steps/s"
            )
        else:
            sets_out = []
            for params in sets:
                model = make(m, params)
                applied = {n: p.value for n, p in model.get_parameters().items()}
                if args.per_log:
                    pos, maes = rollout_per_log(simulate, np, model, ref_logs)
                else:
                    pos, maes = rollout_batched(simulate, np, model, batches, n_logs)
                sets_out.append({"params": applied, "mae": maes, "positions": pos})
            model_out["sets"] = sets_out
            mean_mae = [float(np.mean(s["mae"])) for s in sets_out]
            print(f"{m}: {len(sets)} sets rolled out, mean MAE per set "
                  f"{min(mean_mae):.4g}..{max(mean_mae):.4g} rad")
        out["models"][m] = model_out

    if args.mode == "throughput":
        tot_steps = sum(v["log_steps"] for v in out["models"].values())
        tot_s = sum(v["seconds"] for v in out["models"].values())
        out["total"] = {
            "log_steps": tot_steps,
            "seconds": tot_s,
            "log_steps_per_s": tot_steps / tot_s,
        }
        print(f"total: {tot_steps} log-steps in {tot_s:.3f} s -> "
              f"{tot_steps / tot_s:,.0f} log-steps/s "
              f"(bam {ref_version}, python {env['python']}, numpy {env['numpy']})")

    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(out, f)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
