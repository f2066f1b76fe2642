"""The first thing every console script runs: a stop that comes while it loads ends it quietly.

An executable's module imports rclpy, numpy, numba and the models before its ``main``
installs its own stop handling (:func:`bam_sim.common.runner.run_node`,
:func:`bam_sim.common.command.run_command`): about half a second, seconds on a loaded
machine. Without this, Ctrl-C in that window printed a KeyboardInterrupt traceback from
inside some import and SIGTERM killed the process by the signal (exit -15 to Python's
``subprocess``, not 143).

Nothing is held while modules load (no node, no port, no file written), so a SIGINT or
SIGTERM then ends the process at once with 128 + the signal. Once the module is loaded
the handlers that were there before come back, and the executable's ``main`` takes over
as it always has. This module imports only the standard library: it must be loaded, and
its handlers in place, before anything slow.
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
    """``module.attribute`` (an executable's main), imported with the quiet stop in place."""
    previous = {signum: signal.signal(signum, _stop_while_loading) for signum in STOP_SIGNALS}
    try:
        return getattr(importlib.import_module(module), attribute)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class Deferred:
    """A console-script entry point that loads its executable's module only when it runs;
    ``module`` and ``attribute`` name what it runs (the runner finds node classes there)."""

    def __init__(self, module: str, attribute: str = "main") -> None:
        self.module, self.attribute = module, attribute

    def __call__(self, *args: object) -> int:
        return load(self.module, self.attribute)(*args)

    def __repr__(self) -> str:
        return f"Deferred({self.module}:{self.attribute})"

