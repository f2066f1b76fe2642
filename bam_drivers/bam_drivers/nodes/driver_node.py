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
from typing import ClassVar

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState

from bam_msgs.msg import ActuatorState, BenchInfo
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.common.actuator_node import ActuatorNode
from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.node_parameters import Param, refuse_unknown, usage
from bam_sim.common.numbers import finite_non_negative
from bam_sim.common.runner import error_line, run_node
from bam_sim.models.files.parameter_file import published
from bam_sim.models.model_registry import FRICTION_MODELS
from bam_sim.models.servo.actuator import Actuator

BENCH_PARAMETERS = frozenset(("mass", "arm_mass", "length"))
DIAGNOSTICS_TOPIC = "/diagnostics"
DIAGNOSTICS_PERIOD = 1.0  # s
IDLE_SLICE = 0.1  # s, longest sleep of the loop while it waits for a connection attempt
# Parameters every driver takes alike, each in its place in the driver's table.
COMMAND_TIMEOUT = Param(
    "command_timeout", 0.5, "torque off when no command arrived for this long, s "
    "(0 = no watchdog)", low=0.0, high=1.0e6)
MASS = Param("mass", 1.0, "point mass at the end of the arm, kg", low=0.0, high=1000.0)
ARM_MASS = Param("arm_mass", 0.0, "mass of the arm (uniform rod), kg", low=0.0, high=1000.0)
THREAD_PRIORITY = Param(
    "thread_priority", 0, "SCHED_FIFO priority of the loop thread, 1..99 (0 = normal "
    "scheduling)", read_only=True, low=0, high=99)
CONNECT_TIMEOUT = Param(
    "connect_timeout", 10.0, "give up (exit code 2) when the device has not answered once "
    "within this long after the start, s (0 = retry for ever); a device lost after it "
    "answered is retried for ever", read_only=True, low=0.0, high=1.0e6)


def mean_kt(actuator: Actuator) -> float:
    """k_t of ``actuator``, mean over its published parameter sets (NaN if none)."""
    values = []
    for model in FRICTION_MODELS.values():
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
    """What every driver node does alike over its bus supervisor.

    Set-up (declare, configure, topics, loop), commands to the supervisor, bench
    parameters to ``bam/bench_info``, the loop's tick (one supervised cycle,
    published), the stop (torque off, read back), the supervisor's log lines and
    the ``/diagnostics`` timer. A subclass binds it to its bus: the class
    attributes below, :meth:`_declare` and :meth:`_configure` (which set
    ``_supervisor``, ``_actuator``, ``_kt``, :attr:`joint_names` and, with
    :meth:`_configure_loop`, the bench and loop values), :meth:`_describe`,
    :attr:`_location`, :meth:`_publish` and the diagnostics hooks
    :meth:`_diagnostics_snapshot` and :meth:`_diagnostics`.
    """

    NAME: ClassVar[str]  # node name, program name and loop thread name prefix
    PARAMETERS: ClassVar[tuple[Param, ...]]  # the parameter table, in the order of the help
    UNIT: ClassVar[str]  # what one joint's hardware is called in log lines: "servo", "drive"
    TORQUE_OFF_LINE: ClassVar[str]  # logged when the torque off of every joint was read back

    _info_published = False
    _info_voltage = math.nan

    def __init__(self, **kwargs) -> None:
        self.failure: BamError | None = None
        self.failed = threading.Event()  # set with failure: the driver gave up
        self._supervisor = None  # until _configure: stop() after a failed set-up does nothing
        self._cycles = 0
        super().__init__(self.NAME, **kwargs)

    # -- set-up ------------------------------------------------------------------

    def _setup(self) -> None:
        values = self._declare()
        refuse_unknown(self)  # a typo is refused before the bus opens
        self._configure(values)
        self._make_interfaces()
        if self._supply_voltage > 0.0:
            self._publish_bench_info()
        self._follow_parameters()
        self.get_logger().info(self._describe())
        self._start_loop(f"{self.NAME}-loop", self._rate, 1.0, self._priority)

    def _declare(self) -> dict:
        """Declare every parameter; their values."""
        raise NotImplementedError

    def _configure(self, values: dict) -> None:
        """Check the values and build the bus and its supervisor (BamError when refused)."""
        raise NotImplementedError

    def _configure_loop(self, v: dict) -> None:
        """The bench, loop rate, thread priority and supply voltage every driver takes."""
        self._bench = Bench(mass=v["mass"], length=v["length"], arm_mass=v["arm_mass"])
        self._rate = float(v["rate"])
        self._priority = int(v["thread_priority"])
        self._supply_voltage = float(v["supply_voltage"])

    def _describe(self) -> str:
        """The line logged once set up: the hardware, its joints and the rate."""
        raise NotImplementedError

    def _make_interfaces(self) -> None:
        """The swap contract (no /clock: hardware time), /diagnostics and its timer.

        Every state field is filled in by each cycle, so the preallocated
        messages start with NaN input voltages.
        """
        n = len(self.joint_names)
        self._create_topics([self._actuator.control_unit] * n, [math.nan] * n, publish_clock=False)
        self._diag_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC,
                                               QoSProfile(depth=10))
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics)

    # -- public helpers ----------------------------------------------------------

    @property
    def watchdog_tripped(self) -> bool:
        return self._supervisor.watchdog_tripped

    @property
    def tick_count(self) -> int:
        """Bus cycles started (the loop's tick index)."""
        return self._cycles

    def stop(self) -> None:
        """Stop the loop thread, then turn the torque off (read back) and close the bus."""
        super().stop()
        if self._supervisor is None:
            return
        confirmed = self._supervisor.shutdown()
        if confirmed:
            self.get_logger().info(self.TORQUE_OFF_LINE)
        elif confirmed is not None:  # None: not connected, nothing to turn off
            self.get_logger().error(f"could not confirm the torque off of every {self.UNIT} on "
                                    f"{self._location}; check the {self.UNIT}s")

    @property
    def _location(self) -> str:
        """Where the hardware is (port, interface), for log lines."""
        raise NotImplementedError

    def _log(self, level: str, text: str) -> None:
        """The supervisor's log lines, at their severity."""
        logger = self.get_logger()
        # One call site per severity: rclpy refuses a call site changing severity.
        if level == "error":
            logger.error(text)
        elif level == "warning":
            logger.warning(text)
        else:
            logger.info(text)

    # -- the loop (one bus cycle per tick) ---------------------------------------

    def _tick(self) -> None:
        self._cycles += 1
        stamp_ns = self.get_clock().now().nanoseconds  # just before the bus is read
        cycle = self._supervised_cycle()
        if cycle is None:
            return
        measured = self._publish(stamp_ns, cycle)
        if measured is not None and not self._info_published:
            self._publish_bench_info(measured)

    def _publish(self, stamp_ns: int, cycle: object) -> float | None:
        """Publish what ``cycle`` read; the first joint's supply voltage (None: nothing read)."""
        raise NotImplementedError

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

    # -- bench info and diagnostics ----------------------------------------------

    def _publish_bench_info(self, measured: float | None = None) -> None:
        """``bam/bench_info`` with the configured supply voltage, else ``measured``
        (nothing before a voltage is known)."""
        voltage = self._supply_voltage if self._supply_voltage > 0.0 else measured
        if voltage is None:
            return
        bench = self._bench
        msg = BenchInfo(
            actuator=self._actuator.name, joint_name=self.joint_names[0],
            mass=float(bench.mass), arm_mass=float(bench.arm_mass),
            length=float(bench.length), gravity=GRAVITY, supply_voltage=float(voltage),
            damping=self._damping(), control_unit=self._actuator.control_unit,
            source=BenchInfo.SOURCE_HARDWARE, control_rate=self._rate, model="",
            parameters="", unit=self._unit())
        self.topics.publish_info(msg, self.get_clock().now().nanoseconds)
        self._info_voltage = float(voltage)
        self._info_published = True

    def _damping(self) -> float:
        """Damping for ``bam/bench_info``: unknown (NaN) unless the driver's law uses one."""
        return math.nan

    def _unit(self) -> str:
        """The bench joint's servo for ``bam/bench_info``: its bus id, and its serial
        number where the servo reports one ("" where not known)."""
        return ""

    def _diagnostics_snapshot(self) -> object:
        """The counters the next ``/diagnostics`` compares with (copies, not live ones);
        :meth:`_configure` sets the first, ``_diag_previous``, as (time, snapshot)."""
        raise NotImplementedError

    def _publish_diagnostics(self) -> None:
        """One ``/diagnostics`` message about the window since the previous one."""
        now = time.monotonic()
        then, before = self._diag_previous
        snapshot = self._diagnostics_snapshot()
        self._diag_previous = (now, snapshot)
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = self._diagnostics(snapshot, before, max(now - then, 1e-9))
        self._diag_pub.publish(msg)

    def _diagnostics(self, now: object, before: object, window: float) -> list[DiagnosticStatus]:
        """The ``/diagnostics`` entries from two snapshots ``window`` seconds apart."""
        raise NotImplementedError


def fill_joint(joint: JointState, state: ActuatorState, k: int, *, position: float,
               velocity: float, torque: float, goal: float | None, enabled: bool,
               gain: float, control: float, current: float, voltage: float,
               temperature: float, error_flags: int) -> None:
    """Row ``k`` of a cycle's JointState and its ActuatorState; the goal of a joint
    without one (torque off, no command yet) is where it is."""
    joint.position[k] = position
    joint.velocity[k] = velocity
    joint.effort[k] = torque
    state.goal_position = float(goal) if goal is not None else position
    state.torque_enable = enabled
    state.gain = gain
    state.control = control
    state.current = current
    state.input_voltage = voltage
    state.temperature = temperature
    state.motor_torque = torque
    state.error_flags = error_flags


def stamp(stamp_ns: int, *messages: object) -> None:
    """Set the header stamp of ``messages`` (a JointState and an ActuatorStateArray)."""
    sec, nsec = divmod(stamp_ns, 1_000_000_000)
    for msg in messages:
        msg.header.stamp.sec = sec
        msg.header.stamp.nanosec = nsec


def driver_main(node_class: type[DriverNode], description: str,
                args: list[str] | None = None) -> int:
    """A driver's executable: :func:`run_driver` with the help built from the node's
    parameter table."""
    name = node_class.NAME
    return run_driver(name, node_class, usage(name, description, node_class.PARAMETERS,
                                              computed="see the description"), args)


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
