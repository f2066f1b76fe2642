"""The health monitor (bam_sim ``monitor``) in the shadow of the Dynamixel driver on its emulator.

The emulator's MX-64 (protocol 1.0) runs the published M4 set on a 1 kg, 0.15 m pendulum
with its 1 kHz physics in real time. The ``dynamixel`` executable reads it at 200 Hz in
a process of its own; in this process a probe plays two of the protocol's trajectories
on ``bam/commands``, timed by the states' stamps, and the monitor follows the states.
The driver has its own process because a driver sharing this interpreter with the
monitor (four models stepped per sample) lost its rate to it: a median state interval
of 6.6 ms at a 5 ms cycle on a loaded machine (measured), which the monitor rightly
reported as states slower than the bench's rate, a "bus delay" that no bus caused.
That process and the emulator run at SCHED_FIFO priority (drivers_rig.PRIORITY,
EMULATOR_PRIORITY): a busy host must not make the servos or the driver late, which the
monitor would rightly report too.

Reference MAE. A fit's validation MAE is the mean position error of its model over a
recording, re-set to the measured state every reset period. The module's first rig
records one pass of the protocol through the same driver and emulator, with the
monitor re-syncing every second as a fit resets, and takes the mean of its residuals:
what a fit finding the true values records on this bench. Measured 0.0041-0.0058 rad,
quiet or with a core busy (quantized positions sampled by the bus while the physics
steps at 1 ms and the model at 5 ms). A fixed floor does not fit every machine: the
load moves it by a fifth, and the draft's 0.009 rad (the fit's figure, with another
reset period) was twice the monitor's own.

What is asserted. With the true set the monitor is OK at every report over a whole
pass and names neither a jam nor a bus delay, its running MAE below 2x (WARN) the pass's
own mean error (it peaked at 0.9-1.45x the reference pass's). After a fault injected into
the emulator 3 s into the protocol, as the servo would change, the monitor goes WARN (or
ERROR) and names the cause within the bound below; before the fault every report is OK.

- friction: every friction magnitude x1.5. Drift alone does not warn (the friction
  scale wanders by a fifth on a healthy servo): the WARN comes when the running MAE
  passes 2x the reference, and its message names "friction +N % since start" (N
  24-44, measured). Seen after 4.0-5.0 s; bound 10 s.
- jammed: friction_base 500 N·m, the stop-torque clip holds the joint. Named at the
  first whole re-sync window after the jam, when the joint stood still while the model
  moved it. Seen after 1.0-4.0 s (a window broken by a hiccup of the host gives no
  verdict; 6.5 s with two busy processes); bound 8 s.
- bus delay: every reply 8 ms late, longer than the 5 ms cycle: the driver falls to
  about 100 Hz and the monitor names the states slower than the bench's rate. Seen
  after 0.5-1.5 s (half of the last second's intervals slow); bound 3 s. With the true
  set the median interval stayed 5.00 ms, a core busy or two: the loop's absolute
  deadlines catch up after a hiccup, so load alone does not cross the 1.25-tick rule.

Bounds are about 2x the worst delay measured with a core busy (they also held with two
busy processes beside the tests, bar the jam's 6.5 s). Time is the states' time (their stamps, the
system clock the driver stamps with): the monitor's reports carry the stamp of their
sample, and a wait ends when the monitor has reported on the states up to a time;
nothing sleeps.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from statistics import fmean

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from drivers_rig import EMULATOR_PRIORITY, emulator_of, realtime
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from bam_msgs.msg import ActuatorCommand, ActuatorStateArray
from bam_sim.bench.shadow import friction_names
from bam_sim.bench.trajectory import played
from bam_sim.common import contract
from bam_sim.common.qos import profile
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.nodes.monitor_node import MonitorNode
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import PROBE_DEPTH, Spinner, closing, stamp_ns, wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 60.0  # s of wall time for a start (two processes, discovery) on a loaded machine
RATE = 200.0  # Hz of the driver
DT = 1.0 / RATE
BENCH = dict(mass=1.0, length=0.15)
TRUE = published_named("mx64", "m4")
# Smooth trajectories: a 5 ms model follows the 1 kHz physics through a step only
# roughly (the friction scale fitted on steps wanders by 40 % with the true set).
TRAJECTORIES = ("slow_oscillations", "lift_drop")
MONITOR = dict(resync_period=1.0, mae_window=5.0, diagnostic_period=0.5)
BEFORE_FAULT = 3.0  # s of the states' time from the protocol's start to a fault
PLACEHOLDER_MAE = 1.0  # rad: the reference run reads residuals, not verdicts


def protocol() -> tuple[list[float], list[bool]]:
    """(goal, enable) per tick of one pass over :data:`TRAJECTORIES`."""
    return played(TRAJECTORIES, DT)


PASS = len(protocol()[0]) * DT  # s, one pass over the trajectories


def true_file(folder: Path, validation_mae: float) -> Path:
    """The emulator's own values, as a perfect fit finds them, with ``validation_mae``."""
    fitted = ParameterSet.build(TRUE.actuator, TRUE.model, TRUE.values, {
        "source": "test_drivers_monitor: the emulator's values",
        "validation_mae": validation_mae})
    return save(fitted, folder / "mx64_m4.yaml", overwrite=True)


class DriverProcess:
    """The ``dynamixel`` executable on ``port`` in a process of its own, its output in
    ``log``."""

    def __init__(self, port: str, log: Path) -> None:
        env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
               "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        # latency_timer_ms: room for a busy machine delaying the emulator's replies.
        params = {"port": port, "rate": RATE, "command_timeout": 0.0,
                  "latency_timer_ms": 10.0, **BENCH}
        self._log_path = log
        self._log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bam_drivers.nodes.serial_servo_node", "--ros-args",
             *(x for k, v in params.items() for x in ("-p", f"{k}:={v}"))],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=realtime)

    def output(self) -> str:
        return self._log_path.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        """SIGINT (the driver turns the torque off and exits), a kill if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


class MonitoredDriver:
    """The emulator, the driver's process, and here a probe playing the protocol on it and
    the monitor with ``reference_mae`` as the file's validation MAE."""

    def __init__(self, context, folder: Path, reference_mae: float) -> None:
        self.reference = reference_mae
        self.emulator = emulator_of("protocol1", physics="mx64:m4",
                                    priority=EMULATOR_PRIORITY, **BENCH)
        self.driver: DriverProcess | None = None
        self.spinner: Spinner | None = None
        self.nodes: list = []
        try:
            self._start(context, folder)
        except BaseException:
            self.close()
            raise

    def _start(self, context, folder: Path) -> None:
        self.driver = DriverProcess(self.emulator.port, folder / "driver.log")
        self.probe = rclpy.create_node("monitor_probe", context=context)
        self.monitor = MonitorNode(context=context, parameter_overrides=[
            Parameter("params_file", value=str(true_file(folder, self.reference))),
            *[Parameter(k, value=v) for k, v in MONITOR.items()]])
        self.nodes = [self.probe, self.monitor]
        self._goals, self._enables = protocol()
        self._sent: tuple | None = None
        self.start_ns: int | None = None  # the protocol's tick 0; -1: the next state's
        self.enabled = False  # the driver reported the protocol's torque on
        self._create_topics()
        executor = SingleThreadedExecutor(context=context)
        for node in self.nodes:
            executor.add_node(node)
        self.spinner = Spinner(executor, TIMEOUT).start()
        # The driver's side of the command topic is out of reach: the protocol starts
        # once this side matched, and counts from the state the driver applied it in.
        self.wait_for(lambda: self.monitor.samples > 0
                      and self.commands.get_subscription_count() > 0,
                      "the driver's states at the monitor, its command subscription")
        self.start_ns = -1
        self.wait_for(lambda: self.enabled, "the driver following the protocol")

    def _create_topics(self) -> None:
        deep = profile(contract.STATE_QOS)
        deep.depth = PROBE_DEPTH  # nothing lost while a busy machine holds the executor
        self.residuals: list[tuple[int, float]] = []  # (stamp ns, position residual rad)
        self.diagnostics: list[DiagnosticArray] = []
        self.probe.create_subscription(JointState, contract.JOINT_STATES.name, self._drive, deep)
        self.probe.create_subscription(ActuatorStateArray, contract.ACTUATOR_STATES.name,
                                       self._on_states, deep)
        self.probe.create_subscription(
            JointState, contract.MONITOR_RESIDUALS.name,
            lambda m: self.residuals.append((stamp_ns(m), m.position[0])), deep)
        self.probe.create_subscription(DiagnosticArray, contract.DIAGNOSTICS.name,
                                       self.diagnostics.append, profile(contract.DIAGNOSTICS.qos))
        self.commands = self.probe.create_publisher(ActuatorCommand, contract.COMMANDS.name,
                                                    profile(contract.COMMANDS.qos))

    def _drive(self, msg: JointState) -> None:
        """The protocol's command of the tick the driver reports (sent when it changes)."""
        if self.start_ns is None:
            return
        stamp = stamp_ns(msg)
        if self.start_ns < 0:
            self.start_ns = stamp
        k = round((stamp - self.start_ns) * 1e-9 / DT) % len(self._goals)
        command = (self._goals[k], self._enables[k])
        if command != self._sent:
            self._sent = command
            self.commands.publish(ActuatorCommand(
                names=[msg.name[0]], goal_positions=[command[0]], torque_enables=[command[1]]))

    def _on_states(self, msg: ActuatorStateArray) -> None:
        self.enabled = self.enabled or (self.start_ns is not None
                                        and msg.actuators[0].torque_enable)

    # -- time and verdicts -------------------------------------------------------------

    @property
    def start(self) -> float:
        """The protocol's start, s of the states' time."""
        return self.start_ns * 1e-9

    def now(self) -> float:
        """The states' clock now (the system clock the driver stamps with), s."""
        return self.probe.get_clock().now().nanoseconds * 1e-9

    def statuses(self, since: float = -math.inf) -> list[tuple[float, DiagnosticStatus]]:
        """(stamp, status) of the monitor's /diagnostics from ``since`` (states' time) on."""
        return [(stamp_ns(msg) * 1e-9, status) for msg in list(self.diagnostics)
                for status in msg.status
                if status.name.startswith("/monitor") and stamp_ns(msg) * 1e-9 >= since]

    def judged(self) -> float:
        """The states' time up to which the monitor has reported, s."""
        found = self.statuses()
        return found[-1][0] if found else -math.inf

    def judge_until(self, until: float) -> None:
        """Return once the monitor has reported on the states up to ``until`` (s)."""
        self.wait_for(lambda: self.judged() >= until, f"the monitor's report at {until:.1f} s",
                      timeout=until - self.now() + TIMEOUT)

    def first_warning(self, since: float, cause: str, bound: float) -> tuple[float, str]:
        """The first WARN or ERROR after ``since`` naming ``cause``, waiting at most for
        the monitor's reports on ``bound`` + 2 s of the states' time: (its delay after
        ``since``, its message)."""
        def warned() -> list:
            return [(t, s.message) for t, s in self.statuses(since)
                    if s.level >= DiagnosticStatus.WARN and cause in s.message]
        self.wait_for(lambda: warned() or self.judged() > since + bound + 2.0,
                      f"a warning naming {cause!r}", timeout=bound + TIMEOUT)
        found = warned()
        assert found, f"no WARN naming {cause!r} within {bound + 2:g} s: " \
            f"{[(round(t - since, 2), s.message) for t, s in self.statuses(since)][-5:]}"
        return found[0][0] - since, found[0][1]

    def wait_for(self, predicate: Callable[[], object], what: str,
                 timeout: float = TIMEOUT) -> None:
        """:func:`wait_for` ``predicate``, failing at once with the driver's output if it
        ended."""
        def alive() -> object:
            assert self.driver.process.poll() is None, self.driver.output()
            return predicate()
        wait_for(alive, what, timeout)

    def close(self) -> None:
        try:
            if self.spinner is not None:
                self.spinner.close()
            for node in self.nodes:
                node.destroy_node()
            if self.driver is not None:
                self.driver.close()
        finally:
            self.emulator.stop()


def values(status: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def assert_ok(statuses: list) -> None:
    bad = [(round(t, 2), s.message) for t, s in statuses if s.level != DiagnosticStatus.OK]
    assert statuses and not bad, bad


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


def pass_mae(r) -> float:
    """The true set's mean position error over the pass ``r`` has been judged on."""
    end = r.start_ns + int(PASS * 1e9)
    window = [abs(q) for t, q in r.residuals if r.start_ns <= t < end]
    mae = fmean(window)
    # What the pass was made of, shown with a failure.
    print(f"\npass MAE {mae:.5f} rad over {len(window)} residuals of {PASS / DT:.0f} ticks, "
          f"{r.monitor.gaps} gaps, {r.monitor.skipped} skipped, "
          f"residual p95 {sorted(window)[int(0.95 * len(window))]:.5f} rad")
    assert 0.0 < mae < 0.05, mae  # the error of a true model, not of a stalled run
    return mae


@pytest.fixture(scope="module")
def reference_mae(context, tmp_path_factory) -> float:
    """The true set's mean position error over one pass through this driver and emulator,
    re-synced as the monitor and a fit do: the validation MAE a perfect fit records."""
    folder = tmp_path_factory.mktemp("reference")
    with closing(lambda: MonitoredDriver(context, folder, PLACEHOLDER_MAE)) as make:
        r = make()
        r.judge_until(r.start + PASS)
        return pass_mae(r)


@pytest.fixture
def rig(context, tmp_path, reference_mae):
    with closing(lambda: MonitoredDriver(context, tmp_path, reference_mae)) as make:
        yield make


def test_the_true_set_stays_ok_for_a_whole_pass(context, tmp_path):
    """Judged against its own pass's mean error: under load one pass's mean moved from
    0.0013 to 0.0058 rad between runs (the reference fixture's), so a reference from
    another pass warned at 2.0-2.3x twice where this pass's peak was a usual 0.0052-0.0055
    rad. The WARN rule is applied to the monitor's own running MAE here (its file's MAE a
    placeholder: no MAE verdict of its own); the faults below check its verdicts."""
    with closing(lambda: MonitoredDriver(context, tmp_path, PLACEHOLDER_MAE)) as make:
        r = make()
        r.judge_until(r.start + PASS)
        reference = pass_mae(r)
        warn = r.monitor.get_parameter("warn_factor").value
        statuses = r.statuses(r.start)
    peak = max(float(values(s)["mae_position"]) for _, s in statuses)
    print(f"OK pass: running MAE peak {peak / reference:.2f}x its own mean, "
          f"gaps {values(statuses[-1][1])['gaps']}")
    assert peak <= warn * reference, (peak, reference)
    assert len(statuses) >= PASS / MONITOR["diagnostic_period"] - 2  # reported throughout
    assert_ok(statuses)
    named = [s.message for _, s in statuses if "jammed" in s.message or "bus delay" in s.message]
    assert not named, named
    assert {(s.hardware_id, s.name) for _, s in statuses} == {("mx64", "/monitor: pendulum")}


def more_friction(emulator) -> None:
    emulator.set_physics(**{name: 1.5 * TRUE.values[name] for name in friction_names(TRUE)})


# fault: (inject into the emulator, the cause the warning names, its bound in s)
FAULTS: dict[str, tuple[Callable, str, float]] = {
    "friction x1.5": (more_friction, "friction +", 10.0),
    "jam": (lambda emulator: emulator.set_physics(friction_base=500.0), "jammed", 8.0),
    # Every reply 8 ms late, longer than the 5 ms cycle: the driver falls to ~100 Hz.
    "bus delay": (lambda emulator: emulator.inject(latency=0.008), "bus delay", 3.0),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_in_the_servo_is_warned_and_named(rig, fault):
    inject, cause, bound = FAULTS[fault]
    r = rig()
    r.judge_until(r.start + BEFORE_FAULT)
    inject(r.emulator)
    at = r.now()  # the emulator answered: the fault is in force
    delay, message = r.first_warning(at, cause, bound)
    print(f"\n{fault}: WARN after {delay:.2f} s: {message}")
    assert_ok([s for s in r.statuses(r.start) if s[0] < at])  # OK until the fault
    assert delay <= bound, (delay, message)
