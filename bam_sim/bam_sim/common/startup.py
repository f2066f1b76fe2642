"""The first thing every console script runs: a stop that comes while it loads ends it quietly.

An executable's module imports rclpy, numpy, numba and the models before its ``main``
installs its own stop handling (:func:`bam_sim.common.runner.run_node`,
:func:`bam_sim.common.entry_point.run_command`): about half a second, seconds on a loaded
machine. With Python's own handler in place there, Ctrl-C printed a KeyboardInterrupt
traceback from inside some import, and SIGTERM killed the process by the signal (exit -15
to Python's ``subprocess``, not 143).

Nothing is held before ``main`` takes over (no node, no port, no file written), so a
SIGINT or SIGTERM until then ends the process at once with 128 + the signal. The quiet
stop stays in place once the module is loaded, through the parsing of the command line,
until ``main`` installs its own: no moment of the start is left to Python's handler.
This module imports only the standard library: it must be loaded, and its handlers in
place, before anything slow. The console scripts call it directly (each package's
setup.py writes them so), not through a lookup of the installed packages' metadata, which
took 0.1 to 0.2 s with Python's handler in place.
"""

from __future__ import annotations

import importlib
import os
import signal
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stop_while_loading(signum: int, frame: object) -> None:
    os._exit(128 + signum)  # nothing to release yet; no output to flush


def load(module: str, attribute: str = "main") -> Callable[..., int]:
    """``module.attribute`` (an executable's main), imported with the quiet stop in place,
    which stays until that main installs its own handlers."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop_while_loading)
    return getattr(importlib.import_module(module), attribute)


class Deferred:
    """A console-script entry point that loads its executable's module only when it runs;
    ``module`` and ``attribute`` name what it runs (the runner finds node classes there)."""

    def __init__(self, module: str, attribute: str = "main") -> None:
        self.module, self.attribute = module, attribute

    def __call__(self, *args: object) -> int:
        return load(self.module, self.attribute)(*args)

    def __repr__(self) -> str:
        return f"Deferred({self.module}:{self.attribute})"
