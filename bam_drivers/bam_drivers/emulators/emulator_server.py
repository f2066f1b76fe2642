"""The emulator server: what every hardware emulator process does alike, whatever its bus.

An emulator (Dynamixel servos on a pseudo-terminal, eRob drives on an
EtherCAT veth pair) is an :class:`EmulatorServer` subclass that opens its
device, serves it in a bus thread and advances its physics in a clock thread;
this base adds the rest, so that both behave alike for the client
(:mod:`bam_drivers.emulators.emulator_process`):

- the control socket: a Unix stream socket, one JSON object per line in, one
  per line out (``{"ok": true, "result": ...}`` or ``{"ok": false, "error":
  ...}``, the error on one line); command ``NAME`` runs the method
  ``_cmd_NAME``, and ``stop`` is every emulator's;
- the life cycle: :meth:`~EmulatorServer.start`, :meth:`~EmulatorServer.wait`
  (until stopped, a thread dies, or the parent process named by
  ``--exit-with-parent`` dies: no orphan emulators after a crashed test),
  :meth:`~EmulatorServer.close` (socket, device and temporary directory removed);
- the clock loop at a fixed rate against the monotonic clock, skipping time
  rather than racing after a stall; the bus thread runs the steps due before it
  answers the master (:meth:`~EmulatorServer._catch_up`), so a read sees the
  device as it is when it comes, however late a loaded machine wakes the clock
  thread (which left reads up to ``MAX_CATCH_UP`` behind, and an identification
  through the driver biased);
- :func:`serve`, the command line's exit behaviour: ``READY <words>`` on stdout
  once serving, exit code 0 on SIGTERM, SIGINT or ``stop``, 2 and one line
  ``<program>: error: ...`` on stderr when the configuration or the device is
  refused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from bam_sim.common.errors import BamError, one_line

MAX_CATCH_UP = 0.1  # s of physics the clock loop replays after a stall; beyond, time is skipped
REFUSED = 2  # exit code: the configuration or the device was refused
# Errors a control command may raise and the client is told about; any other is a bug that
# ends the conversation (and shows in the emulator's stderr).
COMMAND_ERRORS = (BamError, ValueError, KeyError, TypeError, OSError)


@dataclass
class ServerConfig:
    """What every emulator's command line sets for its server; a subclass adds its bus's."""

    control: str | None = None  # control socket path (default: in a temporary directory)
    seed: int = 0  # of the one random generator every fault draw comes from
    exit_with_parent: int | None = None  # stop when this process (0: the parent) dies
    priority: int = 0  # SCHED_FIFO priority of the process, every thread (0: normal)


Config = TypeVar("Config", bound=ServerConfig)


def clear_stale_socket(path: str) -> None:
    """``path`` is free for a control socket: nothing is there, or the socket of an
    emulator that died without removing it (nobody listens), which is removed. Anything
    else is refused and left as it is: a file there is someone's (the emulator used to
    delete it), a live socket another emulator's."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise BamError(f"--control {path} exists and is not a socket; it is left as it is: "
                       "choose another --control path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except ConnectionRefusedError:  # nobody listens: a dead emulator's
            os.unlink(path)
            return
    raise BamError(f"--control {path} is the socket of a running emulator; stop it or "
                   "choose another --control path")


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of ``path`` itself, None when nothing is there."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class StepClock:
    """Steps at a fixed rate against the monotonic clock, skipping time rather than
    racing after a stall of more than ``MAX_CATCH_UP``; run by the emulator's lock holder."""

    def __init__(self, rate: float, step: Callable[[], None], stats: dict[str, float],
                 ticks: str, skipped: str) -> None:
        self.dt = 1.0 / rate
        self.deadline = time.monotonic()
        self._step, self._stats, self._ticks, self._skipped = step, stats, ticks, skipped

    def run_due(self) -> float:
        """Run every step due by now; the deadline of the next one."""
        now = time.monotonic()
        if now - self.deadline > MAX_CATCH_UP:  # stalled: skip time rather than race
            lost = (now - self.deadline) // self.dt * self.dt
            self.deadline += lost
            self._stats[self._skipped] += lost
        while self.deadline <= now:
            self._step()
            self._stats[self._ticks] += 1
            self.deadline += self.dt
        return self.deadline


class EmulatorServer:
    """The control socket, threads and life cycle around one emulated device.

    A subclass names itself (:attr:`PROGRAM`), lists its control commands
    (:attr:`COMMANDS`, each a ``_cmd_<name>(request)`` method) and implements
    :meth:`_open_device`, :meth:`_close_device`, :meth:`_workers` and
    :meth:`ready_words`. :attr:`_lock` guards the emulated device between threads.
    """

    PROGRAM: ClassVar[str] = "emulator"
    COMMANDS: ClassVar[tuple[str, ...]] = ("stop",)
    # The bus thread answers within microseconds to milliseconds: it must not wait the
    # interpreter's default 5 ms for the GIL while the clock thread runs.
    SWITCH_INTERVAL: ClassVar[float] = 5e-4
    # Errors of start() reported on one line (with refusal's exit code) rather than raised.
    START_ERRORS: ClassVar[tuple[type[Exception], ...]] = (BamError, OSError)
    stats: dict[str, float]  # what the ``stats`` command reports; the subclass makes it

    def __init__(self, config: ServerConfig, temp_dir: str | None) -> None:
        """The control socket defaults to ``control.sock`` in ``temp_dir`` (which
        :meth:`close` removes); fault draws come from :attr:`_rng`."""
        # The parent now, before READY is printed: a parent that exits right after
        # reading READY must still be seen to change.
        self._parent = config.exit_with_parent or os.getppid()
        self._exit_with_parent = config.exit_with_parent is not None
        self._rng = random.Random(config.seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()  # select() in the threads returns on stop
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self._temp_dir = temp_dir
        self._clock: StepClock | None = None  # the clock thread's, once it runs
        self._priority = config.priority
        self.control_path = config.control or os.path.join(temp_dir, "control.sock")
        self._control_made: tuple[int, int] | None = None  # (device, inode) of our socket

    # -- what a subclass provides ------------------------------------------------------

    def _open_device(self) -> None:
        """Make the device the master opens (BamError or OSError when refused)."""
        raise NotImplementedError

    def _close_device(self) -> None:
        """Remove the device (called once the threads stopped, also after a failed start)."""
        raise NotImplementedError

    def _workers(self) -> Sequence[tuple[Callable[[], None], str]]:
        """The device's threads besides the control thread: (target, name) pairs."""
        raise NotImplementedError

    def ready_words(self) -> list[str]:
        """What the READY line tells the client, after ``READY``."""
        raise NotImplementedError

    def refusal(self, exc: Exception) -> tuple[int, str]:
        """Exit code and line (after ``<program>: ``) for one of :attr:`START_ERRORS`."""
        return REFUSED, f"error: {one_line(exc)}"

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Open the device and the control socket, then start every thread (at the
        configured SCHED_FIFO priority)."""
        clear_stale_socket(self.control_path)
        self._realtime()
        self._open_device()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.control_path)
        self._control_made = _identity(self.control_path)
        self._listener.listen(8)
        for target, name in (*self._workers(), (self._serve_control, "control")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _realtime(self) -> None:
        """This thread, and the threads it starts, at SCHED_FIFO ``priority`` (0: left
        alone; stays normal, ``stats["priority_refused"]``, where the system refuses it).
        Every thread: one left at normal priority would hold the interpreter's lock
        while a busy host keeps it waiting, and stall the real-time ones behind it."""
        if self._priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._priority))
            except (OSError, AttributeError):
                self.stats["priority_refused"] = True

    def request_stop(self) -> None:
        """Ask every thread to end (safe from a signal handler or a control command)."""
        self._stop.set()
        self._wake()

    def wait(self) -> None:
        """Return when stopped or orphaned; RuntimeError when a thread died."""
        while not self._stop.wait(0.2):
            if not all(t.is_alive() for t in self._threads):
                raise RuntimeError("an emulator thread died")
            if self._exit_with_parent and os.getppid() != self._parent:
                return  # orphaned: the test or node that started us is gone

    def close(self) -> None:
        """Stop the threads and remove the socket, the device and the temporary directory."""
        self.request_stop()
        for thread in self._threads:
            thread.join(timeout=2.0)
        if self._listener is not None:
            self._listener.close()
        if self._control_made is not None and _identity(self.control_path) == self._control_made:
            os.unlink(self.control_path)  # only the socket this made, never what is there now
        self._close_device()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    def _wake(self) -> None:
        """Make a thread waiting in select() on the wake pipe look again."""
        try:
            os.write(self._wake_w, b"!")
        except OSError:  # the pipe is full (a wake is pending anyway) or already closed
            pass

    # -- the clock thread ----------------------------------------------------------------

    def _run_clock(self, rate: float, step: Callable[[], None], ticks: str,
                   skipped: str) -> None:
        """Call ``step`` under the lock ``rate`` times a second until stopped, counting
        the steps in ``stats[ticks]`` and the seconds skipped after stalls in
        ``stats[skipped]``. The bus thread runs the steps due first whenever the master
        asks something (:meth:`_catch_up`)."""
        clock = self._clock = StepClock(rate, step, self.stats, ticks, skipped)
        while not self._stop.is_set():
            with self._lock:
                deadline = clock.run_due()
            wait = deadline - time.monotonic()
            if wait > 0.0:
                time.sleep(wait)

    def _catch_up(self) -> None:
        """Run the clock's steps due by now (the caller holds the lock): the master reads
        the device as it is when it asks, and its writes act from then on, however late
        a loaded machine wakes the clock thread."""
        if self._clock is not None:
            self._clock.run_due()

    # -- the control thread --------------------------------------------------------------

    def _serve_control(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._listener, self._wake_r], [], [], 0.2)
            if self._listener in ready:
                connection, _ = self._listener.accept()
                threading.Thread(target=self._converse, args=(connection,), daemon=True).start()

    def _converse(self, connection: socket.socket) -> None:
        """Answer the commands of one connection, one line each, until it closes."""
        with connection, connection.makefile("rwb") as stream:
            for line in stream:
                try:
                    reply = {"ok": True, "result": self.command(json.loads(line))}
                except COMMAND_ERRORS as exc:
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {one_line(exc)}"}
                stream.write(json.dumps(reply).encode() + b"\n")
                stream.flush()

    def command(self, request: dict) -> object:
        """Execute one control command (see the emulator's module docstring)."""
        name = request.get("cmd")
        if name not in self.COMMANDS:
            *others, last = self.COMMANDS
            raise BamError(f"unknown command {name!r}; use {', '.join(others)} or {last}")
        return getattr(self, f"_cmd_{name}")(request)

    def _cmd_stop(self, request: dict) -> None:
        self.request_stop()


def add_priority(parser: argparse.ArgumentParser, what: str) -> None:
    """``--priority N``: every thread of the emulator at SCHED_FIFO priority N."""
    parser.add_argument("--priority", type=int, default=0,
                        help="SCHED_FIFO priority of the emulator's threads, 1..99 (0 = normal "
                        f"scheduling): {what} answer within microseconds, a busy host must "
                        "not make the emulator late")


def add_exit_with_parent(parser: argparse.ArgumentParser) -> None:
    """``--exit-with-parent [PID]``: the client passes its PID, so that an emulator never
    outlives the test or node that started it (see :meth:`EmulatorServer.wait`)."""
    parser.add_argument("--exit-with-parent", nargs="?", type=int, const=0, default=None,
                        metavar="PID", help="stop when the parent process (PID, default the "
                        "parent at start) dies (set by the client, EmulatorChild)")


def numbered_code(what: str, form: str, example: str) -> Callable[[str], tuple[int, int]]:
    """An argparse type for ``NUMBER:CODE`` (a device number, then a code in any base:
    ``1:0x20``); a malformed one is refused naming ``what``, ``form`` and ``example``."""
    def parse(text: str) -> tuple[int, int]:
        try:
            number, code = text.split(":")
            return int(number), int(code, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{what} {text!r} must be {form}, e.g. {example}") from None
    return parse


def serve(server_class: type[EmulatorServer], parse_args: Callable[[Sequence[str] | None], Config],
          argv: Sequence[str] | None = None) -> int:
    """An emulator's main: build, start, print READY, serve until stopped; the exit code.

    A refused configuration or device gives :data:`REFUSED` (or the server's own
    code, see :meth:`EmulatorServer.refusal`) and one line on stderr.
    """
    program = server_class.PROGRAM
    sys.setswitchinterval(server_class.SWITCH_INTERVAL)
    try:
        server = server_class(parse_args(argv))
    except BamError as exc:
        print(f"{program}: error: {one_line(exc)}", file=sys.stderr)
        return REFUSED
    try:
        server.start()
    except server.START_ERRORS as exc:
        server.close()
        code, line = server.refusal(exc)
        print(f"{program}: {line}", file=sys.stderr)
        return code
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.request_stop())
    try:
        print("READY " + " ".join(server.ready_words()), flush=True)
        server.wait()
    finally:
        server.close()
    return 0
