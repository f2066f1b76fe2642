"""A stop while an executable loads its modules ends it quietly (bam_sim.common.startup).

The child loads, through :func:`bam_sim.common.startup.load`, a module whose import
says it has begun and then blocks: the signal is sent once that line is read, so it
lands inside the import every time, whatever the machine's speed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bam_sim.common.startup import Deferred

pytestmark = pytest.mark.live  # processes and signals: rerun under load

PACKAGES = ("bam_sim", "bam_drivers", "bam_identify", "bam_bringup")


def loading_child(tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "slow_module.py").write_text(textwrap.dedent("""
        import sys, threading
        print("loading", flush=True)
        threading.Event().wait()  # an import that never ends by itself
        def main():
            return 0
    """))
    code = ("import sys; from bam_sim.common.startup import load; "
            "sys.exit(load('slow_module')())")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    return subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": path})


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_loading_exits_with_its_code_and_no_traceback(tmp_path, signum):
    child = loading_child(tmp_path)
    try:
        assert child.stdout.readline().strip() == "loading"
        child.send_signal(signum)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 128 + signum
    assert err == ""  # no KeyboardInterrupt traceback, nothing at all


def test_the_handlers_of_before_come_back_once_loaded():
    from bam_sim.common.startup import load

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    assert load("bam_sim.common.errors", "one_line")("a\n b") == "a b"
    assert {s: signal.getsignal(s) for s in before} == before


def console_scripts() -> list[importlib.metadata.EntryPoint]:
    found = []
    for entry in importlib.metadata.entry_points(group="console_scripts"):
        if entry.dist is not None and entry.dist.name.replace("-", "_") in PACKAGES:
            found.append(entry)
    return found


def test_every_console_script_loads_through_startup():
    """An executable added without it would print a traceback on an early Ctrl-C."""
    scripts = console_scripts()
    assert len(scripts) >= 17  # the workspace is built (every package's scripts)
    for entry in scripts:
        main = entry.load()
        assert isinstance(main, Deferred), f"{entry.name} = {entry.value}"
        target = getattr(importlib.import_module(main.module), main.attribute)
        assert callable(target), f"{entry.name}: {main!r}"
