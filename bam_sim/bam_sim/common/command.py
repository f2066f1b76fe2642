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

Ctrl-C at a terminal reaches the whole foreground process group: helper
processes that must not die with it (figure workers) ignore the signals
themselves and are stopped by their parent.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bam_sim.common.errors import BamError, one_line

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):  # noqa: N818 - a stop, not an error
    """A stop signal ended the work after it wrote something; the message says what."""


class StopSignal:
    """SIGINT and SIGTERM as a request to stop.

    ``raising``: the first signal raises KeyboardInterrupt where the main
    thread is (the commands' default: Ctrl-C while loading data stops at
    once); else it only sets :attr:`requested`, checked between steps (the
    bench runner), except inside :meth:`interrupting`. Inside :meth:`shielded`
    nothing is raised. Only the first signal ever raises.
    """

    def __init__(self, raising: bool = True) -> None:
        self.requested = threading.Event()
        self.signum = 0
        self.written: list[Path] = []
        self._raising = raising
        self._shields = 0

    def _handle(self, signum: int, frame) -> None:
        first = not self.signum
        self.signum = self.signum or signum
        self.requested.set()
        if first and self._raising and not self._shields:
            raise KeyboardInterrupt

    def check(self) -> None:
        """KeyboardInterrupt if a stop was requested."""
        if self.requested.is_set():
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
        try:
            yield self
        finally:
            _current = outer
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
    with StopSignal(raising).installed() as stop:
        return _run(program, work, stop)


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
        with stop.shielded():
            written = ", ".join(map(str, stop.written)) or "nothing was written"
            print(f"{program}: interrupted by {signal_name(stop.signum)}; "
                  f"{'written: ' if stop.written else ''}{written}", file=sys.stderr, flush=True)
        return 128 + (stop.signum or signal.SIGINT)
    return 128 + stop.signum if stop.signum else 0
