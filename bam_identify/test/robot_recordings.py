"""Robot recordings written for the tests: LeRobot datasets (v2.x, v3.0) and robot bags."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from bam_identify.data.bag_topics import ROSBAG2_VERSION, STORAGES
from bam_identify.data.robot_bags import ACTUATOR_COMMAND, FLOAT64_ARRAY, JTC_STATE
from bam_identify.data.typestore import JOINT_STATE, bam_msg_definitions

STATE, ACTION = "observation.state", "action"

# A JointTrajectoryController's state, reduced to what the reader needs (our own text).
JTC_STATE_MSG = """std_msgs/Header header
string[] joint_names
trajectory_msgs/JointTrajectoryPoint reference
trajectory_msgs/JointTrajectoryPoint feedback
trajectory_msgs/JointTrajectoryPoint error
"""


def write_lerobot(folder: Path, version: str, episodes: Sequence[dict], fps: float,
                  names: Sequence[str] | None = None, per_file: int = 2) -> Path:
    """A LeRobot dataset of ``episodes`` at ``folder``, in format ``version`` (v2.x or v3.0).

    Each episode: ``observation.state`` and ``action`` (T, n), optionally ``timestamp``
    (T,) (default k/fps). v2.x: one file per episode, vectors as lists; v3.0:
    ``per_file`` episodes per file, vectors as fixed-size lists.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    width = np.asarray(episodes[0][STATE]).shape[1]
    vector = pa.list_(pa.float32(), width) if version == "v3.0" else pa.list_(pa.float32())
    tables, first = [], 0
    for index, episode in enumerate(episodes):
        count = len(episode[STATE])
        time = episode.get("timestamp", np.arange(count) / fps)
        tables.append(pa.table({
            STATE: pa.array(list(np.asarray(episode[STATE], np.float32)), vector),
            ACTION: pa.array(list(np.asarray(episode[ACTION], np.float32)), vector),
            "timestamp": pa.array(np.asarray(time, np.float32)),
            "frame_index": pa.array(np.arange(count)),
            "episode_index": pa.array(np.full(count, index)),
            "index": pa.array(first + np.arange(count)),
            "task_index": pa.array(np.zeros(count, np.int64))}))
        first += count
    data = folder / "data" / "chunk-000"
    data.mkdir(parents=True)
    if version == "v3.0":
        for k in range(0, len(tables), per_file):
            pq.write_table(pa.concat_tables(tables[k:k + per_file]),
                           data / f"file-{k // per_file:03d}.parquet")
        path = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    else:
        for index, table in enumerate(tables):
            pq.write_table(table, data / f"episode_{index:06d}.parquet")
        path = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
    vector_feature = {"dtype": "float32", "shape": [width],
                      "names": None if names is None else list(names)}
    scalar = {"dtype": "int64", "shape": [1], "names": None}
    info = {"codebase_version": version, "robot_type": "so101_follower", "fps": fps,
            "total_episodes": len(episodes), "total_frames": first, "chunks_size": 1000,
            "data_path": path, "video_path": None,
            "features": {STATE: vector_feature, ACTION: vector_feature,
                         "timestamp": {"dtype": "float32", "shape": [1], "names": None},
                         "frame_index": scalar, "episode_index": scalar, "index": scalar,
                         "task_index": scalar}}
    (folder / "meta").mkdir()
    (folder / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return folder


@dataclass(frozen=True)
class Commands:
    """Goals sent on ``topic`` (relative: bam/commands, joint_commands, position_commands,
    commands, controller_state): at ``time`` (K,) s, ``goal`` (K, n) for ``names``;
    ``gain`` and ``enabled`` (K, n) only on bam/commands."""

    topic: str
    time: np.ndarray
    names: Sequence[str]
    goal: np.ndarray
    gain: np.ndarray | None = None
    enabled: np.ndarray | None = None


def _store():
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict = {}
    for name, text in bam_msg_definitions().items():
        types.update(get_types_from_msg(text, name))
    types.update(get_types_from_msg(JTC_STATE_MSG, JTC_STATE))
    store.register(types)
    return store


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _header(store, seconds: float):
    sec, nanosec = divmod(_ns(seconds), 1_000_000_000)
    return store.types["std_msgs/msg/Header"](
        stamp=store.types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id="")


def _command(store, c: Commands, k: int) -> tuple[str, object]:
    """The message type and message of the ``k``-th command of ``c``, by its topic."""
    t, names, goal = c.time[k], list(c.names), np.asarray(c.goal[k], np.float64)
    empty = np.empty(0)
    if c.topic.endswith("bam/commands"):
        return ACTUATOR_COMMAND, store.types[ACTUATOR_COMMAND](
            header=_header(store, t), names=names, goal_positions=goal,
            torque_enables=np.asarray(c.enabled[k], bool) if c.enabled is not None else
            np.empty(0, bool), gains=np.asarray(c.gain[k], np.float64)
            if c.gain is not None else empty)
    if c.topic.endswith("joint_commands"):
        return JOINT_STATE, store.types[JOINT_STATE](
            header=_header(store, t), name=names, position=goal, velocity=empty, effort=empty)
    if c.topic.endswith("controller_state"):
        point = store.types["trajectory_msgs/msg/JointTrajectoryPoint"]
        blank = point(positions=empty, velocities=empty, accelerations=empty, effort=empty,
                      time_from_start=store.types["builtin_interfaces/msg/Duration"](0, 0))
        reference = point(positions=goal, velocities=empty, accelerations=empty, effort=empty,
                          time_from_start=blank.time_from_start)
        return JTC_STATE, store.types[JTC_STATE](header=_header(store, t), joint_names=names,
                                                 reference=reference, feedback=blank,
                                                 error=blank)
    layout = store.types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
    return FLOAT64_ARRAY, store.types[FLOAT64_ARRAY](layout=layout, data=goal)


def write_robot_bag(path: Path, states: tuple, commands: Sequence[Commands],
                    namespace: str = "", storage: str = "mcap", delay: float = 0.0,
                    broken: Sequence[str] = ()) -> Path:
    """A robot's bag at ``path``: ``states`` = (time (T,) s, names, position (T, n)) on
    joint_states and ``commands`` on their topics, all under ``namespace``; each command
    received ``delay`` s after its stamp (joint states at it). Topics in ``broken`` store an
    unusable definition.
    """
    store = _store()
    prefix = "/" + namespace.strip("/") if namespace.strip("/") else ""
    time, names, position = states
    messages = [(f"{prefix}/joint_states", t, JOINT_STATE, store.types[JOINT_STATE](
        header=_header(store, t), name=list(names), position=np.asarray(q, np.float64),
        velocity=np.empty(0), effort=np.empty(0))) for t, q in zip(time, position)]
    for c in commands:
        messages += [(f"{prefix}/{c.topic}", c.time[k] + delay, *_command(store, c, k))
                     for k in range(len(c.time))]
    with Writer(path, version=ROSBAG2_VERSION, storage_plugin=STORAGES[storage]) as writer:
        conns = {}
        for topic, received, msgtype, msg in sorted(messages, key=lambda m: m[1]):
            if topic not in conns:
                stored = ({"msgdef": "not a definition", "rihs01": "RIHS01_" + "0" * 64}
                          if topic in broken else {"typestore": store})
                conns[topic] = writer.add_connection(topic, msgtype, **stored)
            writer.write(conns[topic], _ns(received), bytes(store.serialize_cdr(msg, msgtype)))
    return path
