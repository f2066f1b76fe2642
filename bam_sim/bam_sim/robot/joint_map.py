"""The joint map: which servo drives each joint of a robot, and how a recording reads it.

A small YAML file the user writes beside the robot's MJCF (``joints.yaml``)::

    actuator_files: [my_servo.yaml]  # optional: servos declared in files (relative here)
    joints:                      # in the order of the recording's columns
      - joint: shoulder_pan      # the MJCF hinge (and the name in joint_states)
        actuator: sts3215        # a shipped actuator, or one of actuator_files
        gain: 32                 # firmware P gain, or "recorded" (bam/commands carry it)
        motor: shoulder_pan      # the MJCF <motor> driving it (default: the joint's name)
        type: sts3215            # joints of one type share a set (default: the actuator)
        model: m4                # its friction model (optional; fit --models overrides it)
        offset: 0.0              # rad, the reading at q = 0 (a robot fit identifies it)
        reading:                 # how a LeRobot column reads (default: rad, column = order)
          column: 0
          unit: deg              # rad, deg or ticks
          zero: 0.0              # the reading at q = 0, in its unit
          direction: 1           # -1 where the servo turns against the joint's axis

Names are resolved here, once: the map holds the registry's Actuator and FrictionModel
objects. Joints of one type share one parameter set, so they share an actuator and a
model. Every problem is one line naming the joint, the key and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import yaml

from bam_sim.common.errors import BamError, one_line
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import declare_file, get_actuator

UNITS = ("rad", "deg", "ticks")
RECORDED = "recorded"
DEFAULT_TICKS = 4096  # per turn: the STS and Dynamixel encoders
_JOINT_KEYS = {"joint", "actuator", "gain", "motor", "type", "reading", "offset", "model"}
_READING_KEYS = {"column", "unit", "zero", "direction", "ticks_per_turn"}


@dataclass(frozen=True)
class Reading:
    """How a dataset column holds a joint's position: q = direction·(value − zero)·scale."""

    column: int
    unit: str = "rad"
    zero: float = 0.0
    direction: float = 1.0
    ticks_per_turn: int = DEFAULT_TICKS

    @property
    def scale(self) -> float:
        """Radians per unit of the reading."""
        return {"rad": 1.0, "deg": math.pi / 180.0,
                "ticks": 2.0 * math.pi / self.ticks_per_turn}[self.unit]

    def to_radians(self, values: np.ndarray) -> np.ndarray:
        return self.direction * (np.asarray(values, dtype=float) - self.zero) * self.scale


@dataclass(frozen=True)
class RobotJoint:
    """One servo joint of a robot."""

    joint: str
    actuator: Actuator
    gain: float | None  # None: read from the recording
    motor: str
    servo_type: str
    reading: Reading
    offset: float = 0.0  # rad: the reading at q = 0 (the encoder's zero error)
    model: FrictionModel | None = None  # None: the fit's --models choose it


@dataclass(frozen=True)
class JointMap:
    """The servo joints of a robot, in the order of the recordings' columns."""

    joints: tuple[RobotJoint, ...]
    source: str = "<joint map>"

    @property
    def names(self) -> list[str]:
        return [j.joint for j in self.joints]

    def types(self) -> dict[str, list[int]]:
        """Each servo type and the indices of its joints, in order of first appearance."""
        types: dict[str, list[int]] = {}
        for i, j in enumerate(self.joints):
            types.setdefault(j.servo_type, []).append(i)
        return types

    @property
    def modelled(self) -> bool:
        """Whether the map gives every joint its friction model."""
        return all(j.model is not None for j in self.joints)

    def with_model(self, model: FrictionModel) -> JointMap:
        """The same map with ``model`` on every joint."""
        return JointMap(tuple(replace(j, model=model) for j in self.joints), self.source)

    def per_joint(self) -> JointMap:
        """The same map with one type per joint (a set per joint, not per servo type)."""
        return JointMap(tuple(replace(j, servo_type=j.joint) for j in self.joints), self.source)

    @property
    def offsets(self) -> np.ndarray:
        """Each joint's offset (n,), rad."""
        return np.array([j.offset for j in self.joints])

    def with_offsets(self, offsets: dict[str, float]) -> JointMap:
        """The same map with these joints' offsets (rad)."""
        return JointMap(tuple(replace(j, offset=float(offsets.get(j.joint, j.offset)))
                              for j in self.joints), self.source)

    def dump(self) -> str:
        """The map as a joint map file (YAML): what :func:`load_joint_map` reads back."""
        entries = []
        for j in self.joints:
            r = j.reading
            entries.append({"joint": j.joint, "actuator": j.actuator.name,
                            "gain": RECORDED if j.gain is None else j.gain, "motor": j.motor,
                            "type": j.servo_type, "offset": j.offset,
                            **({"model": j.model.name} if j.model is not None else {}),
                            "reading": {"column": r.column, "unit": r.unit, "zero": r.zero,
                                        "direction": int(r.direction),
                                        "ticks_per_turn": r.ticks_per_turn}})
        files = sorted({j.actuator.source for j in self.joints if j.actuator.source})
        head = {"actuator_files": files} if files else {}
        return yaml.safe_dump({**head, "joints": entries}, sort_keys=False)


def load_joint_map(path: str | Path) -> JointMap:
    """Read a joint map file (safe YAML); a one-line BamError on any problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BamError(f"cannot read the joint map {path}: {one_line(exc)}; "
                       "give the YAML file that maps joints to servos (--joints)") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BamError(f"joint map {path} is not valid YAML: {one_line(exc)}") from None
    return joint_map(doc, str(path), path.parent)


def joint_map(doc: object, source: str = "<joint map>", folder: Path | None = None) -> JointMap:
    """A JointMap from the parsed YAML document ``doc`` (see the module docstring);
    ``folder``: where relative actuator files are (the map's own, else the working one)."""
    entries = doc.get("joints") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise BamError(f"{source}: write a 'joints:' list, one entry per servo joint "
                       "(joint, actuator, gain), in the order of the recording's columns")
    unknown = sorted(set(doc) - {"joints", "actuator_files"}, key=str)
    if unknown:
        raise BamError(f"{source}: unknown key '{unknown[0]}'; a joint map holds 'joints' "
                       "and, optionally, 'actuator_files'")
    _declare_files(doc.get("actuator_files", []), source, folder)
    joints = tuple(_joint(entry, i, source) for i, entry in enumerate(entries))
    for what, values in (("joint", [j.joint for j in joints]), ("motor", [j.motor for j in joints]),
                         ("reading column", [j.reading.column for j in joints])):
        twice = sorted({v for v in values if values.count(v) > 1}, key=str)
        if twice:
            raise BamError(f"{source}: {what} {twice[0]!r} is given twice; map each joint once")
    _check_types(joints, source)
    return JointMap(joints, source)


def _declare_files(files: object, source: str, folder: Path | None) -> None:
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise BamError(f"{source}: 'actuator_files' must be a list of actuator file paths")
    for name in files:
        path = Path(name).expanduser()
        declare_file(path if path.is_absolute() or folder is None else folder / path)


def _check_types(joints: tuple[RobotJoint, ...], source: str) -> None:
    """Joints of one type share a parameter set: one actuator, one model."""
    first: dict[str, RobotJoint] = {}
    for j in joints:
        other = first.setdefault(j.servo_type, j)
        for what, mine, theirs in (("actuator", j.actuator, other.actuator),
                                   ("model", j.model, other.model)):
            if mine is not theirs:
                raise BamError(f"{source}: joints '{other.joint}' and '{j.joint}' are of type "
                               f"'{j.servo_type}' but their {what}s differ ({_named(theirs)}, "
                               f"{_named(mine)}); one type shares one set: give them the same "
                               f"{what} or types of their own")


def _named(record: Actuator | FrictionModel | None) -> str:
    return "none" if record is None else record.name


def _joint(entry: object, index: int, source: str) -> RobotJoint:
    where = f"{source}: joints[{index}]"
    if not isinstance(entry, dict):
        raise BamError(f"{where}: write a mapping with joint, actuator and gain")
    unknown = sorted(set(entry) - _JOINT_KEYS, key=str)
    if unknown:
        raise BamError(f"{where}: unknown key '{unknown[0]}'; the keys are "
                       f"{', '.join(sorted(_JOINT_KEYS))}")
    name = entry.get("joint")
    if not isinstance(name, str) or not name.strip():
        raise BamError(f"{where}: give the MJCF joint's name as 'joint'")
    where = f"{source}: joint '{name}'"
    if "actuator" not in entry:
        raise BamError(f"{where}: give its servo as 'actuator' (e.g. sts3215, xl330)")
    try:
        actuator = get_actuator(entry["actuator"])
    except BamError as exc:
        raise BamError(f"{where}: {exc}") from None
    gain = _gain(entry.get("gain"), actuator, where)
    motor = _name(entry.get("motor", name), "motor", where)
    servo_type = _name(entry.get("type", actuator.name), "type", where)
    reading = _reading(entry.get("reading", {}), index, where)
    offset = _number(entry.get("offset", 0.0), "offset", where)
    if abs(offset) > math.pi:
        raise BamError(f"{where}: offset {offset:g} rad is beyond half a turn; give it in rad")
    return RobotJoint(name, actuator, gain, motor, servo_type, reading, offset,
                      _model(entry.get("model"), where))


def _model(value: object, where: str) -> FrictionModel | None:
    if value is None:
        return None
    try:
        return get_model(str(value))
    except BamError as exc:
        raise BamError(f"{where}: {exc}") from None


def _name(value: object, key: str, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BamError(f"{where}: '{key}' must be a name, got {value!r}")
    return value


def _number(value: object, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BamError(f"{where}: '{key}' must be a finite number, got {value!r}")
    return float(value)


def _gain(value: object, actuator: Actuator, where: str) -> float | None:
    if value == RECORDED:
        return None
    if value is None:
        raise BamError(f"{where}: give the firmware gain as 'gain' (a number, e.g. "
                       f"{actuator.gains[0] if actuator.gains else 32:g}), or 'recorded' "
                       "where the recording carries it (bam/commands)")
    gain = _number(value, "gain", where)
    if not 0.0 < gain <= (actuator.gain_limit or math.inf):
        raise BamError(f"{where}: gain {gain:g} is outside (0, {actuator.gain_limit:g}] of "
                       f"the {actuator.name}")
    return gain


def _reading(value: object, index: int, where: str) -> Reading:
    if not isinstance(value, dict):
        raise BamError(f"{where}: 'reading' must be a mapping of "
                       f"{', '.join(sorted(_READING_KEYS))}")
    unknown = sorted(set(value) - _READING_KEYS, key=str)
    if unknown:
        raise BamError(f"{where}: unknown reading key '{unknown[0]}'; the keys are "
                       f"{', '.join(sorted(_READING_KEYS))}")
    column = value.get("column", index)
    if isinstance(column, bool) or not isinstance(column, int) or column < 0:
        raise BamError(f"{where}: reading column must be an index >= 0, got {column!r}")
    unit = value.get("unit", "rad")
    if unit not in UNITS:
        raise BamError(f"{where}: reading unit must be one of {', '.join(UNITS)}, got {unit!r}")
    direction = _number(value.get("direction", 1), "direction", where)
    if direction not in (1.0, -1.0):
        raise BamError(f"{where}: reading direction must be 1 or -1, got {direction:g}")
    ticks = value.get("ticks_per_turn", DEFAULT_TICKS)
    if isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 2:
        raise BamError(f"{where}: ticks_per_turn must be an integer >= 2, got {ticks!r}")
    zero = _number(value.get("zero", 0.0), "zero", where)
    return Reading(column, unit, zero, direction, ticks)
