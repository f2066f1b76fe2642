"""The swap contract of an actuator node as publishers, subscriptions and reused messages.

Messages are preallocated and updated in place every tick: at 1 kHz building
new messages would cost more than the simulation step.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence

from builtin_interfaces.msg import Time
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand, ActuatorState, ActuatorStateArray, BenchInfo
from bam_sim.common import contract
from bam_sim.common.qos import profile


def joint_state(names: Sequence[str]) -> JointState:
    """A /joint_states message of ``names``, position, velocity and effort preallocated."""
    n = len(names)
    msg = JointState(name=list(names))
    msg.position = array("d", [0.0] * n)
    msg.velocity = array("d", [0.0] * n)
    msg.effort = array("d", [0.0] * n)
    return msg


class ActuatorTopics:
    """The swap contract of a node: publishers, subscriptions, preallocated messages.

    ``joints``, ``control_units`` and ``input_voltages`` are per joint, in
    joint order; the messages of a tick (:attr:`joint_msg`, :attr:`state_msg`
    with :attr:`states`) share one stamp object, so a tick sets the time once.
    ``/clock`` only when ``publish_clock``. A simulation node publishes with
    :meth:`publish`; a driver, which fills in more fields and may publish
    fewer joints, fills messages itself and sends them with
    :meth:`publish_states`.
    """

    def __init__(self, node: Node, joints: Sequence[str], control_units: Sequence[str],
                 input_voltages: Sequence[float], *, publish_clock: bool,
                 on_command: Callable[[ActuatorCommand], None],
                 on_position_command: Callable[[Float64MultiArray], None],
                 on_joint_command: Callable[[JointState], None]) -> None:
        def publisher(msg_type, topic):
            return node.create_publisher(msg_type, topic.name, profile(topic.qos))

        self._joint_pub = publisher(JointState, contract.JOINT_STATES)
        self._state_pub = publisher(ActuatorStateArray, contract.ACTUATOR_STATES)
        self._info_pub = publisher(BenchInfo, contract.BENCH_INFO)
        self._clock_pub = publisher(Clock, contract.CLOCK) if publish_clock else None
        self._node = node
        # In the order of contract.ACTUATOR_SUBSCRIBES.
        self._subscriptions = [
            node.create_subscription(msg_type, topic.name, callback, profile(topic.qos))
            for msg_type, topic, callback in (
                (ActuatorCommand, contract.COMMANDS, on_command),
                (Float64MultiArray, contract.POSITION_COMMANDS, on_position_command),
                (JointState, contract.JOINT_COMMANDS, on_joint_command))]
        self._range = range(len(joints))
        self._stamp = Time()
        self.joint_msg = joint_state(joints)
        self.joint_msg.header.stamp = self._stamp
        self.states = [ActuatorState(name=joint, control_unit=unit, current=math.nan,
                                      input_voltage=float(voltage), temperature=math.nan,
                                      error_flags=0)
                        for joint, unit, voltage in zip(joints, control_units, input_voltages,
                                                        strict=True)]
        self.state_msg = ActuatorStateArray(actuators=self.states)
        self.state_msg.header.stamp = self._stamp
        self._clock_msg = Clock()
        self._clock_msg.clock = self._stamp

    def publish(self, stamp_ns: int, position: Sequence[float], velocity: Sequence[float],
                effort: Sequence[float], goal: Sequence[float], torque_enable: Sequence[bool],
                gain: Sequence[float], control: Sequence[float],
                motor_torque: Sequence[float], current: Sequence[float] | None = None,
                temperature: Sequence[float] | None = None,
                input_voltage: Sequence[float] | None = None) -> None:
        """One tick: /clock, /joint_states and /bam/actuator_states (values per joint).

        ``current`` (A), ``temperature`` (°C) and ``input_voltage`` (V) where the
        actuator measures or models them (None: NaN, or the supply given at start).
        """
        self._stamp.sec, self._stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        if self._clock_pub is not None:
            self._clock_pub.publish(self._clock_msg)
        joint = self.joint_msg
        for i in self._range:
            joint.position[i] = position[i]
            joint.velocity[i] = velocity[i]
            joint.effort[i] = effort[i]
        self._joint_pub.publish(joint)
        for i, state in enumerate(self.states):
            state.goal_position = float(goal[i])
            state.torque_enable = bool(torque_enable[i])
            state.gain = float(gain[i])
            state.control = float(control[i])
            state.motor_torque = float(motor_torque[i])
            if current is not None:
                state.current = float(current[i])
            if temperature is not None:
                state.temperature = float(temperature[i])
            if input_voltage is not None and input_voltage[i] == input_voltage[i]:
                state.input_voltage = float(input_voltage[i])
        self._state_pub.publish(self.state_msg)

    def publish_states(self, joint: JointState, states: ActuatorStateArray) -> None:
        """``joint`` on /joint_states and ``states`` on /bam/actuator_states, as they are."""
        self._joint_pub.publish(joint)
        self._state_pub.publish(states)

    @property
    def command_subscriptions(self) -> dict:
        """The subscriptions to the commands, by the contract's (relative) topic name."""
        return {topic.name: subscription for topic, subscription
                in zip(contract.ACTUATOR_SUBSCRIBES, self._subscriptions, strict=True)}

    def destroy(self) -> None:
        """Destroy the subscriptions, then the publishers (idempotent).

        Only once no thread publishes any more (the loop joined): commands stop
        arriving first, then the publishers go.
        """
        node = self._node
        for subscription in self._subscriptions:
            node.destroy_subscription(subscription)
        for publisher in (self._joint_pub, self._state_pub, self._info_pub, self._clock_pub):
            if publisher is not None:
                node.destroy_publisher(publisher)
        self._subscriptions = []

    def publish_info(self, msg: BenchInfo, stamp_ns: int) -> None:
        """``msg`` on /bam/bench_info (transient local), stamped ``stamp_ns``."""
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        msg.header.stamp = Time(sec=sec, nanosec=nsec)
        self._info_pub.publish(msg)
