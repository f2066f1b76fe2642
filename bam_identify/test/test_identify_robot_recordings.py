"""A robot's recordings read: LeRobot datasets (v2.x, v3.0) and rosbag2 bags, with refusals."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest
from robot_recordings import ACTION, STATE, Commands, write_lerobot, write_robot_bag

from bam_identify.data.lerobot import read_lerobot
from bam_identify.data.robot_bags import read_robot_bag
from bam_sim.common.errors import BamError
from bam_sim.robot.joint_map import joint_map

JOINTS = ["shoulder_pan", "elbow_flex", "gripper"]
READINGS = [{"unit": "deg"},
            {"unit": "ticks", "zero": 2048, "direction": -1},
            {"unit": "rad"}]


def robot(readings=READINGS, gains=(32, 16, 32), columns=(0, 1, 2)):
    return joint_map({"joints": [
        {"joint": name, "actuator": "sts3215", "gain": gain, "reading": {**reading, "column": c}}
        for name, reading, gain, c in zip(JOINTS, readings, gains, columns)]})


def raw(q: np.ndarray, jmap) -> np.ndarray:
    """The readings (T, n) of joint positions ``q`` (T, n), rad: the inverse of to_radians."""
    return np.column_stack([j.reading.direction * x / j.reading.scale + j.reading.zero
                            for j, x in zip(jmap.joints, q.T)])


def motion(count: int, fps: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Smooth positions (count, 3) and goals a frame ahead of them, rad."""
    t = np.arange(count + 1) / fps
    phase = np.random.default_rng(seed).uniform(0, 2 * math.pi, 3)
    q = 1.2 * np.sin(2.0 * t[:, None] + phase) + np.array([0.1, -0.3, 0.4])
    return q[:-1], q[1:]


# -- LeRobot -----------------------------------------------------------------------------

@pytest.fixture
def pq():
    import pyarrow.parquet

    return pyarrow.parquet


def dataset(folder, version, jmap=None, fps=30, lengths=(40, 55, 31), names=None, order=None):
    """A dataset of episodes of ``lengths`` frames; the truth (q, goal) per episode."""
    jmap = jmap or robot()
    order = order or [0, 1, 2]  # dataset column of each joint
    truth, episodes = [], []
    for i, count in enumerate(lengths):
        q, goal = motion(count, fps, i)
        truth.append((q, goal))
        state, action = np.empty_like(q), np.empty_like(q)
        state[:, order], action[:, order] = raw(q, jmap), raw(goal, jmap)
        episodes.append({STATE: state, ACTION: action})
    write_lerobot(folder, version, episodes, fps, names)
    return truth


@pytest.mark.parametrize("version", ["v2.0", "v2.1", "v3.0"])
def test_lerobot_reads_back_radians_per_episode(tmp_path, pq, version):
    truth = dataset(tmp_path, version)
    recordings = read_lerobot(tmp_path, robot())
    assert [len(r) for r in recordings] == [40, 55, 31]  # v3.0: episodes 0, 1 share a file
    for rec, (q, goal) in zip(recordings, truth):
        np.testing.assert_allclose(rec.position, q, atol=2e-6)  # float32 readings
        np.testing.assert_allclose(rec.goal, goal, atol=2e-6)
        np.testing.assert_allclose(rec.time, np.arange(len(q)) / 30, atol=1e-12)
        assert rec.enabled.all() and rec.gain.tolist() == [32, 16, 32]
    picked = read_lerobot(tmp_path, robot(), episodes=[2])
    assert len(picked) == 1 and picked[0].name.endswith("#episode 2")
    np.testing.assert_allclose(picked[0].position, truth[2][0], atol=2e-6)


def test_lerobot_matches_joints_by_name_before_columns(tmp_path, pq):
    names = ["gripper.pos", "shoulder_pan.pos", "elbow_flex.pos"]
    truth = dataset(tmp_path, "v3.0", names=names, order=[1, 2, 0], lengths=(30,))
    (rec,) = read_lerobot(tmp_path, robot())  # the map's columns say 0, 1, 2
    np.testing.assert_allclose(rec.position, truth[0][0], atol=2e-6)


def test_lerobot_irregular_frames_go_onto_the_fps_grid(tmp_path, pq):
    fps, count = 30, 60
    t = np.arange(count) / fps + np.random.default_rng(1).uniform(-0.004, 0.004, count)
    t[0] = 0.0
    q = np.column_stack([0.5 * t, -0.2 * t, 0.1 + 0 * t])  # linear: interpolated exactly
    goal = np.column_stack([np.floor(t * 3), np.floor(t * 3), np.floor(t * 3)]) * 0.1
    jmap = robot(readings=[{"unit": "rad"}] * 3)
    write_lerobot(tmp_path, "v2.1", [{STATE: q, ACTION: goal, "timestamp": t}], fps)
    (rec,) = read_lerobot(tmp_path, jmap)
    grid = np.arange(len(rec)) / fps
    assert len(rec) == int(t[-1] * fps + 1e-9) + 1
    np.testing.assert_allclose(rec.position[:, 0], 0.5 * grid, atol=1e-6)
    held = goal[np.searchsorted(t.astype(np.float32), grid, side="right") - 1]
    np.testing.assert_allclose(rec.goal, held, atol=1e-6)


def test_lerobot_refusals(tmp_path, pq):
    with pytest.raises(BamError, match="not a LeRobot dataset"):
        read_lerobot(tmp_path, robot())
    dataset(tmp_path / "ok", "v3.0")
    with pytest.raises(BamError, match="a LeRobot dataset does not record it"):
        read_lerobot(tmp_path / "ok", robot(gains=(32, "recorded", 32)))
    with pytest.raises(BamError, match="reads column 5 of observation.state, which holds 3"):
        read_lerobot(tmp_path / "ok", robot(columns=(0, 1, 5)))
    with pytest.raises(BamError, match="is it in degrees\\? set reading unit: deg"):
        read_lerobot(tmp_path / "ok", robot(readings=[{"unit": "rad"}] * 3))
    with pytest.raises(BamError, match="has no episode 7"):
        read_lerobot(tmp_path / "ok", robot(), episodes=[0, 7])
    dataset(tmp_path / "slow", "v2.1", fps=10)
    with pytest.raises(BamError, match="record at 20 fps at least"):
        read_lerobot(tmp_path / "slow", robot())
    info_path = tmp_path / "ok" / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "codebase_version": "v1.6"}))
    with pytest.raises(BamError, match="LeRobot format 'v1.6' is not read"):
        read_lerobot(tmp_path / "ok", robot())


def test_lerobot_refuses_a_missing_column_and_contradicting_names(tmp_path, pq):
    dataset(tmp_path / "a", "v2.1", lengths=(30,))
    file = tmp_path / "a" / "data" / "chunk-000" / "episode_000000.parquet"
    pq.write_table(pq.read_table(file).drop_columns(["action"]), file)
    with pytest.raises(BamError, match="has no column 'action'"):
        read_lerobot(tmp_path / "a", robot())
    # Names that name one joint of the map elsewhere than the map's column for it.
    dataset(tmp_path / "b", "v2.1", lengths=(30,), names=["elbow_flex", "wrist", "gripper"])
    with pytest.raises(BamError, match="column 0 of observation.state is 'elbow_flex'"):
        read_lerobot(tmp_path / "b", robot())


def test_lerobot_warns_of_degrees_that_look_like_radians(tmp_path, pq, caplog):
    jmap = robot(readings=[{"unit": "deg"}] * 3)
    q, goal = motion(400, 30, 0)  # 13 s, within ±1.6 "degrees": radians labelled deg
    write_lerobot(tmp_path, "v3.0", [{STATE: q, ACTION: goal}], 30)
    with caplog.at_level(logging.WARNING):
        read_lerobot(tmp_path, jmap)
    assert "if they are radians, set reading unit: rad" in caplog.text


# -- rosbag2 -----------------------------------------------------------------------------

NS = 1e-9
STATE_NAMES = ["gripper", "extra", "shoulder_pan", "elbow_flex"]  # not the map's order
SLOPE = np.array([0.3, -0.2, 0.5, 0.1])  # rad/s per joint_states entry


def states(count: int = 200, step_ns: int = 10_000_000):
    """joint_states from 1 s on, every ``step_ns``: positions linear in time."""
    t = (1_000_000_000 + np.arange(count) * step_ns) * NS
    return t, STATE_NAMES, 0.1 + t[:, None] * SLOPE


def truth(t: np.ndarray) -> np.ndarray:
    """The map joints' positions (T, 3) at absolute times ``t`` (T,)."""
    q = 0.1 + t[:, None] * SLOPE
    return q[:, [STATE_NAMES.index(j) for j in JOINTS]]


def commands(topic: str, start_ns: int = 1_005_000_000, count: int = 40, **extra) -> Commands:
    """Goals every 40 ms from ``start_ns``: goal m of joint j is m + j/10."""
    t = (start_ns + np.arange(count) * 40_000_000) * NS
    goal = np.arange(count)[:, None] + np.arange(3) / 10.0
    return Commands(topic, t, JOINTS, goal, **extra)


def check_held(rec, first: float) -> None:
    """Grid every 10 ms from ``first`` (s, absolute); goals change every fourth sample, the
    last (39) held to the end."""
    assert rec.period == pytest.approx(0.01, abs=1e-12)
    np.testing.assert_allclose(np.diff(rec.time), 0.01, atol=1e-12)
    np.testing.assert_allclose(rec.position, truth(first + rec.time), atol=1e-9)
    k = np.arange(len(rec))
    np.testing.assert_allclose(rec.goal, np.minimum(k // 4, 39)[:, None] + np.arange(3) / 10)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_bag_with_bam_commands_reads_gains_enables_and_held_goals(tmp_path, storage):
    enabled = np.ones((40, 3), bool)
    enabled[10:, 1] = False
    cmd = commands("bam/commands", gain=np.full((40, 3), 24.0), enabled=enabled)
    bag = write_robot_bag(tmp_path / "bag", states(), [cmd], namespace="so101", storage=storage,
                          delay=0.003)
    (rec,) = read_robot_bag(bag, robot(gains=(32, "recorded", 32)))
    check_held(rec, 1.005)  # header stamps, not the received times 3 ms later
    assert rec.gain.tolist() == [32, 24, 32]
    on = rec.enabled[:, 1]
    assert on[: 40].all() and not on[40:].any() and rec.enabled[:, [0, 2]].all()
    assert len(rec) == 199  # 1.005 s to the last joint state (2.99 s), not beyond


@pytest.mark.parametrize("topic, first", [("joint_commands", 1.005),
                                          ("position_commands", 1.008),  # received time
                                          ("arm_controller/commands", 1.008),
                                          ("arm_controller/controller_state", 1.005)])
def test_bag_goal_sources_under_a_namespace(tmp_path, topic, first):
    bag = write_robot_bag(tmp_path / "bag", states(), [commands(topic)], namespace="/r1/",
                          delay=0.003)
    (rec,) = read_robot_bag(bag, robot())
    check_held(rec, first)


def test_bag_prefers_bam_commands_and_skips_an_undecodable_controller_state(tmp_path):
    def offset(topic, by):  # goals that only the wrong source would give
        c = commands(topic)
        return Commands(c.topic, c.time, JOINTS, c.goal + by)

    bag = write_robot_bag(tmp_path / "b", states(), [offset("joint_commands", 100.0),
                                                     commands("bam/commands"),
                                                     offset("c/controller_state", 200.0)])
    check_held(read_robot_bag(bag, robot())[0], 1.005)
    broken = "/c/controller_state"
    bag = write_robot_bag(tmp_path / "c", states(), [commands("joint_commands"),
                                                     commands("c/controller_state")],
                          broken=[broken])
    check_held(read_robot_bag(bag, robot())[0], 1.005)
    bag = write_robot_bag(tmp_path / "d", states(), [commands("c/controller_state")],
                          broken=[broken])
    with pytest.raises(BamError, match="controller_state skipped.*record the commands sent"):
        read_robot_bag(bag, robot())


def test_bag_refusals(tmp_path):
    def refused(name, match, state=None, cmds=None, **kw):
        cmds = [commands("joint_commands")] if cmds is None else cmds
        bag = write_robot_bag(tmp_path / name, state or states(), cmds)
        with pytest.raises(BamError, match=match) as err:
            read_robot_bag(bag, robot(**kw))
        assert "\n" not in str(err.value)

    only = commands("joint_commands")
    refused("no_states", "has no joint_states", state=(only.time[:0], [], np.empty((0, 3))))
    t, names, q = states()
    refused("unknown", "joint 'elbow_flex' is not in /joint_states of .*; its joints are "
            "extra, gripper, shoulder_pan: fix the joint map's names",
            state=(t, names[:3], q[:, :3]))
    refused("no_goals", "record the commands sent: /joint_commands, /position_commands, "
            "bam/commands", cmds=())
    refused("no_gains", "holds no bam/commands gains", gains=(32, "recorded", 32))
    refused("slow", "record joint_states at 20 Hz at least", state=states(40, 100_000_000))
    gains = np.full((40, 3), 24.0)
    gains[20:] = 30.0
    refused("gain_changes", "its gain changes during .* \\(24, 30\\)",
            cmds=[commands("bam/commands", gain=gains)], gains=(32, "recorded", 32))
