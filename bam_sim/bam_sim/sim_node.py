"""What the actuator nodes share: parameters, the real-time loop, topics, commands.

The pendulum node (:mod:`bam_sim.pendulum_node`) and the arm node
(:mod:`bam_sim.arm_node`) are thin nodes over a numerical simulator; the
Dynamixel driver (``bam_drivers.dynamixel_node``) is a thin node over a serial
bus. All three are :class:`ActuatorNode`, and

* declare their ROS parameters from a table of :class:`Param` (descriptor
  with description, read-only flag and range; ``--help`` text from the same
  table, :func:`usage`);
* run their loop (a simulation tick, a bus cycle) in a thread of their own,
  not an rclpy timer (:class:`TickLoop`). In real time (``real_time_factor``
  r > 0) tick k starts at the absolute deadline start + k·(1/rate)/r of a
  monotonic clock, so there is no drift: the thread sleeps until about 0.3 ms
  before the deadline, then spin-waits. r = 0 runs as fast as possible. A
  loop more than 0.1 s behind its deadlines restarts them from now (logged),
  rather than bursting to catch up;
* publish and subscribe to exactly the swap contract of
  :mod:`bam_sim.interfaces`, plus ``/clock`` in simulation
  (:class:`ActuatorTopics`, with messages preallocated and updated in place
  every tick);
* parse commands the same way (:func:`parse_command`,
  :func:`parse_position_command`): ``/bam/commands`` arrays are empty (keep)
  or indexed like ``names``, which select this node's joints (names of other
  nodes' joints are ignored, a command naming none of ours is rejected);
  without names they hold one entry per joint in joint order.
  ``/position_commands`` holds one goal per joint in joint order (extra values
  are ignored, with a warning logged once). Rejected commands are logged once
  per kind and counted (:class:`Rejections`), never raised;
* accept a parameter change only when the node's ``_plan`` of it passes.

The simulation nodes (:class:`SimNode`) also

* stamp every message with the simulated time of its tick, exactly:
  t_k = start_time + k/rate (:class:`SimTime`, the rate as a fraction);
* turn the torque off when no command arrived for ``command_timeout`` of
  simulated time (:class:`Watchdog`);
* share the executable's ``main`` (:func:`run_main`).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import rclpy
from builtin_interfaces.msg import Time
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand, ActuatorState, ActuatorStateArray, BenchInfo
from bam_sim import interfaces
from bam_sim.errors import BamError
from bam_sim.ros_qos import profile

SPIN_WAIT = 0.0003  # s spin-waited before each deadline, for a low jitter
MAX_SLEEP = 0.05  # s, longest single sleep (stop and rate changes are seen within it)
MAX_LAG = 0.1  # s behind the deadlines after which they restart from now


# -- parameters ----------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A node parameter: default (None: computed by the node), descriptor fields."""

    name: str
    default: object
    description: str
    read_only: bool = False
    low: float | None = None
    high: float | None = None


def descriptor(param: Param) -> ParameterDescriptor:
    """The ROS descriptor of ``param``: description, read-only flag and range."""
    result = ParameterDescriptor(description=param.description, read_only=param.read_only)
    if param.low is not None:
        if isinstance(param.default, int) and not isinstance(param.default, bool):
            result.integer_range = [IntegerRange(from_value=int(param.low),
                                                 to_value=int(param.high), step=1)]
        else:
            result.floating_point_range = [FloatingPointRange(
                from_value=float(param.low), to_value=float(param.high), step=0.0)]
    return result


def declare(node: Node, params: Sequence[Param], defaults: dict | None = None) -> dict:
    """Declare ``params`` on ``node`` in order; their values (``defaults`` override defaults)."""
    defaults = defaults or {}
    return {p.name: node.declare_parameter(p.name, defaults.get(p.name, p.default),
                                           descriptor(p)).value
            for p in params}


def usage(program: str, title: str, params: Sequence[Param], computed: str = "computed") -> str:
    """The ``--help`` text of an executable: its parameters with defaults.

    ``computed`` names the default of parameters whose default is None.
    """
    lines = [f"usage: {program} [--ros-args -p NAME:=VALUE ...]", "", f"{title}. Parameters:"]
    for p in params:
        default = computed if p.default is None else repr(p.default)
        flag = ", read-only" if p.read_only else ""
        lines.append(f"  {p.name:<17} {p.description} (default {default}{flag})")
    return "\n".join(lines)


def run_main(program: str, factory: Callable[[], Node], help_text: str,
             args: list[str] | None = None) -> int:
    """An executable's main: ``--help``, spin the node, one-line errors (exit code 2)."""
    argv = sys.argv if args is None else args
    extra = rclpy.utilities.remove_ros_args(argv)[1:]
    if any(a in ("-h", "--help") for a in extra):
        print(help_text)
        return 0
    if extra:
        print(f"{program}: error: unexpected argument {extra[0]!r}; set parameters with "
              "--ros-args -p NAME:=VALUE (see --help)", file=sys.stderr)
        return 2
    rclpy.init(args=argv)
    node = None
    try:
        node = factory()
        rclpy.spin(node)
    except (BamError, ParameterException) as exc:
        hint = ""
        if isinstance(exc, InvalidParameterTypeException):
            hint = " (write doubles with a decimal point, e.g. mass:=1.0)"
        print(f"{program}: error: {exc}{hint}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


# Parameters every simulation node declares alike: its loop's pace, /clock, its watchdog.
REAL_TIME_FACTOR = Param("real_time_factor", 1.0, "simulated seconds per wall second; 0 = as "
                         "fast as possible", low=0.0, high=100000.0)
PUBLISH_CLOCK = Param("publish_clock", True, "publish the simulated time on /clock",
                      read_only=True)
COMMAND_TIMEOUT = Param("command_timeout", 0.0, "torque off when no command arrived for this "
                        "long in simulated time, s (0 = off)", low=0.0, high=1.0e6)


def finite_non_negative(name: str, value: object) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0.0:
        raise BamError(f"{name} must be a finite number >= 0, got {value}")
    return value


# -- simulated time ------------------------------------------------------------------


class SimTime:
    """Stamps of ticks at ``rate`` Hz from ``start_time`` s: t_k = start + k·10⁹/rate ns.

    Exact integers: the rate is taken as a fraction (denominator ≤ 10⁶), and
    the division rounds half up, so no float error accumulates over a run.
    """

    def __init__(self, rate: float, start_time: float = 0.0) -> None:
        self.rate = float(rate)
        fraction = Fraction(rate).limit_denominator(1_000_000)
        self._num = 2 * 1_000_000_000 * fraction.denominator
        self._den = 2 * fraction.numerator
        self.start_ns = int(round(start_time * 1e9))

    def ns(self, tick: int) -> int:
        return self.start_ns + (tick * self._num + self._den // 2) // self._den

    def ticks(self, seconds: float) -> int:
        """Whole ticks covering ``seconds`` (rounded up; 0 for 0)."""
        return int(math.ceil(seconds * self.rate - 1e-9)) if seconds > 0.0 else 0


# -- the loop ------------------------------------------------------------------------


class TickLoop:
    """A thread calling ``tick()`` at ``rate`` ticks per simulated second.

    ``count()`` is the index k of the next tick (the simulator's counter);
    deadlines are absolute, see the module docstring. ``tick`` does the work
    of one tick (step the simulator, publish); an exception stops the loop
    with a fatal log line, unless the node is shutting down.
    """

    def __init__(self, node: Node, name: str, rate: float, tick: Callable[[], None],
                 count: Callable[[], int], real_time_factor: float, priority: int = 0) -> None:
        self._node = node
        self._rate = float(rate)
        self._tick = tick
        self._count = count
        self._rtf = float(real_time_factor)
        self._priority = int(priority)
        self._reanchor = True
        self._stop = threading.Event()
        self._timing: tuple | None = None
        self.slips = 0  # times the loop fell MAX_LAG behind and restarted its deadlines
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @property
    def real_time_factor(self) -> float:
        return self._rtf

    @real_time_factor.setter
    def real_time_factor(self, value: float) -> None:
        self._rtf = float(value)
        self._reanchor = True

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        """No more ticks once this returns (unless called from the loop itself)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def record_timing(self, ticks: int) -> None:
        """Record when each of the next ``ticks`` ticks starts (for benchmarks).

        Per tick: the wall time it starts (``time.perf_counter_ns``, after the
        wait for its deadline) and its lateness to that deadline (ns).
        """
        import numpy as np

        self._timing = (np.zeros(ticks, dtype=np.int64), np.zeros(ticks, dtype=np.int64),
                        [0, -1])

    def timing(self) -> dict:
        """The recorded ticks: first tick index, wall start ns and lateness ns."""
        if self._timing is None:
            return {"first_tick": -1, "start_ns": [], "late_ns": []}
        starts, late, (count, first) = self._timing
        return {"first_tick": first, "start_ns": starts[:count].copy(),
                "late_ns": late[:count].copy()}

    def _main(self) -> None:
        logger = self._node.get_logger()
        if self._priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._priority))
            except (OSError, AttributeError) as exc:
                logger.warning(
                    f"cannot run the loop at real-time priority {self._priority} ({exc}); "
                    "running at normal priority (grant CAP_SYS_NICE or raise 'ulimit -r')")
        try:
            self._run()
        except Exception as exc:  # reported; the node stops publishing
            if self._stop.is_set() or not self._node.context.ok():
                return  # shutting down while publishing
            logger.fatal(f"simulation loop stopped: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        perf = time.perf_counter
        sleep = time.sleep
        stop = self._stop
        tick = self._tick
        count = self._count
        anchor_wall = anchor_tick = 0.0
        wall_period = 0.0
        while not stop.is_set():
            rtf = self._rtf
            k = count()
            late = 0.0
            if self._reanchor:
                self._reanchor = False
                anchor_wall, anchor_tick = perf(), k
                wall_period = 1.0 / (self._rate * rtf) if rtf > 0.0 else 0.0
            if rtf > 0.0:
                deadline = anchor_wall + (k - anchor_tick) * wall_period
                remaining = deadline - perf()
                if remaining > SPIN_WAIT:
                    if remaining - SPIN_WAIT > MAX_SLEEP:
                        sleep(MAX_SLEEP)
                        continue  # check stop and rate changes again
                    sleep(remaining - SPIN_WAIT)
                now = perf()
                while now < deadline:
                    now = perf()
                late = now - deadline
                if late > MAX_LAG:
                    self._slipped(late, rtf)
            if self._timing is not None:
                self._record(k, late)
            tick()

    def _slipped(self, late: float, rtf: float) -> None:
        self.slips += 1
        self._reanchor = True
        if self.slips == 1 or self.slips % 100 == 0:
            self._node.get_logger().warning(
                f"loop {late * 1e3:.0f} ms behind its deadlines (x{rtf:g} real time); "
                f"restarting them from now ({self.slips} time(s) so far)")

    def _record(self, k: int, late: float) -> None:
        starts, lateness, count = self._timing
        i = count[0]
        if i < starts.size:
            starts[i] = time.perf_counter_ns()
            lateness[i] = int(late * 1e9)
            if i == 0:
                count[1] = k
            count[0] = i + 1


class Watchdog:
    """Torque off after ``timeout`` ticks without a command (0: never)."""

    def __init__(self, timeout_ticks: int) -> None:
        self.timeout = int(timeout_ticks)
        self.last = 0  # tick of the last accepted command
        self.tripped = False

    def feed(self, tick: int) -> None:
        self.last = tick
        self.tripped = False

    def reset(self, timeout_ticks: int, tick: int) -> None:
        self.timeout = int(timeout_ticks)
        self.feed(tick)

    def due(self) -> int | None:
        """The tick at which it trips, None when off or already tripped."""
        if not self.timeout or self.tripped:
            return None
        return self.last + self.timeout


# -- commands ------------------------------------------------------------------------


@dataclass(frozen=True)
class JointCommand:
    """A command for some joints of a node (joint indices); None: keep that quantity."""

    indices: tuple[int, ...]
    goals: tuple[float, ...] | None = None
    torque_enables: tuple[bool, ...] | None = None
    gains: tuple[float, ...] | None = None


class CommandError(Exception):
    """A rejected command: its kind (counted) and a one-line reason."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def parse_command(msg: ActuatorCommand, joints: Sequence[str]) -> JointCommand:
    """The part of a ``/bam/commands`` message for ``joints`` (raises CommandError)."""
    names = list(msg.names)
    size = len(names) if names else len(joints)
    fields = {"goal_positions": msg.goal_positions, "torque_enables": msg.torque_enables,
              "gains": msg.gains}
    wrong = [f"{key} has {len(v)}" for key, v in fields.items() if len(v) not in (0, size)]
    if wrong:
        if names:
            expected = f"{size} (as names)"
        elif len(joints) == 1:
            expected = "1 (no names: a single entry)"
        else:
            expected = f"{size} (no names: one per joint, in order {', '.join(joints)})"
        raise CommandError("commands/length", f"/bam/commands arrays must be empty or hold "
                           f"{expected} entries, but {', '.join(wrong)}")
    if names:
        pairs = [(joints.index(n), i) for i, n in enumerate(names) if n in joints]
        if not pairs:
            what = f"this bench's joint '{joints[0]}'" if len(joints) == 1 else \
                f"any of this node's joints ({', '.join(joints)})"
            raise CommandError("commands/joint", f"/bam/commands names {names} do not "
                               f"include {what}")
        indices, rows = zip(*pairs, strict=True)
    else:
        indices = rows = tuple(range(len(joints)))

    def pick(values, convert):
        return tuple(convert(values[i]) for i in rows) if len(values) else None

    return JointCommand(tuple(indices), pick(msg.goal_positions, float),
                        pick(msg.torque_enables, bool), pick(msg.gains, float))


def parse_position_command(msg: Float64MultiArray, joints: Sequence[str]) -> JointCommand:
    """Goals of a ``/position_commands`` message, one per joint in order (CommandError)."""
    n = len(joints)
    if len(msg.data) < n:
        if n == 1:
            reason = "holds no value; data[0] is the goal position"
        else:
            reason = (f"holds {len(msg.data)} values; give one goal per joint, in order "
                      f"{', '.join(joints)}")
        raise CommandError("position_commands/length", f"/position_commands {reason}")
    return JointCommand(tuple(range(n)), tuple(float(v) for v in msg.data[:n]))


class Rejections:
    """Rejected commands: the first of each kind logged as an error, every one counted."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self.counts: Counter[str] = Counter()  # rejected commands per kind
        self.logged: list[str] = []  # kinds logged (once each)
        self._warned: set[str] = set()

    def reject(self, kind: str, message: str) -> None:
        self.counts[kind] += 1
        if kind in self.logged:
            self._node.get_logger().debug(f"command ignored: {message}")
            return
        self.logged.append(kind)
        self._node.get_logger().error(f"command ignored: {message} (further '{kind}' errors "
                                      "are counted, not logged)")

    def warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            self._node.get_logger().warning(f"{message} (logged once)")


# -- topics --------------------------------------------------------------------------


def joint_state(names: Sequence[str]) -> JointState:
    """A /joint_states message of ``names``, position, velocity and effort preallocated."""
    n = len(names)
    msg = JointState(name=list(names))
    msg.position = array("d", [0.0] * n)
    msg.velocity = array("d", [0.0] * n)
    msg.effort = array("d", [0.0] * n)
    return msg


class ActuatorTopics:
    """The swap contract of a node: publishers, subscriptions, preallocated messages.

    ``joints``, ``control_units`` and ``input_voltages`` are per joint, in
    joint order; the messages of a tick (:attr:`joint_msg`, :attr:`state_msg`
    with :attr:`states`) share one stamp object, so a tick sets the time once.
    ``/clock`` only when ``publish_clock``. A simulation node publishes with
    :meth:`publish`; a driver, which fills in more fields and may publish
    fewer joints, fills messages itself and sends them with
    :meth:`publish_states`.
    """

    def __init__(self, node: Node, joints: Sequence[str], control_units: Sequence[str],
                 input_voltages: Sequence[float], *, publish_clock: bool,
                 on_command: Callable[[ActuatorCommand], None],
                 on_position_command: Callable[[Float64MultiArray], None]) -> None:
        def publisher(msg_type, topic):
            return node.create_publisher(msg_type, topic.name, profile(topic.qos))

        self._joint_pub = publisher(JointState, interfaces.JOINT_STATES)
        self._state_pub = publisher(ActuatorStateArray, interfaces.ACTUATOR_STATES)
        self._info_pub = publisher(BenchInfo, interfaces.BENCH_INFO)
        self._clock_pub = publisher(Clock, interfaces.CLOCK) if publish_clock else None
        node.create_subscription(ActuatorCommand, interfaces.COMMANDS.name, on_command,
                                 profile(interfaces.COMMANDS.qos))
        node.create_subscription(Float64MultiArray, interfaces.POSITION_COMMANDS.name,
                                 on_position_command, profile(interfaces.POSITION_COMMANDS.qos))
        self._range = range(len(joints))
        self._stamp = Time()
        self.joint_msg = joint_state(joints)
        self.joint_msg.header.stamp = self._stamp
        self.states = [ActuatorState(name=joint, control_unit=unit, current=math.nan,
                                      input_voltage=float(voltage), temperature=math.nan,
                                      error_flags=0)
                        for joint, unit, voltage in zip(joints, control_units, input_voltages,
                                                        strict=True)]
        self.state_msg = ActuatorStateArray(actuators=self.states)
        self.state_msg.header.stamp = self._stamp
        self._clock_msg = Clock()
        self._clock_msg.clock = self._stamp

    def publish(self, stamp_ns: int, position: Sequence[float], velocity: Sequence[float],
                effort: Sequence[float], goal: Sequence[float], torque_enable: Sequence[bool],
                gain: Sequence[float], control: Sequence[float],
                motor_torque: Sequence[float]) -> None:
        """One tick: /clock, /joint_states and /bam/actuator_states (values per joint)."""
        self._stamp.sec, self._stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
        if self._clock_pub is not None:
            self._clock_pub.publish(self._clock_msg)
        joint = self.joint_msg
        for i in self._range:
            joint.position[i] = position[i]
            joint.velocity[i] = velocity[i]
            joint.effort[i] = effort[i]
        self._joint_pub.publish(joint)
        for i, state in enumerate(self.states):
            state.goal_position = float(goal[i])
            state.torque_enable = bool(torque_enable[i])
            state.gain = float(gain[i])
            state.control = float(control[i])
            state.motor_torque = float(motor_torque[i])
        self._state_pub.publish(self.state_msg)

    def publish_states(self, joint: JointState, states: ActuatorStateArray) -> None:
        """``joint`` on /joint_states and ``states`` on /bam/actuator_states, as they are."""
        self._joint_pub.publish(joint)
        self._state_pub.publish(states)

    def publish_info(self, msg: BenchInfo, stamp_ns: int) -> None:
        """``msg`` on /bam/bench_info (transient local), stamped ``stamp_ns``."""
        sec, nsec = divmod(stamp_ns, 1_000_000_000)
        msg.header.stamp = Time(sec=sec, nanosec=nsec)
        self._info_pub.publish(msg)


# -- the nodes -----------------------------------------------------------------------


class ActuatorNode(Node):
    """Base of the actuator nodes: loop thread, command callbacks, rejections, parameters.

    A subclass implements :meth:`_setup` (declare parameters, build its
    simulator or bus, set :attr:`joint_names`, call :meth:`_create_topics` and
    :meth:`_start_loop`), :meth:`_tick` / :attr:`tick_count` for the loop,
    :meth:`_apply` (take a parsed :class:`JointCommand`), and for the
    parameters it lets change :meth:`_plan` (validate a batch of changes) and
    :meth:`_post_set` (apply them), registered by :meth:`_follow_parameters`.
    :attr:`lock` guards what the loop and the callbacks share. Keyword
    arguments go to :class:`rclpy.node.Node`; a failed set-up destroys the
    node before the error propagates.
    """

    joint_names: tuple[str, ...] = ()
    topics: ActuatorTopics

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

    def _post_set(self, params: list[Parameter]) -> None:
        """Apply a batch of parameter changes accepted by :meth:`_plan`."""

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

    def destroy_node(self) -> None:
        self.stop()
        super().destroy_node()

    # -- for subclasses ----------------------------------------------------------------

    def _create_topics(self, control_units: Sequence[str], input_voltages: Sequence[float],
                       *, publish_clock: bool) -> None:
        """:attr:`topics` of :attr:`joint_names`, commands to this node's callbacks."""
        self.topics = ActuatorTopics(
            self, self.joint_names, control_units, input_voltages, publish_clock=publish_clock,
            on_command=self._on_command, on_position_command=self._on_position_command)

    def _start_loop(self, name: str, rate: float, real_time_factor: float,
                    priority: int = 0) -> None:
        self._loop = TickLoop(self, name, rate, self._tick, lambda: self.tick_count,
                              real_time_factor, priority)
        self.context.on_shutdown(self._loop.request_stop)
        self._loop.start()

    def _follow_parameters(self) -> None:
        """Parameter changes from now on: accepted when :meth:`_plan` passes, then applied."""
        self.add_on_set_parameters_callback(self._on_set)
        self.add_post_set_parameters_callback(self._post_set)

    def _on_set(self, params: list[Parameter]) -> SetParametersResult:
        """An on-set-parameters callback: accept the batch when :meth:`_plan` passes."""
        try:
            self._plan(params)
        except BamError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    # -- commands ----------------------------------------------------------------------

    def _parse(self, parse: Callable[..., JointCommand], msg) -> JointCommand | None:
        """``parse(msg, joints)``, or None with the command rejected."""
        try:
            return parse(msg, self.joint_names)
        except CommandError as exc:
            self._rejections.reject(exc.kind, str(exc))
            return None

    def _on_command(self, msg: ActuatorCommand) -> None:
        command = self._parse(parse_command, msg)
        if command is not None:
            self._apply("commands/value", command)

    def _on_position_command(self, msg: Float64MultiArray) -> None:
        command = self._parse(parse_position_command, msg)
        if command is None:
            return
        n = len(self.joint_names)
        if len(msg.data) > n:
            self._rejections.warn_once(
                "position_commands/extra",
                f"/position_commands holds {len(msg.data)} values; this node has {n} "
                f"joint(s) ({', '.join(self.joint_names)}), using the first {n}")
        self._apply("position_commands/value", command)


class SimNode(ActuatorNode):
    """Base of the simulation nodes: an :class:`ActuatorNode` with a command watchdog.

    A subclass also implements :meth:`_command` (apply a :class:`JointCommand`
    to its simulator, raising BamError for bad values), and calls
    :meth:`_start_clock` in :meth:`_setup`.
    """

    def __init__(self, default_name: str, **kwargs) -> None:
        self._watchdog = Watchdog(0)
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
            with self._lock:
                self._command(command)
                self._watchdog.feed(self._now())
        except BamError as exc:
            self._rejections.reject(kind, f"{exc}")
