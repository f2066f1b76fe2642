"""Bench recordings as rosbag2 bags: write them from bench logs, read them into bench logs.

A recording of the pendulum bench holds four topics:

* ``/bam/bench_info`` (``bam_msgs/msg/BenchInfo``, transient-local): the
  actuator and the bench, published once per session;
* ``/bam/trial`` (``bam_msgs/msg/Trial``, transient-local): START and END
  markers of each trajectory run, sharing a ``trial_id``;
* ``/joint_states`` (``sensor_msgs/msg/JointState``): position, velocity
  (and effort = motor torque where known) at the control rate;
* ``/bam/actuator_states`` (``bam_msgs/msg/ActuatorStateArray``): goal
  position, torque enable, gain and low-level control at the control rate.

:func:`read_bag` cuts a bag into trials with the markers and resamples each
onto a fixed time step. Times are the header stamps (the simulation clock
when a simulator publishes faster than real time), never the times at which
the recorder received the messages. :func:`write_bag` writes such a bag from
bench logs (tests, conversions); it uses rosbags, so neither needs ROS.
Topic names, types and QoS are those of :mod:`bam_sim.common.contract`.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rosbags.interfaces import (
    MessageDefinitionFormat,
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from bam_identify.data import resample
from bam_identify.data.typestore import (
    ACTUATOR_STATE,
    ACTUATOR_STATE_ARRAY,
    BENCH_INFO,
    HEADER,
    JOINT_STATE,
    TIME,
    TRIAL,
    typestore,
)
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.pendulum import GRAVITY, Bench
from bam_sim.common import contract
from bam_sim.common.errors import BamError
from bam_sim.models import servo
from bam_sim.models.actuators import get_actuator

# Names, types and QoS of the recorded topics come from bam_sim.common.contract.
TOPIC_JOINT_STATES = contract.JOINT_STATES.absolute()
TOPIC_ACTUATOR_STATES = contract.ACTUATOR_STATES.absolute()
TOPIC_BENCH_INFO = contract.BENCH_INFO.absolute()
TOPIC_TRIAL = contract.TRIAL.absolute()
TOPICS = {topic.absolute(): topic.type for topic in contract.RECORDED}  # topic -> message type
START, END = 0, 1  # bam_msgs/msg/Trial event values
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
BAG_SUFFIXES = (".mcap", ".db3")
ROSBAG2_VERSION = 9  # metadata version written by rosbag2 in ROS 2 Jazzy

_NO_TIME = QosTime(0, 0)  # rosbag2's "default" duration (no deadline, no lifespan)


def bag_qos(qos: contract.Qos) -> Qos:
    """The rosbags offered-QoS profile of an interface QoS (as stored in bag metadata)."""
    return Qos(QosHistory.KEEP_LAST, qos.depth,
               QosReliability.RELIABLE if qos.reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if qos.transient_local else QosDurability.VOLATILE,
               _NO_TIME, _NO_TIME, QosLiveliness.AUTOMATIC, _NO_TIME, False)


QOS_STATE = bag_qos(contract.STATE_QOS)
QOS_LATCHED = bag_qos(contract.LATCHED_QOS)  # /bam/bench_info
TOPIC_QOS = {topic.absolute(): bag_qos(topic.qos) for topic in contract.RECORDED}


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BagTrial:
    """One trajectory run of a session: the log and its /bam/trial marker fields.

    ``motor_torque`` (N·m, one value per entry), when known, is published as
    the joint effort and the actuator state's motor torque; NaN otherwise.
    """

    log: BenchLog
    trajectory: str
    gain: float | None = None  # kp of the marker; None: the log's kp
    trial_id: int = 0
    repetition: int = 0
    motor_torque: np.ndarray | None = None
    success: bool = True


@dataclass(frozen=True)
class BagSession:
    """One bench set-up (one /bam/bench_info) and the trials recorded with it.

    Bench fields left at None come from the trials' logs (bench, supply
    voltage, damping, control rate) or from the actuator's constants.
    ``trials`` holds :class:`BagTrial` or tuples
    ``(log, trajectory, gain, trial_id, repetition)``.
    """

    actuator: str
    trials: Sequence[BagTrial | tuple] = field(default_factory=tuple)
    joint_name: str = "joint"
    mass: float | None = None
    arm_mass: float | None = None
    length: float | None = None
    supply_voltage: float | None = None
    damping: float | None = None
    source: str = "sim"
    control_rate: float | None = None
    model: str = ""
    parameters: str = ""


def _as_trial(item: BagTrial | tuple, where: str) -> BagTrial:
    if isinstance(item, BagTrial):
        return item
    if isinstance(item, (tuple, list)) and 2 <= len(item) <= 5:
        return BagTrial(*item)
    raise BamError(f"{where}: a trial must be a BagTrial or a tuple (log, trajectory, gain, "
                   f"trial_id, repetition), got {type(item).__name__}")


def _session_fields(session: BagSession, trials: list[BagTrial], where: str) -> dict:
    """The BenchInfo fields of a session, checked against its logs."""
    act = get_actuator(session.actuator)
    first = trials[0].log
    bench = Bench(
        mass=first.bench.mass if session.mass is None else session.mass,
        length=first.bench.length if session.length is None else session.length,
        arm_mass=first.bench.arm_mass if session.arm_mass is None else session.arm_mass,
    )
    voltage = session.supply_voltage
    if voltage is None:
        voltage = first.supply_voltage if first.supply_voltage is not None else act.supply_voltage
    if act.family == servo.CURRENT:
        damping = session.damping
        if damping is None:
            damping = first.damping if first.damping is not None else act.damping
    else:
        damping = math.nan if session.damping is None else session.damping
    for trial in trials:
        log = trial.log
        label = f"{where}, trial {trial.trial_id} ('{log.name}')"
        if log.bench != bench:
            raise BamError(f"{label}: its bench {log.bench} differs from the session's {bench}; "
                           "put it in a session of its own")
        if log.supply_voltage is not None and log.supply_voltage != voltage:
            raise BamError(f"{label}: supply voltage {log.supply_voltage} V differs from the "
                           f"session's {voltage} V; put it in a session of its own")
        if log.damping is not None and log.damping != damping:
            raise BamError(f"{label}: damping {log.damping} differs from the session's "
                           f"{damping}; put it in a session of its own")
    rate = session.control_rate if session.control_rate is not None else 1.0 / first.dt
    return {
        "actuator": act.name, "joint_name": session.joint_name, "mass": float(bench.mass),
        "arm_mass": float(bench.arm_mass), "length": float(bench.length), "gravity": GRAVITY,
        "supply_voltage": float(voltage), "damping": float(damping),
        "control_unit": act.control_unit, "source": session.source,
        "control_rate": float(rate), "model": session.model, "parameters": session.parameters,
    }


class _Messages:
    """Message classes of our type store, and headers from nanosecond stamps."""

    def __init__(self) -> None:
        self.store = typestore()
        types = self.store.types
        self.Time, self.Header = types[TIME], types[HEADER]
        self.JointState, self.ActuatorState = types[JOINT_STATE], types[ACTUATOR_STATE]
        self.ActuatorStateArray = types[ACTUATOR_STATE_ARRAY]
        self.BenchInfo, self.Trial = types[BENCH_INFO], types[TRIAL]

    def header(self, stamp_ns: int):
        sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
        return self.Header(stamp=self.Time(sec=sec, nanosec=nanosec), frame_id="")


def _check_overwrite(path: Path, overwrite: bool) -> None:
    if not path.exists() and not path.is_symlink():
        return
    if not overwrite:
        raise BamError(f"{path} already exists; choose another path or allow overwriting "
                       "(--force)")
    if path.is_dir() and not (path / "metadata.yaml").is_file():
        raise BamError(f"{path} exists and is not a rosbag2 bag (no metadata.yaml); "
                       "refusing to replace it, choose another path")
    if not path.is_dir():
        raise BamError(f"{path} exists and is not a bag folder; refusing to replace it, "
                       "choose another path")


def bench_messages(sessions: Sequence[BagSession], start_time: float = 1.0,
                   gap: float = 0.5) -> list[tuple[str, int, object]]:
    """(topic, stamp in ns, message) of ``sessions`` in time order, as a bench publishes them.

    The clock starts at ``start_time`` (s); each session publishes its
    BenchInfo, then each trial its START marker at its first entry, one
    JointState and one ActuatorStateArray per entry at t_0 + k·Δt, and its
    END marker one Δt after its last entry; ``gap`` (s) separates runs.
    """
    if not sessions:
        raise BamError("no session to write; give at least one BagSession")
    if not (math.isfinite(start_time) and start_time >= 0.0 and math.isfinite(gap)
            and gap > 0.0):
        raise BamError(f"bench messages need start_time >= 0 s and gap > 0 s, got {start_time}, "
                       f"{gap}")
    return list(_bench_messages(sessions, start_time, gap))


def _bench_messages(sessions: Sequence[BagSession], start_time: float,
                    gap: float) -> Iterator[tuple[str, int, object]]:
    m = _Messages()
    gap_ns = int(round(gap * 1e9))
    now = int(round(start_time * 1e9))
    for s, session in enumerate(sessions):
        where = f"session {s}"
        if not isinstance(session, BagSession):
            raise BamError(f"{where}: expected a BagSession, got {type(session).__name__}")
        trials = [_as_trial(item, where) for item in session.trials]
        if not trials:
            raise BamError(f"{where}: no trials; give at least one log")
        info = _session_fields(session, trials, where)
        yield TOPIC_BENCH_INFO, now, m.BenchInfo(header=m.header(now), **info)
        for trial in trials:
            now += gap_ns
            end = now + len(trial.log) * int(round(trial.log.dt * 1e9))
            yield from _trial_messages(m, trial, info, now, where)
            now = end + gap_ns


def _trial_messages(m: _Messages, trial: BagTrial, info: dict, t0: int,
                    where: str) -> Iterator[tuple[str, int, object]]:
    """Messages of one trial from ``t0`` (ns); its END marker is at t0 + n·Δt."""
    log = trial.log
    label = f"{where}, trial {trial.trial_id} ('{log.name}')"
    if log.position is None:
        raise BamError(f"{label}: the log has no recorded positions; simulate or record it first")
    gain = float(log.kp if trial.gain is None else trial.gain)
    if gain != log.kp:
        raise BamError(f"{label}: marker gain {gain} differs from the log's kp {log.kp}")
    n, dt_ns = len(log), int(round(log.dt * 1e9))
    torque = (np.full(n, np.nan) if trial.motor_torque is None
              else np.asarray(trial.motor_torque, dtype=np.float64))
    if torque.shape != (n,):
        raise BamError(f"{label}: motor_torque has shape {torque.shape}, expected ({n},)")
    control = log.control if log.control is not None else np.full(n, np.nan)
    joint, unit = info["joint_name"], info["control_unit"]
    marker = dict(trajectory=str(trial.trajectory), gain=gain, trial_id=int(trial.trial_id),
                  repetition=int(trial.repetition))
    yield TOPIC_TRIAL, t0, m.Trial(header=m.header(t0), event=START, success=False, **marker)
    empty = np.empty(0)
    for k in range(n):
        stamp = t0 + k * dt_ns
        velocity = empty if log.velocity is None else np.array([log.velocity[k]])
        effort = empty if trial.motor_torque is None else np.array([torque[k]])
        yield TOPIC_JOINT_STATES, stamp, m.JointState(
            header=m.header(stamp), name=[joint], position=np.array([log.position[k]]),
            velocity=velocity, effort=effort)
        state = m.ActuatorState(
            name=joint, goal_position=float(log.goal[k]), torque_enable=bool(log.enabled[k]),
            gain=gain, control=float(control[k]), control_unit=unit, current=math.nan,
            input_voltage=math.nan, temperature=math.nan, motor_torque=float(torque[k]),
            error_flags=0)
        yield TOPIC_ACTUATOR_STATES, stamp, m.ActuatorStateArray(header=m.header(stamp),
                                                                 actuators=[state])
    end = t0 + n * dt_ns
    yield TOPIC_TRIAL, end, m.Trial(header=m.header(end), event=END,
                                    success=bool(trial.success), **marker)


def write_messages(path: str | Path, messages: Iterable[tuple[str, int, object]],
                   storage: str = "mcap", overwrite: bool = False) -> Path:
    """Write (topic, bag time in ns, message) items as a rosbag2 bag folder at ``path``.

    Messages are rosbags objects of :func:`~bam_identify.data.typestore.typestore`
    (their ``__msgtype__`` names the type). The four bench topics are always
    declared, with their QoS (/bam/bench_info transient-local), even without
    messages; message definitions are stored in the bag. The bag is written
    next to ``path`` and moved in place when complete; an existing bag is
    replaced only with ``overwrite``.
    """
    path = Path(path)
    if storage not in STORAGES:
        raise BamError(f"unknown bag storage '{storage}'; choose one of {', '.join(STORAGES)}")
    _check_overwrite(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_root = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    tmp = tmp_root / path.name
    try:
        _write(tmp, messages, STORAGES[storage])
        if path.exists():
            path.rename(tmp_root / "replaced")
        tmp.rename(path)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return path


def _write(path: Path, messages: Iterable[tuple[str, int, object]],
           plugin: StoragePlugin) -> None:
    store = typestore()
    with Writer(path, version=ROSBAG2_VERSION, storage_plugin=plugin) as writer:
        conns = {}

        def connect(topic: str, msgtype: str):
            qos = TOPIC_QOS.get(topic, QOS_STATE)
            conns[topic] = writer.add_connection(topic, msgtype, typestore=store,
                                                 offered_qos_profiles=[qos])
            return conns[topic]

        for topic, msgtype in TOPICS.items():
            connect(topic, msgtype)
        for topic, stamp, msg in messages:
            msgtype = getattr(msg, "__msgtype__", None)
            if msgtype not in store.fielddefs:
                raise BamError(f"cannot write a {type(msg).__name__} on {topic}: not a message "
                               "of the bench type store")
            conn = conns.get(topic) or connect(topic, msgtype)
            if conn.msgtype != msgtype:
                raise BamError(f"cannot write a {msgtype} on {topic}, which carries "
                               f"{conn.msgtype}")
            writer.write(conn, int(stamp), bytes(store.serialize_cdr(msg, msgtype)))


def write_bag(path: str | Path, sessions: Sequence[BagSession], storage: str = "mcap",
              overwrite: bool = False, start_time: float = 1.0, gap: float = 0.5) -> Path:
    """Write ``sessions`` as a rosbag2 bag folder at ``path`` (storage mcap or sqlite3).

    Messages as :func:`bench_messages` publishes them, with bag times equal to
    their header stamps; see :func:`write_messages`. Returns the path.
    """
    if storage not in STORAGES:
        raise BamError(f"unknown bag storage '{storage}'; choose one of {', '.join(STORAGES)}")
    _check_overwrite(Path(path), overwrite)
    messages = bench_messages(sessions, start_time, gap)  # bad input fails before writing
    return write_messages(path, messages, storage, overwrite)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


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
    return BamError(f"cannot read bag {label} ({_first_line(err)}); is it a complete rosbag2 "
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


def _load(path: Path) -> _Recording:
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
        for topic, msgtype in TOPICS.items():
            if topic not in topics or topics[topic].msgcount == 0:
                what = {TOPIC_BENCH_INFO: "bench description",
                        TOPIC_JOINT_STATES: "joint states", TOPIC_TRIAL: "trial markers",
                        TOPIC_ACTUATOR_STATES: "actuator commands"}[topic]
                raise BamError(f"bag {label} has no {topic} messages ({what}); record that "
                               "topic too (it is published by the bench driver or simulator)")
            if topics[topic].msgtype not in (None, msgtype):
                raise BamError(f"bag {label}: {topic} has type {topics[topic].msgtype}, "
                               f"expected {msgtype}")
        return _deserialize(reader, label)
    finally:
        with contextlib.suppress(Exception):  # closing a reader that failed mid-way
            reader.close()


def _deserialize(reader: Reader, label: str) -> _Recording:
    rec = _Recording()
    try:
        connections = [c for c in reader.connections if c.topic in TOPICS]
        stores = {c.id: _store_for(c) for c in connections}
        for conn, _, raw in reader.messages(connections=connections):
            msg = stores[conn.id].deserialize_cdr(raw, conn.msgtype)
            if conn.topic == TOPIC_JOINT_STATES:
                _add_joint_state(rec, msg)
            elif conn.topic == TOPIC_ACTUATOR_STATES:
                stamp = _stamp(msg.header)
                for state in msg.actuators:
                    rec.actuators.setdefault(state.name, _Series()).add(
                        stamp, goal=state.goal_position, enabled=bool(state.torque_enable),
                        control=state.control, unit=state.control_unit)
            elif conn.topic == TOPIC_BENCH_INFO:
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
    if open_:
        tid, (stamp, msg) = min(open_.items(), key=lambda item: item[1][0])
        raise BamError(f"bag {label}: trial {tid} ('{msg.trajectory}', started at "
                       f"{stamp * 1e-9:.6f} s) has no END marker; the recording stopped "
                       "during the run, re-record it or cut the bag before that trial")
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


def _finite_or_fail(values: np.ndarray, stamps: np.ndarray, start: int, what: str,
                    where: str) -> None:
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        i = int(bad[0])
        raise BamError(f"{where}: {what} is {values[i]} at {(stamps[i] - start) * 1e-9:.6f} s "
                       f"into the trial (stamp {stamps[i] * 1e-9:.6f} s); repair or drop that "
                       "trial")


def read_bag(path: str | Path, dt: float = 0.005) -> list[BenchLog]:
    """The trials of a bench bag as bench logs on the time step ``dt`` (s).

    ``path`` is a rosbag2 folder or a single .mcap/.db3 file. Each START/END
    pair of /bam/trial becomes one log (runs ended with success = false are
    skipped), with the bench, actuator, supply voltage and damping of the
    latest /bam/bench_info at or before its start.
    """
    path = Path(path)
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0.0):
        raise BamError(f"time step dt must be a finite number > 0 s, got {dt}")
    dt_ns = int(round(dt * 1e9))
    if dt_ns < 1:
        raise BamError(f"time step dt must be at least 1 ns, got {dt}")
    label = _bag_label(path)
    rec = _load(path)
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
    try:
        bench = Bench(mass=float(info.mass), length=float(info.length),
                      arm_mass=float(info.arm_mass))
    except BamError as err:
        raise BamError(f"{where}: /bam/bench_info: {err}") from None

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
    position = values["position"][i0:i1].astype(np.float64)
    _finite_or_fail(position, stamps, t_start, f"position of joint '{joint}'", where)
    velocity = None
    has_velocity = values["has_velocity"][i0:i1]
    if has_velocity.any():
        velocity = values["velocity"][i0:i1].astype(np.float64)
        _finite_or_fail(velocity, stamps, t_start, f"velocity of joint '{joint}'", where)

    name = _pick(actuators, info.joint_name, "actuator", TOPIC_ACTUATOR_STATES, where)
    a_stamps, a_values = actuators[name]
    k0 = int(np.searchsorted(a_stamps, marker.start, side="left"))
    k1 = int(np.searchsorted(a_stamps, marker.end, side="left"))
    if k1 <= k0:
        raise BamError(f"{where}: no {TOPIC_ACTUATOR_STATES} for '{name}' between its markers; "
                       "record that topic")
    a_stamps = a_stamps[k0:k1]
    goal = a_values["goal"][k0:k1].astype(np.float64)
    _finite_or_fail(goal, a_stamps, t_start, f"goal position of '{name}'", where)
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
        _finite_or_fail(control, a_stamps, t_start, f"control of '{name}'", where)

    at = resample.grid_ns(int(stamps[-1]) - t_start, dt_ns)
    t_joint = (stamps - t_start) * 1e-9
    t_act = (a_stamps - t_start) * 1e-9
    supply = float(info.supply_voltage)
    damping = float(info.damping)
    return BenchLog(
        bench=bench, kp=marker.gain, dt=dt,
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
              "start_time": t_start * 1e-9},
        supply_voltage=(supply if act.family == servo.VOLTAGE and math.isfinite(supply)
                        and supply > 0.0 else None),
        damping=damping if math.isfinite(damping) and damping > 0.0 else None,
    )
