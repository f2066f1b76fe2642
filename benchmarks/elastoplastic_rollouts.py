"""Step cost of each friction model in the batched rollout kernel: M1, M4, M6 and ep_*.

Workload: the MX-64 bench, simulated-control mode, 32 logs × 1200 steps
(Table I masses, lengths and gains × the protocol trajectories, as
``throughput.py`` builds them) × a population of 16 parameter sets per model:
the published set of M1, M4, M6, and for ``ep_*`` the synthetic example set
(``bam_identify.data.synthetic.elastoplastic_example``), each entry scattered
by seeded ±10 % (every ep set valid on every log: condition (14) and the
coupling limit hold). One ``batch_mae`` call evaluates the whole population.

Reported per model: log-steps per second and ns per log-step, on 1 thread and
on all cores (the fastest of interleaved repeats, and the median), plus the
ratio to M1 on 1 thread. All models are measured in the same process, in turns,
so they see the same machine state.

Run: ``tools/workspace.sh exec python benchmarks/elastoplastic_rollouts.py``;
writes ``benchmarks/results/elastoplastic_rollouts.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numba
import numpy as np
from provenance import environment, write_result
from workload import make_logs

from bam_identify.data.synthetic import elastoplastic_example
from bam_sim.bench.bench_log import LogBatch
from bam_sim.bench.rollouts import batch_mae, batch_violation
from bam_sim.models.files.parameter_file import published, published_named
from bam_sim.models.model_registry import EP_MODELS, get_model
from bam_sim.models.parameter_vector import INDEX
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
SEED = 5
ACTUATOR = "mx64"
MODELS = ("m1", "m4", "m6", *EP_MODELS)


def population(model: str, size: int, seed: int) -> np.ndarray:
    actuator, friction = get_actuator(ACTUATOR), get_model(model)
    base = (elastoplastic_example(actuator, friction) if friction.elastoplastic
            else published(actuator, friction))
    rng = np.random.default_rng([seed, MODELS.index(model)])
    pop = np.tile(base.vector(), (size, 1))
    for name in base.values:
        pop[:, INDEX[name]] *= rng.uniform(0.9, 1.1, size)
    return pop


def measure(populations: dict[str, np.ndarray], batch: LogBatch, threads: int,
            repeats: int) -> dict[str, list[float]]:
    """Seconds of one batched evaluation per model, ``repeats`` times, models in turns."""
    numba.set_num_threads(threads)
    for model, pop in populations.items():
        batch_mae(get_model(model), pop, batch)  # compiled already; touches the memory
    times: dict[str, list[float]] = {model: [] for model in populations}
    for _ in range(repeats):
        for model, pop in populations.items():
            start = time.perf_counter()
            batch_mae(get_model(model), pop, batch)
            times[model].append(time.perf_counter() - start)
    return times


def summarize(times: dict[str, list[float]], steps: int) -> dict[str, dict]:
    out = {}
    for model, seconds in times.items():
        best, median = min(seconds), statistics.median(seconds)
        out[model] = {"log_steps_per_s": steps / best, "log_steps_per_s_median": steps / median,
                      "ns_per_log_step": best / steps * 1e9}
    m1 = out["m1"]["ns_per_log_step"]
    for model in out:
        out[model]["cost_vs_m1"] = out[model]["ns_per_log_step"] / m1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=32)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--output", type=Path,
                        default=HERE / "results" / "elastoplastic_rollouts.json")
    args = parser.parse_args()

    logs = make_logs(ACTUATOR, args.logs, args.steps, 0.005, SEED)
    batch = LogBatch.pack(logs, published_named(ACTUATOR, "m1").actuator)
    populations = {m: population(m, args.population, SEED) for m in MODELS}
    for model in EP_MODELS:
        violation = batch_violation(get_model(model), populations[model], batch)
        assert np.all(violation == 0.0), model
    steps = args.population * args.logs * args.steps
    cores = numba.config.NUMBA_NUM_THREADS
    print(f"workload: {ACTUATOR}, {args.logs} logs x {args.steps} steps x {args.population} "
          f"sets = {steps:,} log-steps per model; 1 and {cores} threads")
    results = {}
    for threads in sorted({1, cores}):
        results[f"{threads}_threads"] = summarize(
            measure(populations, batch, threads, args.repeats), steps)
    print(f"{'model':12s} " + " ".join(f"{k:>22s}" for k in results))
    for model in MODELS:
        cells = [f"{r[model]['log_steps_per_s'] / 1e6:7.2f} M/s "
                 f"{r[model]['ns_per_log_step']:6.1f} ns" for r in results.values()]
        print(f"{model:12s} " + " ".join(f"{c:>22s}" for c in cells))
    write_result(args.output, {
        "benchmark": "elastoplastic_rollouts",
        "description": __doc__.splitlines()[0],
        "workload": {"actuator": ACTUATOR, "logs": args.logs, "steps": args.steps,
                     "population": args.population, "log_steps_per_model": steps,
                     "repeats": args.repeats, "mode": "simulated control", "seed": SEED,
                     "dt": 0.005},
        "models": list(MODELS),
        "results": results,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
