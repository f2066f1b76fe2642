"""Ctrl-C in the first moments of ``fit`` and ``recover``, as installed: exit 130, no
traceback, at most one line.

The console script is started in a session of its own; each moment is an event read from
/proc (the stop handlers installed, a library mapped) or a line the command prints. The
process is frozen (SIGSTOP) when the event is seen, signalled, and let go: the signal lands
in that state, whatever the machine's speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from identify_cases import write_m1_logs

from bam_testing.processes import read_until

pytestmark = pytest.mark.live  # processes and signals: rerun under load

TIMEOUT = 300.0  # s: only reached when something is wrong


def script(name: str) -> str:
    from ament_index_python.packages import get_package_prefix

    return str(Path(get_package_prefix("bam_identify")) / "lib" / "bam_identify" / name)


def caught(pid: int) -> int:
    """The mask of the signals ``pid`` catches (SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


def handlers_installed(process: SimpleNamespace) -> bool:
    """SIGTERM caught: the project's quiet stop is in place (Python's own startup catches
    only SIGINT)."""
    return bool(caught(process.pid) & 1 << (signal.SIGTERM - 1))


def mapped(library: str) -> Callable[[SimpleNamespace], bool]:
    def loaded(process: SimpleNamespace) -> bool:
        return library in Path(f"/proc/{process.pid}/maps").read_text()
    loaded.__name__ = f"{library} mapped"
    return loaded


def said(text: str) -> Callable[[SimpleNamespace], bool]:
    def line(process: SimpleNamespace) -> bool:
        process.said += read_until(process, text, TIMEOUT)  # its stderr, the line waited for
        return True
    line.__name__ = f"'{text}' said"
    return line


def stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def interrupt_at(argv: list[str], moment: Callable[[SimpleNamespace], bool]
                 ) -> tuple[int, str]:
    """Start ``argv``, SIGINT it at ``moment``; its exit code and its stderr."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    # What a moment looks at: /proc by its pid, its stderr (as read_until's "stdout").
    watched = SimpleNamespace(pid=process.pid, poll=process.poll, stdout=process.stderr,
                              said="")
    try:
        deadline = time.monotonic() + TIMEOUT
        while not moment(watched):
            assert process.poll() is None, f"ended before {moment.__name__}"
            assert time.monotonic() < deadline, f"no {moment.__name__} within {TIMEOUT} s"
            time.sleep(0.001)  # a poll of /proc; orders nothing
        os.kill(process.pid, signal.SIGSTOP)
        while not stopped(process.pid):
            time.sleep(0.001)
        os.kill(process.pid, signal.SIGINT)
        os.kill(process.pid, signal.SIGCONT)
        _, err = process.communicate(timeout=TIMEOUT)
        return process.returncode, watched.said + err.decode()
    finally:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return write_m1_logs(tmp_path_factory.mktemp("logs"))


def check_quiet(program: str, code: int, err: str) -> None:
    assert code == 128 + signal.SIGINT, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = err.strip().splitlines()
    # Stopped while loading: nothing at all; stopped in its work: its one line.
    assert not lines or lines[-1] == f"{program}: interrupted by SIGINT; nothing was written", err


FIT_MOMENTS = [handlers_installed, mapped("_multiarray_umath"), mapped("libllvmlite"),
               said("warning: ")]


@pytest.mark.parametrize("moment", FIT_MOMENTS, ids=lambda m: m.__name__)
def test_ctrl_c_early_in_fit_is_quiet(log_dir, tmp_path, moment):
    argv = [script("fit"), "--logs", str(log_dir), "--models", "m1", "--trials", "100000",
            "--output", str(tmp_path / "{model}.yaml"), "--report", str(tmp_path / "report"),
            "--quiet"]
    code, err = interrupt_at(argv, moment)
    check_quiet("fit", code, err)
    assert not list(tmp_path.iterdir())  # stopped before any set was found: nothing written


@pytest.mark.parametrize("moment", [handlers_installed, mapped("_multiarray_umath")],
                         ids=lambda m: m.__name__)
def test_ctrl_c_early_in_recover_is_quiet(tmp_path, moment):
    code, err = interrupt_at([script("recover"), str(tmp_path / "bag")], moment)
    check_quiet("recover", code, err)
