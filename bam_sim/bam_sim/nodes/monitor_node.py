"""``monitor``: an actuator's health against its identified model, on ``/diagnostics``.

Example (beside a bench in namespace ``bench1``, real or simulated)::

    ros2 run bam_sim monitor --ros-args -r __ns:=/bench1 -p params_file:=mx64_m6.yaml

It reads, in its namespace, ``joint_states`` and ``bam/actuator_states`` (paired
by stamp: the measured state, and the goal, torque enable, gain, temperature
and input voltage the actuator acted on) and ``bam/bench_info`` (the bench's
geometry, supply voltage and rate), and steps the identified model of
``params_file`` one tick per sample, re-synced to the measured state every
``resync_period`` (:class:`bam_sim.bench.shadow.Shadow`, the ROS-free core).

Publishes, per joint and stamped with the sample's stamp, ``monitor/residuals``
(predicted − measured position and velocity) and ``monitor/mae`` (their running
MAE), both ``sensor_msgs/JointState`` (see ``contract.MONITOR_RESIDUALS``), and
every ``diagnostic_period`` of the states' time a ``/diagnostics`` entry: OK,
WARN above ``warn_factor`` x the file's validation MAE, ERROR above
``error_factor`` x, its message naming the drift seen (a jam, "friction +35 %
since start", "R +8 %: hot"); ERROR while states that are not numbers come
(the joint and the field named); STALE while no states arrive, and once as many
states as one re-sync window holds came without their stamp advancing. A
validation MAE in the file that is no MAE (NaN, 0, negative, text) is refused; a
file without one is compared with its training MAE, said in the log and in every
diagnostic. Parameters: :data:`PARAMETERS`, or ``monitor --help``.
"""

from __future__ import annotations

import math
import sys

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from sensor_msgs.msg import JointState

from bam_msgs.msg import ActuatorStateArray, BenchInfo
from bam_sim.bench.geometry import Bench
from bam_sim.bench.shadow import (
    STALE,
    Measurement,
    Residual,
    Shadow,
    ShadowSettings,
    Thresholds,
    assess,
    reference_mae,
)
from bam_sim.common import contract
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import Param, declare, refuse_unknown, usage
from bam_sim.common.qos import profile
from bam_sim.common.runner import run_node
from bam_sim.models.files.parameter_file import load

NODE_NAME = "monitor"
# The subscriptions' queue: a busy machine may hold the executor back a while at 1 kHz;
# a sample lost anyway is a gap, after which the model re-syncs.
STATE_DEPTH = 1000
STALE_PERIODS = 3  # diagnostic periods without a sample before STALE

PARAMETERS: tuple[Param, ...] = (
    Param("params_file", "", "parameter file of the monitored actuator (as written by fit: "
          "its provenance holds the validation MAE)", read_only=True),
    Param("resync_period", 1.0, "s of the states' time between two re-syncs of the model "
          "to the measured state", read_only=True, low=1.0e-3, high=3600.0),
    Param("mae_window", 5.0, "time constant of the running MAE, s", read_only=True,
          low=1.0e-3, high=1.0e5),
    Param("reference_mae", 0.0, "position MAE the thresholds scale, rad (0 = the file's "
          "provenance validation_mae, else train_mae)", read_only=True, low=0.0, high=10.0),
    Param("warn_factor", 2.0, "WARN when the running MAE exceeds this x the reference MAE",
          read_only=True, low=1.0, high=1.0e3),
    Param("error_factor", 5.0, "ERROR when the running MAE exceeds this x the reference MAE "
          "(> warn_factor)", read_only=True, low=1.0, high=1.0e3),
    Param("friction_rate", 0.5, "fraction of the Gauss-Newton step the friction scale takes "
          "per re-sync window (0 = not tracked)", read_only=True, low=0.0, high=1.0),
    Param("friction_tolerance", 0.2, "friction change named in the diagnostic from this "
          "relative size on", read_only=True, low=0.0, high=100.0),
    Param("resistance_tolerance", 0.05, "winding resistance change (thermal group) named "
          "from this relative size on", read_only=True, low=0.0, high=100.0),
    Param("lag_rate", 0.5, "fraction of the Gauss-Newton step the command delay estimate "
          "takes per re-sync window (0 = not tracked)", read_only=True, low=0.0, high=1.0),
    Param("lag_tolerance", 0.01, "lag of the joint behind the model named (bus delay) from "
          "this many s on", read_only=True, low=1.0e-4, high=1.0),
    Param("diagnostic_period", 1.0, "s of the states' time between two /diagnostics",
          read_only=True, low=1.0e-3, high=3600.0),
    Param("publish_every", 1, "publish the residuals every this many samples", read_only=True,
          low=1, high=1000000),
)

_LEVELS = {0: DiagnosticStatus.OK, 1: DiagnosticStatus.WARN, 2: DiagnosticStatus.ERROR,
           STALE: DiagnosticStatus.STALE}


def _stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


class MonitorNode(Node):
    """The shadow of one actuator; keyword arguments go to :class:`rclpy.node.Node`."""

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        values = declare(self, PARAMETERS)
        refuse_unknown(self)  # a typo is refused before the file is read
        self._values = values
        path = values["params_file"]
        if not path:
            raise BamError("params_file is required: the identified set of the actuator "
                           "(a file written by fit)")
        self.params = load(path)
        mae, source = reference_mae(self.params, path, values["reference_mae"])
        self.thresholds = Thresholds(
            mae, values["warn_factor"], values["error_factor"],
            values["friction_tolerance"], values["resistance_tolerance"],
            values["lag_tolerance"], source).check()
        ShadowSettings(1.0e-3, values["resync_period"], values["mae_window"],
                       values["friction_rate"], values["lag_rate"]).check()  # refused now
        self.shadow: Shadow | None = None
        self.last_status: DiagnosticStatus | None = None
        self.samples = self.gaps = self.skipped = 0
        self._info: tuple | None = None
        self._joint = ""
        self._problem = ""  # why the actuator cannot be shadowed (wrong actuator), or ""
        self._joints: dict[int, JointState] = {}
        self._states: dict[int, ActuatorStateArray] = {}
        self._last_ns: int | None = None
        self._next_diag_ns: int | None = None
        self._quiet_periods = 0
        self._create_topics()
        self.get_logger().info(
            f"{self.params.actuator.name} {self.params.model.name} from {path}: WARN above "
            f"{self.thresholds.warn:.3g} rad, ERROR above {self.thresholds.error:.3g} rad "
            f"(running MAE, re-synced every {values['resync_period']:g} s; x the {source} "
            f"{mae:.3g} rad)")

    def _create_topics(self) -> None:
        deep = profile(contract.STATE_QOS)
        deep.depth = STATE_DEPTH
        self.create_subscription(JointState, contract.JOINT_STATES.name, self._on_joint, deep)
        self.create_subscription(ActuatorStateArray, contract.ACTUATOR_STATES.name,
                                 self._on_states, deep)
        self.create_subscription(BenchInfo, contract.BENCH_INFO.name, self._on_info,
                                 profile(contract.BENCH_INFO.qos))
        self._residual_pub = self.create_publisher(
            JointState, contract.MONITOR_RESIDUALS.name, profile(contract.MONITOR_RESIDUALS.qos))
        self._mae_pub = self.create_publisher(JointState, contract.MONITOR_MAE.name,
                                              profile(contract.MONITOR_MAE.qos))
        self._diag_pub = self.create_publisher(DiagnosticArray, contract.DIAGNOSTICS.name,
                                               profile(contract.DIAGNOSTICS.qos))
        # Wall time: states that stopped coming have no stamps to count periods with.
        self.create_timer(self._values["diagnostic_period"], self._check_stale)

    # -- the bench ---------------------------------------------------------------------

    def _on_info(self, msg: BenchInfo) -> None:
        """A new shadow when the bench changes; the same one (ŝ kept) when the actuator
        only republished it (a simulator does after a parameter change)."""
        info = (msg.actuator, msg.joint_name, msg.mass, msg.arm_mass, msg.length,
                msg.supply_voltage, msg.control_rate)
        if info == self._info:
            return
        self._info, self._joint = info, msg.joint_name
        self._problem = ""
        if msg.actuator != self.params.actuator.name:
            self._problem = (f"the bench's actuator is a {msg.actuator}, the parameter file "
                             f"is for a {self.params.actuator.name}")
        try:
            settings = ShadowSettings(1.0 / msg.control_rate, self._values["resync_period"],
                                      self._values["mae_window"],
                                      self._values["friction_rate"],
                                      self._values["lag_rate"]).check()
            bench = Bench(mass=msg.mass, length=msg.length, arm_mass=msg.arm_mass)
            supply = msg.supply_voltage if msg.supply_voltage > 0.0 else None
            self.shadow = None if self._problem else Shadow(self.params, bench, settings,
                                                            supply, msg.joint_name)
        except (BamError, ZeroDivisionError) as exc:
            self._problem = f"bam/bench_info cannot be shadowed: {exc}"
            self.shadow = None
        if self._problem:
            self.get_logger().error(self._problem)
        self._last_ns = None

    # -- samples -----------------------------------------------------------------------

    def _on_joint(self, msg: JointState) -> None:
        self._pair(self._joints, self._states, _stamp_ns(msg), msg)

    def _on_states(self, msg: ActuatorStateArray) -> None:
        self._pair(self._states, self._joints, _stamp_ns(msg), msg)

    def _pair(self, mine: dict, theirs: dict, stamp: int, msg) -> None:
        """Keep ``msg`` until its twin of the other topic (same stamp) is here."""
        twin = theirs.pop(stamp, None)
        if twin is None:
            mine[stamp] = msg
            if len(mine) > STATE_DEPTH:  # the other topic lost it: forget the oldest
                mine.pop(next(iter(mine)))
            return
        for pending in (mine, theirs):  # older ones will never be paired
            for old in [s for s in pending if s < stamp]:
                del pending[old]
        joint, states = (msg, twin) if isinstance(msg, JointState) else (twin, msg)
        self._sample(stamp, joint, states)

    def _sample(self, stamp: int, joint: JointState, states: ActuatorStateArray) -> None:
        shadow = self.shadow
        if shadow is None:
            return
        measurement = self._measurement(joint, states)
        if measurement is None:
            self.skipped += 1
            return
        last = self._last_ns
        # A sample off the rate by more than half a tick has no model state to compare
        # with: one after a lost one (or none yet, or a refused one), or an early one, as
        # a driver's loop sends while it catches up after its host held it (samples a
        # fraction of a tick apart, the model a whole tick per sample: it ran ahead, and
        # the true set's running MAE peaked at 2.3-3.3x its mean beside the Dynamixel
        # emulator on a 2-core machine with both cores busy; 1.5x since, measured). The
        # model re-syncs on it. A stamp not after the last is the shadow's to count.
        gap = last is not None and abs(stamp - last - 1e9 * shadow.settings.dt) \
            > 0.5e9 * shadow.settings.dt
        try:
            residual = shadow.step(measurement, resync=gap or last is None)
        except BamError:  # a value the model refuses: re-sync at the next one
            self.skipped += 1
            self._last_ns = None
            return
        if residual is None:  # repeated or out of order: STALE once a window's worth came
            if shadow.frozen % shadow.stale_after == 0:
                self._publish_diagnostics(stamp=joint.header.stamp)
            return
        self.gaps += gap
        self.samples += 1
        self._quiet_periods = 0
        self._last_ns = stamp
        if self.samples % self._values["publish_every"] == 0:
            self._publish_residual(joint, residual)
        if self._next_diag_ns is None or stamp >= self._next_diag_ns:
            self._next_diag_ns = stamp + int(self._values["diagnostic_period"] * 1e9)
            self._publish_diagnostics(stamp=joint.header.stamp)

    def _measurement(self, joint: JointState, states: ActuatorStateArray) -> Measurement | None:
        """The monitored joint's sample, None when a message lacks it."""
        try:
            i = list(joint.name).index(self._joint)
            state = next(a for a in states.actuators if a.name == self._joint)
            return Measurement(float(joint.position[i]), float(joint.velocity[i]),
                               state.goal_position, state.torque_enable, state.gain,
                               state.temperature, state.input_voltage,
                               _stamp_ns(joint) * 1e-9)
        except (ValueError, IndexError, StopIteration):
            return None

    # -- outputs -----------------------------------------------------------------------

    def _publish_residual(self, joint: JointState, r: Residual) -> None:
        for publisher, values in ((self._residual_pub, (r.position, r.velocity)),
                                  (self._mae_pub, (r.mae_position, r.mae_velocity))):
            msg = JointState(name=[self._joint], position=[values[0]], velocity=[values[1]])
            msg.header.stamp = joint.header.stamp
            publisher.publish(msg)

    def _status(self) -> DiagnosticStatus:
        shadow = self.shadow
        name = f"{self.get_fully_qualified_name()}: {self._joint or 'waiting for bench_info'}"
        if shadow is None or self._problem:
            return self._make_status(2 if self._problem else STALE, name,
                                     self._problem or "no bam/bench_info yet", {})
        level, message = assess(shadow, self.thresholds)
        values = {
            "mae_position": shadow.mae_position, "mae_velocity": shadow.mae_velocity,
            "reference_mae": self.thresholds.reference_mae,
            "reference": self.thresholds.reference_name, "warn_mae": self.thresholds.warn,
            "error_mae": self.thresholds.error, "friction_scale": shadow.friction_scale,
            "resistance_change": shadow.resistance_change, "temperature": shadow.temperature,
            "lag": shadow.lag, "state_interval": shadow.state_interval,
            "jammed": shadow.jammed, "windows": shadow.windows, "samples": self.samples,
            "gaps": self.gaps, "not_numbers": shadow.nonfinite,
            "frozen_stamps": shadow.frozen, "model": self.params.model.name,
        }
        return self._make_status(level, name, message, values)

    def _make_status(self, level: int, name: str, message: str, values: dict) -> DiagnosticStatus:
        return DiagnosticStatus(level=_LEVELS[level], name=name, message=message,
                                hardware_id=self.params.actuator.name,
                                values=[KeyValue(key=k, value=_text(v))
                                        for k, v in values.items()])

    def _publish_diagnostics(self, status: DiagnosticStatus | None = None,
                             stamp: Time | None = None) -> None:
        """``status`` (default: the verdict now), stamped with the sample it holds for (the
        states' time, simulated or not), else the node's clock."""
        self.last_status = status or self._status()
        msg = DiagnosticArray(status=[self.last_status])
        msg.header.stamp = stamp if stamp is not None else self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)

    def _check_stale(self) -> None:
        """STALE once no sample came for a few periods (the actuator stopped, or none)."""
        self._quiet_periods += 1
        if self._quiet_periods % STALE_PERIODS:
            return
        status = self._status()
        status.level = DiagnosticStatus.STALE
        status.message = f"no actuator states for {self._quiet_periods} periods: " \
            + status.message
        self._publish_diagnostics(status)


def _text(value: object) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def main(args: list[str] | None = None) -> int:
    return run_node("monitor", MonitorNode, usage(
        "monitor", "Health of an actuator against its identified model (bam_sim)",
        PARAMETERS), args)


if __name__ == "__main__":
    sys.exit(main())
