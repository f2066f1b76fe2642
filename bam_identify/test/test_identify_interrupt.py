"""Stopping a fit with real signals: the report is written whole, the figure workers stay
quiet, the exit code is 128 + the first signal, and the message names what was written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from identify_cases import write_m1_logs

from bam_identify.fitting.search import POLISH_AFTER
from bam_sim.models.files.parameter_file import load
from bam_sim.testing.processes import read_until

TIMEOUT = 120.0  # s: only reached when something is wrong (a loaded machine is slow)
FIT = "from bam_identify.cli import fit_main; raise SystemExit(fit_main())"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return write_m1_logs(tmp_path_factory.mktemp("logs"))


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # gone while listed
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _await_children(process: subprocess.Popen, count: int) -> list[int]:
    """The figure workers, once the fit has started them (an event, not a duration)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()
        children = _children(process.pid)
        if len(children) >= count:
            return children
        time.sleep(0.05)
    raise AssertionError(f"the fit started no {count} figure workers within {TIMEOUT} s")


def _start_fit(log_dir: Path, tmp_path: Path) -> subprocess.Popen:
    # A session of its own: the test signals its process group as a terminal would.
    return subprocess.Popen(
        [sys.executable, "-c", FIT, "--logs", str(log_dir), "--models", "m1", "m4",
         "--trials", "1000000", "--output", str(tmp_path / "{model}.yaml"), "--report",
         str(tmp_path / "report"), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _signal_all(process: subprocess.Popen, workers: list[int], signum: int) -> None:
    """``signum`` to the fit's process group and to each figure worker (Ctrl-C reaches the
    whole foreground group, the workers included)."""
    for pid in workers:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # already ended by its parent
            pass
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_during_the_report_changes_nothing(log_dir, tmp_path, signum):
    process = _start_fit(log_dir, tmp_path)
    try:
        workers = _await_children(process, 2)
        _signal_all(process, workers, signum)
        # The first signal stopped m1's search; its best set is saved, then the report is
        # written without its figures (the workers killed): the second signal lands there.
        errors = SimpleNamespace(stdout=process.stderr, poll=process.poll)
        said = read_until(errors, "interrupted: the best m1 parameters", TIMEOUT)
        _signal_all(process, workers, signum)
        out, rest = process.communicate(timeout=TIMEOUT)
        code, err, out = process.returncode, said + rest.decode(), out.decode()
    finally:
        process.kill()
        process.wait()
    assert code == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "nothing was written" not in err + out
    written = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
               for line in out.splitlines() if line.startswith(("  m1:", "report:"))}
    assert set(written) == {"m1", "report"}, out
    assert f"interrupted by {signal.Signals(signum).name}" in out, out
    assert load(Path(written["m1"])).provenance["interrupted"] is True
    report = Path(written["report"])
    assert report.read_text().startswith("#")
    summary = json.loads((report.parent / "summary.json").read_text())
    assert list(summary["models"]) == ["m1"]
    # A stopped fit has no time for the figures: the report says they were left out.
    assert summary["figures"] == {} and "figures_left_out" in summary
    assert "figures were left out" in report.read_text()
    assert "report without its figures" in out, out
    assert not (tmp_path / "m4.yaml").exists()  # the fit stopped before the next model
    assert not any(_alive(pid) for pid in workers)  # the parent ended its workers


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"



LOST = """
import os, signal, sys
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, SearchSpace, identify
from bam_sim.common.command import run_command
from bam_sim.models.files.parameter_file import published

logs = paper_like_set(published("mx64", "m1"), 2, duration=1.0, seed=8)
space = SearchSpace.build("mx64", "m1", {}, True)
calls = []
at = int(sys.argv[1])

class Dropped:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in here: Python drops it

def progress(count, best):  # once per generation, and per evaluation of a polish
    calls.append(count)
    if len(calls) == at:
        Dropped()

def work(stop):
    result = identify(space, logs, FitSettings(trials=10**6, seed=0), progress)
    return f"interrupted={result.interrupted} after {len(calls)} progress calls"

raise SystemExit(run_command("fit", work))
"""


@pytest.mark.parametrize("at", [1, POLISH_AFTER + 1], ids=["generation", "polish"])
def test_an_interrupt_python_dropped_ends_the_fit_at_the_next_step(at):
    """The stop's KeyboardInterrupt lost in a destructor (as in SQLAlchemy's weakref
    callbacks) still ends the search at once: after that generation, or that step of the
    Levenberg-Marquardt polish (the first polish follows generation POLISH_AFTER), and
    without a traceback."""
    done = subprocess.run([sys.executable, "-c", LOST, str(at)], capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert done.stdout == f"interrupted=True after {at} progress calls\n", done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
