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

import os
from collections.abc import Iterable, Mapping

from bam_drivers.emulators.emulator_process import EmulatorChild, EmulatorError

__all__ = ["EmulatorError", "EthercatEmulatorProcess", "NamespaceUnavailable"]

NO_NAMESPACE = 3  # the emulator's exit code when it cannot create the namespace


class NamespaceUnavailable(EmulatorError):
    """The emulator cannot create a network namespace here (not root)."""


class EthercatEmulatorProcess(EmulatorChild):
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
                "--priority", str(int(priority)), "--exit-with-parent", str(os.getpid())]
        positions = [repr(float(p)) for p in positions]
        if positions:
            args += ["--positions", *positions]
        for slave, code in (faults or {}).items():
            args += ["--fault", f"{int(slave)}:{int(code)}"]
        if interface is not None:
            args += ["--interface", interface]
        super().__init__("bam_drivers.emulators.ethercat_emulator", args, 3, startup_timeout)
        self.interface, self.control, self.namespace = self.ready

    def _not_ready(self) -> None:
        if self._process.poll() == NO_NAMESPACE:
            raise NamespaceUnavailable(self.stderr_tail())

    def truth(self) -> dict[int, dict]:
        """Ground truth per slave position (1-based): joint state, drive and ESC state."""
        return {int(k): v for k, v in self.call({"cmd": "truth"}).items()}

    def frames(self, slave: int = 1) -> list[dict]:
        """The last process-data exchanges of drive ``slave`` (1-based), oldest first: time
        (s, wall clock), raw position, velocity and current inputs, the motor's current
        (A), the target torque received (per mille) and the current it asks (A)."""
        return self.call({"cmd": "frames", "slave": int(slave)})

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
