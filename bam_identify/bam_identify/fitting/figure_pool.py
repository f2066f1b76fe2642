"""Worker processes that draw a report's figures, warmed up while the fit runs.

Drawing the report inline costs matplotlib's import and then each figure in
turn (about two seconds for six models). A fit that lasts long enough
(:data:`WARM_AFTER`) starts these workers in the background: they import
matplotlib and the simulator while the models are fitted, so at the end the
figures are drawn at once, in parallel.

A worker is ``python -m bam_identify.fitting.figure_pool``, fed pickled
(function, arguments) calls on its stdin and answering on its stdout, rather
than a multiprocessing pool: a spawned multiprocessing child re-runs the
parent's main script, which would fit again when that script is a user's own
unguarded one, and a forked one would copy the fit's running numba threads.
A worker that fails or is gone is not an error: the figures are then drawn
inline.

The parent owns the stop. Ctrl-C at a terminal goes to the whole foreground
process group, so the workers run in a session of their own and ignore
SIGINT and SIGTERM: the parent, which keeps what its fit found and writes its
report whole, ends them by closing their stdin (then kills one that does not
end). A worker whose parent vanished mid-call reads a cut message or meets a
closed pipe: it ends quietly.

A stop requested while the figures are drawn (``stopped()`` true) abandons
them: drawing takes seconds on a loaded machine, and a stopped command must
exit within a few. The parent never blocks on a worker for long: it sends the
calls from a thread and waits for the answers with a timeout, checking
``stopped()`` meanwhile; then it kills the workers instead of waiting for
them (:class:`FiguresAbandoned`).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

WARM_AFTER = 1.0  # s of fitting after which the workers are worth their start
WORKERS = 2
CHECK_SECONDS = 0.05  # a stop is noticed this soon while the workers draw or end
CLOSE_SECONDS = 5.0  # a worker that has not ended this long after its stdin closed is killed


class FiguresAbandoned(Exception):  # noqa: N818 - an outcome, not an error
    """A stop was requested while the figures were drawn: none is kept."""


def _never() -> bool:
    return False


def _frame(value) -> bytes:
    data = pickle.dumps(value)
    return struct.pack("<Q", len(data)) + data


def _send(stream: BinaryIO, value) -> None:
    stream.write(_frame(value))
    stream.flush()


def _receive(stream: BinaryIO):
    """The next value; EOFError when the other end is gone, even half way through one."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the other end of the figure pipe is gone")
    (size,) = struct.unpack("<Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other end of the figure pipe is gone mid-message")
    return pickle.loads(data)


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back in this thread, and so in the workers it starts: a
    worker is born with them blocked, until it ignores them (before that, a signal would
    kill it during Python's start with a traceback). Held back here, they are delivered
    at the end of the block, not lost."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


class FigurePool:
    """Started by :meth:`tick` once a fit has run for WARM_AFTER seconds, else never."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.began = time.perf_counter()
        self.workers: list[subprocess.Popen] = []

    def tick(self) -> None:
        from bam_sim.common.command import shielded

        if self.enabled and not self.workers \
                and time.perf_counter() - self.began > WARM_AFTER:
            with shielded(), _stop_signals_blocked():
                self.workers = [subprocess.Popen(
                    [sys.executable, "-m", "bam_identify.fitting.figure_pool"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
                    for _ in range(WORKERS)]

    def draw(self, tasks: dict[str, tuple[Callable, tuple]],
             stopped: Callable[[], bool] = _never) -> dict:
        """{name: fn(*args)} for every task: in the workers if they are up, else inline.

        FiguresAbandoned as soon as ``stopped()`` holds (checked before each inline
        figure, every CHECK_SECONDS while the workers draw); the workers are then killed.
        """
        if stopped():
            self.close(at_once=True)
            raise FiguresAbandoned
        if self.workers:
            try:
                return self._draw_in_workers(tasks, stopped)
            except (EOFError, OSError, pickle.PickleError):
                self.close()
            except FiguresAbandoned:
                self.close(at_once=True)
                raise
        results = {}
        for name, (fn, args) in tasks.items():
            if stopped():
                raise FiguresAbandoned
            results[name] = fn(*args)
        return results

    def _draw_in_workers(self, tasks: dict[str, tuple[Callable, tuple]],
                         stopped: Callable[[], bool]) -> dict:
        names = list(tasks)
        owners = {name: self.workers[i % len(self.workers)] for i, name in enumerate(names)}
        # Pickled here (a call that cannot be is drawn inline), written from a thread: a
        # call may be larger than the pipe holds, and a write that waits for a busy worker
        # must not keep the parent from noticing a stop.
        frames = {worker: b"".join(_frame(tasks[name]) for name in names
                                   if owners[name] is worker) for worker in self.workers}
        for worker, data in frames.items():  # each worker queues its calls on its stdin
            threading.Thread(target=_write, args=(worker.stdin, data), daemon=True,
                             name="figure-calls").start()
        results = {}
        for name in names:
            ok, value = _receive_unless(owners[name].stdout, stopped)
            if not ok:
                raise value  # the figure's own error, as inline
            results[name] = value
        return results

    def close(self, at_once: bool = False, stopped: Callable[[], bool] = _never) -> None:
        """End the workers: by closing their stdin, or ``at_once`` by killing them (a
        stop: a worker may be mid-figure, or still importing matplotlib, for seconds).
        A worker not gone CLOSE_SECONDS after its stdin closed, or once ``stopped()``
        holds, is killed."""
        for worker in self.workers:
            if at_once:
                worker.kill()
            try:
                worker.stdin.close()
            except OSError:
                pass
            deadline = time.monotonic() + CLOSE_SECONDS
            while worker.poll() is None:
                if stopped() or time.monotonic() > deadline:
                    worker.kill()
                try:
                    worker.wait(timeout=CHECK_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
            worker.stdout.close()
        self.workers = []


def _write(stream: BinaryIO, data: bytes) -> None:
    """Write ``data``; a worker gone meanwhile (killed by a stop) ends the thread, and the
    parent, reading its answers, meets the end of its pipe."""
    try:
        stream.write(data)
        stream.flush()
    except (OSError, ValueError):  # ValueError: the parent closed the pipe
        pass


def _receive_unless(stream: BinaryIO, stopped: Callable[[], bool]):
    """The next value from a worker, read from the pipe itself (never its buffer, which
    the timeout could not see); FiguresAbandoned once ``stopped()``."""
    head = _read_exactly(stream.fileno(), 8, stopped)
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(_read_exactly(stream.fileno(), size, stopped))


def _read_exactly(fd: int, size: int, stopped: Callable[[], bool]) -> bytes:
    chunks, left = [], size
    while left:
        if stopped():
            raise FiguresAbandoned
        ready, _, _ = select.select([fd], [], [], CHECK_SECONDS)
        if not ready:
            continue
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the figure worker is gone")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _serve() -> None:
    """A worker: import what drawing needs, then answer calls until stdin closes."""
    for sig in STOP_SIGNALS:  # the parent stops the workers
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked since its start
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    import bam_identify.fitting.report  # noqa: F401

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the answers: anything printed goes aside
    while True:
        try:
            fn, args = _receive(stdin)
        except EOFError:
            return
        try:
            answer = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - handed back to the parent, which raises it
            answer = (False, exc)
        try:
            _send(stdout, answer)
        except OSError:  # the parent is gone: nobody waits for the answer
            return


if __name__ == "__main__":
    _serve()
