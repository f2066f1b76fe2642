"""`bench serve` killed with SIGKILL leaves no emulator running (--exit-with-parent)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bam_sim.common.ready_line import await_ready_line
from bam_testing.ros_context import ros_domain

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 60.0  # s, for the command to start, or the orphan to notice
CODE = "import sys; from bam_bringup.runner import main; sys.exit(main(sys.argv[1:]))"


def _children(pid: int) -> dict[int, str]:
    """{pid: command line} of the processes whose parent is ``pid`` (from /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes() \
                    .replace(b"\0", b" ").decode()
        except (OSError, IndexError):  # gone while listed
            continue
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_an_emulator_ends_with_a_killed_bench(tmp_path):
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain(3)),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    process = subprocess.Popen(
        [sys.executable, "-c", CODE, "serve", "sim:=false", "hardware:=emulated",
         f"port:={tmp_path / 'ttyDXL'}", "namespace:=kill_test"], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    pid = None
    try:
        await_ready_line(process, "bench: running", TIMEOUT)
        emulators = {pid: line for pid, line in _children(process.pid).items()
                     if "serial_servo_emulator" in line}
        assert len(emulators) == 1, _children(process.pid)
        (pid, line), = emulators.items()
        assert f"--exit-with-parent {process.pid}" in line, line
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(pid), f"the emulator {pid} outlived the killed bench"
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        if pid is not None and _running(pid):  # never left behind, even by a failed test
            os.kill(pid, signal.SIGKILL)


def test_a_killed_recording_is_recovered_up_to_its_last_flush(tmp_path):
    """The recorder puts what it received into the file every second: killed with SIGKILL,
    its bag holds its header and those chunks, and recover finds their messages."""
    from bam_identify.data.bag_recovery import needs_recovery, recover_bag

    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain(4)),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    bag = tmp_path / "bag"
    process = subprocess.Popen(
        [sys.executable, "-c", CODE, "serve", "record:=true", f"bag:={bag}",
         "namespace:=flush_test"], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        await_ready_line(process, "bench: running", TIMEOUT)
        # the header is on disk as soon as the bag is open (rosbags alone keeps it in a
        # buffer until the first 1 MiB chunk: a recording killed before leaves 0 bytes)
        (mcap,) = bag.glob("*.mcap")
        assert mcap.read_bytes().startswith(b"\x89MCAP0\r\n\x01")
        deadline = time.monotonic() + TIMEOUT
        # a chunk is in the file once it outgrows the header, schemas and channels
        while sum(f.stat().st_size for f in bag.glob("*.mcap")) < 4096:
            assert time.monotonic() < deadline, "the recorder flushed nothing"
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=TIMEOUT)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    assert needs_recovery(bag)
    counts = recover_bag(bag).counts
    assert any(topic.endswith("joint_states") and n > 0 for topic, n in counts.items()), counts
