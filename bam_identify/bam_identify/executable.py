"""How every bam_identify executable runs: its command line parsed, then its work under
:func:`bam_sim.common.entry_point.run_command`.

argparse answers ``--help`` (0) and a bad option (one line, 2) itself; everything
after is run_command's: the work's text on stdout, a BamError as one line on
stderr (2), Ctrl-C or SIGTERM as a clean interruption (128 + signal): the work
gets the cancellation the signals request, so a fit keeps what it has found and
a campaign job goes back to its queue. The outputs the work checks or writes are
its own until it ends (:func:`bam_sim.common.output_paths.claimed_outputs`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bam_sim.common.cancellation import Cancellation
from bam_sim.common.entry_point import run_command
from bam_sim.common.output_paths import claimed_outputs


def run_executable(parser: argparse.ArgumentParser,
                   work: Callable[[argparse.Namespace, Cancellation], str | None],
                   argv: list[str] | None) -> int:
    """Parse ``argv`` with ``parser``, run ``work`` on the options; the exit code."""
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or one line on a bad option (2)
        return int(exit_.code or 0)

    def claimed(cancel: Cancellation) -> str | None:
        with claimed_outputs():
            return work(args, cancel)

    return run_command(parser.prog, claimed)
