"""Emulators started with --exit-with-parent never outlive their parent, even one SIGKILLed.

A parent process starts an emulator through its client (which passes its own pid), prints
the emulator's pid, and is killed with SIGKILL: the emulator must exit, cleaning up (the
port symlink, the network namespace). The EtherCAT case needs root: skipped without it.
An emulator's --control path is its own socket: it removes nothing else there.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys

import pytest

from bam_testing.processes import read_until

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


def emulator(tmp_path, control) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bam_drivers.emulators.serial_servo_emulator", "--port",
         str(tmp_path / "tty"), "--control", str(control), "--exit-with-parent"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def refusal(child: subprocess.Popen) -> str:
    """The stderr of an emulator that must refuse to start; one that serves is killed."""
    try:
        _, err = child.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        child.kill()
        raise AssertionError(f"the emulator started: {child.communicate()}") from None
    assert child.returncode == 2 and err.count("\n") == 1, err
    return err


def test_a_control_path_that_is_no_stale_socket_is_refused_and_left_as_it_is(tmp_path):
    """--control at a file, or at another emulator's live socket: exit 2, one line, the
    file or socket as it was (the emulator used to delete whatever was there)."""
    taken = tmp_path / "control"
    taken.write_text("a user's file")
    err = refusal(emulator(tmp_path, taken))
    assert f"--control {taken} exists and is not a socket; it is left as it is" in err
    assert taken.read_text() == "a user's file" and not (tmp_path / "tty").exists()
    live = tmp_path / "live.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(str(live))
        other.listen(1)
        before = os.lstat(live).st_ino
        assert "is the socket of a running emulator" in refusal(emulator(tmp_path, live))
        assert os.lstat(live).st_ino == before


def test_a_dead_emulators_socket_is_replaced_and_only_its_own_removed(tmp_path):
    """The socket a killed emulator left (nobody listens) is taken over; at the end the
    emulator removes its socket, and nothing that is not its own."""
    stale = tmp_path / "control.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(stale))  # closed without unlinking: what a SIGKILL leaves
    child = emulator(tmp_path, stale)
    try:
        read_until(child, "READY", TIMEOUT)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(stale))  # its own socket, listening
            client.sendall(b'{"cmd": "stop"}\n')
        assert child.wait(TIMEOUT) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert not stale.exists() and not (tmp_path / "tty").exists()
