"""Actuator files: a servo declared as data, in YAML.

Every shipped actuator is such a file (``shipped/*.yaml``), and a servo the project does
not ship needs one file and no code. A file, with every section::

    bam_actuator: 1                 # the format's version
    name: my_servo                  # lower case; parameter files and recordings name it
    title: My servo (7.4 V)
    law:                            # the firmware's control law
      family: voltage               # voltage (duty P law) | current (PD current law) | dcmotor
      supply_voltage: 7.4           # V
      duty_gain: 0.166              # voltage: duty per rad and unit of the gain
      max_duty: 0.97                # voltage: the PWM limit (fraction of full duty)
      firmware_current_limit: 0.0   # voltage: A the firmware holds the current to (0: none)
      max_voltage: 48.0             # current: U_max of the back-EMF limit
      damping: 1.0                  # current: the PD damping factor d
      current_gain: 1.0             # current: A per rad and unit of the gain (1: A/rad)
    commands:
      goal_range: [-3.14159, 3.14006]   # rad, the goals the servo accepts
      gain_limit: 254               # the largest firmware gain
      gain_unit: P register 0..254  # what one unit of that gain is (for the reader)
      encoder_resolution: 4096      # counts per turn, where no driver's table says it
    bench:                          # the default pendulum bench of the identification
      gains: [8, 16, 32, 64]
      masses: [0.2, 0.35, 0.5]      # kg
      lengths: [0.1, 0.15, 0.2]     # m
    identification:
      motor: {kt: [0.05, 2.5], R: [0.1, 10.0], armature: [1.0e-5, 0.04]}   # bounds
      fixed: {}                     # motor parameters held (e.g. the eRob's current_limit)
      scales: {friction: 0.5, viscous: 0.2}   # scales of the friction bounds
      friction: {}                  # single friction bounds that differ for this servo
      legacy_defaults: {}           # values a legacy BAM file that omits them takes
    hardware:                       # optional: the driver that runs it
      driver: feetech               # dynamixel | feetech | erob ("" or absent: none)
      control_table: sts3215        # a control table (drive model) of that driver
      emulator_model: m1            # the model its emulator simulates it with

The voltage law runs the Feetech STS firmware's target slew when ``max_velocity`` is among
the motor bounds (and its duty-gain factor with ``error_gain_ratio``). Files are read with
``yaml.safe_load``; every problem is one line naming the file, the key and the fix.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping
from pathlib import Path

from bam_sim.common.errors import BamError
from bam_sim.common.input_files import parse_yaml_text, read_text
from bam_sim.models.model_registry import FRICTION_MODELS, get_model
from bam_sim.models.servo.actuator import CURRENT, DCMOTOR, FAMILY_NAMES, VOLTAGE, Actuator

FORMAT_VERSION = 1
FAMILIES = {name: family for family, name in FAMILY_NAMES.items()}
DRIVERS = ("dynamixel", "feetech", "erob")
# Each family's motor parameters: those it needs (bounded or fixed), those it may take.
MOTOR_NEEDS = {VOLTAGE: ("kt", "R", "armature"), CURRENT: ("kt", "R", "armature",
               "current_limit"), DCMOTOR: ("motorconst", "resistance", "armature")}
MOTOR_MAY = {VOLTAGE: ("error_gain_ratio", "max_velocity"), CURRENT: (), DCMOTOR: ()}
SCALES = ("friction", "viscous", "stiffness", "damping", "current", "thermal")
FRICTION_PARAMS = tuple(sorted({p for m in FRICTION_MODELS.values() for p in m.params}))
# section -> {key in the file: Actuator field}
SECTIONS: dict[str, dict[str, str]] = {
    "law": {k: k for k in ("family", "supply_voltage", "duty_gain", "max_duty",
                           "firmware_current_limit", "max_voltage", "damping",
                           "current_gain")},
    "commands": {k: k for k in ("goal_range", "gain_limit", "gain_unit",
                                "encoder_resolution")},
    "bench": {k: k for k in ("gains", "masses", "lengths")},
    "identification": {"motor": "motor_bounds", "fixed": "fixed", "scales": "scales",
                       "friction": "friction_bounds", "legacy_defaults": "legacy_defaults"},
    "hardware": {k: k for k in ("driver", "control_table", "emulator_model")},
}
_TOP = ("bam_actuator", "name", "title", *SECTIONS)
_NEEDED = {"law": ("family", "supply_voltage"), "commands": ("goal_range", "gain_limit"),
           "bench": ("gains", "masses", "lengths"), "identification": ("motor",)}


def load_actuator_file(path: str | os.PathLike) -> Actuator:
    """The actuator ``path`` declares (not yet registered: see ``actuators.declare_file``)."""
    path = Path(path)
    doc = parse_yaml_text(read_text(path, "actuator file"), f"actuator file {path}")
    return parse_actuator(doc, str(path), source=str(path.resolve()))


def parse_actuator(doc: object, where: str, source: str = "") -> Actuator:
    """The actuator of a parsed actuator file (``source``: the file, for references)."""
    where = f"actuator file {where}"
    if not isinstance(doc, Mapping):
        raise BamError(f"{where} must be a mapping with name, title, law, commands, bench and "
                       "identification")
    _known(doc, _TOP, where)
    if doc.get("bam_actuator") != FORMAT_VERSION:
        raise BamError(f"{where}: write 'bam_actuator: {FORMAT_VERSION}' (the format's "
                       f"version), got {doc.get('bam_actuator')!r}")
    name, title = _text(doc.get("name"), "name", where), _text(doc.get("title"), "title", where)
    if name != name.strip().lower() or not name.replace("_", "").isalnum():
        raise BamError(f"{where}: name '{name}' must be lower-case letters, digits and '_'")
    fields: dict[str, object] = {}
    for section, keys in SECTIONS.items():
        block = doc.get(section, {})
        if not isinstance(block, Mapping):
            raise BamError(f"{where}: '{section}' must be a mapping")
        _known(block, keys, f"{where}: {section}")
        for key in _NEEDED.get(section, ()):
            if key not in block:
                raise BamError(f"{where}: {section} needs '{key}'")
        for key, value in block.items():
            fields[keys[key]] = _VALUE[keys[key]](value, f"{where}: {section}.{key}")
    actuator = Actuator(name=name, title=title, source=source, **fields)
    _check_law(actuator, where)
    return actuator


def actuator_document(actuator: Actuator) -> dict:
    """The file's mapping of ``actuator`` (what :func:`parse_actuator` reads back)."""
    doc: dict[str, object] = {"bam_actuator": FORMAT_VERSION, "name": actuator.name,
                              "title": actuator.title}
    for section, keys in SECTIONS.items():
        block = {}
        for key, attr in keys.items():
            value = getattr(actuator, attr)
            if attr == "family":
                value = FAMILY_NAMES[value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, dict):
                value = {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
            block[key] = value
        doc[section] = block
    return doc


def _check_law(a: Actuator, where: str) -> None:
    """What the family's law needs: its constants, its motor parameters, the driver."""
    if a.family == VOLTAGE and not (a.duty_gain > 0.0 and 0.0 < a.max_duty <= 1.0):
        raise BamError(f"{where}: the voltage law needs law.duty_gain > 0 and law.max_duty "
                       "in (0, 1]")
    if a.family == CURRENT and not a.max_voltage > 0.0:
        raise BamError(f"{where}: the current law needs law.max_voltage > 0 (V)")
    motor = {*a.motor_bounds, *a.fixed}
    missing = [p for p in MOTOR_NEEDS[a.family] if p not in motor]
    if missing:
        raise BamError(f"{where}: the {FAMILY_NAMES[a.family]} law needs '{missing[0]}' in "
                       "identification.motor (bounds) or identification.fixed")
    allowed = MOTOR_NEEDS[a.family] + MOTOR_MAY[a.family]
    _known(motor, allowed, f"{where}: identification.motor/fixed ({FAMILY_NAMES[a.family]} law)")
    both = sorted(set(a.motor_bounds) & set(a.fixed))
    if both:
        raise BamError(f"{where}: '{both[0]}' is both bounded and fixed; keep one")
    if a.control_table and not a.driver:
        raise BamError(f"{where}: hardware.control_table needs hardware.driver "
                       f"({', '.join(DRIVERS)})")
    if a.driver and not (a.control_table and a.emulator_model):
        raise BamError(f"{where}: hardware.driver {a.driver} needs hardware.control_table and "
                       "hardware.emulator_model")


def _known(block: Mapping, keys, where: str) -> None:
    for key in block:
        if key not in keys:
            close = difflib.get_close_matches(str(key), [str(k) for k in keys], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise BamError(f"{where}: unknown key '{key}'{hint}; the keys are "
                           f"{', '.join(map(str, keys))}")


def _text(value: object, where: str, file: str = "") -> str:
    if not isinstance(value, str) or not value.strip():
        raise BamError(f"{file + ': ' if file else ''}{where} must be a non-empty text, "
                       f"got {value!r}")
    return value.strip()


def _number(value: object, where: str, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < low:
        raise BamError(f"{where} must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def _positive(value: object, where: str) -> float:
    x = _number(value, where)
    if x <= 0.0:
        raise BamError(f"{where} must be > 0, got {value!r}")
    return x


def _numbers(value: object, where: str) -> tuple[float, ...]:
    if not isinstance(value, list) or not value:
        raise BamError(f"{where} must be a non-empty list of numbers > 0, got {value!r}")
    return tuple(_positive(v, where) for v in value)


def _range(value: object, where: str) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise BamError(f"{where} must be [low, high], got {value!r}")
    low, high = (_number(v, where, low=-math.inf) for v in value)
    if not low < high:
        raise BamError(f"{where} must be [low, high] with low < high, got {value!r}")
    return low, high


def _bounds(value: object, where: str) -> dict[str, tuple[float, float]]:
    if not isinstance(value, Mapping):
        raise BamError(f"{where} must map a parameter to [low, high]")
    return {str(k): _range(v, f"{where}.{k}") for k, v in value.items()}


def _values(value: object, where: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise BamError(f"{where} must map a name to a number")
    return {str(k): _number(v, f"{where}.{k}", low=-math.inf) for k, v in value.items()}


def _scales(value: object, where: str) -> dict[str, float]:
    scales = _values(value, where)
    _known(scales, SCALES, where)
    return {k: _positive(v, f"{where}.{k}") for k, v in scales.items()}


def _friction(value: object, where: str) -> dict[str, tuple[float, float]]:
    bounds = _bounds(value, where)
    _known(bounds, FRICTION_PARAMS, where)
    return bounds


def _family(value: object, where: str) -> int:
    if value not in FAMILIES:
        raise BamError(f"{where} must be one of {', '.join(FAMILIES)}, got {value!r}")
    return FAMILIES[value]


def _choice(choices: tuple[str, ...]):
    def check(value: object, where: str) -> str:
        if value in ("", None):
            return ""
        if value not in choices:
            raise BamError(f"{where} must be one of {', '.join(choices)}, got {value!r}")
        return str(value)
    return check


def _model(value: object, where: str) -> str:
    if value in ("", None):
        return ""
    try:
        return get_model(str(value)).name
    except BamError as exc:
        raise BamError(f"{where}: {exc}") from None


def _resolution(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BamError(f"{where} must be a whole number of counts per turn >= 0, "
                       f"got {value!r}")
    return value


def _optional_text(value: object, where: str) -> str:
    return "" if value in ("", None) else _text(value, where)


_VALUE = {
    "family": _family, "supply_voltage": _positive, "duty_gain": _number,
    "max_duty": _number, "firmware_current_limit": _number, "max_voltage": _number,
    "damping": _number, "current_gain": _positive, "goal_range": _range,
    "gain_limit": _positive, "gain_unit": _optional_text, "encoder_resolution": _resolution,
    "gains": _numbers,
    "masses": _numbers, "lengths": _numbers, "motor_bounds": _bounds, "fixed": _values,
    "scales": _scales, "friction_bounds": _friction, "legacy_defaults": _values,
    "driver": _choice(DRIVERS), "control_table": _optional_text, "emulator_model": _model,
}
