"""Throughput of the batched numba simulator, side by side with the reference.

Workload (issue 2): M1..M6, simulated-control mode, 64 logs × 1200 steps of
the MX-64 bench (paper Table I masses, lengths and gains; every trajectory of
the protocol) × a population of 16 parameter sets (the published set of each
model with seeded ±10 % noise). Measured:

* our log-steps per second on 1 core and on all cores (median of repeats);
* numba's first-call time in a fresh process, with an empty disk cache
  (compilation) and with the cache filled (loading);
* the reference implementation (``better-actuator-models``, in its own venv,
  set up by ``setup_reference.sh``) on the very same workload, batched over
  logs as its identification does, and the ratio;
* the largest position difference between our rollouts and the reference's
  for the first parameter set of every model (the same conventions, so it
  should be at rounding level).

Run: ``tools/workspace.sh exec python benchmarks/throughput.py`` (or
``make benchmark``); writes ``benchmarks/results/throughput.json``.

Log-steps are counted as sets × logs × entries for both implementations.

Neutral workload format (read by reference_runner.py)::

    {"actuator": "mx64", "dt": 0.005,
     "logs": [{"kp", "mass", "arm_mass", "length", "time", "goal_position",
               "torque_enable", "position", "velocity"}, ...],
     "models": ["m1", ...], "population": {"m1": [{name: value}, ...], ...}}
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from provenance import environment

from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae, batch_rollout, rollout
from bam_sim.bench.trajectory import PROTOCOL_TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published
from bam_sim.models.parameter_vector import INDEX
from bam_sim.models.servo.actuators import VOLTAGE, get_actuator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
SEED = 2


def make_logs(actuator: str, n_logs: int, n_steps: int, dt: float, seed: int) -> list[BenchLog]:
    """Table I configurations × protocol trajectories, 'recorded' with the published M4
    (M1 where only that one is published)."""
    rng = np.random.default_rng(seed)
    truth = published(actuator, "m4" if "m4" in published_models(actuator) else "m1")
    act = truth.actuator_def
    configs = list(itertools.product(act.masses, act.lengths, act.gains,
                                     PROTOCOL_TRAJECTORIES))
    rng.shuffle(configs)
    logs = []
    for mass, length, kp, name in configs[:n_logs]:
        cmd = command_log(name, Bench(mass, length), kp, dt, duration=(n_steps - 1) * dt)
        sim = rollout(truth, cmd)
        logs.append(BenchLog(bench=cmd.bench, kp=kp, dt=dt, goal=cmd.goal, enabled=cmd.enabled,
                             position=sim.position + rng.normal(0, 1e-3, n_steps),
                             velocity=sim.velocity, name=name))
    return logs


def published_models(actuator: str) -> list[str]:
    """The models of M1..M6 with a published set for ``actuator``."""
    out = []
    for model in MODELS:
        try:
            published(actuator, model)
        except BamError:
            continue
        out.append(model)
    return out


def make_population(actuator: str, model: str, size: int, seed: int) -> np.ndarray:
    base = published(actuator, model)
    rng = np.random.default_rng([seed, MODELS.index(model)])
    population = np.tile(base.vector(), (size, 1))
    for name in base.values:
        population[:, INDEX[name]] *= rng.uniform(0.9, 1.1, size)
    return population


def workload_json(actuator: str, logs: list[BenchLog], populations: dict) -> dict:
    act = get_actuator(actuator)

    def entry(log: BenchLog) -> dict:
        # The supply of a voltage-law servo (the reference reads "vin" from a log).
        vin = {"vin": act.supply_voltage} if act.family == VOLTAGE else {}
        return {**vin, "kp": log.kp, "mass": log.bench.mass, "arm_mass": log.bench.arm_mass,
                "length": log.bench.length, "time": log.time.tolist(),
                "goal_position": log.goal.tolist(), "torque_enable": log.enabled.tolist(),
                "position": log.position.tolist(), "velocity": log.velocity.tolist()}

    names = {m: list(published(actuator, m).values) for m in populations}
    return {
        "actuator": actuator, "dt": logs[0].dt, "logs": [entry(log) for log in logs],
        "models": list(populations),
        "population": {m: [{n: float(row[INDEX[n]]) for n in names[m] if n != "current_limit"}
                           for row in pop] for m, pop in populations.items()},
    }


def measure(model: str, population: np.ndarray, batch: LogBatch, threads: int,
            repeats: int) -> float:
    """Median seconds of one batched evaluation of the population."""
    numba.set_num_threads(threads)
    batch_mae(model, population, batch)  # warm-up (compiled already; touches memory)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        batch_mae(model, population, batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


_FIRST_CALL = """
import time, numpy as np
start = time.perf_counter()
from bam_sim.models.files.parameter_file import published
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae
imported = time.perf_counter()
p = published("mx64", "m6")
log = BenchLog(bench=Bench(1.0, 0.1), kp=8.0, dt=0.005, goal=np.zeros(50),
               enabled=np.ones(50), position=np.zeros(50))
batch_mae("m6", p.vector(), LogBatch.pack([log], p.actuator_def))
print(imported - start, time.perf_counter() - imported)
"""


def first_call_seconds() -> dict:
    """Import and first batched call in fresh processes: cold cache, then warm cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        result = {}
        for label in ("cold_cache", "warm_cache"):
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            result[label] = {"import_s": float(out[0]), "first_call_s": float(out[1])}
        return result


def run_reference(workload: Path, repeats: int, out_dir: Path) -> tuple[dict, dict] | None:
    python = ROOT / ".venv-ref" / "bin" / "python"
    setup = subprocess.run(["bash", str(HERE / "setup_reference.sh")], capture_output=True,
                           text=True)
    if setup.returncode != 0 or not python.exists():
        print(f"reference unavailable, skipped: {setup.stderr.strip()[-300:]}")
        return None
    runner = str(HERE / "reference_runner.py")
    throughput, rollouts = out_dir / "ref_throughput.json", out_dir / "ref_rollout.json"
    subprocess.run([str(python), runner, "--workload", str(workload), "--mode", "throughput",
                    "--output", str(throughput), "--repeat", str(repeats)], check=True)
    subprocess.run([str(python), runner, "--workload", str(workload), "--mode", "rollout",
                    "--output", str(rollouts), "--max-sets", "1"], check=True)
    return json.loads(throughput.read_text()), json.loads(rollouts.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actuator", default="mx64")
    parser.add_argument("--logs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "throughput.json")
    args = parser.parse_args()

    logs = make_logs(args.actuator, args.logs, args.steps, 0.005, SEED)
    batch = LogBatch.pack(logs, published(args.actuator, "m1").actuator_def)
    populations = {m: make_population(args.actuator, m, args.population, SEED) for m in MODELS}
    steps = args.population * args.logs * args.steps
    cores = numba.config.NUMBA_NUM_THREADS
    print(f"workload: {args.actuator}, {args.logs} logs x {args.steps} steps x "
          f"{args.population} sets = {steps:,} log-steps per model; {cores} cores")

    ours = {}
    for model in MODELS:
        one = measure(model, populations[model], batch, 1, args.repeats)
        full = measure(model, populations[model], batch, cores, args.repeats)
        ours[model] = {"seconds_1_core": one, "seconds_all_cores": full,
                       "log_steps_per_s_1_core": steps / one,
                       "log_steps_per_s_all_cores": steps / full}
        print(f"  ours {model}: {steps / one / 1e6:6.1f} M/s on 1 core, "
              f"{steps / full / 1e6:6.1f} M/s on {cores} cores")
    compile_times = first_call_seconds()
    print(f"  first call: {compile_times['cold_cache']['first_call_s']:.1f} s compiling, "
          f"{compile_times['warm_cache']['first_call_s']:.2f} s from the disk cache")

    result = {
        "workload": {"actuator": args.actuator, "logs": args.logs, "steps": args.steps,
                     "population": args.population, "log_steps_per_model": steps,
                     "mode": "simulated control", "seed": SEED},
        "ours": ours, "first_call": compile_times,
        "environment": environment(),
    }
    if not args.no_reference:
        with tempfile.TemporaryDirectory() as tmp:
            workload = Path(tmp) / "workload.json"
            workload.write_text(json.dumps(workload_json(args.actuator, logs, populations)))
            reference = run_reference(workload, args.repeats, Path(tmp))
        if reference is not None:
            result["reference"] = _compare(reference, ours, populations, batch)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


def _compare(reference: tuple[dict, dict], ours: dict, populations: dict,
             batch: LogBatch) -> dict:
    throughput, rollouts = reference
    summary = {"environment": {k: v for k, v in throughput.items()
                               if k not in ("models", "total", "workload")},
               "method": throughput.get("method"), "models": {}}
    for model in MODELS:
        ref_rate = throughput["models"][model]["log_steps_per_s"]
        ours_q = batch_rollout(model, populations[model][:1], batch)[0]
        ref_q = np.array(rollouts["models"][model]["sets"][0]["positions"])
        gap = float(np.max(np.abs(ours_q - ref_q)))
        ratio = ours[model]["log_steps_per_s_all_cores"] / ref_rate
        summary["models"][model] = {"log_steps_per_s": ref_rate, "speedup_all_cores": ratio,
                                    "max_position_difference_rad": gap}
        print(f"  reference {model}: {ref_rate / 1e6:5.2f} M/s -> ours x{ratio:5.1f}; "
              f"max |q_ours - q_ref| = {gap:.1e} rad")
    return summary



if __name__ == "__main__":
    main()
