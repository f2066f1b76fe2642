"""Programs forked from a warm process instead of started from nothing (tests only).

An emulator started as ``python -m bam_drivers.emulators....`` spends about 1.3 s of a
core before it serves: numba's import and its first cached kernel (its typing registries,
which import scipy.linalg), the stepper's modules. The live passes start about 140 of
them. Here one *fork server* per pytest process pays that once: it imports the modules
it is given and loads the pendulum stepper's kernels, then forks a child per start, which
runs the module as ``python -m`` would (``runpy``, ``__main__``), on the stdin, stdout and
stderr the test passed over a Unix socket. The child is the same program from its first
line of ``main``; only its interpreter's start is shared.

:func:`launcher` gives a stand-in for ``subprocess.Popen`` (the drivers' tests put it in
:class:`bam_drivers.emulators.emulator_process.EmulatorChild`, bam_drivers/test/conftest.py);
it returns a :class:`ForkedProcess` with the part of Popen's interface the emulators'
client uses. Any other argument list goes to ``subprocess.Popen``.

The children are the server's, not pytest's: the server reaps each and sends its wait
status to the test, which holds one connection per child. ``--exit-with-parent PID`` (the
emulators' orphan check) names the server instead of pytest; the server ends with pytest
(its stdin closes), so a child still outlives neither.
"""

from __future__ import annotations

import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

START_TIMEOUT = 60.0  # s: the server's imports and kernels on a loaded machine; only a hang


# -- the server ---------------------------------------------------------------------------

def _warm(modules: list[str]) -> None:
    """Import ``modules`` and load the stepper's kernels (numba's registries with them)."""
    import importlib

    from bam_sim.bench.geometry import Bench
    from bam_sim.bench.stepper import BenchStepper
    from bam_sim.models.files.parameter_file import published_named

    for module in modules:
        importlib.import_module(module)
    params = published_named("mx64", "m4")
    BenchStepper(params, Bench(mass=1.0, length=0.15), 0.001).tick()


def _child(request: dict, fds: list[int]) -> None:
    """In the forked child: the test's stdio, environment and folder, then the module as
    ``python -m`` runs it; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own descriptors
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [request["module"], *request["args"]]
        # runs as __main__ from its source, as `python -m` does; its imports stay warm
        sys.modules.pop(request["module"], None)
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # Python ends by the signal itself: the same wait status
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # the child's own error, on its own stderr, as Python would
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


class _Server:
    def __init__(self, path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        self.children: dict[int, socket.socket] = {}  # pid -> the test's connection
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin, selectors.EVENT_READ, "parent")

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select(0.05):
                if key.data == "parent" and not os.read(sys.stdin.fileno(), 1024):
                    return  # pytest is gone: so is the server (the children follow)
                if key.data == "accept":
                    self._fork(self.listener.accept()[0])
            self._reap()

    def _fork(self, conn: socket.socket) -> None:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            self.selector.close()
            self.listener.close()
            for other in self.children.values():
                other.close()
            conn.close()
            _child(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        self.children[pid] = conn

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"{status}\n".encode())
                except OSError:
                    pass  # the test stopped listening
                conn.close()


def serve(path: str, modules: list[str]) -> int:
    """The fork server's main: warm, say READY on stdout, fork until its stdin closes."""
    _warm(modules)
    server = _Server(path)
    print("READY", flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    return 0


# -- the test's side ----------------------------------------------------------------------

class ForkedProcess:
    """A forked program, with the part of ``subprocess.Popen`` the emulator's client uses:
    ``pid``, ``args``, ``stdout``, ``returncode``, ``poll``, ``wait``, ``send_signal``,
    ``kill``."""

    def __init__(self, args: list[str], pid: int, conn: socket.socket, stdout) -> None:
        self.args, self.pid, self.stdout = args, pid, stdout
        self.returncode: int | None = None
        self._conn = conn
        self._status = b""

    def _status_within(self, timeout: float | None) -> bool:
        """Read the wait status the server sends when it reaps the child."""
        if self.returncode is not None:
            return True
        self._conn.settimeout(timeout)
        try:
            while not self._status.endswith(b"\n"):
                chunk = self._conn.recv(64)
                if not chunk:
                    raise RuntimeError(f"the emulator fork server lost child {self.pid}")
                self._status += chunk
        except (TimeoutError, BlockingIOError):
            return False
        self.returncode = os.waitstatus_to_exitcode(int(self._status))
        self._conn.close()
        return True

    def poll(self) -> int | None:
        self._status_within(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._status_within(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # not reaped: the pid is still the child's
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The server process of one pytest process, started at its first fork."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self.modules = modules
        self._dir = tempfile.TemporaryDirectory(prefix="bam-forks-")
        self.path = str(Path(self._dir.name) / "fork.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import sys; from bam_testing.module_forks import serve; "
             "sys.exit(serve(sys.argv[1], sys.argv[2:]))", self.path, *modules],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        from bam_sim.common.ready_line import await_ready_line  # the emulators' own wait

        await_ready_line(self.process, "READY", START_TIMEOUT)

    def fork(self, args: list[str], stdin: int, stdout: int, stderr: int) -> tuple[int,
                                                                                     socket.socket]:
        module, rest = args[2], list(args[3:])
        if "--exit-with-parent" in rest:  # the server is the child's parent (module doc)
            at = rest.index("--exit-with-parent") + 1
            if at < len(rest) and rest[at] == str(os.getpid()):
                rest[at] = str(self.process.pid)
        request = {"module": module, "args": rest, "env": dict(os.environ), "cwd": os.getcwd()}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(START_TIMEOUT)
        conn.connect(self.path)
        socket.send_fds(conn, [json.dumps(request).encode()], [stdin, stdout, stderr])
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                raise RuntimeError("the emulator fork server closed the connection")
            line += chunk
        return int(line), conn

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self._dir.cleanup()


_server: ForkServer | None = None
_server_lock = threading.Lock()


def _fork_server(modules: tuple[str, ...]) -> ForkServer:
    global _server
    with _server_lock:
        if _server is None or _server.process.poll() is not None:
            _server = ForkServer(modules)
        return _server


def launcher(modules: tuple[str, ...]):
    """A stand-in for ``subprocess.Popen``: ``python -m M ...`` forked from the server
    when M is one of ``modules`` and the stdio is the emulators' client's (stdin DEVNULL,
    stdout PIPE, stderr a file); anything else through ``subprocess.Popen`` itself."""

    def launch(args, stdin=None, stdout=None, stderr=None, **kwargs):
        forkable = (not kwargs and len(args) >= 3 and args[0] == sys.executable
                    and args[1] == "-m" and args[2] in modules
                    and stdin == subprocess.DEVNULL and stdout == subprocess.PIPE
                    and hasattr(stderr, "fileno"))
        if not forkable:
            return subprocess.Popen(args, stdin=stdin, stdout=stdout, stderr=stderr, **kwargs)
        read, write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            pid, conn = _fork_server(modules).fork(list(args), null, write, stderr.fileno())
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
            os.close(null)
        return ForkedProcess(list(args), pid, conn, open(read, "rb", buffering=0))  # noqa: SIM115

    return launch


def close() -> None:
    """End the server (its children end with it): at the end of the pytest process."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.close()
            _server = None
