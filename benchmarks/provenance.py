"""Provenance recorded with every benchmark result (code version, machine, date); the file."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def commit() -> str:
    """Short hash of the checked-out commit, with '+dirty' for local changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, check=True, capture_output=True, text=True).stdout
        return head + ("+dirty" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def environment() -> dict:
    return {
        "python": platform.python_version(), "numpy": np.__version__,
        "numba": numba.__version__, "cores": numba.config.NUMBA_NUM_THREADS,
        "machine": platform.machine(), "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def write_result(path: Path, result: dict) -> None:
    """``result`` as indented JSON at ``path`` (its folder made), said on stdout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")
