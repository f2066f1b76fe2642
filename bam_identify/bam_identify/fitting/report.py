"""Identification report: Markdown + JSON summary and figures in one folder.

Figures follow the paper: the training/validation MAE per model (Fig. 5),
simulated against recorded positions on validation logs (Fig. 1) and the
drive/backdrive diagrams of the fitted models (Fig. 4).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.rollouts import rollout
from bam_sim.models.parameter_file import write_atomic
from bam_sim.models.parameter_set import ParameterSet

LOAD_DEPENDENT = ("m3", "m4", "m5", "m6")


@dataclass
class ModelResult:
    """What the fit of one model produced."""

    params: ParameterSet
    train_mae: float
    validation_mae: float | None
    trials: int
    seconds: float
    output: Path
    interrupted: bool = False

    @property
    def model(self) -> str:
        return self.params.model


def identifiability_warnings(train: list[BenchLog], models: list[str]) -> list[str]:
    """What the training data cannot tell apart, for the models asked."""
    warnings = []
    setups = {(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in train}
    loaded = [m for m in models if m in LOAD_DEPENDENT]
    if len(setups) == 1 and loaded:
        warnings.append(f"a single mass/length setup in the training logs: the load-dependent "
                        f"terms of {', '.join(loaded)} are not identifiable; record several "
                        "masses or lengths")
    if all(log.enabled.all() for log in train):
        warnings.append("no torque-off segment in the training logs: viscous friction and the "
                        "motor's back-EMF cannot be separated; record a lift-and-drop trajectory")
    gains = sorted({log.kp for log in train})
    if len(gains) == 1:
        warnings.append(f"every training log uses the gain kp={gains[0]:g}: the motor constants "
                        "and the control law are weakly constrained; record several gains")
    return warnings


def check_report_folder(folder: Path, force: bool) -> None:
    from bam_sim.common.errors import BamError

    if folder.exists() and any(folder.iterdir()) and not force:
        raise BamError(f"report folder {folder} is not empty; choose another one or pass --force")


def write_report(folder: Path, results: list[ModelResult], validation: list[BenchLog],
                 train: list[BenchLog], warnings: list[str], provenance: dict) -> Path:
    """Write summary.json, report.md and the figures; returns the Markdown path."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = {"mae": _plot_mae(folder / "mae.png", results)}
    if validation:
        figures["validation"] = _plot_validation(folder / "validation.png", results, validation)
    figures["diagrams"] = _plot_diagrams(folder / "drive_backdrive.png", results)
    summary = {
        "provenance": provenance,
        "warnings": warnings,
        "data": _data_summary(train, validation),
        "models": {r.model: {"train_mae": r.train_mae, "validation_mae": r.validation_mae,
                             "trials": r.trials, "seconds": r.seconds,
                             "interrupted": r.interrupted, "parameters": r.params.values,
                             "file": str(r.output)} for r in results},
        "figures": {k: v.name for k, v in figures.items()},
    }
    write_atomic(folder / "summary.json", json.dumps(summary, indent=2, default=_jsonable) + "\n")
    path = folder / "report.md"
    write_atomic(path, _markdown(summary, results))
    return path


def mae_table(results: list[ModelResult]) -> str:
    """The MAE table as aligned text (also printed by the fit command)."""
    lines = [f"{'model':<6} {'train MAE [rad]':>16} {'validation MAE [rad]':>21} "
             f"{'trials':>7} {'time [s]':>9}"]
    for r in results:
        val = f"{r.validation_mae:.3e}" if r.validation_mae is not None else "-"
        lines.append(f"{r.model:<6} {r.train_mae:>16.3e} {val:>21} {r.trials:>7d} "
                     f"{r.seconds:>9.1f}")
    return "\n".join(lines)


def _data_summary(train: list[BenchLog], validation: list[BenchLog]) -> dict:
    logs = train + validation
    return {
        "train_logs": [log.name for log in train],
        "validation_logs": [log.name for log in validation],
        "trajectories": sorted({log.meta.get("trajectory", "?") for log in logs}),
        "gains": sorted({float(log.kp) for log in logs}),
        "setups": sorted({(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in logs}),
        "seconds_of_data": float(sum(len(log) * log.dt for log in logs)),
    }


def _markdown(summary: dict, results: list[ModelResult]) -> str:
    prov = summary["provenance"]
    data = summary["data"]
    out = [f"# Identification of {prov.get('actuator', '?')}", ""]
    out.append(f"{len(data['train_logs'])} training and {len(data['validation_logs'])} "
               f"validation logs ({data['seconds_of_data']:.0f} s of data); trajectories "
               f"{', '.join(data['trajectories'])}; gains "
               f"{', '.join(f'{g:g}' for g in data['gains'])}; "
               f"{len(data['setups'])} mass/length setups. Seed {prov.get('seed')}, "
               f"bam_identify {prov.get('version')}, {prov.get('date')}.")
    out += ["", "| model | train MAE [rad] | validation MAE [rad] | trials | time [s] | "
            "parameters |", "|---|---|---|---|---|---|"]
    for r in results:
        val = f"{r.validation_mae:.3e}" if r.validation_mae is not None else "–"
        note = " (interrupted)" if r.interrupted else ""
        out.append(f"| {r.model}{note} | {r.train_mae:.3e} | {val} | {r.trials} | "
                   f"{r.seconds:.1f} | `{r.output}` |")
    if summary["warnings"]:
        out += ["", "## Warnings", ""] + [f"- {w}" for w in summary["warnings"]]
    out += ["", "## Figures", ""]
    titles = {"mae": "MAE per model (paper Fig. 5)",
              "validation": "Simulated vs recorded positions on validation logs (Fig. 1)",
              "diagrams": "Drive/backdrive diagrams of the fitted models (Fig. 4)"}
    for key, name in summary["figures"].items():
        out += [f"### {titles[key]}", "", f"![{titles[key]}]({name})", ""]
    out += ["## Parameters", ""]
    names = sorted({n for r in results for n in r.params.values})
    out.append("| parameter | " + " | ".join(r.model for r in results) + " |")
    out.append("|---|" + "---|" * len(results))
    for name in names:
        cells = [f"{r.params.values[name]:.6g}" if name in r.params.values else ""
                 for r in results]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_mae(path: Path, results: list[ModelResult]) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.2 * len(results) + 3, 3.5))
    x = np.arange(len(results))
    ax.bar(x - 0.2, [r.train_mae for r in results], 0.4, label="train")
    val = [r.validation_mae if r.validation_mae is not None else math.nan for r in results]
    ax.bar(x + 0.2, val, 0.4, label="validation")
    ax.set_xticks(x, [r.model.upper() for r in results])
    ax.set_ylabel("MAE [rad]")
    ax.set_title(f"{results[0].params.actuator_def.title}: position MAE per model", fontsize=10)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _pick_logs(logs: list[BenchLog], count: int = 4) -> list[BenchLog]:
    """Up to ``count`` logs, one per trajectory first."""
    chosen, seen = [], set()
    for log in logs:
        key = log.meta.get("trajectory", log.name)
        if key not in seen:
            chosen.append(log)
            seen.add(key)
    # By identity: logs hold arrays, which have no truth value to compare.
    taken = {id(log) for log in chosen}
    chosen += [log for log in logs if id(log) not in taken]
    return chosen[:count]


def _plot_validation(path: Path, results: list[ModelResult], logs: list[BenchLog]) -> Path:
    plt = _pyplot()
    picked = _pick_logs(logs)
    fig, axes = plt.subplots(len(picked), 1, figsize=(9, 2.6 * len(picked)), squeeze=False)
    for ax, log in zip(axes[:, 0], picked, strict=True):
        t = log.time
        off = ~log.enabled
        if off.any():
            ax.fill_between(t, 0, 1, where=off, transform=ax.get_xaxis_transform(),
                            color="0.9", lw=0)
        ax.plot(t, log.goal, "k:", lw=1, label="goal")
        ax.plot(t, log.position, "k", lw=2, alpha=0.5, label="recorded")
        for r in results:
            ax.plot(t, rollout(r.params, log).position, lw=1, label=r.model.upper())
        ax.set_title(f"{log.name} (kp={log.kp:g}, m={log.bench.mass:g} kg, "
                     f"l={log.bench.length:g} m)", fontsize=9)
        ax.set_ylabel("q [rad]")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("time [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_diagrams(path: Path, results: list[ModelResult]) -> Path:
    from bam_sim.models.diagram import plot_diagram

    title = f"{results[0].params.actuator_def.title}: fitted models"
    return plot_diagram([r.params for r in results], path, title=title)


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value)}")


