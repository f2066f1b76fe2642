"""Read bench recordings (rosbag2 bags) into bench logs.

:func:`read_bag` cuts a bag into trials with the ``bam/trial`` markers and
resamples each onto a fixed time step. Times are the header stamps (the
simulation clock when a simulator publishes faster than real time), never the
times at which the recorder received the messages. Bench topics are found
under any namespace (:func:`bam_identify.data.bag_topics.bench_topics`).
Every trial passes the plausibility checks legacy JSON logs pass too
(:mod:`bam_identify.data.plausibility`): its bench description, gain,
series and sampling.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rosbags.interfaces import MessageDefinitionFormat
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from bam_identify.data import resample
from bam_identify.data.bag_recovery import needs_recovery
from bam_identify.data.bag_topics import (
    BAG_SUFFIXES,
    END,
    START,
    TOPIC_ACTUATOR_STATES,
    TOPIC_BENCH_INFO,
    TOPIC_JOINT_STATES,
    TOPIC_TRIAL,
    TOPICS,
    bench_topics,
)
from bam_identify.data.plausibility import (
    Source,
    check_reading,
    check_series,
    check_times,
    conditions,
)
from bam_identify.data.typestore import APPENDED, legacy_typestore, typestore
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.errors import BamError, one_line
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator

LOG = logging.getLogger(__name__)


def _stamp(header) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


@dataclass
class _Series:
    """Samples of one joint or actuator, in bag order."""

    stamps: list = field(default_factory=list)
    values: dict = field(default_factory=dict)

    def add(self, stamp: int, **values) -> None:
        self.stamps.append(stamp)
        for key, value in values.items():
            self.values.setdefault(key, []).append(value)

    def arrays(self) -> tuple[np.ndarray, dict]:
        return (np.asarray(self.stamps, dtype=np.int64),
                {k: np.asarray(v) for k, v in self.values.items()})


@dataclass
class _Recording:
    """The bench topics of one bag, deserialized."""

    infos: list = field(default_factory=list)  # (stamp_ns, BenchInfo)
    markers: list = field(default_factory=list)  # (stamp_ns, Trial), bag order
    joints: dict = field(default_factory=dict)  # name -> _Series(position, velocity)
    actuators: dict = field(default_factory=dict)  # name -> _Series(goal, enabled, control, unit)


def _bag_label(path: Path) -> str:
    return str(path)


def _open_reader(path: Path) -> Reader:
    label = _bag_label(path)
    if not path.exists():
        raise BamError(f"bag {label} does not exist; give a rosbag2 folder (with metadata.yaml) "
                       "or a .mcap/.db3 file")
    if needs_recovery(path):
        raise BamError(f"bag {label} was not closed (the recording stopped before writing its "
                       f"end); recover what it holds with: recover {label}")
    if path.is_dir() and not (path / "metadata.yaml").is_file():
        raise BamError(f"{label} is not a rosbag2 bag (no metadata.yaml); give a bag folder or "
                       "a .mcap/.db3 file")
    if path.is_file() and path.suffix not in BAG_SUFFIXES:
        raise BamError(f"{label} is not a rosbag2 bag (expected a folder or a .mcap/.db3 file)")
    try:
        reader = Reader(path)
        reader.open()
    except Exception as err:
        raise _unreadable(label, err) from None
    return reader


def _unreadable(label: str, err: BaseException) -> BamError:
    return BamError(f"cannot read bag {label} ({one_line(err)}); is it a complete rosbag2 "
                    "recording?")


def _parse_definition(connection) -> dict:
    """Parse trees of the message definition a connection stores (msg or IDL form)."""
    msgdef = connection.msgdef
    if msgdef.format == MessageDefinitionFormat.MSG:
        return get_types_from_msg(msgdef.data, connection.msgtype)
    separator = "=" * 80 + "\n"
    if not msgdef.data.startswith(separator + "IDL: "):
        return get_types_from_idl(msgdef.data)
    types: dict = {}
    for block in msgdef.data.split(separator)[1:]:
        types.update(get_types_from_idl(block.split("\n", 1)[1]))
    return types


def _decode(store: Typestore, raw: bytes, msgtype: str):
    """A message; one of a bag without definitions recorded before a field was appended
    to its type is decoded with the type as it was then (typestore.APPENDED)."""
    try:
        return store.deserialize_cdr(raw, msgtype)
    except Exception:
        if store is not typestore() or msgtype not in APPENDED:
            raise
    return legacy_typestore().deserialize_cdr(raw, msgtype)


def _store_for(connection) -> Typestore:
    """The definitions stored with a connection when the bag has them, else ours."""
    if connection.msgdef.format == MessageDefinitionFormat.NONE or not connection.msgdef.data:
        return typestore()
    try:
        store = get_typestore(Stores.EMPTY)
        store.register(_parse_definition(connection))
        store.get_msgdef(connection.msgtype)  # complete: every nested type is defined
        return store
    except Exception:  # an unusable stored definition: decode with the known one
        return typestore()


def _load(path: Path, namespace: str | None) -> _Recording:
    """Deserialize the bench topics of the bag at ``path``, checking what must be there."""
    label = _bag_label(path)
    reader = _open_reader(path)
    try:
        try:
            count = reader.message_count
            topics = reader.topics
        except Exception as err:
            raise _unreadable(label, err) from None
        if count == 0:
            raise BamError(f"bag {label} holds no messages; record the bench topics "
                           f"({', '.join(TOPICS)}) while running trajectories")
        names = bench_topics(topics, label, namespace)
        by_canonical = {canonical: name for name, canonical in names.items()}
        for canonical, msgtype in TOPICS.items():
            topic = by_canonical.get(canonical, canonical)
            if topic not in topics or topics[topic].msgcount == 0:
                what = {TOPIC_BENCH_INFO: "bench description",
                        TOPIC_JOINT_STATES: "joint states", TOPIC_TRIAL: "trial markers",
                        TOPIC_ACTUATOR_STATES: "actuator commands"}[canonical]
                raise BamError(f"bag {label} has no {topic} messages ({what}); record that "
                               "topic too (it is published by the bench driver or simulator)")
            if topics[topic].msgtype not in (None, msgtype):
                raise BamError(f"bag {label}: {topic} has type {topics[topic].msgtype}, "
                               f"expected {msgtype}")
        return _deserialize(reader, label, names)
    finally:
        with contextlib.suppress(Exception):  # closing a reader that failed mid-way
            reader.close()


def _deserialize(reader: Reader, label: str, names: dict[str, str]) -> _Recording:
    """The messages of the bag topics ``names`` (bag name -> canonical name)."""
    rec = _Recording()
    try:
        connections = [c for c in reader.connections if c.topic in names]
        stores = {c.id: _store_for(c) for c in connections}
        for conn, _, raw in reader.messages(connections=connections):
            msg = _decode(stores[conn.id], raw, conn.msgtype)
            topic = names[conn.topic]
            if topic == TOPIC_JOINT_STATES:
                _add_joint_state(rec, msg)
            elif topic == TOPIC_ACTUATOR_STATES:
                stamp = _stamp(msg.header)
                for state in msg.actuators:
                    rec.actuators.setdefault(state.name, _Series()).add(
                        stamp, goal=state.goal_position, enabled=bool(state.torque_enable),
                        control=state.control, unit=state.control_unit,
                        temperature=state.temperature, input_voltage=state.input_voltage)
            elif topic == TOPIC_BENCH_INFO:
                rec.infos.append((_stamp(msg.header), msg))
            else:
                rec.markers.append((_stamp(msg.header), msg))
    except BamError:
        raise
    except Exception as err:
        raise _unreadable(label, err) from None
    return rec


def _add_joint_state(rec: _Recording, msg) -> None:
    stamp = _stamp(msg.header)
    position, velocity = np.asarray(msg.position), np.asarray(msg.velocity)
    for i, name in enumerate(msg.name):
        rec.joints.setdefault(name, _Series()).add(
            stamp, position=position[i] if i < position.size else math.nan,
            velocity=velocity[i] if i < velocity.size else math.nan,
            has_velocity=i < velocity.size)


def _check_increasing(stamps: np.ndarray, topic: str, name: str, label: str) -> None:
    back = np.flatnonzero(np.diff(stamps) <= 0)
    if back.size:
        i = int(back[0])
        raise BamError(f"bag {label}: header stamps of {topic} ('{name}') are not increasing: "
                       f"{stamps[i] * 1e-9:.6f} s then {stamps[i + 1] * 1e-9:.6f} s (messages "
                       f"{i} and {i + 1} of that joint, from 0); re-record with one clock")


@dataclass(frozen=True)
class _Marker:
    trial_id: int
    start: int
    end: int
    trajectory: str
    gain: float
    repetition: int
    success: bool


def _pair_markers(markers: list, label: str) -> list[_Marker]:
    """START/END pairs by trial_id, in START order."""
    if not any(msg.event == START for _, msg in markers):
        raise BamError(f"bag {label} has no trial START markers on {TOPIC_TRIAL}; run the bench "
                       "trajectories through the trajectory node so that runs are marked")
    open_: dict[int, tuple[int, object]] = {}
    pairs: list[_Marker] = []
    for stamp, msg in markers:
        tid = int(msg.trial_id)
        if msg.event == START:
            if tid in open_:
                raise BamError(f"bag {label}: trial {tid} starts twice without an END marker; "
                               "trial ids must be unique within a recording")
            open_[tid] = (stamp, msg)
        elif msg.event == END and tid in open_:
            start, first = open_.pop(tid)
            pairs.append(_Marker(tid, start, stamp, str(first.trajectory), float(first.gain),
                                 int(first.repetition), bool(msg.success)))
    for tid, (stamp, msg) in sorted(open_.items(), key=lambda item: item[1][0]):
        LOG.warning(f"bag {label}: trial {tid} ('{msg.trajectory}', started at "
                    f"{stamp * 1e-9:.6f} s) has no END marker (the recording stopped during "
                    "the run); that trial is left out")
    return sorted(pairs, key=lambda p: p.start)


def _bench_info_at(infos: list, stamp: int):
    """The bench description in force at ``stamp``: the last one published by then.

    Of several with the same stamp (parameters changed one after the other in
    one instant), the last in recording order describes the final state.
    """
    before = [(i, item) for i, item in enumerate(infos) if item[0] <= stamp]
    if before:
        return max(before, key=lambda pair: (pair[1][0], pair[0]))[1][1]
    return min(infos, key=lambda item: item[0])[1]


def _pick(series: dict, wanted: str, what: str, topic: str, where: str) -> str:
    if wanted in series:
        return wanted
    if len(series) == 1:
        return next(iter(series))
    names = ", ".join(sorted(series)) or "none"
    raise BamError(f"{where}: {what} '{wanted}' of /bam/bench_info is not in {topic} "
                   f"(names: {names}); fix the bench's joint_name")


def _into_trial(stamps: np.ndarray, start: int) -> Callable[[int], str]:
    """How a message of a trial is named: its time into the trial and its stamp."""
    def at(k: int) -> str:
        return (f"{(stamps[k] - start) * 1e-9:.6f} s into the trial (stamp "
                f"{stamps[k] * 1e-9:.6f} s)")
    return at


def _plausible(values: np.ndarray, stamps: np.ndarray, start: int, kind: str, what: str,
               source: Source) -> None:
    check_series(values, kind, what, source, _into_trial(stamps, start))


def _regular(stamps: np.ndarray, start: int, topic: str, name: str, source: Source) -> None:
    """The header stamps of one joint's messages within a trial: a bench's sampling, no
    holes (a single message has no period to check)."""
    if stamps.size >= 2:
        check_times((stamps - start) * 1e-9, f"header stamps of {topic} ('{name}')", source,
                    _into_trial(stamps, start))


def _trial_source(where: str) -> Source:
    return Source(where, "repair or drop that trial", {
        "mass": "/bam/bench_info mass", "length": "/bam/bench_info length",
        "arm_mass": "/bam/bench_info arm_mass", "kp": f"the {TOPIC_TRIAL} gain",
        "supply_voltage": "/bam/bench_info supply_voltage",
        "damping": "/bam/bench_info damping"})


def _optional(value: float) -> float | None:
    """A BenchInfo value that may be NaN: not applicable, or not known to the bench."""
    value = float(value)
    return None if math.isnan(value) else value


def read_bag(path: str | Path, dt: float = 0.005,
             namespace: str | None = None) -> list[BenchLog]:
    """The trials of a bench bag as bench logs on the time step ``dt`` (s).

    ``path`` is a rosbag2 folder or a single .mcap/.db3 file. Each START/END
    pair of /bam/trial becomes one log (runs ended with success = false are
    skipped), with the bench, actuator, supply voltage and damping of the
    latest bam/bench_info at or before its start, and the winding temperature
    of bam/actuator_states where the actuator reported it. ``namespace`` picks one bench
    of a bag that recorded several (default: the only one).
    """
    path = Path(path)
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0.0):
        raise BamError(f"time step dt must be a finite number > 0 s, got {dt}")
    dt_ns = int(round(dt * 1e9))
    if dt_ns < 1:
        raise BamError(f"time step dt must be at least 1 ns, got {dt}")
    label = _bag_label(path)
    rec = _load(path, namespace)
    markers = _pair_markers(rec.markers, label)
    joints, actuators = {}, {}
    for name, series in rec.joints.items():
        joints[name] = series.arrays()
        _check_increasing(joints[name][0], TOPIC_JOINT_STATES, name, label)
    for name, series in rec.actuators.items():
        actuators[name] = series.arrays()
        _check_increasing(actuators[name][0], TOPIC_ACTUATOR_STATES, name, label)
    logs = []
    for marker in markers:
        if marker.success:
            info = _bench_info_at(rec.infos, marker.start)
            logs.append(_trial_log(path, marker, info, joints, actuators, dt, dt_ns))
    if not logs:
        raise BamError(f"bag {label}: every trial ended with success = false; there is no "
                       "complete run to use")
    return logs


def _trial_log(path: Path, marker: _Marker, info, joints: dict, actuators: dict, dt: float,
               dt_ns: int) -> BenchLog:
    label = _bag_label(path)
    where = f"bag {label}, trial {marker.trial_id} ('{marker.trajectory}')"
    try:
        act = get_actuator(info.actuator)
    except BamError as err:
        raise BamError(f"{where}: /bam/bench_info names {err}") from None
    source = _trial_source(where)
    cond = conditions(act, source, info.mass, info.length, info.arm_mass, marker.gain,
                      supply_voltage=_optional(info.supply_voltage),
                      damping=_optional(info.damping))

    joint = _pick(joints, info.joint_name, "joint", TOPIC_JOINT_STATES, where)
    stamps, values = joints[joint]
    i0 = int(np.searchsorted(stamps, marker.start, side="left"))
    i1 = int(np.searchsorted(stamps, marker.end, side="left"))
    if i1 - i0 >= 1 and stamps[i1 - 1] - stamps[i0] >= dt_ns:
        t_start = int(stamps[i0])
    else:
        raise BamError(f"{where}: fewer than 2 samples at dt = {dt} s between its markers "
                       f"({i1 - i0} joint states); the run is too short or was not recorded")
    stamps = stamps[i0:i1]
    _regular(stamps, t_start, TOPIC_JOINT_STATES, joint, source)
    position = values["position"][i0:i1].astype(np.float64)
    _plausible(position, stamps, t_start, "position", f"position of joint '{joint}'", source)
    velocity = None
    has_velocity = values["has_velocity"][i0:i1]
    if has_velocity.any():
        velocity = values["velocity"][i0:i1].astype(np.float64)
        _plausible(velocity, stamps, t_start, "velocity", f"velocity of joint '{joint}'",
                   source)

    name = _pick(actuators, info.joint_name, "actuator", TOPIC_ACTUATOR_STATES, where)
    a_stamps, a_values = actuators[name]
    k0 = int(np.searchsorted(a_stamps, marker.start, side="left"))
    k1 = int(np.searchsorted(a_stamps, marker.end, side="left"))
    if k1 <= k0:
        raise BamError(f"{where}: no {TOPIC_ACTUATOR_STATES} for '{name}' between its markers; "
                       "record that topic")
    a_stamps = a_stamps[k0:k1]
    _regular(a_stamps, t_start, TOPIC_ACTUATOR_STATES, name, source)
    goal = a_values["goal"][k0:k1].astype(np.float64)
    _plausible(goal, a_stamps, t_start, "goal position", f"goal position of '{name}'", source)
    enabled = a_values["enabled"][k0:k1]
    control = a_values["control"][k0:k1].astype(np.float64)
    units = {str(u) for u in a_values["unit"][k0:k1]} - {""}
    if units - {act.control_unit}:
        raise BamError(f"{where}: control unit {', '.join(sorted(units))} does not match "
                       f"actuator {act.name} ({act.control_unit}); check the actuator named by "
                       "/bam/bench_info")
    if np.isnan(control).all():
        control = None
    else:
        _plausible(control, a_stamps, t_start, "control", f"control of '{name}'", source)

    at = resample.grid_ns(int(stamps[-1]) - t_start, dt_ns)
    t_joint = (stamps - t_start) * 1e-9
    t_act = (a_stamps - t_start) * 1e-9
    temperature = _measured(a_values["temperature"][k0:k1], t_act, at, a_stamps, t_start,
                            "temperature", f"temperature of '{name}'", source, act)
    voltage = _measured(a_values["input_voltage"][k0:k1], t_act, at, a_stamps, t_start,
                        "input voltage", f"input voltage of '{name}'", source, act)
    return BenchLog(
        bench=cond.bench, kp=cond.kp, dt=dt,
        goal=resample.interpolate(at, t_act, goal),
        enabled=resample.interpolate_enable(at, t_act, enabled),
        position=resample.interpolate(at, t_joint, position),
        velocity=None if velocity is None else resample.interpolate(at, t_joint, velocity),
        control=None if control is None else resample.interpolate(at, t_act, control),
        name=f"{path.stem if path.is_file() else path.name}#{marker.trial_id}:"
             f"{marker.trajectory}",
        meta={"trajectory": marker.trajectory, "trial_id": marker.trial_id,
              "repetition": marker.repetition, "gain": marker.gain, "source": str(path),
              "actuator": act.name, "bench_source": str(info.source),
              # a bag recorded before BenchInfo had a unit: none (population.unit_of)
              "unit": str(getattr(info, "unit", "")),
              "start_time": t_start * 1e-9},
        supply_voltage=cond.supply_voltage, damping=cond.damping,
        temperature=temperature, input_voltage=voltage,
    )


def _measured(values: np.ndarray, times: np.ndarray, at: np.ndarray, stamps: np.ndarray,
              start: int, kind: str, what: str, source: Source,
              act: Actuator) -> np.ndarray | None:
    """A reading (winding temperature, input voltage) on the grid, from its measured
    samples (NaN: not measured); None when fewer than two samples of the trial were."""
    values = values.astype(np.float64)
    measured = np.isfinite(values)
    if measured.sum() < 2:
        return None
    check_reading(values[measured], times[measured], kind, what, source,
                  _into_trial(stamps[measured], start), act)
    return resample.interpolate(at, times[measured], values[measured])
