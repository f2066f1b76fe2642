"""What every hardware driver node does alike, over its bus supervisor.

A driver node (Dynamixel, eRob) is an :class:`ActuatorNode` whose commands go
to a ROS-free supervisor (``check`` then ``apply``), whose bench parameters
(mass, arm mass, length) may change at run time and are republished in
``bam/bench_info``, and whose ``/diagnostics`` are built from plain values.
"""

from __future__ import annotations

import math
import time

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.parameter import Parameter

from bam_sim.bench.geometry import Bench
from bam_sim.common.actuator_node import ActuatorNode
from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError
from bam_sim.common.numbers import finite_non_negative
from bam_sim.models.model_registry import MODELS
from bam_sim.models.parameter_file import published

BENCH_PARAMETERS = frozenset(("mass", "arm_mass", "length"))


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
