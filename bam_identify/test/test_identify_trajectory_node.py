"""The trajectory node: action goals in real time and in sim time, cancel, refusals, protocol.

The node under test spins in a thread of its own (as it would in another
process); the test node (action client, subscribers, /clock publisher) spins
in the test's thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock

from bam_identify.nodes.trajectory_node import TrajectoryNode
from bam_msgs.action import RunTrajectory
from bam_msgs.msg import ActuatorCommand, Trial
from bam_sim.bench.trajectory import TRAJECTORIES, get_trajectory
from bam_sim.common.contract import CLOCK, COMMANDS, RUN_TRAJECTORY_ACTION, TRIAL
from bam_sim.common.errors import BamError
from bam_sim.common.qos import profile
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import Spinner, closing, stamp_ns, wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, a deadline for events on a loaded machine
FEEDBACK_TOPIC = f"{RUN_TRAJECTORY_ACTION}/_action/feedback"


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


class Bench:
    """The node under test in a background executor, and a test node in this thread."""

    def __init__(self, context, executor_class=SingleThreadedExecutor, listen=True,
                 **parameters):
        self.context = context
        overrides = [Parameter(k, value=v) for k, v in parameters.items()]
        self.node = TrajectoryNode(context=context, parameter_overrides=overrides)
        self.node_executor = executor_class(context=context)
        self.node_executor.add_node(self.node)
        self.spinner = Spinner(self.node_executor, TIMEOUT).start()
        self.test_node = rclpy.create_node(f"bam_test_trajectory_{uuid.uuid4().hex[:8]}",
                                           context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.test_node)
        self.commands, self.markers = [], []
        self.command_subscription = self.listen() if listen else None
        self.test_node.create_subscription(Trial, TRIAL.name, self.markers.append,
                                           profile(TRIAL.qos))
        self.client = ActionClient(self.test_node, RunTrajectory, RUN_TRAJECTORY_ACTION)

    def listen(self):
        """The test node's subscription to the commands (the actuator's, to the node).

        A deep queue, as a probe's: a slow test executor drops nothing.
        """
        qos = profile(COMMANDS.qos)
        qos.depth = 10000
        return self.test_node.create_subscription(ActuatorCommand, COMMANDS.name,
                                                  self.commands.append, qos)

    def spin_until(self, condition, timeout=TIMEOUT, what="condition"):
        wait_for(condition, what, timeout, pause=lambda: self.executor.spin_once(timeout_sec=0.01))

    def connect(self):
        assert self.client.wait_for_server(timeout_sec=TIMEOUT)
        # Commands and feedback published before discovery would be lost.
        self.spin_until(lambda: self.node.count_subscribers(COMMANDS.name) > 0
                        and self.command_subscription.get_publisher_count() > 0
                        and self.node.count_subscribers(FEEDBACK_TOPIC) > 0, what="discovery")

    def send(self, trajectory, gain, feedback=None, **fields):
        goal = RunTrajectory.Goal(trajectory=trajectory, gain=gain, **fields)
        future = self.client.send_goal_async(goal, feedback_callback=feedback)
        self.spin_until(future.done, what="goal response")
        handle = future.result()
        assert handle.accepted
        return handle

    def result(self, handle, timeout=TIMEOUT):
        future = handle.get_result_async()
        self.spin_until(future.done, timeout, what="result")
        return future.result()

    def close(self):
        self.client.destroy()
        self.executor.shutdown()
        self.test_node.destroy_node()
        self.spinner.close()
        self.node.destroy_node()


@pytest.fixture
def bench_factory(context):
    with closing(lambda **kwargs: Bench(context, **kwargs)) as make:
        yield make


LATE = 0.5  # s a node-clock timer may fire late on a loaded machine


def check_run(bench, start, end, trajectory, gain, duration, rate):
    """Markers and commands of one finished run."""
    law = get_trajectory(trajectory).law
    t0, t1 = stamp_ns(start), stamp_ns(end)
    # END at the first tick after the duration; a loaded machine may run that tick late.
    assert duration <= (t1 - t0) * 1e-9 <= duration + LATE
    run = [c for c in bench.commands if t0 <= stamp_ns(c) < t1]
    settle = [c for c in bench.commands if stamp_ns(c) < t0]
    assert settle, "no command while settling"
    for command in settle:
        assert list(command.goal_positions) == [0.0]
        assert list(command.torque_enables) == [True]
        assert list(command.gains) == [gain]
    # Ticks may skip on a loaded machine (43 of 100 were seen beside a busy loop per core),
    # never add; no gap longer than a timer may be late (LATE), from START to END.
    assert len(run) <= duration * rate + 1, (len(run), duration * rate)
    elapsed = np.array([(stamp_ns(c) - t0) * 1e-9 for c in run])
    gaps = np.diff([0.0, *elapsed, (t1 - t0) * 1e-9])
    assert run and gaps.max() <= LATE, (len(run), gaps.max())
    goal, enabled = law(elapsed, duration)
    np.testing.assert_allclose([c.goal_positions[0] for c in run], goal, atol=1e-12)
    assert [c.torque_enables[0] for c in run] == enabled.tolist()
    assert all(list(c.names) == ["pendulum"] and list(c.gains) == [gain] for c in run)
    return run


@pytest.mark.parametrize("executor_class", [SingleThreadedExecutor, MultiThreadedExecutor])
def test_goal_plays_a_trajectory_in_real_time(bench_factory, executor_class):
    duration, rate = 0.5, 200.0
    bench = bench_factory(executor_class=executor_class, duration=duration, settle=0.1,
                          command_rate=rate, start_id=7)
    bench.connect()
    feedback = []
    begin = time.monotonic()
    handle = bench.send("lift_drop", 8.0, feedback.append, repetition=2)
    # One run at a time: a second goal is refused with its reason.
    busy = bench.result(bench.send("steps", 8.0))
    assert busy.status == GoalStatus.STATUS_ABORTED
    assert not busy.result.success and "busy" in busy.result.message
    assert "trial 7 (lift_drop" in busy.result.message
    response = bench.result(handle)
    wall = time.monotonic() - begin
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    result = response.result
    assert result.success and result.message == "" and result.trial_id == 7
    assert duration <= result.duration <= duration + LATE
    assert wall >= 0.6  # settle + duration in real time, never faster
    bench.spin_until(lambda: len(bench.markers) == 2, what="markers")
    start, end = bench.markers
    assert (start.event, end.event) == (Trial.START, Trial.END)
    for marker in (start, end):
        assert (marker.trajectory, marker.gain, marker.trial_id, marker.repetition) == (
            "lift_drop", 8.0, 7, 2)
    assert end.success
    run = check_run(bench, start, end, "lift_drop", 8.0, duration, rate)
    assert not run[-1].torque_enables[0]  # lift_drop released the arm
    progress = [f.feedback.progress for f in feedback]
    assert progress and progress == sorted(progress) and progress[-1] == 1.0
    assert len(progress) >= 3
    assert feedback[-1].feedback.elapsed == pytest.approx(result.duration)
    # The next goal chooses the next id.
    response = bench.result(bench.send("steps", 4.0))
    assert response.result.success and response.result.trial_id == 8
    assert bench.node.results[-1][0] == 8 and bench.node.commands_published > 150


def test_a_goal_without_an_actuator_is_aborted_with_the_reason(bench_factory):
    bench = bench_factory(listen=False, match_timeout=0.5, duration=0.2, settle=0.0)
    assert bench.client.wait_for_server(timeout_sec=TIMEOUT)
    response = bench.result(bench.send("steps", 8.0))
    assert response.status == GoalStatus.STATUS_ABORTED
    message = response.result.message
    assert not response.result.success and "\n" not in message
    assert "no subscriber on bam/commands within 0.5 s (match_timeout)" in message, message
    assert bench.node.commands_published == 0 and not bench.node.busy


def test_a_goal_plays_once_the_actuator_has_matched_and_loses_no_command(bench_factory):
    """A goal sent before the actuator subscribes waits for it: a command published
    before the subscription matched would be dropped by DDS."""
    bench = bench_factory(listen=False, duration=0.3, settle=0.2, command_rate=100.0)
    assert bench.client.wait_for_server(timeout_sec=TIMEOUT)
    handle = bench.send("steps", 8.0)
    bench.spin_until(lambda: bench.node.busy, what="the run to begin")
    assert bench.node.commands_published == 0  # waiting, not playing into the void
    bench.listen()
    response = bench.result(handle)
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert bench.node.commands_published > 5  # settle and run at 100 Hz (ticks may skip)
    bench.spin_until(lambda: len(bench.commands) == bench.node.commands_published,
                     what="every command published to arrive")
    first = bench.commands[0]  # the settle pose: torque on, goal q_d(0)
    assert list(first.torque_enables) == [True] and list(first.goal_positions) == [0.0]


def test_bad_goals_are_refused_with_a_clear_message(bench_factory):
    bench = bench_factory(duration=0.2, settle=0.0)
    bench.connect()
    for trajectory, gain, fragments in [
        ("zigzag", 8.0, ["unknown trajectory 'zigzag'", *TRAJECTORIES]),
        ("lift_drop", 0.0, ["gain", "> 0"]),
        ("lift_drop", float("nan"), ["gain", "finite"]),
    ]:
        response = bench.result(bench.send(trajectory, gain))
        assert response.status == GoalStatus.STATUS_ABORTED
        assert not response.result.success
        message = response.result.message
        assert "\n" not in message
        for fragment in fragments:
            assert fragment in message, message
    ok = bench.result(bench.send("raise_lower", 16.0, trial_id=42))
    assert ok.result.success and ok.result.trial_id == 42
    again = bench.result(bench.send("raise_lower", 16.0, trial_id=42))
    assert not again.result.success and "trial_id 42 was already used" in again.result.message
    bench.executor.spin_once(timeout_sec=0.2)
    assert not bench.commands or all(c.gains[0] == 16.0 for c in bench.commands)
    assert [(m.event, m.trial_id) for m in bench.markers] == [(Trial.START, 42),
                                                              (Trial.END, 42)]


def test_cancel_ends_the_trial_unsuccessfully(bench_factory):
    bench = bench_factory(duration=5.0, settle=0.0)
    bench.connect()
    feedback = []
    handle = bench.send("slow_oscillations", 16.0, feedback.append)
    bench.spin_until(lambda: len(feedback) >= 3, what="feedback")
    cancel = handle.cancel_goal_async()
    bench.spin_until(cancel.done, what="cancel response")
    response = bench.result(handle)
    assert response.status == GoalStatus.STATUS_CANCELED
    assert not response.result.success and "canceled" in response.result.message
    assert 0.0 < response.result.duration < 2.0
    bench.spin_until(lambda: len(bench.markers) == 2, what="markers")
    assert bench.markers[1].event == Trial.END and not bench.markers[1].success


def test_follows_sim_time_faster_than_real_time(bench_factory):
    duration, rate, speed = 2.0, 200.0, 20.0  # sim s per wall s
    bench = bench_factory(duration=duration, settle=0.2, command_rate=rate,
                          use_sim_time=True)
    clock_pub = bench.test_node.create_publisher(Clock, CLOCK.name, profile(CLOCK.qos))
    stop = threading.Event()
    sim = {"ns": 100 * 10**9}

    def publish_clock():  # 1 kHz wall, 20 ms of sim time per message
        while not stop.is_set():
            sim["ns"] += int(1e-3 * speed * 1e9)
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(sim["ns"], 10**9)
            clock_pub.publish(msg)
            time.sleep(1e-3)

    clock_thread = threading.Thread(target=publish_clock, daemon=True)
    clock_thread.start()
    try:
        bench.connect()
        response = bench.result(bench.send("accelerated_oscillations", 32.0))
    finally:
        stop.set()
        clock_thread.join()
    assert response.result.success
    assert response.result.duration == pytest.approx(duration, abs=0.1)
    bench.spin_until(lambda: len(bench.markers) == 2, what="markers")
    start, end = bench.markers
    assert stamp_ns(start) > 100 * 10**9  # sim-time stamps
    # Followed /clock, not the wall clock: each stamp is a time /clock published.
    grid = int(1e-3 * speed * 1e9)
    assert all((stamp_ns(m) - 100 * 10**9) % grid == 0 for m in (start, end))
    # /clock moves by 20 ms steps: the node commands once per step it sees.
    step = 1e-3 * speed
    assert (stamp_ns(end) - stamp_ns(start)) * 1e-9 == pytest.approx(duration, abs=5 * step)
    run = [c for c in bench.commands if stamp_ns(start) <= stamp_ns(c) < stamp_ns(end)]
    assert 0.25 * duration / step <= len(run) <= duration * rate + 1


def test_protocol_mode_plays_the_schedule(bench_factory, tmp_path):
    path = tmp_path / "protocol.yaml"
    path.write_text("protocol:\n  trajectories: [steps, lift_drop]\n  gains: [8]\n"
                    "  duration: 1.0\n  settle: 0.05\n")
    bench = bench_factory(protocol_file=str(path), start_id=5, duration=0.2)
    assert len(bench.node.protocol) == 2
    assert bench.node.protocol_done.wait(TIMEOUT), "protocol not done"
    bench.spin_until(lambda: len(bench.markers) == 4, what="markers")
    assert [(m.event, m.trial_id, m.trajectory, m.success) for m in bench.markers] == [
        (Trial.START, 5, "steps", False), (Trial.END, 5, "steps", True),
        (Trial.START, 6, "lift_drop", False), (Trial.END, 6, "lift_drop", True)]
    assert [(tid, out.success) for tid, out in bench.node.results] == [(5, True), (6, True)]
    for _, outcome in bench.node.results:
        # The file's 1 s, not 0.2 s; END comes at the first tick after it (late when loaded).
        assert 1.0 <= outcome.duration <= 1.0 + LATE
    # Once the schedule is done, goals play (with the node's duration) and ids go on.
    response = bench.result(bench.send("steps", 8.0))
    assert response.result.success and response.result.trial_id == 7
    assert 0.2 <= response.result.duration <= 0.2 + LATE


@pytest.mark.parametrize("parameters, fragment", [
    ({"command_rate": -1.0}, "parameter command_rate must be in [0.001, 100000], got -1.0"),
    ({"duration": 0}, "parameter duration must be > 0, got 0"),
    ({"settle": -0.5}, "parameter settle must be in [0, 1e+06], got -0.5"),
    ({"start_id": 0}, "start_id"),
    ({"joint_name": " "}, "joint_name"),
    ({"protocol_file": "/nonexistent/protocol.yaml"}, "cannot read protocol file"),
])
def test_bad_parameters(context, parameters, fragment):
    overrides = [Parameter(k, value=v) for k, v in parameters.items()]
    with pytest.raises(BamError) as info:
        TrajectoryNode(context=context, parameter_overrides=overrides)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_bare_protocol_name_is_found_in_the_config_folder(context):
    node = TrajectoryNode(context=context,
                          parameter_overrides=[Parameter("protocol_file", value="protocol_quick")])
    try:
        assert len(node.protocol) == 4 and not node.protocol_done.is_set()
        result = node.set_parameters([Parameter("duration", value=-1.0)])[0]
        assert not result.successful and "duration" in result.reason
        assert node.set_parameters([Parameter("settle", value=1)])[0].successful
    finally:
        node.destroy_node()
    assert node.protocol_done.is_set()  # stopped: nobody waits forever


def run_executable(context, *parameters):
    """``trajectory`` in a subprocess on the test's domain, with a test node listening."""
    node = rclpy.create_node(f"bam_test_trajectory_cli_{uuid.uuid4().hex[:8]}", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    markers, commands = [], []
    node.create_subscription(Trial, TRIAL.name, markers.append, profile(TRIAL.qos))
    node.create_subscription(ActuatorCommand, COMMANDS.name, commands.append,
                             profile(COMMANDS.qos))
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain()))
    code = ("import sys; from bam_identify.nodes.trajectory_node import main; "
            "sys.exit(main(sys.argv))")
    args = [arg for p in parameters for arg in ("-p", p)]
    proc = subprocess.Popen([sys.executable, "-c", code, "--ros-args", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, node, executor, markers, commands


def test_executable_exits_when_the_protocol_is_done(context, tmp_path):
    path = tmp_path / "protocol.yaml"
    path.write_text("protocol: {trajectories: [raise_lower], gains: [8], repetitions: 2, "
                    "duration: 0.3, settle: 0.05}\n")
    proc, node, executor, markers, _ = run_executable(
        context, f"protocol_file:={path}", "exit_when_done:=true", "start_id:=3")
    try:
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
        output, _ = proc.communicate(timeout=TIMEOUT)
        for _ in range(50):  # markers still in flight
            executor.spin_once(timeout_sec=0.01)
    finally:
        if proc.poll() is None:
            proc.kill()
        executor.shutdown()
        node.destroy_node()
    assert proc.returncode == 0, output
    assert "protocol done: 2 of 2 runs played" in output, output
    assert [(m.event, m.trial_id, m.repetition, m.success) for m in markers] == [
        (Trial.START, 3, 0, False), (Trial.END, 3, 0, True),
        (Trial.START, 4, 1, False), (Trial.END, 4, 1, True)]


def test_executable_ends_the_trial_on_sigint(context):
    proc, node, executor, markers, commands = run_executable(
        context, "duration:=30", "settle:=0")
    client = ActionClient(node, RunTrajectory, RUN_TRAJECTORY_ACTION)
    try:
        assert client.wait_for_server(timeout_sec=TIMEOUT)
        # The server must also have matched our request writer: a request sent earlier is lost.
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
        future = client.send_goal_async(RunTrajectory.Goal(trajectory="steps", gain=8.0))
        deadline = time.monotonic() + TIMEOUT
        while not (markers and future.done()) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
        assert future.done() and future.result().accepted and markers
        proc.send_signal(signal.SIGINT)
        while len(markers) < 2 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
        output, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
        client.destroy()
        executor.shutdown()
        node.destroy_node()
    assert proc.returncode == 128 + signal.SIGINT, output
    assert [(m.event, m.success) for m in markers] == [(Trial.START, False), (Trial.END, False)]
    assert "shut down" in output, output


def test_executable_refuses_bad_parameters(context):
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain()))
    code = ("import sys; from bam_identify.nodes.trajectory_node import main; "
            "sys.exit(main(sys.argv))")
    proc = subprocess.run([sys.executable, "-c", code, "--ros-args", "-p", "duration:=-2"],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "trajectory: error: parameter duration must be > 0, got -2", \
        proc.stderr
