"""The eRob bus supervisor: one EtherCAT cycle per tick, CiA 402, the current law, recovery.

ROS-free: :class:`bam_drivers.nodes.erob_node.ErobNode` calls
:meth:`ErobSupervisor.cycle` from its loop thread and publishes what it
returns. A cycle exchanges the process data (one LRW), checks the working
counter, decodes each drive's inputs into SI units in the joint's frame
(q = direction·q_drive + offset), applies the command watchdog, walks each
drive through the CiA 402 state machine towards what is commanded
(operation enabled, or switched on for torque off; a fault is reset only
when a torque enable is asked after it) and, in cyclic synchronous torque
mode, computes the paper's host-side current law

    I = clip(kp·(q_d − q) − d·√kp·q̇, ±I_heat)

sent as target torque 0x6071 in per mille of the drive's rated torque (in
CSP mode the goal goes to 0x607A and the drive's own law acts).

Failures and what follows: a frame that does not come back is counted
(lost frame); a working counter below the expected one is counted and, if it
lasts, the slaves' AL states are read: an error (e.g. 0x001B, the SM
watchdog of a drive whose master fell silent) is acknowledged and OP
requested again; a slave back in PRE-OP or INIT, or no frame for
``LINK_STALE`` s (link down), closes the master and re-scans with a backoff
(:class:`bam_drivers.supervisor.Link`; re-configuration included); drive
faults (statusword bit 3, 0x603F, emergencies) are named and logged once.
A line that never came up within ``connect_timeout`` s of the start (a
wrong interface, no drive) ends the driver (:attr:`ErobSupervisor.failure`);
one lost after it worked is re-scanned for ever.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from bam_drivers.ethercat import cia402
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.cia402 import State
from bam_drivers.ethercat.master import Drive, EthercatBus, Inputs
from bam_drivers.supervisor import Command, CommandState, Link, Log, LogThrottle
from bam_sim.common.commands import CommandLimits, JointCommand, check_command
from bam_sim.common.errors import BamError

LINK_STALE = 1.0  # s without any frame back after which the link counts as lost
STATE_CHECK_AFTER = 0.02  # s of working-counter errors before the AL states are read
STATE_CHECK_PERIOD = 0.1  # s between two reads of the AL states while errors last
MAILBOX_POLL = 0.1  # s between mailbox reads while a drive shows a fault
LOG_PERIOD = 10.0  # s, at most one log line per kind of problem in this time
SHUTDOWN_WAIT = 10.0  # s the shutdown waits for a cycle (a re-scan) in progress


@dataclass(frozen=True)
class Reading:
    """One joint's inputs in SI units, in the joint's frame."""

    position: float  # rad
    velocity: float  # rad/s
    current: float  # A, measured by the drive (0x6078)
    state: State | None
    statusword: int
    error_code: int  # 0x603F
    mode: int  # 0x6061
    temperature: float  # °C
    voltage: float  # V, DC link (0x6079)


@dataclass(frozen=True)
class Cycle:
    """What one bus cycle read, the command it acted on and the currents it asked."""

    readings: tuple[Reading, ...]
    command: Command
    controls: tuple[float, ...]  # A, the current law's output (0 when not enabled)


@dataclass
class Health:
    """What the diagnostics say about one joint's drive."""

    al_status: int = 0
    al_code: int = 0
    al_errors: int = 0
    last_al_error: str = ""
    fault: str = ""  # the fault the drive shows now ("" when none)
    faults: int = 0
    last_fault: str = ""
    emergencies: int = 0
    last_emergency: str = ""


@dataclass
class JointFrame:
    """Where a joint is relative to its drive, and its current law's constants."""

    offset: float = 0.0
    direction: int = 1
    damping: float = 1.0
    current_limit: float = 12.0


@dataclass
class Counters:
    """Bus cycles and what went wrong in them."""

    lost_frames: int = 0
    wkc_errors: int = 0
    recoveries: int = 0
    cycles: int = 0
    good_cycles: int = 0


class ErobSupervisor:
    """The line of a driver, its command state and its connection, without ROS.

    ``frames`` gives each joint's offset, direction, damping d and current
    limit; ``log(level, text)`` receives every log line; ``now`` arguments
    are ``time.monotonic()`` seconds. Commands arrive from ROS callbacks
    while the loop thread cycles: the command state has a lock of its own.
    """

    def __init__(self, bus: EthercatBus, frames: list[JointFrame], *, gain: float,
                 enabled: bool, command_timeout: float, log: Log, now: float,
                 connect_timeout: float = 0.0) -> None:
        self.bus = bus
        self.frames = frames
        self.link = Link(LINK_STALE, connect_timeout=connect_timeout, started=now)
        self.failure: BamError | None = None  # why the driver must stop (set once)
        self._log = log
        self.throttle = LogThrottle(log, LOG_PERIOD)
        self._lock = threading.Lock()
        self._bus_lock = threading.Lock()  # one user of the master at a time: cycle, shutdown
        n = len(bus.joints)
        self._state = CommandState(n, enabled, gain, command_timeout, now)
        self.limits = CommandLimits.per_joint([((-1000.0, 1000.0), 1.0e4)] * n)
        self.counters = Counters()
        self.health = [Health() for _ in range(n)]
        self._controlwords = [0] * n
        self._faulted = [False] * n
        self._quick_stops = [False] * n
        self._wkc_bad_since: float | None = None
        self._next_state_check = 0.0
        self._next_mailbox_poll = 0.0
        self.last: Cycle | None = None

    # -- commands (ROS callbacks) --------------------------------------------------------

    def check(self, command: JointCommand, joint_names: tuple[str, ...]) -> None:
        check_command(command, self.limits, joint_names)

    def apply(self, command: JointCommand, now: float) -> None:
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

    def quick_stop(self) -> None:
        """Quick stop every drive (CiA 402): no torque, then switch on disabled; the torque
        stays off until a command enables it again."""
        with self._lock:
            for i in range(len(self._quick_stops)):
                self._state.enables[i] = False
                self._quick_stops[i] = True

    @property
    def connected(self) -> bool:
        return self.bus.is_open and self.link.is_open

    # -- the loop thread -------------------------------------------------------------------

    def cycle(self, now: float) -> Cycle | None:
        """One bus cycle; None when nothing valid was read (closed, lost frame, bad WKC)."""
        with self._bus_lock:
            return self._cycle(now)

    def _cycle(self, now: float) -> Cycle | None:
        bus = self.bus
        if not bus.is_open:
            if self.failure is None and self.link.attempt_due(now):
                self._connect(now)
            return None
        self.counters.cycles += 1
        exchange = bus.exchange()
        self.link.count(int(exchange.wkc >= 0), 1, now)
        if exchange.wkc < 0:
            return self._no_frame(now)
        if not exchange.ok:
            return self._bad_wkc(exchange.wkc, exchange.expected, now)
        self._wkc_bad_since = None
        self.counters.good_cycles += 1
        for health in self.health:  # a full working counter: every slave is in OP
            health.al_status, health.al_code = reg.AlState.OPERATIONAL, 0
        readings = tuple(self._reading(d) for d in bus.drives)
        self._watch_faults(readings, now)
        command = self._command(readings, now)
        controls = self._control(readings, command)
        self.last = Cycle(readings, command, controls)
        return self.last

    def shutdown(self) -> bool | None:
        """Torque off (disable operation, then SAFE-OP), read back; None if not connected."""
        if not self._bus_lock.acquire(timeout=SHUTDOWN_WAIT):
            self._log("error", f"the bus cycle did not end within {SHUTDOWN_WAIT:g} s: cannot "
                               "turn the torque off; the drives' watchdogs will")
            return False
        try:
            bus = self.bus
            if not bus.is_open:
                return None
            try:
                confirmed = bus.torque_off()
            except Exception:  # noqa: BLE001 - a broken line: nothing more to try
                confirmed = False
            bus.close()
            return confirmed
        finally:
            self._bus_lock.release()

    # -- connection --------------------------------------------------------------------------

    def _connect(self, now: float) -> None:
        bus = self.bus
        started = time.monotonic()
        self.link.attempting()
        try:
            bus.open()
        except BamError as exc:
            now += time.monotonic() - started  # a scan takes a while: it failed now
            self.failure = self.link.attempt_failed(exc, now,
                                                    f"the EtherCAT line on {bus.interface}")
            if self.failure is None:
                self.throttle.log("connect", "error", f"{exc} (retrying in "
                                  f"{self.link.wait(now):.2g} s, backing off)", now)
            return
        now += time.monotonic() - started  # a bring-up takes a while: the line answered now
        readings = [self._reading(d) for d in bus.drives]
        with self._lock:
            self._state.rewrite({i: r.position for i, r in enumerate(readings)})
        self._controlwords = [0] * len(readings)
        self._wkc_bad_since = None
        lost_for = self.link.opened(now)
        names = ", ".join(f"{d.spec.name}: slave {d.info.position} ({d.spec.model.title})"
                          for d in bus.drives)
        if lost_for is not None:
            self._log("info", f"EtherCAT line on {bus.interface} back after {lost_for:.2f} s: "
                              f"re-scanned and re-configured; resuming ({names})")
        elif self.link.stats["reconnects"] == 1:
            self._log("info", f"EtherCAT line on {bus.interface}: {len(bus.slaves)} slave(s), "
                              f"{names}; OP, expected working counter {bus.expected_wkc}")

    def _lost(self, reason: str, now: float) -> None:
        self.bus.close()
        self.link.lost(reason, now)
        self.throttle.log("link", "error", f"EtherCAT line on {self.bus.interface}: {reason}; "
                                           "re-scanning it, backing off", now)

    def _no_frame(self, now: float) -> None:
        """A frame did not come back: counted; the link is lost when none comes back."""
        self.counters.lost_frames += 1
        self.throttle.log("lost", "warning", "EtherCAT frame lost (no answer within "
                          f"{self.bus.frame_timeout_us} us; counted in /diagnostics)", now)
        if self.link.silent(now):
            self._lost(f"no frame came back for {LINK_STALE:g} s (link down?)", now)
        return None

    def _bad_wkc(self, wkc: int, expected: int, now: float) -> None:
        """A working counter below the expected one: inputs not used; AL states read."""
        self.counters.wkc_errors += 1
        self.throttle.log("wkc", "warning", f"working counter {wkc}, expected {expected} "
                                            "(counted in /diagnostics)", now)
        if self._wkc_bad_since is None:
            self._wkc_bad_since = now
        if now - self._wkc_bad_since >= STATE_CHECK_AFTER and now >= self._next_state_check:
            self._next_state_check = now + STATE_CHECK_PERIOD
            self._check_states(now)
        return None

    def _check_states(self, now: float) -> None:
        """Slaves out of OP: acknowledge and request OP, or re-scan when they lost their setup."""
        bus = self.bus
        for drive, (status, code) in zip(bus.drives, bus.read_states(), strict=True):
            health = self.health[drive.joint]
            health.al_status, health.al_code = status, code
            state = status & reg.AL_STATE_MASK
            if state == reg.AlState.OPERATIONAL and not status & reg.AL_ERROR:
                continue
            if code:
                self._al_error(drive, status, code, now)
            if state in (reg.AlState.SAFE_OP, reg.AlState.OPERATIONAL):
                bus.recover(drive, status)
                self.counters.recoveries += 1
            else:
                self._lost(f"{drive.label} is in {reg.al_state_name(status)}", now)
                return

    def _al_error(self, drive: Drive, status: int, code: int, now: float) -> None:
        health = self.health[drive.joint]
        health.al_errors += 1
        health.last_al_error = f"AL 0x{code:04X} {reg.al_status_code_name(code)}"
        self.throttle.log(f"al/{drive.joint}/{code}", "error",
                          f"{drive.label} left OP: {reg.al_state_name(status)}, "
                          f"{health.last_al_error}; acknowledging and requesting OP", now)

    # -- drives ----------------------------------------------------------------------------

    def _reading(self, drive: Drive) -> Reading:
        raw: Inputs = self.bus.inputs(drive)
        frame, model = self.frames[drive.joint], drive.spec.model
        current = dm.current_from_permille(raw.current, drive.config.rated_current_ma)
        return Reading(
            position=frame.direction * model.position(raw.position) + frame.offset,
            velocity=frame.direction * model.velocity(raw.velocity),
            current=frame.direction * current, state=cia402.decode(raw.statusword),
            statusword=raw.statusword, error_code=raw.error_code, mode=raw.mode,
            temperature=raw.temperature / 10.0, voltage=raw.dc_link_mv / 1000.0)

    def _watch_faults(self, readings: tuple[Reading, ...], now: float) -> None:
        for i, r in enumerate(readings):
            faulted = r.state in (State.FAULT, State.FAULT_REACTION_ACTIVE)
            health = self.health[i]
            if faulted and not self._faulted[i]:
                self._new_fault(i, r, now)
            elif not faulted and self._faulted[i]:
                health.fault = ""
            self._faulted[i] = faulted
        if any(self._faulted) and now >= self._next_mailbox_poll:
            self._next_mailbox_poll = now + MAILBOX_POLL
            self.bus.poll_mailboxes()
            self._emergencies(now)

    def _new_fault(self, i: int, r: Reading, now: float) -> None:
        """A drive went to fault: torque off until a torque enable asks for a reset."""
        health = self.health[i]
        health.faults += 1
        health.fault = f"0x{r.error_code:04X} {cia402.error_name(r.error_code)}"
        health.last_fault = health.fault
        with self._lock:
            self._state.enables[i] = False
        drive = self.bus.drives[i]
        self.throttle.log(f"fault/{i}/{r.error_code}", "error",
                          f"{drive.label}: drive fault {health.fault}; torque off — send a "
                          "torque enable to reset it once its cause is gone", now)

    def _emergencies(self, now: float) -> None:
        for drive in self.bus.drives:
            health = self.health[drive.joint]
            while drive.emergencies:
                emcy = drive.emergencies.popleft()
                code = int(emcy.error_code)
                health.emergencies += 1
                health.last_emergency = (f"0x{code:04X} {cia402.error_name(code)} (register "
                                         f"0x{int(emcy.error_reg):02X})")
                if code:
                    self.throttle.log(f"emcy/{drive.joint}/{code}", "warning",
                                      f"{drive.label}: emergency {health.last_emergency}", now)

    def _command(self, readings: tuple[Reading, ...], now: float) -> Command:
        with self._lock:
            state = self._state
            if state.check_watchdog(now):
                self.throttle.log("watchdog", "warning", (
                    f"no command for {state.timeout:g} s (command_timeout): torque off; the "
                    "next command on bam/commands or position_commands turns it back on"), now)
            state.follow({i: r.position for i, r in enumerate(readings)})
            return state.take()

    def _control(self, readings: tuple[Reading, ...], command: Command) -> tuple[float, ...]:
        bus, controls = self.bus, []
        for drive, r in zip(bus.drives, readings, strict=True):
            i = drive.joint
            enable = command.enables[i]
            cw = cia402.controlword_for(r.state, enable, enable and r.state is State.FAULT,
                                        self._controlwords[i])
            if self._quick_stops[i]:
                if r.state is State.OPERATION_ENABLED:
                    cw, enable = cia402.QUICK_STOP, False
                else:
                    self._quick_stops[i] = False
            self._controlwords[i] = cw
            goal = command.goals[i] if command.goals[i] is not None else r.position
            current = 0.0
            if enable and r.state is State.OPERATION_ENABLED and bus.mode == cia402.CST:
                current = self._current_law(i, command.gains[i], goal, r)
            frame, model, config = self.frames[i], drive.spec.model, drive.config
            torque = dm.torque_permille(frame.direction * current, model.motor_kt,
                                        config.rated_torque_mnm)
            target = model.counts((goal - frame.offset) * frame.direction)
            bus.set_outputs(drive, cw, torque, target)
            controls.append(current)
        if bus.mode == cia402.CSP and command.write_gains:
            self._write_gains(command.gains)
        return tuple(controls)

    def _write_gains(self, gains: tuple[float, ...]) -> None:
        """CSP: the drive's own position gain (0x2002), by SDO."""
        for drive in self.bus.drives:
            try:
                self.bus.write_gain(drive, gains[drive.joint])
            except BamError as exc:
                self.throttle.log("gain", "warning", f"{exc}", 0.0)

    def _current_law(self, i: int, kp: float, goal: float, r: Reading) -> float:
        """I = clip(kp·(q_d − q) − d·√kp·q̇, ±I_heat) (A, joint frame)."""
        frame = self.frames[i]
        current = kp * (goal - r.position) - frame.damping * math.sqrt(kp) * r.velocity
        return max(-frame.current_limit, min(frame.current_limit, current))
