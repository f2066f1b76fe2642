"""Test rig of the driver: an emulator process, a driver node on its port, a probe node.

The driver and the probe spin in one executor thread on a private rclpy
context (bam_testing.ros_graph.ActuatorProbe); the probe records every message
of the driver's topics (with its receive time) and publishes commands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.nodes.feetech_node import FeetechNode
from bam_drivers.nodes.serial_servo_node import DIAGNOSTICS_TOPIC, SerialServoNode
from bam_drivers.serial_servo.control_table import RAD_PER_COUNT
from bam_msgs.msg import ActuatorCommand, BenchInfo
from bam_sim.common import contract
from bam_testing.ros_context import ros_domain
from bam_testing.ros_graph import ActuatorProbe

TIMEOUT = 30.0  # s, discovery included
# SCHED_FIFO priorities where a test's verdict rests on the timing of a real-time
# recording: a busy host must not make the driver late (PRIORITY), nor the emulated servos,
# which answer above it as hardware does whatever its host is busy with (root; refused
# elsewhere, then normal).
PRIORITY = 20
EMULATOR_PRIORITY = 30


def realtime() -> None:
    """This process at SCHED_FIFO PRIORITY, every thread it starts too (a ``preexec_fn``
    for a driver's process: a thread left at normal priority would hold the interpreter's
    lock while a busy host keeps it waiting, and stall the loop); normal if refused."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PRIORITY))
    except OSError:
        pass


@contextmanager
def node_process(module: str, params: dict) -> Iterator[subprocess.CompletedProcess]:
    """The node executable ``python -m module`` with ``params``, on this process's DDS
    domain, at SCHED_FIFO PRIORITY (:func:`realtime`); stopped by SIGINT on exit (a driver
    turns its torque off, a recorder closes its bag), its exit code and stderr then in
    the yielded object."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    args = [arg for name, value in params.items() for arg in ("-p", f"{name}:={value}")]
    process = subprocess.Popen([sys.executable, "-m", module, "--ros-args", *args], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=realtime)
    outcome = subprocess.CompletedProcess(process.args, None)
    try:
        yield outcome
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, outcome.stderr = process.communicate(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        outcome.returncode = process.returncode
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


def settle(rig: Rig, emulator, speed: float = 1e-3) -> dict:
    """Wait until every emulated joint rests (the rig's timeout only catches one that
    never does); the emulator's truth then.

    At rest means slow and not moving between two reads: a joint at the turning point
    of a swing, or one whose goal was just sent, is slow for an instant only. The
    emulator computes its physics up to each read, so two reads span real time.
    """
    deadline = time.monotonic() + rig.timeout
    before = None
    while True:
        truth = emulator.truth()
        if before is not None and _resting(before, truth, speed):
            seen = len(rig.joint_states)  # a few more cycles published at rest
            rig.wait_for(lambda seen=seen: len(rig.joint_states) >= seen + 5, "states at rest")
            after = emulator.truth()
            if _resting(truth, after, speed):
                return after
        before = truth
        assert time.monotonic() < deadline, f"joints still moving: {truth}"
        time.sleep(0.05)


def _resting(before: dict, after: dict, speed: float) -> bool:
    """Every joint slow in ``after`` and where it was in ``before`` (within a tenth of a count)."""
    return all(abs(t["velocity"]) < speed
               and abs(t["position"] - before[i]["position"]) < 0.1 * RAD_PER_COUNT
               for i, t in after.items())
