"""A hardware emulator run as a child process: started, awaited, steered, stopped.

Both emulators (Dynamixel on a pseudo-terminal, EtherCAT on a veth pair) run
the same interpreter (``sys.executable -m <module>``), print one line
``READY <word> ...`` once they serve, take JSON-line commands on a Unix
socket (one connection per call) and stop on SIGTERM. Their stderr goes to a
temporary file whose tail is quoted when they fail to start or die.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Self

from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line

STDERR_TAIL = 2000  # characters of the emulator's stderr quoted in errors


class EmulatorError(RuntimeError):
    """The emulator process failed to start, died, or refused a command."""


class EmulatorChild:
    """An emulator process; a context manager that stops it on exit.

    ``ready`` holds the words of its READY line after ``READY``; a subclass
    sets :attr:`control`, the path of the control socket, from them.
    """

    # How the process starts: subprocess.Popen. The tests swap in a fork server's launch
    # (bam_testing.module_forks), which runs the same module from a warm interpreter.
    launch = staticmethod(subprocess.Popen)

    def __init__(self, module: str, args: list[str], words: int, timeout: float) -> None:
        self.ready: list[str] = []
        self.control = ""
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        self._process = self.launch(
            [sys.executable, "-m", module, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr)
        try:
            self._wait_ready(words, timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, words: int, timeout: float) -> None:
        try:
            line = await_ready_line(self._process, "READY", timeout)
        except NotReady as exc:
            self._not_ready()
            raise EmulatorError(f"emulator {exc}; stderr: {self.stderr_tail()}") from None
        self.ready = line.split()[1:]
        if len(self.ready) != words:
            raise EmulatorError(f"unexpected emulator output {line!r}; stderr: "
                                f"{self.stderr_tail()}")

    def _not_ready(self) -> None:
        """Raise a more precise error than "not ready" when the exit code tells one."""

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, request: dict, timeout: float = 5.0) -> object:
        """One control command; its result (BamError when the emulator refuses it)."""
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
