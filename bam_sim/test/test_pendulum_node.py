"""The pendulum node over DDS: rate, sim-time stamps, commands vs rollout, parameters.

Each test runs a PendulumNode and a probe node in this process, spun by one
executor in a background thread, on a private rclpy context and a domain of
their own.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand, BenchInfo
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.common import contract
from bam_sim.common.errors import BamError
from bam_sim.common.qos import profile
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.nodes.pendulum_node import PendulumNode, main
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import (
    SimProbe,
    closing,
    executable_error,
    stamp_ns,
    wait_matched,
)

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, discovery included
DOMAIN = ros_domain(1)


@pytest.fixture(scope="module")
def context():
    with private_context(DOMAIN) as ctx:
        yield ctx


@pytest.fixture
def bench(context):
    """A pendulum node with these parameters, and a probe on its topics."""
    with closing(lambda **params: SimProbe(context, PendulumNode, "pendulum", TIMEOUT,
                                           **params)) as make:
        yield make


def test_states_arrive_at_the_rate_stamped_in_sim_time(bench):
    rate = 200.0
    b = bench(rate=rate, real_time_factor=1.0, start_time=100.0)
    b.wait_ready()
    # One simulated second: every tick published, none lost (the wall-clock rate is a
    # benchmark's business, benchmarks/pendulum_node.py).
    before = len(b.joint_states)
    b.wait_for(lambda: len(b.joint_states) >= before + int(rate), "one simulated second")
    stamps = np.array([stamp_ns(m) for m in list(b.joint_states)])
    assert np.all(np.diff(stamps) == 5_000_000), "sim-time stamps not spaced 1/rate"
    assert stamps[0] >= 100 * 1_000_000_000
    assert (stamps[0] - 100 * 1_000_000_000) % 5_000_000 == 0
    state_stamps = np.array([stamp_ns(m) for m in list(b.actuator_states)])
    assert np.all(np.diff(state_stamps) == 5_000_000)
    clocks = np.array([c.clock.sec * 1_000_000_000 + c.clock.nanosec for c in list(b.clocks)])
    assert clocks.size and np.all((clocks - 100 * 1_000_000_000) % 5_000_000 == 0)
    assert np.all(np.diff(clocks) > 0)
    msg = b.joint_states[-1]
    assert list(msg.name) == ["pendulum"]
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 1
    state = b.actuator_states[-1].actuators[0]
    assert (state.name, state.control_unit, state.error_flags) == ("pendulum", "V", 0)
    assert math.isnan(state.current) and math.isnan(state.temperature)
    assert state.input_voltage == 15.0


def _last(b):
    """The latest actuator state of the pendulum."""
    return b.actuator_states[-1].actuators[0]


def test_commands_move_the_joint_as_rollout_does(bench):
    rate = 200.0
    b = bench(rate=rate, real_time_factor=1.0, gain=16.0, mass=0.5, length=0.2)
    b.wait_ready()
    # Each command taken (seen in the states) before simulated time is counted from it: a
    # loaded machine may take it late.
    b.send(ActuatorCommand(names=["other", "pendulum"], goal_positions=[9.0, 0.6]))
    b.wait_for(lambda: _last(b).goal_position == 0.6, "the goal taken")
    b.wait_sim(0.4)
    b.send(ActuatorCommand(names=["pendulum"], torque_enables=[False]))
    b.wait_for(lambda: not _last(b).torque_enable, "the torque off taken")
    b.wait_sim(0.3)
    b.send(Float64MultiArray(data=[-0.4]))
    b.send(ActuatorCommand(torque_enables=[True]))
    b.wait_for(lambda: _last(b).goal_position == -0.4 and _last(b).torque_enable,
               "the new goal and the torque on taken")
    b.wait_sim(0.5)
    joints = {stamp_ns(m): m for m in list(b.joint_states)}
    states = {stamp_ns(m): m.actuators[0] for m in list(b.actuator_states)}
    stamps = sorted(set(joints) & set(states))
    assert np.all(np.diff(stamps) == 5_000_000), "samples lost"
    goal = np.array([states[t].goal_position for t in stamps])
    enabled = np.array([states[t].torque_enable for t in stamps])
    assert {0.6, -0.4} <= set(goal) and not enabled.all() and enabled[-1]
    assert {states[t].gain for t in stamps} == {16.0}
    position = np.array([joints[t].position[0] for t in stamps])
    velocity = np.array([joints[t].velocity[0] for t in stamps])
    log = BenchLog(bench=Bench(mass=0.5, length=0.2), kp=16.0, dt=1.0 / rate, goal=goal,
                   enabled=enabled, position=position, velocity=velocity)
    run = rollout(published_named("mx64", "m4"), log)
    np.testing.assert_allclose(position, run.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose([joints[t].effort[0] for t in stamps], run.motor_torque,
                               rtol=0, atol=1e-9)
    assert np.ptp(position) > 0.5


def test_in_lockstep_each_command_makes_one_tick(bench):
    """A controller answering each state with a command, as a trained policy stepping the
    simulation does: the pendulum waits for it, so the run is the rollout of the goals
    sent, tick for tick, however late the answers come."""
    rate, goals = 200.0, np.linspace(0.0, 0.8, 60)
    b = bench(rate=rate, lockstep=True, gain=16.0, mass=0.5, length=0.2)
    sent: list[float] = []

    def answer(msg) -> None:  # the command of the next tick, on each state
        if len(sent) < goals.size:
            sent.append(float(goals[len(sent)]))
            b.send(ActuatorCommand(names=["pendulum"], goal_positions=[sent[-1]]))

    wait_matched(b.commands, "the pendulum's command subscription", TIMEOUT,
                 [b.node.topics.command_subscriptions[contract.COMMANDS.name]])
    assert not b.joint_states and b.node.tick_count == 0  # no command yet, no tick
    b.probe.create_subscription(JointState, contract.JOINT_STATES.name, answer,
                                profile(contract.JOINT_STATES.qos))
    answer(None)
    b.wait_for(lambda: len(b.joint_states) == goals.size, "a state per command")
    # No tick ran ahead of its command: every one was taken, none more.
    assert b.node.tick_count == goals.size
    states = [m.actuators[0] for m in list(b.actuator_states)]
    np.testing.assert_array_equal([s.goal_position for s in states], goals)
    stamps = np.array([stamp_ns(m) for m in list(b.joint_states)])
    assert np.all(np.diff(stamps) == 5_000_000)
    position = np.array([m.position[0] for m in list(b.joint_states)])
    velocity = np.array([m.velocity[0] for m in list(b.joint_states)])
    log = BenchLog(bench=Bench(mass=0.5, length=0.2), kp=16.0, dt=1.0 / rate, goal=goals,
                   enabled=np.ones(goals.size, bool), position=position, velocity=velocity)
    run = rollout(published_named("mx64", "m4"), log)
    np.testing.assert_allclose(position, run.position, rtol=0, atol=1e-9)
    assert np.ptp(position) > 0.1


def late_bench_info(b):
    """A subscriber joining after the bench started: the latched BenchInfo still arrives."""
    return b.late_subscriber(BenchInfo, contract.BENCH_INFO, "latched bench info")


def test_bench_info_is_latched_and_follows_the_geometry(bench):
    b = bench(rate=500.0, mass=1.5, arm_mass=0.1, length=0.2)
    b.wait_ready()
    with late_bench_info(b) as infos:
        info = infos[0]
        assert (info.actuator, info.joint_name, info.source, info.model, info.parameters) == \
            ("mx64", "pendulum", "sim", "m4", "published")
        assert (info.mass, info.arm_mass, info.length) == (1.5, 0.1, 0.2)
        assert (info.gravity, info.supply_voltage, info.control_rate) == (9.80665, 15.0, 500.0)
        assert info.control_unit == "V" and math.isnan(info.damping)
        result = b.node.set_parameters([Parameter("mass", value=0.5)])[0]
        assert result.successful, result.reason
        b.wait_for(lambda: len(infos) > 1, "bench info after the mass change")
        assert (infos[-1].mass, infos[-1].length) == (0.5, 0.2)
        assert stamp_ns(infos[-1]) > stamp_ns(info)
        assert b.node.simulator.bench == Bench(mass=0.5, length=0.2, arm_mass=0.1)
        result = b.node.set_parameters([Parameter("length", value=0.0)])[0]
        assert not result.successful


def test_node_clock_follows_the_sim_with_use_sim_time(bench):
    b = bench(rate=200.0, start_time=1000.0, use_sim_time=True)
    b.wait_ready()
    b.wait_for(lambda: b.node.get_clock().now().nanoseconds >= 1000 * 1_000_000_000,
               "the node's clock on /clock")
    assert b.node.get_clock().now().nanoseconds < 1100 * 1_000_000_000


def test_current_controlled_actuator_reports_its_damping(bench):
    b = bench(actuator="erob80_50", rate=200.0, mass=8.2, length=0.5)
    b.wait_ready()
    state = b.actuator_states[-1].actuators[0]
    assert state.control_unit == "A" and state.input_voltage == 48.0 and state.gain == 25.0
    with late_bench_info(b) as infos:
        assert infos[0].damping == 1.0 and infos[0].actuator == "erob80_50"


def test_bad_commands_are_ignored_and_logged_once_per_kind(bench):
    b = bench(rate=200.0, real_time_factor=2.0, initial_position=0.2)
    b.wait_ready()
    bad = [
        ActuatorCommand(names=["pendulum"], goal_positions=[0.1, 0.2]),  # lengths
        ActuatorCommand(goal_positions=[0.1, 0.2]),  # two entries, no names
        ActuatorCommand(names=["pendulum"], goal_positions=[math.nan]),
        ActuatorCommand(names=["pendulum"], gains=[-4.0]),
        ActuatorCommand(names=["elbow"], goal_positions=[0.3]),
        Float64MultiArray(data=[]),
        Float64MultiArray(data=[math.inf]),
    ]
    b.send_rejected(bad, rounds=3)
    assert b.node.rejected_commands == {
        "commands/length": 6, "commands/value": 6, "commands/joint": 3,
        "position_commands/length": 3, "position_commands/value": 3}
    assert sorted(b.node.logged_command_errors) == sorted(b.node.rejected_commands)
    count = len(b.joint_states)
    b.wait_for(lambda: len(b.joint_states) > count + 20, "states after bad commands")
    last = b.actuator_states[-1].actuators[0]
    assert (last.goal_position, last.torque_enable, last.gain) == (0.2, True, 8.0)
    assert all(math.isfinite(m.position[0]) for m in list(b.joint_states))
    b.send(ActuatorCommand(names=["pendulum"], goal_positions=[0.3]))
    b.wait_for(lambda: b.actuator_states[-1].actuators[0].goal_position == 0.3, "good command")


def test_command_timeout_turns_the_torque_off(bench):
    b = bench(rate=200.0, real_time_factor=4.0, command_timeout=2.0)
    b.wait_ready()
    b.wait_for(lambda: not b.actuator_states[-1].actuators[0].torque_enable, "watchdog")
    first_off = next(m for m in list(b.actuator_states) if not m.actuators[0].torque_enable)
    assert stamp_ns(first_off) == 2_000_000_000  # no command since t = 0
    b.send(ActuatorCommand(torque_enables=[True]))
    b.wait_for(lambda: b.actuator_states[-1].actuators[0].torque_enable, "torque on again")
    b.wait_for(lambda: not b.actuator_states[-1].actuators[0].torque_enable, "watchdog again")


def test_parameter_files_are_validated_at_run_time(bench, tmp_path):
    other = save(published_named("mx106", "m4"), tmp_path / "mx106.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("/**:\n  ros__parameters: {actuator: mx64, model: m4, kt: [}\n")
    mine = save(published_named("mx64", "m6"), tmp_path / "mx64_m6.yaml")
    b = bench(rate=200.0)
    b.wait_ready()
    node = b.node

    result = node.set_parameters([Parameter("params_file", value=str(other))])[0]
    assert not result.successful and "mx106" in result.reason
    result = node.set_parameters([Parameter("params_file", value=str(broken))])[0]
    assert not result.successful and "YAML" in result.reason
    result = node.set_parameters([Parameter("params_file", value=str(tmp_path / "none.yaml"))])[0]
    assert not result.successful and "does not exist" in result.reason
    assert node.simulator.params.model.name == "m4"
    assert node.get_parameter("params_file").value == ""

    result = node.set_parameters([Parameter("params_file", value=str(mine))])[0]
    assert result.successful, result.reason
    assert node.get_parameter("model").value == "m6"  # follows the file
    assert node.simulator.params.model.name == "m6"
    result = node.set_parameters([Parameter("model", value="m2")])[0]
    assert not result.successful and "m6" in result.reason
    result = node.set_parameters([Parameter("params_file", value="")])[0]
    assert result.successful
    result = node.set_parameters([Parameter("model", value="m2")])[0]
    assert result.successful and node.simulator.params.model.name == "m2"
    result = node.set_parameters([Parameter("model", value="m9")])[0]
    assert not result.successful and "m9" in result.reason
    result = node.set_parameters([Parameter("rate", value=50.0)])[0]
    assert not result.successful  # read-only
    assert node.describe_parameter("rate").read_only
    assert "kg" in node.describe_parameter("mass").description
    assert not node.describe_parameter("mass").read_only
    count = len(b.joint_states)
    b.wait_for(lambda: len(b.joint_states) > count + 10, "states after the changes")


def test_bad_parameters_at_start_are_one_line_errors(context, tmp_path):
    other = save(published_named("mx106", "m4"), tmp_path / "mx106.yaml")
    with pytest.raises(BamError, match="unknown actuator"):
        PendulumNode(context=context, parameter_overrides=[Parameter("actuator", value="mx65")])
    with pytest.raises(BamError, match="mx106"):
        PendulumNode(context=context,
                     parameter_overrides=[Parameter("params_file", value=str(other))])
    with pytest.raises(BamError, match=r"parameter rate must be in \[1, 100000\], got -5.0"):
        PendulumNode(context=context, parameter_overrides=[Parameter("rate", value=-5.0)])
    error = executable_error("bam_sim.nodes.pendulum_node",
                             ["pendulum", "--ros-args", "-p", "length:=-1.0"], DOMAIN, 60)
    assert "length" in error


def test_help_lists_the_parameters(capsys):
    assert main(["pendulum", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("actuator", "params_file", "real_time_factor", "command_timeout"):
        assert name in out
    assert main(["pendulum", "--bogus"]) == 2


def test_a_dcmotor_set_publishes_the_motor_current_and_winding_temperature(bench, tmp_path):
    from bam_sim.models.parameter_set import ParameterSet

    params = ParameterSet.from_names("dcmotor", "lugre", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "inductance.L": 0.004,
        "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
        "thermal.reftemp": 20.0, "thermal.ambient": 23.0, "lugre.stiffness": 200.0,
        "lugre.damping": 3.0, "lugre.coulomb": 0.05, "lugre.static": 0.1,
        "lugre.stribeck": 0.2, "lugre.viscous": 0.05, "controller.ki": 5.0,
        "controller.kd": 0.3})
    path = save(params, tmp_path / "motor.yaml")
    rate = 200.0
    b = bench(actuator="dcmotor", params_file=str(path), rate=rate, real_time_factor=1.0,
              gain=20.0, mass=1.0, length=0.15)
    b.wait_ready()
    b.wait_sim(0.1)  # at rest at the bottom with the goal there: every state is still 0
    b.send(ActuatorCommand(names=["pendulum"], goal_positions=[1.0]))
    b.wait_for(lambda: _last(b).goal_position == 1.0, "the goal taken")
    b.wait_sim(1.0)
    joints = {stamp_ns(m): m for m in list(b.joint_states)}
    states = {stamp_ns(m): m.actuators[0] for m in list(b.actuator_states)}
    stamps = sorted(set(joints) & set(states))
    assert np.all(np.diff(stamps) == 5_000_000), "samples lost"
    goal = np.array([states[t].goal_position for t in stamps])
    assert goal[0] == 0.0 and goal[-1] == 1.0
    assert {states[t].control_unit for t in stamps} == {"V"}
    position = np.array([joints[t].position[0] for t in stamps])
    current = np.array([states[t].current for t in stamps])
    temperature = np.array([states[t].temperature for t in stamps])
    log = BenchLog(bench=Bench(mass=1.0, length=0.15), kp=20.0, dt=1.0 / rate, goal=goal,
                   enabled=np.ones(len(goal), bool), position=position,
                   velocity=np.array([joints[t].velocity[0] for t in stamps]))
    run = rollout(params, log)
    np.testing.assert_allclose(position, run.position, rtol=0, atol=1e-9)
    np.testing.assert_allclose(current, run.current, rtol=0, atol=1e-9)
    np.testing.assert_allclose(temperature, run.temperature, rtol=0, atol=1e-9)
    assert temperature[0] == 23.0 and temperature[-1] > 25.0  # heats while holding
    assert np.abs(current).max() > 1.0
