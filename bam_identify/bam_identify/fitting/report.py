"""Identification report: Markdown + JSON summary and figures in one folder.

Figures follow the paper: the training/validation MAE per model (Fig. 5),
simulated against recorded positions on validation logs (Fig. 1) and the
drive/backdrive diagrams of the fitted models (Fig. 4). Added: the friction
of every fitted model against the joint velocity at zero load (the budget of
M1..M6, Φ(v) of ``ep_*``) and, for the elasto-plastic models, the pre-sliding
curve: applied torque against displacement under a slow torque ramp, elastic
(slope K) up to the breakaway at F_S, i.e. at the displacement F_S/K.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bam_identify.fitting.priors import LOAD_TERMS
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.rollouts import rollout
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import get_group
from bam_sim.models.files.parameter_file import write_atomic
from bam_sim.models.model_registry import FRICTION_MODELS
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import VOLTAGE, Actuator

# The models with a load-dependent friction term (priors.LOAD_TERMS).
LOAD_DEPENDENT = tuple(m.name for m in FRICTION_MODELS.values() if set(m.params) & set(LOAD_TERMS))
# Why a report lacks figures: a stop came before they were drawn (seconds of work a
# stopped command has no time for). No command draws them afterwards.
FIGURES_LEFT_OUT = ("figures were left out: the fit was interrupted before they were "
                    "drawn; no command draws them afterwards: run the fit again to get them "
                    "(with --storage it resumes its study where it stopped)")


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
    # Winding-temperature MAE (K) of sets with the thermal group on logs that recorded it.
    train_temperature_mae: float | None = None
    validation_temperature_mae: float | None = None
    # With latency freed: the delays consistent with the data (fitting/latency.py).
    latency: dict[str, float] | None = None
    # Each identified parameter's interval within a rise of the error (fitting/sensitivity.py).
    sensitivity: dict | None = None
    validation_per_log: np.ndarray | None = None  # rad, the position MAE of each log

    @property
    def model(self) -> str:
        """The model's name (the tables' and the report's)."""
        return self.params.model.name


# A span of recorded temperatures below this (K) cannot separate R(T)'s α from R: R moves
# by at most α·span, a few percent, which the kt/R trade of the position fit absorbs.
THERMAL_SPAN = 20.0


def thermal_warnings(train: list[BenchLog]) -> list[str]:
    """What the recorded temperatures cannot fix for the thermal group (R(T), R_T, C)."""
    readings = [log.temperature for log in train if log.temperature is not None]
    if not readings:
        return []
    low = min(float(t.min()) for t in readings)
    high = max(float(t.max()) for t in readings)
    if high - low >= THERMAL_SPAN:
        return []
    setups = {(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in train}
    where = "one mass/length setup" if len(setups) == 1 else f"{len(setups)} setups"
    largest = get_group("thermal").bounds({})["thermal.tempcoef"][1]
    return [f"the training logs warm the servo by {high - low:.1f} K only ({low:.0f} to "
            f"{high:.0f} °C, {where}): they fix the heating at the currents they draw, "
            "not R_T, C and the tempcoef apart (R(T) moves R by under "
            f"{100 * largest * (high - low):.1f} %); record a long run or a stall that heats "
            f"the servo by {THERMAL_SPAN:g} K or more, at several loads"]


# A free swing shorter than this (s of torque off in the training logs) barely constrains
# the viscous friction alone, the one handle that separates k_t²/R from it.
FREE_SWING = 1.0


def _setup_warning(train: list[BenchLog], models: list[str], free_load: bool) -> list[str]:
    """One mass/length setup: what the logs fix (ratios to this load), what they do not."""
    setups = {(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in train}
    if len(setups) != 1:
        return []
    mass, length, arm = next(iter(setups))
    arm_text = f" and a {arm:g} kg arm" if arm else ""
    loaded = [m for m in models if m in LOAD_DEPENDENT]
    held = ("searched anyway (--free-load-terms)" if free_load else
            "held at 0, the nested load-free model (--free-load-terms searches them)")
    load_terms = (f"; the load-dependent terms of {', '.join(loaded)} are not told apart "
                  f"from what the model misses at one load: {held}"
                  if loaded else "")
    return [f"a single mass/length setup in the training logs ({mass:g} kg at {length:g} m"
            f"{arm_text}): the positions fix the motor torque, the inertia (armature + m·l²) "
            "and the friction only relative to this one load (m·g·l), so an error in the "
            "recorded mass or length moves kt/R and the armature with it instead of showing "
            f"as error{load_terms}; record another mass or another length"]


def _motor_warning(train: list[BenchLog], actuator: Actuator | None) -> list[str]:
    """The voltage law's motor constants: the combinations the positions fix."""
    if actuator is None or actuator.family != VOLTAGE:
        return []
    free = sum(float(np.count_nonzero(~log.enabled)) * log.dt for log in train)
    swing = (f"the training logs hold {free:.1f} s of free swing (torque off)" if free
             else "the training logs hold no free swing (torque off)")
    return [f"kt and R are not fixed apart: the firmware drives the motor with the duty "
            "kp·duty_gain·(goal − q) of the supply, so the positions fix kt/R (torque per "
            "volt, through the firmware gain) and kt²/R + the viscous friction (the damping "
            f"while the torque is on); only a free swing separates the viscous part ({swing})"
            ", and no log records the motor current; record a free swing (torque off, "
            f"released from horizontal, {FREE_SWING:g} s or more) and the servo's present "
            "current to fix kt and R apart"]


def identifiability_warnings(train: list[BenchLog], models: list[str],
                             groups: tuple[str, ...] = (),
                             actuator: Actuator | None = None,
                             free_load: bool = False,
                             held: frozenset[str] = frozenset()) -> list[str]:
    """What the training data cannot tell apart, for the models and groups asked.

    Each warning says which combinations the logs fix and which they do not, and
    names what to record next. ``actuator``: the voltage law's kt/R warning needs it;
    ``held``: the parameters --set holds.
    """
    warnings = thermal_warnings(train) if "thermal" in groups else []
    warnings += _setup_warning(train, models, free_load)
    warnings += _motor_warning(train, actuator)
    if "gain" in groups and not held & {"kt", "R", "error_gain_ratio"}:
        warnings.append("the gain scale r trades against kt and R: kt, R and r scaled by a, "
                        "a² and a move the servo alike while its duty is below the PWM limit "
                        "(the positions fix r·kt/R and kt²/R), so the three are found only up "
                        "to that scale; hold kt at a datasheet value (--set kt=...) to fix r")
    if all(log.enabled.all() for log in train):
        warnings.append("no torque-off segment in the training logs: viscous friction and the "
                        "motor's back-EMF cannot be separated (friction_viscous is held at the "
                        "actuator's published M1 value where it has one); record a "
                        "lift-and-drop trajectory")
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
                 train: list[BenchLog], warnings: list[str], provenance: dict,
                 cancel: Cancellation | None = None) -> Path:
    """Write summary.json, report.md and the figures; returns the Markdown path.

    ``cancel`` is checked before each figure: once it is requested the figures not
    drawn yet are left out, and the report says so (:data:`FIGURES_LEFT_OUT`); the
    tables are written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    tasks = {"mae": (_plot_mae, (folder / "mae.png", results))}
    if validation:
        tasks["validation"] = (_plot_validation, (folder / "validation.png", results,
                                                  validation))
    tasks["diagrams"] = (_plot_diagrams, (folder / "drive_backdrive.png", results))
    tasks["friction"] = (_plot_friction, (folder / "friction.png", results, train))
    motor = [r for r in results if _uses_motor(r.params)]
    if motor:
        tasks["dcmotor"] = (_plot_dcmotor, (folder / "dcmotor_curves.png", motor))
    figures = _figures(tasks, cancel or Cancellation())
    summary = {
        "provenance": provenance,
        "warnings": warnings,
        "data": _data_summary(train, validation),
        "models": {r.model: {"train_mae": r.train_mae, "validation_mae": r.validation_mae,
                             "train_temperature_mae": r.train_temperature_mae,
                             "validation_temperature_mae": r.validation_temperature_mae,
                             "trials": r.trials, "seconds": r.seconds,
                             "interrupted": r.interrupted, "parameters": r.params.values,
                             "latency": r.latency, "sensitivity": r.sensitivity,
                             "file": str(r.output)} for r in results},
        "figures": {k: v.name for k, v in figures.items()},
    }
    if len(figures) < len(tasks):
        summary["figures_left_out"] = FIGURES_LEFT_OUT
    elastoplastic = {r.model: _elastoplastic_summary(r.params, train)
                     for r in results if r.params.model.elastoplastic}
    if elastoplastic:
        summary["elastoplastic"] = elastoplastic
    write_atomic(folder / "summary.json", json.dumps(summary, indent=2, default=_jsonable) + "\n")
    path = folder / "report.md"
    write_atomic(path, _markdown(summary, results))
    return path


def _figures(tasks: dict, cancel: Cancellation) -> dict[str, Path]:
    """The figures drawn, in turn, until ``cancel`` is requested."""
    drawn = {}
    for name, (draw, args) in tasks.items():
        if cancel.is_set():
            break
        drawn[name] = draw(*args)
    return drawn


def mae_table(results: list[ModelResult]) -> str:
    """The MAE table as aligned text (also printed by the fit command)."""
    heated = any(r.train_temperature_mae is not None for r in results)
    extra = f" {'train MAE [K]':>14} {'validation MAE [K]':>19}" if heated else ""
    lines = [f"{'model':<6} {'train MAE [rad]':>16} {'validation MAE [rad]':>21} "
             f"{'trials':>7} {'time [s]':>9}{extra}"]
    for r in results:
        val = f"{r.validation_mae:.3e}" if r.validation_mae is not None else "-"
        line = (f"{r.model:<6} {r.train_mae:>16.3e} {val:>21} {r.trials:>7d} "
                f"{r.seconds:>9.1f}")
        if heated:
            line += f" {_kelvin(r.train_temperature_mae):>14} "
            line += f"{_kelvin(r.validation_temperature_mae):>19}"
        lines.append(line)
    return "\n".join(lines)


def _kelvin(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "-"


def _data_summary(train: list[BenchLog], validation: list[BenchLog]) -> dict:
    logs = train + validation
    return {
        "train_logs": [log.name for log in train],
        "validation_logs": [log.name for log in validation],
        "trajectories": sorted({log.meta.get("trajectory", "?") for log in logs}),
        "gains": sorted({float(log.kp) for log in logs}),
        "setups": sorted({(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in logs}),
        "seconds_of_data": float(sum(len(log) * log.dt for log in logs)),
        "temperature_range": _temperature_range(train),
    }


def _temperature_range(logs: list[BenchLog]) -> list[float] | None:
    """[lowest, highest] temperature the logs recorded (°C, the servo's sensor), or None."""
    readings = [log.temperature for log in logs if log.temperature is not None]
    if not readings:
        return None
    return [min(float(t.min()) for t in readings), max(float(t.max()) for t in readings)]


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
    heated = [r for r in results if r.train_temperature_mae is not None]
    if heated:
        out += _thermal_section(heated, summary["data"])
    delayed = [r for r in results if r.latency is not None]
    if delayed:
        out += ["", "## Latency", "",
                "Command latency L_c freed (the bench sees L_c + L_r, L_r held): the value "
                "found and the interval where the training MAE stays within "
                f"{100 * delayed[0].latency['rise']:g} % of its best, every other parameter "
                "held. Randomize the delay over that interval in training.", "",
                "| model | L_c found [ms] | randomize L_c over [ms] | L_r held [ms] |",
                "|---|---|---|---|"]
        out += [f"| {r.model} | {1e3 * r.latency['identified']:.2f} | "
                f"{1e3 * r.latency['low']:.2f} – {1e3 * r.latency['high']:.2f} | "
                f"{1e3 * r.latency['reading']:.2f} |" for r in delayed]
    out += _sensitivity_section([r for r in results if r.sensitivity])
    if summary["warnings"]:
        out += ["", "## Warnings", ""] + [f"- {w}" for w in summary["warnings"]]
    if "elastoplastic" in summary:
        out += ["", "## Elasto-plastic models", "",
                "Stiction F_S, pre-sliding displacement F_S/K at zero load, and the two "
                "conditions at the logs' step T: (14) holds when K·T + B ≥ r = "
                "(F_S − F_C)/v_S − D, sticking is stable when T·(K·T + 2B) < 4J "
                "(smallest J of the training logs).", "",
                "| model | F_S [N·m] | F_S/K [rad] | K·T + B | r | T·(K·T + 2B)/(4J) |",
                "|---|---|---|---|---|---|"]
        for name, ep in summary["elastoplastic"].items():
            out.append(f"| {name} | {ep['static_friction']:.4g} | "
                       f"{ep['pre_sliding_displacement']:.3e} | {ep['admittance']:.4g} | "
                       f"{ep['required_admittance']:.4g} | {ep['coupling_ratio']:.3f} |")
    out += ["", "## Figures", ""]
    if "figures_left_out" in summary:
        out += [summary["figures_left_out"][0].upper() + summary["figures_left_out"][1:] + ".",
                ""]
    titles = {"mae": "MAE per model (paper Fig. 5)",
              "validation": "Simulated vs recorded positions on validation logs (Fig. 1)",
              "diagrams": "Drive/backdrive diagrams of the fitted models (Fig. 4)",
              "friction": "Friction against velocity at zero load; pre-sliding "
                          "displacement of the elasto-plastic models",
              "dcmotor": "DC-motor model: torque-speed envelope (Fig. 2-3), Stribeck curve "
                         "(Fig. 6) and pre-sliding hysteresis (Fig. 5) of the DC-motor document"}
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


# What the recorded temperature is, said wherever a fit is scored on it.
SENSOR_NOTE = ("The recorded temperature is the servo's own sensor reading (on its board, "
               "near the motor), not the winding: it lags the winding and reads in steps "
               "(1 °C on a Dynamixel). The model's winding temperature is scored against "
               "it, so R_T and C are those of the winding as the sensor sees it.")


def _sensitivity_section(results: list[ModelResult]) -> list[str]:
    """Each identified parameter's interval within the chosen rise of the training error."""
    if not results:
        return []
    out = ["", "## Sensitivity", "",
           "Each identified parameter alone, every other one held at the fit: the interval "
           "where the training error stays within the percentage given of the fit's "
           "(`fit --sensitivity`); * marks an end at the search bound. `export` writes "
           "them as BAM's `*_sensitivity.json` and as randomization ranges.", ""]
    for r in results:
        found = r.sensitivity
        out += [f"{r.model}: within {found['percent']:g} % of {found['base_mae']:.3e}", "",
                "| parameter | fitted | lower | upper |", "|---|---|---|---|"]
        rows = dict(found["parameters"])
        if found.get("friction_scale"):
            rows["friction budget scale"] = found["friction_scale"]
        out += [f"| {name} | {i['value']:.5g} | {i['lower']:.5g}{'*' * i['lower_clamped']} "
                f"| {i['upper']:.5g}{'*' * i['upper_clamped']} |" for name, i in rows.items()]
        out.append("")
    return out[:-1]


def _thermal_section(heated: list[ModelResult], data: dict) -> list[str]:
    """The thermal group's fit: temperature MAE, R(T) and the lumped thermal constants."""
    span = data.get("temperature_range")
    recorded = (f" The training logs recorded {span[0]:.1f} to {span[1]:.1f} °C."
                if span else "")
    out = ["", "## Temperature (thermal group)", "", SENSOR_NOTE + recorded, "",
           "Mean absolute error of the simulated winding temperature against that reading "
           "(second objective term), and R(T) = R·(1 + tempcoef·(T − reftemp)) with the "
           "lumped model C·dT/dt = R(T)·i² − (T − ambient)/R_T.", "",
           "| model | train MAE [K] | validation MAE [K] | R [Ω] at reftemp | tempcoef [1/K] "
           "| R_T [K/W] | C [J/K] | R_T·C [s] | reftemp, ambient [°C] |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in heated:
        v = r.params.values
        constants = [v.get(n, math.nan) for n in ("thermal.tempcoef", "thermal.resistance",
                                                  "thermal.capacitance")]
        out.append(f"| {r.model} | {_kelvin(r.train_temperature_mae)} | "
                   f"{_kelvin(r.validation_temperature_mae)} | "
                   f"{v.get('R', v.get('resistance', math.nan)):.4g} | {constants[0]:.3g} | "
                   f"{constants[1]:.3g} | {constants[2]:.3g} | "
                   f"{constants[1] * constants[2]:.3g} | {v.get('thermal.reftemp', math.nan):g}, "
                   f"{v.get('thermal.ambient', math.nan):g} |")
    return out


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
    ax.set_title(f"{results[0].params.actuator.title}: position MAE per model", fontsize=10)
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

    title = f"{results[0].params.actuator.title}: fitted models"
    return plot_diagram([r.params for r in results], path, title=title)


def _uses_motor(params: ParameterSet) -> bool:
    from bam_sim.models.dcmotor.motor_model import uses_motor

    return bool(uses_motor(params.actuator.family, params.model_id, params.vector()))


def envelope_voltage(params: ParameterSet) -> float:
    """The largest voltage the drive applies: v_max of its controller, else the supply's
    (times the largest duty of a PWM servo)."""
    from bam_sim.models.dcmotor import model as dcmotor
    from bam_sim.models.dcmotor.motor_model import dcmotor_parameters
    from bam_sim.models.servo.actuator import VOLTAGE

    vmax = float(dcmotor_parameters(params)[dcmotor.P_VMAX])
    if vmax > 0.0:
        return vmax
    act = params.actuator
    return act.supply_voltage * (act.max_duty if act.family == VOLTAGE else 1.0)


def _plot_dcmotor(path: Path, results: list[ModelResult]) -> Path:
    """The DC-motor document's Fig. 2-3 envelope, Fig. 6 Stribeck curve and Fig. 5 loop."""
    from bam_sim.models.dcmotor.curves import plot_curves
    from bam_sim.models.dcmotor.motor_model import dcmotor_parameters

    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for r in results:
        plot_curves(dcmotor_parameters(r.params), axes, envelope_voltage(r.params), r.model)
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(f"{results[0].params.actuator.title}: DC-motor model of the fitted sets")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ep_params(params: ParameterSet, max_load: float = 0.0):
    from bam_sim.models.elastoplastic.model import ElastoPlasticParams
    from bam_sim.models.elastoplastic.validity import ep_form

    return ElastoPlasticParams.from_vector(ep_form(params.model), params.vector(), max_load)


def _smallest_inertia(params: ParameterSet, logs: list[BenchLog]) -> float:
    return min(log.bench.inertia(params.values["armature"]) for log in logs)


def _elastoplastic_summary(params: ParameterSet, train: list[BenchLog]) -> dict:
    """Static friction, pre-sliding displacement and the margins of (14) and the coupling."""
    ep = _ep_params(params)
    dt = train[0].dt
    inertia = _smallest_inertia(params, train)
    return {"static_friction": ep.F_S, "pre_sliding_displacement": ep.F_S / ep.K,
            "step": dt, "admittance": ep.K * dt + ep.B,
            "required_admittance": ep.required_admittance(),
            "coupling_ratio": dt * (ep.K * dt + 2.0 * ep.B) / (4.0 * inertia)}


def _static_level(params: ParameterSet, speed: float) -> float:
    from bam_sim.models.diagram import static_level

    return float(static_level(params.model_id, params.vector(), 0.0, 0.0, abs(speed)))


def friction_curve(params: ParameterSet, velocity: np.ndarray) -> np.ndarray:
    """Friction at zero load against velocity ≠ 0: the budget (M1..M6) or Φ(v) (ep_*)."""
    level = np.array([_static_level(params, float(v)) for v in velocity])
    return np.sign(velocity) * level


def pre_sliding_curve(params: ParameterSet, dt: float, inertia: float,
                      steps: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """(displacement, applied torque) of a joint under a slow torque ramp to 1.5·F_S.

    The core's 1-DOF joint (:func:`bam_sim.models.elastoplastic.model.simulate_joint`)
    at the fit's step and the smallest inertia of its logs, starting at rest:
    elastic up to F_S, then breakaway. For ``ep_load`` the ramp is the motor
    torque, so F_S grows along it as the load does.
    """
    from bam_sim.models.elastoplastic.model import EP_LOAD, simulate_joint

    ep = _ep_params(params)
    growth = ep.K_l + ep.K_ls if ep.form == EP_LOAD else 0.0
    if growth >= 0.9:  # F_S would grow as fast as the torque: no breakaway to draw
        raise BamError("load-dependent stiction grows as fast as the load")
    top = 1.5 * ep.F_S / (1.0 - growth)
    ep = _ep_params(params, max_load=top)
    torque = np.linspace(0.0, top, steps)
    run = simulate_joint(ep, dt, inertia, torque)
    return run.q, torque


def _plot_friction(path: Path, results: list[ModelResult], train: list[BenchLog]) -> Path:
    plt = _pyplot()
    ep_results = [r for r in results if r.params.model.elastoplastic]
    cols = 2 if ep_results else 1
    fig, axes = plt.subplots(1, cols, figsize=(5.5 * cols, 4.0), squeeze=False)
    ax = axes[0, 0]
    speeds = [np.abs(log.velocity).max() for log in train if log.velocity is not None]
    top = max(speeds) if speeds else 3.0
    velocity = np.linspace(0.0, top, 300)[1:]
    for r in results:
        level = friction_curve(r.params, velocity)
        (line,) = ax.plot(velocity, level, lw=1.2, label=r.model.upper())
        ax.plot(-velocity, -level, lw=1.2, color=line.get_color())
        # At rest friction holds anything up to its static level: a vertical segment.
        at_rest = _static_level(r.params, 0.0)
        ax.plot([0.0, 0.0], [-at_rest, at_rest], color=line.get_color(), lw=0.8, ls=":")
    ax.set_xlabel(r"joint velocity $\dot q$ [rad/s]")
    ax.set_ylabel("friction at zero load [N·m]")
    ax.set_title("budget (M1..M6) / Φ(v) (elasto-plastic)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    if ep_results:
        _plot_pre_sliding(axes[0, 1], ep_results, train)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_pre_sliding(ax, results: list[ModelResult], train: list[BenchLog]) -> None:
    widest = 0.0
    for r in results:
        ep = _ep_params(r.params)
        try:
            q, torque = pre_sliding_curve(r.params, train[0].dt,
                                          _smallest_inertia(r.params, train))
        except BamError:
            continue  # not drawable at this step (the fit's logs did not check it)
        (line,) = ax.plot(q * 1e3, torque, lw=1.2,
                          label=f"{r.model.upper()}: F_S/K = {ep.F_S / ep.K * 1e3:.3g} mrad")
        ax.axvline(ep.F_S / ep.K * 1e3, color=line.get_color(), lw=0.8, ls=":")
        widest = max(widest, ep.F_S / ep.K)
    if widest > 0.0:
        ax.set_xlim(0.0, 4.0 * widest * 1e3)
    ax.set_xlabel("displacement [mrad]")
    ax.set_ylabel("applied torque [N·m]")
    ax.set_title("pre-sliding: slow torque ramp from rest", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value)}")


