"""Start and steer an ``ethercat_emulator`` process from Python.

The emulator is :mod:`bam_drivers.emulators.ethercat_emulator`.

Example::

    with EthercatEmulatorProcess(drives=("erob80_100",), mass=3.1) as emulator:
        master = pysoem.Master()
        master.open(emulator.interface)            # the master's end of the veth pair
        ...
        emulator.truth()[1]["position"]            # rad, ground truth of slave 1
        emulator.fault(1, 0x2310)                  # over-current on slave 1

Raises :class:`NamespaceUnavailable` (with the emulator's one-line reason)
when the process cannot create its network namespace, e.g. without root:
tests skip on it. Control commands are JSON lines over the emulator's Unix
socket, one connection per call; the process's stderr goes to a temporary
file whose tail is quoted when it fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping

from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line

STDERR_TAIL = 2000  # characters of stderr quoted in errors
NO_NAMESPACE = 3  # the emulator's exit code when it cannot create the namespace


class EmulatorError(RuntimeError):
    """The emulator process failed to start, died, or refused a command."""


class NamespaceUnavailable(EmulatorError):
    """The emulator cannot create a network namespace here (not root)."""


class EthercatEmulatorProcess:
    """A running EtherCAT emulator; a context manager that stops it on exit."""

    def __init__(self, drives: Iterable[str] = ("erob80_100",), physics: str = "m6", *,
                 mass: float = 0.0, length: float = 0.5, arm_mass: float = 0.0,
                 positions: Iterable[float] = (), temperature: float = 35.0,
                 cycle_rate: float = 1000.0, seed: int = 0, drop: float = 0.0,
                 corrupt_wkc: float = 0.0, faults: Mapping[int, int] | None = None,
                 interface: str | None = None, priority: int = 0,
                 startup_timeout: float = 60.0) -> None:
        args = ["--drives", *drives, "--physics", physics, "--mass", repr(float(mass)),
                "--length", repr(float(length)), "--arm-mass", repr(float(arm_mass)),
                "--temperature", repr(float(temperature)),
                "--cycle-rate", repr(float(cycle_rate)), "--seed", str(seed),
                "--drop", repr(float(drop)), "--corrupt-wkc", repr(float(corrupt_wkc)),
                "--priority", str(int(priority)), "--exit-with-parent"]
        positions = [repr(float(p)) for p in positions]
        if positions:
            args += ["--positions", *positions]
        for slave, code in (faults or {}).items():
            args += ["--fault", f"{int(slave)}:{int(code)}"]
        if interface is not None:
            args += ["--interface", interface]
        self.interface = self.control = self.namespace = ""
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bam_drivers.emulators.ethercat_emulator", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr)
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        try:
            line = await_ready_line(self._process, "READY", timeout)
        except NotReady as exc:
            if self._process.poll() == NO_NAMESPACE:
                raise NamespaceUnavailable(self.stderr_tail()) from None
            raise EmulatorError(f"emulator {exc}; stderr: {self.stderr_tail()}") from None
        words = line.split()
        if len(words) != 4:
            raise EmulatorError(f"unexpected emulator output {line!r}")
        self.interface, self.control, self.namespace = words[1:]

    def stderr_tail(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode(errors="replace").strip() or "(empty)"

    @property
    def pid(self) -> int:
        return self._process.pid

    def stop(self, timeout: float = 5.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout``; the exit code."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        return self._process.returncode

    def __enter__(self) -> EthercatEmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- control -----------------------------------------------------------------------

    def call(self, request: dict, timeout: float = 5.0) -> object:
        if self._process.poll() is not None:
            raise EmulatorError(f"emulator exited with code {self._process.returncode}; "
                                f"stderr: {self.stderr_tail()}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(self.control)
            sock.sendall(json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as stream:
                line = stream.readline()
        if not line:
            raise EmulatorError(f"emulator closed the control connection on {request}")
        reply = json.loads(line)
        if not reply["ok"]:
            raise BamError(f"emulator refused {request.get('cmd')}: {reply['error']}")
        return reply["result"]

    def truth(self) -> dict[int, dict]:
        """Ground truth per slave position (1-based): joint state, drive and ESC state."""
        return {int(k): v for k, v in self.call({"cmd": "truth"}).items()}

    def stats(self) -> dict:
        return self.call({"cmd": "stats"})

    def inject(self, drop: float | None = None, corrupt_wkc: float | None = None) -> dict:
        request: dict = {"cmd": "inject"}
        if drop is not None:
            request["drop"] = float(drop)
        if corrupt_wkc is not None:
            request["corrupt_wkc"] = float(corrupt_wkc)
        return self.call(request)

    def link(self, up: bool, seconds: float | None = None) -> None:
        """The link down or up; down for ``seconds`` then up again when given."""
        self.call({"cmd": "link", "up": bool(up), "seconds": seconds})

    def silence(self, seconds: float) -> None:
        """No frame reaches the slaves for ``seconds`` (the master seems silent to them)."""
        self.call({"cmd": "silence", "seconds": float(seconds)})

    def fault(self, slave: int, code: int) -> None:
        self.call({"cmd": "fault", "slave": int(slave), "code": int(code)})

    def clear_fault(self, slave: int) -> None:
        self.call({"cmd": "clear_fault", "slave": int(slave)})

    def set_position(self, slave: int, position: float, velocity: float = 0.0) -> None:
        self.call({"cmd": "set_position", "slave": int(slave), "position": float(position),
                   "velocity": float(velocity)})

    def set_temperature(self, slave: int, celsius: float) -> None:
        self.call({"cmd": "set_temperature", "slave": int(slave), "celsius": float(celsius)})
