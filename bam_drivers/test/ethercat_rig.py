"""Test rig of the eRob driver: an EtherCAT emulator process, an ErobNode on its veth, a probe.

The emulator (bam_drivers.emulators.ethercat_emulator) needs root to create
its network namespace; :func:`emulator` skips the test with the emulator's
one-line reason when it cannot. The driver and the probe spin in one
executor thread on a private rclpy context (ActuatorProbe); the probe
records every message of the driver's topics with its receive time.
"""

from __future__ import annotations

import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile

from bam_drivers.emulators.ethercat_client import EthercatEmulatorProcess, NamespaceUnavailable
from bam_drivers.nodes.erob_node import DIAGNOSTICS_TOPIC, ErobNode
from bam_msgs.msg import ActuatorCommand, BenchInfo
from bam_sim.common import contract
from bam_testing.ros_graph import ActuatorProbe

TIMEOUT = 30.0  # s, discovery and bring-up included
PRIORITY = 20  # SCHED_FIFO priority of the emulator's threads and of the driver's loop


def emulator(**kwargs) -> EthercatEmulatorProcess:
    """An emulator process, or the test skipped when no namespace can be made here.

    Its threads run at SCHED_FIFO priority (root makes the namespace
    anyway): slaves answer in microseconds, and a loaded test host must not make the
    emulated ones late enough for SOEM to give up on frames.
    """
    kwargs.setdefault("priority", PRIORITY)
    try:
        return EthercatEmulatorProcess(**kwargs)
    except NamespaceUnavailable as exc:
        pytest.skip(f"EtherCAT emulator unavailable: {exc}")


class ErobRig(ActuatorProbe):
    """An ErobNode on an emulator's interface, and a probe recording its topics."""

    def __init__(self, context, interface: str, **params) -> None:
        # A 5 ms frame timeout: the emulator shares the CPUs of a busy test host.
        params = {"interface": interface, "command_timeout": 0.0, "rate": 500.0,
                  "frame_timeout": 0.005, "thread_priority": PRIORITY, **params}
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        super().__init__(ErobNode(context=context, parameter_overrides=overrides), "erob",
                         TIMEOUT, received=True)
        self.diagnostics = self.record(DiagnosticArray, DIAGNOSTICS_TOPIC, QoSProfile(depth=10))
        self.bench_info = self.record(BenchInfo, contract.BENCH_INFO, received=False)
        self.start()

    def close(self) -> None:
        """Stop the node (torque off) and the probe; once, however often it is called."""
        if not getattr(self, "_closed", False):
            self._closed = True
            super().close()

    def command(self, names=(), goals=(), enables=(), gains=()) -> None:
        self.commands.publish(ActuatorCommand(
            names=list(names), goal_positions=[float(g) for g in goals],
            torque_enables=[bool(e) for e in enables], gains=[float(g) for g in gains]))

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

    def wait_status(self, name_part: str, since: float, predicate, what: str,
                    timeout: float | None = None) -> DiagnosticStatus:
        """The first status after ``since`` for which ``predicate`` holds."""
        found: list = []

        def match() -> bool:
            for when, msg in self.diagnostics:
                if when <= since:
                    continue
                for status in msg.status:
                    if name_part in status.name and predicate(status):
                        found.append(status)
                        return True
            return False

        self.wait_for(match, what, timeout)
        return found[0]


def values(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def wait_truth(emu: EthercatEmulatorProcess, predicate, what: str,
               timeout: float = TIMEOUT) -> dict:
    """The emulator's truth once ``predicate(truth)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        truth = emu.truth()
        if predicate(truth):
            return truth
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {truth}"
        time.sleep(0.01)
