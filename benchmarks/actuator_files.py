"""A servo declared only in an actuator file is simulated and identified as a shipped one.

For each servo family (the MX voltage law, the STS law with its target slew, the eRob
current law), the shipped actuator's document is written to a file under another name and
declared from it, as a user declares a servo the project does not ship. The simulated
bench records the same protocol with both (the published set's values as the truth) and
``fit`` identifies both from their logs with the same seed. Measured: the largest
difference between the two servos' recorded positions and between their fitted values
(both expected 0: the declared servo is the same data, so the same numbers), and each
fit's training error and time.

The bench here is the simulated one (``bam_identify.data.synthetic``: bam_sim's rollout,
which the drivers' emulators also run), not the emulated bus.

Run: ``tools/workspace.sh exec python benchmarks/actuator_files.py``; writes
``benchmarks/results/actuator_files.json``. Seconds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from provenance import environment, write_result

from bam_identify.cli import fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator_file import actuator_document
from bam_sim.models.servo.actuators import declare_file, get_actuator

HERE = Path(__file__).resolve().parent
SERVOS = {"mx64": "m4", "sts3215": "m1", "erob80_50": "m1"}


def declared_copy(name: str, folder: Path) -> Path:
    """The shipped ``name`` written as a user's actuator file, under another name."""
    doc = actuator_document(get_actuator(name))
    doc.update(name=f"{name}_declared", title=f"{doc['title']} (declared in a file)")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_declared.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def record(truth: ParameterSet, folder: Path, logs: int, seed: int) -> list[np.ndarray]:
    folder.mkdir(parents=True)
    out = []
    for i, log in enumerate(paper_like_set(truth, logs, duration=3.0, seed=seed)):
        write_legacy_log(folder / f"{i}.json", log, truth.actuator, log.meta["trajectory"])
        out.append(log.position)
    return out


def fit(logs: Path, files: list[Path], model: str, trials: int, seed: int,
        out: Path) -> tuple[ParameterSet, float]:
    start = time.perf_counter()
    args = ["--logs", logs, "--models", model, "--trials", trials, "--seed", seed,
            "--output", out, "--report", out.with_name(f"{out.stem}_report"), "--quiet"]
    if files:
        args += ["--actuator-file", *files]
    if fit_main([str(a) for a in args]) != 0:
        raise SystemExit(f"the fit of {logs} failed")
    return load(out), time.perf_counter() - start


def compare(name: str, model: str, folder: Path, logs: int, trials: int, seed: int) -> dict:
    path = declared_copy(name, folder)
    declared = declare_file(path)
    shipped_truth = published_named(name, model)
    declared_truth = ParameterSet.build(declared, shipped_truth.model, shipped_truth.values)
    q_shipped = record(shipped_truth, folder / "shipped", logs, seed)
    q_declared = record(declared_truth, folder / "declared", logs, seed)
    shipped, t_shipped = fit(folder / "shipped", [], model, trials, seed,
                             folder / "shipped.yaml")
    found, t_declared = fit(folder / "declared", [path], model, trials, seed,
                            folder / "declared.yaml")
    values = max(abs(found.values[k] - v) / max(abs(v), 1e-12)
                 for k, v in shipped.values.items())
    return {"model": model, "declared_as": declared.name,
            "logs_max_difference_rad": float(max(np.abs(a - b).max()
                                                 for a, b in zip(q_shipped, q_declared))),
            "fitted_max_relative_difference": float(values),
            "train_mae_rad": {"shipped": shipped.provenance["train_mae"],
                              "declared": found.provenance["train_mae"]},
            "seconds": {"shipped": t_shipped, "declared": t_declared}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=8)
    parser.add_argument("--trials", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "actuator_files.json")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in SERVOS.items():
            results[name] = compare(name, model, Path(tmp) / name, args.logs, args.trials,
                                    args.seed)
            r = results[name]
            print(f"{name} ({model}): logs differ by {r['logs_max_difference_rad']:.3g} rad, "
                  f"fitted values by {r['fitted_max_relative_difference']:.3g} (relative); "
                  f"train MAE {r['train_mae_rad']['shipped']:.4g} / "
                  f"{r['train_mae_rad']['declared']:.4g} rad")
    write_result(args.output, {
        "benchmark": "actuator_files", "settings": {"logs": args.logs, "trials": args.trials,
                                                    "seed": args.seed},
        "servos": results, "environment": environment()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
