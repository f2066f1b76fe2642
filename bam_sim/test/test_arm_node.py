"""The MuJoCo arm node over DDS: sim-time stamps, commands vs an offline ServoArm, watchdog.

Each test runs an ArmNode and a probe node in this process, spun by one
executor in a background thread, on a private rclpy context and a domain of
their own. The swap contract (topics, types, QoS) is checked for this node by
test_swap_contract.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand, BenchInfo
from bam_sim.bench.geometry import Bench
from bam_sim.common import contract
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.mujoco_arm.shipped_arms import load_arm, pendulum_mjcf
from bam_sim.nodes.arm_node import ArmNode, main
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import SimProbe, closing, executable_error, stamp_ns

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, discovery included
DOMAIN = ros_domain(2)
JOINTS = ["shoulder", "elbow"]


@pytest.fixture(scope="module")
def context():
    with private_context(DOMAIN) as ctx:
        yield ctx


@pytest.fixture
def arm(context):
    """An arm node with these parameters, and a probe on its topics."""
    with closing(lambda **params: SimProbe(context, ArmNode, "arm", TIMEOUT, **params)) as make:
        yield make


def test_joint_states_of_both_joints_stamped_in_sim_time(arm):
    a = arm(publish_every=5, start_time=100.0, real_time_factor=2.0)
    a.wait_ready()
    a.wait_sim(0.2)
    start = 100 * 1_000_000_000
    stamps = np.array([stamp_ns(m) for m in list(a.joint_states)])
    assert np.all(np.diff(stamps) == 5_000_000), "stamps not spaced 5 steps of 1 ms"
    assert stamps[0] >= start and (stamps[0] - start) % 5_000_000 == 0
    assert np.all(np.diff([stamp_ns(m) for m in list(a.actuator_states)]) == 5_000_000)
    clocks = np.array([c.clock.sec * 1_000_000_000 + c.clock.nanosec for c in list(a.clocks)])
    assert clocks.size and np.all((clocks - start) % 5_000_000 == 0)
    assert np.all(np.diff(clocks) > 0)
    msg = a.joint_states[-1]
    assert list(msg.name) == JOINTS
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 2
    states = a.last_state()
    assert [s.name for s in states] == JOINTS
    assert [(s.control_unit, s.input_voltage, s.gain, s.error_flags) for s in states] == \
        [("V", 15.0, 8.0, 0)] * 2
    assert all(math.isnan(s.current) and math.isnan(s.temperature) for s in states)


def replay(a, samples: list, states: dict, joints: dict, every: int, **arm_kw):
    """The node's samples replayed on an offline ServoArm: the positions it gives."""
    offline = load_arm("dynamixel", **arm_kw)
    offline.reset(q=[0.0, 0.0])
    first = samples[0] // 1_000_000
    if first:  # before the first received sample: the initial command, at rest
        offline.step(first)
    positions = []
    for t in samples:
        positions.append(offline.state().q)
        s = states[t]
        offline.set_command(goals=[x.goal_position for x in s],
                            torque_enables=[x.torque_enable for x in s],
                            gains=[x.gain for x in s])
        offline.step(every)
    return np.array(positions)


def _goals(a) -> tuple:
    """The goal positions of the latest actuator states, in joint order."""
    return tuple(x.goal_position for x in a.last_state())


def test_commands_move_the_arm_as_an_offline_servo_arm_does(arm):
    a = arm(publish_every=4, real_time_factor=2.0)
    a.wait_ready()
    # Each command taken (seen in the states) before simulated time is counted from it: a
    # loaded machine may take it late.
    a.send(ActuatorCommand(names=["gripper", "elbow", "shoulder"], goal_positions=[9.0, 0.5, -0.4],
                           gains=[9.0, 32.0, 32.0]))
    a.wait_for(lambda: _goals(a) == (-0.4, 0.5), "the goals taken")
    a.wait_sim(0.6)
    a.send(ActuatorCommand(names=["elbow"], torque_enables=[False]))
    a.wait_for(lambda: not a.last_state()[1].torque_enable, "the torque off taken")
    a.wait_sim(0.3)
    a.send(ActuatorCommand(goal_positions=[0.3, 0.1], torque_enables=[True, True]))
    a.wait_for(lambda: _goals(a) == (0.3, 0.1), "the new goals taken")
    a.wait_sim(0.8)
    joints = {stamp_ns(m): m for m in list(a.joint_states)}
    states = {stamp_ns(m): m.actuators for m in list(a.actuator_states)}
    samples = sorted(set(joints) & set(states))
    assert np.all(np.diff(samples) == 4_000_000), "samples lost"
    goals = {tuple(x.goal_position for x in states[t]) for t in samples}
    assert {(-0.4, 0.5), (0.3, 0.1)} <= goals
    assert not all(states[t][1].torque_enable for t in samples)
    position = np.array([joints[t].position for t in samples])
    expected = replay(a, samples, states, joints, 4)
    np.testing.assert_allclose(position, expected, rtol=0, atol=1e-12)
    # Towards the goal: from 0.3 rad away to within a small steady-state error.
    final = position[-1]
    assert np.all(np.abs(final - [0.3, 0.1]) < 0.05), final
    assert np.ptp(position[:, 0]) > 0.3


def test_position_commands_set_one_goal_per_joint(arm):
    a = arm(publish_every=10, real_time_factor=4.0)
    a.wait_ready()
    a.send(Float64MultiArray(data=[0.25, -0.15]))
    a.wait_for(lambda: [s.goal_position for s in a.last_state()] == [0.25, -0.15], "goals")
    a.send(Float64MultiArray(data=[0.2, 0.1, 7.0]))  # extra values: warned, ignored
    a.wait_for(lambda: [s.goal_position for s in a.last_state()] == [0.2, 0.1], "goals")
    a.wait_sim(1.5)
    position = np.array(a.joint_states[-1].position)
    assert np.all(np.abs(position - [0.2, 0.1]) < 0.05), position
    assert not a.node.rejected_commands


def test_bench_info_describes_the_arm_joint_by_joint(arm, tmp_path):
    mine = save(published_named("erob80_50", "m3"), tmp_path / "erob80_50_m3.yaml")
    a = arm(arm="erob", params_files=["", str(mine)], models=["m2", ""])
    a.wait_ready()
    # A subscriber joining after the arm started: the latched BenchInfo still arrives.
    with a.late_subscriber(BenchInfo, contract.BENCH_INFO, "latched bench info") as infos:
        info = infos[0]
        assert (info.actuator, info.joint_name, info.control_unit, info.model) == \
            ("erob80_100,erob80_50", "shoulder,elbow", "A,A", "m2,m3")
        assert info.parameters == f"published,{mine}"
        assert info.source == BenchInfo.SOURCE_SIM and info.control_rate == 1000.0
        assert (info.gravity, info.supply_voltage) == (9.80665, 48.0)  # shared by the joints
        assert math.isnan(info.damping)  # 2.0 (eRob80:100) and 1.0 (eRob80:50) differ
        assert math.isnan(info.mass) and math.isnan(info.length) and math.isnan(info.arm_mass)
    models = [j.params.model.name for j in a.node.arm.joints]
    assert models == ["m2", "m3"]
    assert [s.gain for s in a.last_state()] == [25.0, 25.0]


def test_command_timeout_turns_every_joint_off_to_the_step(arm):
    # 0.5 s = 500 steps, not a multiple of the 7-step period: off from step 500,
    # first reported by the sample of step 504.
    a = arm(publish_every=7, real_time_factor=4.0, command_timeout=0.5)
    a.wait_ready()
    a.wait_for(lambda: not any(s.torque_enable for s in a.last_state()), "watchdog")
    first_off = next(m for m in list(a.actuator_states)
                     if not any(s.torque_enable for s in m.actuators))
    assert stamp_ns(first_off) == 504_000_000
    on = [m for m in list(a.actuator_states) if all(s.torque_enable for s in m.actuators)]
    assert stamp_ns(on[-1]) == 497_000_000
    a.send(ActuatorCommand(names=["shoulder", "elbow"], torque_enables=[True, True]))
    a.wait_for(lambda: all(s.torque_enable for s in a.last_state()), "torque on again")
    a.wait_for(lambda: not any(s.torque_enable for s in a.last_state()), "watchdog again")


def test_bad_commands_are_ignored_and_logged_once_per_kind(arm):
    a = arm(publish_every=5, real_time_factor=4.0, initial_positions=[0.1, -0.1])
    a.wait_ready()
    bad = [
        ActuatorCommand(names=["shoulder"], goal_positions=[0.1, 0.2]),  # lengths
        ActuatorCommand(goal_positions=[0.1]),  # no names: one per joint needed
        ActuatorCommand(names=["elbow"], goal_positions=[math.nan]),
        ActuatorCommand(names=["shoulder", "elbow"], gains=[8.0, -4.0]),
        ActuatorCommand(names=["wrist"], goal_positions=[0.3]),
        Float64MultiArray(data=[0.2]),
        Float64MultiArray(data=[0.2, math.inf]),
    ]
    a.send_rejected(bad, rounds=2)
    assert a.node.rejected_commands == {
        "commands/length": 4, "commands/value": 4, "commands/joint": 2,
        "position_commands/length": 2, "position_commands/value": 2}
    assert sorted(a.node.logged_command_errors) == sorted(a.node.rejected_commands)
    count = len(a.joint_states)
    a.wait_for(lambda: len(a.joint_states) > count + 20, "states after bad commands")
    assert [(s.goal_position, s.torque_enable, s.gain) for s in a.last_state()] == \
        [(0.1, True, 8.0), (-0.1, True, 8.0)]
    assert all(np.isfinite(m.position).all() for m in list(a.joint_states))
    a.send(ActuatorCommand(names=["elbow"], goal_positions=[0.3]))
    a.wait_for(lambda: a.last_state()[1].goal_position == 0.3, "good command")
    assert a.last_state()[0].goal_position == 0.1


def test_any_mjcf_with_servo_joints(arm, tmp_path):
    """A one-joint MuJoCo pendulum: joints and actuators from parameters, not a shipped arm."""
    mjcf = tmp_path / "pendulum.xml"
    mjcf.write_text(pendulum_mjcf(Bench(mass=1.0, length=0.15)))
    a = arm(mjcf=str(mjcf), joints=["pendulum"], actuators=["mx64"], models=["m6"],
            initial_positions=[0.5], publish_every=2, real_time_factor=0.0)
    a.wait_ready()
    assert list(a.joint_states[-1].name) == ["pendulum"]
    assert a.node.arm.joints[0].params.model.name == "m6"
    a.send(Float64MultiArray(data=[-0.2]))
    a.wait_for(lambda: a.last_state()[0].goal_position == -0.2, "goal")
    a.wait_sim(2.0)
    assert abs(a.joint_states[-1].position[0] + 0.2) < 0.05


def test_a_robot_of_a_joint_map_publishes_its_joints(arm, tmp_path):
    """mjcf and joint_map: the map's joints, actuators, gains and motors (a robot the fit
    identified runs as the simulation of its own topics)."""
    mjcf = tmp_path / "pendulum.xml"
    mjcf.write_text(pendulum_mjcf(Bench(mass=0.3, length=0.1)).replace(
        '<motor name="pendulum"', '<motor name="wrist_motor"'))
    joint_map = tmp_path / "joints.yaml"
    joint_map.write_text("joints:\n  - {joint: pendulum, actuator: sts3215, gain: 20, "
                         "motor: wrist_motor, model: m1}\n")
    a = arm(mjcf=str(mjcf), joint_map=str(joint_map), publish_every=2, real_time_factor=0.0)
    a.wait_ready()
    assert list(a.joint_states[-1].name) == ["pendulum"]
    params = a.node.arm.joints[0].params
    assert (params.actuator.name, params.model.name) == ("sts3215", "m1")  # not m4, the default
    assert a.last_state()[0].gain == 20.0


def test_viewer_without_a_display_is_a_warning(arm, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    a = arm(viewer=True, publish_every=10)
    a.wait_ready()
    assert a.node.viewer is None


@pytest.mark.parametrize(("params", "message"), [
    ({"arm": "scara"}, "unknown arm 'scara'"),
    ({"models": ["m4", "m4", "m4"]}, "models has 3 entries but there are 2 joints"),
    ({"models": ["m9"]}, "m9"),
    ({"joints": ["shoulder"]}, "set mjcf to use other joints"),
    ({"joint_map": "joints.yaml"}, "give its MJCF as mjcf too"),
    ({"params_files": ["/nonexistent/mx106.yaml", ""]}, "does not exist"),
])
def test_bad_parameters_at_start_are_one_line_errors(context, params, message):
    with pytest.raises(BamError, match=message):
        ArmNode(context=context,
                parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


def test_parameter_file_of_another_actuator_is_refused(context, tmp_path):
    other = save(published_named("mx64", "m4"), tmp_path / "mx64.yaml")
    with pytest.raises(BamError, match="joint 'shoulder' is a mx106"):
        ArmNode(context=context, parameter_overrides=[
            Parameter("params_files", value=[str(other), ""])])


def test_executable_errors_and_help(capsys):
    assert main(["arm", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("arm", "mjcf", "params_files", "models", "gains", "publish_every",
                 "real_time_factor", "viewer", "command_timeout"):
        assert f"  {name} " in out
    error = executable_error("bam_sim.nodes.arm_node", ["arm", "--ros-args", "-p", "arm:=scara"],
                             DOMAIN, 120)
    assert "scara" in error
