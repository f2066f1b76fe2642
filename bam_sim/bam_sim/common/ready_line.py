"""Waiting for a child process to say it serves: a stdout line with a known prefix.

Used wherever a node must not start before a helper process is up (the
bringup runner starting the Dynamixel emulator before the driver, the
emulator's Python client). The stdout file descriptor is read byte by byte
with ``os.read``, so nothing is left in a Python buffer: whoever reads the
pipe afterwards gets everything that follows the ready line.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable


class NotReady(RuntimeError):
    """The process exited, or stayed silent, before its ready line (the message says which)."""


def await_ready_line(process: subprocess.Popen, prefix: str, timeout: float,
                     echo: Callable[[str], None] | None = None) -> str:
    """The first stdout line of ``process`` starting with ``prefix`` (without its newline).

    Earlier lines go to ``echo`` (if given). ``process`` must have been started
    with ``stdout=subprocess.PIPE``.
    """
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        line = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                raise NotReady(f"did not print '{prefix}' within {timeout:g} s")
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 1)
            if not chunk:
                raise NotReady(f"exited with code {process.wait(timeout=5.0)} before "
                               f"printing '{prefix}'")
            line += chunk
            if chunk != b"\n":
                continue
            text = line.decode(errors="replace").rstrip("\n")
            if text.startswith(prefix):
                return text
            if echo is not None:
                echo(text)
            line = b""
