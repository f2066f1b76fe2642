"""The one way every node of the project runs as an executable.

``main`` of each node calls :func:`run_node`: ``--help`` prints the node's
parameter table, a stray argument or a bad parameter is one line on stderr
with exit code 2, and SIGINT and SIGTERM alike end the spin *between*
callbacks, so the node can still publish its last messages (a trial's END
marker), turn torque off and close its files (a bag) in ``destroy_node``.

From the moment the node is being built to the process's exit, the stop
signals only set a flag (:class:`StopSignals`) and never raise: a signal while
the node is built (a simulator compiling or loading its numba kernels, a driver
opening its bus) ends it as soon as it spins, since an exception raised inside
numba's compiler crashed the process; a second signal during the shutdown,
or after it while the interpreter exits, is absorbed rather than allowed to
cut the torque-off short or to kill the process (the exit code stays 128 +
the first signal). The shutdown order is the same for every node
(:func:`shut_down`).
"""

from __future__ import annotations

import gc
import signal
import sys
import threading
from collections.abc import Callable

import rclpy
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from bam_sim.common import ros_arguments
from bam_sim.common.errors import BamError
from bam_sim.common.exit_timer import ExitTimer
from bam_sim.common.node_parameters import refuse_unknown

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """SIGINT and SIGTERM as a request to stop: the first one is kept, every one sets
    :attr:`event`, none raises nor kills.

    Installed once for the rest of the process (:meth:`install`): with the default action,
    a SIGTERM arriving while the interpreter exits after the shutdown would still kill the
    process (exit status -15 instead of 143).
    """

    def __init__(self) -> None:
        self.first = 0  # the first signal received, 0 while none
        self.event = threading.Event()

    def install(self) -> StopSignals:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        # A later signal returns at once: it may arrive while the first handler holds the
        # event's lock inside set(), and taking it again there would deadlock.
        if self.first:
            return
        self.first = signum
        self.event.set()


def spin_until_signal(node: Node, until: threading.Event | None = None,
                      signals: StopSignals | None = None) -> int:
    """Spin ``node`` until SIGINT/SIGTERM (or ``until`` is set); the signal number or 0.

    ``signals`` (installed here when not given) only sets a flag, checked between
    callbacks; it stays installed, so later signals are absorbed.
    """
    signals = signals if signals is not None else StopSignals().install()
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while not signals.event.is_set() and not (until is not None and until.is_set()):
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=1.0)
    return signals.first


TEARDOWN_LIMIT = 2.0  # s allowed to the middleware's teardown once the node is released


def shut_down(node: Node | None, exit_code: int | None = None) -> None:
    """The shutdown of every executable, once its spin has ended (signals absorbed).

    First ``node.release()`` where the node has one: what must finish before anything
    may be cut (threads joined, torque off read back, bag closed). Then
    ``node.destroy_node()`` destroys the entities (timers, publishers, subscriptions,
    services, action servers) and the node; last, the context shuts down.

    ``exit_code`` (given by :func:`run_node`, the process's own shutdown) bounds that
    teardown by :data:`TEARDOWN_LIMIT`: Fast DDS's participant deletion can spin forever
    inside ``destroy_node`` holding the GIL, when another node leaves at the same moment
    (the cause, and why the bound is a native timer: :mod:`bam_sim.common.exit_timer`);
    once the node is released nothing is lost by leaving it to the kernel, so the
    process then says so in one line and exits with that code.
    """
    if node is not None and hasattr(node, "release"):
        node.release()
    guard = None if exit_code is None else ExitTimer(
        TEARDOWN_LIMIT, exit_code, f"the middleware's teardown did not end within "
        f"{TEARDOWN_LIMIT:g} s after the node was released; exiting without it")
    try:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    finally:
        if guard is not None:
            guard.cancel()
    # The process exits next: without this, the interpreter's exit runs full collections
    # over numba's, SciPy's and MuJoCo's objects, about 0.5 s of CPU, seconds of wall time
    # on a loaded machine (measured), after the node has stopped.
    gc.freeze()


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
    try:  # our own check of --ros-args first: one line instead of rcl's traceback
        ros_args = ros_arguments.check(argv)
        extra = ros_arguments.without_ros_args(argv)
    except BamError as exc:
        print(error_line(program, exc), file=sys.stderr)
        return 2
    if any(a in ("-h", "--help") for a in extra):
        print(help_text)
        return 0
    if extra:
        print(f"{program}: error: unexpected argument {extra[0]!r}; set parameters with "
              "--ros-args -p NAME:=VALUE or --params-file FILE (see --help)", file=sys.stderr)
        return 2
    try:
        ros_arguments.init(argv, ros_args, signal_handler_options=SignalHandlerOptions.NO)
    except BamError as exc:
        print(error_line(program, exc), file=sys.stderr)
        return 2
    node = None
    signals = StopSignals().install()  # before the node is built: no signal kills from here
    code = 0
    try:
        node = factory()
        refuse_unknown(node)  # nodes may refuse earlier, before they start
        spin_until_signal(node, until(node) if until else None, signals)
    except (BamError, ParameterException) as exc:
        print(error_line(program, exc), file=sys.stderr)
        code = 2
    finally:
        code = 128 + signals.first if signals.first else code
        shut_down(node, exit_code=code)
        # Python gives handled signals their default action back as the interpreter
        # finalizes: ignored from here, a late SIGTERM cannot turn 143 into -15.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
    return code
