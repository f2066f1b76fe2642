"""Run an executable's ``main(argv)`` in a forked child and classify what it did.

The property test of every executable (bam_bringup/test/test_bringup_bad_input_
properties.py) feeds generated arguments to each ``main``. A fork per example
keeps it cheap (the modules are imported once, in the parent) and isolated: the
signal handlers a command installs, rclpy's global context, the threads a node
starts and a command that never returns all end with the child, which is
killed with its whole process group when it overruns its guard.

Outcomes: ``ok-refused`` (exit 2, one non-empty stderr line naming the
program, no traceback), ``ok-accepted`` (exit 0, outputs checked by the
caller), and the failures ``traceback``, ``multi-line error``, ``unnamed
error`` (one line, but not naming the program), ``silent wrong result`` (exit 0,
output missing, non-finite or a file overwritten without --force), ``other
exit`` (a code other than 0 or 2) and ``hang``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import select
import signal
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bam_sim.common.shm_ports import CLEARED_NOTICE

OK = ("ok-refused", "ok-accepted")
FAILURES = ("traceback", "multi-line error", "unnamed error", "silent wrong result",
            "other exit", "hang")
REPORT = "child-report.json"  # what the child observed (published messages), for the parent


@dataclass
class Run:
    """What one forked ``main(argv)`` did."""

    argv: list[str]
    code: int | None  # None: it hung and was killed
    stdout: str
    stderr: str
    report: dict = field(default_factory=dict)

    @property
    def hung(self) -> bool:
        return self.code is None


def _exit_code(exc: SystemExit) -> int:
    """The status the interpreter would exit with for ``exc`` (it prints a text code)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def io_folder(cwd: Path) -> Path:
    """Where a run's stdout, stderr and report go: beside ``cwd``, never among the files
    the command may read (``--logs .`` would take them for inputs)."""
    folder = cwd.with_name(f"{cwd.name}.io")
    folder.mkdir(exist_ok=True)
    return folder


def _redirect(folder: Path) -> None:
    """fd 1 and 2 (and sys.stdout/stderr over them) into files of ``folder``, stdin empty."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        target = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False,
                      buffering=1)
    sys.stdin = io.StringIO("")


def _child(main: Callable[[list[str]], int | None], argv: list[str], cwd: Path,
           prepare: Callable[[dict], None] | None) -> int:
    """The child's work; its exit status as the interpreter would give it."""
    os.setpgid(0, 0)  # its own group: a hang is killed with whatever it started
    os.chdir(cwd)
    _redirect(io_folder(cwd))
    report: dict = {}
    try:
        if prepare is not None:
            prepare(report)
        code = main(list(argv))
        code = 0 if code is None else int(code)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - what an uncaught exception would print
        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        (io_folder(cwd) / REPORT).write_text(json.dumps(report, default=str))
    return code


def dds_threads() -> list[str]:
    """Names of this process's DDS threads: once a DDS participant has lived here, its
    threads (and locks) stay, and a forked child that starts ROS deadlocks in rcl's init
    (seen: the child waiting forever in ``Context.init``)."""
    names = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            name = (task / "comm").read_text().strip()
            if name.startswith("dds."):
                names.append(name)
    return names


def run_forked(main: Callable[[list[str]], int | None], argv: list[str], cwd: Path,
               timeout: float = 60.0, prepare: Callable[[dict], None] | None = None) -> Run:
    """``main(argv)`` in a forked child running in ``cwd``; killed after ``timeout`` s.

    ``prepare(report)`` runs in the child first (patches that bound a node's spin);
    what it puts in ``report`` comes back in :attr:`Run.report`.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            code = _child(main, argv, cwd, prepare)
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code & 0xFF)
    return _wait(pid, argv, cwd, timeout)


def _wait(pid: int, argv: list[str], cwd: Path, timeout: float) -> Run:
    """Wait for the child on its pidfd (an event, not a poll); kill its group if it overruns."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # a hang, or what a finished child left running
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status) if ready else None
    folder = io_folder(cwd)
    report = {}
    with contextlib.suppress(OSError, ValueError):
        report = json.loads((folder / REPORT).read_text())
    return Run(argv, code, _read(folder / "stdout"), _read(folder / "stderr"), report)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="backslashreplace")
    except OSError:
        return ""


def error_lines(text: str) -> list[str]:
    """The non-empty lines of ``text`` but the notice of dead shared-memory ports cleared
    before the start: left by another test's killed process, not part of the error."""
    return [line for line in text.splitlines()
            if line.strip() and not line.startswith(CLEARED_NOTICE)]


def classify(run: Run, program: str, check: Callable[[Run], str | None],
             refusal_codes: Iterable[int] = (2,)) -> tuple[str, str]:
    """(outcome, detail): ``check(run)`` says what is wrong with an accepted run's outputs."""
    if run.hung:
        return "hang", "no exit within the guard"
    if "Traceback (most recent call last)" in run.stderr + run.stdout:
        return "traceback", _tail(run.stderr)
    if run.code == 0:
        problem = check(run)
        return ("silent wrong result", problem) if problem else ("ok-accepted", "")
    if run.code in tuple(refusal_codes):
        lines = error_lines(run.stderr)
        if len(lines) != 1:
            return "multi-line error", _tail(run.stderr)
        if program not in lines[0]:
            return "unnamed error", lines[0]
        return "ok-refused", lines[0]
    return "other exit", f"exit {run.code}: {_tail(run.stderr)}"


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(error_lines(text)[-lines:])[:600]


def non_finite(value: object, where: str = "") -> str | None:
    """The first NaN or infinity in a nested structure of numbers (its path), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if math.isfinite(value) else f"{where or 'value'} = {value}"
    if isinstance(value, dict):
        items: Iterable = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


@dataclass
class Tally:
    """Examples tried and outcomes, per executable; the failing examples to repro."""

    counts: dict[str, Counter] = field(default_factory=dict)
    failures: list[tuple[str, str, list[str], str]] = field(default_factory=list)

    def add(self, program: str, outcome: str, argv: list[str], detail: str) -> None:
        self.counts.setdefault(program, Counter())[outcome] += 1
        if outcome in FAILURES:
            self.failures.append((program, outcome, argv, detail))

    def table(self) -> str:
        classes = OK + FAILURES
        rows = [f"{'executable':<22}{'tried':>6} " + " ".join(f"{c:>10.10}" for c in classes)]
        total: Counter = Counter()
        for program, counts in self.counts.items():
            total.update(counts)
            rows.append(f"{program:<22}{sum(counts.values()):>6} "
                        + " ".join(f"{counts[c]:>10}" for c in classes))
        rows.append(f"{'TOTAL':<22}{sum(total.values()):>6} "
                    + " ".join(f"{total[c]:>10}" for c in classes))
        return "\n".join(rows)

    def failure_lines(self, program: str | None = None) -> list[str]:
        return [f"{p}: {outcome}: argv={argv!r}: {detail}"
                for p, outcome, argv, detail in self.failures if program in (None, p)]


SPINS = 40  # spin_once calls a started node gets (0.05 s each at most) before it is stopped
JOINT_STATES = 3  # ... or fewer once it published this many joint states


def bound_node_spin(report: dict) -> None:
    """In the child: a node that got through its checks spins briefly, then stops as on a
    clean exit, and every JointState it publishes is checked for NaN and infinity.

    ``report['started']`` says the node was built; ``report['joint_states']`` counts
    the states published; ``report['non_finite']`` names the first bad field.
    """
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.publisher import Publisher

    from bam_sim.common import runner

    report.update(started=False, joint_states=0, non_finite=None)
    publish = Publisher.publish

    def checked_publish(self: Publisher, msg: object) -> None:
        if all(hasattr(msg, f) for f in ("name", "position", "velocity", "effort")):
            report["joint_states"] += 1
            fields = {f: list(getattr(msg, f)) for f in ("position", "velocity", "effort")}
            report["non_finite"] = report["non_finite"] or non_finite(fields)
        publish(self, msg)

    def bounded_spin(node, until=None, signals=None) -> int:
        report["started"] = True
        executor = SingleThreadedExecutor(context=node.context)
        executor.add_node(node)
        try:
            for _ in range(SPINS):
                if (until is not None and until.is_set()) or \
                        report["joint_states"] >= JOINT_STATES:
                    break
                executor.spin_once(timeout_sec=0.05)
        finally:
            executor.remove_node(node)
            executor.shutdown(timeout_sec=1.0)
        return 0

    Publisher.publish = checked_publish
    runner.spin_until_signal = bounded_spin


def isolate_ros(slot: int) -> Callable[[dict], None]:
    """A ``prepare`` giving the child's nodes a DDS domain of their own, on this machine."""
    def prepare(report: dict) -> None:
        from bam_testing.ros_context import ros_domain

        os.environ["ROS_DOMAIN_ID"] = str(ros_domain(slot))
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return prepare


def chain(*steps: Callable[[dict], None]) -> Callable[[dict], None]:
    def prepare(report: dict) -> None:
        for step in steps:
            step(report)
    return prepare
