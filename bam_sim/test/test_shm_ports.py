"""Fast DDS shared-memory ports left half-made by a killed process (bam_sim.common.shm_ports):
found, removed when no process uses them, and a node starts on a domain that has them.

The half-made state is the one found on a CI machine: an empty segment, its creation
semaphore taken and no lock file (a participant killed while it built the port). Before the
fix, each start that drew that port waited for ever inside Fast DDS.
"""

from __future__ import annotations

import os
import signal
import struct
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_prefix

from bam_sim.common import shm_ports
from bam_testing import stop_stress as ss
from bam_testing.ros_context import ros_domain

SEGMENT = 52400  # bytes of a Fast DDS 2.14 port segment (as found in /dev/shm)


def segment(root: Path, number: int, state: int | None) -> Path:
    """A port segment whose boost initialisation state is ``state`` (None: empty file)."""
    path = root / f"fastrtps_port{number}"
    path.write_bytes(b"" if state is None else struct.pack("<I", state).ljust(SEGMENT, b"\0"))
    return path


def semaphore(root: Path, number: int, value: int) -> Path:
    """A glibc named semaphore (32 bytes, the value in the first four)."""
    path = root / f"sem.fastrtps_port{number}_mutex"
    path.write_bytes(struct.pack("<I", value).ljust(32, b"\0"))
    return path


def half_made(root: Path, number: int) -> list[Path]:
    """The files of a port whose creator was killed half way, as found: an empty segment,
    its semaphore taken, and no lock file yet (with one, Fast DDS would tell it dead)."""
    return [segment(root, number, None), semaphore(root, number, 0)]


def test_half_made_ports_that_nobody_uses_are_removed_and_nothing_else(tmp_path):
    empty = half_made(tmp_path, 7411)
    initialising = [segment(tmp_path, 7413, 1)]  # killed after its size was set
    taken = [segment(tmp_path, 7415, shm_ports.INITIALISED), semaphore(tmp_path, 7415, 0)]
    healthy = [segment(tmp_path, 7417, shm_ports.INITIALISED), semaphore(tmp_path, 7417, 1),
               tmp_path / "fastrtps_port7417_el"]
    healthy[2].write_bytes(b"")
    in_use = half_made(tmp_path, 7419)
    others = [tmp_path / "fastrtps_0123456789abcdef", tmp_path / "sem.other_mutex"]
    for path in others:
        path.write_bytes(b"")
    with open(in_use[0], "rb"):  # a process building port 7419 right now holds it open
        removed = shm_ports.clear_dead_ports(tmp_path)
    assert removed == [7411, 7413, 7415]
    assert not any(p.exists() for p in empty + initialising + taken)
    assert all(p.exists() for p in healthy + in_use + others)


def test_a_port_rebuilt_during_the_scan_of_proc_is_kept(tmp_path, monkeypatch):
    # While /proc is read, a starting participant removes the dead port and builds it again.
    rebuilt = half_made(tmp_path, 7421)
    finished = half_made(tmp_path, 7423)

    def slow_scan(proc):
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        for path in half_made(fresh, 7421):  # new files, not yet initialised: made while
            os.replace(path, tmp_path / path.name)  # the old exist, so on other inodes
        segment(tmp_path, 7423, shm_ports.INITIALISED)  # its creator finished it
        semaphore(tmp_path, 7423, 1)
        return set()

    monkeypatch.setattr(shm_ports, "files_in_use", slow_scan)
    assert shm_ports.clear_dead_ports(tmp_path) == []
    assert all(p.exists() for p in rebuilt + finished)


def test_a_mapped_port_counts_as_used(tmp_path):
    import mmap

    files = half_made(tmp_path, 7421)
    with open(files[1], "r+b") as f:  # closed at once: a participant keeps only the mapping
        mapping = mmap.mmap(f.fileno(), 32)
    try:
        assert shm_ports.clear_dead_ports(tmp_path) == []
    finally:
        mapping.close()
    assert shm_ports.clear_dead_ports(tmp_path) == [7421]


def test_nothing_is_read_from_proc_without_a_half_made_port(tmp_path, monkeypatch):
    def unread(proc):
        raise AssertionError("/proc read with no half-made port")

    segment(tmp_path, 7411, shm_ports.INITIALISED)
    with monkeypatch.context() as patch:
        patch.setattr(shm_ports, "files_in_use", unread)
        assert shm_ports.clear_dead_ports(tmp_path) == []


def test_a_port_mapped_by_a_process_of_the_given_proc_is_kept(tmp_path):
    """The mappings as /proc/<pid>/maps lists them, a deleted file's name included."""
    shm = tmp_path / "shm"
    shm.mkdir()
    kept, deleted, free = (half_made(shm, n)[0] for n in (7411, 7413, 7415))
    process = tmp_path / "proc" / "4242"
    (process / "fd").mkdir(parents=True)
    (process / "maps").write_text(
        f"7f00-7f10 rw-s 00000000 00:19 12 {kept}\n"
        f"7f10-7f20 rw-s 00000000 00:19 13 {deleted} (deleted)\n"
        "7f20-7f30 r-xp 00000000 00:19 14\n")  # anonymous: five fields
    assert shm_ports.clear_dead_ports(shm, proc=tmp_path / "proc") == [7415]
    assert kept.exists() and deleted.exists() and not free.exists()


@pytest.mark.live
@pytest.mark.skipif(not shm_ports.uses_fast_dds(), reason="the rmw is not Fast DDS")
def test_a_node_starts_on_a_domain_with_half_made_ports(tmp_path):
    domain = ros_domain(3)
    base = 7400 + 250 * domain + 10  # Fast DDS: the unicast ports of participant p are
    numbers = [base + 2 * p + k for p in range(8) for k in (0, 1)]  # base + 2p and + 1
    for number in numbers:
        half_made(shm_ports.SHM, number)
    pendulum = Path(get_package_prefix("bam_sim")) / "lib" / "bam_sim" / "pendulum"
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONUNBUFFERED": "1",
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    started = ss.start("pendulum", [str(pendulum)], tmp_path / "pendulum.log",
                       (signal.SIGINT,), env)
    try:
        started.wait_output("[pendulum]: ", timeout=60.0)  # its first line, after the DDS start
        (stop,) = ss.stop_all([started])
    finally:
        ss.kill_leftovers([started])
        shm_ports.clear_dead_ports()  # ours, if the node did not remove them
    assert stop.clean, stop.describe()
