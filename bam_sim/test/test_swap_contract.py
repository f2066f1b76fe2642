"""Sim/real swap: the simulated actuators offer exactly the interfaces of bam_sim.common.contract.

Every simulation node (the pendulum, the MuJoCo arm) is checked, and the Dynamixel driver
of bam_drivers on an emulated bus.

The hardware drivers are held to the same list (ACTUATOR_PUBLISHES and
ACTUATOR_SUBSCRIBES), so a ROS stack sees the same topics, types and QoS
whichever is running. Checked on the live graph, as DDS reports it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from bam_sim.common.contract import ACTUATOR_PUBLISHES, ACTUATOR_SUBSCRIBES, CLOCK, Topic

# Every simulation node: "module:Class".
SIM_NODES = ("bam_sim.nodes.pendulum_node:PendulumNode", "bam_sim.nodes.arm_node:ArmNode")
# The Dynamixel driver (bam_drivers), on the bus of its emulator: no /clock (hardware
# time), plus /diagnostics.
DRIVER = "bam_drivers.nodes.dynamixel_node:DynamixelNode"
EXTRA = {DRIVER: ("/diagnostics",)}


@contextmanager
def _actuator_node(target: str, ctx):
    import importlib

    from rclpy.parameter import Parameter

    module, _, name = target.partition(":")
    if target != DRIVER:
        yield getattr(importlib.import_module(module), name)(context=ctx)
        return
    emulator_client = pytest.importorskip("bam_drivers.emulators.client")
    with emulator_client.EmulatorProcess() as emulator:
        yield getattr(importlib.import_module(module), name)(
            context=ctx, parameter_overrides=[Parameter("port", value=emulator.port)])


@pytest.fixture(scope="module", params=(*SIM_NODES, DRIVER),
                ids=lambda target: target.split(":")[1])
def graph(request):
    import rclpy

    from bam_sim.testing.ros_context import private_context

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
