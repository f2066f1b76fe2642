"""``trajectory``: plays the bench trajectories of the identification protocol.

Action server ``/bam/run_trajectory`` (``bam_msgs/action/RunTrajectory``): a
goal names a trajectory of :mod:`bam_sim.bench.trajectory` and a gain. A run

0. waits until ``/bam/commands`` has a matched subscriber (the actuator: DDS
   drops what is published before), at most ``match_timeout`` s of wall
   time, else it is aborted with a one-line message;
1. holds the start pose for ``settle`` seconds: ``/bam/commands`` with torque
   on, the goal's gain and q_d(0);
2. publishes a START marker on ``/bam/trial`` stamped now, then commands the
   trajectory at ``command_rate``: goal position and torque enable are its law
   evaluated at the time elapsed since START (so a late tick never shifts the
   trajectory), with feedback (progress 0..1, elapsed);
3. after ``duration`` seconds publishes the END marker (success true) and
   returns the result (success, trial_id, duration).

A canceled run ends with an END marker with success false. Everything runs on
the node clock: with ``use_sim_time`` it follows ``/clock``, so a simulator
running faster than real time is followed. The run is driven by a timer of
the node clock; the action's execute callback only awaits its outcome, so the
node works on any executor (single- or multi-threaded) without blocking one.

Goals are checked when they arrive, before anything is commanded: an unknown
trajectory, a gain that is not a finite number > 0, a trial id already used,
or a goal arriving while another run (or a protocol) plays are accepted and
aborted at once with ``success = false`` and a one-line ``message`` (a
rejected goal could carry no explanation). One run at a time: goals are not
queued.

With ``protocol_file`` set, the node plays that schedule
(:mod:`bam_identify.protocol`) once it starts, as soon as ``/bam/commands``
has a subscriber (and, under sim time, ``/clock`` runs); trial ids increase
from ``start_id``. :attr:`TrajectoryNode.protocol_done` (a
``threading.Event``) is set when the schedule is over; with ``exit_when_done``
the executable then exits (for launch files).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.task import Future
from rclpy.time import Time

from bam_identify.protocol import Protocol, check_gain, check_trajectory, load_protocol
from bam_msgs.action import RunTrajectory
from bam_msgs.msg import ActuatorCommand, Trial
from bam_sim.bench.trajectory import Trajectory, get_trajectory
from bam_sim.common.contract import COMMANDS, RUN_TRAJECTORY_ACTION, TRIAL
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import Param, declare, refuse_unknown, usage
from bam_sim.common.numbers import number
from bam_sim.common.qos import profile
from bam_sim.common.runner import run_node
from bam_sim.common.share import share_file

NODE_NAME = "trajectory"
FEEDBACK_PERIOD = 0.05  # s of wall time between feedback messages
WATCH_PERIOD = 0.1  # s of wall time: protocol start, stalled-clock warning
SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the package folder of a source checkout
STALL_WARNING = 5.0  # s of wall time without the node clock moving during a run
MATCHING, SETTLE, RUNNING = "matching", "settle", "running"


@dataclass
class Outcome:
    """How a run ended."""

    success: bool
    canceled: bool = False
    message: str = ""
    duration: float = 0.0  # s between START and END (node clock)


@dataclass
class _Run:
    trajectory: Trajectory
    gain: float
    trial_id: int
    repetition: int
    duration: float
    settle: float
    goal_handle: object = None  # ServerGoalHandle of an action goal, None in protocol mode
    done: Future = field(default_factory=Future)
    phase: str = ""  # MATCHING, "" (ready to settle), SETTLE, RUNNING
    match_deadline: float = 0.0  # time.monotonic() by which bam/commands must be matched
    t_settle: int = 0  # ns, node clock
    t_start: int = 0  # ns, node clock, stamp of the START marker
    commands: int = 0  # commands published since START
    last_feedback: float = -math.inf  # time.monotonic()

    @property
    def label(self) -> str:
        return (f"trial {self.trial_id} ({self.trajectory.name}, kp={self.gain:g}, "
                f"repetition {self.repetition})")


PARAMETERS: tuple[Param, ...] = (
    Param("joint_name", "pendulum", "actuator (joint) name used in bam/commands",
          read_only=True),
    Param("command_rate", 200.0, "Hz of bam/commands during a run, in node clock time",
          read_only=True, low=0.001, high=1.0e5, dynamic=True),
    Param("duration", 6.0, "s per run (a protocol file may set its own)", low=0.001,
          high=1.0e6, dynamic=True),
    Param("settle", 0.5, "s holding the start pose (torque on, goal q_d(0)) before START (a "
          "protocol file may set its own)", low=0.0, high=1.0e6, dynamic=True),
    Param("protocol_file", "", "protocol YAML played once at start ('' = none; a bare name "
          "is looked up in share/bam_identify/config)", read_only=True),
    Param("exit_when_done", False, "protocol mode: exit when the schedule is done",
          read_only=True),
    Param("start_id", 1, "trial_id of the first run", read_only=True, low=1, high=2**32 - 1),
    Param("match_timeout", 10.0, "s of wall time a run waits for the actuator's subscription "
          "to bam/commands before it is aborted (a command sent before it would be lost)",
          read_only=True, low=0.001, high=1.0e6),
)


def _positive(value: object, name: str) -> float:
    return number(value, f"parameter {name}", low=0.0, low_open=True)


def _non_negative(value: object, name: str) -> float:
    return number(value, f"parameter {name}", low=0.0)


def resolve_protocol_file(name: str) -> Path:
    """``name`` as given if it exists, else a file of bam_identify's ``config`` folder."""
    path = Path(name).expanduser()
    if path.is_file() or path.is_absolute():
        return path
    for candidate in (name, f"{name}.yaml"):
        try:
            return share_file("bam_identify", "config", candidate, source_root=SOURCE_ROOT)
        except BamError:
            continue
    return path  # load_protocol names it in its error


class TrajectoryNode(Node):
    """Plays bench trajectories: action server, protocol player (see the module docstring).

    ``TrajectoryNode(**kwargs)`` forwards ``kwargs`` (context, parameter_overrides,
    ...) to ``rclpy.node.Node``; bad parameters raise BamError (one line).
    Parameters: joint_name, command_rate (Hz, node clock), duration and settle
    (s, may change between runs), protocol_file, exit_when_done, start_id.

    Attributes: ``protocol`` (the schedule, or None), ``protocol_done``
    (threading.Event, set when the schedule is over; never set without a
    protocol), ``results`` (list of (trial_id, Outcome) of finished runs, in
    order), ``commands_published`` (total /bam/commands messages).
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        try:
            self._configure()
        except BamError:
            self.destroy_node()
            raise

    # ----------------------------------------------------------------------------------------
    # Set-up
    # ----------------------------------------------------------------------------------------

    def _configure(self) -> None:
        values = declare(self, PARAMETERS)
        refuse_unknown(self)
        value = values.__getitem__
        self.joint_name = str(value("joint_name"))
        if not self.joint_name.strip():
            raise BamError("parameter joint_name must not be empty")
        self.command_rate = _positive(value("command_rate"), "command_rate")
        _positive(value("duration"), "duration")  # read again at the start of each run
        _non_negative(value("settle"), "settle")
        self.exit_when_done = bool(value("exit_when_done"))
        self.match_timeout = _positive(value("match_timeout"), "match_timeout")
        start_id = int(value("start_id"))  # an integer in range: its descriptor says so
        protocol_file = str(value("protocol_file")).strip()
        self.protocol: Protocol | None = None
        if protocol_file:
            self.protocol = load_protocol(resolve_protocol_file(protocol_file))
        self.add_on_set_parameters_callback(self._on_set_parameters)

        self._lock = threading.RLock()
        self._next_id = start_id
        self._used_ids: set[int] = set()
        self._run: _Run | None = None
        self.protocol_done = threading.Event()
        self.results: list[tuple[int, Outcome]] = []
        self.commands_published = 0
        self._protocol_index = 0
        self._protocol_started = False
        self._waiting_logged = False
        self._stall = (0, time.monotonic())  # (node clock ns, wall time) last seen moving
        self._stall_warned = False

        self._commands = self.create_publisher(ActuatorCommand, COMMANDS.name,
                                               profile(COMMANDS.qos))
        self._markers = self.create_publisher(Trial, TRIAL.name, profile(TRIAL.qos))
        self._server = ActionServer(
            self, RunTrajectory, RUN_TRAJECTORY_ACTION, execute_callback=self._execute,
            goal_callback=self._on_goal, cancel_callback=self._on_cancel)
        # Runs tick on the node clock (sim time under use_sim_time); the watch timer runs on
        # wall time, so it works before /clock starts.
        self._timer = self.create_timer(1.0 / self.command_rate, self._tick, autostart=False)
        self._watch_timer = self.create_timer(
            WATCH_PERIOD, self._watch, clock=Clock(clock_type=ClockType.STEADY_TIME))
        if self.protocol is not None:
            self.get_logger().info(
                f"protocol {protocol_file}: {len(self.protocol)} runs; waiting for a "
                f"subscriber on {COMMANDS.name}")

    def _value(self, name: str):
        return self.get_parameter(name).value

    def _on_set_parameters(self, parameters) -> SetParametersResult:
        try:
            for parameter in parameters:
                if parameter.name == "duration":
                    _positive(parameter.value, "duration")
                elif parameter.name == "settle":
                    _non_negative(parameter.value, "settle")
        except BamError as err:
            return SetParametersResult(successful=False, reason=str(err))
        return SetParametersResult(successful=True)

    # ----------------------------------------------------------------------------------------
    # Runs
    # ----------------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A run is playing (or a protocol is under way)."""
        with self._lock:
            return self._run is not None or self._protocol_pending()

    def _protocol_pending(self) -> bool:
        return self.protocol is not None and not self.protocol_done.is_set()

    def _begin(self, trajectory: str, gain: float, repetition: int, trial_id: int,
               goal_handle=None, duration: float | None = None,
               settle: float | None = None) -> _Run:
        """Start a run (checked first; BamError when it cannot be played)."""
        name = check_trajectory(trajectory, "goal")
        gain = check_gain(gain, "goal")
        with self._lock:
            if self._run is not None:
                raise BamError(f"busy: {self._run.label} is playing; send the goal when it "
                               "ends (goals are not queued)")
            if goal_handle is not None and self._protocol_pending():
                raise BamError("busy: the protocol file's schedule is playing; wait for its "
                               "end")
            if trial_id == 0:
                trial_id = self._next_id
                while trial_id in self._used_ids:
                    trial_id += 1
            elif trial_id in self._used_ids:
                raise BamError(f"trial_id {trial_id} was already used by this node; give 0 to "
                               "let the node choose")
            self._used_ids.add(trial_id)
            self._next_id = max(self._next_id, trial_id + 1)
            run = _Run(
                trajectory=get_trajectory(name), gain=gain, trial_id=trial_id,
                repetition=int(repetition), goal_handle=goal_handle,
                duration=_positive(self._value("duration") if duration is None else duration,
                                   "duration"),
                settle=_non_negative(self._value("settle") if settle is None else settle,
                                     "settle"))
            self._run = run
            self._stall = (self.get_clock().now().nanoseconds, time.monotonic())
            self._stall_warned = False
            if self._commands.get_subscription_count() > 0:
                self._play(run)
            else:  # _watch starts it once matched: DDS drops what is sent before
                run.phase = MATCHING
                run.match_deadline = time.monotonic() + self.match_timeout
                self.get_logger().info(f"{run.label}: waiting for a subscriber on "
                                       f"{COMMANDS.name}")
        return run

    def _play(self, run: _Run) -> None:
        """Start ticking ``run`` (lock held): its commands now reach the actuator."""
        run.phase = ""
        self._stall = (self.get_clock().now().nanoseconds, time.monotonic())
        self._timer.reset()
        self._wake()  # an executor waiting in another thread would not see the timer start
        self.get_logger().info(f"{run.label}: settling {run.settle:g} s, then "
                               f"{run.duration:g} s at {self.command_rate:g} Hz")

    def _check_match(self, run: _Run) -> None:
        """A run waiting for the actuator: play it once matched, abort it at its deadline."""
        if self._commands.get_subscription_count() > 0:
            self._play(run)
        elif time.monotonic() > run.match_deadline:
            self._finish(run, Outcome(False, message=(
                f"no subscriber on {COMMANDS.name} within {self.match_timeout:g} s "
                "(match_timeout); start the actuator node (driver or simulation) in this "
                "namespace, then send the goal again")))

    def _tick(self) -> None:
        """One command period of the node clock: advance the playing run."""
        with self._lock:
            run = self._run
            if run is None or run.phase == MATCHING:
                self._timer.cancel()
                return
            now = self.get_clock().now().nanoseconds
            if now <= 0:  # sim time before the first /clock
                return
            canceled = run.goal_handle is not None and run.goal_handle.is_cancel_requested
            if run.phase == "":
                run.phase, run.t_settle = SETTLE, now
            if run.phase == SETTLE:
                if canceled:  # nothing marked yet
                    self._finish(run, Outcome(False, True, "canceled before it started"))
                    return
                if now - run.t_settle < round(run.settle * 1e9):
                    goal, enabled = self._law(run, 0.0)
                    self._command(now, goal, enabled, run.gain)
                    return
                run.phase, run.t_start = RUNNING, now
                self._marker(now, Trial.START, run)
            elapsed = (now - run.t_start) * 1e-9
            if canceled:
                self._marker(now, Trial.END, run, success=False)
                self._finish(run, Outcome(False, True, f"canceled after {elapsed:.3f} s",
                                          elapsed))
                return
            if now - run.t_start >= round(run.duration * 1e9):
                self._marker(now, Trial.END, run, success=True)
                self._feedback(run, elapsed, force=True)
                self._finish(run, Outcome(True, duration=elapsed))
                return
            goal, enabled = self._law(run, elapsed)
            self._command(now, goal, enabled, run.gain)
            run.commands += 1
            self._feedback(run, elapsed)

    @staticmethod
    def _law(run: _Run, elapsed: float) -> tuple[float, bool]:
        goal, enabled = run.trajectory.law(np.array([min(elapsed, run.duration)]), run.duration)
        return float(goal[0]), bool(enabled[0])

    def _feedback(self, run: _Run, elapsed: float, force: bool = False) -> None:
        if run.goal_handle is None:
            return
        wall = time.monotonic()
        if not force and wall - run.last_feedback < FEEDBACK_PERIOD:
            return
        run.last_feedback = wall
        progress = 1.0 if force else min(1.0, elapsed / run.duration)
        run.goal_handle.publish_feedback(RunTrajectory.Feedback(progress=progress,
                                                                elapsed=elapsed))

    def _command(self, stamp_ns: int, goal: float, enabled: bool, gain: float) -> None:
        msg = ActuatorCommand()
        msg.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        msg.names = [self.joint_name]
        msg.goal_positions = [goal]
        msg.torque_enables = [enabled]
        msg.gains = [gain]
        self._commands.publish(msg)
        self.commands_published += 1

    def _marker(self, stamp_ns: int, event: int, run: _Run, success: bool = False) -> None:
        msg = Trial(event=event, trajectory=run.trajectory.name, gain=run.gain,
                    trial_id=run.trial_id, repetition=run.repetition, success=success)
        msg.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        self._markers.publish(msg)

    # One call site per severity: rclpy refuses a call site whose severity changes.
    def _log_outcome_ok(self, text: str) -> None:
        self.get_logger().info(text)

    def _log_outcome_bad(self, text: str) -> None:
        self.get_logger().warning(text)

    def _finish(self, run: _Run, outcome: Outcome) -> None:
        """End ``run`` (lock held): stop ticking, hand the outcome over, next protocol run."""
        self._run = None
        self._timer.cancel()
        self.results.append((run.trial_id, outcome))
        how = ("done" if outcome.success else "canceled" if outcome.canceled
               else f"aborted ({outcome.message})")
        if outcome.success or run.phase == RUNNING:
            how += f" after {outcome.duration:.3f} s, {run.commands} commands"
        log = self._log_outcome_ok if outcome.success else self._log_outcome_bad
        if run.goal_handle is None and self.protocol is not None:
            self._protocol_index += 1
            log(f"protocol run {self._protocol_index}/{len(self.protocol)}: {run.label} {how}")
            if self._protocol_index < len(self.protocol) and outcome.success:
                self._start_protocol_run()
            else:
                self.get_logger().info(
                    f"protocol {'done' if outcome.success else 'stopped'}: "
                    f"{self._protocol_index} of {len(self.protocol)} runs played")
                self.protocol_done.set()
        else:
            log(f"{run.label} {how}")
        run.done.set_result(outcome)
        self._wake()  # the awaiting execute callback is polled when the executor wakes

    def _wake(self) -> None:
        executor = self.executor
        if executor is not None:
            executor.wake()

    def stop(self, reason: str = "stopped") -> None:
        """Abort the playing run (END marker with success false) and any protocol."""
        with self._lock:
            run = self._run
            if self.protocol is not None and not self.protocol_done.is_set() and run is None:
                self.protocol_done.set()
            if run is None:
                return
            now = self.get_clock().now().nanoseconds
            elapsed = (now - run.t_start) * 1e-9 if run.phase == RUNNING else 0.0
            if run.phase == RUNNING and self.context.ok():
                self._marker(now, Trial.END, run, success=False)
            self._finish(run, Outcome(False, False, reason, elapsed))

    def destroy_node(self) -> None:
        """Stop (END marker of a playing run), then destroy the timers, the action server
        and the publishers, then the node: the order of every node of the project."""
        if hasattr(self, "_lock"):  # fully configured
            self.stop("the trajectory node was shut down")
            if self.context.ok():
                # Reliable, transient-local markers: let subscribers have the last ones.
                self._markers.wait_for_all_acked(Duration(seconds=1.0))
            for timer in (self._timer, self._watch_timer):
                self.destroy_timer(timer)
            # Node.destroy_node leaves waitables alone: without this the action server's
            # endpoints (and the rcl node they hold) outlive the node.
            self._server.destroy()
            for publisher in (self._commands, self._markers):
                self.destroy_publisher(publisher)
        super().destroy_node()

    # ----------------------------------------------------------------------------------------
    # Action server
    # ----------------------------------------------------------------------------------------

    def _on_goal(self, request) -> GoalResponse:
        # Checked in the execute callback, so that a refusal carries its reason.
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        return CancelResponse.ACCEPT

    async def _execute(self, goal_handle):
        request = goal_handle.request
        try:
            run = self._begin(request.trajectory, request.gain, request.repetition,
                              request.trial_id, goal_handle)
        except BamError as err:
            self.get_logger().error(f"goal refused: {err}")
            goal_handle.abort()
            return RunTrajectory.Result(success=False, message=str(err), trial_id=0,
                                        duration=0.0)
        outcome = await run.done
        if outcome.success:
            goal_handle.succeed()
        elif outcome.canceled and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        message = outcome.message
        return RunTrajectory.Result(success=outcome.success, message=message,
                                    trial_id=run.trial_id, duration=outcome.duration)

    # ----------------------------------------------------------------------------------------
    # Protocol mode and watchdog (wall clock)
    # ----------------------------------------------------------------------------------------

    def _start_protocol_run(self) -> None:
        item = self.protocol.runs[self._protocol_index]
        self._begin(item.trajectory, item.gain, item.repetition, 0, None,
                    self.protocol.duration if item.duration is None else item.duration,
                    self.protocol.settle)

    def _watch(self) -> None:
        with self._lock:
            if self._protocol_pending() and not self._protocol_started:
                self._maybe_start_protocol()
            run = self._run
            if run is not None and run.phase == MATCHING:
                self._check_match(run)
            elif run is not None:
                now, wall = self.get_clock().now().nanoseconds, time.monotonic()
                if now != self._stall[0]:
                    self._stall = (now, wall)
                elif wall - self._stall[1] > STALL_WARNING and not self._stall_warned:
                    self._stall_warned = True
                    self.get_logger().warning(
                        f"{run.label}: the node clock has not moved for {STALL_WARNING:g} s; "
                        "with use_sim_time, is /clock published?")

    def _maybe_start_protocol(self) -> None:
        if self._commands.get_subscription_count() == 0:
            return
        if self.get_clock().now().nanoseconds <= 0:
            if not self._waiting_logged:
                self._waiting_logged = True
                self.get_logger().info("waiting for /clock (use_sim_time is true)")
            return
        self._protocol_started = True
        self.get_logger().info(f"{COMMANDS.name} has a subscriber: playing the protocol")
        self._start_protocol_run()


# --------------------------------------------------------------------------------------------
# Executable
# --------------------------------------------------------------------------------------------


def main(args: list[str] | None = None) -> int:
    help_text = usage(NODE_NAME, "Plays the bench trajectories (bam_identify)", PARAMETERS)
    return run_node(NODE_NAME, TrajectoryNode, help_text, args,
                    lambda node: node.protocol_done if node.exit_when_done else None)


if __name__ == "__main__":
    sys.exit(main())
