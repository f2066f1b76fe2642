"""Stopping a fit with real signals: the search ends at its next step with the best set
found, which is written; the report is written whole; a second signal changes nothing; the
exit code is 128 + the first signal and the last line names what was written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from identify_cases import write_m1_logs

from bam_identify.fitting.search import POLISH_AFTER
from bam_sim.models.files.parameter_file import load
from bam_testing.processes import read_until

TIMEOUT = 300.0  # s: only reached when something is wrong (a loaded machine is slow)
FIT = "from bam_identify.cli import fit_main; raise SystemExit(fit_main())"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return write_m1_logs(tmp_path_factory.mktemp("logs"))


def _start_fit(log_dir: Path, tmp_path: Path) -> subprocess.Popen:
    # A session of its own: the test signals its process group as a terminal would.
    return subprocess.Popen(
        [sys.executable, "-c", FIT, "--logs", str(log_dir), "--models", "m1", "m4",
         "--trials", "1000000", "--output", str(tmp_path / "{model}.yaml"), "--report",
         str(tmp_path / "report")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_the_search_keeps_the_best_and_a_second_signal_changes_nothing(
        log_dir, tmp_path, signum):
    process = _start_fit(log_dir, tmp_path)
    try:
        errors = SimpleNamespace(stdout=process.stderr, poll=process.poll)
        # The progress bar shows a best MAE once a generation of m1 has been scored.
        said = read_until(errors, "best MAE", TIMEOUT)
        os.killpg(process.pid, signum)
        # The search ends at its next step; its best set is saved, then the report is
        # written: the second signal lands there, or after.
        said += read_until(errors, "interrupted: the best m1 parameters", TIMEOUT)
        os.killpg(process.pid, signum)
        out, rest = process.communicate(timeout=TIMEOUT)
        code, err, out = process.returncode, said + rest.decode(), out.decode()
    finally:
        process.kill()
        process.wait()
    name = signal.Signals(signum).name
    assert code == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    written = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
               for line in out.splitlines() if line.startswith(("  m1:", "report:"))}
    assert set(written) == {"m1", "report"}, out
    assert "fit interrupted: only the files above were written" in out, out
    assert err.rstrip().splitlines()[-1] == (f"fit: interrupted by {name}; written: "
                                             f"{written['m1']}, {written['report']}")
    assert load(Path(written["m1"])).provenance["interrupted"] is True
    report = Path(written["report"])
    assert report.read_text().startswith("#")
    summary = json.loads((report.parent / "summary.json").read_text())
    assert list(summary["models"]) == ["m1"]
    # Asked to stop before the report: its figures are left out, and it says so.
    assert summary["figures"] == {} and "figures_left_out" in summary
    assert "Figures were left out" in report.read_text()
    assert "report with figures left out" in out, out
    assert not (tmp_path / "m4.yaml").exists()  # the fit stopped before the next model


# identify() under run_command, the stop a real SIGTERM sent at the at-th progress call;
# then the same fit, unstopped, on the budget the stopped one used.
STEP = """
import json, os, signal, sys
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.common.entry_point import run_command
from bam_sim.models.files.parameter_file import published_named

logs = paper_like_set(published_named("mx64", "m1"), 2, duration=1.0, seed=8)
space = SearchSpace.from_names("mx64", "m1", {}, True)
calls = []
at = int(sys.argv[1])

def progress(count, best):  # once per generation, and per evaluation of a polish
    calls.append(best)
    if len(calls) == at:
        os.kill(os.getpid(), signal.SIGTERM)

def work(cancel):
    stopped = identify(space, logs, FitSettings(trials=10**6, seed=0), progress, cancel=cancel)
    direct = identify(space, logs, FitSettings(trials=stopped.trials, seed=0))
    return json.dumps({"interrupted": stopped.interrupted, "calls": len(calls),
                       "best_seen": min(calls), "mae": stopped.train_mae,
                       "same_as_unstopped": stopped.values == direct.values})

raise SystemExit(run_command("fit", work))
"""


@pytest.mark.parametrize("at", [1, 3, POLISH_AFTER + 1], ids=["first generation",
                                                            "third generation", "polish"])
def test_a_stop_ends_the_search_at_its_next_step_with_the_best_found(at):
    """The signal only requests the stop: the generation (or the step of the Levenberg-
    Marquardt polish: the first polish follows generation POLISH_AFTER) it came in is
    completed, and the search ends there with the best set seen, no traceback. Stopped
    in a generation, the set is the one the same fit finds on that budget."""
    done = subprocess.run([sys.executable, "-c", STEP, str(at)], capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert "Traceback" not in done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["interrupted"] and result["calls"] == at
    assert result["mae"] == result["best_seen"]
    if at <= POLISH_AFTER:
        assert result["same_as_unstopped"]
