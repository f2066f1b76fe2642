"""Running one of our nodes as an executable: clean start, clean stop.

A bad parameter at start is one line on stderr and exit code 2. SIGINT and
SIGTERM end the spin between callbacks, so a node can still publish its last
messages (a trial's END marker) and close its files (a bag) before exiting.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from bam_sim.errors import BamError


def spin_until_signal(node: Node, until: threading.Event | None = None) -> None:
    """Spin ``node`` until SIGINT/SIGTERM (or ``until`` is set), without tearing callbacks.

    The signal only sets a flag checked between callbacks, so that the caller
    can still publish and close files cleanly; a second signal interrupts.
    """
    stop = threading.Event()
    previous = {}

    def on_signal(signum, frame):
        stop.set()
        for sig, handler in previous.items():  # a second signal acts as usual
            signal.signal(sig, handler)

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while not stop.is_set() and not (until is not None and until.is_set()):
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        executor.remove_node(node)
        executor.shutdown(timeout_sec=1.0)


def run_node(factory: Callable[[], Node], name: str, args: list[str] | None = None,
             until: Callable[[Node], threading.Event | None] | None = None) -> int:
    """Create the node, spin it until a signal (or ``until(node)`` is set), destroy it."""
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        try:
            node = factory()
        except BamError as err:
            print(f"{name}: error: {err}", file=sys.stderr)
            return 2
        try:
            spin_until_signal(node, until(node) if until else None)
        finally:
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0
