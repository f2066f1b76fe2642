"""The stop of a fit, as its callers catch it.

A module of its own, light to import: ``campaign work`` names it in an
``except`` clause before the fit's simulation code is imported, so that a
stop during that import is caught as any other.
"""

from __future__ import annotations

from bam_sim.common.command import Interrupted


class FitInterrupted(Interrupted):
    """Ctrl-C stopped a fit; its summary says what was written (exit status 128 + signal)."""
