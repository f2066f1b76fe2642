"""Fast DDS shared-memory ports left half-made by a killed process: found and removed before
a DDS participant is created, so that a node starts instead of hanging.

Fast DDS, ROS 2's default middleware, gives each participant shared-memory *ports* in
``/dev/shm``. Port ``N`` is three files:

- ``fastrtps_port<N>``: the segment; boost.interprocess writes an initialisation state in
  its first four bytes and sets it to :data:`INITIALISED` once the segment is built;
- ``sem.fastrtps_port<N>_mutex``: a POSIX named semaphore guarding its creation (value 0:
  taken);
- ``fastrtps_port<N>_el``: a lock file.

Fast DDS tells a dead port by its lock file, which no living process holds. A process killed
while it creates port ``N`` (SIGKILL, an OOM kill, a container stopped) can leave the segment
empty or never initialised before the lock file exists. Every later participant that opens
port ``N`` then waits for ever in ``create_participant``, in native code (Fast DDS 2.14,
Jazzy): the node never starts, and as Python's signal handlers never run, SIGINT and
SIGTERM do not stop it. Port numbers follow from the domain id and the participant index,
so one such port hangs a start in every later run on that domain.

:func:`clear_dead_ports` removes every port that is half-made and that no living process has
open or mapped; Fast DDS builds it again.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SHM = Path("/dev/shm")
INITIALISED = 2  # boost.interprocess managed_open_or_create_impl: InitializedSegment
_FILE = re.compile(r"(?:sem\.)?fastrtps_port(\d+)(?:_el|_mutex)?\Z")


@dataclass
class Port:
    """The files of one Fast DDS shared-memory port."""

    number: int
    files: list[Path] = field(default_factory=list)

    def file(self, name: str) -> Path | None:
        return next((f for f in self.files if f.name == name), None)

    @property
    def segment(self) -> Path | None:
        return self.file(f"fastrtps_port{self.number}")

    @property
    def mutex(self) -> Path | None:
        return self.file(f"sem.fastrtps_port{self.number}_mutex")

    def half_made(self) -> bool:
        """The segment never finished its initialisation, or its creation lock is taken."""
        return ((self.segment is not None and _head_u32(self.segment) != INITIALISED)
                or (self.mutex is not None and _head_u32(self.mutex) == 0))


def _head_u32(path: Path) -> int | None:
    """The file's first four bytes as a little-endian unsigned int; None if shorter or gone
    (a glibc semaphore keeps its value there, boost its initialisation state)."""
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError:
        return None
    return struct.unpack("<I", head)[0] if len(head) == 4 else None


def ports(root: Path = SHM) -> list[Port]:
    """Every Fast DDS port under ``root`` whose files this user may remove."""
    found: dict[int, Port] = {}
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        match = _FILE.match(entry.name)
        if match and _removable(entry):
            number = int(match.group(1))
            found.setdefault(number, Port(number)).files.append(Path(entry.path))
    return [found[n] for n in sorted(found)]


def _removable(entry: os.DirEntry) -> bool:
    """/dev/shm is sticky: only the owner (or root) may remove a file there."""
    try:
        return os.geteuid() == 0 or entry.stat(follow_symlinks=False).st_uid == os.geteuid()
    except OSError:
        return False


def files_in_use(proc: Path = Path("/proc")) -> set[str]:
    """The paths that a living process has open or mapped (the processes this user may read).

    Fast DDS keeps a port's segment and semaphore mapped for as long as it uses them, and a
    process building one holds it open from its first system call.
    """
    used: set[str] = set()
    for pid in (p for p in _listdir(proc) if p.isdigit()):
        used.update(_open_files(proc / pid))
        used.update(_mapped_files(proc / pid))
    return used


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _open_files(process: Path) -> Iterable[str]:
    fds = process / "fd"
    for fd in _listdir(fds):
        try:
            yield os.readlink(fds / fd)
        except OSError:  # closed since, or the process ended
            continue


def _mapped_files(process: Path) -> Iterable[str]:
    try:
        text = (process / "maps").read_text()
    except OSError:
        return
    for line in text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6:
            yield parts[5].removesuffix(" (deleted)")


def clear_dead_ports(root: Path = SHM, proc: Path = Path("/proc")) -> list[int]:
    """Remove each half-made port under ``root`` that no living process uses; the numbers
    of those removed. Nothing is read from ``proc`` unless a half-made port is found.

    The scan of ``proc`` takes seconds on a loaded machine, and a participant starting
    meanwhile may finish or rebuild a suspect port. Found half-made may be a port that a
    sibling process is building at that moment: its semaphore taken, its segment not yet
    there. Released during the scan, the semaphore may be mapped by nobody; removing it
    and the lock file would leave the sibling listening on a port that the next sender
    takes for dead and builds again. So a port is removed only if, after the scan, it is
    still half-made and its files are the ones found (same inode, same last write).
    """
    suspects = [(port, _identity(port)) for port in ports(root) if port.half_made()]
    if not suspects:
        return []
    used = files_in_use(proc)
    removed = []
    for port, identity in suspects:
        if any(str(f) in used for f in port.files):
            continue  # being built or used right now: not ours to judge
        if not port.half_made() or _identity(port) != identity:
            continue  # finished or rebuilt during the scan
        for f in port.files:
            f.unlink(missing_ok=True)
        removed.append(port.number)
    return removed


def _identity(port: Port) -> tuple:
    """Inode and last write of each file of ``port`` (None for one gone)."""
    def one(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns
    return tuple(one(f) for f in port.files)


def uses_fast_dds() -> bool:
    """The rmw that rclpy loads is Fast DDS (ROS 2's default when none is named)."""
    return os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp").startswith("rmw_fastrtps")


# How the line that reports a cleanup starts: a notice about the machine's state, not an
# error of the command (the bad-input tests tell the two apart by it).
CLEARED_NOTICE = "[WARN] removed Fast DDS shared-memory port"


def before_participant() -> None:
    """Call before the first DDS participant of a process: clears dead ports, one line on
    standard error naming them (the node's logger does not exist yet)."""
    if not (uses_fast_dds() and SHM.is_dir()):
        return
    removed = clear_dead_ports()
    if removed:
        numbers = ", ".join(map(str, removed))
        print(f"{CLEARED_NOTICE}{'s' if len(removed) > 1 else ''} {numbers} from {SHM}: "
              "a killed process had left them half-made, and they would have hung this "
              "start", file=sys.stderr, flush=True)
