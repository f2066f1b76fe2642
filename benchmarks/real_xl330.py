"""Real XL330: identification on recorded logs, validated at a gain never seen in training.

Data: the BAM authors' eight XL330 logs (``../shared/data/real/xl330/``, one 0.49 kg,
0.1 m pendulum, four trajectories at kp 100 and four at kp 200, 6 s at 200 Hz; see
the README there).

* **Recipes.** ``bam_identify fit --logs <kp 100 logs and kp 200 logs> --validation-kp 200``
  for M1..M6 (one fit command per group combination, the models warm-started in turn as
  fit does by default), with each combination of the optional groups ``supply``,
  ``latency`` and ``thermal`` (all 8, none included). Training: the kp 100 logs only;
  validation: the kp 200 logs only.
* **Published sets.** The authors' published XL330 M1..M6 (better-actuator-models
  1.0.2) rolled out on the same kp 200 logs in the reference implementation
  (``reference_real_runner.py`` in ``.venv-ref``, installed by ``setup_reference.sh``)
  and, as a cross-check, in ours (our published files are those sets).

The validation MAE is pooled over every sample of the kp 200 logs (each log's rollout
with the control recomputed from the simulated state), the same for every row; each
recipe's row is recomputed here from its parameter file and checked against the
fit's own reported validation MAE.

Figure ``benchmarks/results/real_xl330.png``: recorded against simulated positions on
the four held-out logs, for the best recipe and the best published set (reference).

Run: ``tools/workspace.sh exec python benchmarks/real_xl330.py [--trials N] [--seed S]``;
writes ``benchmarks/results/real_xl330.json`` and the figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_identify.data.legacy_logs import legacy_log_files, read_legacy_log
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.rollouts import rollout
from bam_sim.models.files.parameter_file import load as load_parameters
from bam_sim.models.files.parameter_file import published

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data" / "real" / "xl330"
MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
GROUPS = ("supply", "latency", "thermal")
TRAIN_KP, VALIDATION_KP = 100.0, 200.0


def recipe_name(model: str, groups: tuple[str, ...]) -> str:
    return "+".join((model, *groups))


def pooled_mae(positions: list[np.ndarray], logs: list[BenchLog]) -> float:
    """Mean |simulated − recorded| over every sample of every log."""
    err = np.concatenate([np.abs(np.asarray(q) - log.position)
                          for q, log in zip(positions, logs, strict=True)])
    return float(np.mean(err))


def run_fit(logs: Path, groups: tuple[str, ...], trials: int, seed: int, out: Path) -> dict:
    """One fit command (M1..M6, these groups); its summary.json and wall time."""
    cmd = [str(ROOT / "tools" / "workspace.sh"), "run", "bam_identify", "fit",
           "--logs", str(logs), "--actuator", "xl330", "--models", *MODELS,
           "--validation-kp", str(VALIDATION_KP), "--trials", str(trials),
           "--seed", str(seed), "--quiet", "--force", "--report", str(out / "report"),
           "--output", str(out / "{model}.yaml")]
    if groups:
        cmd += ["--groups", *groups]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"real_xl330: fit {groups} failed:\n{done.stderr[-2000:]}")
    summary = json.loads((out / "report" / "summary.json").read_text())
    return {"summary": summary, "seconds": seconds, "command": " ".join(cmd[1:])}


def reference_published(logs: list[Path], tmp: Path) -> dict:
    python = ROOT / ".venv-ref" / "bin" / "python"
    setup = subprocess.run(["bash", str(HERE / "setup_reference.sh")], capture_output=True,
                           text=True)
    if setup.returncode != 0 or not python.exists():
        sys.exit(f"real_xl330: reference unavailable: {setup.stderr.strip()[-300:]}")
    out = tmp / "reference.json"
    subprocess.run([str(python), str(HERE / "reference_real_runner.py"), "--actuator",
                    "xl330", "--models", *MODELS, "--output", str(out), *map(str, logs)],
                   check=True)
    return json.loads(out.read_text())


def figure(path: Path, logs: list[BenchLog], curves: dict[str, list[np.ndarray]]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(logs), 1, figsize=(10, 2.6 * len(logs)), sharex=False)
    for ax, k in zip(np.atleast_1d(axes), range(len(logs)), strict=True):
        log = logs[k]
        ax.plot(log.time, log.goal, color="0.7", lw=1, ls="--", label="goal")
        ax.plot(log.time, log.position, color="k", lw=1.6, label="recorded")
        for (label, positions), color in zip(curves.items(), ("tab:blue", "tab:red"),
                                             strict=False):
            ax.plot(log.time, positions[k], color=color, lw=1.1, label=label)
        ax.set_ylabel("position [rad]")
        ax.set_title(f"{log.name or k} (kp {log.kp:g}, held out)", fontsize=9)
    np.atleast_1d(axes)[0].legend(fontsize=8, loc="upper right")
    np.atleast_1d(axes)[-1].set_xlabel("time [s]")
    fig.suptitle("XL330, 0.49 kg at 0.1 m: fitted at kp 100, validated at kp 200")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", nargs="*", default=list(GROUPS), choices=GROUPS,
                        help="the groups whose combinations are fitted (all 2^n)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "real_xl330.json")
    args = parser.parse_args()

    files = legacy_log_files(args.data)
    every = [read_legacy_log(f) for f in files]
    every = [dataclasses.replace(log, name=log.name or f.stem)
             for log, f in zip(every, files, strict=True)]
    held = [(f, log) for f, log in zip(files, every, strict=True) if log.kp == VALIDATION_KP]
    held_files, held_logs = [f for f, _ in held], [log for _, log in held]
    train = [f.name for f, log in zip(files, every, strict=True) if log.kp == TRAIN_KP]

    combos = [c for r in range(len(args.groups) + 1)
              for c in itertools.combinations(args.groups, r)]
    recipes, positions, fits = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for i, groups in enumerate(combos):
            out = tmp / f"fit{i}"
            fit = run_fit(args.data, groups, args.trials, args.seed, out)
            fits["+".join(groups) or "none"] = {"seconds": round(fit["seconds"], 1),
                                                "warnings": fit["summary"]["warnings"]}
            print(f"fit groups={'+'.join(groups) or 'none'}: {fit['seconds']:.0f} s")
            for model in MODELS:
                name = recipe_name(model, groups)
                params = load_parameters(out / f"{model}.yaml")
                q = [rollout(params, log).position for log in held_logs]
                row = fit["summary"]["models"][model]
                recipes[name] = {
                    "model": model, "groups": list(groups),
                    "validation_mae_rad": pooled_mae(q, held_logs),
                    "fit_reported_validation_mae_rad": row["validation_mae"],
                    "train_mae_rad": row["train_mae"], "trials": row["trials"],
                    "parameters": row["parameters"],
                }
                positions[name] = q
                print(f"  {name:<24} validation MAE {recipes[name]['validation_mae_rad']:.4e}"
                      f" (fit's report {row['validation_mae']:.4e})")
        ref = reference_published(held_files, tmp)

    published_rows = {}
    for model in MODELS:
        ours = [rollout(published("xl330", model), log).position for log in held_logs]
        theirs = [np.asarray(q) for q in ref["models"][model]["positions"]]
        published_rows[model] = {
            "reference_validation_mae_rad": pooled_mae(theirs, held_logs),
            "ours_validation_mae_rad": pooled_mae(ours, held_logs),
            "max_position_difference_rad": float(max(
                np.max(np.abs(a - b)) for a, b in zip(ours, theirs, strict=True))),
            "reference_file": ref["models"][model]["file"],
        }
        positions[f"published {model}"] = theirs
        r = published_rows[model]
        print(f"  published {model}: reference {r['reference_validation_mae_rad']:.4e}, "
              f"ours {r['ours_validation_mae_rad']:.4e}, max |Δq| "
              f"{r['max_position_difference_rad']:.1e} rad")

    best = min(recipes, key=lambda n: recipes[n]["validation_mae_rad"])
    best_pub = min(published_rows, key=lambda m: published_rows[m]
                   ["reference_validation_mae_rad"])
    png = args.output.with_suffix(".png")
    figure(png, held_logs, {
        f"fit {best} ({recipes[best]['validation_mae_rad']:.3f} rad)": positions[best],
        f"published {best_pub}, reference "
        f"({published_rows[best_pub]['reference_validation_mae_rad']:.3f} rad)":
            positions[f"published {best_pub}"],
    })
    print(f"best recipe {best}: {recipes[best]['validation_mae_rad']:.4e} rad; best "
          f"published {best_pub}: "
          f"{published_rows[best_pub]['reference_validation_mae_rad']:.4e} rad")
    write_result(args.output, {
        "workload": {"data": str(args.data.relative_to(ROOT.parent))
                     if args.data.is_relative_to(ROOT.parent) else str(args.data),
                     "train_logs_kp100": train,
                     "validation_logs_kp200": [f.name for f in held_files],
                     "models": list(MODELS), "group_combinations": ["+".join(c) or "none"
                                                                  for c in combos],
                     "trials_per_model": args.trials, "seed": args.seed, "seeds": 1,
                     "mae": "pooled over every sample of the kp 200 logs, simulated control"},
        "best_recipe": best, "best_published": best_pub,
        "recipes": recipes, "published": published_rows, "fits": fits,
        "figure": png.name,
        "reference": {k: v for k, v in ref.items() if k not in ("models", "logs")},
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
