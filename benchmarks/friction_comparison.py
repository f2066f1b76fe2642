"""BAM budgets against elasto-plastic friction: train/validation MAE per data set, step cost.

Data sets (MX-64, 24 logs of 6 s at 5 ms each, the session's four trajectories):

* ``bench``: the main job's data. ``bench session`` (``make run``) is run with
  its default configuration (bam_bringup/config/session.yaml: the published
  MX-64 M4 set simulated by the pendulum node at 200 Hz, three Table I setups,
  gains 8 and 32), recorded by the recorder node into a rosbag2 bag exactly as
  the main job records it; only the session's own fit is cut to one M1 trial,
  since the fits below replace it;
* ``m6_truth``: logs simulated from the published MX-64 M6 set
  (:func:`bam_identify.data.synthetic.paper_like_set`: Table I setups, arm
  mass 0.1 kg), 1 mrad Gaussian position noise, seeded;
* ``ep_stribeck_truth``: the same from the synthetic ``ep_stribeck`` set of
  :func:`bam_identify.data.synthetic.elastoplastic_example` (F_S = 2.3·F_C,
  valid at the 5 ms step), 1 mrad noise, seeded.

The synthetic logs are written as bags (:func:`bam_identify.data.bag_writer.write_bag`),
so every data set goes through the same path as ``fit``:
:func:`bam_identify.fitting.run.fit` with M1, M4, M6 and the four ``ep_*`` models, a seeded
25 % validation split stratified by trajectory, nested warm starts
(M1 → M4 → M6, ep_stribeck → ep_load) and the same trial budget for every model.
Reported: training and validation MAE of each fitted model, those of the truth
where there is one, and the cost of one log-step of each model in the batched
rollout kernel (``batch_mae``, one thread) with its fitted set on the bench
logs. Writes benchmarks/results/friction_comparison.json and .png (Fig. 5 of
the BAM paper: MAE per model, here per data set).

Run: ``tools/workspace.sh exec python benchmarks/friction_comparison.py``
(about 3 minutes on 2 cores with the default budget).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from elastoplastic_rollouts import measure, summarize
from provenance import environment, write_result

from bam_bringup.session import load_session, run_session, session_config
from bam_identify.data.bag_writer import BagSession, BagTrial, write_bag
from bam_identify.data.dataset import load_dataset, split
from bam_identify.data.synthetic import elastoplastic_example, paper_like_set
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.run import fit
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.rollouts import batch_mae
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
ACTUATOR = "mx64"
MODELS = ("m1", "m4", "m6", "ep_cv", "ep_stribeck", "ep_rational", "ep_load")
SEED = 0
NOISE = 1.0e-3  # rad
LOGS = 24
ARM_MASS = 0.1  # kg, as the session's
VALIDATION_FRACTION = 0.25
COST_POPULATION, COST_REPEATS = 8, 7


def record_bench(folder: Path) -> tuple[Path, ParameterSet]:
    """The main job's recording: ``bench session`` with its default session, fit cut short."""
    config = load_session(session_config())
    truth = published_named(config["actuator"], config["truth_model"])
    config = {**config, "fit": {**config.get("fit", {}), "models": ["m1"], "trials": 1}}
    print("recording the main job's bench session (ROS nodes, rosbag2) ...", flush=True)
    run_session(config, folder, quiet=True, bench_namespace="friction_comparison")
    return next(folder.glob("*/bag")), truth


def simulated_bag(truth: ParameterSet, path: Path) -> Path:
    """``LOGS`` paper-like logs of ``truth`` with 1 mrad noise, written as the bench records."""
    logs = paper_like_set(truth, LOGS, arm_mass=ARM_MASS, noise=NOISE, seed=SEED)
    by_bench: dict[tuple[float, float], list[BenchLog]] = {}
    for log in logs:
        by_bench.setdefault((log.bench.mass, log.bench.length), []).append(log)
    sessions, trial_id = [], 0
    for bench_logs in by_bench.values():
        trials = []
        for log in bench_logs:
            trial_id += 1
            trials.append(BagTrial(log, log.meta["trajectory"], log.kp, trial_id))
        sessions.append(BagSession(truth.actuator, trials, model=truth.model.name))
    return write_bag(path, sessions)


def truth_mae(truth: ParameterSet | None, bag: Path) -> dict | None:
    """The truth's own MAE on the training and validation logs of the fit's split."""
    if truth is None:
        return None
    train, validation = split(load_dataset(bags=(bag,)), VALIDATION_FRACTION, SEED)
    out = {}
    for name, logs in (("train_mae", train.logs), ("validation_mae", validation.logs)):
        batch = LogBatch.pack(logs, truth.actuator)
        errors = batch_mae(truth.model, truth.vector()[None, :], batch)[0]
        out[name] = float(np.average(errors, weights=[len(log) for log in logs]))
    return out


def fit_all(bag: Path, folder: Path, trials: int) -> dict[str, dict]:
    """The fit of every model on ``bag``; train/validation MAE read back from the files."""
    template = str(folder / "params" / "{actuator}_{model}.yaml")
    job = FitJob(bags=(bag,), models=MODELS, trials=trials, seed=SEED,
                 validation_fraction=VALIDATION_FRACTION, output=template,
                 report=folder / "report")
    print(fit(job).summary, flush=True)
    results = {}
    for model in MODELS:
        record = load(Path(template.format(actuator=ACTUATOR, model=model))).provenance
        results[model] = {key: record.get(key) for key in
                          ("train_mae", "validation_mae", "trials", "seconds", "warm_start")}
    return results


def step_costs(bag: Path, fitted: Path) -> dict[str, float]:
    """ns per log-step of each model, its fitted set on the bench's training logs, 1 thread."""
    train, _ = split(load_dataset(bags=(bag,)), VALIDATION_FRACTION, SEED)
    sets = {model: load(fitted / f"{ACTUATOR}_{model}.yaml") for model in MODELS}
    batch = LogBatch.pack(train.logs, sets["m1"].actuator)
    populations = {model: np.tile(s.vector(), (COST_POPULATION, 1)) for model, s in sets.items()}
    steps = COST_POPULATION * int(sum(len(log) for log in train.logs))
    threads = numba.get_num_threads()
    try:
        summary = summarize(measure(populations, batch, 1, COST_REPEATS), steps)
    finally:
        numba.set_num_threads(threads)
    return {model: summary[model]["ns_per_log_step"] for model in MODELS}


# MAEs below this are drawn down to it and labelled (a log axis down to 1e-17
# would flatten everything else); the synthetic sets' noise floor is 8e-4 rad.
PLOT_FLOOR = 1.0e-4


def plot(datasets: dict, path: Path) -> None:
    """Fig. 5 style: MAE per model, grouped by data set; training and validation panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(datasets)
    width = 0.8 / len(MODELS)
    fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for ax, key, title in zip(axes, ("train_mae", "validation_mae"),
                              ("training logs", "validation logs"), strict=True):
        for k, model in enumerate(MODELS):
            x = np.arange(len(names)) + (k - (len(MODELS) - 1) / 2) * width
            values = np.array([datasets[d]["models"][model][key] for d in names])
            ax.bar(x, np.maximum(values, PLOT_FLOOR), width, label=model, color=plt.cm.tab10(k))
            for xi, v in zip(x, values, strict=True):
                if v < PLOT_FLOOR:
                    ax.text(xi, PLOT_FLOOR * 1.3, f"{v:.0e}", rotation=90, ha="center",
                            va="bottom", fontsize=7)
        for i, d in enumerate(names):
            truth = datasets[d]["truth_mae"]
            if truth is not None and truth[key] >= PLOT_FLOOR:
                ax.hlines(truth[key], i - 0.42, i + 0.42, colors="k", linestyles="--",
                          label="truth")
        ax.set_yscale("log")
        ax.set_ylim(bottom=PLOT_FLOOR)
        ax.set_ylabel("position MAE [rad]")
        ax.set_title(f"MAE on the {title}")
        ax.grid(axis="y", which="both", alpha=0.3)
    labels = []
    for d in names:
        truth = datasets[d]["truth_mae"]
        exact = truth is not None and truth["train_mae"] == truth["validation_mae"] == 0.0
        labels.append(f"{d}\n(truth {datasets[d]['truth']}" + (": 0 rad, exact)" if exact
                                                                 else ")"))
    axes[1].set_xticks(np.arange(len(names)), labels)
    handles, legend = axes[0].get_legend_handles_labels()
    unique = dict(zip(legend, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), loc="upper center", ncol=len(unique), fontsize=8)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.95))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000, help="CMA-ES trials per model")
    parser.add_argument("--output", type=Path,
                        default=HERE / "results" / "friction_comparison.json")
    args = parser.parse_args()
    start = time.perf_counter()
    datasets: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench_bag, bench_truth = record_bench(root / "session")
        example = elastoplastic_example(get_actuator(ACTUATOR), get_model("ep_stribeck"))
        sources = {
            "bench": (bench_bag, bench_truth, "the main job's recorded bag (bench session, "
                      "default config/session.yaml, ROS nodes and recorder)"),
            "m6_truth": (simulated_bag(published_named(ACTUATOR, "m6"), root / "m6.bag"),
                         published_named(ACTUATOR, "m6"), "paper_like_set of the published M6 set, "
                         f"{NOISE * 1e3:g} mrad noise, written with write_bag"),
            "ep_stribeck_truth": (simulated_bag(example, root / "ep.bag"), example,
                                  "paper_like_set of elastoplastic_example(mx64, ep_stribeck), "
                                  f"{NOISE * 1e3:g} mrad noise, written with write_bag"),
        }
        for name, (bag, truth, source) in sources.items():
            print(f"== {name}: fitting {', '.join(MODELS)} ({args.trials} trials each)",
                  flush=True)
            datasets[name] = {"source": source,
                              "truth": f"{truth.actuator.name} {truth.model.name}",
                              "truth_values": truth.values,
                              "truth_mae": truth_mae(truth, bag),
                              "models": fit_all(bag, root / name, args.trials)}
        print("== step cost in the batched kernel (fitted sets, bench logs, 1 thread)",
              flush=True)
        costs = step_costs(bench_bag, root / "bench" / "params")
    print(f"{'data set':18s} {'model':12s} {'train MAE':>10s} {'valid. MAE':>10s}")
    for name, d in datasets.items():
        for model, r in d["models"].items():
            print(f"{name:18s} {model:12s} {r['train_mae']:10.3e} {r['validation_mae']:10.3e}")
    for model, ns in costs.items():
        print(f"{model:12s} {ns:7.1f} ns per log-step")
    plot(datasets, args.output.with_suffix(".png"))
    write_result(args.output, {
        "benchmark": "friction_comparison",
        "description": __doc__.splitlines()[0],
        "budget": {"trials_per_model": args.trials, "seed": SEED,
                   "validation_fraction": VALIDATION_FRACTION, "noise_rad": NOISE,
                   "logs_per_synthetic_set": LOGS, "warm_starts": "as fit: nested models",
                   "seconds": round(time.perf_counter() - start, 1)},
        "models": list(MODELS),
        "datasets": datasets,
        "step_cost": {"ns_per_log_step": costs, "threads": 1,
                      "population": COST_POPULATION, "repeats": COST_REPEATS,
                      "workload": "each model's fitted set on the bench training logs"},
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
