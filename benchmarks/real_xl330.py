"""Real XL330: identification on recorded logs, validated at gains never seen in training.

Data: the BAM authors' twelve XL330 logs (``../shared/data/real/xl330/``, one 0.49 kg,
0.1 m pendulum, four trajectories at each of kp 100, 200 and 400, 6 s at 200 Hz; the kp
400 runs are the last of the series, at 30 to 34 °C and down to 5.8 V).

* **Splits.** Trained on kp 100 and 200, validated on kp 400 (the issue's target); trained
  on kp 100, validated on kp 200; trained on kp 100, validated on kp 400. Each split is a
  folder of links to its logs, fitted with ``--validation-kp``.
* **Recipes.** ``bam_identify fit --models m1 .. m6 --select`` with each group combination
  asked (default: none, ``supply``, ``supply latency``); the models warm-started in turn as
  fit does, the load terms held (one setup: fitting/priors.py) unless ``--free-load-terms``
  is passed here, and the model ``--select`` recommends recorded.
* **Published sets.** The authors' published XL330 M1..M6 (better-actuator-models
  1.0.2) rolled out on each split's validation logs in the reference implementation
  (``reference_real_runner.py`` in ``.venv-ref``, installed by ``setup_reference.sh``)
  and, as a cross-check, in ours (our published files are those sets).

The validation MAE is pooled over every sample of the held-out logs (each log's rollout
with the control recomputed from the simulated state); each recipe's row is recomputed
here from its parameter file.

Figure ``benchmarks/results/real_xl330.png``: recorded against simulated positions on the
held-out kp 400 logs of the first split, for the selected recipe and the best published
set (reference).

Run: ``tools/workspace.sh exec python benchmarks/real_xl330.py [--trials N] [--seed S]``;
writes ``benchmarks/results/real_xl330.json`` and the figure.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from bam_sim.models.files.parameter_file import published_named

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data" / "real" / "xl330"
MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
GROUPS = ("supply", "latency", "thermal")
COMBINATIONS = ("none", "supply", "supply+latency")
# name: (training gains, validation gain)
SPLITS = {"kp100+200_to_400": ((100.0, 200.0), 400.0),
          "kp100_to_200": ((100.0,), 200.0),
          "kp100_to_400": ((100.0,), 400.0)}


def recipe_name(model: str, groups: tuple[str, ...]) -> str:
    return "+".join((model, *groups))


def pooled_mae(positions: list[np.ndarray], logs: list[BenchLog]) -> float:
    """Mean |simulated − recorded| over every sample of every log."""
    err = np.concatenate([np.abs(np.asarray(q) - log.position)
                          for q, log in zip(positions, logs, strict=True)])
    return float(np.mean(err))


def run_fit(logs: Path, validation_kp: float, groups: tuple[str, ...], trials: int, seed: int,
            out: Path, free_load: bool) -> dict:
    """One fit command (M1..M6, these groups, --select); its summary.json, the model it
    selected and its wall time."""
    cmd = [str(ROOT / "tools" / "workspace.sh"), "run", "bam_identify", "fit",
           "--logs", str(logs), "--actuator", "xl330", "--models", *MODELS, "--select",
           "--validation-kp", str(validation_kp), "--trials", str(trials),
           "--seed", str(seed), "--quiet", "--force", "--report", str(out / "report"),
           "--output", str(out / "{model}.yaml")]
    if groups:
        cmd += ["--groups", *groups]
    if free_load:
        cmd.append("--free-load-terms")
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"real_xl330: fit {groups} failed:\n{done.stderr[-2000:]}")
    summary = json.loads((out / "report" / "summary.json").read_text())
    selected = load_parameters(out / "selected.yaml").model.name
    return {"summary": summary, "seconds": seconds, "selected": selected,
            "command": " ".join(cmd[1:])}


def split_folder(folder: Path, files: list[Path], logs: list[BenchLog],
                 gains: tuple[float, ...]) -> Path:
    """A folder of links to the logs of ``gains``."""
    folder.mkdir(parents=True)
    for f, log in zip(files, logs, strict=True):
        if log.kp in gains:
            (folder / f.name).symlink_to(f.resolve())
    return folder


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


def figure(path: Path, logs: list[BenchLog], curves: dict[str, list[np.ndarray]],
           title: str) -> None:
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
    fig.suptitle(f"XL330, 0.49 kg at 0.1 m: {title}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def fit_split(name: str, files: list[Path], every: list[BenchLog], args, tmp: Path) -> dict:
    """Every recipe of one split, and the published sets, on its held-out logs."""
    gains, validation_kp = SPLITS[name]
    held = [(f, log) for f, log in zip(files, every, strict=True) if log.kp == validation_kp]
    held_files, held_logs = [f for f, _ in held], [log for _, log in held]
    folder = split_folder(tmp / f"logs{len(list(tmp.iterdir()))}", files, every,
                          (*gains, validation_kp))
    recipes, positions, fits = {}, {}, {}
    for combination in args.combinations:
        groups = () if combination == "none" else tuple(combination.split("+"))
        out = tmp / f"fit{len(list(tmp.iterdir()))}"
        fit = run_fit(folder, validation_kp, groups, args.trials, args.seed, out,
                      args.free_load_terms)
        fits[combination] = {"seconds": round(fit["seconds"], 1), "selected": fit["selected"],
                             "warnings": fit["summary"]["warnings"]}
        print(f"{name}: fit groups={combination}: {fit['seconds']:.0f} s, selected "
              f"{fit['selected']}")
        for model in MODELS:
            recipe = recipe_name(model, groups)
            params = load_parameters(out / f"{model}.yaml")
            q = [rollout(params, log).position for log in held_logs]
            row = fit["summary"]["models"][model]
            recipes[recipe] = {
                "model": model, "groups": list(groups) or ["none"],
                "validation_mae_rad": pooled_mae(q, held_logs),
                "fit_reported_validation_mae_rad": row["validation_mae"],
                "train_mae_rad": row["train_mae"], "trials": row["trials"],
                "selected": model == fit["selected"], "parameters": row["parameters"],
            }
            positions[recipe] = q
            print(f"  {recipe:<24} validation MAE {recipes[recipe]['validation_mae_rad']:.4e}")
    where = tmp / f"ref{len(list(tmp.iterdir()))}"
    where.mkdir()
    ref = reference_published(held_files, where)
    published_rows = {}
    for model in MODELS:
        ours = [rollout(published_named("xl330", model), log).position for log in held_logs]
        theirs = [np.asarray(q) for q in ref["models"][model]["positions"]]
        published_rows[model] = {
            "reference_validation_mae_rad": pooled_mae(theirs, held_logs),
            "ours_validation_mae_rad": pooled_mae(ours, held_logs),
            "max_position_difference_rad": float(max(
                np.max(np.abs(a - b)) for a, b in zip(ours, theirs, strict=True))),
        }
        positions[f"published {model}"] = theirs
    best = min(recipes, key=lambda n: recipes[n]["validation_mae_rad"])
    best_pub = min(published_rows,
                   key=lambda m: published_rows[m]["reference_validation_mae_rad"])
    m1 = {c: recipes[recipe_name("m1", () if c == "none" else tuple(c.split("+")))]
          ["validation_mae_rad"] for c in args.combinations}
    return {"train_kp": list(gains), "validation_kp": validation_kp,
            "validation_logs": [f.name for f in held_files],
            "best_recipe": best, "best_published": best_pub, "recipes": recipes,
            "published": published_rows, "fits": fits,
            "richer_worse_than_m1": sorted(
                n for n, r in recipes.items()
                if r["validation_mae_rad"] > m1["+".join(r["groups"])]),
            "_figure": (held_logs, positions, best, best_pub)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--trials", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), choices=SPLITS)
    parser.add_argument("--combinations", nargs="+", default=list(COMBINATIONS),
                        help="group combinations, each 'none' or groups joined by '+'")
    parser.add_argument("--free-load-terms", action="store_true",
                        help="search the load terms (the fit holds them on one setup)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "real_xl330.json")
    args = parser.parse_args()
    for combination in args.combinations:
        if combination != "none" and not set(combination.split("+")) <= set(GROUPS):
            sys.exit(f"real_xl330: --combinations {combination}: join groups of "
                     f"{', '.join(GROUPS)} with '+', or give 'none'")

    files = legacy_log_files(args.data)
    every = [read_legacy_log(f) for f in files]
    every = [dataclasses.replace(log, name=log.name or f.stem)
             for log, f in zip(every, files, strict=True)]
    splits = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        for name in args.splits:
            splits[name] = fit_split(name, files, every, args, Path(tmp_name))
    first = splits[args.splits[0]]
    held_logs, positions, best, best_pub = first.pop("_figure")
    for split in splits.values():
        split.pop("_figure", None)
    png = args.output.with_suffix(".png")
    figure(png, held_logs, {
        f"fit {best} ({first['recipes'][best]['validation_mae_rad']:.3f} rad)":
            positions[best],
        f"published {best_pub}, reference "
        f"({first['published'][best_pub]['reference_validation_mae_rad']:.3f} rad)":
            positions[f"published {best_pub}"],
    }, f"trained at kp {'+'.join(f'{g:g}' for g in first['train_kp'])}, validated at kp "
       f"{first['validation_kp']:g} (held out)")
    for name, split in splits.items():
        print(f"{name}: best recipe {split['best_recipe']} "
              f"{split['recipes'][split['best_recipe']]['validation_mae_rad']:.4e} rad; best "
              f"published {split['best_published']} "
              f"{split['published'][split['best_published']]['reference_validation_mae_rad']:.4e}"
              " rad")
    write_result(args.output, {
        "workload": {"data": str(args.data.relative_to(ROOT.parent))
                     if args.data.is_relative_to(ROOT.parent) else str(args.data),
                     "models": list(MODELS), "group_combinations": args.combinations,
                     "trials_per_model": args.trials, "seed": args.seed, "seeds": 1,
                     "load_terms": "searched" if args.free_load_terms else "held (one setup)",
                     "mae": "pooled over every sample of the held-out logs, simulated control"},
        "splits": splits, "figure": png.name, "environment": environment(),
    })


if __name__ == "__main__":
    main()
