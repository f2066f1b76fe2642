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
"""

from __future__ import annotations

import fcntl
import os
import termios

from bam_drivers.supervisor import ConfigurationError

CMDLINE_CHARS = 120  # characters of the holder's command line quoted in the refusal


def lock(fd: int, port: str, kind: str) -> None:
    """Lock the open tty ``fd`` for this process; ConfigurationError naming the holder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ConfigurationError(
            f"the {kind} port {port} is in use by {holder(fd)}; stop that driver, or give "
            "this one another port") from None
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
