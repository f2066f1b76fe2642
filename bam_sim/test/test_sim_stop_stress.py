"""The stop checker of the stress test (bam_testing.stop_stress) finds each kind of bad
stop: a hang, a wrong exit code, a process left behind, a traceback; and passes a clean one.

The commands are tiny Python children that say READY once their handlers are installed.
"""

from __future__ import annotations

import signal
import sys

import pytest

from bam_testing import stop_stress as ss

# The first signal ends it; later ones are ignored. SIG_IGN, not a Python handler: the
# interpreter resets Python handlers to SIG_DFL while it finalizes, and a second SIGTERM
# landing then would kill the process (-15) instead of leaving its exit code alone.
# The first signal is kept before anything else: signal.signal() runs the Python handlers
# of signals already received, so a SIGTERM arriving during the SIGINT handler re-enters
# it from there (exit 143 instead of 130, seen once in CI).
CLEAN = """
import signal, sys
first = []
def stop(s, f):
    first.append(s)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(128 + first[0])
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
print("READY", flush=True)
signal.pause()
"""
# Ignores the first signal (a shutdown that hangs), ends on none.
HANGS = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("READY", flush=True)
while True:
    time.sleep(1)
"""
WRONG_CODE = CLEAN.replace("sys.exit(128 + first[0])", "sys.exit(0)")
# Starts a grandchild in its own session (out of the process group), then ends cleanly.
LEAVES_A_CHILD = """
import signal, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         start_new_session=True)
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))
print("READY", flush=True)
signal.pause()
"""
TRACEBACK = CLEAN.replace("sys.exit(128 + first[0])", "1 / 0")


def stop_one(code: str, tmp_path, signals=(signal.SIGTERM,)) -> ss.Stop:
    started = ss.start("child", [sys.executable, "-c", code], tmp_path / "child.log",
                       tuple(signals))
    try:
        started.wait_output("READY")
        (stop,) = ss.stop_all([started], bound=2.0)
    finally:
        ss.kill_leftovers([started])
    return stop


@pytest.mark.parametrize("signals", ss.PATTERNS, ids=ss.pattern_name)
def test_a_clean_stop_passes(tmp_path, signals):
    stop = stop_one(CLEAN, tmp_path, signals)
    assert stop.clean, stop.describe()
    assert stop.returncode == 128 + signals[0] and stop.seconds < 2.0


def test_a_hang_is_reported_and_ended(tmp_path):
    stop = stop_one(HANGS, tmp_path)
    (problem,) = [p for p in stop.problems if "still running" in p]
    assert "py-spy dump" in problem and "<module> (<string>:" in problem, problem
    assert stop.returncode == -signal.SIGKILL  # ended by the checker


def test_a_wrong_exit_code_is_reported(tmp_path):
    stop = stop_one(WRONG_CODE, tmp_path)
    assert stop.problems == ["exit code 0, expected 143"]


def test_a_process_left_behind_is_reported_and_ended(tmp_path):
    stop = stop_one(LEAVES_A_CHILD, tmp_path)
    (problem,) = stop.problems
    assert problem.startswith("left behind: ") and "time.sleep(60)" in problem
    pid = int(problem.split()[2])
    ss.until(lambda: not any(p.pid == pid for p in ss.processes()), "the leftover's end", 5.0)


def test_a_traceback_is_reported(tmp_path):
    stop = stop_one(TRACEBACK, tmp_path)
    assert "printed a traceback" in stop.problems


def test_the_busy_core_spins_on_one_core_only():
    with ss.busy_core() as pid:
        import os

        assert len(os.sched_getaffinity(pid)) == 1
        assert any(p.pid == pid for p in ss.processes())
    assert not any(p.pid == pid for p in ss.processes())


def test_a_wait_resends_until_its_effect_shows():
    # The first two sends are "lost": only the third has an effect.
    sent: list[int] = []
    ss.until(lambda: len(sent) >= 3, "the third send", resend=lambda: sent.append(1))
    assert len(sent) == 3


def test_a_wait_that_never_holds_names_what_it_waited_for(tmp_path):
    sent: list[int] = []
    with pytest.raises(ss.NotReady, match="timed out waiting for an answer"):
        ss.until(lambda: False, "an answer", timeout=2 * ss.RESEND,
                 resend=lambda: sent.append(1))
    assert sent  # sent at once, not only after a first period
    started = ss.start("child", [sys.executable, "-c", CLEAN], tmp_path / "child.log",
                       (signal.SIGTERM,))
    try:
        with pytest.raises(AssertionError, match="child: no answer within"):
            started.wait(lambda: False, "answer", timeout=0.1)
    finally:
        ss.stop_all([started])


def test_a_command_never_ready_is_ended_with_where_it_waited(tmp_path):
    started = ss.start("child", [sys.executable, "-c", HANGS], tmp_path / "child.log",
                       (signal.SIGTERM,))
    started.wait_output("READY")
    stop = ss.never_ready(started, "no answer\nmore")
    (problem,) = stop.problems
    assert problem.startswith("never ready: no answer; py-spy dump") and "<module>" in problem
    assert started.process.returncode == -signal.SIGKILL
