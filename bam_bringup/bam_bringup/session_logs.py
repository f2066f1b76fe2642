"""Keep the session's progress bar one clean line: the nodes log to a file meanwhile.

The bench's nodes log through rcutils, which writes to file descriptor 2 from C,
past Python and past the bar: a log line would land in the middle of it. While
the bar is shown, descriptor 2 is pointed at the session's log file and the bar
writes to a copy of the terminal's descriptor; everything is put back after.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


@contextlib.contextmanager
def logs_to_file(path: Path | None) -> Iterator[TextIO]:
    """While open, what is written to descriptor 2 (the nodes' logs, warnings) goes to
    ``path``; yields the stream the progress bar writes to (the terminal's). With
    ``path`` None nothing is moved: the stream is sys.stderr."""
    if path is None:
        yield sys.stderr
        return
    sys.stderr.flush()
    terminal = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    bar = os.fdopen(os.dup(terminal), "w", buffering=1, encoding="utf-8", errors="replace")
    try:
        os.dup2(log, 2)
        yield bar
    finally:
        sys.stderr.flush()
        os.dup2(terminal, 2)
        for fd in (log, terminal):
            os.close(fd)
        bar.close()
