"""Stopping executables over and over: start them in sessions of their own, signal them, and
check what a clean stop promises (issue #23).

A clean stop: the process exits within :data:`EXIT_BOUND` s of its first signal with
128 + that signal, prints no traceback, and leaves no process of its own behind (every
process of its session, and every descendant seen before the stop, is gone by then).
The stop patterns (:data:`PATTERNS`) mix SIGTERM, SIGINT and a second signal sent at once
after the first, which must not cut the shutdown short.

``busy_core`` keeps one other core busy while the stops run, as a loaded machine would.
Processes are read from /proc (no psutil): this module runs on Linux only.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

EXIT_BOUND = 5.0  # s from the first signal to the exit, and to the end of every descendant
# s for an executable to come up and carry traffic: only a hang reaches it, whatever the
# load (ten instances starting at once on two busy cores take tens of seconds)
READY_TIMEOUT = 120.0
PATTERNS: tuple[tuple[signal.Signals, ...], ...] = (
    (signal.SIGTERM,), (signal.SIGINT,), (signal.SIGTERM, signal.SIGTERM),
    (signal.SIGINT, signal.SIGTERM))
POLL = 0.01  # s between two looks at a condition
STACK_DUMP_TIMEOUT = 30.0  # s for py-spy to dump a late process's threads
# s between two sends of a message a wait depends on. A reliable writer that has matched a
# reader can still lose what it sends before the reader's side has matched it in turn
# (eProsima/Fast-DDS#3009); a controller streams its commands anyway.
RESEND = 0.25


def pattern(index: int) -> tuple[signal.Signals, ...]:
    """The signals of the ``index``-th stop: the patterns in turn."""
    return PATTERNS[index % len(PATTERNS)]


def pattern_name(signals: Sequence[signal.Signals]) -> str:
    return "+".join(signal.Signals(s).name for s in signals)


# -- /proc ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    session: int
    state: str
    start: int  # clock ticks after boot: tells a pid reused by another process apart
    command: str


def _proc(pid: int) -> ProcInfo | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = stat[stat.rindex(")") + 2:].split()
    command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return ProcInfo(pid, int(rest[1]), int(rest[3]), rest[0], int(rest[19]), command)


def processes() -> list[ProcInfo]:
    """Every live process of the machine (zombies left out: they hold nothing)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _proc(int(entry))
            if info is not None and info.state != "Z":
                found.append(info)
    return found


def descendants(pid: int, table: list[ProcInfo] | None = None) -> list[ProcInfo]:
    """The processes below ``pid`` (children, theirs, ...), as the table shows them now."""
    table = processes() if table is None else table
    children: dict[int, list[ProcInfo]] = {}
    for info in table:
        children.setdefault(info.ppid, []).append(info)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def survivors(session: int, known: Sequence[ProcInfo]) -> list[ProcInfo]:
    """Live processes of ``session``, and those of ``known`` (same pid and start) still
    running: whatever a stopped command left behind."""
    table = processes()
    now = {(p.pid, p.start) for p in table}
    left = {p.pid: p for p in table if p.session == session}
    left.update({p.pid: p for p in known if (p.pid, p.start) in now})
    return sorted(left.values(), key=lambda p: p.pid)


# -- the busy core ----------------------------------------------------------------------------

@contextmanager
def busy_core() -> Iterator[int]:
    """A spinning process pinned to the last core this process may use, for the block; its
    pid. The stopped executables share the machine with it, as on a loaded host."""
    cores = sorted(os.sched_getaffinity(0))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(spinner.pid, {cores[-1]})
        yield spinner.pid
    finally:
        spinner.kill()
        spinner.wait()


# -- started commands and their stops ---------------------------------------------------------

@dataclass
class Started:
    """A command running in a session of its own (its pid is the session id); its stdout
    and stderr go to ``log``."""

    name: str
    process: subprocess.Popen
    log: Path
    signals: tuple[signal.Signals, ...]
    data: dict = field(default_factory=dict)  # what its scenario keeps (paths, emulator)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_output(self, text: str, timeout: float = READY_TIMEOUT,
                    resend: Callable[[], None] | None = None) -> str:
        """Its output once it holds ``text``; AssertionError when it ends or times out."""
        return self.wait(lambda: text in self.output(), f"'{text}' in its output", timeout,
                         resend)

    def wait(self, predicate: Callable[[], object], what: str,
             timeout: float = READY_TIMEOUT, resend: Callable[[], None] | None = None) -> str:
        """Its output once ``predicate()`` holds (``resend`` called as :func:`until` does);
        AssertionError naming ``what`` otherwise."""
        def done() -> object:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.process.returncode} "
                                     f"before {what}:\n{tail(self.output())}")
            return predicate()

        try:
            until(done, what, timeout, resend)
        except NotReady:
            raise AssertionError(f"{self.name}: no {what} within {timeout:g} s:\n"
                                 f"{tail(self.output())}") from None
        return self.output()


def start(name: str, argv: Sequence[str], log: Path, signals: tuple[signal.Signals, ...],
          env: dict[str, str] | None = None, cwd: Path | None = None) -> Started:
    """``argv`` in a new session, its output to the file ``log``."""
    with open(log, "wb") as out:
        process = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                   start_new_session=True)
    return Started(name, process, log, signals)


@dataclass
class Stop:
    """What one stop showed; ``problems`` is empty for a clean one."""

    name: str
    signals: tuple[signal.Signals, ...]
    seconds: float  # from the first signal to the exit (EXIT_BOUND + when it hung)
    returncode: int | None
    output: str
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        return (f"{self.name} [{pattern_name(self.signals)}] exit {self.returncode} after "
                f"{self.seconds:.2f} s: {'; '.join(self.problems)}\n{tail(self.output)}")


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.splitlines()[-lines:])


def stop_all(started: Sequence[Started], bound: float = EXIT_BOUND) -> list[Stop]:
    """Signal every command at once (each its own pattern) and check each stop."""
    # One scan of /proc for the whole round: each costs seconds while real-time drivers
    # and their emulators hold both cores (measured: 5 scans were 4.5 to 23 s of a round).
    table = processes()
    before = {s.process.pid: descendants(s.process.pid, table) for s in started}
    sent: dict[int, float] = {}
    exited: dict[int, float] = {}
    stacks: dict[int, str] = {}

    def waiter(s: Started) -> None:  # the exit's time, however long the others' signals take
        pid = s.process.pid
        try:
            s.process.wait(timeout=bound)
            stacks[pid] = ""
        except subprocess.TimeoutExpired:
            # Where it is at the bound: a late exit has often left that place by the time
            # its stop is judged.
            stacks[pid] = _stack_dump(pid)
            try:
                s.process.wait(timeout=60.0)
            except subprocess.TimeoutExpired:
                return
        exited[pid] = time.monotonic()

    waiters = [threading.Thread(target=waiter, args=(s,), daemon=True) for s in started]
    for s, thread in zip(started, waiters):
        sent[s.process.pid] = time.monotonic()
        thread.start()
        _signal(s)
    for s, thread in zip(started, waiters):
        thread.join(max(sent[s.process.pid] + bound - time.monotonic(), 0.0))
    return [_judge(s, before[s.process.pid], _elapsed(s, sent, exited), bound,
                   sent[s.process.pid] + bound, lambda pid=s.process.pid: stacks.get(pid))
            for s in started]


def _elapsed(s: Started, sent: dict[int, float], exited: dict[int, float]) -> float | None:
    pid = s.process.pid
    return exited[pid] - sent[pid] if pid in exited else None


def _signal(s: Started) -> None:
    """Send the signals of ``s``, each once the one before has been handed to the process
    (a second signal sent before would merge with the first, still pending). A command
    frozen at the moment its stop must hit (``data["frozen"]``, SIGSTOP) gets its first
    signal while frozen, then SIGCONT.

    Popen.send_signal signals nothing once the process is reaped: a command that stopped
    cleanly on the first signal may be gone (reaped by its waiter) before the second, which
    then has nothing left to hit."""
    pid, first = s.process.pid, s.signals[0]
    s.process.send_signal(first)
    if s.data.get("frozen"):
        s.process.send_signal(signal.SIGCONT)
    _delivered(pid, first)
    for signum in s.signals[1:]:
        s.process.send_signal(signum)
        _delivered(pid, signum)


def stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (SIGSTOP)."""
    info = _proc(pid)
    return info is not None and info.state == "T"


def _delivered(pid: int, signum: int) -> None:
    """Return once ``signum`` is no longer pending for ``pid`` (or EXIT_BOUND s passed)."""
    bit = 1 << (signum - 1)
    deadline = time.monotonic() + EXIT_BOUND
    while time.monotonic() < deadline and _pending(pid) & bit:
        time.sleep(0.001)


def _pending(pid: int) -> int:
    """The signals pending for ``pid`` (process-wide and its main thread's); 0 once gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    mask = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            mask |= int(line.split()[1], 16)
    return mask


def _judge(s: Started, before: list[ProcInfo], seconds: float | None, bound: float,
           deadline: float, stacks: Callable[[], str | None]) -> Stop:
    """The problems of one stop; ``stacks()`` is its threads' dump at the bound (None
    until its waiter has taken one)."""
    problems = []
    if seconds is None and s.process.poll() is None:
        problems.append(f"still running {bound:g} s after the signal" + _dump_at_bound(stacks))
        _kill_session(s.process.pid)
        s.process.wait()
        seconds = bound
        deadline = time.monotonic() + EXIT_BOUND  # for its session to die of the SIGKILL
    elif seconds is None or seconds > bound:  # it ended meanwhile, but late
        seconds = bound if seconds is None else seconds
        problems.append(f"exited more than {bound:g} s after the signal"
                        + _dump_at_bound(stacks))
    expected = 128 + s.signals[0]
    if s.process.returncode != expected:
        problems.append(f"exit code {s.process.returncode}, expected {expected}")
    left = survivors(s.process.pid, before)
    while left and time.monotonic() < deadline:  # descendants may still be on their way out
        time.sleep(POLL)
        left = survivors(s.process.pid, before)
    if left:
        problems.append("left behind: " + ", ".join(f"{p.pid} ({p.command[:80]})"
                                                    for p in left))
        _kill_session(s.process.pid, left)
    output = s.output()
    if "Traceback (most recent call last)" in output:
        problems.append("printed a traceback")
    return Stop(s.name, s.signals, seconds, s.process.returncode, output, problems)


def _kill_session(session: int, extra: Sequence[ProcInfo] = ()) -> None:
    """SIGKILL whatever is left of a failed stop, so the next ones start clean."""
    for p in [*survivors(session, extra)]:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _dump_at_bound(stacks: Callable[[], str | None]) -> str:
    """The dump its waiter took at the bound (waited for: py-spy takes a moment)."""
    deadline = time.monotonic() + STACK_DUMP_TIMEOUT
    while (dump := stacks()) is None and time.monotonic() < deadline:
        time.sleep(POLL)
    return dump or ""


def _stack_dump(pid: int) -> str:
    """py-spy's dump of a hung process's threads, when py-spy is installed."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not os.access(spy, os.X_OK):
        return ""
    try:
        dump = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=STACK_DUMP_TIMEOUT).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f" (py-spy failed: {exc})"
    return f"; py-spy dump:\n{dump}"


def never_ready(s: Started, reason: str) -> Stop:
    """A failed stop for a command that never reached the moment of its stop; ended, with
    its threads' dump when it was still running (where it waited)."""
    dump = _stack_dump(s.process.pid) if s.process.poll() is None else ""
    kill_leftovers([s])
    return Stop(s.name, s.signals, 0.0, s.process.returncode, s.output(),
                [f"never ready: {reason.splitlines()[0]}{dump}"])


def kill_leftovers(started: Sequence[Started]) -> None:
    """End every command of a round that failed before its stop (a test's cleanup)."""
    for s in started:
        if s.process.poll() is None:
            _kill_session(s.process.pid, descendants(s.process.pid))
            s.process.wait()


# -- tallies ------------------------------------------------------------------------------------

def summary(stops: Sequence[Stop]) -> str:
    """Per executable: stops, clean ones, the slowest exit; then every failure."""
    names = list(dict.fromkeys(s.name for s in stops))
    lines = []
    for name in names:
        mine = [s for s in stops if s.name == name]
        clean = sum(s.clean for s in mine)
        lines.append(f"{name}: {clean}/{len(mine)} clean, slowest exit "
                     f"{max(s.seconds for s in mine):.2f} s")
    lines += [s.describe() for s in stops if not s.clean]
    return "\n".join(lines)


def threaded(functions: Sequence[Callable[[], object]]) -> list:
    """Run ``functions`` at once (each in a thread, e.g. waiting on one started command);
    their results, or the first exception raised."""
    results: list = [None] * len(functions)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = functions[i]()
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(functions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


# -- real traffic before a stop -----------------------------------------------------------------

class TrafficProbe:
    """A node on ``context`` (the started commands' DDS domain) that exchanges messages with
    each of them, by namespace, before they are stopped."""

    def __init__(self, context) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node(f"stop_stress_probe_{os.getpid()}", context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=5.0)
        self._thread.join(timeout=5.0)
        self.node.destroy_node()

    def received(self, msg_type, topic: str, qos) -> list:
        """Every message of ``topic`` from now on (a list that grows)."""
        kept: list = []
        self.node.create_subscription(msg_type, topic, kept.append, qos)
        return kept

    def drive(self, namespace: str, timeout: float = READY_TIMEOUT, states: int = 5) -> list:
        """Wait for the actuator node in ``namespace`` to publish joint states and to listen
        to position commands, send it one (every joint to 0.2 rad), and wait for ``states``
        joint states more; those received."""
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from bam_sim.common import contract
        from bam_sim.common.qos import profile

        joint_states = self.received(JointState, f"{namespace}/{contract.JOINT_STATES.name}",
                                     profile(contract.JOINT_STATES.qos))
        commands = self.node.create_publisher(
            Float64MultiArray, f"{namespace}/{contract.POSITION_COMMANDS.name}",
            profile(contract.POSITION_COMMANDS.qos))
        until(lambda: joint_states and commands.get_subscription_count() > 0,
              f"joint states and a position-command subscriber in {namespace}", timeout)
        seen = len(joint_states)
        commands.publish(Float64MultiArray(data=[0.2] * len(joint_states[-1].name)))
        until(lambda: len(joint_states) >= seen + states, f"joint states after a command in "
              f"{namespace}", timeout)
        return joint_states


class NotReady(AssertionError):
    """A condition did not hold within its timeout."""


def until(predicate: Callable[[], object], what: str, timeout: float = READY_TIMEOUT,
          resend: Callable[[], None] | None = None) -> None:
    """Return once ``predicate()`` holds; NotReady naming ``what`` after ``timeout``.
    ``resend``, when given, is called while it does not hold, every ``RESEND`` s: what it
    sends is what ``predicate`` waits on the effect of."""
    deadline = time.monotonic() + timeout
    next_send = -math.inf
    while not predicate():
        now = time.monotonic()
        if now >= deadline:
            raise NotReady(f"timed out waiting for {what}")
        if resend is not None and now >= next_send:
            resend()
            next_send = now + RESEND
        time.sleep(POLL)
