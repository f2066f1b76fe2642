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
"""

from __future__ import annotations

import pickle
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

WARM_AFTER = 1.0  # s of fitting after which the workers are worth their start
WORKERS = 2


def _send(stream: BinaryIO, value) -> None:
    data = pickle.dumps(value)
    stream.write(struct.pack("<Q", len(data)) + data)
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

    def draw(self, tasks: dict[str, tuple[Callable, tuple]]) -> dict:
        """{name: fn(*args)} for every task: in the workers if they are up, else inline."""
        if self.workers:
            try:
                return self._draw_in_workers(tasks)
            except (EOFError, OSError, pickle.PickleError):
                self.close()
        return {name: fn(*args) for name, (fn, args) in tasks.items()}

    def _draw_in_workers(self, tasks: dict[str, tuple[Callable, tuple]]) -> dict:
        names = list(tasks)
        owners = {name: self.workers[i % len(self.workers)] for i, name in enumerate(names)}
        for name in names:  # each worker queues its calls on its stdin
            _send(owners[name].stdin, tasks[name])
        results = {}
        for name in names:
            ok, value = _receive(owners[name].stdout)
            if not ok:
                raise value  # the figure's own error, as inline
            results[name] = value
        return results

    def close(self) -> None:
        for worker in self.workers:
            try:
                worker.stdin.close()
            except OSError:
                pass
            try:
                worker.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        self.workers = []


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
