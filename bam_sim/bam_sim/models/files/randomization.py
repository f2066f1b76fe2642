"""Randomization that travels: a fitted set's sensitivity intervals for the RL stacks.

``fit`` stores with every set, in its provenance (``provenance.sensitivity``), the
interval of each identified parameter where the training error stays within a chosen
percentage of the fit's, the others held (``bam_identify.fitting.sensitivity``), the
same for the whole friction budget scaled, and the supply voltages of the training logs.
``export --format bam-json`` writes them in two forms:

* :func:`sensitivity_json`: BAM's ``<stem>_sensitivity.json`` beside the BAM JSON, the
  file ``bam.mjlab.BamActuatorCfg(sensitivity_randomization=True)`` reads. Layout as
  read in Rhoban/bam, branch 4traj_xl330, commit
  25faf46051a973a86bc42b5293690576c6af01ce (``bam/sensitivity.py`` writes it,
  ``bam/mjlab.py`` ``BamActuator._load_sensitivity_ranges`` reads it): a top-level
  ``"sensitivity"`` object maps each BAM parameter name to ``{"value", "lower",
  "upper", "lower_clamped", "upper_clamped"}``; mjlab samples each parameter uniformly
  in [lower, upper] per environment at every reset, skipping ``armature``,
  ``q_offset``, names the model lacks and empty ranges. The file also carries
  ``model``, ``actuator``, ``params``, ``base_mae``, ``tolerance`` (a fraction) and
  ``threshold_mae`` as BAM writes them.
* :func:`randomization_yaml`: the ranges of the randomization terms of BAM's mjlab
  ``BamActuatorCfg`` (same commit: ``vin_range``, ``vin_drop_resistance_range``,
  ``vin_min``, ``delay_min_lag``/``delay_max_lag`` in simulation steps) and of Isaac
  Lab's ``BamActuatorCfg`` (isaac-sim/IsaacLab
  ``source/isaaclab/isaaclab/actuators/actuator_bam_cfg.py`` at commit
  0120677cbb1cbf3dd08a1c418ce188316751eff2: ``vin_range``, ``vin_drop_gain_range``
  in V/(N·m), ``vin_min``, ``min_delay``/``max_delay`` in physics steps; its
  ``friction_scale_range``, one factor on the whole friction budget, as the MicroDuck
  configuration of ``isaaclab_assets`` sets it).
"""

from __future__ import annotations

import json
import math

import yaml

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models.parameter_set import ParameterSet

# Our names whose BAM name differs (bam_json's COMMAND_DELAY).
_BAM_NAMES = {"latency.command": "command_delay"}
_INTERVAL_KEYS = ("value", "lower", "upper")


def sensitivity_of(params: ParameterSet) -> dict | None:
    """The set's ``provenance.sensitivity`` checked (None when the fit gave none)."""
    found = params.provenance.get("sensitivity")
    if found is None:
        return None
    where = "provenance.sensitivity of the set"
    if not isinstance(found, dict) or not isinstance(found.get("parameters"), dict):
        raise BamError(f"{where} is not a mapping with \"parameters\"; refit the set")
    for name, interval in found["parameters"].items():
        _check_interval(interval, f"{where}, parameter {name}")
    return found


def _check_interval(interval: object, where: str) -> None:
    if not isinstance(interval, dict) or any(k not in interval for k in _INTERVAL_KEYS):
        raise BamError(f"{where} must give value, lower and upper")
    low, value, high = (number(interval[k], f"{where}: {k}") for k in
                        ("lower", "value", "upper"))
    if not low <= value <= high:
        raise BamError(f"{where}: lower {low:g} <= value {value:g} <= upper {high:g} "
                       "does not hold")


def sensitivity_json(params: ParameterSet, bam_json_text: str, params_name: str) -> str:
    """BAM's ``*_sensitivity.json`` of ``params``, beside the BAM JSON ``params_name``
    whose text is ``bam_json_text`` (only the parameters that file holds)."""
    found = sensitivity_of(params)
    if found is None:
        raise BamError("the set carries no sensitivity intervals (provenance.sensitivity); "
                       "fit it again to get them")
    doc = json.loads(bam_json_text)
    intervals = {}
    for name, interval in found["parameters"].items():
        key = _BAM_NAMES.get(name, name)
        if key in doc and "." not in key:  # a group's parameter (supply.*) is none of BAM's
            intervals[key] = {k: _plain(interval.get(k, False)) for k in
                              ("value", "lower", "upper", "lower_clamped", "upper_clamped")}
    out = {"model": doc["model"], "actuator": doc["actuator"], "params": params_name,
           "data": params.provenance.get("data"),
           "base_mae": float(found["base_mae"]), "tolerance": float(found["percent"]) / 100.0,
           "threshold_mae": float(found["threshold_mae"]), "sensitivity": intervals}
    return json.dumps(out, indent=2) + "\n"


def _plain(value: object) -> float | bool:
    return value if isinstance(value, bool) else float(value)


def randomization_yaml(params: ParameterSet, sim_dt: float, params_name: str) -> str:
    """The YAML snippet of randomization ranges (module docstring) at the simulator's
    physics step ``sim_dt`` (s)."""
    found = sensitivity_of(params)
    if found is None:
        raise BamError("--randomization: the set carries no sensitivity intervals "
                       "(provenance.sensitivity); fit it again to get them")
    ranges = _ranges(params, found)
    steps = [_steps(d, sim_dt) for d in ranges["command_delay"]]
    mjlab = {"vin_range": ranges["vin"], "vin_drop_resistance_range": ranges["drop"],
             "vin_min": ranges["vin_min"], "delay_min_lag": steps[0],
             "delay_max_lag": steps[1]}
    isaaclab = {"vin_range": ranges["vin"], "vin_drop_gain_range": _gain(ranges, params),
                "vin_min": ranges["vin_min"], "min_delay": steps[0], "max_delay": steps[1],
                "friction_scale_range": ranges["friction_scale"]}
    body = {"source": {"params": params_name, "actuator": params.actuator.name,
                       "model": params.model.name, "sensitivity_percent": found["percent"],
                       "sim_dt": sim_dt},
            "ranges": {"friction_scale": ranges["friction_scale"], "vin": ranges["vin"],
                       "vin_drop_resistance": ranges["drop"], "vin_min": ranges["vin_min"],
                       "command_delay": ranges["command_delay"]},
            "mjlab": mjlab, "isaaclab": isaaclab}
    return _header(found, sim_dt) + yaml.safe_dump(body, sort_keys=False)


def _ranges(params: ParameterSet, found: dict) -> dict:
    """The ranges in SI units: from the intervals, else the set's value at both ends."""
    intervals, values = found["parameters"], params.values
    scale = found.get("friction_scale")
    supply = found.get("supply_voltage") or [params.actuator.supply_voltage] * 2
    return {"friction_scale": _pair(scale) if scale else [1.0, 1.0],
            "vin": [float(v) for v in supply],
            "drop": _range_of("supply.resistance", intervals, values),
            "vin_min": (float(values["supply.min_voltage"])
                        if values.get("supply.min_voltage") else None),
            "command_delay": _range_of("latency.command", intervals, values) or [0.0, 0.0]}


def _range_of(name: str, intervals: dict, values: dict) -> list[float] | None:
    if name in intervals:
        return _pair(intervals[name])
    return [float(values[name])] * 2 if name in values else None


def _pair(interval: dict) -> list[float]:
    return [float(interval["lower"]), float(interval["upper"])]


def _gain(ranges: dict, params: ParameterSet) -> list[float] | None:
    """Isaac Lab's sag gain (V per N·m of Σ|τ|) of a series resistance R_s: the battery
    current at full duty is |τ|/k_t, so gain = R_s/k_t."""
    if ranges["drop"] is None:
        return None
    return [r / float(params.values["kt"]) for r in ranges["drop"]]


def _steps(delay: float, sim_dt: float) -> int:
    """A delay (s) in whole simulation steps, to the nearest."""
    return int(math.floor(delay / sim_dt + 0.5))


def _header(found: dict, sim_dt: float) -> str:
    units = found.get("population_units")
    how = ([f"How they were derived (fit --units: the type's value times exp(±2σ), σ the "
            f"spread of its {units} units on each unit parameter; the others at the type's):"]
           if units else
           ["How they were derived (fit --sensitivity, each parameter alone, the others at the",
            f"fit, within {found['percent']:g} % of the fit's training error):"])
    lines = [
        "Randomization ranges of an identified BAM servo, for the actuator configs of",
        "mjlab (bam.mjlab.BamActuatorCfg, Rhoban/bam 25faf46: vin_range,",
        "vin_drop_resistance_range, vin_min, delay_min_lag, delay_max_lag) and Isaac Lab",
        "(isaaclab.actuators.BamActuatorCfg, IsaacLab 0120677: vin_range,",
        "vin_drop_gain_range, vin_min, min_delay, max_delay; friction_scale_range).",
        *how,
        "- friction_scale: the factor on every friction magnitude of the model at once;",
        "- vin: the lowest and highest supply voltage of the training logs (the actuator's",
        "  nominal supply where no log recorded one): vin is not identified;",
        "- vin drop: the interval of the supply group's series resistance R_s (null when",
        "  the fit held no supply group); Isaac Lab's gain is R_s / kt (V per N·m);",
        "- vin_min: the supply group's min_voltage (null: none);",
        "- delays: the interval of latency.command (the command delay; the set's value at",
        "  both ends when the fit held it) in steps of sim_dt = "
        f"{sim_dt:g} s, to the nearest step.",
        "Each range holds for its term alone: randomizing all of them at once compounds.",
        "mjlab randomizes the other parameters itself from the *_sensitivity.json beside",
        "the BAM JSON (BamActuatorCfg(sensitivity_randomization=True)).",
    ]
    return "".join(f"# {line}\n" for line in lines)
