"""await_ready_line: the ready line of a child process, earlier lines echoed, clear failures."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bam_sim.common.ready_line import NotReady, await_ready_line

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load


def child(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)


def test_returns_the_ready_line_and_echoes_earlier_ones_leaving_the_rest_unread():
    process = child("print('booting'); print('READY /tmp/x /tmp/y'); print('after')")
    seen = []
    line = await_ready_line(process, "READY", 10.0, echo=seen.append)
    assert line == "READY /tmp/x /tmp/y"
    assert seen == ["booting"]
    # Nothing after the ready line was consumed.
    assert process.stdout.read() == b"after\n"
    process.wait()


def test_a_process_exiting_first_is_reported_with_its_code():
    process = child("print('no ready here'); raise SystemExit(3)")
    with pytest.raises(NotReady, match="exited with code 3 before printing 'READY'"):
        await_ready_line(process, "READY", 10.0)


def test_a_silent_process_times_out():
    process = child("import time; time.sleep(30)")
    try:
        with pytest.raises(NotReady, match="did not print 'READY' within 0.3 s"):
            await_ready_line(process, "READY", 0.3)
    finally:
        process.kill()
        process.wait()
