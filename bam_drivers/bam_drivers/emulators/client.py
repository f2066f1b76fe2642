"""Start and steer a ``dynamixel_emulator`` process from Python.

The emulator is :mod:`bam_drivers.emulators.dynamixel_emulator`.

Example::

    with EmulatorProcess(protocol=2, servo_model="xm430_w350", ids=(1, 2)) as emulator:
        port = PortHandler(emulator.port)          # dynamixel-sdk, as the driver does
        ...
        truth = emulator.truth()[1]["position"]    # rad, ground truth of servo 1
        emulator.inject(drop=0.1)                  # 10 % of the replies lost
        emulator.vanish(1.0)                       # the port disappears for 1 s

The process runs the same interpreter (``sys.executable -m
bam_drivers.emulators.dynamixel_emulator``); its stderr goes to a temporary file whose tail is
quoted when it fails to start or stops with an error. Control commands are
JSON lines over the emulator's Unix socket, one connection per call.
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

STDERR_TAIL = 2000  # characters of the emulator's stderr quoted in errors


class EmulatorError(RuntimeError):
    """The emulator process failed to start, died, or refused a command."""


class EmulatorProcess:
    """A running emulator process; a context manager that stops it on exit."""

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
            "--physics-rate", repr(float(physics_rate)), "--exit-with-parent",
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
        self.port: str = ""
        self.control: str = ""
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bam_drivers.emulators.dynamixel_emulator", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
        )
        try:
            self._wait_ready(startup_timeout)
        except BaseException:
            self.stop()
            raise

    # -- life cycle ------------------------------------------------------------------

    def _wait_ready(self, timeout: float) -> None:
        try:
            line = await_ready_line(self._process, "READY", timeout)
        except NotReady as exc:
            raise EmulatorError(f"emulator {exc}; stderr: {self.stderr_tail()}") from None
        words = line.split()
        if len(words) != 3:
            raise EmulatorError(f"unexpected emulator output {line!r}; stderr: "
                                f"{self.stderr_tail()}")
        self.port, self.control = words[1], words[2]

    def stderr_tail(self) -> str:
        """The end of what the emulator wrote on stderr."""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL))
        return self._stderr.read().decode(errors="replace").strip() or "(empty)"

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.poll()

    def stop(self, timeout: float = 5.0) -> int:
        """Terminate the process (SIGTERM, then SIGKILL after ``timeout``); its exit code."""
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

    def __enter__(self) -> EmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- control ---------------------------------------------------------------------

    def _call(self, request: dict, timeout: float = 5.0) -> object:
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
        """Ground truth per id (SI units and the raw registers, see the emulator)."""
        return {int(k): v for k, v in self._call({"cmd": "truth"}).items()}

    def inject(
        self,
        drop: float | None = None,
        corrupt: float | None = None,
        latency: float | None = None,
        hardware_error: Mapping[int, int] | None = None,
    ) -> dict:
        """Set fault probabilities, added latency (s) and hardware-error bits (0 clears)."""
        request: dict = {"cmd": "inject"}
        for key, value in (("drop", drop), ("corrupt", corrupt), ("latency", latency)):
            if value is not None:
                request[key] = float(value)
        if hardware_error:
            request["hardware_error"] = {str(k): int(v) for k, v in hardware_error.items()}
        return self._call(request)

    def vanish(self, seconds: float | None = None) -> None:
        """Remove the port now; a new pty appears at the same path after ``seconds``
        (None: when :meth:`restore` is called)."""
        self._call({"cmd": "vanish", "seconds": None if seconds is None else float(seconds)})

    def restore(self) -> None:
        """Bring back a port that vanished, now."""
        self._call({"cmd": "restore"})

    def set_position(self, dxl_id: int, position: float, velocity: float = 0.0) -> None:
        """Move a joint to ``position`` rad (and ``velocity`` rad/s)."""
        self._call({"cmd": "set_position", "id": int(dxl_id), "position": float(position),
                    "velocity": float(velocity)})

    def stats(self) -> dict:
        """Packets received, replies, errors, faults injected, physics ticks, port state."""
        return self._call({"cmd": "stats"})
