"""The one way every node of the project runs as an executable.

``main`` of each node calls :func:`run_node`: ``--help`` prints the node's
parameter table, a stray argument or a bad parameter is one line on stderr
with exit code 2, and SIGINT and SIGTERM alike end the spin *between*
callbacks, so the node can still publish its last messages (a trial's END
marker), turn torque off and close its files (a bag) in ``destroy_node``.
A second signal during that shutdown is ignored rather than allowed to cut
the torque-off short.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from bam_sim.common.errors import BamError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def spin_until_signal(node: Node, until: threading.Event | None = None) -> int:
    """Spin ``node`` until SIGINT/SIGTERM (or ``until`` is set); the signal number or 0.

    The signal only sets a flag checked between callbacks; later signals are
    ignored until the caller has finished its shutdown.
    """
    stop = threading.Event()
    received = [0]
    previous = {}

    def on_signal(signum, frame):
        received[0] = received[0] or signum
        stop.set()

    for sig in STOP_SIGNALS:
        previous[sig] = signal.signal(sig, on_signal)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while not stop.is_set() and not (until is not None and until.is_set()):
            executor.spin_once(timeout_sec=0.1)
    except (ExternalShutdownException, KeyboardInterrupt):
        pass
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=1.0)
    return received[0]


def error_line(program: str, exc: BaseException) -> str:
    """The one line a bad parameter or input is reported with."""
    hint = ""
    if isinstance(exc, InvalidParameterTypeException):
        hint = " (write doubles with a decimal point, e.g. mass:=1.0)"
    return f"{program}: error: {exc}{hint}"


def run_node(program: str, factory: Callable[[], Node], help_text: str,
             args: list[str] | None = None,
             until: Callable[[Node], threading.Event | None] | None = None) -> int:
    """An executable's main: create the node, spin it until a signal, destroy it.

    Returns 0, 2 for bad input, or 128 + the signal that stopped it.
    ``until(node)`` may return an event that ends the spin (a protocol played).
    """
    argv = sys.argv if args is None else args
    extra = rclpy.utilities.remove_ros_args(argv)[1:]
    if any(a in ("-h", "--help") for a in extra):
        print(help_text)
        return 0
    if extra:
        print(f"{program}: error: unexpected argument {extra[0]!r}; set parameters with "
              "--ros-args -p NAME:=VALUE or --params-file FILE (see --help)", file=sys.stderr)
        return 2
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    signum = 0
    try:
        node = factory()
        signum = spin_until_signal(node, until(node) if until else None)
    except (BamError, ParameterException) as exc:
        print(error_line(program, exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        signum = signal.SIGINT
    finally:
        with _signals_ignored():
            if node is not None:
                node.destroy_node()
            rclpy.try_shutdown()
    return 128 + signum if signum else 0


class _signals_ignored:
    """SIGINT/SIGTERM ignored inside the block: a shutdown runs to its end."""

    def __enter__(self) -> None:
        self._previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
