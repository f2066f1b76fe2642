"""Round trip of every bam_msgs interface through rclpy publishers and subscribers.

Each test publishes a message with distinctive values from one node and checks
that a second node, in the same process and executor, receives every field
unchanged. A last test runs the RunTrajectory action end to end.
"""

import array
import math
import os
import threading
import time
import uuid

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from rclpy.action import ActionClient, ActionServer
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Header

from bam_msgs.action import RunTrajectory
from bam_msgs.msg import (
    ActuatorCommand,
    ActuatorState,
    ActuatorStateArray,
    BenchInfo,
    Trial,
)

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, to receive one message (discovery included)


@pytest.fixture(scope='module')
def context():
    """A private rclpy context on a domain of its own, so parallel runs do not meet."""
    # Keep DDS discovery on this machine (read when the context starts).
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=os.getpid() % 100 + 1)
    yield ctx
    rclpy.shutdown(context=ctx)


@pytest.fixture
def nodes(context):
    """A publisher node and a subscriber node spun by one executor."""
    suffix = uuid.uuid4().hex[:8]
    pub_node = rclpy.create_node(f'bam_test_pub_{suffix}', context=context)
    sub_node = rclpy.create_node(f'bam_test_sub_{suffix}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(pub_node)
    executor.add_node(sub_node)
    yield pub_node, sub_node, executor
    executor.shutdown()
    pub_node.destroy_node()
    sub_node.destroy_node()


def roundtrip(nodes, msg_type, msg):
    """Publish msg on a fresh topic until the subscriber gets it; return what arrived."""
    pub_node, sub_node, executor = nodes
    topic = f'/bam_test/{msg_type.__name__.lower()}_{uuid.uuid4().hex[:8]}'
    received = []
    sub_node.create_subscription(msg_type, topic, received.append, 10)
    publisher = pub_node.create_publisher(msg_type, topic, 10)
    deadline = time.monotonic() + TIMEOUT
    next_publish = 0.0
    while not received and time.monotonic() < deadline:
        # Publish again now and then: messages sent before discovery are lost.
        if publisher.get_subscription_count() > 0 and time.monotonic() >= next_publish:
            publisher.publish(msg)
            next_publish = time.monotonic() + 0.5
        executor.spin_once(timeout_sec=0.02)
    assert received, f'no {msg_type.__name__} received on {topic} within {TIMEOUT} s'
    return received[0]


def assert_same(sent, got, path='msg'):
    """Compare two messages field by field, NaN equal to NaN."""
    if hasattr(sent, 'get_fields_and_field_types'):
        assert type(got) is type(sent), f'{path}: {type(got)} is not {type(sent)}'
        for field in sent.get_fields_and_field_types():
            assert_same(getattr(sent, field), getattr(got, field), f'{path}.{field}')
    elif isinstance(sent, (list, tuple, array.array)):
        assert len(got) == len(sent), f'{path}: length {len(got)} != {len(sent)}'
        for i, (a, b) in enumerate(zip(sent, got)):
            assert_same(a, b, f'{path}[{i}]')
    elif isinstance(sent, float) and math.isnan(sent):
        assert isinstance(got, float) and math.isnan(got), f'{path}: {got!r} is not NaN'
    else:
        assert got == sent, f'{path}: {got!r} != {sent!r}'


def assert_not_default(msg):
    """Every field differs from its default: a field lost on the way would be noticed."""
    default = type(msg)()
    for field in msg.get_fields_and_field_types():
        value, initial = getattr(msg, field), getattr(default, field)
        if isinstance(value, float) and math.isnan(value):
            continue
        assert value != initial, f'{field} keeps its default value {initial!r} in the test'


def header(frame_id):
    return Header(stamp=Time(sec=1_700_000_123, nanosec=456_789), frame_id=frame_id)


def actuator_state(name, current=math.nan):
    return ActuatorState(
        name=name,
        goal_position=-1.25,
        torque_enable=True,
        gain=32.0,
        control=11.5,
        control_unit=ActuatorState.CONTROL_UNIT_VOLT,
        current=current,
        input_voltage=14.8,
        temperature=41.5,
        motor_torque=-0.375,
        error_flags=0x8000_0005,
    )


def test_actuator_state(nodes):
    sent = actuator_state('shoulder')
    assert_not_default(sent)
    got = roundtrip(nodes, ActuatorState, sent)
    assert_same(sent, got)
    assert math.isnan(got.current)
    assert got.control_unit == 'V'
    assert got.error_flags == 0x8000_0005


def test_actuator_state_array(nodes):
    second = actuator_state('elbow', current=2.5)
    second.control_unit = ActuatorState.CONTROL_UNIT_AMPERE
    second.input_voltage = math.nan
    sent = ActuatorStateArray(
        header=header('bench'), actuators=[actuator_state('shoulder'), second])
    assert_not_default(sent)
    got = roundtrip(nodes, ActuatorStateArray, sent)
    assert_same(sent, got)
    assert [a.name for a in got.actuators] == ['shoulder', 'elbow']
    assert got.actuators[1].current == 2.5
    assert got.actuators[1].control_unit == 'A'
    assert math.isnan(got.actuators[1].input_voltage)


def test_actuator_command(nodes):
    sent = ActuatorCommand(
        header=header('base'),
        names=['shoulder', 'elbow', 'wrist'],
        goal_positions=[0.5, -math.pi / 3, 1e-9],
        torque_enables=[True, False, True],
        gains=[4.0, 16.0, 100.0],
    )
    assert_not_default(sent)
    got = roundtrip(nodes, ActuatorCommand, sent)
    assert_same(sent, got)
    assert list(got.goal_positions) == [0.5, -math.pi / 3, 1e-9]
    assert list(got.torque_enables) == [True, False, True]


def test_bench_info(nodes):
    sent = BenchInfo(
        header=header('pendulum'),
        actuator='mx64',
        joint_name='pendulum_joint',
        mass=0.546,
        arm_mass=0.125,
        length=0.15,
        gravity=9.80665,
        supply_voltage=15.0,
        damping=1.5,
        control_unit=ActuatorState.CONTROL_UNIT_VOLT,
        source=BenchInfo.SOURCE_SIM,
        control_rate=1000.0,
        model='m6',
        parameters='params/mx64.yaml',
        unit='dynamixel id 1',
    )
    assert_not_default(sent)
    got = roundtrip(nodes, BenchInfo, sent)
    assert_same(sent, got)
    assert got.source == 'sim'
    assert BenchInfo.SOURCE_HARDWARE == 'hardware'


def test_trial(nodes):
    sent = Trial(
        header=header('bench'),
        event=Trial.END,
        trajectory='lift_and_drop',
        gain=8.0,
        trial_id=4_000_000_001,
        repetition=3,
        success=True,
    )
    assert_not_default(sent)
    got = roundtrip(nodes, Trial, sent)
    assert_same(sent, got)
    assert (Trial.START, Trial.END) == (0, 1)
    assert got.event == Trial.END


def test_run_trajectory_goal(nodes):
    sent = RunTrajectory.Goal(trajectory='sin_sin', gain=25.0, repetition=2, trial_id=17)
    assert_not_default(sent)
    assert_same(sent, roundtrip(nodes, RunTrajectory.Goal, sent))


def test_run_trajectory_result(nodes):
    sent = RunTrajectory.Result(
        success=True, message='done: 6000 samples', trial_id=17, duration=6.25)
    assert_not_default(sent)
    assert_same(sent, roundtrip(nodes, RunTrajectory.Result, sent))


def test_run_trajectory_feedback(nodes):
    sent = RunTrajectory.Feedback(progress=0.75, elapsed=4.5)
    assert_not_default(sent)
    assert_same(sent, roundtrip(nodes, RunTrajectory.Feedback, sent))


def test_run_trajectory_action(context):
    """A tiny server plays a fake trajectory; the client sees feedback, then the result.

    The server spins in a thread of its own, as it would in another process: a
    server that publishes all its feedback and its result in one callback of the
    client's executor would race the client, which drops feedback once it has
    the result.
    """
    suffix = uuid.uuid4().hex[:8]
    name = f'/bam_test/run_trajectory_{suffix}'
    steps, period = 4, 0.02  # feedback samples, s between them
    server_node = rclpy.create_node(f'bam_test_server_{suffix}', context=context)
    client_node = rclpy.create_node(f'bam_test_client_{suffix}', context=context)

    def execute(goal_handle):
        goal = goal_handle.request
        # Feedback sent before the server has discovered the client's feedback
        # subscription would be lost: wait for it (DDS discovers in the background).
        wait_until = time.monotonic() + TIMEOUT
        while (server_node.count_subscribers(f'{name}/_action/feedback') == 0
               and time.monotonic() < wait_until):
            time.sleep(0.01)
        for k in range(1, steps + 1):
            time.sleep(period)
            goal_handle.publish_feedback(
                RunTrajectory.Feedback(progress=k / steps, elapsed=period * k))
        time.sleep(period)
        goal_handle.succeed()
        return RunTrajectory.Result(
            success=True,
            message=f'{goal.trajectory} at gain {goal.gain:g}',
            trial_id=goal.trial_id + 1000,
            duration=period * steps,
        )

    server = ActionServer(server_node, RunTrajectory, name, execute)
    server_executor = SingleThreadedExecutor(context=context)
    server_executor.add_node(server_node)
    server_thread = threading.Thread(target=server_executor.spin, daemon=True)
    server_thread.start()

    client = ActionClient(client_node, RunTrajectory, name)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(client_node)
    feedback = []
    try:
        assert client.wait_for_server(timeout_sec=TIMEOUT), f'action server {name} not found'
        goal = RunTrajectory.Goal(trajectory='lift_and_drop', gain=32.0, trial_id=7)
        send = client.send_goal_async(goal, feedback_callback=feedback.append)
        executor.spin_until_future_complete(send, timeout_sec=TIMEOUT)
        assert send.done(), 'goal not answered'
        goal_handle = send.result()
        assert goal_handle.accepted
        result_future = goal_handle.get_result_async()
        executor.spin_until_future_complete(result_future, timeout_sec=TIMEOUT)
        assert result_future.done(), 'no result'
    finally:
        executor.shutdown()
        server_executor.shutdown()
        server_thread.join(timeout=TIMEOUT)
        client.destroy()
        server.destroy()
        client_node.destroy_node()
        server_node.destroy_node()

    response = result_future.result()
    assert response.status == GoalStatus.STATUS_SUCCEEDED
    assert response.result.success
    assert response.result.message == 'lift_and_drop at gain 32'
    assert response.result.trial_id == 1007
    assert response.result.duration == pytest.approx(period * steps)
    progress = [m.feedback.progress for m in feedback]
    elapsed = [m.feedback.elapsed for m in feedback]
    assert progress, 'no feedback received'
    assert progress == sorted(set(progress)), 'feedback out of order or repeated'
    assert set(progress) <= {k / steps for k in range(1, steps + 1)}
    assert elapsed == pytest.approx([p * steps * period for p in progress])
