"""The serial bus supervisor: one bus cycle per tick, reconnection, fail-safe commands.

It supervises a Dynamixel bus or a Feetech bus (the same bus class, bound to
another SDK).

ROS-free: :class:`bam_drivers.nodes.serial_servo_node.SerialServoNode` calls
:meth:`SerialServoSupervisor.cycle` from its loop thread and publishes what it
returns. A cycle reads the state of every servo, applies the command watchdog,
writes the goals (gains and torque enables only when they change) and returns
the servos read, so a servo that did not answer is never published stale. A
port that fails, or on which no servo answered for ``STALE_REOPEN`` s, is
closed and reopened with a backoff (:class:`bam_drivers.supervisor.Link`);
on reconnection the gains and torque enables are written again.

Every connection checks what answers before anything is written: the model
number of every servo (the table's), and its input voltage against the
supply the bench's actuator is identified at (an ``sts3215_12v`` on a 7.4 V
bus is refused). A mismatch, or a port another process holds, is a
:class:`ConfigurationError`: before the first connection it ends the driver
(:attr:`SerialServoSupervisor.failure`), as does ``connect_timeout`` s without
a first connection; the torque is never enabled.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from bam_drivers.serial_servo.bus import CycleResult, SerialServoBus
from bam_drivers.supervisor import (
    Command,
    CommandState,
    ConfigurationError,
    Link,
    Log,
    LogThrottle,
)
from bam_sim.common.commands import CommandLimits, JointCommand, check_command
from bam_sim.common.errors import BamError

STALE_REOPEN = 0.5  # s without any servo answering after which the port is reopened
LOG_PERIOD = 10.0  # s, at most one log line per kind of problem in this time
SHUTDOWN_WAIT = 10.0  # s the shutdown waits for a cycle (a reconnection) in progress


@dataclass(frozen=True)
class SupplyCheck:
    """Which of an actuator's supply variants the servos' input voltage says the bench is.

    ``variants`` maps each actuator that is the same servo at another supply (the
    STS3215 at 7.4 V and at 12 V: one model number) to its nominal supply, V; the
    configured ``actuator`` must be the one nearest (in ratio) to what every servo
    measures. Empty: nothing to tell apart, no check.
    """

    actuator: str = ""
    variants: Mapping[str, float] = field(default_factory=dict)

    def check(self, measured: Mapping[int, float], port: str) -> None:
        """ConfigurationError naming the servo, the voltage and the actuator to set."""
        if len(self.variants) < 2:
            return
        for dxl_id, volts in measured.items():
            if not (math.isfinite(volts) and volts > 0.0):
                continue  # no reading to judge by
            nearest = min(self.variants, key=lambda a: abs(math.log(volts / self.variants[a])))
            if nearest != self.actuator:
                raise ConfigurationError(
                    f"servo id {dxl_id} on {port} measures {volts:g} V, but actuator "
                    f"{self.actuator} runs at {self.variants[self.actuator]:g} V; set "
                    f"actuator:={nearest} ({self.variants[nearest]:g} V), or check the "
                    "supply")


@dataclass(frozen=True)
class Cycle:
    """What one bus cycle read and the command it wrote."""

    result: CycleResult
    command: Command


class SerialServoSupervisor:
    """The bus of a driver, its command state and its connection, without ROS.

    ``log(level, text)`` receives every log line; ``now`` arguments are
    ``time.monotonic()`` seconds. The command state is guarded by a lock of
    its own: commands arrive from ROS callbacks while the loop thread cycles.
    """

    def __init__(self, bus: SerialServoBus, *, gain: float, enabled: bool,
                 command_timeout: float, log: Log, now: float, connect_timeout: float = 0.0,
                 supply: SupplyCheck | None = None, current_limit: float | None = None) -> None:
        self.bus = bus
        self.current_limit = current_limit  # A: current-based position control (None: not)
        self.ids = bus.ids
        self.link = Link(STALE_REOPEN, connect_timeout=connect_timeout, started=now)
        self.supply = supply or SupplyCheck()
        self.failure: BamError | None = None  # why the driver must stop (set once)
        self._log = log
        self.throttle = LogThrottle(log, LOG_PERIOD)
        self._lock = threading.Lock()
        self._bus_lock = threading.Lock()  # one user of the port at a time: cycle, shutdown
        self._shut_down = False  # the stop's torque off was done (a node stops twice)
        self._state = CommandState(len(self.ids), enabled, gain, command_timeout, now)
        # What the registers hold: the goal range shifted by each joint's offset.
        self.limits = CommandLimits.per_joint([(bus.goal_limits(i), bus.gain_limit())
                                               for i in range(len(self.ids))])

    # -- commands (ROS callbacks) -------------------------------------------------------

    def check(self, command: JointCommand, joint_names: tuple[str, ...]) -> None:
        """Every value of ``command`` valid for its servo (BamError naming the first bad)."""
        check_command(command, self.limits, joint_names)

    def apply(self, command: JointCommand, now: float) -> None:
        """Take a checked command; it also feeds the watchdog."""
        with self._lock:
            restored = self._state.apply(command, now)
        if restored:
            self.throttle.log("watchdog/restore", "info", "command received: torque back on",
                              now)

    def set_command_timeout(self, seconds: float, now: float) -> None:
        with self._lock:
            self._state.set_timeout(seconds, now)

    @property
    def watchdog_tripped(self) -> bool:
        return self._state.tripped

    def describe_watchdog(self) -> str:
        return self._state.describe_watchdog()

    # -- the loop thread ------------------------------------------------------------------

    def cycle(self, now: float) -> Cycle | None:
        """One bus cycle; None when the port is closed (reopened when due) or lost, or
        after a :attr:`failure` (no attempt then)."""
        with self._bus_lock:
            return self._cycle(now)

    def _cycle(self, now: float) -> Cycle | None:
        bus = self.bus
        if self._shut_down:
            return None  # the torque is off and the port closed: nothing reopens it
        if not bus.is_open:
            if self.failure is None and self.link.attempt_due(now):
                self._connect(now)
            return None
        result = bus.read_state()
        if result.port_error:
            self._lost(result.port_error, now)
            return None
        self._account(result, now)
        # Commands and the watchdog act even in a cycle whose read failed.
        command = self._command(result, now)
        self._write(command)
        if not bus.is_open:
            self._lost(bus.port_error, now)
            return None
        if not result.states and self.link.silent(now):
            bus.close()
            self._lost(f"no servo answered for {STALE_REOPEN:g} s", now)
            return None
        return Cycle(result, command)

    def shutdown(self) -> bool | None:
        """Torque off on every servo, read back, and close; None when never connected or
        already shut down.

        A port closed after a lost link is opened once more for it: a servo keeps its
        torque on with nobody commanding it, and a bus that went silent for a while (a
        stalled machine, a servo busy) may answer again. False when it cannot. A cycle
        still in progress (a loop thread that did not stop in time) is waited for first:
        two users of one port read each other's replies.
        """
        if self._shut_down:
            return None
        self._shut_down = True
        if not self._bus_lock.acquire(timeout=SHUTDOWN_WAIT):
            self._log("error", f"the bus cycle did not end within {SHUTDOWN_WAIT:g} s: cannot "
                               "turn the torque off")
            return False
        try:
            return self._torque_off()
        finally:
            self._bus_lock.release()

    def _torque_off(self) -> bool | None:
        bus = self.bus
        try:
            if not bus.is_open:
                if not self.link.connected_once:
                    return None
                try:
                    bus.open()
                except BamError:
                    return False
            return bus.torque_off()
        finally:
            bus.release()

    def _connect(self, now: float) -> None:
        bus = self.bus
        self.link.attempting()
        try:
            bus.open()
            bus.check_models()
            self.supply.check(bus.input_voltages(), bus.port_name)
            for note in bus.ensure_position_mode(self.current_limit):
                self._log("warning", note)
            if not self.link.connected_once:
                self._first_connection()
            result = bus.read_state()
            if not result.states:
                raise BamError(f"no state read from the servos ({result.failures})")
        except BamError as exc:
            bus.close()
            self._failed(exc, now)
            return
        with self._lock:
            self._state.rewrite({i: result.states[d].position
                                 for i, d in enumerate(self.ids) if d in result.states})
        lost_for = self.link.opened(now)
        if lost_for is not None:
            self._log("info", f"port {bus.port_name} back after {lost_for:.2f} s; resuming")
        elif self.link.stats["reconnects"] == 1:
            self._log("info", f"connected to ids {list(self.ids)} on {bus.port_name} "
                              f"(latency timer {bus.latency_timer_ms:g} ms: "
                              f"{bus.latency_timer_source})")

    def _failed(self, exc: BamError, now: float) -> None:
        link = self.link
        self.failure = link.attempt_failed(
            exc, now, f"servo ids {list(self.ids)} on {self.bus.port_name}")
        if self.failure is None:
            self.throttle.log("connect", "error",
                              f"{exc} (retrying in {link.wait(now):.2g} s, backing off)", now)

    def _first_connection(self) -> None:
        bus = self.bus
        slow = {i: d for i, d in bus.return_delays().items() if d > 0.0}
        if slow:
            self._log("warning", "return delay time of "
                      + ", ".join(f"id {i}: {d * 1e6:.0f} us" for i, d in slow.items())
                      + " adds to every cycle; set the Return Delay Time register to 0 for "
                      "fast cycles")

    def _lost(self, reason: str, now: float) -> None:
        self.link.lost(reason, now)
        self.throttle.log("port", "error", f"{self.bus.KIND} port {self.bus.port_name}: "
                                           f"{reason}; reopening it, backing off", now)

    def _account(self, result: CycleResult, now: float) -> None:
        self.link.count(len(result.states), len(self.ids), now)
        for dxl_id, kind in result.failures.items():
            self.throttle.log(f"comm/{dxl_id}/{kind}", "warning",
                              f"servo id {dxl_id}: {kind} (counted in /diagnostics)", now)
        for dxl_id, state in result.states.items():
            if state.hardware_error:
                names = ", ".join(self.bus.hardware_error_names(state.hardware_error))
                self.throttle.log(f"hardware/{dxl_id}", "error",
                                  f"servo id {dxl_id} reports a hardware error: {names}", now)

    def _command(self, result: CycleResult, now: float) -> Command:
        """This cycle's command, with the watchdog applied."""
        with self._lock:
            state = self._state
            if state.check_watchdog(now):
                self.throttle.log("watchdog", "warning", (
                    f"no command for {state.timeout:g} s (command_timeout): torque off; the "
                    "next command on bam/commands or position_commands turns it back on"), now)
            state.follow({i: result.states[d].position
                          for i, d in enumerate(self.ids) if d in result.states})
            return state.take()

    def _write(self, command: Command) -> None:
        bus, ids = self.bus, self.ids
        pairs = list(zip(ids, command.enables, strict=True))
        if command.write_torque:  # release first, enable last: never a goal jump
            bus.write_torque({i: False for i, e in pairs if not e})
        bus.write_goals({i: g for i, g, e in zip(ids, command.goals, command.enables,
                                                 strict=True) if e and g is not None})
        if command.write_gains:
            bus.write_gains(dict(zip(ids, command.gains, strict=True)))
        if command.write_torque:
            bus.write_torque({i: True for i, e in pairs if e})
