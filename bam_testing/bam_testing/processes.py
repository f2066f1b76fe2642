"""Reading a child process's output in tests: wait for a line, never for a time."""

from __future__ import annotations

import os
import select
import subprocess
import time


def read_until(proc: subprocess.Popen, text: str, timeout: float) -> str:
    """The output of ``proc`` (its stdout pipe) up to (at least) the line holding ``text``;
    AssertionError when it ends or ``timeout`` passes first.

    Reads the pipe's descriptor directly: a buffered ``readline`` after ``select`` may pull
    the awaited line into Python's buffer together with the one before it, and ``select``
    then waits for output that has already arrived.
    """
    deadline, seen = time.monotonic() + timeout, b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        chunk = os.read(fd, 65536) if ready else b""
        seen += chunk
        output = seen.decode(errors="replace")
        if text in output:
            return output
        assert chunk or proc.poll() is None, output
    raise AssertionError(f"no '{text}' within {timeout} s: {seen.decode(errors='replace')}")
