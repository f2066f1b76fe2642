"""run_command: the exit codes and stop signals of every executable that is not a node.

The signals are real (the process signals itself) and only request the work's
cancellation: the work goes on to its next check, so nothing it writes is cut."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.entry_point import run_command
from bam_sim.common.errors import BamError

TIMEOUT = 60.0  # s: only reached when a process hangs


@pytest.fixture(autouse=True)
def _handlers_kept():
    """A command stopped here leaves the signals absorbed (its process is on its way
    out): give pytest its own handlers back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _script(body: str) -> subprocess.CompletedProcess:
    """``body`` run in a fresh interpreter (it signals itself), its output captured."""
    code = ("import os, signal\nfrom pathlib import Path\n"
            "from bam_sim.common.cancellation import Cancelled\n"
            "from bam_sim.common.entry_point import run_command\n" + textwrap.dedent(body))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT)


def test_work_done_is_0_and_bad_input_is_2_with_one_line(capsys):
    assert run_command("t", lambda cancel: "done") == 0
    assert capsys.readouterr().out == "done\n"

    def bad(cancel):
        raise BamError("--mass must be positive,\n got -1")

    assert run_command("t", bad) == 2
    err = capsys.readouterr().err
    assert err == "t: error: --mass must be positive, got -1\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_only_requests_the_stop_and_the_line_names_what_was_written(
        tmp_path, capsys, signum):
    done = tmp_path / "first.txt"
    steps = []

    def work(cancel):
        os.kill(os.getpid(), signum)  # its handler runs here, and raises nothing
        steps.append("the step went on")
        done.write_text("whole")
        try:
            cancel.check()  # the next check ends the work
        except Cancelled:
            raise Cancelled(f"stopped after writing {done.name}", [done]) from None
        steps.append("not stopped")

    assert run_command("t", work) == 128 + signum
    assert steps == ["the step went on"] and done.read_text() == "whole"
    out, err = capsys.readouterr()
    assert out == "stopped after writing first.txt\n"
    assert err == f"t: interrupted by {signal.Signals(signum).name}; written: {done}\n"


def test_the_second_signal_is_absorbed_and_the_first_one_is_the_exit_code(capsys):
    def work(cancel):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)  # absorbed: it changes nothing
        assert cancel.signum == signal.SIGTERM
        cancel.check()

    assert run_command("t", work) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "t: interrupted by SIGTERM; nothing was written\n"


def test_work_that_ends_after_a_stop_prints_its_text_and_exits_with_the_signal(capsys):
    def work(cancel):
        os.kill(os.getpid(), signal.SIGINT)  # after the work's last check
        return "wrote everything"

    assert run_command("t", work) == 130
    assert capsys.readouterr() == ("wrote everything\n", "")


def test_a_cancellation_is_not_an_exception_a_library_catches(capsys):
    """Cancelled is a BaseException: ``except Exception`` in library code lets it through."""
    def work(cancel):
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            cancel.check()
        except Exception:  # noqa: BLE001 - what a library's error handling looks like
            return "swallowed"

    assert run_command("t", work) == 143
    assert capsys.readouterr().out == ""


def test_a_signal_after_the_stop_never_kills_the_process():
    """A second SIGTERM once the command has stopped (its shutdown done, the process on its
    way out) leaves it to exit 143 by itself, not to die by the signal (-15)."""
    result = _script("""
        def work(cancel):
            os.kill(os.getpid(), signal.SIGTERM)
            cancel.check()
        code = run_command("t", work)
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        print("still here")
        raise SystemExit(code)
    """)
    assert result.returncode == 143, result.stderr
    assert result.stdout == "still here\n"
    assert result.stderr == "t: interrupted by SIGTERM; nothing was written\n"


def test_without_a_stop_the_handlers_are_given_back():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert run_command("t", lambda cancel: None) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_cancellation_calls_nothing_that_could_wait_for_a_lock():
    """A signal's handler requests the cancellation between two bytecodes of the main
    thread, possibly inside its wait() or inside another request(): a lock taken there
    again waits forever (seen: a second SIGTERM inside the first one's Event.set). Every
    call the token's own code makes, traced, is one of a few that take no lock."""
    import bam_sim.common.cancellation as module

    calls = set()

    def trace(frame, event, arg):
        if event == "c_call" and frame.f_code.co_filename == module.__file__:
            calls.add(arg.__name__)
        elif event == "call" and frame.f_back.f_code.co_filename == module.__file__:
            calls.add(frame.f_code.co_qualname)

    cancel = Cancellation()
    sys.setprofile(trace)
    try:
        cancel.wait(0.03)
        cancel.request(signal.SIGTERM)
        cancel.request(signal.SIGINT)
        set_and_seen = cancel.is_set() and cancel.wait(3600.0)
        try:
            cancel.check()
        except Cancelled:
            pass
    finally:
        sys.setprofile(None)
    assert set_and_seen
    assert calls - {"monotonic", "sleep", "min", "Cancelled.__init__",
                    "Cancelled.__init__.<locals>.<genexpr>"} == set(), calls


def test_wait_returns_once_requested_and_after_its_timeout_otherwise():
    cancel = Cancellation()
    assert cancel.wait(0.0) is False and cancel.reason == "" and cancel.signum == 0
    cancel.request("the operator asked")
    cancel.request(signal.SIGINT)  # later requests change nothing
    assert cancel.wait(3600.0) is True  # at once: it is set
    assert (cancel.reason, cancel.signum) == ("the operator asked", 0)
    with pytest.raises(Cancelled):
        cancel.check()


def test_simulate_stopped_during_a_rollout_writes_nothing(tmp_path, capsys, monkeypatch):
    """Ctrl-C (a real SIGINT) during the first rollout: it completes, the next check ends
    the command with 130 and one line, and no figure is written."""
    from bam_sim import simulate_cli

    real = simulate_cli.rollout

    def stopped_in(params, log):
        os.kill(os.getpid(), signal.SIGINT)
        return real(params, log)

    monkeypatch.setattr(simulate_cli, "rollout", stopped_in)
    out = tmp_path / "sim.png"
    assert simulate_cli.main(["--output", str(out)]) == 130
    assert capsys.readouterr().err == "simulate: interrupted by SIGINT; nothing was written\n"
    assert not out.exists()


def test_simulate_stopped_while_drawing_keeps_that_figure_and_names_it(
        tmp_path, capsys, monkeypatch):
    """SIGTERM while the first figure is drawn: it is written whole, the diagram is not
    drawn, and the last line names the figure."""
    from bam_sim import simulate_cli

    real = simulate_cli._plot

    def stopped_in(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        real(*args)

    monkeypatch.setattr(simulate_cli, "_plot", stopped_in)
    out, diagram = tmp_path / "sim.png", tmp_path / "diagram.png"
    assert simulate_cli.main(["--output", str(out), "--diagram", str(diagram)]) == 143
    assert capsys.readouterr().err == f"simulate: interrupted by SIGTERM; written: {out}\n"
    assert out.read_bytes()[:4] == b"\x89PNG" and not diagram.exists()
