"""One driver per serial port: an exclusive lock on the open tty, and who holds it.

Two drivers on one bus would both write goals and torque enables to the same
servos. A driver that opens a port therefore takes

* an ``flock`` (exclusive, non-blocking) on the open file: refused to any
  other process that asks for it, root included (every driver here, pyserial
  with ``exclusive=True``), and released by the kernel when the holder dies,
  even by SIGKILL;
* the tty's exclusive mode (``TIOCEXCL``): the kernel then refuses any other
  ``open`` of the tty (EBUSY) to processes without CAP_SYS_ADMIN, whatever
  their program. The mode belongs to the tty, not to the file: it is cleared
  (``TIOCNXCL``) before the port is closed, since a pseudo-terminal whose
  other side stays open (the emulator) would otherwise keep it.

The holder of a refused lock is named from ``/proc/locks``.

Both go with the open tty, and a driver closes its port to reopen it after a lost link.
So that no second driver takes the bus in that gap (seen under load: a link counted lost
after 0.5 s without replies, and another driver started then ran the same servos), a
driver also holds a :class:`Claim` from its first open to its shutdown: an flock on a lock
file named for the device, in ``/run/lock`` as serial tools do (else the temporary folder;
``BAM_LOCK_DIR`` names another folder: the drivers that share one folder exclude each
other, so a container or a test session that gives its own drivers their own folder keeps
them apart from the host's. Two test sessions at once need that: a pseudo-terminal's
number is freed when its emulator's port vanishes and goes to the next one opened, and a
driver of the other session holding it across its reopen refused the newcomer's driver).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import termios
from pathlib import Path

from bam_drivers.supervisor import ConfigurationError

CMDLINE_CHARS = 120  # characters of the holder's command line quoted in the refusal
LOCK_DIRS = ("/run/lock", tempfile.gettempdir())  # where a claim's lock file goes, in order
LOCK_DIR_VARIABLE = "BAM_LOCK_DIR"  # a folder of claims instead (module docstring)


def refused(port: str, kind: str, fd: int) -> ConfigurationError:
    return ConfigurationError(f"the {kind} port {port} is in use by {holder(fd)}; stop that "
                              "driver, or give this one another port")


class Claim:
    """This driver's hold on its port from its first open to its shutdown, across the
    reopenings after a lost link (module docstring)."""

    def __init__(self, port: str, kind: str) -> None:
        self.port, self.kind = port, kind
        self._fd: int | None = None

    def take(self) -> None:
        """Hold the port, once; ConfigurationError naming the driver that holds it."""
        if self._fd is not None:
            return
        path = lock_file(self.port)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise ConfigurationError(f"cannot create the lock file {path} of the {self.kind} "
                                     f"port {self.port}: {exc.strerror}; make its folder "
                                     f"writable, or name another in {LOCK_DIR_VARIABLE}"
                                     ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            error = refused(self.port, self.kind, fd)
            os.close(fd)
            raise error from None
        self._fd = fd

    def release(self) -> None:
        """Let the port go (the lock file stays: removing it would race another claim)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:  # a bus dropped without its driver's shutdown (a test's)
        self.release()


def lock_file(port: str) -> Path:
    """The lock file of ``port``: named for the device the path leads to (a symlink such as
    /dev/serial/by-id/... or an emulator's link and its /dev/pts/N share one)."""
    name = "bam-" + os.path.realpath(port).strip("/").replace("/", "-") + ".lock"
    given = os.environ.get(LOCK_DIR_VARIABLE, "")
    if given:
        return Path(given) / name
    for folder in LOCK_DIRS:
        if os.access(folder, os.W_OK | os.X_OK):
            return Path(folder) / name
    return Path(LOCK_DIRS[-1]) / name


def lock(fd: int, port: str, kind: str) -> None:
    """Lock the open tty ``fd`` for this process; ConfigurationError naming the holder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise refused(port, kind, fd) from None
    try:
        fcntl.ioctl(fd, termios.TIOCEXCL)
    except OSError:
        pass  # not a tty (a test double): the flock still stands


def unlock(fd: int) -> None:
    """Leave the tty's exclusive mode (the flock goes with the file)."""
    try:
        fcntl.ioctl(fd, termios.TIOCNXCL)
    except OSError:
        pass


def holder(fd: int) -> str:
    """"process PID (command line)" of the flock on the file of ``fd``, or a vaguer phrase."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        words = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:05:87 0 EOF"; "->" marks a blocked waiter
        if len(words) >= 6 and words[1] == "FLOCK" and words[5] == key:
            pid = int(words[4])
            return f"process {pid} ({command_line(pid)})"
    return "another process"


def command_line(pid: int) -> str:
    """The command line of ``pid``, shortened; "?" when it cannot be read."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return text if len(text) <= CMDLINE_CHARS else text[:CMDLINE_CHARS - 3] + "..."
