"""The command watchdog shared by simulation nodes and drivers: torque off on stale commands.

Counted in the caller's clock units (simulated ticks for a simulation, bus
cycles or monotonic milliseconds for a driver), so the same class serves both.
"""

from __future__ import annotations


class Watchdog:
    """Torque off after ``timeout`` ticks without a command (0: never)."""

    def __init__(self, timeout_ticks: int) -> None:
        self.timeout = int(timeout_ticks)
        self.last = 0  # tick of the last accepted command
        self.tripped = False

    def feed(self, tick: int) -> None:
        self.last = tick
        self.tripped = False

    def reset(self, timeout_ticks: int, tick: int) -> None:
        self.timeout = int(timeout_ticks)
        self.feed(tick)

    def due(self) -> int | None:
        """The tick at which it trips, None when off or already tripped."""
        if not self.timeout or self.tripped:
            return None
        return self.last + self.timeout
