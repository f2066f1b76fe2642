"""``pendulum``: the simulated pendulum bench, publishing the topics of the real driver.

Example::

    ros2 run bam_sim pendulum --ros-args -p actuator:=mx64 -p model:=m6 \\
        -p mass:=1.0 -p length:=0.15
    ros2 run bam_sim pendulum --ros-args --params-file params/mx64_m6.yaml

A thin node over :class:`bam_sim.bench.stepper.BenchStepper`. With MuJoCo's
DC-motor model (the dcmotor actuator, LuGre, or a group such as ``thermal``)
``bam/actuator_states`` carries the motor current and the winding temperature
(NaN when the set does not model them, as a driver that does not measure them).
The simulator is
the clock: tick k is stamped t_k = start_time + k/rate on ``joint_states``,
``bam/actuator_states`` and ``/clock``, whatever the real-time factor, so a
recording keeps simulated time. The sample of tick k reports the command that
drives the step k → k+1. ``bam/bench_info`` (transient local) is published at
start and whenever the bench or the parameter set changes. Parameters:
:data:`PARAMETERS`, or ``pendulum --help``.
"""

from __future__ import annotations

import math
import os
import sys

from rclpy.parameter import Parameter

from bam_msgs.msg import BenchInfo
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.bench.stepper import BenchStepper, Sample
from bam_sim.common.actuator_node import SimNode, pace
from bam_sim.common.commands import CommandLimits, JointCommand
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import (
    ACTUATOR_FILE,
    COMMAND_TIMEOUT,
    LOCKSTEP,
    PUBLISH_CLOCK,
    REAL_TIME_FACTOR,
    Param,
    declare,
    declare_actuator,
    model_parameter,
    usage,
)
from bam_sim.common.numbers import finite_non_negative, number
from bam_sim.common.runner import run_node
from bam_sim.models.files.parameter_file import load
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import CURRENT
from bam_sim.models.servo.actuators import ACTUATORS
from bam_sim.nodes import ros_parameter_set

NODE_NAME = "pendulum"


PARAMETERS: tuple[Param, ...] = (
    Param("actuator", "mx64", f"actuator simulated: {', '.join(ACTUATORS)}", read_only=True),
    ACTUATOR_FILE,
    Param("model", "m4", "friction model m1..m6, ep_cv, ep_stribeck, ep_rational, ep_load or "
          "lugre (the published set when params_file is '', which the ep_* and lugre models "
          "and the dcmotor actuator do not have; set automatically to the model of "
          "params_file)"),
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
    REAL_TIME_FACTOR,
    LOCKSTEP,
    PUBLISH_CLOCK,
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
    COMMAND_TIMEOUT,
)


class PendulumNode(SimNode):
    """The simulated bench; keyword arguments go to :class:`rclpy.node.Node`."""

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)

    # -- set-up ----------------------------------------------------------------------

    def _setup(self) -> None:
        values, actuator = declare_actuator(self, PARAMETERS[:2])
        defaults = {"gain": float(actuator.gains[1]),
                    "supply_voltage": float(actuator.supply_voltage)}
        values.update(declare(self, PARAMETERS[2:], defaults))
        self._actuator = actuator
        self._joint = values["joint_name"]
        if not self._joint:
            raise BamError("joint_name must not be empty")
        self.joint_names = (self._joint,)
        self.command_limits = CommandLimits.per_joint([(actuator.goal_range,
                                                        actuator.gain_limit)])
        self._rate = float(values["rate"])
        model = model_parameter(values["model"])  # a clear error for an unknown model
        given = ros_parameter_set.declare_values(self)
        if given is not None and values["params_file"]:
            raise BamError("a parameter set was given twice, as ROS parameters (--params-file "
                           "or -p) and as params_file; give one of them")
        # A set given as ROS parameters is complete: it is kept as the values the running
        # set is made of, so that `ros2 param set` on one value changes only that value.
        self._values = dict(given.values) if given is not None else {}
        params = given or self._resolve(values["params_file"], None if values["params_file"]
                                        else model, {})
        if params.model.name != values["model"]:
            self.set_parameters([Parameter("model", value=params.model.name)])
        self._params_file = values["params_file"]
        bench = Bench(mass=values["mass"], length=values["length"],
                      arm_mass=values["arm_mass"])
        latency_ticks = int(round(values["latency"] * self._rate))
        if values["latency"] > 0.0 and abs(latency_ticks / self._rate - values["latency"]) > 1e-9:
            self.get_logger().warning(
                f"latency {values['latency']} s rounded to {latency_ticks} ticks "
                f"({latency_ticks / self._rate} s) at {self._rate:g} Hz")
        self._sim = BenchStepper(
            params, bench, 1.0 / self._rate,
            position=values["initial_position"], gain=values["gain"],
            supply_voltage=values["supply_voltage"],
            quantization=values["quantization"], position_noise=values["position_noise"],
            latency=latency_ticks, seed=values["seed"])
        self._start_clock(self._rate, values["start_time"], values["command_timeout"])
        self._create_topics([actuator.control_unit], [self._sim.supply_voltage],
                            publish_clock=bool(values["publish_clock"]))
        self._publish_bench_info()
        self.add_pre_set_parameters_callback(self._pre_set)
        self._follow_parameters()
        self.get_logger().info(
            f"{actuator.title} with {params.model.name} ({self._source_label()}), joint "
            f"'{self._joint}', m={bench.mass:g} kg, l={bench.length:g} m, "
            f"{self._rate:g} Hz, {pace(values)}")
        self._start_sim_loop("pendulum-loop", self._rate, values)

    def _resolve(self, path: str, model: FrictionModel | None,
                 values: dict[str, float]) -> ParameterSet:
        """The parameter set of a file (checked against the actuator) or the published one
        (for an ep_* model, which has none, the given ``values`` alone)."""
        actuator = self._actuator.name
        if not path:
            return ros_parameter_set.base_set(self._actuator, model, values)
        peeked, self._peeked = getattr(self, "_peeked", None), None
        params = peeked[1] if peeked and peeked[0] == path else load(path)
        if params.actuator.name != actuator:
            raise BamError(f"{path} is for actuator {params.actuator.name}, but this bench "
                           f"simulates a {actuator}; give a parameter file of the {actuator}")
        if model is not None and model.name != params.model.name:
            raise BamError(f"{path} holds model {params.model.name}, not {model.name}; set "
                           f"params_file alone (model follows it), or params_file:='' for the "
                           f"published {model.name}")
        return params

    def _source_label(self) -> str:
        source = os.path.abspath(self._params_file) if self._params_file else "published"
        if self._values:
            source = f"{ros_parameter_set.SOURCE} over {source}"
        return source

    # -- public helpers ----------------------------------------------------------------

    @property
    def simulator(self) -> BenchStepper:
        """The simulated bench (hold :attr:`lock` to change it while the loop runs)."""
        return self._sim

    @property
    def tick_count(self) -> int:
        return self._sim.tick_count

    def stamp_ns(self, tick: int) -> int:
        """Simulated time of tick k, ns (the header stamp of its messages)."""
        return self._time.ns(tick)

    # -- loop ------------------------------------------------------------------------

    def _tick(self) -> None:
        with self._lock:
            due = self._watchdog.due()
            if due is not None and self._sim.tick_count >= due:
                self._trip_watchdog()
            sample = self._sim.tick()
        self._publish(sample)

    def _publish(self, s: Sample) -> None:
        """The messages of one sample (its tick's stamp)."""
        self.topics.publish(self._time.ns(s.tick), (s.position,), (s.velocity,),
                            (s.motor_torque,), (s.goal,), (s.torque_enable,), (s.gain,),
                            (s.control,), (s.motor_torque,), (s.current,), (s.temperature,),
                            (s.input_voltage,))

    def _trip_watchdog(self) -> None:
        """Torque off from this tick on (caller holds the lock)."""
        self._watchdog.tripped = True
        if not self._sim.command.torque_enable:
            return
        self._sim.set_command(torque_enable=False)
        self.get_logger().warning(
            f"no command for {self._watchdog.timeout / self._rate:g} s (command_timeout): "
            "torque off; send torque_enables: [true] on /bam/commands to enable it again")

    def _publish_bench_info(self) -> None:
        with self._lock:
            sim = self._sim
            bench, params, k = sim.bench, sim.params, sim.tick_count
        msg = BenchInfo(
            actuator=self._actuator.name, joint_name=self._joint,
            mass=float(bench.mass), arm_mass=float(bench.arm_mass),
            length=float(bench.length), gravity=GRAVITY,
            supply_voltage=sim.supply_voltage,
            damping=self._actuator.damping if self._actuator.family == CURRENT else math.nan,
            control_unit=self._actuator.control_unit, source=BenchInfo.SOURCE_SIM,
            control_rate=self._rate, model=params.model.name,
            parameters=self._source_label())
        self.topics.publish_info(msg, self._time.ns(k))

    # -- commands --------------------------------------------------------------------

    def _command(self, command: JointCommand) -> None:
        def first(values):
            return None if values is None else values[0]

        self._sim.set_command(goal=first(command.goals),
                              torque_enable=first(command.torque_enables),
                              gain=first(command.gains))

    # -- parameters ------------------------------------------------------------------

    def _pre_set(self, params: list[Parameter]) -> list[Parameter]:
        """A new params_file brings its model along (set atomically with it)."""
        names = {p.name for p in params}
        if "params_file" in names and "model" not in names:
            path = next(p.value for p in params if p.name == "params_file")
            if isinstance(path, str) and path:
                try:
                    self._peeked = (path, load(path))
                except BamError:
                    return params  # rejected with the reason by _on_set
                model = self._peeked[1].model.name
                if model != self.get_parameter("model").value:
                    return [*params, Parameter("model", value=model)]
        return params

    def _plan(self, params: list[Parameter]) -> dict:
        """Validate a batch of changes; what to apply (raises BamError)."""
        new = {p.name: p.value for p in params}
        current = {name: self.get_parameter(name).value
                   for name in ("model", "params_file", "mass", "arm_mass", "length")}
        plan: dict = {}
        changed_values = ros_parameter_set.value_names(params)
        if "model" in new or "params_file" in new or changed_values:
            path = new.get("params_file", current["params_file"])
            model = model_parameter(new.get("model", current["model"]))
            values = {**self._values, **{name: number(new[name], f"parameter {name}")
                                         for name in changed_values
                                         if not _is_nan(new[name])}}
            for name in changed_values:
                if _is_nan(new[name]):
                    values.pop(name, None)
            plan["params"] = (ros_parameter_set.with_values(self._resolve(path, model, values),
                                                           values), path, values)
        if {"mass", "arm_mass", "length"} & new.keys():
            merged = {**current, **new}
            plan["bench"] = Bench(mass=merged["mass"], length=merged["length"],
                                  arm_mass=merged["arm_mass"])
        for name in ("real_time_factor", "position_noise", "quantization", "command_timeout"):
            if name in new:
                plan[name] = finite_non_negative(name, new[name])
        return plan

    def _apply_plan(self, plan: dict) -> None:
        republish = False
        with self._lock:
            if "params" in plan:
                params_set, path, self._values = plan["params"]
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
                self._set_command_timeout(plan["command_timeout"])
        if "real_time_factor" in plan:
            self._set_real_time_factor(plan["real_time_factor"])
        if "params" in plan:
            self.get_logger().info(f"parameter set: {self._sim.params.model.name} "
                                   f"({self._source_label()})")
        if republish:
            self._publish_bench_info()


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def main(args: list[str] | None = None) -> int:
    return run_node("pendulum", PendulumNode, usage(
        "pendulum", "Simulated pendulum bench (bam_sim)", PARAMETERS, "the actuator's")
        + ros_parameter_set.HELP, args)


if __name__ == "__main__":
    sys.exit(main())
