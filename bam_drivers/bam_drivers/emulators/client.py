"""Start and steer a ``serial_servo_emulator`` process from Python.

The emulator is :mod:`bam_drivers.emulators.serial_servo_emulator`.

Example::

    with EmulatorProcess(protocol=2, servo_model="xm430_w350", ids=(1, 2)) as emulator:
        port = PortHandler(emulator.port)          # dynamixel-sdk, as the driver does
        ...
        truth = emulator.truth()[1]["position"]    # rad, ground truth of servo 1
        emulator.inject(drop=0.1)                  # 10 % of the replies lost
        emulator.inject(one_shot=["short", "late"])  # the next reply truncated, the one after late
        emulator.vanish(1.0)                       # the port disappears for 1 s
        emulator.set_physics(friction_base=0.1)    # the joint's friction changes mid-run

The process runs the same interpreter (``sys.executable -m
bam_drivers.emulators.serial_servo_emulator``); its stderr goes to a temporary file whose tail is
quoted when it fails to start or stops with an error. Control commands are
JSON lines over the emulator's Unix socket, one connection per call.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from bam_drivers.emulators.emulator_process import EmulatorChild, EmulatorError

__all__ = ["EmulatorError", "EmulatorProcess"]


class EmulatorProcess(EmulatorChild):
    """A running Dynamixel emulator; a context manager that stops it on exit."""

    def __init__(
        self,
        protocol: int = 1,
        servo_model: str = "mx64_p1",
        ids: Iterable[int] = (1,),
        physics: str | None = "mx64:m4",
        mass: float = 1.0,
        length: float = 0.15,
        arm_mass: float = 0.0,
        baud_rate: int = 1_000_000,
        seed: int = 0,
        *,
        params_file: str | None = None,
        port: str | None = None,
        return_delay: float = 0.0,
        drop: float = 0.0,
        corrupt: float = 0.0,
        latency: float = 0.0,
        hardware_error: Mapping[int, int] | None = None,
        supply_voltage: float | None = None,
        temperature: float = 35.0,
        initial_position: float = 0.0,
        physics_rate: float = 1000.0,
        priority: int = 0,
        startup_timeout: float = 30.0,
    ) -> None:
        args = [
            "--protocol", str(protocol), "--servo-model", servo_model,
            "--ids", *(str(i) for i in ids),
            "--mass", repr(float(mass)), "--length", repr(float(length)),
            "--arm-mass", repr(float(arm_mass)), "--baud-rate", str(baud_rate),
            "--seed", str(seed), "--return-delay", repr(float(return_delay)),
            "--drop", repr(float(drop)), "--corrupt", repr(float(corrupt)),
            "--latency", repr(float(latency)), "--temperature", repr(float(temperature)),
            "--initial-position", repr(float(initial_position)),
            "--physics-rate", repr(float(physics_rate)), "--priority", str(int(priority)),
            "--exit-with-parent", str(os.getpid()),
        ]
        if params_file is not None:
            args += ["--params-file", str(params_file)]
        elif physics is not None:
            args += ["--physics", physics]
        if port is not None:
            args += ["--port", str(port)]
        if supply_voltage is not None:
            args += ["--supply-voltage", repr(float(supply_voltage))]
        for dxl_id, bits in (hardware_error or {}).items():
            args += ["--hardware-error", f"{int(dxl_id)}:{int(bits)}"]
        super().__init__("bam_drivers.emulators.serial_servo_emulator", args, 2,
                         startup_timeout)
        self.port, self.control = self.ready

    def truth(self) -> dict[int, dict]:
        """Ground truth per id (SI units and the raw registers, see the emulator)."""
        return {int(k): v for k, v in self.call({"cmd": "truth"}).items()}

    def inject(
        self,
        drop: float | None = None,
        corrupt: float | None = None,
        latency: float | None = None,
        hardware_error: Mapping[int, int] | None = None,
        one_shot: Iterable[str] | None = None,
    ) -> dict:
        """Set fault probabilities, added latency (s), hardware-error bits (0 clears) and
        the faults of the next replies, one each (the emulator's ``ONE_SHOT``)."""
        request: dict = {"cmd": "inject"}
        for key, value in (("drop", drop), ("corrupt", corrupt), ("latency", latency)):
            if value is not None:
                request[key] = float(value)
        if one_shot is not None:
            request["next"] = list(one_shot)
        if hardware_error:
            request["hardware_error"] = {str(k): int(v) for k, v in hardware_error.items()}
        return self.call(request)

    def vanish(self, seconds: float | None = None) -> None:
        """Remove the port now; a new pty appears at the same path after ``seconds``
        (None: when :meth:`restore` is called)."""
        self.call({"cmd": "vanish", "seconds": None if seconds is None else float(seconds)})

    def restore(self) -> None:
        """Bring back a port that vanished, now."""
        self.call({"cmd": "restore"})

    def set_position(self, dxl_id: int, position: float, velocity: float = 0.0) -> None:
        """Move a joint to ``position`` rad (and ``velocity`` rad/s)."""
        self.call({"cmd": "set_position", "id": int(dxl_id), "position": float(position),
                    "velocity": float(velocity)})

    def set_physics(self, **values: float) -> dict[str, float]:
        """Change parameter values of every joint's model mid-run (the state kept), from the
        set the emulator started with (none given: that set again); the values in force."""
        return self.call({"cmd": "physics", "values": {k: float(v) for k, v in values.items()}})

    def stats(self) -> dict:
        """Packets received, replies, errors, faults injected, physics ticks, port state."""
        return self.call({"cmd": "stats"})
