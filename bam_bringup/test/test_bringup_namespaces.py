"""Two simulated benches side by side in namespaces, in one process, without cross-talk.

`bench serve namespace:=bench1` and `namespace:=bench2` share a ROS domain, so
everything that tells them apart is their namespace: their topics, their
action and their /clock, remapped into the namespace. Bench 2's simulated time
starts at START_2 and bench 1's at 0, so every stamp names the bench that
produced it. Waits are on messages and simulated time, with timeouts.
"""

from __future__ import annotations

import dataclasses

import pytest
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState

from bam_bringup.process_bench import ProcessBench
from bam_bringup.runner import LAUNCH_FILES
from bam_msgs.msg import ActuatorCommand
from bam_sim.common import contract
from bam_sim.common.qos import profile
from bam_testing.ros_context import private_context
from bam_testing.ros_graph import stamp_ns, wait_for, wait_matched

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, for any one wait
START_2 = 100.0  # s, bench 2's first simulated time; bench 1 stays far below it here
GOAL = 1.0  # rad, the goal sent to bench 1 only


class Probe:
    """A node in a bench's namespace: its joint states and clock, and a command publisher."""

    def __init__(self, bench: ProcessBench, namespace: str) -> None:
        self.node = Node("probe", namespace=namespace, context=bench.context)
        self.joint_states: list = []
        self.clocks: list = []
        self.node.create_subscription(JointState, contract.JOINT_STATES.name,
                                      self.joint_states.append,
                                      profile(contract.JOINT_STATES.qos))
        # Relative "clock": the bench's clock in this namespace, as its nodes remap /clock.
        self.node.create_subscription(Clock, "clock", self.clocks.append,
                                      profile(contract.CLOCK.qos))
        self.commands = self.node.create_publisher(ActuatorCommand, contract.COMMANDS.name,
                                                   profile(contract.COMMANDS.qos))
        bench.add(self.node)

    def seconds(self) -> float:
        """The simulated time of the latest joint state, s."""
        return stamp_ns(self.joint_states[-1]) / 1e9

    def wait_states(self) -> None:
        wait_for(lambda: len(self.joint_states) > 2 and self.clocks, "states and clock",
                 TIMEOUT)
        wait_matched(self.commands, "the bench's command subscription", TIMEOUT)


def bench_specs(namespace: str, start_time: float) -> list:
    specs = LAUNCH_FILES["bench"].compose({"namespace": namespace})
    return [dataclasses.replace(s, parameters={**s.parameters, "start_time": start_time})
            if s.name == "pendulum" else s for s in specs]


def publishers(node: Node, topic: str) -> set[str]:
    return {f"{i.node_namespace}/{i.node_name}" for i in node.get_publishers_info_by_topic(topic)}


def subscribers(node: Node, topic: str) -> set[str]:
    return {f"{i.node_namespace}/{i.node_name}"
            for i in node.get_subscriptions_info_by_topic(topic)}


@pytest.fixture(scope="module")
def benches():
    with private_context() as context:
        made: list[ProcessBench] = []
        try:
            for namespace, start in (("bench1", 0.0), ("bench2", START_2)):
                made.append(ProcessBench(bench_specs(namespace, start), context=context))
            probes = [Probe(bench, f"/bench{i}") for i, bench in enumerate(made, 1)]
            for probe in probes:
                probe.wait_states()
            yield made, probes
        finally:
            for bench in made:
                bench.shutdown()


def test_each_bench_has_its_own_topics_and_clock(benches):
    (bench1, bench2), (probe1, _) = benches
    graph = probe1.node
    for i, bench in enumerate((bench1, bench2), 1):
        ns = f"/bench{i}"
        assert {n.get_namespace() for n in bench.nodes.values()} == {ns}
        wait_for(lambda ns=ns: subscribers(graph, f"{ns}/clock") >= {f"{ns}/trajectory"},
                 "the trajectory node on its bench's clock", TIMEOUT)
        for topic in ("joint_states", "bam/actuator_states", "bam/bench_info", "clock"):
            assert publishers(graph, f"{ns}/{topic}") == {f"{ns}/pendulum"}, topic
        assert subscribers(graph, f"{ns}/bam/commands") == {f"{ns}/pendulum"}
        assert publishers(graph, f"{ns}/bam/commands") == {f"{ns}/trajectory", f"{ns}/probe"}
        assert all(n.startswith(f"{ns}/") for n in subscribers(graph, f"{ns}/clock"))
    for topic in ("/clock", "/joint_states", "/bam/commands"):  # nothing outside them
        assert not publishers(graph, topic) and not subscribers(graph, topic), topic


def test_states_and_clocks_arrive_only_in_their_own_namespace(benches):
    (bench1, bench2), (probe1, probe2) = benches
    wait_for(lambda: probe1.seconds() > 0.5 and probe2.seconds() > START_2 + 0.5,
             "simulated time on both benches", TIMEOUT)
    assert all(stamp_ns(m) < START_2 * 1e9 / 2 for m in list(probe1.joint_states))
    assert all(stamp_ns(m) >= START_2 * 1e9 for m in list(probe2.joint_states))
    assert all(m.clock.sec < START_2 / 2 for m in list(probe1.clocks))
    assert all(m.clock.sec >= START_2 for m in list(probe2.clocks))
    # Each trajectory node (use_sim_time) follows its own bench's clock.
    assert 0 < bench1.nodes["trajectory"].get_clock().now().nanoseconds < START_2 * 1e9 / 2
    assert bench2.nodes["trajectory"].get_clock().now().nanoseconds >= START_2 * 1e9


def test_a_command_moves_only_its_own_bench(benches):
    _, (probe1, probe2) = benches
    probe1.commands.publish(ActuatorCommand(names=["pendulum"], goal_positions=[GOAL],
                                            torque_enables=[True]))
    # Half way is plenty: a P controller holds the arm short of its goal against gravity.
    wait_for(lambda: probe1.joint_states[-1].position[0] > GOAL / 2, "bench 1 moving",
             TIMEOUT)
    since = probe2.seconds()  # bench 2 goes on for a while after bench 1 moved
    wait_for(lambda: probe2.seconds() > since + 0.5, "bench 2's simulated time", TIMEOUT)
    assert max(abs(m.position[0]) for m in list(probe2.joint_states)) < 0.01
