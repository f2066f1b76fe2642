"""Output paths checked before the work that fills them: a fit never runs for minutes
and then loses everything to an unwritable ``--output``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bam_sim.common.errors import BamError


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """``path`` can be created or replaced: its nearest existing folder is writable.

    Leaves nothing behind; a BamError of one line names ``what`` (e.g.
    "--report") and the folder at fault otherwise. Writability is tried, not
    inferred from permissions: root passes every permission check, yet cannot
    write to /proc or a read-only mount.
    """
    path = Path(path).expanduser()
    folder = path if path.is_dir() else path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise BamError(f"cannot write {what} {path}: {folder} is a file, not a folder; "
                       "choose another path")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise BamError(f"cannot write {what} {path}: {folder} is not writable "
                       f"({exc.strerror}); choose another path") from None
    return path
