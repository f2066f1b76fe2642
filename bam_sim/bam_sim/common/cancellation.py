"""A request to end work early, passed by whoever owns the process to the library.

The process edge (:mod:`bam_sim.common.entry_point`, the node runner) owns the
signals; the library (the fit, the rollouts, the data, the report) only takes a
:class:`Cancellation` from its caller and looks at it between steps: each
CMA-ES generation, each Levenberg-Marquardt step, each log or bag read, each
figure, each campaign job. Nothing is ever cut where it stands, so what a step
writes is written whole, and the work ends in the state its last step left:
a fit keeps its best set and writes it.

:class:`Cancelled` is a BaseException, as asyncio's CancelledError: a library's
``except Exception`` never takes a cancellation for one of its own errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path


class Cancelled(BaseException):
    """Work ended early because its cancellation was requested.

    ``message``: what the work says about where it stopped (printed as it is);
    ``written``: the files it wrote all the same, for the caller to name.
    """

    def __init__(self, message: str = "", written: Iterable[Path | str] = ()) -> None:
        super().__init__(message)
        self.written = tuple(Path(path) for path in written)


class Cancellation:
    """Set once by its owner (:meth:`request`), read by the work (:meth:`check`).

    No lock anywhere: a signal handler requests it between two bytecodes of the main
    thread, possibly while that thread is inside :meth:`wait` or inside another
    :meth:`request` (a second signal); a lock taken there again would wait forever.
    """

    POLL_SECONDS = 0.02  # how soon wait() sees a request

    def __init__(self) -> None:
        self._cause: int | str | None = None

    def request(self, cause: int | str) -> None:
        """Ask the work to end: ``cause`` is a signal number or a reason. The first
        request is kept; later ones change nothing."""
        if self._cause is None:
            self._cause = cause

    def is_set(self) -> bool:
        return self._cause is not None

    def check(self) -> None:
        """Cancelled if a request came: the check of every step of a long loop."""
        if self._cause is not None:
            raise Cancelled

    def wait(self, timeout: float) -> bool:
        """Whether a request came, once it does or after ``timeout`` seconds (polled, so
        that a signal handler never waits for the waiter)."""
        deadline = time.monotonic() + timeout
        while self._cause is None:
            left = deadline - time.monotonic()
            if left <= 0.0:
                return False
            time.sleep(min(left, self.POLL_SECONDS))
        return True

    @property
    def signum(self) -> int:
        """The signal that asked, 0 when none did (not yet, or a reason)."""
        return self._cause if isinstance(self._cause, int) else 0

    @property
    def reason(self) -> str:
        """What asked, in words: the reason given, or the signal's number."""
        if self._cause is None:
            return ""
        return self._cause if isinstance(self._cause, str) else f"signal {self._cause}"
