"""The base of every actuator node, simulated or hardware: loop, commands, parameters.

The pendulum and arm nodes (:mod:`bam_sim.nodes`) are thin nodes over a
numerical simulator, the drivers (:mod:`bam_drivers.nodes`) thin nodes over a
bus supervisor. All are :class:`ActuatorNode`: they declare parameters from a
table (:mod:`.node_parameters`), tick in a thread of their own
(:mod:`.tick_loop`), publish and subscribe to the swap contract
(:mod:`.actuator_topics`), parse commands alike (:mod:`.commands`) and accept
a parameter change only when the node's ``_plan`` of it passes. Simulation
nodes (:class:`SimNode`) also stamp messages with exact simulated time
(:mod:`.sim_time`) and turn torque off on stale commands (:mod:`.watchdog`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand
from bam_sim.common import contract
from bam_sim.common.actuator_topics import ActuatorTopics
from bam_sim.common.commands import (
    CommandError,
    CommandLimits,
    JointCommand,
    Rejections,
    check_command,
    parse_command,
    parse_joint_command,
    parse_position_command,
    refusal_kind,
)
from bam_sim.common.errors import BamError
from bam_sim.common.sim_time import SimTime
from bam_sim.common.tick_loop import TickLoop
from bam_sim.common.watchdog import Watchdog


class ActuatorNode(Node):
    """Base of the actuator nodes: loop thread, command callbacks, rejections, parameters.

    A subclass implements :meth:`_setup` (declare parameters, build its
    simulator or bus, set :attr:`joint_names`, call :meth:`_create_topics` and
    :meth:`_start_loop`), :meth:`_tick` / :attr:`tick_count` for the loop,
    :meth:`_apply` (take a parsed :class:`JointCommand`), and for the
    parameters it lets change :meth:`_plan` (validate a batch of changes) and
    :meth:`_apply_plan` (apply them), registered by :meth:`_follow_parameters`.
    :attr:`lock` guards what the loop and the callbacks share. Keyword
    arguments go to :class:`rclpy.node.Node`; a failed set-up destroys the
    node before the error propagates.
    """

    joint_names: tuple[str, ...] = ()
    topics: ActuatorTopics
    command_limits: CommandLimits  # set by the subclass's _setup

    def __init__(self, default_name: str, **kwargs) -> None:
        super().__init__(kwargs.pop("node_name", default_name), **kwargs)
        self._lock = threading.Lock()
        self._loop: TickLoop | None = None
        self._rejections = Rejections(self)
        try:
            self._setup()
        except BaseException:
            super().destroy_node()
            raise

    # -- subclass hooks ----------------------------------------------------------------

    def _setup(self) -> None:
        raise NotImplementedError

    def _tick(self) -> None:
        raise NotImplementedError

    @property
    def tick_count(self) -> int:
        """Index of the next tick of the loop."""
        raise NotImplementedError

    def _apply(self, kind: str, command: JointCommand) -> None:
        """Take a parsed command; reject it as ``kind`` when a value is bad."""
        raise NotImplementedError

    def _plan(self, params: list[Parameter]) -> dict:
        """Validate a batch of parameter changes; what to apply (raises BamError)."""
        return {}

    def _apply_plan(self, plan: dict) -> None:
        """Apply what :meth:`_plan` returned for a batch it accepted."""

    # -- public helpers ----------------------------------------------------------------

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    @property
    def rejected_commands(self) -> Counter[str]:
        """Rejected commands per kind."""
        return self._rejections.counts

    @property
    def logged_command_errors(self) -> list[str]:
        """Kinds of rejected commands logged (once each)."""
        return self._rejections.logged

    @property
    def slips(self) -> int:
        """Times the loop fell behind real time and restarted its deadlines."""
        return self._loop.slips if self._loop is not None else 0

    def record_timing(self, ticks: int) -> None:
        """Record when each of the next ``ticks`` ticks starts (see TickLoop.record_timing)."""
        self._loop.record_timing(ticks)

    def timing(self) -> dict:
        """The recorded ticks: first tick index, wall start ns and lateness ns."""
        return self._loop.timing()

    def stop(self) -> None:
        """Stop the loop thread: no more ticks nor messages (the node itself stays)."""
        if self._loop is not None:
            self._loop.stop()

    def _stop_threads(self) -> bool:
        """:meth:`stop`; whether the loop thread has ended (what it uses may go)."""
        self.stop()
        return self._loop is None or not self._loop.alive

    def release(self) -> bool:
        """What a stop must finish before anything may be cut: the loop thread joined (a
        driver then turns torque off, read back); whether the thread has ended."""
        return self._stop_threads()

    def destroy_node(self) -> None:
        """The shutdown order of every actuator node: stop (the loop thread joined; a
        driver then turns torque off), destroy the entities, destroy the node.

        Nothing is destroyed while the loop thread lives (it publishes with them): if it
        has not ended within the loop's stop timeout, the node is left to the process's
        exit, logged.
        """
        if not self._stop_threads():
            self.get_logger().error(
                "the loop thread did not stop in time; its node is left to the process's "
                "exit")
            return
        topics = getattr(self, "topics", None)
        if topics is not None:
            topics.destroy()
        super().destroy_node()

    # -- for subclasses ----------------------------------------------------------------

    def _create_topics(self, control_units: Sequence[str], input_voltages: Sequence[float],
                       *, publish_clock: bool) -> None:
        """:attr:`topics` of :attr:`joint_names`, commands to this node's callbacks."""
        self.topics = ActuatorTopics(
            self, self.joint_names, control_units, input_voltages, publish_clock=publish_clock,
            on_command=self._on_command, on_position_command=self._on_position_command,
            on_joint_command=self._on_joint_command)

    def _start_loop(self, name: str, rate: float, real_time_factor: float,
                    priority: int = 0, steps: threading.Semaphore | None = None) -> None:
        self._loop = TickLoop(self, name, rate, self._tick, lambda: self.tick_count,
                              real_time_factor, priority, steps)
        self.context.on_shutdown(self._loop.request_stop)
        self._loop.start()

    def _follow_parameters(self) -> None:
        """Parameter changes from now on: accepted when :meth:`_plan` passes, then applied."""
        self.add_on_set_parameters_callback(self._on_set)
        self.add_post_set_parameters_callback(self._on_post_set)

    def _on_set(self, params: list[Parameter]) -> SetParametersResult:
        """An on-set-parameters callback: accept the batch when :meth:`_plan` passes.

        The plan is kept for :meth:`_on_post_set`, so a batch (a parameter file
        read, a set built) is validated once.
        """
        try:
            self._accepted_plan = self._plan(params)
        except BamError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _on_post_set(self, params: list[Parameter]) -> None:
        plan, self._accepted_plan = getattr(self, "_accepted_plan", None), None
        if plan:
            self._apply_plan(plan)

    # -- commands ----------------------------------------------------------------------

    def _take(self, topic: contract.Topic, parse: Callable[..., JointCommand], msg) -> bool:
        """``parse(msg, joints)`` applied (values checked there, as ``<topic>/value``);
        False when the parse rejected it. The one path of every command topic."""
        try:
            command = parse(msg, self.joint_names)
        except CommandError as exc:
            self._rejections.reject(exc.kind, str(exc))
            return False
        self._apply(refusal_kind(topic, "value"), command)
        return True

    def _on_command(self, msg: ActuatorCommand) -> None:
        self._take(contract.COMMANDS, parse_command, msg)

    def _on_position_command(self, msg: Float64MultiArray) -> None:
        n = len(self.joint_names)
        if self._take(contract.POSITION_COMMANDS, parse_position_command, msg) \
                and len(msg.data) > n:
            self._rejections.warn_once(
                "position_commands/extra",
                f"/position_commands holds {len(msg.data)} values; this node has {n} "
                f"joint(s) ({', '.join(self.joint_names)}), using the first {n}")

    def _on_joint_command(self, msg: JointState) -> None:
        """ros2_control's TopicBasedSystem commands (:func:`parse_joint_command`)."""
        if self._take(contract.JOINT_COMMANDS, parse_joint_command, msg) and len(msg.velocity):
            self._rejections.warn_once(
                "joint_commands/velocity",
                "/joint_commands holds velocities: ignored, this node's actuators follow "
                "position goals only (drop the joints' 'velocity' command interface)")


class SimNode(ActuatorNode):
    """Base of the simulation nodes: an :class:`ActuatorNode` with a command watchdog.

    A subclass also implements :meth:`_command` (apply a :class:`JointCommand`
    to its simulator, raising BamError for bad values), and calls
    :meth:`_start_clock` in :meth:`_setup`.
    """

    def __init__(self, default_name: str, **kwargs) -> None:
        self._watchdog = Watchdog(0)
        # Lock-step (the lockstep parameter): a tick per accepted command. Made before the
        # loop, so that a command received while the node starts is not lost.
        self._granted: threading.Semaphore | None = None
        super().__init__(default_name, **kwargs)

    def _command(self, command: JointCommand) -> None:
        """Apply ``command`` to the simulator (lock held); BamError for bad values."""
        raise NotImplementedError

    def _now(self) -> int:
        """The watchdog's clock: simulated time in its units (default: loop ticks)."""
        return self.tick_count

    def _start_clock(self, rate: float, start_time: float, command_timeout: float) -> None:
        """Simulated time (:attr:`_time`) in units of 1/``rate`` s from ``start_time`` s,
        the units of :meth:`_now`; the watchdog armed for ``command_timeout`` s."""
        self._time = SimTime(rate, start_time)
        self._watchdog.reset(self._time.ticks(command_timeout), 0)

    def _set_command_timeout(self, seconds: float) -> None:
        """A new command timeout, counted from now (caller holds the lock)."""
        self._watchdog.reset(self._time.ticks(seconds), self._now())

    def _set_real_time_factor(self, value: float) -> None:
        self._loop.real_time_factor = value

    def _apply(self, kind: str, command: JointCommand) -> None:
        try:
            check_command(command, self.command_limits, self.joint_names)
            with self._lock:
                self._command(command)
                self._watchdog.feed(self._now())
        except BamError as exc:
            self._rejections.reject(kind, f"{exc}")
            return
        if self._granted is not None:
            self._granted.release()

    def _start_sim_loop(self, name: str, rate: float, values: dict) -> None:
        """The loop at ``values``' real_time_factor, or in lock-step with the commands
        (lockstep), at ``values``' thread_priority when it has one."""
        if values["lockstep"]:
            self._granted = threading.Semaphore(0)
        self._start_loop(name, rate, values["real_time_factor"],
                         values.get("thread_priority", 0), self._granted)


def pace(values: dict) -> str:
    """How a simulation node's loop is paced, for its start-up line."""
    if values["lockstep"]:
        return "in lock-step with its commands"
    return f"real-time factor {values['real_time_factor']:g}"
