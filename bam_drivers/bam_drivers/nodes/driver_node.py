"""What every hardware driver node does alike, over its bus supervisor.

A driver node (Dynamixel, eRob) is an :class:`ActuatorNode` whose commands go
to a ROS-free supervisor (``check`` then ``apply``), whose bench parameters
(mass, arm mass, length) may change at run time and are republished in
``bam/bench_info``, and whose ``/diagnostics`` are built from plain values.

While its bus is closed the loop does not tick at the bus rate: it sleeps
until the supervisor's next connection attempt (in slices of ``IDLE_SLICE``
s, so a stop is seen at once). When the supervisor gives up (a configuration
error, or no first connection within ``connect_timeout``), the loop stops,
:attr:`DriverNode.failed` is set and :func:`run_driver` exits with code 2
and the supervisor's one line.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.parameter import Parameter

from bam_sim.bench.geometry import Bench
from bam_sim.common.actuator_node import ActuatorNode
from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.node_parameters import Param
from bam_sim.common.numbers import finite_non_negative
from bam_sim.common.runner import error_line, run_node
from bam_sim.models.model_registry import MODELS
from bam_sim.models.parameter_file import published

BENCH_PARAMETERS = frozenset(("mass", "arm_mass", "length"))
IDLE_SLICE = 0.1  # s, longest sleep of the loop while it waits for a connection attempt
CONNECT_TIMEOUT = Param(
    "connect_timeout", 10.0, "give up (exit code 2) when the device has not answered once "
    "within this long after the start, s (0 = retry for ever); a device lost after it "
    "answered is retried for ever", read_only=True, low=0.0, high=1.0e6)


def mean_kt(actuator: str) -> float:
    """k_t of ``actuator``, mean over its published parameter sets (NaN if none)."""
    values = []
    for model in MODELS:
        try:
            values.append(float(published(actuator, model).values["kt"]))
        except (BamError, KeyError):
            continue
    return sum(values) / len(values) if values else math.nan


def diagnostic_status(level: bytes, name: str, hardware_id: str, message: str,
           values: dict) -> DiagnosticStatus:
    """One ``/diagnostics`` entry, its values as text."""
    return DiagnosticStatus(level=level, name=name, hardware_id=hardware_id, message=message,
                            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


class DriverNode(ActuatorNode):
    """Commands to the supervisor, bench parameters to ``bam/bench_info``.

    A subclass sets ``_supervisor`` (``check``, ``apply``, ``set_command_timeout``),
    ``_bench`` and implements ``_publish_bench_info(voltage)``, setting
    ``_info_published`` and ``_info_voltage`` when it publishes.
    """

    _info_published = False
    _info_voltage = math.nan

    def __init__(self, default_name: str, **kwargs) -> None:
        self.failure: BamError | None = None
        self.failed = threading.Event()  # set with failure: the driver gave up
        super().__init__(default_name, **kwargs)

    def _supervised_cycle(self) -> object | None:
        """The supervisor's cycle of this tick (None: nothing read), from the loop thread.

        While the bus is closed and no attempt is due, sleep instead: ticking at the bus
        rate would spin a core for nothing.
        """
        supervisor = self._supervisor
        was_open = supervisor.bus.is_open
        if not was_open:
            wait = supervisor.link.wait(time.monotonic())
            if wait > 0.0:
                time.sleep(min(wait, IDLE_SLICE))
                self._loop.real_time_factor = 1.0  # deadlines from now, not a burst
                return None
        try:
            cycle = supervisor.cycle(time.monotonic())
        except Exception as exc:  # never stop the loop; reported
            supervisor.throttle.log("cycle", "error", f"bus cycle failed: {one_line(exc)}",
                                    time.monotonic())
            return None
        if not was_open:
            self._loop.real_time_factor = 1.0  # restart the deadlines after the attempt
            if supervisor.failure is not None:
                self._give_up(supervisor.failure)
        return cycle

    def _give_up(self, failure: BamError) -> None:
        self.failure = failure
        self._loop.request_stop()
        self.failed.set()

    def _apply(self, kind: str, command: JointCommand) -> None:
        try:
            self._supervisor.check(command, self.joint_names)
        except BamError as exc:
            self._rejections.reject(kind, str(exc))
            return
        self._supervisor.apply(command, time.monotonic())

    def _plan(self, params: list[Parameter]) -> dict:
        new = {p.name: p.value for p in params}
        plan = {}
        if BENCH_PARAMETERS & new.keys():
            merged = {name: new.get(name, self.get_parameter(name).value)
                      for name in BENCH_PARAMETERS}
            plan["bench"] = Bench(mass=merged["mass"], length=merged["length"],
                                  arm_mass=merged["arm_mass"])
        if "command_timeout" in new:
            plan["command_timeout"] = finite_non_negative("command_timeout",
                                                          new["command_timeout"])
        return plan

    def _apply_plan(self, plan: dict) -> None:
        if "command_timeout" in plan:
            self._supervisor.set_command_timeout(plan["command_timeout"], time.monotonic())
        if "bench" in plan:
            self._bench = plan["bench"]
            if self._info_published:
                self._publish_bench_info(self._info_voltage)


def run_driver(program: str, factory: Callable[[], DriverNode], help_text: str,
               args: list[str] | None = None) -> int:
    """:func:`run_node` for a driver: also ends when the driver gives up, then exits with
    code 2 and its one line."""
    made: list[DriverNode] = []

    def make() -> DriverNode:
        made.append(factory())
        return made[-1]

    code = run_node(program, make, help_text, args, until=lambda node: node.failed)
    if code == 0 and made and made[0].failure is not None:
        print(error_line(program, made[0].failure), file=sys.stderr)
        return 2
    return code
