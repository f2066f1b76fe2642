"""Test helpers over DDS: wait for a condition, probe an actuator node, run an executable.

The tests of every package share them: pytest imports test files in prepend
mode and the test folders are not packages, so shared test code lives in this
installed module. Nodes run on a private context (:mod:`bam_testing.ros_context`).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand, ActuatorStateArray
from bam_sim.common import contract
from bam_sim.common.qos import profile

POLL = 0.01  # s between two checks of a condition


def stamp_ns(msg) -> int:
    """The header stamp of ``msg``, ns."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


PROBE_DEPTH = 10000  # messages a probe subscription may hold before they are taken
# The publisher of ros2_control's TopicBasedSystem on its joint_commands_topic,
# rclcpp::QoS(1): reliable, volatile, keep last 1 (the source is cited in
# bam_sim.common.commands, above parse_joint_command).
TOPIC_BASED_SYSTEM_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                    durability=DurabilityPolicy.VOLATILE)


def wait_for(predicate: Callable[[], object], what: str, timeout: float,
             pause: Callable[[], None] | None = None) -> None:
    """Return once ``predicate()`` holds; an AssertionError naming ``what`` after ``timeout`` s.

    ``pause`` runs between two checks (default: sleep POLL s; e.g. spin an
    executor once instead).
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if pause is None:
            time.sleep(POLL)
        else:
            pause()


def matched(publisher, subscriptions: Iterable = ()) -> bool:
    """``publisher`` has matched a subscription, and each of ``subscriptions`` a publisher.

    Matching is per side in DDS: a message published before the subscription's own side has
    matched the publisher is dropped, so where the subscribing node runs in this process its
    subscriptions are checked too.
    """
    return publisher.get_subscription_count() > 0 and all(
        subscription.get_publisher_count() > 0 for subscription in subscriptions)


def wait_matched(publisher, what: str, timeout: float, subscriptions: Iterable = (),
                 pause: Callable[[], None] | None = None) -> None:
    """Return once :func:`matched` holds: what ``publisher`` sends from now on is received.

    An AssertionError naming ``what`` (the subscriber awaited) after ``timeout`` s. Every
    test publishes only after this, never after a sleep.
    """
    wait_for(lambda: matched(publisher, subscriptions),
             f"{what} to match the publisher on {publisher.topic_name}", timeout, pause)


def executable_error(module: str, argv: list[str], domain: int, timeout: float) -> str:
    """Run ``module``'s ``main(argv)`` in a new process on ROS domain ``domain``.

    It must exit with code 2 and write one line on stderr, starting with
    "``argv[0]``: error:"; that line.
    """
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    code = f"import sys; from {module} import main; sys.exit(main({argv!r}))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(f"{argv[0]}: error:"), done.stderr
    return errors[0]


@contextmanager
def closing(factory: Callable) -> Iterator[Callable]:
    """``factory``, remembering what it makes; everything it made closed on exit.

    For fixtures that build several rigs per test:
    ``with closing(lambda **p: Rig(context, **p)) as make: yield make``.
    """
    made = []

    def make(*args, **kwargs):
        made.append(factory(*args, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for item in made:
            item.close()


class Spinner:
    """``executor`` spun in a background thread from :meth:`start` until :meth:`close`.

    Not ``executor.spin()`` in the thread: ``close`` ends the spin loop and joins the
    thread before it shuts the executor down (a shutdown from another thread while it
    spins races the executor's own handlers).
    """

    def __init__(self, executor, timeout: float) -> None:
        self.executor = executor
        self._timeout = timeout
        self._stop = threading.Event()
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def start(self) -> Spinner:
        self.thread.start()
        return self

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)
            while not self._tasks.empty():
                task, done, failure = self._tasks.get()
                try:
                    task()
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                    failure.append(exc)
                finally:
                    done.set()

    def between_spins(self, task: Callable[[], None]) -> None:
        """Run ``task`` in the spinning thread between two spins, and wait for it: a node
        removed and destroyed from another thread while the executor waits on its entities
        raised InvalidHandle in the spinning thread (seen on an idle CI run)."""
        if not self.thread.is_alive():
            task()
            return
        done, failure = threading.Event(), []
        self._tasks.put((task, done, failure))
        if not done.wait(self._timeout):
            raise TimeoutError(f"the spinning thread did not take a task within "
                               f"{self._timeout:g} s")
        if failure:
            raise failure[0]

    def close(self) -> None:
        """Stop spinning, join the thread, shut the executor down (idempotent)."""
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=self._timeout)
        self.executor.shutdown()


class ActuatorProbe:
    """An actuator node under test and a probe node, spun by one executor in a thread.

    The probe records /joint_states and /bam/actuator_states
    (:attr:`joint_states`, :attr:`actuator_states`; with ``received``, as
    ``(time.monotonic(), msg)`` pairs) and publishes on /bam/commands,
    /position_commands and, as ros2_control's TopicBasedSystem does,
    /joint_commands (:attr:`commands`, :attr:`positions`,
    :attr:`joint_commands`, :meth:`send`, :meth:`stream_joint_commands`).
    A subclass records more topics with :meth:`record`, then calls
    :meth:`start`. ``name`` prefixes the probe's node names.
    """

    def __init__(self, node: Node, name: str, timeout: float, *,
                 received: bool = False) -> None:
        self.node = node
        self.timeout = timeout
        self._name = name
        self._received = received
        self.probe = rclpy.create_node(f"{name}_probe_{uuid.uuid4().hex[:8]}",
                                       context=node.context)
        self.joint_states = self.record(JointState, contract.JOINT_STATES)
        self.actuator_states = self.record(ActuatorStateArray, contract.ACTUATOR_STATES)
        self.commands = self.probe.create_publisher(ActuatorCommand, contract.COMMANDS.name,
                                                    profile(contract.COMMANDS.qos))
        self.positions = self.probe.create_publisher(
            Float64MultiArray, contract.POSITION_COMMANDS.name,
            profile(contract.POSITION_COMMANDS.qos))
        self.joint_commands = self.probe.create_publisher(
            JointState, contract.JOINT_COMMANDS.name, TOPIC_BASED_SYSTEM_QOS)
        self.executor = SingleThreadedExecutor(context=node.context)
        self.spinner = Spinner(self.executor, timeout)

    def record(self, msg_type, topic: contract.Topic | str, qos: QoSProfile | None = None,
               *, received: bool | None = None) -> list:
        """Subscribe the probe to ``topic`` (its interface QoS, or a name and ``qos``).

        The list the messages land in; as (receive time, message) pairs when
        ``received`` (default: as the joint states).
        """
        store: list = []
        if received is None:
            received = self._received
        if received:
            def keep(msg) -> None:
                store.append((time.monotonic(), msg))
        else:
            keep = store.append
        if isinstance(topic, contract.Topic):
            topic, qos = topic.name, profile(topic.qos)
            # A deep reader queue: DDS acknowledges into it while a busy machine delays
            # the executor, so the publisher's history never drops what the probe has not
            # taken (QoS matching ignores depth).
            qos.depth = max(qos.depth, PROBE_DEPTH)
        self.probe.create_subscription(msg_type, topic, keep, qos)
        return store

    def start(self) -> None:
        """Spin the node and the probe in the background."""
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.spinner.start()

    def close(self) -> None:
        """Stop spinning and join the thread, then shut the executor down, then destroy the
        node and the probe: the shutdown order of every node."""
        self.spinner.close()
        self.node.destroy_node()
        self.probe.destroy_node()

    def wait_for(self, predicate: Callable[[], object], what: str,
                 timeout: float | None = None) -> None:
        """:func:`wait_for`, by default within this rig's timeout."""
        wait_for(predicate, what, self.timeout if timeout is None else timeout)

    def wait_ready(self) -> None:
        """States flowing to the probe; every command publisher matched to the node's
        subscription, on both sides, so the first command sent is received."""
        self.wait_for(lambda: len(self.joint_states) > 2 and len(self.actuator_states) > 2,
                      "states")
        subscriptions = self.node.topics.command_subscriptions
        for topic, publisher in ((contract.COMMANDS, self.commands),
                                 (contract.POSITION_COMMANDS, self.positions),
                                 (contract.JOINT_COMMANDS, self.joint_commands)):
            wait_matched(publisher, "the node's command subscription", self.timeout,
                         [subscriptions[topic.name]])

    def send(self, msg: ActuatorCommand | Float64MultiArray | JointState) -> None:
        """``msg`` on its command topic (by its type)."""
        publisher = {Float64MultiArray: self.positions, JointState: self.joint_commands}.get(
            type(msg), self.commands)
        publisher.publish(msg)

    def joint_command(self, names: list[str], position: list[float],
                      velocity: list[float] | None = None,
                      effort: list[float] | None = None) -> JointState:
        """A /joint_commands message as TopicBasedSystem writes it: stamped now (the
        probe's clock), its joints' names and the arrays of their command interfaces."""
        msg = JointState(name=list(names), position=[float(v) for v in position],
                         velocity=[float(v) for v in velocity or ()],
                         effort=[float(v) for v in effort or ()])
        msg.header.stamp = self.probe.get_clock().now().to_msg()
        return msg

    def stream_joint_commands(self, names: list[str], position: list[float], *,
                              velocity: list[float] | None = None, rate: float = 100.0,
                              count: int = 20) -> None:
        """``count`` /joint_commands messages at ``rate`` Hz, as a controller manager
        updating at ``rate`` sends a held command (each freshly stamped). The pace is the
        sender's only; what the test checks waits on the node's states."""
        start = time.monotonic()
        for k in range(count):
            self.joint_commands.publish(self.joint_command(names, position, velocity))
            time.sleep(max(0.0, start + (k + 1) / rate - time.monotonic()))

    def send_goals(self, goals: dict[str, float]) -> None:
        """Send ``goals`` (joint → rad) on /bam/commands; return once the node's actuator
        states report them, so simulated time counted from now runs under the new goals
        (a loaded machine may hold the command back for more simulated time than a test
        waits for). A probe recording without receive times."""
        self.send(ActuatorCommand(names=list(goals), goal_positions=list(goals.values())))

        def applied() -> bool:
            reported = {a.name: a.goal_position for a in self.actuator_states[-1].actuators}
            return all(reported.get(name) == goal for name, goal in goals.items())

        self.wait_for(applied, f"the goals {goals} applied")

    def send_rejected(self, messages: list, rounds: int = 1) -> None:
        """Send ``messages``, ``rounds`` times over, each once the node rejected the one before.

        One at a time, as the command QoS keeps the last 10; every one must be
        rejected (counted in the node's ``rejected_commands``).
        """
        before = sum(self.node.rejected_commands.values())
        for i in range(rounds * len(messages)):
            self.send(messages[i % len(messages)])
            self.wait_for(lambda i=i: sum(self.node.rejected_commands.values()) == before + i + 1,
                          "rejection")

    def last_state(self) -> list:
        """The actuator states of the latest /bam/actuator_states message, in joint order
        (a probe recording without receive times)."""
        return self.actuator_states[-1].actuators

    @contextmanager
    def late_subscriber(self, msg_type, topic: contract.Topic, what: str) -> Iterator[list]:
        """A subscriber to ``topic`` joining now (e.g. to a latched topic, after its message).

        Yields the list of its messages once the first arrived; it leaves on exit.
        """
        messages: list = []
        late = rclpy.create_node(f"{self._name}_late_{uuid.uuid4().hex[:8]}",
                                 context=self.node.context)
        late.create_subscription(msg_type, topic.name, messages.append, profile(topic.qos))
        self.executor.add_node(late)
        try:
            self.wait_for(lambda: messages, what)
            yield messages
        finally:
            def leave() -> None:
                self.executor.remove_node(late)
                late.destroy_node()

            self.spinner.between_spins(leave)


class SimProbe(ActuatorProbe):
    """An :class:`ActuatorProbe` on a simulation node, which also records /clock.

    The node is ``node_class`` with parameters ``params``, on ``context``.
    """

    def __init__(self, context, node_class: type[Node], name: str, timeout: float,
                 **params) -> None:
        overrides = [Parameter(key, value=value) for key, value in params.items()]
        super().__init__(node_class(context=context, parameter_overrides=overrides), name,
                         timeout)
        self.clocks = self.record(Clock, contract.CLOCK)
        self.start()

    def wait_sim(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass (as the node publishes it)."""
        target = stamp_ns(self.joint_states[-1]) + int(seconds * 1e9)
        self.wait_for(lambda: stamp_ns(self.joint_states[-1]) >= target, "simulated time")
