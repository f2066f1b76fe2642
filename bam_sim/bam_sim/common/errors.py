"""Errors raised on bad user input.

Every error the numerical core raises for something a user wrote (a parameter
file, a command-line value, a bench description) is a :class:`BamError`: its
message is one line that names the problem and what to do about it, so the
command-line tools can print it without a traceback.
"""

from __future__ import annotations


class BamError(ValueError):
    """Bad input: the message is one line naming the field and the remedy."""
