"""``arm``: a MuJoCo robot whose joints are servo actuators, behind the drivers' topics.

Example::

    ros2 run bam_sim arm --ros-args -p arm:=dynamixel \\
        -p params_files:="['params/mx106_m6.yaml', '']" -p gains:="[32.0, 32.0]"

A thin node over :class:`bam_sim.mujoco_arm.servo_arm.ServoArm`: the physics
steps at 1/timestep of the MJCF and the states of all joints are published
every ``publish_every`` steps, stamped in simulated time, with the pendulum
node's conventions (a message reports the state at its stamp and the command
driving the next steps; commands apply from the next period).

``bam/bench_info`` describes one pendulum, so for an arm its per-joint fields
(joint_name, actuator, control_unit, model, parameters) are comma-joined in
joint order, shared values (supply_voltage, damping) are NaN when the joints
differ, and the geometry is NaN: identification refuses arm recordings, which
are for validation. Parameters: :data:`PARAMETERS`, or ``arm --help``.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np
from rclpy.parameter import Parameter

from bam_msgs.msg import BenchInfo
from bam_sim.common.actuator_node import SimNode, pace
from bam_sim.common.commands import CommandLimits, JointCommand
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import (
    COMMAND_TIMEOUT,
    LOCKSTEP,
    PUBLISH_CLOCK,
    REAL_TIME_FACTOR,
    Param,
    actuator_parameter,
    declare,
    model_parameter,
    usage,
)
from bam_sim.common.numbers import finite_non_negative
from bam_sim.common.runner import run_node
from bam_sim.models.files.parameter_file import load, published
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import CURRENT, Actuator
from bam_sim.mujoco_arm.servo_arm import ServoArm
from bam_sim.mujoco_arm.shipped_arms import ARMS, ArmSpec, arm_spec, load_arm
from bam_sim.nodes import ros_parameter_set
from bam_sim.robot.joint_map import JointMap, load_joint_map

NODE_NAME = "arm"
VIEWER_PERIOD = 1.0 / 60.0  # s of wall time between two viewer refreshes
DEFAULT_MODEL = "m4"  # friction model of a joint the arm does not know, without a file

PARAMETERS: tuple[Param, ...] = (
    Param("arm", "dynamixel", f"shipped arm: {', '.join(ARMS)} (its MJCF, joints, "
          "actuators and default models)", read_only=True),
    Param("mjcf", "", "MJCF file of the robot ('' = the arm's shipped model); each servo "
          "joint must be driven by a <motor> of the same name", read_only=True),
    Param("joint_map", "", "joint map of the robot in mjcf (YAML: each servo joint's "
          "actuator, gain and <motor>): the defaults of joints, actuators and gains",
          read_only=True),
    Param("joints", None, "servo joints, in order (default: the arm's; others need mjcf)",
          read_only=True),
    Param("actuators", None, "bam_sim actuator of each joint (mx64, mx106, erob80_50, "
          "erob80_100; default: the arm's)", read_only=True),
    Param("models", None, "friction model m1..m6 per joint (one entry: all joints); '' = the "
          "file's model, else the arm's default (m4 for joints it does not know)",
          read_only=True),
    Param("params_files", None, "parameter file per joint (one entry: all joints); '' = the "
          "published set of the joint's actuator and model", read_only=True),
    Param("gains", None, "initial gain kp per joint (one entry: all joints; default: each "
          "actuator's second Table I gain); change them with /bam/commands", read_only=True),
    Param("initial_positions", None, "initial positions and goals per joint, rad (one entry: "
          "all joints; 0 = the shipped arms' links hanging down)", read_only=True),
    Param("publish_every", 1, "publish the states every N physics steps", read_only=True,
          low=1, high=1_000_000),
    Param("publish_rate", 0.0, "publication rate, Hz (rounded to whole steps; 0 = use "
          "publish_every)", read_only=True, low=0.0, high=1.0e6),
    REAL_TIME_FACTOR,
    LOCKSTEP,
    PUBLISH_CLOCK,
    Param("start_time", 0.0, "simulated time of the first step, s", read_only=True,
          low=0.0, high=4.0e9),
    COMMAND_TIMEOUT,
    Param("thread_priority", 0, "SCHED_FIFO priority of the loop thread, 1..99 (needs "
          "CAP_SYS_NICE or an rtprio limit); 0 = normal scheduling", read_only=True,
          low=0, high=99),
    Param("viewer", False, "open MuJoCo's passive viewer (needs a display: DISPLAY set)",
          read_only=True),
    Param("actuator", "", "actuator of a parameter set given as values (--params-file of a "
          "fitted model): it replaces the set of every joint of that actuator", read_only=True),
    Param("model", "", "friction model of that parameter set", read_only=True),
)
_FIRST = 5  # parameters declared before the per-joint defaults are known


def _per_joint(name: str, values: list, joints: tuple[str, ...]) -> list:
    """One entry per joint: the list itself, or its single entry repeated."""
    values = list(values)
    if len(values) == 1 and len(joints) > 1:
        return values * len(joints)
    if len(values) != len(joints):
        raise BamError(f"{name} has {len(values)} entries but there are {len(joints)} joints "
                       f"({', '.join(joints)}); give one per joint, or one for all")
    return values


class ArmNode(SimNode):
    """The simulated arm; keyword arguments go to :class:`rclpy.node.Node`."""

    def __init__(self, **kwargs) -> None:
        self._viewer = None
        super().__init__(NODE_NAME, **kwargs)

    # -- set-up ----------------------------------------------------------------------

    def _setup(self) -> None:
        values, spec = self._declare()
        sets = self._parameter_sets(values, spec)
        self._arm = self._build(values, spec.name, dict(zip(self.joint_names, sets)))
        self._mjcf = values["mjcf"] or str(spec.mjcf)
        self._dt = self._arm.dt
        self._every = self._publish_every(values["publish_every"], values["publish_rate"])
        self._steps = 0
        self._start_clock(1.0 / self._dt, values["start_time"], values["command_timeout"])
        self._create_topics([a.control_unit for a in self._actuators], self._voltages(),
                            publish_clock=bool(values["publish_clock"]))
        self._publish_bench_info()
        self._follow_parameters()
        if values["viewer"]:
            self._open_viewer()
        self.get_logger().info(
            f"{spec.title if not values['mjcf'] else self._mjcf}: "
            + ", ".join(f"{j} {a.name} {p.model.name} ({s})" for j, a, p, s in
                        zip(self.joint_names, self._actuators, sets, self._sources))
            + f"; {1.0 / self._dt:g} Hz physics, states every {self._every} step(s), "
            f"{pace(values)}")
        self._start_sim_loop("arm-loop", 1.0 / (self._dt * self._every), values)

    def _declare(self) -> tuple[dict, ArmSpec]:
        """Declare the parameters (per-joint defaults from the arm); joints and actuators."""
        values = declare(self, PARAMETERS[:3])
        spec = arm_spec(values["arm"])
        self._map = self._joint_map(values)
        joints = self._map.joints if self._map else spec.joints
        values.update(declare(self, PARAMETERS[3:_FIRST], {
            "joints": [j.joint for j in joints],
            "actuators": [j.actuator if isinstance(j.actuator, str) else j.actuator.name
                          for j in joints]}))
        joints = tuple(values["joints"])
        if not joints or any(not name for name in joints):
            raise BamError(f"joints must name the servo joints, got {list(joints)}")
        if not values["mjcf"] and (joints != tuple(j.joint for j in spec.joints) or list(
                values["actuators"]) != [j.actuator for j in spec.joints]):
            raise BamError(f"the {spec.name} arm has joints "
                           f"{', '.join(j.joint for j in spec.joints)} driven by "
                           f"{', '.join(j.actuator for j in spec.joints)}; set mjcf to use "
                           "other joints or actuators")
        self.joint_names = joints
        names = _per_joint("actuators", values["actuators"], joints)
        self._actuators = [actuator_parameter(name) for name in names]
        self.command_limits = CommandLimits.per_joint([(a.goal_range, a.gain_limit)
                                                       for a in self._actuators])
        n = len(joints)
        values.update(declare(self, PARAMETERS[_FIRST:], {
            "models": [""] * n, "params_files": [""] * n,
            "gains": self._default_gains(),
            "initial_positions": [0.0] * n}))
        return values, spec

    @staticmethod
    def _joint_map(values: dict) -> JointMap | None:
        if not values["joint_map"]:
            return None
        if not values["mjcf"]:
            raise BamError("joint_map names the joints of a robot: give its MJCF as mjcf too")
        return load_joint_map(values["joint_map"])

    def _default_gains(self) -> list[float]:
        """The map's gains where it gives them, else each actuator's second Table I gain."""
        table = [float(a.gains[1]) for a in self._actuators]
        if self._map is None or list(self.joint_names) != self._map.names:
            return table
        return [j.gain if j.gain is not None else g for j, g in zip(self._map.joints, table)]

    def _parameter_sets(self, values: dict, spec: ArmSpec) -> list[ParameterSet]:
        """Each joint's parameter set, from its file and model entries."""
        joints = self.joint_names
        defaults = {j.joint: j.model for j in spec.joints}
        if self._map is not None:  # a joint map's models where it names them
            defaults |= {j.joint: j.model.name for j in self._map.joints if j.model is not None}
        files = _per_joint("params_files", values["params_files"], joints)
        models = _per_joint("models", values["models"], joints)
        self._sources = [os.path.abspath(f) if f else "published" for f in files]
        sets = [self._resolve(joint, actuator, file, model,
                              defaults.get(joint, DEFAULT_MODEL))
                for joint, actuator, file, model in zip(joints, self._actuators, files, models)]
        return self._with_given_set(sets)

    def _with_given_set(self, sets: list[ParameterSet]) -> list[ParameterSet]:
        """A set given as values (``--params-file``) replaces its actuator's joints' sets."""
        given = ros_parameter_set.declare_values(self)
        if given is None:
            return sets
        name = given.actuator.name
        chosen = [i for i, a in enumerate(self._actuators) if a.name == name]
        if not chosen:
            raise BamError(f"the parameter set given is for {name}, but the joints are driven "
                           f"by {', '.join(a.name for a in self._actuators)}; give a "
                           "parameter file of one of them")
        for i in chosen:
            sets[i] = given
            self._sources[i] = ros_parameter_set.SOURCE
        return sets

    def _resolve(self, joint: str, actuator: Actuator, path: str, model: str,
                 default: str) -> ParameterSet:
        """A joint's parameter set: its file (checked) or the published one; ``model``
        and ``default`` are names (a ROS parameter's, the arm table's)."""
        chosen = model_parameter(model) if model else None  # a clear error for an unknown one
        if not path:
            return published(actuator, chosen or get_model(default))
        params = load(path)
        if params.actuator.name != actuator.name:
            raise BamError(f"{path} is for actuator {params.actuator.name}, but joint "
                           f"'{joint}' is a {actuator.name}; give a parameter file of the "
                           f"{actuator.name}")
        if chosen is not None and chosen.name != params.model.name:
            raise BamError(f"{path} holds model {params.model.name}, not {chosen.name} (models "
                           f"entry of joint '{joint}'); leave that entry '' to follow the file")
        return params

    def _build(self, values: dict, arm: str, sets: dict[str, ParameterSet]) -> ServoArm:
        joints = self.joint_names
        gains = _per_joint("gains", values["gains"], joints)
        motors = {j.joint: j.motor for j in self._map.joints} if self._map else {}
        arm_ = load_arm(values["mjcf"] or arm, sets, gains=gains, motors=motors)
        # One step and a state before the loop starts: the numba kernels load (or
        # compile) now, not as a late first tick; reset() then starts from scratch.
        arm_.step(1)
        arm_.state()
        arm_.reset(q=_per_joint("initial_positions", values["initial_positions"], joints))
        return arm_

    def _publish_every(self, every: int, rate: float) -> int:
        if rate <= 0.0:
            return int(every)
        steps = max(1, int(round(1.0 / (self._dt * rate))))
        if abs(steps * self._dt * rate - 1.0) > 1e-9:
            self.get_logger().warning(
                f"publish_rate {rate:g} Hz rounded to every {steps} step(s) "
                f"({1.0 / (steps * self._dt):g} Hz) at the {1.0 / self._dt:g} Hz physics")
        return steps

    def _voltages(self) -> list[float]:
        return [float(j.supply_voltage) if j.supply_voltage is not None
                else float(a.supply_voltage) for j, a in zip(self._arm.joints, self._actuators)]

    # -- public helpers ----------------------------------------------------------------

    @property
    def arm(self) -> ServoArm:
        """The simulated arm (hold :attr:`lock` to use it while the loop runs)."""
        return self._arm

    @property
    def viewer(self):
        """MuJoCo's passive viewer, None when not open (or closed by the user)."""
        return self._viewer

    @property
    def tick_count(self) -> int:
        """Publication periods done (the loop's tick index)."""
        return self._steps // self._every

    @property
    def step_count(self) -> int:
        """Physics steps done."""
        return self._steps

    @property
    def publish_every(self) -> int:
        return self._every

    def _now(self) -> int:
        return self._steps  # the watchdog counts physics steps

    def stamp_ns(self, step: int) -> int:
        """Simulated time after ``step`` physics steps, ns (the stamp of its messages)."""
        return self._time.ns(step)

    def destroy_node(self) -> None:
        if self._stop_threads() and self._viewer is not None:  # the loop syncs the viewer
            self._viewer.close()
            self._viewer = None
        super().destroy_node()

    # -- loop ------------------------------------------------------------------------

    def _tick(self) -> None:
        with self._lock:
            k, n, arm = self._steps, self._every, self._arm
            due = self._watchdog.due()
            if due is not None and due <= k:
                self._trip_watchdog()
                due = None
            s = arm.state()
            if due is not None and due < k + n:  # trips within this period: to the step
                arm.step(due - k)
                self._trip_watchdog()
                arm.step(k + n - due)
            else:
                arm.step(n)
            self._steps = k + n
            if self._viewer is not None:
                self._sync_viewer()
        self.topics.publish(self._time.ns(k), s.q, s.dq, s.motor_torque, s.goal,
                            s.torque_enable, s.gain, s.control, s.motor_torque)

    def _trip_watchdog(self) -> None:
        """Torque off on every joint from now on (caller holds the lock)."""
        self._watchdog.tripped = True
        if not self._arm.state().torque_enable.any():
            return
        self._arm.set_command(torque_enables=False)
        self.get_logger().warning(
            f"no command for {self._watchdog.timeout * self._dt:g} s (command_timeout): "
            "torque off on every joint; send torque_enables on /bam/commands to enable them "
            "again")

    def _publish_bench_info(self) -> None:
        def shared(values: list[float]) -> float:
            return values[0] if len(set(values)) == 1 else math.nan

        actuators = self._actuators
        with self._lock:
            models = [j.params.model.name for j in self._arm.joints]
            gravity = float(np.linalg.norm(self._arm.model.opt.gravity))
            k = self._steps
        msg = BenchInfo(
            actuator=",".join(a.name for a in actuators),
            joint_name=",".join(self.joint_names),
            mass=math.nan, arm_mass=math.nan, length=math.nan, gravity=gravity,
            supply_voltage=shared(self._voltages()),
            damping=shared([a.damping if a.family == CURRENT else math.nan
                            for a in actuators]),
            control_unit=",".join(a.control_unit for a in actuators),
            source=BenchInfo.SOURCE_SIM, control_rate=1.0 / self._dt,
            model=",".join(models), parameters=",".join(self._sources))
        self.topics.publish_info(msg, self._time.ns(k))

    # -- viewer ------------------------------------------------------------------------

    def _open_viewer(self) -> None:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            self.get_logger().warning("viewer:=true but no display (DISPLAY is not set); "
                                      "running without the viewer")
            return
        try:
            import mujoco.viewer

            self._viewer = mujoco.viewer.launch_passive(self._arm.model, self._arm.data)
        except Exception as exc:  # no OpenGL, no GUI toolkit...: the simulation goes on
            self.get_logger().warning(f"cannot open the MuJoCo viewer ({type(exc).__name__}: "
                                      f"{exc}); running without it")
            return
        self._viewer_next = 0.0

    def _sync_viewer(self) -> None:
        """Refresh the viewer at most every VIEWER_PERIOD of wall time (lock held)."""
        now = time.monotonic()
        if now < self._viewer_next:
            return
        self._viewer_next = now + VIEWER_PERIOD
        if self._viewer.is_running():
            self._viewer.sync()
        else:  # closed by the user: the simulation goes on
            self._viewer = None

    # -- commands --------------------------------------------------------------------

    def _command(self, command: JointCommand) -> None:
        names = [self.joint_names[i] for i in command.indices]

        def by_joint(values):
            return None if values is None else dict(zip(names, values))

        self._arm.set_command(goals=by_joint(command.goals),
                              torque_enables=by_joint(command.torque_enables),
                              gains=by_joint(command.gains))

    # -- parameters ------------------------------------------------------------------

    def _plan(self, params: list[Parameter]) -> dict:
        return {p.name: finite_non_negative(p.name, p.value) for p in params
                if p.name in ("real_time_factor", "command_timeout")}

    def _apply_plan(self, plan: dict) -> None:
        if "command_timeout" in plan:
            with self._lock:
                self._set_command_timeout(plan["command_timeout"])
        if "real_time_factor" in plan:
            self._set_real_time_factor(plan["real_time_factor"])


def main(args: list[str] | None = None) -> int:
    return run_node("arm", ArmNode, usage("arm", "Simulated MuJoCo arm (bam_sim)", PARAMETERS,
                                          "per joint, see the description")
                    + ros_parameter_set.HELP, args)


if __name__ == "__main__":
    sys.exit(main())
