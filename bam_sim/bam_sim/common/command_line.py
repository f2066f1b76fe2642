"""The command-line parser of every executable: argparse, with one-line errors.

argparse prints its usage block before an error; a wrong option then reads as
a wall of text. Here the error is one line, ``prog: error: ... (see prog
--help)``, exit code 2, as for every other bad input.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
