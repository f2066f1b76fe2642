"""The one way an executable that is not a ROS node runs: stop signals and exit codes.

``fit``, ``eval``, ``recover``, ``export``, ``campaign``, ``simulate`` and
``bench`` hand their work to :func:`run_command`, which gives every one of them
the same contract:

* exit code 0 when the work is done; 2 with one line on stderr for bad input
  (a :class:`~bam_sim.common.errors.BamError`); 128 + the signal when SIGINT or
  SIGTERM stopped it, whatever happened after;
* the first signal only requests the work's
  :class:`~bam_sim.common.cancellation.Cancellation`, which the work checks
  between its steps: it is never cut where it stands (a KeyboardInterrupt raised
  inside numba's compiler crashed the process; inside a database transaction it
  left the database locked). Every later signal is absorbed, so a second Ctrl-C
  or ``kill`` cannot cut short what the command writes on its way out (a
  parameter file, a report, a job given back), and the process never dies by
  the signal itself;
* a stopped command says what it wrote: the work's own text (a work that
  ends by itself once asked, as ``bench serve`` does, names its files there), or
  for work that raised :class:`~bam_sim.common.cancellation.Cancelled`, its
  message on stdout and then one line on stderr naming the files it carries.
"""

from __future__ import annotations

import atexit
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.errors import BamError, one_line

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_signals(cancel: Cancellation) -> Iterator[Cancellation]:
    """Inside the block, SIGINT and SIGTERM request ``cancel`` and raise nothing (main
    thread only: elsewhere the caller owns the signals).

    After a stop the signals stay absorbed when the block ends: the process is on its
    way out with 128 + signal, and a late signal must not kill it by the signal instead.
    """
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return

    def handle(signum: int, frame: object) -> None:
        cancel.request(signum)  # the first is kept; no lock taken (Cancellation)

    previous = {sig: signal.signal(sig, handle) for sig in STOP_SIGNALS}
    try:
        yield cancel
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_IGN if cancel.is_set() else handler)


def signal_name(cancel: Cancellation) -> str:
    """The signal (or reason) that stopped the work, as the last line names it."""
    return signal.Signals(cancel.signum).name if cancel.signum else cancel.reason


def run_command(program: str, work: Callable[[Cancellation], str | None]) -> int:
    """Run ``work`` with a :class:`Cancellation` the stop signals request; print its text,
    return the exit code.

    0; 2 with one line on stderr for a BamError; 128 + the first signal once a stop was
    requested, even when the work then ended normally (its text says what was written).
    """
    _freeze_at_exit()
    with stop_signals(Cancellation()) as cancel:
        return _run(program, work, cancel)


def _run(program: str, work: Callable[[Cancellation], str | None],
         cancel: Cancellation) -> int:
    try:
        text = work(cancel)
    except Cancelled as exc:
        if str(exc):
            print(exc, flush=True)
        _say_stopped(program, cancel, exc.written)
        return _stopped(cancel)
    except BamError as exc:
        print(f"{program}: error: {one_line(exc)}", file=sys.stderr, flush=True)
        return _stopped(cancel) if cancel.is_set() else 2
    if text:  # after a stop too: the work ended by itself, and its text says what it wrote
        print(text, flush=True)
    return _stopped(cancel) if cancel.is_set() else 0


def _stopped(cancel: Cancellation) -> int:
    return 128 + (cancel.signum or signal.SIGINT)


def _say_stopped(program: str, cancel: Cancellation, written: Sequence[Path]) -> None:
    """The one line of a stopped command: what stopped it, what was written."""
    files = f"written: {', '.join(map(str, written))}" if written else "nothing was written"
    print(f"{program}: interrupted by {signal_name(cancel)}; {files}", file=sys.stderr,
          flush=True)


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
