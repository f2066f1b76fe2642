"""The one way an executable that is not a ROS node runs: stop signals and exit codes.

``fit``, ``eval``, ``recover``, ``export``, ``campaign``, ``simulate`` and
``bench`` hand their work to :func:`run_command`, which gives every one of them
the same contract:

* exit code 0 when the work is done; 2 with one line on stderr for bad input
  (a :class:`~bam_sim.common.errors.BamError`); 128 + the signal when SIGINT or
  SIGTERM stopped it, whatever happened after;
* the *first* signal stops the work (a KeyboardInterrupt where the work is
  interruptible, a request checked between steps elsewhere); every later
  signal is absorbed, so a second Ctrl-C or ``kill`` cannot cut short what
  the command writes on its way out (a parameter file, a report, a job given
  back), and the process never dies by the signal itself;
* the last message says what was written: the work's own summary, or the
  files it recorded with :func:`record_written` before the stop.

A signal landing inside an import raises nothing there (:func:`importing`): it is
delivered again, as below, once the import is done.

A KeyboardInterrupt raised by the handler is lost when the signal lands in a
weakref callback or a ``__del__`` (Python discards exceptions there; numba's
compiler runs llvmlite's destructors all the time). The lost one is delivered
again at once, as a signal would be (``_thread.interrupt_main``), so a stop does
not wait for the end of a step that has no check in it (a numba compilation,
seconds on a loaded core); the long loops (each CMA-ES generation, each polish
step, each campaign job, each wait for another worker) also call
:func:`raise_if_stopped`. Neither the lost interrupt nor what it breaks on its
way (a library's object cut short in its constructor, whose destructor then
fails) is reported as an "Exception ignored" traceback: the second is one line.

Ctrl-C at a terminal reaches the whole foreground process group: helper
processes that must not die with it (figure workers) ignore the signals
themselves and are stopped by their parent.
"""

from __future__ import annotations

import _thread
import atexit
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from bam_sim.common.errors import BamError, one_line

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):  # noqa: N818 - a stop, not an error
    """A stop signal ended the work after it wrote something; the message says what."""


class StopFlag:
    """A stop request: ``set``, ``is_set`` and ``wait`` as threading.Event's, without its
    lock. The signal handler sets it, and a handler runs between two bytecodes of the
    main thread, possibly while that thread holds the lock of an Event (inside its
    ``wait`` or ``set``): the handler taking that lock again waits forever. Seen: a
    second SIGTERM whose handler ran inside the first one's ``Event.set``."""

    POLL_SECONDS = 0.02  # how soon ``wait`` sees the flag set

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the flag is set, once it is or after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._set:
            left = self.POLL_SECONDS if deadline is None else deadline - time.monotonic()
            if left <= 0.0:
                return False
            time.sleep(min(left, self.POLL_SECONDS))
        return True


class StopSignal:
    """SIGINT and SIGTERM as a request to stop.

    ``raising``: the first signal raises KeyboardInterrupt where the main
    thread is (the commands' default: Ctrl-C while loading data stops at
    once); else it only sets :attr:`requested`, checked between steps (the
    bench runner), except inside :meth:`interrupting`. Inside :meth:`shielded`
    nothing is raised. Only the first signal ever raises.
    """

    def __init__(self, raising: bool = True) -> None:
        self.requested = StopFlag()
        self.signum = 0
        self.written: list[Path] = []
        self._raising = raising
        self._shields = 0
        self._lost = False  # the first signal's KeyboardInterrupt was discarded by Python
        self._reporting = False  # the main thread is in sys.unraisablehook
        self._again: threading.Thread | None = None
        self._ended = False  # the block of installed() is over

    def _handle(self, signum: int, frame) -> None:
        # No lock anywhere in here (StopFlag): a handler may run inside another one.
        if self.signum:  # a later signal, absorbed, or the lost one delivered again
            if self._lost and self._raising and not self._shields and not self._reporting \
                    and not importing(frame):
                self._lost = False
                raise KeyboardInterrupt
            return
        self.signum = signum
        self.requested.set()
        if self._raising and not self._shields:
            if importing(frame):
                self.deliver_again()  # once the import is done
                return
            raise KeyboardInterrupt

    def deliver_again(self) -> None:
        """The KeyboardInterrupt of the stop was lost: raise it again where the main thread
        runs Python code, outside the hook that reports the loss and outside shields."""
        self._lost = True
        if self._again is None:
            # A thread of its own: interrupt_main called on the main thread runs the
            # handler at once, inside the hook.
            self._again = threading.Thread(target=self._interrupt_while_lost, daemon=True,
                                           name="stop-again")
            try:
                self._again.start()
            except RuntimeError:  # the interpreter is finalizing: on its way out anyway
                pass

    def _interrupt_while_lost(self) -> None:
        while not self._ended:
            if self._lost and not self._reporting:
                _thread.interrupt_main(self.signum or signal.SIGINT)
            time.sleep(StopFlag.POLL_SECONDS)

    def check(self) -> None:
        """KeyboardInterrupt if a stop was requested."""
        if self.requested.is_set():
            raise KeyboardInterrupt

    def raise_if_stopped(self) -> None:
        """KeyboardInterrupt if a stop was requested where the signal itself would raise
        one (outside shields; inside :meth:`interrupting` for a request-only stop)."""
        if self.requested.is_set() and self._raising and not self._shields:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[StopSignal]:
        """This object handles SIGINT and SIGTERM inside the block (main thread only).

        After a stop the signals stay absorbed when the block ends: the process
        is on its way out with 128 + signal, and a late signal must not kill it
        by the signal instead.
        """
        global _current
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        outer, _current = _current, self
        hook = sys.unraisablehook
        sys.unraisablehook = _quiet_lost_interrupt(hook, self)
        try:
            yield self
        finally:
            self._ended = True
            _current = outer
            sys.unraisablehook = hook
            for sig, handler in previous.items():
                signal.signal(sig, signal.SIG_IGN if self.signum else handler)

    @contextmanager
    def interrupting(self) -> Iterator[None]:
        """The first signal raises KeyboardInterrupt inside the block (a fit keeps its best)."""
        self.check()
        raising, self._raising = self._raising, True
        try:
            yield
        finally:
            self._raising = raising

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """No signal raises inside the block: what it writes is written whole."""
        self._shields += 1
        try:
            yield
        finally:
            self._shields -= 1


_current: StopSignal | None = None


def importing(frame) -> bool:
    """Whether ``frame`` runs inside an import. A KeyboardInterrupt raised there may never
    reach the command: a C extension whose module init imports numpy (``import_array``)
    prints it as a traceback and raises an ImportError in its place. Seen in the stop
    stress: a campaign worker printed a traceback of import frames ending in this module's
    handler. The stop waits for the import's end."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _quiet_lost_interrupt(hook: Callable, stop: StopSignal) -> Callable:
    """``hook`` until a stop; then a KeyboardInterrupt Python discards (raised by the handler
    inside a weakref callback or ``__del__``) is delivered again, and any other exception
    discarded there is one line: an object the interrupt cut short in its constructor
    failing in its destructor (seen: llvmlite's, during a numba compilation)."""
    def unraisable(info) -> None:
        if not stop.requested.is_set():
            hook(info)
            return
        stop._reporting = True
        try:
            if isinstance(info.exc_value, KeyboardInterrupt):
                stop.deliver_again()
            else:
                where = getattr(info.object, "__qualname__", type(info.object).__name__)
                print(f"ignored while stopping, in {where}: {type(info.exc_value).__name__}: "
                      f"{one_line(info.exc_value)}", file=sys.stderr, flush=True)
        finally:
            stop._reporting = False
    return unraisable


def current() -> StopSignal | None:
    """The StopSignal of the running command, if one is installed."""
    return _current


@contextmanager
def shielded() -> Iterator[None]:
    """The running command's :meth:`StopSignal.shielded` (nothing when none runs)."""
    if _current is None:
        yield
        return
    with _current.shielded():
        yield


def stop_requested() -> bool:
    """Whether the running command was asked to stop (False when none runs)."""
    return _current is not None and _current.requested.is_set()


def raise_if_stopped() -> None:
    """KeyboardInterrupt if the running command was asked to stop (outside a shield): the
    check of every long loop, so that a stop whose KeyboardInterrupt was lost still ends
    the work at the next step."""
    if _current is not None:
        _current.raise_if_stopped()


def record_written(path: Path | str) -> None:
    """Note a file the command wrote, for the message of an interrupted command."""
    if _current is not None:
        _current.written.append(Path(path))


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name if signum else "SIGINT"


def run_command(program: str, work: Callable[[StopSignal], str | None],
                raising: bool = True) -> int:
    """Run ``work`` under a :class:`StopSignal`, print its text, return the exit code.

    0; 2 with one line on stderr for a BamError; 128 + the first signal once a
    stop was requested, even when the work then ended normally (its summary is
    printed: it says what was written).
    """
    _freeze_at_exit()
    with StopSignal(raising).installed() as stop:
        code = _run(program, work, stop)
    if any(thread.is_alive() for thread in _left_running):
        # A thread the stop left (outside_main_thread) is still in numba's compiler, which
        # nothing can stop; the interpreter's exit would tear numba and LLVM down under it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


T = TypeVar("T")
_left_running: list[threading.Thread] = []


def outside_main_thread(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own while the main thread waits for it: a stop raises
    its KeyboardInterrupt in the main thread's wait, never inside ``work``.

    For work that an exception must not cut anywhere: numba compiling a kernel or loading
    it from its cache. Cut there, llvmlite's objects are left half-made, and their
    destructors then fail or crash the process (seen in the stop stress: a traceback, a
    segmentation fault, a compile that went on for seconds). On a stop the thread is left
    running, and :func:`run_command` ends the process without the interpreter's exit.
    Outside a command, or off the main thread, ``work()`` runs where it is called.
    """
    if _current is None or threading.current_thread() is not threading.main_thread():
        return work()
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the main thread as it is
            box["error"] = exc

    thread = threading.Thread(target=run, name="outside-main-thread", daemon=True)
    thread.start()
    try:
        thread.join()  # a signal's handler runs in here, and its KeyboardInterrupt leaves it
    except BaseException:
        _left_running.append(thread)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


_freezing = threading.Lock()
_frozen_at_exit = False


def _freeze_at_exit() -> None:
    """Keep the interpreter's exit from collecting the heap: its full collections over
    numba's, SciPy's and rclpy's objects took 1 to 2.5 s of a stopped bench's exit on a
    loaded machine, 0.2 to 0.3 s with this (measured). At exit only, so a command run
    in-process (a test) leaves the caller's collector as it was."""
    global _frozen_at_exit
    with _freezing:
        if not _frozen_at_exit:
            atexit.register(gc.freeze)
            _frozen_at_exit = True


def _run(program: str, work: Callable[[StopSignal], str | None], stop: StopSignal) -> int:
    try:
        text = work(stop)
        if text:
            print(text, flush=True)
    except Interrupted as exc:
        print(exc, flush=True)
        return 128 + (stop.signum or signal.SIGINT)
    except BamError as exc:
        print(f"{program}: error: {one_line(exc)}", file=sys.stderr, flush=True)
        return 128 + stop.signum if stop.signum else 2
    except KeyboardInterrupt:
        _say_interrupted(program, stop)
        return 128 + (stop.signum or signal.SIGINT)
    except Exception as exc:
        if not stop.signum:
            raise  # a bug: its traceback is what finds it
        # The KeyboardInterrupt landed where a library turns it into its own error (numba's
        # import: an ImportError; a transaction cut short: a locked database): a stop.
        _say_interrupted(program, stop, f"{type(exc).__name__}: {one_line(exc)}")
        return 128 + stop.signum
    return 128 + stop.signum if stop.signum else 0


def _say_interrupted(program: str, stop: StopSignal, cut: str = "") -> None:
    """The one line of a stopped command: the signal, what it cut short, what was written."""
    with stop.shielded():
        written = ", ".join(map(str, stop.written)) or "nothing was written"
        cut = f" (it ended {cut})" if cut else ""
        print(f"{program}: interrupted by {signal_name(stop.signum)}{cut}; "
              f"{'written: ' if stop.written else ''}{written}", file=sys.stderr, flush=True)
