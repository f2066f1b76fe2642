"""``dynamixel``: Dynamixel servos on a serial bus, publishing what the sim node publishes.

Example::

    ros2 run bam_drivers dynamixel --ros-args -p port:=/dev/ttyUSB0 \\
        -p servo_model:=mx64_p1 -p ids:=[1] -p rate:=500.0

A thin node over :class:`bam_drivers.dynamixel.bus.DynamixelBus`. A loop thread of its
own (``bam_sim.common.actuator_node.TickLoop``: absolute deadlines of a monotonic clock,
no drift) runs one bus cycle per tick at ``rate``: read the state of every
servo (one sync or bulk read), then write the goals (one sync write; gains
and torque enables only when they change) and publish ``/joint_states`` and
``/bam/actuator_states``, stamped with the node clock just before the read.
A cycle publishes the joints read in it (a servo that did not answer is left
out of that cycle's messages, never published stale). The topics, types and
QoS are those of :mod:`bam_sim.common.contract` (the swap contract), plus
``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``, about 1 Hz).

Published values, per joint (q = direction·θ + offset):

* ``/joint_states``: position (rad), velocity (rad/s), effort = the
  estimated motor torque (N·m, NaN where unknown);
* ``/bam/actuator_states``: the commanded goal position, torque enable and
  gain kp in force after the cycle's writes (as the sim node reports the
  command driving the next step), ``control`` = duty·input voltage (V, the
  voltage of the H-bridge, paper equation 12), ``current`` (A, NaN where the
  model has no current sense), input voltage, temperature, ``error_flags``
  (protocol 1.0: the alarm bits of the status error byte; protocol 2.0: the
  Hardware Error Status register) and ``motor_torque``;
* ``motor_torque`` = k_t·I where the servo reports its current I: equation
  (13), τ_m = k_t/R·U − k_t²/R·q̇, is k_t·I with I = (U − k_t·q̇)/R. k_t is
  the mean over the published M1..M6 sets of ``actuator`` (they agree within
  ±2.5 %), whereas R, which the voltage form would need, differs by up to
  70 % between them, so torque is not estimated from the voltage: NaN
  without a current reading.

``/bam/bench_info`` (transient local) comes from the bench parameters, source
"hardware", control_rate = rate; with ``supply_voltage`` 0 it is published
after the first read, with the input voltage measured by the first servo.

Fail-safe behaviour:

* torque off on every servo when the node is destroyed (SIGINT, SIGTERM,
  launch shutdown), confirmed by reading the registers back;
* command watchdog: no command on /bam/commands or /position_commands for
  ``command_timeout`` s turns the torque off (logged); the next command turns
  it back on for the joints that had it (or as that command says);
* communication errors (timeouts, corrupt replies, status errors, hardware
  error bits) are counted per servo, reported in /diagnostics and logged at
  most once per 10 s per kind; the loop never stops on them;
* the port is reopened when it fails (or when no servo answered for 0.5 s),
  retried every 0.25 s; cycles resume as soon as it opens and the servos
  answer their ping, and the gains and torque enables are written again;
* the node starts even when the port is absent (logged, retried) so that a
  launch does not depend on start order; configuration errors (unknown
  model, ids and joint names of different lengths, ...) stop it at once.

``latency_timer_ms``: the packet timeout of dynamixel-sdk, see
:mod:`bam_drivers.dynamixel.bus`; 0 (default) detects it when the port opens: 1 ms for
the emulator's pseudo-terminal, a USB adapter's own setting from sysfs, else
the SDK's 16 ms.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile

from bam_drivers.dynamixel.bus import (
    CycleResult,
    DynamixelBus,
    ServoCounters,
    hardware_error_names,
)
from bam_drivers.dynamixel.control_table import TABLES, get_table
from bam_msgs.msg import ActuatorState, ActuatorStateArray, BenchInfo
from bam_sim.bench.pendulum import GRAVITY, Bench
from bam_sim.common.actuator_node import ActuatorNode
from bam_sim.common.actuator_topics import joint_state
from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import Param, declare, usage
from bam_sim.common.numbers import finite_non_negative
from bam_sim.common.runner import run_node
from bam_sim.models.actuators import get_actuator
from bam_sim.models.friction import MODELS
from bam_sim.models.parameter_file import published
from bam_sim.models.servo import VOLTAGE

NODE_NAME = "dynamixel"
DIAGNOSTICS_TOPIC = "/diagnostics"
DIAGNOSTICS_PERIOD = 1.0  # s
RECONNECT_PERIOD = 0.25  # s between attempts to reopen the port
STALE_REOPEN = 0.5  # s without any servo answering after which the port is reopened
LOG_PERIOD = 10.0  # s, at most one log line per kind of problem in this time
WRITE_REPEATS = 2  # cycles a changed gain / torque enable is written (sync writes are unacked)

PARAMETERS: tuple[Param, ...] = (
    Param("port", "/dev/ttyUSB0", "serial port of the bus (a /dev/serial/by-id/ path "
          "survives re-plugging)", read_only=True),
    Param("baud_rate", 1000000, "baud rate of the bus", read_only=True, low=9600, high=4500000),
    Param("protocol", 0, "Dynamixel protocol 1 or 2 (0 = the servo model's)", read_only=True,
          low=0, high=2),
    Param("servo_model", "mx64_p1", f"control table: {', '.join(TABLES)}", read_only=True),
    Param("ids", [1], "servo ids on the bus", read_only=True),
    Param("joint_names", None, "joint name of each id (default: pendulum for one id, "
          "joint<id> for several)", read_only=True),
    Param("offsets", None, "joint position at servo position 0 (register 2048), rad, one per "
          "id (default zeros)", read_only=True),
    Param("directions", None, "+1 or -1 per id: joint direction vs the servo's (default +1)",
          read_only=True),
    Param("rate", 200.0, "bus cycles (read, write, publish) per second, Hz", read_only=True,
          low=1.0, high=5000.0),
    Param("command_timeout", 0.5, "torque off when no command arrived for this long, s "
          "(0 = no watchdog)", low=0.0, high=1.0e6),
    Param("gain", None, "initial P gain kp in model units (MX protocol-1 P register; default "
          "the actuator's second Table I gain); change it with /bam/commands", read_only=True,
          low=0.0, high=1.0e4),
    Param("torque_enable_on_start", False, "turn the torque on at start, holding the present "
          "position", read_only=True),
    Param("actuator", "mx64", "bam_sim actuator of the bench (mx64, mx106)", read_only=True),
    Param("mass", 1.0, "point mass at the end of the arm, kg", low=0.0, high=1000.0),
    Param("arm_mass", 0.0, "mass of the arm (uniform rod), kg", low=0.0, high=1000.0),
    Param("length", 0.15, "distance from the axis to the point mass, m", low=0.001,
          high=100.0),
    Param("supply_voltage", 0.0, "supply voltage for /bam/bench_info, V (0 = measured by the "
          "first servo)", read_only=True, low=0.0, high=1000.0),
    Param("latency_timer_ms", 0.0, "latency timer of the serial adapter, ms, for the packet "
          "timeout (0 = detect: 1 for a pseudo-terminal, the USB adapter's sysfs "
          "latency_timer, else dynamixel-sdk's 16)", read_only=True, low=0.0, high=1000.0),
    Param("thread_priority", 0, "SCHED_FIFO priority of the loop thread, 1..99 (0 = normal "
          "scheduling)", read_only=True, low=0, high=99),
)
BENCH_PARAMETERS = frozenset(("mass", "arm_mass", "length"))


def _mean_kt(actuator: str) -> float:
    """k_t of ``actuator``, mean over its published parameter sets (NaN if none)."""
    values = []
    for model in MODELS:
        try:
            values.append(float(published(actuator, model).values["kt"]))
        except (BamError, KeyError):
            continue
    return sum(values) / len(values) if values else math.nan


class _Throttle:
    """At most one log line per kind every ``period`` s; counts the ones held back."""

    def __init__(self, node: Node, period: float = LOG_PERIOD) -> None:
        self._node = node
        self._period = period
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def log(self, kind: str, level: str, message: str) -> bool:
        now = time.monotonic()
        if now - self._last.get(kind, -math.inf) < self._period:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        self._last[kind] = now
        text = message + (f" ({held} more since the last report)" if held else "")
        logger = self._node.get_logger()
        # One call site per severity: rclpy refuses a call site changing severity.
        if level == "error":
            logger.error(text)
        elif level == "warning":
            logger.warning(text)
        else:
            logger.info(text)
        return True


class DynamixelNode(ActuatorNode):
    """The driver; keyword arguments go to :class:`rclpy.node.Node`.

    :attr:`lock` guards the commanded state (loop vs callbacks).
    """

    def __init__(self, **kwargs) -> None:
        self._bus: DynamixelBus | None = None
        super().__init__(NODE_NAME, **kwargs)

    # -- set-up ------------------------------------------------------------------------

    def _setup(self) -> None:
        try:
            values = self._declare()
        except ParameterException as exc:
            hint = (" (write doubles with a decimal point, e.g. mass:=1.0, and lists as "
                    "[a, b])" if isinstance(exc, InvalidParameterTypeException) else "")
            raise BamError(f"{exc}{hint}") from None
        self._configure(values)
        self._make_interfaces()
        if self._supply_voltage > 0.0:
            self._publish_bench_info()
        self._follow_parameters()
        self.get_logger().info(
            f"{len(self._ids)} {self._bus.table.title} on {self._bus.port_name} at "
            f"{self._bus.baud_rate} baud, ids {list(self._ids)} -> joints "
            f"{list(self.joint_names)}, {self._rate:g} Hz")
        self._start_loop("dynamixel-loop", self._rate, 1.0, self._priority)

    def _declare(self) -> dict:
        by_name = {p.name: p for p in PARAMETERS}
        values = declare(self, [by_name["ids"], by_name["actuator"]])
        actuator = get_actuator(values["actuator"])
        if actuator.family != VOLTAGE:
            raise BamError(f"actuator {actuator.name} is current-controlled; the Dynamixel "
                           "driver's bench actuator is a Dynamixel (mx64, mx106)")
        self._actuator = actuator
        ids = list(values["ids"])
        defaults = {"joint_names": ["pendulum"] if len(ids) == 1 else [f"joint{i}" for i in ids],
                    "offsets": [0.0] * len(ids), "directions": [1] * len(ids),
                    "gain": float(actuator.gains[1])}
        rest = [p for p in PARAMETERS if p.name not in values]
        values.update(declare(self, rest, defaults))
        return values

    def _configure(self, v: dict) -> None:
        table = get_table(v["servo_model"])
        if v["protocol"] not in (0, table.protocol):
            raise BamError(f"servo_model {table.name} speaks protocol {table.protocol}, but "
                           f"protocol is {v['protocol']}; set protocol:={table.protocol} or 0")
        self._bus = DynamixelBus(v["port"], table, v["ids"], baud_rate=v["baud_rate"],
                                 offsets=list(v["offsets"]), directions=list(v["directions"]),
                                 latency_timer_ms=v["latency_timer_ms"])
        self._ids = self._bus.ids
        joints = tuple(v["joint_names"])
        if len(joints) != len(self._ids) or len(set(joints)) != len(joints) or "" in joints:
            raise BamError(f"joint_names must hold {len(self._ids)} different non-empty names "
                           f"(one per id), got {list(joints)}")
        self.joint_names = joints
        self._bench = Bench(mass=v["mass"], length=v["length"], arm_mass=v["arm_mass"])
        self._rate = float(v["rate"])
        self._priority = int(v["thread_priority"])
        self._supply_voltage = float(v["supply_voltage"])
        self._kt = _mean_kt(self._actuator.name) if table.current is not None else math.nan
        limit = self._bus.gain_limit()
        if not 0.0 <= v["gain"] <= limit:
            raise BamError(f"gain {v['gain']} is outside [0, {limit:g}], the P-gain register "
                           f"of the {table.title}")
        self._init_command(v)
        self._init_loop()

    def _init_command(self, v: dict) -> None:
        """The commanded state (guarded by the lock); goals None until known."""
        n = len(self._ids)
        self._goals: list[float | None] = [None] * n
        self._goal_given = [False] * n  # else the goal follows the position (torque off)
        self._enables = [bool(v["torque_enable_on_start"])] * n
        self._gains = [float(v["gain"])] * n
        self._gain_writes = self._torque_writes = 0
        self._timeout = float(v["command_timeout"])
        self._last_command = time.monotonic()
        self._tripped: list[bool] | None = None  # enables before the watchdog tripped

    def _init_loop(self) -> None:
        """State of the loop thread, and the counters /diagnostics reports."""
        self._throttle = _Throttle(self)
        self._cycles = 0
        self._connected_once = False
        self._next_connect = 0.0
        self._last_answer = time.monotonic()
        self._lost_at: float | None = None
        self._info_published = False
        self.port_state = "opening"
        self.stats = {"cycles": 0, "full_reads": 0, "partial_reads": 0, "failed_reads": 0,
                      "port_losses": 0, "reconnects": 0}
        self._diag_previous = (time.monotonic(), {**self.stats, "bytes": (0, 0)},
                               {i: ServoCounters() for i in self._ids})
        self._last_states: dict[int, object] = {}

    def _make_interfaces(self) -> None:
        """The swap contract (no /clock: hardware time), /diagnostics and its timer.

        Every state field is filled in by each cycle, so the preallocated
        messages start with NaN input voltages.
        """
        n = len(self._ids)
        self._create_topics([ActuatorState.CONTROL_UNIT_VOLT] * n, [math.nan] * n,
                            publish_clock=False)
        self._diag_pub = self.create_publisher(DiagnosticArray, DIAGNOSTICS_TOPIC,
                                               QoSProfile(depth=10))
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics)

    # -- public helpers ------------------------------------------------------------------

    @property
    def bus(self) -> DynamixelBus:
        """The bus (used by the loop thread; read-only elsewhere)."""
        return self._bus

    @property
    def connected(self) -> bool:
        return self._bus is not None and self._bus.is_open and self.port_state == "open"

    @property
    def watchdog_tripped(self) -> bool:
        return self._tripped is not None

    @property
    def tick_count(self) -> int:
        """Bus cycles started (the loop's tick index)."""
        return self._cycles

    def stop(self) -> None:
        """Stop the loop thread, turn the torque off and close the port."""
        super().stop()
        bus = self._bus
        if bus is not None and bus.is_open:
            if bus.torque_off():
                self.get_logger().info("torque off on every servo; port closed")
            else:
                self.get_logger().error("could not confirm the torque off of every servo "
                                        f"on {bus.port_name}; check the servos")
            bus.close()

    # -- the loop (one bus cycle per tick) ---------------------------------------------

    def _tick(self) -> None:
        self._cycles += 1
        try:
            self._cycle()
        except Exception as exc:  # never stop the loop; reported
            self._throttle.log("cycle", "error", f"bus cycle failed: {type(exc).__name__}: "
                                                 f"{exc}")

    def _cycle(self) -> None:
        bus = self._bus
        now = time.monotonic()
        if not bus.is_open:
            if now >= self._next_connect:
                self._connect()
                self._loop.real_time_factor = 1.0  # restart the deadlines after the attempt
            return
        stamp = self.get_clock().now().nanoseconds
        result = bus.read_state()
        if result.port_error:
            self._port_lost(result.port_error)
            return
        self._account(result, now)
        # Commands and the watchdog act even in a cycle whose read failed.
        command = self._snapshot(result, now)
        self._write(command)
        if not bus.is_open:
            self._port_lost(bus.port_error)
        elif result.states:
            self._publish(stamp, result, command)
            if not self._info_published:
                self._publish_bench_info(next(iter(result.states.values())).input_voltage)
        elif now - self._last_answer > STALE_REOPEN:
            bus.close()
            self._port_lost(f"no servo answered for {STALE_REOPEN:g} s")

    def _connect(self) -> None:
        bus = self._bus
        try:
            bus.open()
            models = bus.check_models()
            for note in bus.ensure_position_mode():
                self.get_logger().warning(note)
            if not self._connected_once:
                self._check_return_delays()
                others = {i: m for i, m in models.items() if m != bus.table.name}
                if others:
                    self.get_logger().info(
                        f"servos of other models with the same registers: {others}")
            result = bus.read_state()
            if not result.states:
                raise BamError(f"no state read from the servos ({result.failures})")
        except BamError as exc:
            bus.close()
            self.port_state = f"reconnecting: {exc}"
            self._next_connect = time.monotonic() + RECONNECT_PERIOD
            self._throttle.log("connect", "error", f"{exc} (retrying every "
                                                   f"{RECONNECT_PERIOD:g} s)")
            return
        with self._lock:
            for i, dxl_id in enumerate(self._ids):
                if dxl_id in result.states and self._goals[i] is None:
                    self._goals[i] = result.states[dxl_id].position
            self._gain_writes = self._torque_writes = WRITE_REPEATS
        self.port_state = "open"
        self._last_answer = time.monotonic()
        self.stats["reconnects"] += 1
        if self._lost_at is not None:
            self.get_logger().info(f"port {bus.port_name} back after "
                                   f"{time.monotonic() - self._lost_at:.2f} s; resuming")
            self._lost_at = None
        elif not self._connected_once:
            self.get_logger().info(
                f"connected to ids {list(self._ids)} on {bus.port_name} (latency timer "
                f"{bus.latency_timer_ms:g} ms: {bus.latency_timer_source})")
        self._connected_once = True

    def _check_return_delays(self) -> None:
        slow = {i: d for i, d in self._bus.return_delays().items() if d > 0.0}
        if slow:
            self.get_logger().warning(
                "return delay time of "
                + ", ".join(f"id {i}: {d * 1e6:.0f} us" for i, d in slow.items())
                + " adds to every cycle; set the Return Delay Time register to 0 for fast "
                "cycles")

    def _port_lost(self, reason: str) -> None:
        self.port_state = f"reconnecting: {reason}"
        self.stats["port_losses"] += 1
        self._lost_at = time.monotonic()
        self._next_connect = self._lost_at + RECONNECT_PERIOD
        self._throttle.log("port", "error", f"Dynamixel port {self._bus.port_name}: {reason}; "
                                            f"reopening every {RECONNECT_PERIOD:g} s")

    def _account(self, result: CycleResult, now: float) -> None:
        stats = self.stats
        stats["cycles"] += 1
        if result.ok:
            stats["full_reads"] += 1
        elif result.states:
            stats["partial_reads"] += 1
        else:
            stats["failed_reads"] += 1
        if result.states:
            self._last_answer = now
        for dxl_id, kind in result.failures.items():
            self._throttle.log(f"comm/{dxl_id}/{kind}", "warning",
                               f"servo id {dxl_id}: {kind} (counted in /diagnostics)")
        for dxl_id, state in result.states.items():
            if state.hardware_error:
                names = ", ".join(hardware_error_names(self._bus.protocol,
                                                       state.hardware_error))
                self._throttle.log(f"hardware/{dxl_id}", "error",
                                   f"servo id {dxl_id} reports a hardware error: {names}")

    def _snapshot(self, result: CycleResult, now: float) -> tuple:
        """The command of this cycle (watchdog applied), and which writes it needs."""
        with self._lock:
            if self._timeout > 0.0 and self._tripped is None \
                    and now - self._last_command >= self._timeout:
                self._trip_watchdog()
            for i, dxl_id in enumerate(self._ids):
                state = result.states.get(dxl_id)
                if state is not None and not self._goal_given[i] and not self._enables[i]:
                    self._goals[i] = state.position  # hold where it is when enabled
            gains = self._gain_writes > 0
            torque = self._torque_writes > 0
            self._gain_writes = max(self._gain_writes - 1, 0)
            self._torque_writes = max(self._torque_writes - 1, 0)
            return list(self._goals), list(self._enables), list(self._gains), gains, torque

    def _trip_watchdog(self) -> None:
        """Torque off on every servo (lock held); the next command restores it."""
        self._tripped = list(self._enables)
        if any(self._enables):
            self._enables = [False] * len(self._ids)
            self._torque_writes = WRITE_REPEATS
            self._throttle.log("watchdog", "warning", (
                f"no command for {self._timeout:g} s (command_timeout): torque off; the next "
                "command on /bam/commands or /position_commands turns it back on"))

    def _write(self, command: tuple) -> None:
        goals, enables, gains, write_gains, write_torque = command
        bus, ids = self._bus, self._ids
        if write_torque:
            bus.write_torque({i: False for i, e in zip(ids, enables, strict=True) if not e})
        bus.write_goals({i: g for i, g, e in zip(ids, goals, enables, strict=True)
                         if e and g is not None})
        if write_gains:
            bus.write_gains(dict(zip(ids, gains, strict=True)))
        if write_torque:
            bus.write_torque({i: True for i, e in zip(ids, enables, strict=True) if e})

    # -- publishing --------------------------------------------------------------------

    def _publish(self, stamp_ns: int, result: CycleResult, command: tuple) -> None:
        goals, enables, gains = command[:3]
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        topics = self.topics
        if result.ok:
            joint, states, msg = topics.joint_msg, topics.states, topics.state_msg
            rows = range(len(self._ids))
        else:  # the joints read this cycle only
            rows = [i for i, dxl_id in enumerate(self._ids) if dxl_id in result.states]
            joint = joint_state([self.joint_names[i] for i in rows])
            states = [_blank(topics.states[i]) for i in rows]
            msg = ActuatorStateArray(actuators=states)
        joint.header.stamp.sec = msg.header.stamp.sec = sec
        joint.header.stamp.nanosec = msg.header.stamp.nanosec = nsec
        for k, i in enumerate(rows):
            s = result.states[self._ids[i]]
            torque = self._kt * s.current
            joint.position[k] = s.position
            joint.velocity[k] = s.velocity
            joint.effort[k] = torque
            a = states[k]
            a.goal_position = float(goals[i]) if goals[i] is not None else s.position
            a.torque_enable = bool(enables[i])
            a.gain = float(gains[i])
            a.control = s.control
            a.current = s.current
            a.input_voltage = s.input_voltage
            a.temperature = s.temperature
            a.motor_torque = torque
            a.error_flags = int(s.hardware_error)
        topics.publish_states(joint, msg)
        self._last_states = dict(result.states)

    def _publish_bench_info(self, measured: float | None = None) -> None:
        voltage = self._supply_voltage if self._supply_voltage > 0.0 else measured
        if voltage is None:
            return
        bench = self._bench
        msg = BenchInfo(
            actuator=self._actuator.name, joint_name=self.joint_names[0],
            mass=float(bench.mass), arm_mass=float(bench.arm_mass),
            length=float(bench.length), gravity=GRAVITY, supply_voltage=float(voltage),
            damping=math.nan, control_unit=ActuatorState.CONTROL_UNIT_VOLT,
            source=BenchInfo.SOURCE_HARDWARE, control_rate=self._rate, model="",
            parameters="")
        self.topics.publish_info(msg, self.get_clock().now().nanoseconds)
        self._info_voltage = float(voltage)
        self._info_published = True

    # -- diagnostics -------------------------------------------------------------------

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        t0, stats0, counters0 = self._diag_previous
        stats = {**self.stats, "bytes": self._bus.bytes()}
        counters = {i: replace(c) for i, c in self._bus.counters.items()}
        self._diag_previous = (now, stats, counters)
        window = max(now - t0, 1e-9)
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self._bus_status(stats, stats0, window)]
        for i, dxl_id in enumerate(self._ids):
            msg.status.append(self._servo_status(i, dxl_id, counters[dxl_id],
                                                 counters0[dxl_id], window))
        self._diag_pub.publish(msg)

    def _bus_status(self, stats: dict, before: dict, window: float) -> DiagnosticStatus:
        delta = {k: stats[k] - before[k] for k in stats if k != "bytes"}
        cycles = max(delta["cycles"], 1)
        tx, rx = (now - then for now, then in zip(stats["bytes"], before["bytes"], strict=True))
        rate = delta["cycles"] / window
        if self.port_state != "open":
            level, message = DiagnosticStatus.ERROR, f"port {self.port_state}"
        elif rate < 0.9 * self._rate:
            level, message = DiagnosticStatus.WARN, f"{rate:.0f} Hz, below {self._rate:g} Hz"
        elif delta["partial_reads"] or delta["failed_reads"] or delta["port_losses"]:
            level, message = DiagnosticStatus.WARN, "communication errors"
        else:
            level, message = DiagnosticStatus.OK, f"{rate:.0f} Hz"
        values = {
            "port": self._bus.port_name, "port state": self.port_state,
            "protocol": self._bus.protocol, "baud rate": self._bus.baud_rate,
            "latency timer (ms)": f"{self._bus.latency_timer_ms:g} "
                                  f"({self._bus.latency_timer_source})",
            "rate target (Hz)": f"{self._rate:g}", "rate achieved (Hz)": f"{rate:.1f}",
            "full reads (Hz)": f"{delta['full_reads'] / window:.1f}",
            "partial reads": stats["partial_reads"], "failed reads": stats["failed_reads"],
            "port losses": stats["port_losses"], "connections": stats["reconnects"],
            "deadline slips": self.slips,
            "tx bytes per cycle": f"{tx / cycles:.1f}",
            "rx bytes per cycle": f"{rx / cycles:.1f}",
            "watchdog": ("off" if self._timeout <= 0.0 else
                         "tripped: torque off" if self._tripped is not None else
                         f"armed ({self._timeout:g} s)"),
            "rejected commands": sum(self._rejections.counts.values()),
        }
        return _status(level, f"{self.get_name()}: bus", f"dynamixel bus {self._bus.port_name}",
                       message, values)

    def _servo_status(self, i: int, dxl_id: int, c: ServoCounters, before: ServoCounters,
                      window: float) -> DiagnosticStatus:
        reads = c.reads - before.reads
        timeouts, corrupt = c.timeouts - before.timeouts, c.corrupt - before.corrupt
        failed, status = c.failed - before.failed, c.status_errors - before.status_errors
        names = hardware_error_names(self._bus.protocol, c.hardware_error)
        if self.port_state != "open":
            level, message = DiagnosticStatus.ERROR, "port not open"
        elif c.hardware_error:
            level, message = DiagnosticStatus.ERROR, f"hardware error: {', '.join(names)}"
        elif reads == 0:
            level, message = DiagnosticStatus.ERROR, f"no reply ({c.last_error or 'none'})"
        elif timeouts or corrupt or failed or status:
            level = DiagnosticStatus.WARN
            message = (f"{timeouts} timeouts, {corrupt} corrupt replies, {failed} failures, "
                       f"{status} status errors in {window:.1f} s")
        else:
            level, message = DiagnosticStatus.OK, "OK"
        state = self._last_states.get(dxl_id)
        age = time.monotonic() - c.last_error_time if math.isfinite(c.last_error_time) else None
        values = {
            "id": dxl_id, "joint": self.joint_names[i], "model": self._bus.table.title,
            "reads (Hz)": f"{reads / window:.1f}", "timeouts": c.timeouts,
            "corrupt replies": c.corrupt, "other failures": c.failed,
            "status errors": c.status_errors, "communication errors": c.errors,
            "last error": c.last_error or "none",
            "last error age (s)": f"{age:.1f}" if age is not None else "",
            "hardware error bits": c.hardware_error,
            "hardware errors": ", ".join(names) or "none",
            "temperature (C)": f"{state.temperature:g}" if state else "",
            "input voltage (V)": f"{state.input_voltage:g}" if state else "",
        }
        return _status(level, f"{self.get_name()}: {self.joint_names[i]} (id {dxl_id})",
                       f"dynamixel id {dxl_id} on {self._bus.port_name}", message, values)

    # -- commands ----------------------------------------------------------------------

    def _apply(self, kind: str, command: JointCommand) -> None:
        try:
            self._check(command)
        except BamError as exc:
            self._rejections.reject(kind, str(exc))
            return
        with self._lock:
            if self._tripped is not None:  # the watchdog released the torque: restore it
                if command.torque_enables is None and self._tripped != self._enables:
                    self._enables = list(self._tripped)
                    self._torque_writes = WRITE_REPEATS
                    self._throttle.log("watchdog/restore", "info",
                                       "command received: torque back on")
                self._tripped = None
            for k, i in enumerate(command.indices):
                if command.goals is not None:
                    self._goals[i] = command.goals[k]
                    self._goal_given[i] = True
                if command.gains is not None and command.gains[k] != self._gains[i]:
                    self._gains[i] = command.gains[k]
                    self._gain_writes = WRITE_REPEATS
                if command.torque_enables is not None \
                        and command.torque_enables[k] != self._enables[i]:
                    self._enables[i] = command.torque_enables[k]
                    self._torque_writes = WRITE_REPEATS
            self._last_command = time.monotonic()

    def _check(self, command: JointCommand) -> None:
        """Every value of a command valid for its servo (BamError naming the first bad)."""
        for k, i in enumerate(command.indices):
            joint = self.joint_names[i]
            if command.goals is not None:
                goal = command.goals[k]
                lo, hi = self._bus.goal_limits(i)
                if not (math.isfinite(goal) and lo <= goal <= hi):
                    raise BamError(f"goal position {goal} of joint '{joint}' is outside the "
                                   f"servo's range [{lo:.4f}, {hi:.4f}] rad")
            if command.gains is not None:
                gain, limit = command.gains[k], self._bus.gain_limit()
                if not (math.isfinite(gain) and 0.0 <= gain <= limit):
                    raise BamError(f"gain {gain} of joint '{joint}' is outside [0, {limit:g}]")

    # -- parameters --------------------------------------------------------------------

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

    def _post_set(self, params: list[Parameter]) -> None:
        plan = self._plan(params)
        if "command_timeout" in plan:
            with self._lock:
                self._timeout = plan["command_timeout"]
                self._last_command = time.monotonic()
        if "bench" in plan:
            self._bench = plan["bench"]
            if self._info_published:
                self._publish_bench_info(self._info_voltage)



def _blank(state: ActuatorState) -> ActuatorState:
    """A fresh ActuatorState with the name and unit of ``state``."""
    return ActuatorState(name=state.name, control_unit=state.control_unit)


def _status(level: bytes, name: str, hardware_id: str, message: str,
            values: dict) -> DiagnosticStatus:
    return DiagnosticStatus(level=level, name=name, hardware_id=hardware_id, message=message,
                            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


def main(args: list[str] | None = None) -> int:
    return run_node("dynamixel", DynamixelNode, usage(
        "dynamixel", "Dynamixel servos on a serial bus (bam_drivers)", PARAMETERS,
        computed="see the description"), args)


if __name__ == "__main__":
    sys.exit(main())
