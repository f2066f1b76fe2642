"""The loop of an actuator node: a thread ticking at absolute deadlines.

In real time (``real_time_factor`` r > 0) tick k starts at the absolute
deadline start + k·(1/rate)/r of a monotonic clock, so there is no drift: the
thread sleeps until shortly before the deadline, then spin-waits. r = 0 runs
as fast as possible. A loop far behind its deadlines restarts them from now
(logged) rather than bursting to catch up. In lock-step (``steps`` given)
each tick waits for one release of that semaphore instead, whatever the wall
clock: a controller that sends one command per state it receives then runs
in step with the simulation on any machine. A thread, not an rclpy timer:
timers on an executor carry the executor's latency into every period.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from rclpy.node import Node

SPIN_WAIT = 0.0003  # s spin-waited before each deadline, for a low jitter
MAX_SLEEP = 0.05  # s, longest single sleep (stop and rate changes are seen within it)
MAX_LAG = 0.1  # s behind the deadlines after which they restart from now
STOP_TIMEOUT = 5.0  # s a stop waits for the thread: a tick is far shorter (a hung bus call)


class TickLoop:
    """A thread calling ``tick()`` at ``rate`` ticks per simulated second.

    ``count()`` is the index k of the next tick (the simulator's counter);
    deadlines are absolute, see the module docstring. ``tick`` does the work
    of one tick (step the simulator, publish); an exception stops the loop
    with a fatal log line, unless the node is shutting down.
    """

    def __init__(self, node: Node, name: str, rate: float, tick: Callable[[], None],
                 count: Callable[[], int], real_time_factor: float, priority: int = 0,
                 steps: threading.Semaphore | None = None) -> None:
        self._node = node
        self._rate = float(rate)
        self._tick = tick
        self._count = count
        self._rtf = float(real_time_factor)
        self._priority = int(priority)
        self._steps = steps
        self._reanchor = True
        self._stop = threading.Event()
        self._timing: tuple | None = None
        self.slips = 0  # times the loop fell MAX_LAG behind and restarted its deadlines
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @property
    def real_time_factor(self) -> float:
        return self._rtf

    @real_time_factor.setter
    def real_time_factor(self, value: float) -> None:
        self._rtf = float(value)
        self._reanchor = True

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> bool:
        """Stop the thread and join it; False when it is still alive after STOP_TIMEOUT s.

        No more ticks once this returns True (called from the loop itself, the stop is
        only requested, and False returned).
        """
        self._stop.set()
        if self._thread is threading.current_thread():
            return False
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_TIMEOUT)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        """The thread is running (started and not yet ended)."""
        return self._thread.is_alive()

    def record_timing(self, ticks: int) -> None:
        """Record when each of the next ``ticks`` ticks starts (for benchmarks).

        Per tick: the wall time it starts (``time.perf_counter_ns``, after the
        wait for its deadline) and its lateness to that deadline (ns).
        """
        import numpy as np

        self._timing = (np.zeros(ticks, dtype=np.int64), np.zeros(ticks, dtype=np.int64),
                        [0, -1])

    def timing(self) -> dict:
        """The recorded ticks: first tick index, wall start ns and lateness ns."""
        if self._timing is None:
            return {"first_tick": -1, "start_ns": [], "late_ns": []}
        starts, late, (count, first) = self._timing
        return {"first_tick": first, "start_ns": starts[:count].copy(),
                "late_ns": late[:count].copy()}

    def _main(self) -> None:
        logger = self._node.get_logger()
        if self._priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._priority))
            except (OSError, AttributeError) as exc:
                logger.warning(
                    f"cannot run the loop at real-time priority {self._priority} ({exc}); "
                    "running at normal priority (grant CAP_SYS_NICE or raise 'ulimit -r')")
        try:
            self._run()
        except Exception as exc:  # reported; the node stops publishing
            if self._stop.is_set() or not self._node.context.ok():
                return  # shutting down while publishing
            logger.fatal(f"simulation loop stopped: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        perf = time.perf_counter
        sleep = time.sleep
        stop = self._stop
        tick = self._tick
        count = self._count
        anchor_wall = anchor_tick = 0.0
        wall_period = 0.0
        steps = self._steps
        while not stop.is_set():
            if steps is not None:  # lock-step: a tick per release, none ahead
                if steps.acquire(timeout=MAX_SLEEP):
                    tick()
                continue
            rtf = self._rtf
            k = count()
            late = 0.0
            if self._reanchor:
                self._reanchor = False
                anchor_wall, anchor_tick = perf(), k
                wall_period = 1.0 / (self._rate * rtf) if rtf > 0.0 else 0.0
            if rtf > 0.0:
                deadline = anchor_wall + (k - anchor_tick) * wall_period
                remaining = deadline - perf()
                if remaining > SPIN_WAIT:
                    if remaining - SPIN_WAIT > MAX_SLEEP:
                        sleep(MAX_SLEEP)
                        continue  # check stop and rate changes again
                    sleep(remaining - SPIN_WAIT)
                now = perf()
                while now < deadline:
                    now = perf()
                late = now - deadline
                if late > MAX_LAG:
                    self._slipped(late, rtf)
            if self._timing is not None:
                self._record(k, late)
            tick()

    def _slipped(self, late: float, rtf: float) -> None:
        self.slips += 1
        self._reanchor = True
        if self.slips == 1 or self.slips % 100 == 0:
            self._node.get_logger().warning(
                f"loop {late * 1e3:.0f} ms behind its deadlines (x{rtf:g} real time); "
                f"restarting them from now ({self.slips} time(s) so far)")

    def _record(self, k: int, late: float) -> None:
        starts, lateness, count = self._timing
        i = count[0]
        if i < starts.size:
            starts[i] = time.perf_counter_ns()
            lateness[i] = int(late * 1e9)
            if i == 0:
                count[1] = k
            count[0] = i + 1
