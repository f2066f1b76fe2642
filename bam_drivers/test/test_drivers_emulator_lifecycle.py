"""Emulators started with --exit-with-parent never outlive their parent, even one SIGKILLed.

A parent process starts an emulator through its client (which passes its own pid), prints
the emulator's pid, and is killed with SIGKILL: the emulator must exit, cleaning up (the
port symlink, the network namespace). The EtherCAT case needs root: skipped without it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, a deadline: reached only when something is wrong

DYNAMIXEL = """
from bam_drivers.emulators.client import EmulatorProcess
emulator = EmulatorProcess()
print(emulator.pid, emulator.port, flush=True)
input()  # until killed
"""
ETHERCAT = """
from bam_drivers.emulators.ethercat_client import EthercatEmulatorProcess, NamespaceUnavailable
try:
    emulator = EthercatEmulatorProcess(interface="bamorphan0")
except NamespaceUnavailable as exc:
    print("SKIP", exc, flush=True)
    raise SystemExit(0)
print(emulator.pid, "/var/run/netns/" + emulator.namespace, flush=True)
input()  # until killed
"""


def wait_exit(pid: int, timeout: float) -> bool:
    """True once process ``pid`` (not our child) has exited; False after ``timeout`` s."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


@pytest.mark.parametrize("script", [DYNAMIXEL, ETHERCAT], ids=["dynamixel", "ethercat"])
def test_an_emulator_exits_when_its_parent_is_killed(script):
    parent = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline().split()
        if line and line[0] == "SKIP":
            pytest.skip(f"EtherCAT emulator unavailable: {' '.join(line[1:])}")
        assert len(line) == 2, f"parent said {line}"
        pid, left_behind = int(line[0]), line[1]
        assert os.path.lexists(left_behind)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=TIMEOUT)
        assert wait_exit(pid, TIMEOUT), f"emulator {pid} outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert not os.path.lexists(left_behind)  # it cleaned up on its way out
