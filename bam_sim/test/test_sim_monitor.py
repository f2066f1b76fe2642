"""The health monitor (``monitor``) in the shadow of a simulated pendulum, over DDS.

The pendulum node runs the true MX-64 M4 set at 200 Hz with the MX-64's encoder step
(2π/4096) on its published position and publishes /clock; a driver in the probe plays
the identification protocol's trajectories on ``bam/commands`` (torque-off drops
included), one command per state received, the pendulum in lock-step with it (a tick
per command): what the monitor sees is the same on any machine, however loaded. The
monitor is given a file holding the true values and, as its validation MAE, what a
perfect fit would score on this bench: the encoder's rounding error along the same
trajectories. Its thresholds (WARN 2x, ERROR 5x) therefore sit where a real fit's
would, a few times the error the model cannot explain.

Faults are injected mid-run through the pendulum's own parameters, as ``ros2 param
set`` would: every friction magnitude x1.5, or friction_base 500 N·m (a jam). Time
is the states' time: the diagnostic carries the stamp of the sample it holds for, and
the bounds below are in simulated seconds; nothing sleeps.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from bam_msgs.msg import ActuatorCommand, ActuatorState, ActuatorStateArray, BenchInfo
from bam_sim.bench.geometry import Bench
from bam_sim.bench.shadow import friction_names
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import played
from bam_sim.common import contract
from bam_sim.common.errors import BamError
from bam_sim.common.qos import profile
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.nodes.monitor_node import MonitorNode, main
from bam_sim.nodes.pendulum_node import PendulumNode
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import (
    SimProbe,
    closing,
    executable_error,
    stamp_ns,
    wait_matched,
)

DOMAIN = ros_domain(2)
TIMEOUT = 120.0  # s of wall time, discovery included (a loaded 2-core machine)
RATE = 200.0  # Hz of the pendulum and its states
DT = 1.0 / RATE
ENCODER = 2.0 * math.pi / 4096  # rad, the MX-64's encoder step
BENCH = dict(mass=1.0, length=0.15, arm_mass=0.1)
TRUE = published_named("mx64", "m4")
# The protocol's trajectories the driver plays, back to back, over and over.
TRAJECTORIES = ("slow_oscillations", "lift_drop", "steps")
OK_RUN = 18.0  # s of simulated time: one pass over the trajectories
WARN_BOUND = 5.0  # s of simulated time from the fault to a WARN naming it (5 windows; seen: 1-2 s)
MONITOR = dict(resync_period=1.0, mae_window=5.0, diagnostic_period=0.5)


def protocol() -> tuple[list[float], list[bool]]:
    """(goal, enable) per tick of one pass over :data:`TRAJECTORIES`."""
    return played(TRAJECTORIES, DT)


def perfect_fit_mae() -> float:
    """The validation MAE a fit finding the true values scores on this bench: the encoder's
    rounding of the positions along the protocol."""
    bench = BenchStepper(TRUE, Bench(**BENCH), DT, quantization=ENCODER)
    total = 0.0
    goals, enables = protocol()
    for goal, enabled in zip(goals, enables, strict=True):
        bench.set_command(goal=goal, torque_enable=enabled)
        true_position = bench.state[0]
        total += abs(bench.tick().position - true_position)
    return total / len(goals)


@pytest.fixture(scope="module")
def context():
    with private_context(DOMAIN) as ctx:
        yield ctx


@pytest.fixture(scope="module")
def true_file(tmp_path_factory) -> Path:
    fitted = ParameterSet.build(TRUE.actuator, TRUE.model, TRUE.values, {
        "source": "test_sim_monitor: the true values, as a perfect fit finds them",
        "validation_mae": perfect_fit_mae()})
    return save(fitted, tmp_path_factory.mktemp("monitor") / "mx64_m4.yaml")


class MonitorRig:
    """The pendulum (true set), a driver playing the protocol, the monitor beside them."""

    def __init__(self, context, true_file: Path) -> None:
        self.bench = SimProbe(context, PendulumNode, "monitor", TIMEOUT, rate=RATE,
                              lockstep=True, params_file=str(true_file),
                              quantization=ENCODER, **BENCH)
        probe = self.bench.probe
        self.diagnostics = self.bench.record(DiagnosticArray, contract.DIAGNOSTICS.name,
                                             profile(contract.DIAGNOSTICS.qos))
        self.residuals = self.bench.record(JointState, contract.MONITOR_RESIDUALS)
        self._goals, self._enables = protocol()
        self._t0: int | None = None
        probe.create_subscription(JointState, contract.JOINT_STATES.name, self._drive,
                                  profile(contract.JOINT_STATES.qos))
        self.monitor = MonitorNode(context=context, parameter_overrides=[
            Parameter("params_file", value=str(true_file)),
            *[Parameter(k, value=v) for k, v in MONITOR.items()]])
        self.bench.executor.add_node(self.monitor)
        # In lock-step the pendulum's first tick waits for the first command.
        wait_matched(self.bench.commands, "the pendulum's command subscription", TIMEOUT,
                     [self.bench.node.topics.command_subscriptions[contract.COMMANDS.name]])
        self._send(0)
        self.bench.wait_ready()
        self.bench.wait_for(lambda: self.monitor.samples > 0 and self.residuals,
                            "the monitor following the states")

    def _drive(self, msg: JointState) -> None:
        """The protocol's command of the tick after the one the pendulum reports: in
        lock-step, each command sent makes the next tick."""
        self._t0 = stamp_ns(msg) if self._t0 is None else self._t0
        self._send(round((stamp_ns(msg) - self._t0) * 1e-9 / DT) + 1)

    def _send(self, tick: int) -> None:
        k = tick % len(self._goals)
        self.bench.commands.publish(ActuatorCommand(
            names=["pendulum"], goal_positions=[self._goals[k]],
            torque_enables=[self._enables[k]]))

    def now(self) -> float:
        """The states' time, s."""
        return stamp_ns(self.bench.joint_states[-1]) * 1e-9

    def statuses(self, since: float = -math.inf) -> list[tuple[float, DiagnosticStatus]]:
        """(stamp, status) of the monitor's /diagnostics, from ``since`` (states' time) on."""
        found = []
        for msg in list(self.diagnostics):
            for status in msg.status:
                if status.name.startswith("/monitor") and stamp_ns(msg) * 1e-9 >= since:
                    found.append((stamp_ns(msg) * 1e-9, status))
        return found

    def run_until(self, until: float) -> None:
        self.bench.wait_for(lambda: self.now() >= until, f"simulated time {until:g} s")

    def inject(self, **values: float) -> float:
        """Set the pendulum's parameters at once; the states' time just before, s."""
        before = self.now()
        result = self.bench.node.set_parameters_atomically(
            [Parameter(name, value=value) for name, value in values.items()])
        assert result.successful, result.reason
        return before

    def first_warning(self, since: float, cause: str, bound: float) -> tuple[float, str]:
        """The first WARN or ERROR after ``since`` naming ``cause``, waiting at most
        ``bound`` + 2 s of simulated time: (its delay after ``since``, its message)."""
        def warned() -> list:
            return [(t, s.message) for t, s in self.statuses(since)
                    if s.level >= DiagnosticStatus.WARN and cause in s.message]
        self.bench.wait_for(lambda: warned() or self.now() > since + bound + 2.0,
                            f"a warning naming {cause!r}")
        found = warned()
        assert found, f"no WARN naming {cause!r} within {bound + 2:g} s: " \
            f"{[(round(t - since, 2), s.message) for t, s in self.statuses(since)][-5:]}"
        return found[0][0] - since, found[0][1]

    def close(self) -> None:
        self.bench.close()  # the executor stops first, then the nodes go
        self.monitor.destroy_node()


@pytest.fixture
def rig(context, true_file):
    with closing(lambda: MonitorRig(context, true_file)) as make:
        yield make


def assert_ok(statuses: list) -> None:
    bad = [(round(t, 2), s.message) for t, s in statuses if s.level != DiagnosticStatus.OK]
    assert statuses and not bad, bad


@pytest.mark.live
def test_the_true_set_stays_ok_for_the_whole_run(rig):
    r = rig()
    start = r.now()
    r.run_until(start + OK_RUN)
    statuses = r.statuses()
    assert len(statuses) >= OK_RUN / MONITOR["diagnostic_period"] - 2
    assert_ok(statuses)
    assert all(s.hardware_id == "mx64" and s.name == "/monitor: pendulum" for _, s in statuses)
    # The residuals are published per sample, stamped with it.
    assert {tuple(m.name) for m in r.residuals} == {("pendulum",)}


@pytest.mark.live
def test_half_more_friction_is_warned_and_named(rig):
    r = rig()
    r.run_until(r.now() + 2.0)
    fault = r.inject(**{name: 1.5 * TRUE.values[name] for name in friction_names(TRUE)})
    assert_ok(r.statuses())  # before the fault: OK
    delay, message = r.first_warning(fault, "friction +", WARN_BOUND)
    assert delay <= WARN_BOUND, (delay, message)


@pytest.mark.live
def test_a_jammed_joint_is_warned_and_named(rig):
    r = rig()
    r.run_until(r.now() + 2.0)  # moving: the protocol has started
    fault = r.inject(friction_base=500.0)  # the stop-torque clip holds the joint anywhere
    assert_ok(r.statuses())
    delay, message = r.first_warning(fault, "jammed", WARN_BOUND)
    assert delay <= WARN_BOUND, (delay, message)


# -- samples that say nothing, through the node's pairing of the two topics --------------

def feed(node: MonitorNode, stamp_ns: int, position: float, goal: float = 0.0) -> None:
    """One sample of the pendulum, as its two topics deliver it (joint state first)."""
    joint = JointState(name=["pendulum"], position=[position], velocity=[0.0])
    states = ActuatorStateArray(actuators=[ActuatorState(
        name="pendulum", goal_position=goal, torque_enable=True, gain=32.0,
        temperature=math.nan, input_voltage=math.nan)])
    for msg in (joint, states):
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    node._on_joint(joint)
    node._on_states(states)


def test_nan_states_and_frozen_stamps_reach_the_diagnostics(context, true_file, monkeypatch):
    """Deterministic: the callbacks are called directly (nothing spins, no wall time); the
    STALE bound is a count of samples, one re-sync window's worth (200 at 200 Hz)."""
    monitor = MonitorNode(context=context, parameter_overrides=[
        Parameter("params_file", value=str(true_file)),
        *[Parameter(k, value=v) for k, v in MONITOR.items()]])
    published_ = []
    monkeypatch.setattr(monitor._diag_pub, "publish", published_.append)
    try:
        monitor._on_info(BenchInfo(actuator="mx64", joint_name="pendulum", supply_voltage=15.0,
                                   control_rate=RATE, **BENCH))
        tick = round(1e9 * DT)
        for k in range(300):  # the pendulum at rest on its goal: OK
            feed(monitor, k * tick, 0.0)
        assert monitor.last_status.level == DiagnosticStatus.OK, monitor.last_status.message
        for k in range(300, 400):  # the driver's reads fail: NaN positions
            feed(monitor, k * tick, math.nan)
        status = published_[-1].status[0]
        assert status.level == DiagnosticStatus.ERROR
        assert status.message.startswith("pendulum: position nan in the states"), status.message
        for k in range(400, 700):  # good again, then the stamps freeze at sample 699's
            feed(monitor, k * tick, 0.0)
        assert monitor.last_status.level == DiagnosticStatus.OK, monitor.last_status.message
        count = len(published_)
        for _ in range(199):
            feed(monitor, 699 * tick, 0.0)
        assert len(published_) == count  # nothing new until the bound
        feed(monitor, 699 * tick, 0.0)
        status = published_[-1].status[0]
        assert status.level == DiagnosticStatus.STALE, status.message
        assert "stamps stay at 3.495000 s for 200 samples" in status.message
        assert stamp_ns(published_[-1]) == 699 * tick  # the states' time, frozen
    finally:
        monitor.destroy_node()


# -- bad parameters: refused before anything runs ---------------------------------------

@pytest.mark.parametrize("overrides, match", [
    ({}, "params_file is required"),
    ({"params_file": "/no/such.yaml"}, "such.yaml"),
    ({"params_file": "{published}"}, "no validation_mae in its provenance"),
    ({"params_file": "{nan_mae}"}, r"provenance validation_mae is '?nan'?, not an MAE > 0 rad"),
    ({"params_file": "{fitted}", "warn_factor": 5.0, "error_factor": 2.0},
     "warn_factor < error_factor"),
    ({"params_file": "{fitted}", "resync_period": 0.0}, r"resync_period must be in"),
    ({"params_file": "{fitted}", "resync_perod": 1.0}, "did you mean 'resync_period'"),
], ids=["no file", "missing file", "no validation MAE", "NaN validation MAE", "factors",
        "resync", "typo"])
def test_bad_parameters_are_refused(context, true_file, tmp_path, overrides, match):
    plain = save(TRUE, tmp_path / "published.yaml")
    nan_mae = save(ParameterSet.build(TRUE.actuator, TRUE.model, TRUE.values, {
        "train_mae": 0.01, "validation_mae": math.nan}), tmp_path / "nan_mae.yaml")
    files = {"{published}": str(plain), "{fitted}": str(true_file), "{nan_mae}": str(nan_mae)}
    params = [Parameter(k, value=files.get(v, v)) for k, v in overrides.items()]
    with pytest.raises(BamError, match=match):
        MonitorNode(context=context, parameter_overrides=params)


@pytest.mark.live
def test_the_executable_refuses_in_one_line(tmp_path):
    plain = save(TRUE, tmp_path / "published.yaml")
    error = executable_error("bam_sim.nodes.monitor_node",
                             ["monitor", "--ros-args", "-p", f"params_file:={plain}"],
                             DOMAIN, 60)
    assert "reference_mae:=" in error


def test_help_lists_the_parameters(capsys):
    assert main(["monitor", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("params_file", "resync_period", "reference_mae", "warn_factor"):
        assert name in out
