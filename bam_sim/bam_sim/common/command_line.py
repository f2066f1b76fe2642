"""The command-line parser of every executable: argparse, with one-line errors.

argparse prints its usage block before an error; a wrong option then reads as
a wall of text. Here the error is one line, ``prog: error: ... (see prog
--help)``, exit code 2, as for every other bad input.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from bam_sim.common.errors import BamError


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def argument_type(check: Callable[[str], object]) -> Callable[[str], object]:
    """An argparse ``type=`` from a check that raises BamError: one line, argparse's exit 2."""
    def parse(text: str):
        try:
            return check(text)
        except BamError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(check, "__name__", "value")
    return parse


def _actuator_file(text: str) -> Path:
    """Declare the servo of an actuator file as the command line is parsed (a bad file is
    refused there); its absolute path is kept, for a job run elsewhere."""
    from bam_sim.models.servo.actuators import declare_file

    path = Path(text).expanduser().resolve()
    declare_file(path)
    return path


def add_actuator_files(parser: argparse.ArgumentParser) -> None:
    """``--actuator-file FILE...`` (dest ``actuator_files``): servos declared in files."""
    parser.add_argument("--actuator-file", dest="actuator_files", nargs="+", default=[],
                        type=argument_type(_actuator_file), metavar="FILE",
                        help="a servo the project does not ship, declared in an actuator file "
                        "(YAML; docs: how-to/actuator-files); --actuator then names it")
