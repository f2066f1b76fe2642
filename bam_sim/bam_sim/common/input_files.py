"""The one way to read an input file as text: a missing or unreadable file is one line."""

from __future__ import annotations

import os
from pathlib import Path

from bam_sim.common.errors import BamError, one_line


def read_text(path: str | os.PathLike, what: str) -> str:
    """The UTF-8 text of ``path``; BamError naming ``what`` (e.g. "parameter file") when it
    does not exist or cannot be read."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BamError(f"{what} {path} does not exist; check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BamError(f"{what} {path} cannot be read: {one_line(exc)}") from None


def parse_yaml_text(text: str, where: str) -> object:
    """``text`` parsed with ``yaml.safe_load`` (nothing read is evaluated); a syntax error
    is one BamError naming ``where`` and the line."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise BamError(f"{where} is not valid YAML{line}; fix the syntax") from None
