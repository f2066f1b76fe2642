"""A robot is any MuJoCo model with a joint map; the bench is a one-joint robot of that kind.

The joint map is read (and refused in one line where it is wrong); a bench log run
through the robot path (joint map, bind, rollout of a RobotRecording) gives the
positions of the MuJoCo pendulum the arm equivalence tests compare with the numba
pendulum, so the robot path inherits their bounds: to rounding against Algorithm 1
restated with MuJoCo's Euler update (M1), within 2 mrad of the numba rollout with the
identification integrator.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest
import yaml
from test_arm_equivalence import BENCHES, DT, MAX_MAE, semi_implicit_reference

from bam_sim.bench.rollouts import rollout as bench_rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.mujoco_arm.shipped_arms import arm_spec, pendulum_mjcf
from bam_sim.robot.joint_map import joint_map, load_joint_map
from bam_sim.robot.recording import RobotRecording
from bam_sim.robot.rollout import bind, latencies, rollout

PENDULUM = {"joints": [{"joint": "pendulum", "actuator": "mx64", "gain": 8}]}


def recording_of(log) -> RobotRecording:
    """The bench log as a one-joint robot's recording (at rest at its first goal)."""
    n = len(log)
    position = np.full((n, 1), log.goal[0])
    return RobotRecording(log.name or "bench", log.time - log.time[0], position,
                          log.goal[:, None].copy(), np.array([log.kp]),
                          log.enabled[:, None].astype(bool))


def robot_positions(log, params, identification: bool) -> np.ndarray:
    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(log.bench, timestep=log.dt))
    arm = bind(model, joint_map(PENDULUM), [params], identification)
    return rollout(arm, recording_of(log), np.zeros(1), latencies(params.vector()[None]))[:, 0]


@pytest.mark.parametrize("trajectory", list(TRAJECTORIES))
def test_the_bench_as_a_one_joint_robot_follows_algorithm1(trajectory: str) -> None:
    bench, kp = BENCHES["mx64"]
    params = published_named("mx64", "m1")
    log = command_log(trajectory, bench, kp, dt=DT)
    euler = robot_positions(log, params, identification=False)
    assert np.ptp(euler) > 0.3  # it moves
    # MuJoCo's own update: Algorithm 1 restated with it, to the friction constraint's
    # softness (test_arm_equivalence measured 0.2 µrad).
    assert np.mean(np.abs(euler - semi_implicit_reference(params, log))) <= 1e-6
    published_integrator = robot_positions(log, params, identification=True)
    reference = bench_rollout(params, log).position
    assert np.mean(np.abs(published_integrator - reference)) <= MAX_MAE


@pytest.mark.parametrize("latency", [0.004, 0.0123])  # s: within a tick, then 2.46 ticks
def test_the_latency_delays_the_goals_as_on_the_bench(latency: float) -> None:
    """The latency group on the one-joint robot (the goals cut at each switch, the step a
    switch falls inside on the average of both goals) against the bench's rollout of the
    same set (the goal interpolated between ticks): the identification integrator's bound,
    where the latency itself moves the arm by many times that."""
    bench, kp = BENCHES["mx64"]
    params = published_named("mx64", "m1").replace(**{"latency.command": latency})
    log = command_log("lift_drop", bench, kp, dt=0.005)
    delayed = robot_positions(log, params, identification=True)
    np.testing.assert_array_less(np.mean(np.abs(delayed - bench_rollout(params, log).position)),
                                 MAX_MAE)
    plain = robot_positions(log, published_named("mx64", "m1"), identification=True)
    assert np.mean(np.abs(delayed - plain)) > 3 * MAX_MAE


def test_a_latency_of_whole_samples_is_the_recording_with_its_goals_shifted() -> None:
    """Goals late by two sample periods: bit for bit the rollout of the goals two samples
    later (the first goal held before them), per joint (the arm's two joints apart)."""
    spec = arm_spec("feetech")
    joints = joint_map({"joints": [{"joint": j.joint, "actuator": j.actuator, "gain": 32}
                                   for j in spec.joints]})
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    arm = bind(model, joints, [published_named("sts3215", "m1")] * 2)
    n, every = 120, 5  # samples, MuJoCo steps apart
    goal = np.random.default_rng(1).uniform(-0.5, 0.5, (n // 10, 2)).repeat(10, axis=0)
    rec = RobotRecording("steps", np.arange(n) * every * arm.dt, np.zeros((n, 2)), goal,
                         np.full(2, 32.0), np.ones((n, 2), bool))
    late = rollout(arm, rec, np.zeros(2), np.array([2 * every * arm.dt, 0.0]))
    shifted = goal.copy()
    shifted[2:, 0], shifted[:2, 0] = goal[:-2, 0], goal[0, 0]
    again = rollout(arm, dataclasses.replace(rec, goal=shifted), np.zeros(2))
    np.testing.assert_array_equal(late, again)
    assert np.abs(late - rollout(arm, rec, np.zeros(2))).max() > 0.02  # measured 0.048


def test_an_offset_moves_the_reading_and_the_goal_together() -> None:
    """The servo sees its reading: an offset o shifts the goal in the model by −o, so a
    joint without gravity holds its goal reading whatever o is."""
    bench, kp = BENCHES["mx64"]
    log = command_log(list(TRAJECTORIES)[0], bench, kp, dt=DT)
    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(log.bench, timestep=log.dt))
    model.opt.gravity[:] = 0.0
    arm = bind(model, joint_map(PENDULUM), [published_named("mx64", "m1")])
    rec = recording_of(log)
    plain = rollout(arm, rec, np.zeros(1))
    shifted = rollout(arm, rec, np.array([0.1]))
    np.testing.assert_allclose(shifted, plain, atol=1e-9)


def test_the_shipped_arm_as_a_robot_moves_each_joint_to_its_goal() -> None:
    spec = arm_spec("feetech")
    joints = joint_map({"joints": [{"joint": j.joint, "actuator": j.actuator, "gain": 32}
                                   for j in spec.joints]})
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    arm = bind(model, joints, [published_named("sts3215", "m1")] * 2)
    n = 3000  # 3 s at 1 ms: long enough to settle
    goal = np.tile([0.4, -0.3], (n, 1))
    rec = RobotRecording("hold", np.arange(n) * arm.dt, np.zeros((n, 2)), goal,
                         np.full(2, 32.0), np.ones((n, 2), bool))
    q = rollout(arm, rec, np.zeros(2))
    # A P law under gravity rests near, not at, its goal: within a few degrees.
    np.testing.assert_allclose(q[-1], goal[-1], atol=0.05)
    assert np.abs(np.diff(q[-100:], axis=0)).max() < 1e-4  # at rest


def test_a_recording_sampled_faster_than_the_model_steps_is_refused() -> None:
    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(BENCHES["mx64"][0], timestep=0.01))
    arm = bind(model, joint_map(PENDULUM), [published_named("mx64", "m1")])
    n = 10
    rec = RobotRecording("fast", np.arange(n) * 0.002, np.zeros((n, 1)), np.zeros((n, 1)),
                         np.array([8.0]), np.ones((n, 1), bool))
    with pytest.raises(BamError, match="faster than the robot model's timestep"):
        rollout(arm, rec, np.zeros(1))


def test_a_joint_map_file_reads_back_what_it_dumps(tmp_path) -> None:
    path = tmp_path / "joints.yaml"
    path.write_text(yaml.safe_dump({"joints": [
        {"joint": "shoulder", "actuator": "sts3215", "gain": 32, "offset": 0.01,
         "reading": {"column": 1, "unit": "ticks", "zero": 2048, "direction": -1}},
        {"joint": "elbow", "actuator": "sts3215", "gain": "recorded", "type": "wrist",
         "model": "m4", "reading": {"column": 0, "unit": "deg"}}]}))
    joints = load_joint_map(path)
    assert joints.names == ["shoulder", "elbow"]
    assert joints.types() == {"sts3215": [0], "wrist": [1]}
    assert joints.joints[1].gain is None  # recorded
    assert joints.joints[0].model is None and joints.joints[1].model is get_model("m4")
    assert not joints.modelled and joints.with_model(get_model("m1")).modelled
    # 2048 + 1024 ticks, turning against the joint: −π/2.
    assert joints.joints[0].reading.to_radians(np.array([3072.0]))[0] == pytest.approx(-np.pi / 2)
    assert joints.joints[1].reading.to_radians(np.array([90.0]))[0] == pytest.approx(np.pi / 2)
    again = tmp_path / "again.yaml"
    again.write_text(joints.with_offsets({"elbow": -0.02}).dump())
    back = load_joint_map(again)
    assert back.offsets.tolist() == [0.01, -0.02]
    assert [j.reading for j in back.joints] == [j.reading for j in joints.joints]
    assert [j.model for j in back.joints] == [j.model for j in joints.joints]
    assert back.per_joint().types() == {"shoulder": [0], "elbow": [1]}


@pytest.mark.parametrize("entry, phrase", [
    ({"joint": "a", "actuator": "nope", "gain": 1}, "unknown actuator 'nope'"),
    ({"joint": "a", "actuator": "sts3215"}, "give the firmware gain"),
    ({"joint": "a", "actuator": "sts3215", "gain": 32, "reading": {"unit": "grad"}},
     "reading unit must be one of"),
    ({"joint": "a", "actuator": "sts3215", "gain": 32, "colour": 1}, "unknown key 'colour'"),
    ({"joint": "a", "actuator": "sts3215", "gain": 32, "offset": 90}, "beyond half a turn"),
    ({"actuator": "sts3215", "gain": 32}, "give the MJCF joint's name"),
    ({"joint": "a", "actuator": "sts3215", "gain": 32, "model": "m7"},
     "joint 'a': unknown friction model 'm7'"),
])
def test_a_wrong_joint_map_is_refused_in_one_line(entry, phrase) -> None:
    with pytest.raises(BamError, match=phrase) as info:
        joint_map({"joints": [entry]}, "joints.yaml")
    assert "\n" not in str(info.value)


def test_a_joint_mapped_twice_is_refused() -> None:
    entry = {"joint": "a", "actuator": "sts3215", "gain": 32}
    with pytest.raises(BamError, match="joint 'a' is given twice"):
        joint_map({"joints": [entry, {**entry, "reading": {"column": 1}}]})
    with pytest.raises(BamError, match="write a 'joints:' list"):
        joint_map({"joint": "a"})


@pytest.mark.parametrize("other, what", [({"actuator": "xl330", "gain": 400}, "actuators"),
                                         ({"model": "m4"}, "models")])
def test_joints_of_one_type_share_an_actuator_and_a_model(other, what) -> None:
    """A type is one parameter set: joints of two actuators or two models are two types."""
    first = {"joint": "a", "actuator": "sts3215", "gain": 32, "type": "arm", "model": "m1"}
    second = {**first, "joint": "b", "reading": {"column": 1}, **other}
    with pytest.raises(BamError, match=f"joints 'a' and 'b' are of type 'arm' but their "
                                       f"{what} differ") as info:
        joint_map({"joints": [first, second]}, "joints.yaml")
    assert "\n" not in str(info.value)
    assert joint_map({"joints": [first, {**second, "type": "b"}]}).types() == {"arm": [0],
                                                                             "b": [1]}
