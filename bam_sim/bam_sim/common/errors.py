"""Errors raised on bad user input.

Every error the numerical core raises for something a user wrote (a parameter
file, a command-line value, a bench description) is a :class:`BamError`: its
message is one line that names the problem and what to do about it, so the
command-line tools can print it without a traceback.
"""

from __future__ import annotations


class BamError(ValueError):
    """Bad input: the message is one line naming the field and the remedy."""


def one_line(exc: BaseException | str) -> str:
    """``exc`` as one line: its message with white space folded, else its type's name.

    The one exception summary of the project: a log line, a diagnostics value
    or a command-line error never spans lines, whatever a library raised.
    """
    text = " ".join(str(exc).split())
    if isinstance(exc, BaseException) and not text:
        return type(exc).__name__
    return text
