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
A worker that fails or is gone (Ctrl-C reaches it too) is not an error: the
figures are then drawn inline.
"""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import BinaryIO

WARM_AFTER = 1.0  # s of fitting after which the workers are worth their start
WORKERS = 2


def _send(stream: BinaryIO, value) -> None:
    data = pickle.dumps(value)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO):
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the figure worker is gone")
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


class FigurePool:
    """Started by :meth:`tick` once a fit has run for WARM_AFTER seconds, else never."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.began = time.perf_counter()
        self.workers: list[subprocess.Popen] = []

    def tick(self) -> None:
        if self.enabled and not self.workers \
                and time.perf_counter() - self.began > WARM_AFTER:
            self.workers = [subprocess.Popen(
                [sys.executable, "-m", "bam_identify.fitting.figure_pool"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(WORKERS)]

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
        _send(stdout, answer)


if __name__ == "__main__":
    _serve()
