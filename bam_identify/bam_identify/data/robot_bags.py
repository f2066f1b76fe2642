"""Read a robot's rosbag2 recordings (its joint states and the goals sent) into robot recordings.

A robot stack records ``joint_states`` and whatever carried its goals. The goal sources,
in order of preference (each joint takes the first that names it):

* ``bam/commands`` (bam_msgs/msg/ActuatorCommand): goals, torque enables and gains,
  the only source of a recorded gain;
* ``joint_commands`` (sensor_msgs/msg/JointState), as topic_based_ros2_control publishes;
* ``position_commands`` or a forward controller's ``commands``
  (std_msgs/msg/Float64MultiArray): one value per joint, in the joint map's order;
* a JointTrajectoryController's ``controller_state``
  (control_msgs/msg/JointTrajectoryControllerState): its reference positions, decoded with
  the definition the bag stores (rosbags' type store has no control_msgs).

Topics are found under any namespace by their last name segments. A message is stamped
with its header (the publisher's clock) or, without one (or with a zero stamp), with the
time the recorder received it. A goal acts from its stamp until the next one.
A source that cannot be decoded is skipped; it is named if nothing else can stand in.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Reader

from bam_identify.data import resample
from bam_identify.data.bag_reader import _open_reader, _stamp, _store_for, _unreadable
from bam_identify.data.typestore import JOINT_STATE, PACKAGE
from bam_sim.common.errors import BamError, one_line
from bam_sim.robot.joint_map import JointMap
from bam_sim.robot.recording import RobotRecording

ACTUATOR_COMMAND = f"{PACKAGE}/msg/ActuatorCommand"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
JTC_STATE = "control_msgs/msg/JointTrajectoryControllerState"
MAX_PERIOD = 0.05  # s: slower joint states alias the servo law's motion (20 Hz at least)
STATES = "joint_states"
COMMANDS = "bam/commands"
GOAL_TOPICS = ("/joint_commands, /position_commands, bam/commands or a "
               "JointTrajectoryController's controller_state")

_Rows = list[tuple[str, str, float]]  # (joint, quantity, value) of one message


def _joint_states(msg, names: list[str]) -> _Rows:
    return [(n, "position", float(p)) for n, p in zip(msg.name, msg.position)]


def _actuator_command(msg, names: list[str]) -> _Rows:
    # An empty array leaves that quantity unchanged (ActuatorCommand.msg).
    return [(n, qty, float(v))
            for key, qty in (("goal_positions", "goal"), ("torque_enables", "enabled"),
                             ("gains", "gain"))
            for n, v in zip(msg.names, getattr(msg, key))]


def _joint_commands(msg, names: list[str]) -> _Rows:
    return [(n, "goal", float(p)) for n, p in zip(msg.name, msg.position)]


def _forward(msg, names: list[str]) -> _Rows:
    if len(msg.data) != len(names):
        raise _Skip(f"{len(msg.data)} values for the joint map's {len(names)} joints")
    return [(n, "goal", float(v)) for n, v in zip(names, msg.data)]


def _reference(msg, names: list[str]) -> _Rows:
    # Older controllers fill 'desired' (deprecated) rather than 'reference'.
    reference = getattr(msg, "reference", None)
    positions = reference.positions if reference is not None else ()
    if not len(positions) and hasattr(msg, "desired"):
        positions = msg.desired.positions
    return [(n, "goal", float(p)) for n, p in zip(msg.joint_names, positions)]


@dataclass(frozen=True)
class _Source:
    suffix: str  # the topic's last name segments
    msgtype: str
    decode: Callable[[object, list[str]], _Rows]


# Measurements first, then the goal sources in order of preference.
SOURCES = (_Source(STATES, JOINT_STATE, _joint_states),
           _Source(COMMANDS, ACTUATOR_COMMAND, _actuator_command),
           _Source("joint_commands", JOINT_STATE, _joint_commands),
           _Source("position_commands", FLOAT64_ARRAY, _forward),
           _Source("commands", FLOAT64_ARRAY, _forward),
           _Source("controller_state", JTC_STATE, _reference))


class _Skip(Exception):
    """A topic that cannot serve (its reason is the message)."""


@dataclass
class _Found:
    """What one kind of source holds: joint -> quantity -> (stamps ns (k,), values (k,))."""

    topics: list[str] = field(default_factory=list)
    joints: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)


def _matches(topic: str, suffix: str) -> bool:
    return topic == "/" + suffix or topic.endswith("/" + suffix)


def _decode(reader: Reader, conn, source: _Source, names: list[str]) -> list[tuple]:
    """(stamp ns, joint, quantity, value) of every message of ``conn``."""
    store = _store_for(conn)
    if conn.msgtype not in store.fielddefs:
        raise _Skip("the bag holds no definition of its type")
    rows = []
    try:
        for _, received, raw in reader.messages(connections=[conn]):
            msg = store.deserialize_cdr(raw, conn.msgtype)
            stamp = _stamp(msg.header) if hasattr(msg, "header") else 0
            rows += [(stamp or received, *row) for row in source.decode(msg, names)]
    except _Skip:
        raise
    except Exception as err:  # a stored definition that does not fit the data
        raise _Skip(f"cannot decode it ({one_line(err)})") from None
    return rows


def _series(rows: list[tuple]) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Rows grouped by joint and quantity, in stamp order; of equal stamps the last counts."""
    grouped: dict[tuple[str, str], list] = {}
    for stamp, joint, qty, value in rows:
        grouped.setdefault((joint, qty), []).append((stamp, value))
    out: dict = {}
    for (joint, qty), items in grouped.items():
        stamps = np.array([s for s, _ in items], dtype=np.int64)
        values = np.array([v for _, v in items], dtype=np.float64)
        order = np.argsort(stamps, kind="stable")
        stamps, values = stamps[order], values[order]
        last = np.r_[stamps[1:] != stamps[:-1], True]
        out.setdefault(joint, {})[qty] = (stamps[last], values[last])
    return out


def _load(path: Path, label: str, names: list[str]) -> tuple[dict[str, _Found], list[str]]:
    """Each source kind found (by suffix) and its series; notes on topics skipped."""
    reader = _open_reader(path)
    found: dict[str, _Found] = {}
    notes: list[str] = []
    try:
        for conn in sorted(reader.connections, key=lambda c: (c.topic, c.id)):
            source = next((s for s in SOURCES if s.msgtype == conn.msgtype
                           and _matches(conn.topic, s.suffix)), None)
            if source is None:
                continue
            try:
                series = _series(_decode(reader, conn, source, names))
            except _Skip as why:
                notes.append(f"{conn.topic} skipped: {why}")
                continue
            kind = found.setdefault(source.suffix, _Found())
            kind.topics.append(conn.topic)
            for joint, quantities in series.items():
                kind.joints.setdefault(joint, quantities)  # the first topic naming it wins
    except Exception as err:
        raise _unreadable(label, err) from None
    finally:
        with contextlib.suppress(Exception):
            reader.close()
    return found, notes


def _noted(notes: list[str]) -> str:
    return f" ({'; '.join(notes)})" if notes else ""


def _goal(found: dict[str, _Found], joint: str, notes: list[str], label: str):
    """(stamps, goals) of ``joint`` from the first source kind that holds them."""
    for source in SOURCES[1:]:
        series = found.get(source.suffix, _Found()).joints.get(joint, {})
        if "goal" in series:
            return series["goal"]
    raise BamError(f"bag {label} holds no goal for joint '{joint}'{_noted(notes)}: record the "
                   f"commands sent: {GOAL_TOPICS}")


def _gain(found: dict[str, _Found], joint: str, span: tuple[int, int], label: str) -> float:
    """The recorded gain of ``joint`` in effect over ``span`` (ns); one value, or refused."""
    series = found.get(COMMANDS, _Found()).joints.get(joint, {})
    if "gain" not in series:
        raise BamError(f"joint '{joint}' has gain: recorded, but {label} holds no bam/commands "
                       "gains for it: record bam/commands with gains, or give the gain in the "
                       "joint map")
    stamps, values = series["gain"]
    first = max(int(np.searchsorted(stamps, span[0], side="right")) - 1, 0)
    last = max(int(np.searchsorted(stamps, span[1], side="right")), first + 1)
    gains = np.unique(values[first:last])
    if gains.size > 1:
        raise BamError(f"joint '{joint}': its gain changes during {label} "
                       f"({', '.join(f'{g:g}' for g in gains)}): record one gain per bag")
    return float(gains[0])


def _measured(states: _Found, joint: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    series = states.joints.get(joint, {})
    if "position" not in series or series["position"][0].size < 2:
        topics = ", ".join(states.topics)
        have = ", ".join(sorted(states.joints)) or "none"
        raise BamError(f"joint '{joint}' is not in {topics} of {label}; its joints are {have}: "
                       "fix the joint map's names")
    return series["position"]


def read_robot_bag(path: str | Path, joint_map: JointMap,
                   period: float | None = None) -> list[RobotRecording]:
    """The recording of the bag at ``path`` (a rosbag2 folder, .mcap or .db3), one per bag.

    Measured positions are interpolated linearly and goals (and torque enables, from
    bam/commands, else on) held onto a grid of ``period`` s (default: the median
    joint_states period), over the span where every joint has both. Gains are the joint
    map's, or bam/commands' where the map says ``recorded``.
    """
    path, label = Path(path), str(path)
    if period is not None and not (math.isfinite(period) and period > 0.0):
        raise BamError(f"period must be a finite number > 0 s, got {period}")
    names = joint_map.names
    found, notes = _load(path, label, names)
    if STATES not in found:
        raise BamError(f"bag {label} has no joint_states (sensor_msgs/msg/JointState) under "
                       f"any namespace{_noted(notes)}: record joint_states and the commands "
                       "sent")
    measured = [_measured(found[STATES], j, label) for j in names]
    goals = [_goal(found, j, notes, label) for j in names]
    sampled = float(np.median(np.concatenate([np.diff(s) for s, _ in measured]))) * 1e-9
    if sampled > MAX_PERIOD:
        raise BamError(f"bag {label}: joint_states come every {sampled * 1e3:.0f} ms "
                       f"({1 / sampled:.1f} Hz): record joint_states at 20 Hz at least")
    step = int(round((period or sampled) * 1e9))
    start = max(int(s[0]) for s, _ in measured + goals)
    end = min(int(s[-1]) for s, _ in measured)
    if end - start < step:
        raise BamError(f"bag {label}: joint_states and the goals sent do not overlap in time: "
                       "record both at once")
    at = np.arange(start, end + 1, step, dtype=np.int64)
    commands = found.get(COMMANDS, _Found()).joints
    enabled = [resample.hold(at, *commands[j]["enabled"], 1.0) > 0.5
               if "enabled" in commands.get(j, {}) else np.ones(at.size, bool) for j in names]
    gain = [j.gain if j.gain is not None else _gain(found, j.joint, (start, end), label)
            for j in joint_map.joints]
    return [RobotRecording(
        name=path.stem if path.is_file() else path.name,
        time=np.arange(at.size) * (step * 1e-9),
        position=np.column_stack([np.interp(at - start, s - start, v) for s, v in measured]),
        goal=np.column_stack([resample.hold(at, s, v) for s, v in goals]),
        gain=np.array(gain, dtype=np.float64),
        enabled=np.column_stack(enabled))]
