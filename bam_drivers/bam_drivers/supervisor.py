"""What every hardware driver supervises, apart from ROS: commands, watchdog, link, logs.

A driver node is a thin ROS adapter over a bus supervisor (for example
:class:`bam_drivers.serial_servo.supervisor.SerialServoSupervisor`). The pieces the
supervisors share live here and know nothing of a particular bus:

* :class:`CommandState`: the commanded goals, gains and torque enables, the
  writes a change calls for, and the command watchdog of every actuator node
  (:class:`bam_sim.common.watchdog.Watchdog`, counted in milliseconds of the
  monotonic clock) that turns the torque off on stale commands and restores it
  on the next command;
* :class:`Link`: the connection state machine (open, lost, reconnecting with a
  backoff from ``RETRY_MIN`` to ``RETRY_MAX`` s), its counters and its give-up
  rule: a device that never answered since the start (a typo in the port) is
  retried for ``connect_timeout`` s only, one that vanished after it worked
  (a cable pulled) for ever;
* :class:`ConfigurationError`: a connection refused for a reason no retry
  fixes (another servo model, another supply, the port held by another process);
* :class:`LogThrottle`: at most one log line per kind of problem per period,
  so a failing bus does not flood the log.

Every method takes the present time ``now`` (s, ``time.monotonic()``) from its
caller, which keeps the logic testable without sleeping.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError
from bam_sim.common.watchdog import Watchdog

Log = Callable[[str, str], None]  # (level: "info" | "warning" | "error", text)

WRITE_REPEATS = 2  # cycles a changed gain / torque enable is written (sync writes are unacked)
# Reconnection backoff, s: the first retry comes soon (a glitch), then the wait doubles up to
# the cap, so a device that stays away costs a few attempts a second at most.
RETRY_MIN = 0.1
RETRY_MAX = 1.0  # also bounds how late a returning device is seen


class ConfigurationError(BamError):
    """The device answered but is not the one configured (or the port is someone else's):
    a configuration error, refused without a retry while the link never worked."""


def _ms(now: float) -> int:
    return int(round(now * 1000.0))


class LogThrottle:
    """At most one log line per kind every ``period`` s; counts the ones held back."""

    def __init__(self, log: Log, period: float = 10.0) -> None:
        self._log = log
        self._period = period
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def log(self, kind: str, level: str, message: str, now: float) -> bool:
        if now - self._last.get(kind, -math.inf) < self._period:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        held = self._held.pop(kind, 0)
        self._last[kind] = now
        self._log(level, message + (f" ({held} more since the last report)" if held else ""))
        return True


@dataclass(frozen=True)
class Command:
    """The command of one bus cycle: per joint goal (None: unknown), enable and gain,
    and whether the gains and the torque enables must be written this cycle."""

    goals: tuple[float | None, ...]
    enables: tuple[bool, ...]
    gains: tuple[float, ...]
    write_gains: bool
    write_torque: bool


class CommandState:
    """Goals, gains and torque enables of ``n`` joints under the command watchdog.

    Not thread-safe: the driver node holds its lock around every call.
    """

    def __init__(self, n: int, enabled: bool, gain: float, timeout: float, now: float) -> None:
        self.goals: list[float | None] = [None] * n
        self._goal_given = [False] * n  # else the goal follows the position (torque off)
        self.enables = [bool(enabled)] * n
        self.gains = [float(gain)] * n
        self._gain_writes = self._torque_writes = 0
        self.timeout = 0.0
        self.watchdog = Watchdog(0)
        self._before_trip: list[bool] = []
        self.set_timeout(timeout, now)

    @property
    def tripped(self) -> bool:
        return self.watchdog.tripped

    def set_timeout(self, seconds: float, now: float) -> None:
        """Watch for ``seconds`` without a command from ``now`` on (0: no watchdog)."""
        self.timeout = float(seconds)
        self.watchdog.reset(_ms(seconds), _ms(now))

    def apply(self, command: JointCommand, now: float) -> bool:
        """Take a validated command; True when it turned back on a torque the watchdog
        had turned off."""
        restored = False
        if self.watchdog.tripped and command.torque_enables is None \
                and self._before_trip != self.enables:
            self.enables = list(self._before_trip)
            self._torque_writes = WRITE_REPEATS
            restored = True
        for k, i in enumerate(command.indices):
            if command.goals is not None:
                self.goals[i] = command.goals[k]
                self._goal_given[i] = True
            if command.gains is not None and command.gains[k] != self.gains[i]:
                self.gains[i] = command.gains[k]
                self._gain_writes = WRITE_REPEATS
            if command.torque_enables is not None \
                    and command.torque_enables[k] != self.enables[i]:
                self.enables[i] = command.torque_enables[k]
                self._torque_writes = WRITE_REPEATS
        self.watchdog.feed(_ms(now))
        return restored

    def check_watchdog(self, now: float) -> bool:
        """Trip the watchdog when due; True when it turned a torque off just now."""
        due = self.watchdog.due()
        if due is None or _ms(now) < due:
            return False
        self.watchdog.tripped = True
        self._before_trip = list(self.enables)
        if not any(self.enables):
            return False
        self.enables = [False] * len(self.enables)
        self._torque_writes = WRITE_REPEATS
        return True

    def follow(self, positions: dict[int, float]) -> None:
        """Goals of released joints follow their position (joint index -> rad), so that
        enabling the torque holds where the joint is."""
        for i, position in positions.items():
            if not self._goal_given[i] and not self.enables[i]:
                self.goals[i] = position

    def rewrite(self, positions: dict[int, float]) -> None:
        """After a (re)connection: unknown goals from ``positions``, every register again."""
        for i, position in positions.items():
            if self.goals[i] is None:
                self.goals[i] = position
        self._gain_writes = self._torque_writes = WRITE_REPEATS

    def take(self) -> Command:
        """This cycle's command; counts the pending writes down."""
        command = Command(tuple(self.goals), tuple(self.enables), tuple(self.gains),
                          self._gain_writes > 0, self._torque_writes > 0)
        self._gain_writes = max(self._gain_writes - 1, 0)
        self._torque_writes = max(self._torque_writes - 1, 0)
        return command

    def describe_watchdog(self) -> str:
        if self.timeout <= 0.0:
            return "off"
        return "tripped: torque off" if self.tripped else f"armed ({self.timeout:g} s)"


def never_connected(what: str, reason: str, timeout: float) -> BamError:
    """The error a driver exits with when ``what`` (e.g. "servo ids [1] on /dev/ttyUSB0")
    never answered within its ``connect_timeout``."""
    # The reason names its own fix (check the port, the id...); the timeout adds its own.
    return BamError(f"no connection to {what} within connect_timeout {timeout:g} s: {reason}; "
                    "or set connect_timeout:=0.0 to wait for the device")


class Link:
    """Connection state of a bus: ``state`` is "opening", "open" or "reconnecting: why".

    Attempts back off: ``RETRY_MIN`` s after a loss or the first failure, doubling
    up to ``RETRY_MAX`` s, back to the minimum once connected. ``connect_timeout``
    (s, from ``started``; 0 = for ever) bounds the attempts while the link never
    opened: :meth:`gave_up` then says so. ``stats`` counts the cycles and their
    outcomes, the losses, connections and attempts.
    """

    def __init__(self, stale: float, *, connect_timeout: float = 0.0, started: float = 0.0,
                 retry_min: float = RETRY_MIN, retry_max: float = RETRY_MAX) -> None:
        self.stale = stale
        self.connect_timeout = float(connect_timeout)
        self.retry_min, self.retry_max = float(retry_min), float(retry_max)
        self.retry = self.retry_min  # the wait after the next failure
        self.state = "opening"
        self.connected_once = False
        self._started = float(started)
        self._next_attempt = -math.inf
        self._last_answer = 0.0
        self._lost_at: float | None = None
        self.stats = {"cycles": 0, "full_reads": 0, "partial_reads": 0, "failed_reads": 0,
                      "port_losses": 0, "reconnects": 0, "attempts": 0}

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    @property
    def deadline(self) -> float:
        """When attempts stop while the link never opened (inf: never)."""
        if self.connected_once or self.connect_timeout <= 0.0:
            return math.inf
        return self._started + self.connect_timeout

    def attempt_due(self, now: float) -> bool:
        return now >= self._next_attempt

    def wait(self, now: float) -> float:
        """Seconds until the next attempt is due (0: now)."""
        return max(self._next_attempt - now, 0.0)

    def attempting(self) -> None:
        """An attempt to connect starts (counted)."""
        self.stats["attempts"] += 1

    def failed(self, reason: str, now: float) -> None:
        """An attempt to connect failed: the next one after the backoff, and never past
        the deadline, so the last attempt comes just before giving up."""
        self.state = f"reconnecting: {reason}"
        self._next_attempt = min(now + self.retry, max(self.deadline, now))
        self.retry = min(self.retry * 2.0, self.retry_max)

    def attempt_failed(self, exc: BamError, now: float, what: str) -> BamError | None:
        """A failed attempt to connect to ``what``: the error that ends the driver (a
        configuration error, or the connect_timeout passed, before a first connection),
        else None and the next attempt after the backoff."""
        self.failed(str(exc), now)
        if not self.connected_once and isinstance(exc, ConfigurationError):
            return exc
        if self.gave_up(now):
            return never_connected(what, str(exc), self.connect_timeout)
        return None

    def gave_up(self, now: float) -> bool:
        """True once the link never opened and its connect_timeout has passed."""
        return not self.is_open and now >= self.deadline

    def opened(self, now: float) -> float | None:
        """Connected; returns how long the link had been lost (None on the first)."""
        self.state = "open"
        self._last_answer = now
        self.retry = self.retry_min
        self.stats["reconnects"] += 1
        self.connected_once = True
        lost, self._lost_at = self._lost_at, None
        return None if lost is None else now - lost

    def lost(self, reason: str, now: float) -> None:
        self.state = f"reconnecting: {reason}"
        self.stats["port_losses"] += 1
        self._lost_at = now
        self.retry = self.retry_min
        self._next_attempt = now + self.retry

    def count(self, answered: int, expected: int, now: float) -> None:
        """One cycle's read: ``answered`` of ``expected`` devices replied."""
        stats = self.stats
        stats["cycles"] += 1
        key = ("full_reads" if answered == expected else
               "partial_reads" if answered else "failed_reads")
        stats[key] += 1
        if answered:
            self._last_answer = now

    def silent(self, now: float) -> bool:
        """No device answered for ``stale`` s: time to reopen the link."""
        return now - self._last_answer > self.stale
