"""Write bench recordings as rosbag2 bags from bench logs, without ROS.

:func:`write_bag` writes the bag the bench would have recorded for some
bench logs (tests, conversions of legacy logs); :func:`write_messages` any
sequence of bench messages. Both use rosbags, so neither needs ROS; the
topics and QoS are those of :mod:`bam_identify.data.bag_topics`.

:func:`flush_recording` is for a live recording (the recorder node): rosbags
holds an MCAP chunk in memory until it reaches 1 MiB (several seconds of a
bench at 200 Hz) and even the file header in a write buffer, so a recording
killed with SIGKILL would leave an empty file. Flushed every
:data:`FLUSH_PERIOD`, a killed recording loses at most that much, and
``recover`` finds the rest.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.storage_mcap import McapWriter

from bam_identify.data.bag_folder import check_replaceable
from bam_identify.data.bag_topics import (
    END,
    QOS_STATE,
    ROSBAG2_VERSION,
    START,
    STORAGES,
    TOPIC_ACTUATOR_STATES,
    TOPIC_BENCH_INFO,
    TOPIC_JOINT_STATES,
    TOPIC_QOS,
    TOPIC_TRIAL,
    TOPICS,
)
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
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import CURRENT, Actuator


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
    ``(log, trajectory, gain, trial_id, repetition)``. ``actuator``: the registry's
    record.
    """

    actuator: Actuator
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
    unit: str = ""  # the servo unit that recorded (BenchInfo.unit)


def _as_trial(item: BagTrial | tuple, where: str) -> BagTrial:
    if isinstance(item, BagTrial):
        return item
    if isinstance(item, (tuple, list)) and 2 <= len(item) <= 5:
        return BagTrial(*item)
    raise BamError(f"{where}: a trial must be a BagTrial or a tuple (log, trajectory, gain, "
                   f"trial_id, repetition), got {type(item).__name__}")


def _session_fields(session: BagSession, trials: list[BagTrial], where: str) -> dict:
    """The BenchInfo fields of a session, checked against its logs."""
    act = session.actuator
    first = trials[0].log
    bench = Bench(
        mass=first.bench.mass if session.mass is None else session.mass,
        length=first.bench.length if session.length is None else session.length,
        arm_mass=first.bench.arm_mass if session.arm_mass is None else session.arm_mass,
    )
    voltage = session.supply_voltage
    if voltage is None:
        voltage = first.supply_voltage if first.supply_voltage is not None else act.supply_voltage
    if act.family == CURRENT:
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
        "unit": session.unit,
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
    temperature = log.temperature if log.temperature is not None else np.full(n, np.nan)
    voltage = log.input_voltage if log.input_voltage is not None else np.full(n, np.nan)
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
            input_voltage=float(voltage[k]), temperature=float(temperature[k]),
            motor_torque=float(torque[k]),
            error_flags=0)
        yield TOPIC_ACTUATOR_STATES, stamp, m.ActuatorStateArray(header=m.header(stamp),
                                                                 actuators=[state])
    end = t0 + n * dt_ns
    yield TOPIC_TRIAL, end, m.Trial(header=m.header(end), event=END,
                                    success=bool(trial.success), **marker)


FLUSH_PERIOD = 1.0  # s: what a recording killed with SIGKILL may lose at most


def flush_recording(writer: Writer) -> None:
    """Put what ``writer`` has been given so far into its file (not synced to the disk: a
    killed process loses nothing the kernel has; a power cut is another matter).

    MCAP: the chunk being filled is closed (only once it holds a message: the
    schemas and channels, written into the first chunk, must come with one) and
    the file's buffer written. sqlite3 commits its own transactions: nothing to do.
    """
    storage = getattr(writer, "storage", None)
    if not isinstance(storage, McapWriter):
        return
    if storage.chunk.msgs:
        storage.close_chunk()
    storage.bio.flush()


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
    check_replaceable(path, overwrite, "allow overwriting (--force)")
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
    check_replaceable(Path(path), overwrite, "allow overwriting (--force)")
    messages = bench_messages(sessions, start_time, gap)  # bad input fails before writing
    return write_messages(path, messages, storage, overwrite)
