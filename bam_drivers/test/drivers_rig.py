"""Test rig of the driver: an emulator process, a driver node on its port, a probe node.

The driver and the probe spin in one executor thread on a private rclpy
context (bam_sim.testing.ros_graph.ActuatorProbe); the probe records every message
of the driver's topics (with its receive time) and publishes commands.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.nodes.feetech_node import FeetechNode
from bam_drivers.nodes.serial_servo_node import DIAGNOSTICS_TOPIC, SerialServoNode
from bam_msgs.msg import ActuatorCommand, BenchInfo
from bam_sim.common import contract
from bam_sim.testing.ros_graph import ActuatorProbe

TIMEOUT = 30.0  # s, discovery included
MODELS = {1: "mx64_p1", 2: "xm430_w350"}  # servo model of each protocol in the tests
# The serial buses a test may run on: the emulator's options, the driver node class and
# its parameters. The Feetech joint is a lighter pendulum, sized for the STS3215.
SERIAL_BUSES = {
    "protocol1": (dict(protocol=1, servo_model="mx64_p1"), SerialServoNode,
                  dict(servo_model="mx64_p1")),
    "protocol2": (dict(protocol=2, servo_model="xm430_w350"), SerialServoNode,
                  dict(servo_model="xm430_w350")),
    "feetech": (dict(protocol=1, servo_model="sts3215", physics="sts3215:m1", mass=0.35),
                FeetechNode, dict(mass=0.35)),
}


def emulator_of(bus: str, **options) -> EmulatorProcess:
    """An emulator of the serial bus ``bus`` (SERIAL_BUSES), ``options`` overriding its own."""
    return EmulatorProcess(**{**SERIAL_BUSES[bus][0], **options})


class Rig(ActuatorProbe):
    """A driver on an emulator's port, and a probe recording its topics.

    Joint states, actuator states and diagnostics are kept with their receive
    time: ``(time.monotonic(), msg)``.
    """

    def __init__(self, context, port: str, node: type[SerialServoNode] = SerialServoNode,
                 **params) -> None:
        """``node``: the driver class (SerialServoNode, or FeetechNode on its bus)."""
        # latency_timer_ms: room for a busy machine delaying the emulator's replies.
        params = {"port": port, "rate": 200.0, "command_timeout": 0.0,
                  "latency_timer_ms": 10.0, **params}
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        super().__init__(node(context=context, parameter_overrides=overrides),
                         "driver", TIMEOUT, received=True)
        self.diagnostics = self.record(DiagnosticArray, DIAGNOSTICS_TOPIC, QoSProfile(depth=10))
        self.bench_info = self.record(BenchInfo, contract.BENCH_INFO, received=False)
        self.start()

    def command(self, names=(), goals=(), enables=(), gains=()) -> None:
        self.commands.publish(ActuatorCommand(
            names=list(names), goal_positions=[float(g) for g in goals],
            torque_enables=[bool(e) for e in enables], gains=[float(g) for g in gains]))

    def position_command(self, *goals: float) -> None:
        self.positions.publish(Float64MultiArray(data=[float(g) for g in goals]))

    def states_since(self, t: float) -> int:
        return sum(1 for when, _ in self.joint_states if when > t)

    def status(self, name_part: str, since: float = 0.0) -> DiagnosticStatus | None:
        """The latest diagnostic status whose name contains ``name_part``, received after
        ``since`` (time.monotonic())."""
        for when, msg in reversed(self.diagnostics):
            if when <= since:
                return None
            for status in msg.status:
                if name_part in status.name:
                    return status
        return None


def values(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def settle(rig: Rig, emulator, seconds: float = 5.0, speed: float = 1e-3) -> dict:
    """Wait until every emulated joint rests; the emulator's truth then."""
    deadline = time.monotonic() + seconds
    while True:
        truth = emulator.truth()
        if all(abs(t["velocity"]) < speed for t in truth.values()):
            seen = len(rig.joint_states)  # a few more cycles published at rest
            rig.wait_for(lambda seen=seen: len(rig.joint_states) >= seen + 5, "states at rest")
            return emulator.truth()
        assert time.monotonic() < deadline, f"joints still moving: {truth}"
        time.sleep(0.05)
