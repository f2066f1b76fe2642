"""Bench logs of the published BAM implementation (one JSON file per trajectory run).

Two forms exist. A *raw* log, as its recorders write it: top-level ``mass``,
``length``, ``kp``, ``motor``, ``trajectory`` and ``entries``; Dynamixel logs
add the supply voltage ``vin`` and spell the arm mass ``"arm-mass"``, eRob
logs spell it ``"arm_mass"`` and add the PD ``damping``. Each entry holds
``timestamp`` (s), ``position`` (rad), ``speed`` (rad/s), ``goal_position``
(rad) and ``torque_enable``, plus hardware readings (Dynamixel: ``load``,
``input_volts``, ``temp``; eRob: ``torque_demand`` and ``control``, the
measured current in A). A *processed* log is the same resampled onto
t = 0, Δt, 2Δt, ... with a top-level ``dt`` and a thresholded torque enable.

Everything a log carries is read; each reading is optional (a log without
it still reads) and checked where present:

* ``vin``: the supply of the recording (V), the log's condition for the
  voltage law; a given value is refused when not a plausible voltage, whatever
  the actuator, never replaced by the actuator's default.
* ``input_volts``: the bus's reading of the input voltage (V), on which a fit
  of the supply group is scored (``--groups supply`` needs it in some log). A
  servo that answers runs on it: 0 V or less is refused, and so is more than the
  nominal supply's range (:func:`~bam_identify.data.plausibility.check_reading`).
* ``temp``: the temperature the servo reports (°C). It is the servo's own
  sensor (on its board, near the motor), not the winding: it lags the winding
  and reads in whole degrees. Sets with the thermal group start their winding
  temperature from its first value and are scored on it. A reading outside the
  range a servo runs in, or a change faster than a winding heats, is refused.
* ``speed``: rad/s. Every recorder of the published implementation converts
  the velocity register (the XL330's 0.229 rpm per count shows as the 0.024
  rad/s step of its logs), so it is kept as it is.
* ``load``: a firmware register whose unit the actuator defines
  (:mod:`bam_identify.data.legacy_load`), read as a signed fraction of its full
  scale; not read for an actuator that defines none.

:func:`read_legacy_log` turns either into a :class:`BenchLog`;
:func:`write_legacy_log` writes the processed form, which the published
implementation loads directly (benchmarks, comparisons).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from bam_identify.data import resample
from bam_identify.data.legacy_load import LOAD_UNITS, load_counts, load_fraction
from bam_identify.data.plausibility import (
    MAX_PERIOD,
    MIN_PERIOD,
    Conditions,
    Source,
    check_reading,
    check_series,
    check_times,
    checked_field,
    conditions,
    sampling_period,
)
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import write_atomic
from bam_sim.models.servo.actuator import CURRENT, VOLTAGE, Actuator
from bam_sim.models.servo.actuators import get_actuator

REQUIRED = ("mass", "length", "kp", "motor", "entries")
ENTRY_REQUIRED = ("timestamp", "position", "goal_position", "torque_enable")
# Entry fields that are bench series, and their kind for the plausibility checks.
SERIES_KINDS = {"position": "position", "speed": "velocity", "goal_position": "goal position",
                "control": "control"}
# Entry fields that are readings of the servo's own sensors, with physical ranges.
READING_KINDS = {"input_volts": "input voltage", "temp": "temperature"}
# Optional entry fields: a log has each in all its entries or in none.
OPTIONAL = ("speed", "control", "input_volts", "temp", "load")
# A processed log's timestamps are k·dt up to the rounding of their recorder.
DT_TOLERANCE = 0.01


def _column(entries: list, key: str, where: str, required: bool = True) -> np.ndarray | None:
    """Entry field ``key`` as floats; None when no entry has it and it is optional."""
    present = [key in entry for entry in entries]
    if not any(present) and not required:
        return None
    if not all(present):
        k = present.index(False)
        raise BamError(f"{where}: entry {k} lacks '{key}'; every entry needs "
                       f"{', '.join(ENTRY_REQUIRED)} (and {', '.join(OPTIONAL)} in all or none)")
    values = np.empty(len(entries))
    for k, entry in enumerate(entries):
        value = entry[key]
        if isinstance(value, bool) and key == "torque_enable":
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BamError(f"{where}: entry {k}: '{key}' must be a number, got {value!r}")
        values[k] = value
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        k = int(bad[0])
        raise BamError(f"{where}: '{key}' is {values[k]} at entry {k}; repair or drop that "
                       "sample")
    return values


def _parse(path: Path) -> dict:
    where = f"legacy log {path}"
    if not path.is_file():
        raise BamError(f"{where} does not exist; give a .json file or a folder of them")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise BamError(f"{where} is not valid JSON ({err.msg} at line {err.lineno}); give a "
                       "BAM log file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BamError(f"cannot read {where} ({err}); check the file") from None
    if not isinstance(doc, dict):
        raise BamError(f"{where} is not a BAM log (expected a JSON object with "
                       f"{', '.join(REQUIRED)})")
    missing = [key for key in REQUIRED if key not in doc]
    if missing:
        raise BamError(f"{where} lacks {', '.join(repr(k) for k in missing)}; a BAM log holds "
                       f"{', '.join(REQUIRED)}")
    return doc


def _source(path: Path, doc: dict) -> Source:
    arm_key = "arm_mass" if "arm_mass" in doc else "arm-mass"
    return Source(f"legacy log {path}", "repair the log",
                  {"mass": "'mass'", "length": "'length'", "arm_mass": f"'{arm_key}'",
                   "kp": "'kp'", "supply_voltage": "'vin'", "damping": "'damping'",
                   "dt": "'dt'"})


def _conditions(act: Actuator, doc: dict, source: Source) -> Conditions:
    """The checked bench description of ``doc``; a field it lacks stays the default."""
    arm_mass = doc.get("arm_mass", doc.get("arm-mass", 0.0))
    damping = doc.get("damping") if act.family == CURRENT else None
    for key in ("vin", "damping"):
        if key in doc and doc[key] is None:  # None below means "not in the log"
            raise source.fail(f"'{key}' is null", "give a number or leave the field out")
    return conditions(act, source, doc["mass"], doc["length"], arm_mass, doc["kp"],
                      supply_voltage=doc.get("vin"), damping=damping)


def _entry(k: int) -> str:
    return f"entry {k}"


def _series(entries: list, where: str, source: Source,
            act: Actuator) -> tuple[np.ndarray, dict]:
    """(timestamps, entry columns by key), each checked for plausibility."""
    time = _column(entries, "timestamp", where)
    check_times(time, "timestamps", source, _entry)
    series = {key: _column(entries, key, where) for key in ("position", "goal_position",
                                                              "torque_enable")}
    for key in OPTIONAL:
        series[key] = _column(entries, key, where, required=False)
    for key, kind in SERIES_KINDS.items():
        if series[key] is not None:
            check_series(series[key], kind, f"'{key}'", source, _entry)
    for key, kind in READING_KINDS.items():
        if series[key] is not None:
            check_reading(series[key], time, kind, f"'{key}'", source, _entry, act,
                          f"repair the log, or drop '{key}' from every entry (the fit then "
                          "does without it)")
    # Decoded before any resampling: the register's sign is per recorded sample.
    unit = LOAD_UNITS.get(act.name)
    if series["load"] is not None and unit is not None:
        series["load"] = load_fraction(series["load"], unit, source, _entry)
    else:
        series["load"] = None  # no unit the actuator defines: the counts mean nothing here
    return time, series


def read_legacy_log(path: str | os.PathLike, dt: float = 0.005) -> BenchLog:
    """One JSON log (raw or processed) as a bench log on the time step ``dt`` (s).

    Raw logs are resampled from their first timestamp; processed logs are
    kept as they are when their ``dt`` is ``dt``, resampled otherwise. The
    bench, gain, supply, series and timestamps pass the plausibility checks
    bags pass (:mod:`bam_identify.data.plausibility`).
    """
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0.0):
        raise BamError(f"time step dt must be a finite number > 0 s, got {dt}")
    path = Path(path)
    where = f"legacy log {path}"
    doc = _parse(path)
    try:
        act = get_actuator(doc["motor"])
    except BamError as err:
        raise BamError(f"{where}: {err}") from None
    source = _source(path, doc)
    cond = _conditions(act, doc, source)
    entries = doc["entries"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise BamError(f"{where}: 'entries' must be a list of objects")
    if len(entries) < 2:
        raise BamError(f"{where}: needs at least 2 entries, got {len(entries)}")
    time, series = _series(entries, where, source, act)

    processed = "dt" in doc
    if processed:
        file_dt = _file_dt(doc["dt"], time, source)
    if processed and abs(file_dt - dt) <= 1e-9 * dt:
        values = dict(series)
        enabled = series["torque_enable"] > 0.5
    else:
        t = time - time[0]
        at = resample.grid(t[-1], dt)
        if at.size < 2:
            raise BamError(f"{where}: spans {t[-1]} s, fewer than 2 samples at dt = {dt} s")
        values = {key: None if v is None else resample.interpolate(at, t, v)
                  for key, v in series.items()}
        enabled = resample.interpolate_enable(at, t, series["torque_enable"])
    trajectory = str(doc.get("trajectory", "unknown"))
    meta = {"trajectory": trajectory, "gain": cond.kp, "source": str(path),
            "actuator": act.name, "bench_source": "legacy",
            "format": "processed" if processed else "raw"}
    if values["load"] is not None:
        meta["load"] = LOAD_UNITS[act.name].meaning
    return BenchLog(
        bench=cond.bench, kp=cond.kp, dt=float(dt), goal=values["goal_position"],
        enabled=enabled, position=values["position"], velocity=values["speed"],
        control=values["control"], name=f"{path.stem}:{trajectory}", meta=meta,
        supply_voltage=cond.supply_voltage, damping=cond.damping,
        temperature=values["temp"], input_voltage=values["input_volts"],
        load=values["load"],
    )


def _file_dt(value: object, time: np.ndarray, source: Source) -> float:
    """A processed log's ``dt``: a number, and the interval of its timestamps."""
    file_dt = checked_field(source, "dt", value, "s", low=MIN_PERIOD, high=MAX_PERIOD)
    period = sampling_period(time)
    if not abs(period - file_dt) <= DT_TOLERANCE * file_dt:
        raise source.fail(f"'dt' is {file_dt:g} s but its timestamps are {period:g} s apart",
                          "make 'dt' the interval of the timestamps, or drop 'dt' to have "
                          "the log resampled as a raw one")
    return file_dt


def _json_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise BamError(f"folder {path} holds no .json log; give log files or their folder")
        return files
    if not path.exists():
        raise BamError(f"legacy log {path} does not exist; give a .json file or a folder of them")
    return [path]


def legacy_log_files(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Path]:
    """The .json files named by ``paths`` (files, or folders of *.json, sorted)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [f for p in paths for f in _json_files(Path(p))]


def read_legacy_logs(paths: str | os.PathLike | Iterable[str | os.PathLike],
                     dt: float = 0.005) -> list[BenchLog]:
    """Every log of ``paths`` (files or folders of *.json files), in order."""
    return [read_legacy_log(f, dt) for f in legacy_log_files(paths)]


def write_legacy_log(path: str | os.PathLike, log: BenchLog, actuator: Actuator,
                     trajectory: str, overwrite: bool = False) -> Path:
    """Write ``log`` as a processed JSON log of the published implementation.

    Holds both spellings of the arm mass (``arm_mass`` for its bench model and
    loader, ``"arm-mass"`` as its Dynamixel recorder writes it), ``vin`` for
    voltage-controlled and ``damping`` for current-controlled actuators, and the
    readings ``log`` holds (``input_volts``, ``temp``, ``load`` in the register counts
    of the actuator), so that :func:`read_legacy_log` reads them back.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise BamError(f"{path} already exists; choose another path or allow overwriting "
                       "(--force)")
    if log.position is None:
        name = f" '{log.name}'" if log.name else ""
        raise BamError(f"log{name} has no recorded positions; simulate or record it first")
    doc: dict[str, object] = {
        "mass": float(log.bench.mass), "arm_mass": float(log.bench.arm_mass),
        "arm-mass": float(log.bench.arm_mass), "length": float(log.bench.length),
        "kp": float(log.kp), "motor": actuator.name, "trajectory": str(trajectory),
        "dt": float(log.dt),
    }
    if actuator.family == VOLTAGE:
        doc["vin"] = float(log.supply_voltage if log.supply_voltage is not None
                           else actuator.supply_voltage)
    else:
        doc["damping"] = float(log.damping if log.damping is not None else actuator.damping)
    unit = LOAD_UNITS.get(actuator.name)
    load = load_counts(log.load, unit) if log.load is not None and unit else None
    entries = []
    for k in range(len(log)):
        entry = {"timestamp": k * log.dt, "position": float(log.position[k])}
        if log.velocity is not None:
            entry["speed"] = float(log.velocity[k])
        entry["goal_position"] = float(log.goal[k])
        entry["torque_enable"] = bool(log.enabled[k])
        if log.control is not None:
            entry["control"] = float(log.control[k])
        if log.input_voltage is not None:
            entry["input_volts"] = float(log.input_voltage[k])
        if log.temperature is not None:
            entry["temp"] = float(log.temperature[k])
        if load is not None:
            entry["load"] = float(load[k])
        entries.append(entry)
    doc["entries"] = entries
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, allow_nan=False))
    return path
