"""What the tests of every writer put at an output path: a device node, a named pipe, a
socket, and a full disk (a small tmpfs), each a real one, never a simulated error.

A device node needs ``mknod`` (root, or CAP_MKNOD) and a full disk a ``tmpfs`` mount
(root, or CAP_SYS_ADMIN): where the machine refuses them, the test is skipped with why
(unittest.SkipTest, which pytest honours).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import SkipTest

FULL = (1, 7)  # the major and minor numbers of /dev/full
DISK_BYTES = 256 * 1024  # the tmpfs: small enough to fill at once


def device_node(path: Path) -> Path:
    """A character device at ``path``, the same device as /dev/full (writes to it fail,
    so a writer that wrote into it rather than replacing it would be seen too)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*FULL))
    except PermissionError as exc:
        raise SkipTest(f"mknod refused here ({exc.strerror}): device nodes need root") \
            from None
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@contextmanager
def unix_socket(path: Path) -> Iterator[Path]:
    """A socket file at ``path``, bound (and listening) while the block runs."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
        sock.listen(1)
        yield path


def same_node(path: Path, before: os.stat_result) -> bool:
    """Whether ``path`` is still the very node ``before`` was (not replaced by a file)."""
    now = os.lstat(path)
    return (now.st_ino, now.st_dev, stat.S_IFMT(now.st_mode), now.st_rdev) == (
        before.st_ino, before.st_dev, stat.S_IFMT(before.st_mode), before.st_rdev)


class SmallDisk:
    """A tmpfs of :data:`DISK_BYTES` mounted at ``root``; :meth:`fill` leaves no room."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def fill(self) -> None:
        """Write a filler file until the disk refuses (ENOSPC): every later write of a
        byte then fails, while names (empty files, folders) can still be made."""
        with open(self.root / ".filler", "wb", buffering=0) as f:
            block = b"\0" * 4096
            try:
                while True:
                    f.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
        try:
            with open(self.root / ".probe", "wb") as probe:
                probe.write(b"x")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        else:
            raise AssertionError(f"{self.root} still takes a byte once filled")
        finally:
            (self.root / ".probe").unlink(missing_ok=True)

    def files(self) -> list[str]:
        """What is on the disk, but the filler: names relative to its root."""
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*")
                      if p.name != ".filler")


@contextmanager
def small_disk(folder: Path) -> Iterator[SmallDisk]:
    """A :class:`SmallDisk` mounted on the new folder ``folder``, unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs",
                              str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        raise SkipTest(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): a full disk "
                       "needs root")
    try:
        yield SmallDisk(folder)
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)
