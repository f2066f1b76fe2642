"""The pendulum bench stepped one control tick at a time: the core of the sim node.

:class:`BenchStepper` holds everything a simulated bench needs between two
ticks — the parameter set (hence the actuator), the bench geometry, the time
step, the state (q, q̇), the current command (goal, torque enable, gain kp) and
the measurement effects of the sensor — and advances it with :meth:`tick`.
It imports no ROS module; :mod:`bam_sim.nodes.pendulum_node` is a thin node over it.

Tick convention (the alignment of :mod:`bam_sim.bench.bench_log`, which the
identification relies on). At tick k, with the bench in state k at
t_k = k·Δt:

1. the latest command is taken;
2. the control (V or A) and the motor torque τ_m are computed for state k and
   that command (:func:`bam_sim.models.servo.laws.servo_torque`, evaluated inside
   :func:`bam_sim.bench.pendulum.step`, which returns both);
3. the sample of t_k is produced: measured position and velocity of state k,
   goal, torque enable, gain, control and τ_m;
4. the physics steps to state k+1 (:func:`bam_sim.bench.pendulum.step`).

So the command of sample k drives the step k → k+1, and a sequence of samples
replayed by :func:`bam_sim.bench.rollouts.rollout` (goals, enables and gain of the
samples, first sample's state) gives back the very same positions, bit for
bit, when the measurement effects are off.

Measurement effects change what is reported, never the physics (the control
law sees the true state): a read latency of L ticks reports state k − L (the
initial state until L ticks have passed); Gaussian noise of a given standard
deviation is added to the position (a seeded numpy Generator); the position
is then rounded to the encoder's step. Velocity is only delayed.

A set with the ``latency`` group delays what the servo is told by L_c (the
command of tick k is the one given L_c/Δt ticks earlier, goals interpolated
between ticks as in a rollout, :func:`bam_sim.bench.latency.delayed_command`;
the command held before the first tick until then) and what is reported by
L_r, rounded to whole ticks and added to the read latency. Unlike a rollout,
which only sees their sum, the two stay apart here: a controller closing its
loop through this bench meets each where it is.

An STS servo's firmware target follows the goal at its rate
(:func:`bam_sim.models.servo.laws.firmware_target`), from the initial goal, as in a
rollout.

With an elasto-plastic model (``ep_*``) the state also holds the friction
element's deflection e (:func:`bam_sim.bench.pendulum.step_ep`), 0 at the
start like a rollout's; it is kept when only the values of the set change and
reset when the model changes. Such a set must satisfy condition (14) and the
coupling limit at this Δt and bench (:func:`bam_sim.models.elastoplastic.validity.check_step`),
checked whenever the set or the bench changes.

A set with the ``backlash`` group also keeps the motor's lead on the output and its
rate (:func:`bam_sim.bench.backlash.step_backlash`): the load leaning on the gear at the
start, and again whenever the width changes.

A set through MuJoCo's DC-motor model (:func:`bam_sim.models.dcmotor.motor_model.uses_motor`)
keeps its states the same way (:func:`bam_sim.bench.pendulum.step_motor`): kept
when only values change, reset (slew at the goal, the winding at ambient) when
the model or the groups do. Its samples carry the motor current and the winding
temperature.
"""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

import numpy as np

from bam_sim.bench.backlash import initial_lead, step_backlash
from bam_sim.bench.geometry import Bench
from bam_sim.bench.pendulum import step_any, step_motor
from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.motor_model import (
    ON,
    init_state,
    motor_rows,
    temperature_of,
    uses_motor,
)
from bam_sim.models.elastoplastic.validity import check_step
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import C_SUPPLY, Actuator
from bam_sim.models.servo.actuators import law_siblings
from bam_sim.models.servo.laws import firmware_target, input_voltage

_NOISE_BLOCK = 1024  # normal draws generated at once (deterministic for a seed)


class Command(NamedTuple):
    """What the servo is told: goal position (rad), torque enable, gain kp."""

    goal: float
    torque_enable: bool
    gain: float


class Sample(NamedTuple):
    """What the bench reports at t_k (measured state; command and servo output)."""

    tick: int  # k
    time: float  # t_k = k·Δt (s since the start)
    position: float  # rad, measured (effects applied)
    velocity: float  # rad/s, measured (latency applied)
    goal: float  # rad
    torque_enable: bool
    gain: float
    control: float  # V or A (the actuator's control unit); 0 with torque off
    motor_torque: float  # N·m; 0 with torque off
    # Through the DC-motor model (bam_sim.models.dcmotor.motor_model): the motor current (A) and
    # the winding temperature (°C, with the thermal group); NaN when not modelled.
    current: float = math.nan
    temperature: float = math.nan
    # The input voltage a voltage-law servo's bus reports (V; sagged with the supply
    # group); NaN for the other families.
    input_voltage: float = math.nan


def _finite(name: str, value: object) -> float:
    return number(value, name, text=False)


def _non_negative(name: str, value: object) -> float:
    value = _finite(name, value)
    if value < 0.0:
        raise BamError(f"{name} must be >= 0, got {value}")
    return value


class BenchStepper:
    """A pendulum bench driven by one servo, advanced one tick of Δt at a time.

    ``params`` fixes the actuator (it cannot change later: another parameter
    set must be for the same actuator). ``gain`` defaults to the actuator's
    second Table I gain, ``goal`` to the initial position, ``supply_voltage``
    to the actuator's. ``latency`` is in ticks.
    """

    def __init__(
        self,
        params: ParameterSet,
        bench: Bench,
        dt: float,
        *,
        position: float = 0.0,
        velocity: float = 0.0,
        goal: float | None = None,
        torque_enable: bool = True,
        gain: float | None = None,
        supply_voltage: float | None = None,
        quantization: float = 0.0,
        position_noise: float = 0.0,
        latency: int = 0,
        seed: int = 0,
    ) -> None:
        if not isinstance(params, ParameterSet):
            raise BamError(f"params must be a ParameterSet, got {type(params).__name__}")
        if not isinstance(bench, Bench):
            raise BamError(f"bench must be a Bench, got {type(bench).__name__}")
        self._dt = _finite("time step dt", dt)
        if self._dt <= 0.0:
            raise BamError(f"time step dt must be > 0 s, got {self._dt}")
        self._actuator = params.actuator
        volts = self._actuator.supply_voltage if supply_voltage is None else supply_voltage
        volts = _finite("supply voltage", volts)
        if volts <= 0.0:
            raise BamError(f"supply voltage must be > 0 V, got {volts}")
        self._supply_voltage = volts
        self._law(self._actuator)
        self._q = _finite("initial position", position)
        self._dq = _finite("initial velocity", velocity)
        self._e = 0.0  # elasto-plastic deflection (ep_* models; Algorithm 1 line 1)
        # The DC-motor model's states (slew, integral, temperature, bristle, current)
        self._motor_state = np.zeros(D.N_STATES)
        self._k = 0
        self._params = params
        self._bench = bench
        if isinstance(latency, bool) or not isinstance(latency, (int, np.integer)) or latency < 0:
            raise BamError(f"latency must be a whole number of ticks >= 0, got {latency!r}")
        self._latency = int(latency)
        # The commands of the last ticks, for the latency group's L_c, and the last
        # read-delay + 1 true states (filled with the initial one); oldest first.
        self._commands: deque[Command] = deque(maxlen=2)
        self._states: deque[tuple[float, float]] = deque([(self._q, self._dq)])
        # The motor's lead on the output and its rate (backlash): the load on the gear.
        self._lead = float(initial_lead(params.vector(), bench.gravity_torque, self._q))
        self._lead_rate = 0.0
        self._install(params, bench)
        self._command = Command(self._q, True, 0.0)
        self.set_command(
            goal=self._q if goal is None else goal,
            torque_enable=torque_enable,
            gain=self._actuator.gains[1] if gain is None else gain,
        )
        self._reset_motor()
        # The STS firmware's target (the goal on other servos): at the first goal.
        self._target = self._command.goal
        self._first_command = self._command  # held before the first tick
        self._quantization = 0.0
        self._noise_std = 0.0
        self._rng = np.random.default_rng(seed)
        self._noise = np.empty(0)
        self._noise_index = 0
        self.set_measurement(quantization=quantization, position_noise=position_noise)
        self._warm_up()

    def _warm_up(self) -> None:
        """Compile the kernel, or load it from numba's cache, now rather than at tick 0."""
        goal, enabled, kp = self._command
        model, p, inertia, gravity, rows = self._kernel
        if rows is not None:
            step_motor(model, self._family, p, rows, self._consts, kp, inertia, gravity,
                       self._q, self._dq, self._e, self._motor_state.copy(), goal, enabled,
                       False, 0.0, self._dt)
        elif p[P.BACKLASH] > 0.0:
            step_backlash(model, self._family, p, self._consts, kp, inertia, gravity, self._q,
                          self._dq, self._lead, self._lead_rate, goal, enabled, False, 0.0,
                          self._dt)
        else:
            step_any(model, self._family, p, self._consts, kp, inertia, gravity, self._q,
                     self._dq, self._e, goal, enabled, False, 0.0, self._dt)

    # -- read-only views ---------------------------------------------------------------

    @property
    def actuator(self) -> Actuator:
        return self._actuator

    @property
    def params(self) -> ParameterSet:
        return self._params

    @property
    def bench(self) -> Bench:
        return self._bench

    @property
    def dt(self) -> float:
        return self._dt

    @property
    def supply_voltage(self) -> float:
        return self._supply_voltage

    @property
    def tick_count(self) -> int:
        """k of the next tick (the number of ticks done)."""
        return self._k

    @property
    def time(self) -> float:
        """t_k of the next tick, s."""
        return self._k * self._dt

    @property
    def state(self) -> tuple[float, float]:
        """True (q, q̇) of the next tick, rad and rad/s."""
        return self._q, self._dq

    @property
    def deflection(self) -> float:
        """Elasto-plastic deflection e of the next tick, rad (0 for M1..M6)."""
        return self._e

    @property
    def motor_state(self) -> dict[str, float]:
        """The DC-motor model's states of the next tick by name (empty when not used)."""
        if self._kernel[4] is None:
            return {}
        return dict(zip(D.STATE_NAMES, self._motor_state.tolist(), strict=True))

    @property
    def command(self) -> Command:
        return self._command

    @property
    def quantization(self) -> float:
        return self._quantization

    @property
    def position_noise(self) -> float:
        return self._noise_std

    @property
    def latency(self) -> int:
        return self._latency

    # -- changes ---------------------------------------------------------------------

    def set_command(
        self,
        goal: float | None = None,
        torque_enable: bool | None = None,
        gain: float | None = None,
    ) -> Command:
        """Change what is given (``None`` keeps it); all validated before any is applied."""
        current = self._command
        new_goal = current.goal if goal is None else _finite("goal position", goal)
        new_gain = current.gain if gain is None else _non_negative("gain kp", gain)
        if torque_enable is None:
            new_enable = current.torque_enable
        elif isinstance(torque_enable, (bool, np.bool_)):
            new_enable = bool(torque_enable)
        else:
            raise BamError(f"torque enable must be a bool, got {torque_enable!r}")
        # One assignment: a tick running in another thread sees the old or the new
        # command, never a mix.
        self._command = Command(new_goal, new_enable, new_gain)
        return self._command

    def set_bench(
        self,
        mass: float | None = None,
        length: float | None = None,
        arm_mass: float | None = None,
    ) -> Bench:
        """Change the bench geometry (validated by :class:`Bench`); the state is kept."""
        old = self._bench
        bench = Bench(
            mass=old.mass if mass is None else mass,
            length=old.length if length is None else length,
            arm_mass=old.arm_mass if arm_mass is None else arm_mass,
        )
        self._install(self._params, bench)
        return bench

    def set_parameters(self, params: ParameterSet) -> None:
        """Swap the parameter set (model or values); it must be for the same actuator, or
        for the same servo under another firmware law (an operating mode switched:
        :func:`bam_sim.models.servo.actuators.law_siblings`)."""
        if not isinstance(params, ParameterSet):
            raise BamError(f"params must be a ParameterSet, got {type(params).__name__}")
        if params.actuator.name != self._actuator.name:
            if params.actuator not in law_siblings(self._actuator):
                raise BamError(
                    f"parameter set is for actuator {params.actuator.name}, but this bench has "
                    f"a {self._actuator.name}; use a parameter set of the "
                    f"{self._actuator.name}")
            self._law(params.actuator)  # the servo switched operating modes
        self._install(params, self._bench)

    def _law(self, actuator: Actuator) -> None:
        """The firmware law's constants, with this bench's supply voltage (as
        BenchLog.consts builds them for a recording)."""
        self._actuator = actuator
        self._consts = actuator.consts()
        self._consts[C_SUPPLY] = self._supply_voltage
        self._family = int(actuator.family)

    def set_measurement(
        self,
        quantization: float | None = None,
        position_noise: float | None = None,
    ) -> None:
        """Encoder step (rad, 0 = off) and position noise std (rad, 0 = off)."""
        step_ = (self._quantization if quantization is None
                 else _non_negative("quantization step", quantization))
        noise = (self._noise_std if position_noise is None
                 else _non_negative("position noise", position_noise))
        self._quantization = step_
        self._noise_std = noise

    def _install(self, params: ParameterSet, bench: Bench) -> None:
        """Precompute the kernel's arguments for a parameter set and a bench."""
        p = params.vector()
        # The same expressions as simulator.rollout, so both step bit-identically.
        inertia = bench.inertia(p[P.ARMATURE])
        check_step(params.model, self._actuator, p, self._dt, inertia,
                   bench.gravity_torque, self._supply_voltage)
        rows = None
        if uses_motor(self._family, params.model_id, p):
            rows = motor_rows(self._family, params.model_id, p, self._consts)
        kernel = (int(params.model_id), p, float(inertia), float(bench.gravity_torque), rows)
        fresh = params.model != self._params.model or params.groups != self._params.groups
        if fresh:
            self._e = 0.0  # another model: the old deflection means nothing to it
        if fresh or p[P.BACKLASH] != self._params.vector()[P.BACKLASH]:
            # another gap: the load leans on the gear again
            self._lead = float(initial_lead(p, bench.gravity_torque, self._q))
            self._lead_rate = 0.0
        self._params = params
        self._bench = bench
        self._kernel = kernel  # one assignment, read once per tick
        if fresh:
            self._reset_motor()
        self._resize_delays()

    def _resize_delays(self) -> None:
        """Size the command and state histories for the set's delays (in ticks)."""
        p = self._kernel[1]
        self._command_delay = p[P.LATENCY_COMMAND] / self._dt
        self._read_ticks = self._latency + round(p[P.LATENCY_READING] / self._dt)
        size = math.ceil(self._command_delay) + 2
        if self._commands.maxlen != size:
            self._commands = deque(self._commands, maxlen=size)
        states = list(self._states)
        missing = self._read_ticks + 1 - len(states)
        states = [states[0]] * max(missing, 0) + states
        self._states = deque(states, maxlen=self._read_ticks + 1)

    def _acting_command(self) -> Command:
        """The command the servo acts on at this tick: the latest, or L_c late."""
        self._commands.append(self._command)
        if not self._command_delay > 0.0:
            return self._command
        x = self._k - self._command_delay
        if x <= 0.0:
            return self._first_command
        i = math.floor(x)
        f = x - i
        back = self._k - i  # ticks since command i: commands[-1 - back]
        oldest = -len(self._commands)  # after a longer L_c came in: what is kept
        old = self._commands[max(-1 - back, oldest)]
        if f == 0.0:
            return old
        new = self._commands[max(-back, oldest)]
        return Command(old.goal + f * (new.goal - old.goal), old.torque_enable, old.gain)

    def _reset_motor(self) -> None:
        """The DC-motor model's states of a new motor: slew at the goal, the rest 0."""
        self._motor_state[:] = 0.0
        rows = self._kernel[4]
        if rows is not None:
            init_state(rows[ON], self._motor_state, self._command.goal, math.nan)

    # -- stepping --------------------------------------------------------------------

    def tick(self) -> Sample:
        """Report t_k for the latest command, then step the bench to k+1."""
        given = self._command
        goal, enabled, kp = self._acting_command()
        model, p, inertia, gravity, rows = self._kernel
        q, dq, k = self._q, self._dq, self._k
        current = temperature = math.nan
        self._target = target = firmware_target(p, self._target, goal, self._dt)
        # step returns servo_torque's (τ_m, control) for state k with this command.
        if rows is not None:
            temperature = temperature_of(rows[ON], self._motor_state)
            q_next, dq_next, e_next, tau_m, control, current = step_motor(
                model, self._family, p, rows, self._consts, kp, inertia, gravity, q, dq,
                self._e, self._motor_state, target, enabled, False, 0.0, self._dt)
        elif p[P.BACKLASH] > 0.0:
            e_next = self._e
            q_next, dq_next, self._lead, self._lead_rate, tau_m, control = step_backlash(
                model, self._family, p, self._consts, kp, inertia, gravity, q, dq, self._lead,
                self._lead_rate, target, enabled, False, 0.0, self._dt)
        else:
            q_next, dq_next, e_next, tau_m, control = step_any(
                model, self._family, p, self._consts, kp, inertia, gravity, q, dq, self._e,
                target, enabled, False, 0.0, self._dt)
        self._states.append((q, dq))
        mq, mdq = self._states[0]  # state k − read ticks (the initial one until then)
        if self._noise_std > 0.0:
            mq += self._noise_std * self._next_normal()
        if self._quantization > 0.0:
            mq = round(mq / self._quantization) * self._quantization
        volts = input_voltage(self._family, p, self._consts, kp, q, dq + self._lead_rate,
                              target, enabled)
        self._q, self._dq, self._e, self._k = q_next, dq_next, e_next, k + 1
        return Sample(k, k * self._dt, mq, mdq, given.goal, given.torque_enable, given.gain,
                      control, tau_m, current, temperature, volts)

    def _next_normal(self) -> float:
        if self._noise_index >= self._noise.size:
            self._noise = self._rng.standard_normal(_NOISE_BLOCK)
            self._noise_index = 0
        value = self._noise[self._noise_index]
        self._noise_index += 1
        return float(value)
