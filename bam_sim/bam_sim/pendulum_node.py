"""``pendulum``: the simulated pendulum bench, publishing the topics of the real driver.

Example::

    ros2 run bam_sim pendulum --ros-args -p actuator:=mx64 -p model:=m6 \\
        -p params_file:=params/mx64_m6.yaml -p mass:=1.0 -p length:=0.15

A thin node over :class:`bam_sim.bench_sim.BenchSimulator`. A loop thread of
its own (not an rclpy timer) ticks the bench at ``rate`` in simulated time and
publishes, for every tick k, ``/joint_states``, ``/bam/actuator_states`` and
``/clock`` stamped with the simulated time t_k = start_time + k/rate: the
simulator is the clock, so a recording keeps simulated time whatever the
real-time factor. ``/bam/bench_info`` (transient local) is published at start
and again whenever the bench or the parameter set changes. Commands arrive on
``/bam/commands`` and ``/position_commands``; the sample of tick k reports the
command that drives the step k → k+1 (see :mod:`bam_sim.bench_sim`).

In real time (``real_time_factor`` r > 0) tick k starts at the absolute
deadline start + k·(1/rate)/r of a monotonic clock (no drift): the thread
sleeps until about 0.3 ms before it, then spin-waits. r = 0 runs as fast as
possible. A loop that falls more than 0.1 s behind its deadlines restarts
them from now (logged), rather than bursting to catch up.

Topics, types and QoS come from :mod:`bam_sim.interfaces`. Parameters: see
:data:`PARAMETERS`, or ``pendulum --help``.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from array import array
from collections import Counter
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
from bam_sim.actuators import get_actuator
from bam_sim.bench_sim import BenchSimulator, Sample
from bam_sim.errors import BamError
from bam_sim.friction import get_model
from bam_sim.parameter_file import load, published
from bam_sim.parameter_set import ParameterSet
from bam_sim.pendulum import GRAVITY, Bench
from bam_sim.ros_qos import profile
from bam_sim.servo import CURRENT

NODE_NAME = "pendulum"
SPIN_WAIT = 0.0003  # s spin-waited before each deadline, for a low jitter
MAX_SLEEP = 0.05  # s, longest single sleep (stop and rate changes are seen within it)
MAX_LAG = 0.1  # s behind the deadlines after which they restart from now


@dataclass(frozen=True)
class Param:
    """A node parameter: default (None: the actuator's), descriptor fields."""

    name: str
    default: object
    description: str
    read_only: bool = False
    low: float | None = None
    high: float | None = None


PARAMETERS: tuple[Param, ...] = (
    Param("actuator", "mx64", "actuator simulated: mx64, mx106, erob80_50 or erob80_100",
          read_only=True),
    Param("model", "m4", "friction model m1..m6 (the published set when params_file is ''; "
          "set automatically to the model of params_file)"),
    Param("params_file", "", "parameter file (ROS 2 YAML or legacy BAM JSON) of the actuator; "
          "'' = the published set of actuator and model"),
    Param("joint_name", "pendulum", "joint name in /joint_states and in commands",
          read_only=True),
    Param("mass", 1.0, "point mass at the end of the arm, kg", low=0.0, high=1000.0),
    Param("arm_mass", 0.0, "mass of the arm (uniform rod), kg", low=0.0, high=1000.0),
    Param("length", 0.15, "distance from the axis to the point mass, m", low=0.001, high=100.0),
    Param("gain", None, "initial gain kp (default: the actuator's second Table I gain); "
          "change it with /bam/commands", read_only=True, low=0.0, high=1.0e6),
    Param("initial_position", 0.0, "initial position and goal, rad (0 = arm down)",
          read_only=True, low=-1.0e6, high=1.0e6),
    Param("rate", 1000.0, "physics, control and publishing rate, Hz (sim time step 1/rate)",
          read_only=True, low=1.0, high=100000.0),
    Param("real_time_factor", 1.0, "simulated seconds per wall second; 0 = as fast as "
          "possible", low=0.0, high=100000.0),
    Param("publish_clock", True, "publish the simulated time on /clock", read_only=True),
    Param("start_time", 0.0, "simulated time of the first tick, s", read_only=True,
          low=0.0, high=4.0e9),
    Param("supply_voltage", None, "supply voltage, V (default: the actuator's)",
          read_only=True, low=0.1, high=1000.0),
    Param("position_noise", 0.0, "standard deviation of the Gaussian noise added to the "
          "published position, rad (0 = off; never affects the physics)", low=0.0, high=10.0),
    Param("quantization", 0.0, "encoder step of the published position, rad (0 = off; "
          "e.g. 2*pi/4096)", low=0.0, high=10.0),
    Param("latency", 0.0, "read latency of the published state, s (rounded to ticks)",
          read_only=True, low=0.0, high=10.0),
    Param("seed", 0, "seed of the position noise", read_only=True, low=0, high=2**31 - 1),
    Param("thread_priority", 0, "SCHED_FIFO priority of the loop thread, 1..99, for a low "
          "jitter on a loaded machine (needs CAP_SYS_NICE or an rtprio limit); 0 = normal "
          "scheduling", read_only=True, low=0, high=99),
    Param("command_timeout", 0.0, "torque off when no command arrived for this long in "
          "simulated time, s (0 = off)", low=0.0, high=1.0e6),
)


def _descriptor(param: Param) -> ParameterDescriptor:
    descriptor = ParameterDescriptor(description=param.description, read_only=param.read_only)
    if param.low is not None:
        if isinstance(param.default, int) and not isinstance(param.default, bool):
            descriptor.integer_range = [IntegerRange(from_value=int(param.low),
                                                     to_value=int(param.high), step=1)]
        else:
            descriptor.floating_point_range = [FloatingPointRange(
                from_value=float(param.low), to_value=float(param.high), step=0.0)]
    return descriptor


class PendulumNode(Node):
    """The simulated bench; keyword arguments go to :class:`rclpy.node.Node`."""

    def __init__(self, **kwargs) -> None:
        super().__init__(kwargs.pop("node_name", NODE_NAME), **kwargs)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self._setup()
        except BaseException:
            super().destroy_node()
            raise

    # -- set-up ----------------------------------------------------------------------

    def _setup(self) -> None:
        actuator_name = self.declare_parameter(
            "actuator", "mx64", _descriptor(PARAMETERS[0])).value
        actuator = get_actuator(actuator_name)
        defaults = {"gain": float(actuator.gains[1]),
                    "supply_voltage": float(actuator.supply_voltage)}
        values = {"actuator": actuator_name}
        for param in PARAMETERS[1:]:
            default = defaults.get(param.name, param.default)
            values[param.name] = self.declare_parameter(
                param.name, default, _descriptor(param)).value
        self._actuator = actuator
        self._joint = values["joint_name"]
        if not self._joint:
            raise BamError("joint_name must not be empty")
        self._rate = float(values["rate"])
        get_model(values["model"])  # a clear error for an unknown model
        params = self._resolve(values["params_file"], None if values["params_file"]
                               else values["model"])
        if params.model != values["model"]:
            self.set_parameters([Parameter("model", value=params.model)])
        self._params_file = values["params_file"]
        bench = Bench(mass=values["mass"], length=values["length"],
                      arm_mass=values["arm_mass"])
        latency_ticks = int(round(values["latency"] * self._rate))
        if values["latency"] > 0.0 and abs(latency_ticks / self._rate - values["latency"]) > 1e-9:
            self.get_logger().warning(
                f"latency {values['latency']} s rounded to {latency_ticks} ticks "
                f"({latency_ticks / self._rate} s) at {self._rate:g} Hz")
        self._sim = BenchSimulator(
            params, bench, 1.0 / self._rate,
            position=values["initial_position"], gain=values["gain"],
            supply_voltage=values["supply_voltage"],
            quantization=values["quantization"], position_noise=values["position_noise"],
            latency=latency_ticks, seed=values["seed"])
        self._lock = threading.Lock()  # guards the simulator between loop and callbacks
        self._rtf = float(values["real_time_factor"])
        self._reanchor = True
        self._timeout_ticks = self._ticks(values["command_timeout"])
        self._last_command_tick = 0
        self._watchdog_tripped = False
        self._reported: set[str] = set()
        self.rejected_commands: Counter[str] = Counter()  # rejected commands per kind
        self.logged_command_errors: list[str] = []  # kinds logged (once each)
        self.slips = 0  # times the loop fell MAX_LAG behind and restarted its deadlines
        self._timing: tuple | None = None
        # Stamps: t_k = start + k·10⁹/rate ns, exactly (rate as a fraction).
        rate = Fraction(self._rate).limit_denominator(1_000_000)
        self._stamp_num = 2 * 1_000_000_000 * rate.denominator
        self._stamp_den = 2 * rate.numerator
        self._start_ns = int(round(values["start_time"] * 1e9))
        self._publish_clock = bool(values["publish_clock"])
        self._priority = int(values["thread_priority"])
        self._make_interfaces()
        self._publish_bench_info()
        self.add_pre_set_parameters_callback(self._pre_set)
        self.add_on_set_parameters_callback(self._on_set)
        self.add_post_set_parameters_callback(self._post_set)
        self.get_logger().info(
            f"{actuator.title} with {params.model} ({self._source_label()}), joint "
            f"'{self._joint}', m={bench.mass:g} kg, l={bench.length:g} m, "
            f"{self._rate:g} Hz, real-time factor {self._rtf:g}")
        self.context.on_shutdown(self._request_stop)
        self._thread = threading.Thread(target=self._loop, name="pendulum-loop", daemon=True)
        self._thread.start()

    def _make_interfaces(self) -> None:
        def publisher(msg_type, topic):
            return self.create_publisher(msg_type, topic.name, profile(topic.qos))

        self._joint_pub = publisher(JointState, interfaces.JOINT_STATES)
        self._state_pub = publisher(ActuatorStateArray, interfaces.ACTUATOR_STATES)
        self._info_pub = publisher(BenchInfo, interfaces.BENCH_INFO)
        self._clock_pub = publisher(Clock, interfaces.CLOCK) if self._publish_clock else None
        self.create_subscription(ActuatorCommand, interfaces.COMMANDS.name, self._on_command,
                                 profile(interfaces.COMMANDS.qos))
        self.create_subscription(Float64MultiArray, interfaces.POSITION_COMMANDS.name,
                                 self._on_position_command,
                                 profile(interfaces.POSITION_COMMANDS.qos))
        # Preallocated messages, updated in place every tick; their headers share one
        # stamp object, so a tick sets the time once.
        self._stamp = Time()
        self._joint_msg = JointState(name=[self._joint])
        self._joint_msg.header.stamp = self._stamp
        self._joint_msg.position = array("d", [0.0])
        self._joint_msg.velocity = array("d", [0.0])
        self._joint_msg.effort = array("d", [0.0])
        self._actuator_state = ActuatorState(
            name=self._joint, control_unit=self._actuator.control_unit,
            current=math.nan, input_voltage=self._sim.supply_voltage, temperature=math.nan,
            error_flags=0)
        self._state_msg = ActuatorStateArray(actuators=[self._actuator_state])
        self._state_msg.header.stamp = self._stamp
        self._clock_msg = Clock()
        self._clock_msg.clock = self._stamp

    def _resolve(self, path: str, model: str | None) -> ParameterSet:
        """The parameter set of a file (checked against the actuator) or the published one."""
        actuator = self._actuator.name
        if not path:
            return published(actuator, model)
        params = load(path)
        if params.actuator != actuator:
            raise BamError(f"{path} is for actuator {params.actuator}, but this bench simulates "
                           f"a {actuator}; give a parameter file of the {actuator}")
        if model is not None and get_model(model).name != params.model:
            raise BamError(f"{path} holds model {params.model}, not {model}; set params_file "
                           f"alone (model follows it), or params_file:='' for the published "
                           f"{model}")
        return params

    def _ticks(self, seconds: float) -> int:
        return int(math.ceil(seconds * self._rate - 1e-9)) if seconds > 0.0 else 0

    def _source_label(self) -> str:
        return os.path.abspath(self._params_file) if self._params_file else "published"

    # -- public helpers ----------------------------------------------------------------

    @property
    def simulator(self) -> BenchSimulator:
        """The simulated bench (hold :attr:`lock` to change it while the loop runs)."""
        return self._sim

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    def stamp_ns(self, tick: int) -> int:
        """Simulated time of tick k, ns (the header stamp of its messages)."""
        return self._start_ns + (tick * self._stamp_num + self._stamp_den // 2) // self._stamp_den

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

    def stop(self) -> None:
        """Stop the loop thread: no more ticks nor messages (the node itself stays)."""
        self._request_stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def destroy_node(self) -> None:
        self.stop()
        super().destroy_node()

    def _request_stop(self) -> None:
        self._stop.set()

    # -- loop ------------------------------------------------------------------------

    def _loop(self) -> None:
        if self._priority > 0:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self._priority))
            except (OSError, AttributeError) as exc:
                self.get_logger().warning(
                    f"cannot run the loop at real-time priority {self._priority} ({exc}); "
                    "running at normal priority (grant CAP_SYS_NICE or raise 'ulimit -r')")
        try:
            self._run()
        except Exception as exc:  # reported; the node stops publishing
            if self._stop.is_set() or not self.context.ok():
                return  # shutting down while publishing
            self.get_logger().fatal(f"simulation loop stopped: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        perf = time.perf_counter
        sleep = time.sleep
        stop = self._stop
        lock = self._lock
        sim = self._sim
        publish = self._publish
        anchor_wall = anchor_tick = 0.0
        wall_period = 0.0
        while not stop.is_set():
            rtf = self._rtf
            k = sim.tick_count
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
                    self.slips += 1
                    self._reanchor = True
                    if self.slips == 1 or self.slips % 100 == 0:
                        self.get_logger().warning(
                            f"simulation {late * 1e3:.0f} ms behind real time "
                            f"(x{rtf:g}); restarting the deadlines from now "
                            f"({self.slips} time(s) so far)")
            timing = self._timing
            if timing is not None:
                starts, lateness, count = timing
                i = count[0]
                if i < starts.size:
                    starts[i] = time.perf_counter_ns()
                    lateness[i] = int(late * 1e9)
                    if i == 0:
                        count[1] = k
                    count[0] = i + 1
            with lock:
                if self._timeout_ticks and not self._watchdog_tripped \
                        and k - self._last_command_tick >= self._timeout_ticks:
                    self._trip_watchdog()
                sample = sim.tick()
            publish(sample)

    def _trip_watchdog(self) -> None:
        """Torque off from this tick on (caller holds the lock)."""
        self._watchdog_tripped = True
        if not self._sim.command.torque_enable:
            return
        self._sim.set_command(torque_enable=False)
        self.get_logger().warning(
            f"no command for {self._timeout_ticks / self._rate:g} s (command_timeout): torque "
            "off; send torque_enables: [true] on /bam/commands to enable it again")

    def _publish(self, s: Sample) -> None:
        sec, nsec = divmod(self.stamp_ns(s.tick), 1_000_000_000)
        stamp = self._stamp
        stamp.sec = sec
        stamp.nanosec = nsec
        if self._clock_pub is not None:
            self._clock_pub.publish(self._clock_msg)
        joint = self._joint_msg
        joint.position[0] = s.position
        joint.velocity[0] = s.velocity
        joint.effort[0] = s.motor_torque
        self._joint_pub.publish(joint)
        state = self._actuator_state
        state.goal_position = s.goal
        state.torque_enable = s.torque_enable
        state.gain = s.gain
        state.control = s.control
        state.motor_torque = s.motor_torque
        self._state_pub.publish(self._state_msg)

    def _publish_bench_info(self) -> None:
        with self._lock:
            sim = self._sim
            bench, params, k = sim.bench, sim.params, sim.tick_count
        sec, nsec = divmod(self.stamp_ns(k), 1_000_000_000)
        msg = BenchInfo(
            actuator=self._actuator.name, joint_name=self._joint,
            mass=float(bench.mass), arm_mass=float(bench.arm_mass),
            length=float(bench.length), gravity=GRAVITY,
            supply_voltage=sim.supply_voltage,
            damping=self._actuator.damping if self._actuator.family == CURRENT else math.nan,
            control_unit=self._actuator.control_unit, source=BenchInfo.SOURCE_SIM,
            control_rate=self._rate, model=params.model, parameters=self._source_label())
        msg.header.stamp = Time(sec=sec, nanosec=nsec)
        self._info_pub.publish(msg)

    # -- commands --------------------------------------------------------------------

    def _reject(self, kind: str, message: str) -> None:
        """Log the first rejection of each kind as an error, count every one."""
        self.rejected_commands[kind] += 1
        if kind in self._reported:
            self.get_logger().debug(f"command ignored: {message}")
            return
        self._reported.add(kind)
        self.logged_command_errors.append(kind)
        self.get_logger().error(f"command ignored: {message} (further '{kind}' errors are "
                                "counted, not logged)")

    def _apply(self, kind: str, goal=None, enable=None, gain=None) -> None:
        try:
            with self._lock:
                self._sim.set_command(goal=goal, torque_enable=enable, gain=gain)
                self._last_command_tick = self._sim.tick_count
                self._watchdog_tripped = False
        except BamError as exc:
            self._reject(kind, f"{exc}")

    def _on_command(self, msg: ActuatorCommand) -> None:
        names = list(msg.names)
        size = len(names) if names else 1
        fields = {"goal_positions": msg.goal_positions, "torque_enables": msg.torque_enables,
                  "gains": msg.gains}
        wrong = [f"{key} has {len(v)}" for key, v in fields.items() if len(v) not in (0, size)]
        if wrong:
            expected = f"{size} (as names)" if names else "1 (no names: a single entry)"
            self._reject("commands/length", f"/bam/commands arrays must be empty or hold "
                         f"{expected} entries, but {', '.join(wrong)}")
            return
        if names:
            if self._joint not in names:
                self._reject("commands/joint", f"/bam/commands names {names} do not include "
                             f"this bench's joint '{self._joint}'")
                return
            i = names.index(self._joint)
        else:
            i = 0
        goal = float(msg.goal_positions[i]) if len(msg.goal_positions) else None
        enable = bool(msg.torque_enables[i]) if len(msg.torque_enables) else None
        gain = float(msg.gains[i]) if len(msg.gains) else None
        self._apply("commands/value", goal, enable, gain)

    def _on_position_command(self, msg: Float64MultiArray) -> None:
        if len(msg.data) == 0:
            self._reject("position_commands/length",
                         "/position_commands holds no value; data[0] is the goal position")
            return
        if len(msg.data) > 1 and "position_commands/extra" not in self._reported:
            self._reported.add("position_commands/extra")
            self.get_logger().warning(
                f"/position_commands holds {len(msg.data)} values; this bench has one joint, "
                "using data[0] (logged once)")
        self._apply("position_commands/value", goal=float(msg.data[0]))

    # -- parameters ------------------------------------------------------------------

    def _pre_set(self, params: list[Parameter]) -> list[Parameter]:
        """A new params_file brings its model along (set atomically with it)."""
        names = {p.name for p in params}
        if "params_file" in names and "model" not in names:
            path = next(p.value for p in params if p.name == "params_file")
            if isinstance(path, str) and path:
                try:
                    model = load(path).model
                except BamError:
                    return params  # rejected with the reason by _on_set
                if model != self.get_parameter("model").value:
                    return [*params, Parameter("model", value=model)]
        return params

    def _plan(self, params: list[Parameter]) -> dict:
        """Validate a batch of changes; what to apply (raises BamError)."""
        new = {p.name: p.value for p in params}
        current = {name: self.get_parameter(name).value
                   for name in ("model", "params_file", "mass", "arm_mass", "length")}
        plan: dict = {}
        if "model" in new or "params_file" in new:
            path = new.get("params_file", current["params_file"])
            model = new.get("model", current["model"])
            get_model(model)
            plan["params"] = (self._resolve(path, model), path)
        if {"mass", "arm_mass", "length"} & new.keys():
            merged = {**current, **new}
            plan["bench"] = Bench(mass=merged["mass"], length=merged["length"],
                                  arm_mass=merged["arm_mass"])
        for name in ("real_time_factor", "position_noise", "quantization", "command_timeout"):
            if name in new:
                value = float(new[name])
                if not math.isfinite(value) or value < 0.0:
                    raise BamError(f"{name} must be a finite number >= 0, got {value}")
                plan[name] = value
        return plan

    def _on_set(self, params: list[Parameter]) -> SetParametersResult:
        try:
            self._plan(params)
        except BamError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _post_set(self, params: list[Parameter]) -> None:
        try:
            plan = self._plan(params)
        except BamError as exc:  # e.g. the file changed since it was validated
            self.get_logger().error(f"parameter change not applied: {exc}")
            return
        republish = False
        with self._lock:
            if "params" in plan:
                params_set, path = plan["params"]
                self._sim.set_parameters(params_set)
                self._params_file = path
                republish = True
            if "bench" in plan:
                self._sim.set_bench(mass=plan["bench"].mass, length=plan["bench"].length,
                                    arm_mass=plan["bench"].arm_mass)
                republish = True
            if "position_noise" in plan or "quantization" in plan:
                self._sim.set_measurement(quantization=plan.get("quantization"),
                                          position_noise=plan.get("position_noise"))
            if "command_timeout" in plan:
                self._timeout_ticks = self._ticks(plan["command_timeout"])
                self._last_command_tick = self._sim.tick_count
                self._watchdog_tripped = False
        if "real_time_factor" in plan:
            self._rtf = plan["real_time_factor"]
            self._reanchor = True
        if "params" in plan:
            self.get_logger().info(f"parameter set: {self._sim.params.model} "
                                   f"({self._source_label()})")
        if republish:
            self._publish_bench_info()


def _usage() -> str:
    lines = ["usage: pendulum [--ros-args -p NAME:=VALUE ...]", "",
             "Simulated pendulum bench (bam_sim). Parameters:"]
    for p in PARAMETERS:
        default = "the actuator's" if p.default is None else repr(p.default)
        flag = ", read-only" if p.read_only else ""
        lines.append(f"  {p.name:<17} {p.description} (default {default}{flag})")
    return "\n".join(lines)


def main(args: list[str] | None = None) -> int:
    argv = sys.argv if args is None else args
    extra = rclpy.utilities.remove_ros_args(argv)[1:]
    if any(a in ("-h", "--help") for a in extra):
        print(_usage())
        return 0
    if extra:
        print(f"pendulum: error: unexpected argument {extra[0]!r}; set parameters with "
              "--ros-args -p NAME:=VALUE (see --help)", file=sys.stderr)
        return 2
    rclpy.init(args=argv)
    node = None
    try:
        node = PendulumNode()
        rclpy.spin(node)
    except (BamError, ParameterException) as exc:
        hint = ""
        if isinstance(exc, InvalidParameterTypeException):
            hint = " (write doubles with a decimal point, e.g. mass:=1.0)"
        print(f"pendulum: error: {exc}{hint}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
