"""Identification protocol: which bench trajectories to play, at which gains, how often.

A protocol is read from YAML (``yaml.safe_load``, never evaluated)::

    protocol:
      trajectories: [lift_drop, raise_lower]   # cross product of these ...
      gains: [8, 16]                           # ... and these gains,
      repetitions: 2                           # each played this many times
      duration: 6.0                            # s per run (optional)
      settle: 0.5                              # s at the start pose before a run (optional)
      runs:                                    # optional explicit runs, played after
        - {trajectory: steps, gain: 32, repetitions: 1}
        - {trajectory: heat_cool, gain: 16, duration: 300}   # a run's own duration

The schedule is the cross product trajectory × gain × repetition in that order
(trajectory-major, as written), followed by the explicit ``runs``. A run's
``repetition`` counts the earlier runs of the same trajectory and gain, so
(trajectory, gain, repetition) is unique within a schedule. ``duration`` and
``settle`` left out are taken from the trajectory node's parameters.

Every problem raises :class:`bam_sim.common.errors.BamError` with a one-line message.
No ROS import: the trajectory node plays the schedule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from bam_sim.bench.trajectory import TRAJECTORIES, get_trajectory
from bam_sim.common.errors import BamError, one_line

PROTOCOL_KEYS = ("trajectories", "gains", "repetitions", "duration", "settle", "runs")
RUN_KEYS = ("trajectory", "gain", "repetitions", "duration")
MAX_RUNS = 100_000  # runs a schedule may hold: beyond, a typo rather than a plan


@dataclass(frozen=True)
class Run:
    """One trajectory run of a schedule."""

    trajectory: str  # canonical name, a key of bam_sim.bench.trajectory.TRAJECTORIES
    gain: float  # kp as used by the firmware/host
    repetition: int  # 0 for the first run of this trajectory and gain
    duration: float | None = None  # s; None: the protocol's (or the node's) duration


@dataclass(frozen=True)
class Protocol:
    """A schedule of runs; ``duration``/``settle`` None: the node's parameters decide."""

    runs: tuple[Run, ...]
    duration: float | None = None
    settle: float | None = None

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)


def check_trajectory(name: object, where: str) -> str:
    """The canonical name of trajectory ``name``; unknown names list the known ones."""
    if not isinstance(name, str) or not name.strip():
        raise BamError(f"{where}: a trajectory must be a name, got {name!r}; choose one of "
                       f"{', '.join(TRAJECTORIES)}")
    try:
        return get_trajectory(name).name
    except BamError as err:
        raise BamError(f"{where}: {err}") from None


def check_gain(value: object, where: str) -> float:
    """``value`` as a finite gain > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BamError(f"{where}: a gain must be a number, got {value!r}")
    gain = float(value)
    if not (math.isfinite(gain) and gain > 0.0):
        raise BamError(f"{where}: a gain must be a finite number > 0, got {value!r}")
    return gain


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BamError(f"{where}: repetitions must be a whole number >= 1, got {value!r}")
    return int(value)


def _seconds(value: object, where: str, what: str, minimum_ok: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BamError(f"{where}: {what} must be a number of seconds, got {value!r}")
    seconds = float(value)
    ok = seconds >= 0.0 if minimum_ok else seconds > 0.0
    if not (math.isfinite(seconds) and ok):
        bound = ">= 0" if minimum_ok else "> 0"
        raise BamError(f"{where}: {what} must be a finite number {bound} s, got {value!r}")
    return seconds


def _as_list(value: object, where: str, what: str) -> list:
    """A YAML list, or a single item as a list of one."""
    if isinstance(value, list):
        return value
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    raise BamError(f"{where}: {what} must be a list, got {value!r}")


def _check_keys(data: Mapping, known: tuple[str, ...], where: str) -> None:
    unknown = [key for key in data if key not in known]
    if unknown:
        raise BamError(f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(known)}")


def parse_protocol(data: object, where: str = "protocol") -> Protocol:
    """The schedule described by ``data`` (the YAML document, with or without ``protocol:``)."""
    if isinstance(data, Mapping) and "protocol" in data:
        if len(data) != 1:
            other = next(key for key in data if key != "protocol")
            raise BamError(f"{where}: unknown top-level key {other!r}; put everything under "
                           "'protocol'")
        data = data["protocol"]
        where = f"{where}: protocol"
    if not isinstance(data, Mapping):
        raise BamError(f"{where}: expected a mapping with keys {', '.join(PROTOCOL_KEYS)}, "
                       f"got {type(data).__name__}")
    _check_keys(data, PROTOCOL_KEYS, where)
    trajectories = [check_trajectory(name, f"{where}: trajectories")
                    for name in _as_list(data.get("trajectories", []), where, "trajectories")]
    gains = [check_gain(gain, f"{where}: gains")
             for gain in _as_list(data.get("gains", []), where, "gains")]
    repetitions = _count(data.get("repetitions", 1), where)
    if bool(trajectories) != bool(gains):
        missing = "gains" if trajectories else "trajectories"
        raise BamError(f"{where}: trajectories and gains go together; give {missing} too (or "
                       "use 'runs')")
    pairs = [(name, gain, repetitions, None) for name in trajectories for gain in gains]
    runs = data.get("runs", [])
    if not isinstance(runs, list):
        raise BamError(f"{where}: runs must be a list of {{trajectory, gain, repetitions}}, "
                       f"got {runs!r}")
    for i, item in enumerate(runs):
        label = f"{where}: runs[{i}]"
        if not isinstance(item, Mapping):
            raise BamError(f"{label}: expected a mapping {{trajectory, gain, repetitions}}, "
                           f"got {item!r}")
        _check_keys(item, RUN_KEYS, label)
        for key in ("trajectory", "gain"):
            if key not in item:
                raise BamError(f"{label}: missing '{key}'")
        own = (_seconds(item["duration"], label, "duration", minimum_ok=False)
               if "duration" in item else None)
        pairs.append((check_trajectory(item["trajectory"], label),
                      check_gain(item["gain"], label), _count(item.get("repetitions", 1), label),
                      own))
    if not pairs:
        raise BamError(f"{where}: the schedule is empty; give trajectories and gains, or runs")
    size = sum(count for _, _, count, _ in pairs)
    if size > MAX_RUNS:
        raise BamError(f"{where}: the schedule holds {size} runs, more than {MAX_RUNS} "
                       "(weeks of bench time); lower the repetitions")
    done: dict[tuple[str, float], int] = {}
    schedule = []
    for name, gain, count, own in pairs:
        for _ in range(count):
            repetition = done.get((name, gain), 0)
            done[(name, gain)] = repetition + 1
            schedule.append(Run(name, gain, repetition, own))
    duration = settle = None
    if "duration" in data:
        duration = _seconds(data["duration"], where, "duration", minimum_ok=False)
    if "settle" in data:
        settle = _seconds(data["settle"], where, "settle", minimum_ok=True)
    return Protocol(tuple(schedule), duration, settle)


def protocol_from_text(text: str, where: str = "protocol") -> Protocol:
    """The schedule of a YAML text."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise BamError(f"{where}: invalid YAML{at}: {one_line(problem)}") from None
    if data is None:
        raise BamError(f"{where}: the file is empty; give a 'protocol' mapping")
    return parse_protocol(data, where)


def load_protocol(path: str | Path) -> Protocol:
    """The schedule of the protocol file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise BamError(f"cannot read protocol file {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise BamError(f"protocol file {path} is not UTF-8 text") from None
    return protocol_from_text(text, f"protocol file {path}")
