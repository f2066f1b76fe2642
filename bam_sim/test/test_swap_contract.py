"""Sim/real swap: the simulated actuator offers exactly the interfaces of bam_sim.interfaces.

The hardware drivers are held to the same list (ACTUATOR_PUBLISHES and
ACTUATOR_SUBSCRIBES), so a ROS stack sees the same topics, types and QoS
whichever is running. Checked on the live graph, as DDS reports it.
"""

from __future__ import annotations

import time

import pytest
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

from bam_sim.interfaces import ACTUATOR_PUBLISHES, ACTUATOR_SUBSCRIBES, CLOCK, Topic


@pytest.fixture(scope="module")
def graph():
    import rclpy

    from bam_sim.pendulum_node import PendulumNode
    from bam_sim.ros_context import private_context

    with private_context() as ctx:
        sim = PendulumNode(context=ctx)
        probe = rclpy.create_node("swap_probe", context=ctx)
        yield sim, probe
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
    sim, probe = graph
    endpoints = _endpoints(probe, topic, True, sim.get_name())
    assert len(endpoints) == 1, f"{topic.name}: {endpoints}"
    _check(endpoints[0], topic)


@pytest.mark.parametrize("topic", ACTUATOR_SUBSCRIBES, ids=lambda t: t.name)
def test_sim_subscribes_the_contract(graph, topic):
    sim, probe = graph
    endpoints = _endpoints(probe, topic, False, sim.get_name())
    assert len(endpoints) == 1, f"{topic.name}: {endpoints}"
    _check(endpoints[0], topic)


def test_sim_offers_nothing_outside_the_contract(graph):
    sim, probe = graph
    names = {t.name for t in ACTUATOR_PUBLISHES + (CLOCK,)}
    offered = {name for name, _ in probe.get_publisher_names_and_types_by_node(
        sim.get_name(), sim.get_namespace())}
    # rclpy adds /rosout and /parameter_events to every node.
    assert offered - {"/rosout", "/parameter_events"} == names
