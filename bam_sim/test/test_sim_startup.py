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


def test_the_quiet_stop_stays_until_main_installs_its_own(tmp_path):
    """Between the module's import and its main's own handlers (the command line parsed,
    rclpy started) Python's handler is never back: a stop there is quiet too."""
    (tmp_path / "started_module.py").write_text(textwrap.dedent("""
        import threading
        def main():
            print("main", flush=True)
            threading.Event().wait()  # a main that has not installed its handlers yet
    """))
    code = ("import sys; from bam_sim.common.startup import load; "
            "sys.exit(load('started_module')())")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": path})
    try:
        assert child.stdout.readline().strip() == "main"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert (child.returncode, err) == (128 + signal.SIGINT, "")


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


def installed_script(entry: importlib.metadata.EntryPoint) -> Path:
    from ament_index_python.packages import get_package_prefix

    package = entry.dist.name.replace("-", "_")
    return Path(get_package_prefix(package)) / "lib" / package / entry.name


def test_every_console_script_calls_its_entry_point_directly():
    """The installed script imports its executable's module and calls it: setuptools' own
    script first looked the entry point up in every installed package's metadata (0.1 to
    0.2 s) with Python's SIGINT handler in place, and an early Ctrl-C printed a traceback."""
    for entry in console_scripts():
        lines = installed_script(entry).read_text().splitlines()
        assert lines[0].startswith("#!") and lines[1:] == [
            "import sys", f"from {entry.module} import {entry.attr}",
            f"sys.exit({entry.attr}())"], entry.name


def test_nothing_slow_is_imported_before_the_quiet_stop():
    """As run: the first modules imported after Python's own start are the package's and
    the startup's, then the executable's (numpy among them)."""
    (entry,) = [e for e in console_scripts() if e.name == "fit"]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([str(installed_script(entry)), "--help"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line][1:]  # the header row
    quiet = imported.index("bam_sim.common.startup")
    assert "importlib.metadata" not in imported[:quiet]
    assert "numpy" in imported[quiet:]
