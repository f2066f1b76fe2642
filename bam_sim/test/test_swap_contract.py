"""Sim/real swap: the simulated actuators offer exactly the interfaces of bam_sim.common.contract.

Every simulation node (the pendulum, the MuJoCo arm) is checked, and the hardware
drivers of bam_drivers on their emulators: the Dynamixel driver on an emulated bus,
the eRob driver on the EtherCAT emulator (a veth pair in a network namespace of its
own: without root the emulator says why in one line, and its cases skip with it).

The hardware drivers are held to the same list (ACTUATOR_PUBLISHES and
ACTUATOR_SUBSCRIBES), so a ROS stack sees the same topics, types and QoS
whichever is running, checked on the live graph as DDS reports it; and the
messages they publish have one layout: the same joint names in every state
message, efforts and motor torques in N·m, one control unit.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from bam_sim.common.contract import ACTUATOR_PUBLISHES, ACTUATOR_SUBSCRIBES, CLOCK, Topic

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

# Every simulation node: "module:Class".
SIM_NODES = ("bam_sim.nodes.pendulum_node:PendulumNode", "bam_sim.nodes.arm_node:ArmNode")
# The drivers (bam_drivers), on their emulators: no /clock (hardware time), plus
# /diagnostics.
DRIVER = "bam_drivers.nodes.serial_servo_node:SerialServoNode"
EROB = "bam_drivers.nodes.erob_node:ErobNode"
EXTRA = {DRIVER: ("/diagnostics",), EROB: ("/diagnostics",)}
# Both drivers wait for their emulator however long a loaded host takes to answer
# (connect_timeout 0): a first connection given up after 10 s is the driver's answer to
# absent hardware, not what these tests check.
DRIVER_PARAMETERS = {"connect_timeout": 0.0}
# The eRob driver as its own tests run it on a busy host: a 5 ms frame timeout, the loop
# and the emulator's threads at SCHED_FIFO priority 20 (root makes the namespace anyway).
EROB_PARAMETERS = {**DRIVER_PARAMETERS, "rate": 500.0, "frame_timeout": 0.005,
                   "thread_priority": 20}


@contextmanager
def _hardware(target: str):
    """The emulator of a driver; the parameters that point the driver at it."""
    if target == DRIVER:
        client = pytest.importorskip("bam_drivers.emulators.client")
        with client.EmulatorProcess() as emulator:
            yield {**DRIVER_PARAMETERS, "port": emulator.port}
        return
    client = pytest.importorskip("bam_drivers.emulators.ethercat_client")
    try:
        emulator = client.EthercatEmulatorProcess(priority=20)
    except client.NamespaceUnavailable as exc:
        pytest.skip(f"EtherCAT emulator unavailable: {exc}")
    with emulator:
        yield {"interface": emulator.interface, **EROB_PARAMETERS}


@contextmanager
def _actuator_node(target: str, ctx):
    import importlib

    from rclpy.parameter import Parameter

    module, _, name = target.partition(":")
    node_class = getattr(importlib.import_module(module), name)
    if target in SIM_NODES:
        yield node_class(context=ctx)
        return
    with _hardware(target) as parameters:
        yield node_class(context=ctx, parameter_overrides=[
            Parameter(k, value=v) for k, v in parameters.items()])


@pytest.fixture(scope="module", params=(*SIM_NODES, DRIVER, EROB),
                ids=lambda target: target.split(":")[1])
def graph(request):
    import rclpy

    from bam_testing.ros_context import private_context

    with private_context() as ctx, _actuator_node(request.param, ctx) as sim:
        probe = rclpy.create_node("swap_probe", context=ctx)
        published = {t.absolute() for t in ACTUATOR_PUBLISHES} | (
            set(EXTRA[request.param]) if request.param in EXTRA else {CLOCK.absolute()})
        yield sim, probe, published
        sim.destroy_node()
        probe.destroy_node()


def _endpoints(probe, topic: Topic, publishers: bool, node_name: str, timeout: float = 5.0):
    query = probe.get_publishers_info_by_topic if publishers else \
        probe.get_subscriptions_info_by_topic
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in query(topic.name) if e.node_name == node_name]
        if found:
            return found
        time.sleep(0.05)
    return []


def _check(endpoint, topic: Topic) -> None:
    assert endpoint.topic_type == topic.type, topic.name
    qos = endpoint.qos_profile
    want_reliability = ReliabilityPolicy.RELIABLE if topic.qos.reliable \
        else ReliabilityPolicy.BEST_EFFORT
    want_durability = DurabilityPolicy.TRANSIENT_LOCAL if topic.qos.transient_local \
        else DurabilityPolicy.VOLATILE
    assert qos.reliability == want_reliability, topic.name
    assert qos.durability == want_durability, topic.name


@pytest.mark.parametrize("topic", ACTUATOR_PUBLISHES + (CLOCK,), ids=lambda t: t.name)
def test_sim_publishes_the_contract(graph, topic):
    sim, probe, published = graph
    if topic.absolute() not in published:
        pytest.skip(f"{sim.get_name()} does not publish {topic.name}")
    endpoints = _endpoints(probe, topic, True, sim.get_name())
    assert len(endpoints) == 1, f"{topic.name}: {endpoints}"
    _check(endpoints[0], topic)


@pytest.mark.parametrize("topic", ACTUATOR_SUBSCRIBES, ids=lambda t: t.name)
def test_sim_subscribes_the_contract(graph, topic):
    sim, probe, published = graph
    endpoints = _endpoints(probe, topic, False, sim.get_name())
    assert len(endpoints) == 1, f"{topic.name}: {endpoints}"
    _check(endpoints[0], topic)


def test_sim_offers_nothing_outside_the_contract(graph):
    sim, probe, published = graph
    offered = {name for name, _ in probe.get_publisher_names_and_types_by_node(
        sim.get_name(), sim.get_namespace())}
    # rclpy adds /rosout and /parameter_events to every node.
    assert offered - {"/rosout", "/parameter_events"} == published


def test_every_actuator_node_publishes_one_message_layout(graph):
    """Joint names, units and frames alike: whichever node runs, a stack reads its states
    the same way (checked on the messages received, not on the node's own objects)."""
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from bam_msgs.msg import ActuatorState, ActuatorStateArray, BenchInfo
    from bam_sim.common.contract import ACTUATOR_STATES, BENCH_INFO, JOINT_STATES
    from bam_sim.common.qos import profile

    sim, probe, _ = graph
    received: dict[type, list] = {JointState: [], ActuatorStateArray: [], BenchInfo: []}
    subscriptions = [probe.create_subscription(kind, topic.name, received[kind].append,
                                               profile(topic.qos))
                     for kind, topic in ((JointState, JOINT_STATES),
                                         (ActuatorStateArray, ACTUATOR_STATES),
                                         (BenchInfo, BENCH_INFO))]

    def pair() -> tuple | None:
        """A /joint_states and a /bam/actuator_states message of one cycle (same stamp)."""
        stamps = {(m.header.stamp.sec, m.header.stamp.nanosec): m
                  for m in received[ActuatorStateArray]}
        for joint in reversed(received[JointState]):
            states = stamps.get((joint.header.stamp.sec, joint.header.stamp.nanosec))
            if states is not None:
                return joint, states
        return None

    failed = getattr(sim, "failed", None)  # a driver's: set when it gave up

    def why() -> str:
        """What was received, and the driver's link and loop (a hang's evidence)."""
        counts = {k.__name__: len(v) for k, v in received.items()}
        if failed is None:
            return f"received {counts}"
        return (f"received {counts}; {sim.get_name()}: loop alive {sim._loop.alive}, "
                f"link {sim._supervisor.link.state!r}, {sim._supervisor.link.stats}")

    executor = SingleThreadedExecutor(context=probe.context)
    executor.add_node(probe)
    try:
        deadline = time.monotonic() + 120.0  # catches a hang only: discovery on a loaded machine
        while not (received[BenchInfo] and pair()):
            # A driver that gave up says why at once, not after the deadline.
            assert failed is None or not failed.is_set(), sim.failure
            assert time.monotonic() < deadline, why()
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.remove_node(probe)
        executor.shutdown()
        for subscription in subscriptions:
            probe.destroy_subscription(subscription)
    (joint, states), info = pair(), received[BenchInfo][-1]
    names = list(sim.joint_names)
    assert list(joint.name) == names and [a.name for a in states.actuators] == names
    assert len(joint.position) == len(joint.velocity) == len(joint.effort) == len(names)
    assert joint.header.frame_id == states.header.frame_id == ""  # joint space, no TF frame
    # The effort of /joint_states is the motor torque (N·m), in every node.
    assert list(joint.effort) == [a.motor_torque for a in states.actuators]
    # Bench info of the bench's joint (a driver's first), or of every joint of the arm,
    # comma-separated: the same control unit as the joint's states.
    joints, units = info.joint_name.split(","), info.control_unit.split(",")
    assert joints == names[:len(joints)] and len(units) == len(joints), info
    assert units == [a.control_unit for a in states.actuators[:len(joints)]], info
    assert set(units) <= {ActuatorState.CONTROL_UNIT_VOLT, ActuatorState.CONTROL_UNIT_AMPERE}
    assert info.control_rate > 0.0


ABSURD = {
    "gain 1e300": ("commands/value", lambda j: {"gains": [1e300] * len(j)}),
    "goal 1e300": ("commands/value", lambda j: {"goal_positions": [1e300] * len(j)}),
    "goal NaN": ("commands/value", lambda j: {"goal_positions": [float("nan")] * len(j)}),
    "negative gain": ("commands/value", lambda j: {"gains": [-1.0] * len(j)}),
    "a joint twice": ("commands/joint", lambda j: {"names": [j[0], j[0]],
                                                    "goal_positions": [0.1, 0.2]}),
}


@pytest.mark.parametrize("case", ABSURD)
def test_every_actuator_node_refuses_the_same_absurd_commands(graph, case):
    """One command check for simulations and drivers: swapping them refuses the same."""
    from bam_msgs.msg import ActuatorCommand

    node = graph[0]
    kind, fields = ABSURD[case]
    before = node.rejected_commands[kind]
    node._on_command(ActuatorCommand(**fields(list(node.joint_names))))
    assert node.rejected_commands[kind] == before + 1
