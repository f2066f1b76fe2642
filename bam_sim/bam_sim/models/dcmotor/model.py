"""MuJoCo's DC-motor actuator ``<dcmotor>`` (MuJoCo 4.0), re-implemented for numba.

Reference: "MuJoCo DC Motor Model" (Google DeepMind), equation numbers below.
One call of :func:`dcmotor_step` reproduces what one ``mj_step`` (Euler,
implicit or implicitfast integrator; not RK4) does for one ``dcmotor``:

* voltage: with a controller input (``pos``, ``vel``, ``ff``) the on-board
  controller asks for the torque τ* = k_p(u_pos − θ) + k_d(u_vel − θ̇) +
  k_i x_I + u_ff (torque-space form of (12)-(13), MuJoCo 4 semantics) and
  drives v = R/K·τ* + K θ̇, clipped to ±v_max; a raw ``voltage`` input is
  added after that clip. R here is the nominal resistance.
* current: stateless, i = (v − Kθ̇)/R(T), equation (2); stateful (t_e > 0),
  the ODE (4) written as di/dt = (v/R(T) − K/R(T)·θ̇ − i)/t_e, optionally
  clipped to ±(di/dt)_max, integrated exactly over the step (zero-order hold).
  K = √(K_t K_e) when both constants are given.
* force = K·i, clipped to ±τ_max (``saturation``, equation (3)), plus the
  cogging torque A sin(N_p θ + φ) (6) and the LuGre friction
  −(σ0 z + σ1 ż) (9b) with the Stribeck curve (10) (exponent 2); these two
  are added after the clip.
* temperature rise T above ambient: dT/dt = (R(T) i² − T/R_T)/C, the ODE (7)
  with R(T) = R0 (1 + α (T + T_a − T0)) (8); Euler.
* bristle z: dz/dt = a z + θ̇, a = −σ0|θ̇|/g(θ̇) (9a), advanced by the exact
  zero-order-hold update (11).
* slew: the first input is rate limited to ±s·Δt around the previous
  effective setpoint (section 2.5.3); integral: dx_I/dt = u_pos − θ with
  the anti-windup rule (rate zeroed outward beyond ±I_max, state clipped).

State update order of one step (MuJoCo ``src/engine/engine_forward.c``,
``mj_fwdActuation``; ``engine_support.c``, ``mj_nextActivation``; the
activation slots come from ``engine_util_misc.c``, ``mj_dcmotorSlots``):

1. clamp the inputs to ``ctrlrange``; non-finite (or >1e10) inputs are all 0;
2. time derivatives, all from the states at t: slew (rewrites the first
   input), integral, voltage, temperature, bristle, current;
3. force: gain from the temperature at t; the stateful current is the one
   *after* the step (``actearly`` is forced on for dcmotor), the stateless
   one uses v at t; clip to ``forcerange``; add cogging, then LuGre with z
   at t and ż at t;
4. advance the states (``mj_advance``): slew, integral (then clip ±I_max)
   and temperature by Euler, bristle by (11), current exactly.

The polynomial damping b(θ̇) = B1θ̇ + B2θ̇|θ̇| + B3θ̇³ and the armature are not
part of MuJoCo's ``actuator_force``: MuJoCo adds them to the joint (passive
force and mass matrix, scaled by gear², damping integrated implicitly by the
Euler integrator). :func:`dcmotor_damping` gives that joint torque.

Not reproduced: ctrl ``delay``, the RK4 integrator, actuator groups
disabled at run time, sleeping bodies.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

import numba as nb
import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import thermal_pair
from bam_sim.models.kernel_inlining import into_rollouts

# ---- parameter layout (float64 vector) --------------------------------------
P_R = 0            # resistance R0 at the reference temperature (Ω)
P_K = 1            # effective motor constant K = √(K_t K_e) (N·m/A)
P_ALPHA = 2        # resistance temperature coefficient α (1/K)
P_T0 = 3           # reference temperature T0 (°C)
P_KP = 4           # controller proportional gain (torque space)
P_KI = 5           # controller integral gain; > 0 enables the integral state
P_KD = 6           # controller derivative gain
P_VMAX = 7         # drive voltage clip of the controller (V); 0: none
P_TE = 8           # electrical time constant t_e = L/R (s); > 0 enables current
P_DIMAX = 9        # current rate limit (A/s); 0: none
P_RT = 10          # thermal resistance R_T (K/W); > 0 enables temperature
P_C = 11           # thermal capacitance C (J/K)
P_TA = 12          # ambient temperature T_a (°C)
P_SIGMA0 = 13      # bristle stiffness σ0; > 0 enables the bristle state
P_SIGMA1 = 14      # bristle damping σ1
P_SLEW = 15        # setpoint slew limit s (unit/s); > 0 enables the slew state
P_IMAX = 16        # integral clamp (anti-windup); 0: none
P_COG_A = 17       # cogging amplitude A (N·m)
P_COG_N = 18       # cogging periodicity N_p
P_COG_PHASE = 19   # cogging phase φ (rad)
P_FC = 20          # LuGre Coulomb torque τ_c
P_FS = 21          # LuGre static torque τ_s
P_VS = 22          # Stribeck velocity ω_s
P_FORCELIMITED = 23  # 1: clip the force to [P_FMIN, P_FMAX]
P_FMIN = 24
P_FMAX = 25
P_SPEC = 26        # input signature, bits INPUT_* (as MuJoCo's actuator_ctrlspec)
P_CTRLLIMITED = 27   # 1: clamp every input to [P_CMIN, P_CMAX]
P_CMIN = 28
P_CMAX = 29
P_GEAR = 30        # first gear component (joint transmission ratio)
P_B1 = 31          # damping polynomial b(ω) = B1 ω + B2 ω|ω| + B3 ω³
P_B2 = 32
P_B3 = 33
P_ARMATURE = 34    # armature inertia, before the gear² reflection
N_PARAMS = 35

# ---- state layout: fixed slots, unused ones stay 0 --------------------------
S_SLEW = 0
S_INTEGRAL = 1
S_TEMPERATURE = 2
S_BRISTLE = 3
S_CURRENT = 4
N_STATES = 5
STATE_NAMES = ("slew", "integral", "temperature", "bristle", "current")

# ---- input signature bits (mjtInput) ----------------------------------------
INPUT_POS = 1
INPUT_VEL = 2
INPUT_FF = 4
INPUT_VOLTAGE = 8
INPUT_NONE = 16
INPUT_TOKENS = {"pos": INPUT_POS, "vel": INPUT_VEL, "ff": INPUT_FF, "voltage": INPUT_VOLTAGE}
CONTROLLER = INPUT_POS | INPUT_VEL | INPUT_FF

MINVAL = 1e-15     # mjMINVAL: smallest denominator
MAXVAL = 1e10      # mjMAXVAL: larger controls count as bad


# ---- numba kernels ----------------------------------------------------------
@nb.njit(cache=True, inline=into_rollouts)
def _clip(x: float, lo: float, hi: float) -> float:
    # mju_clip's exact form (np.clip is not available on scalars in nopython).
    return lo if x < lo else (hi if x > hi else x)


@nb.njit(cache=True, inline=into_rollouts)
def _max(a: float, b: float) -> float:
    return a if a > b else b


@nb.njit(cache=True, inline=into_rollouts)
def _min(a: float, b: float) -> float:
    return a if a < b else b


@nb.njit(cache=True)
def state_enabled(params: np.ndarray, slot: int) -> bool:
    """Whether state ``slot`` (S_*) exists for these parameters (mj_dcmotorSlots)."""
    if slot == S_SLEW:
        return params[P_SLEW] > 0.0
    if slot == S_INTEGRAL:
        return params[P_KI] > 0.0
    if slot == S_TEMPERATURE:
        return params[P_RT] > 0.0
    if slot == S_BRISTLE:
        return params[P_SIGMA0] > 0.0
    return params[P_TE] > 0.0


@nb.njit(cache=True)
def ctrl_count(params: np.ndarray) -> int:
    """Number of controls of the input signature (MuJoCo's actuator_ctrlnum)."""
    spec = int(params[P_SPEC])
    if spec == INPUT_NONE:
        return 0
    return (spec & 1) + ((spec >> 1) & 1) + ((spec >> 2) & 1) + ((spec >> 3) & 1)


@nb.njit(cache=True, inline=into_rollouts)
def _prepare(params: np.ndarray, u: float) -> float:
    # ctrlrange clamp of one control (mj_fwdActuation, before anything else).
    if params[P_CTRLLIMITED] != 0.0:
        return _clip(u, params[P_CMIN], params[P_CMAX])
    return u


@nb.njit(cache=True, inline=into_rollouts)
def _bad(u: float) -> bool:
    return u != u or u > MAXVAL or u < -MAXVAL


@nb.njit(cache=True, inline=into_rollouts)
def drive_voltage(params: np.ndarray, u_pos: float, u_vel: float, u_ff: float, u_volt: float,
                  length: float, velocity: float, x_i: float) -> float:
    """Terminal voltage v: controller (12)-(13) in torque space, Vmax clip, raw voltage added."""
    spec = int(params[P_SPEC])
    controller = spec != INPUT_NONE and (spec & CONTROLLER) != 0
    return controller_voltage(controller, params[P_KP], params[P_KD], params[P_KI], params[P_R],
                              params[P_K], params[P_VMAX], u_pos, u_vel, u_ff, u_volt, length,
                              velocity, x_i)


@nb.njit(cache=True, inline=into_rollouts)
def stribeck(params: np.ndarray, velocity: float) -> float:
    """g(ω) = τ_c + (τ_s − τ_c) exp(−(ω/ω_s)²), equation (10) with γ = 2."""
    return stribeck_curve(params[P_FC], params[P_FS], params[P_VS], velocity)


@nb.njit(cache=True, inline=into_rollouts)
def stribeck_curve(coulomb: float, static: float, speed: float, velocity: float) -> float:
    """g(ω) of equation (10) (γ = 2) for τ_c, τ_s and ω_s given one by one."""
    ratio = velocity / _max(MINVAL, speed)
    return coulomb + (static - coulomb) * math.exp(-ratio * ratio)


@nb.njit(cache=True, inline=into_rollouts)
def slew_input(rate: float, prev: float, u: float, dt: float) -> tuple[float, float]:
    """(u, ṡ): an input held within ±s·Δt of the previous setpoint, and the setpoint's
    rate (section 2.5.3)."""
    reach = rate * dt
    u = _clip(u, prev - reach, prev + reach)
    return u, (u - prev) / dt


@nb.njit(cache=True, inline=into_rollouts)
def integral_rate(x_i: float, u_pos: float, length: float, imax: float) -> float:
    """dx_I/dt = u_pos − θ, zeroed outward beyond ±I_max (anti-windup; 0: none)."""
    int_dot = u_pos - length
    if imax > 0.0:
        if x_i >= imax:
            int_dot = _min(int_dot, 0.0)
        elif x_i <= -imax:
            int_dot = _max(int_dot, 0.0)
    return int_dot


@nb.njit(cache=True, inline=into_rollouts)
def integral_update(x_i: float, int_dot: float, imax: float, dt: float) -> float:
    """x_I after the step (Euler), clipped to ±I_max (0: none)."""
    x_i = x_i + int_dot * dt
    return _clip(x_i, -imax, imax) if imax > 0.0 else x_i


@nb.njit(cache=True, inline=into_rollouts)
def controller_voltage(controller: bool, kp: float, kd: float, ki: float, r: float, k: float,
                       vmax: float, u_pos: float, u_vel: float, u_ff: float, u_volt: float,
                       length: float, velocity: float, x_i: float) -> float:
    """:func:`drive_voltage` from its values; ``controller``: the signature has a pos, vel
    or ff input."""
    v = 0.0
    if controller:
        torque = kp * (u_pos - length) + kd * (u_vel - velocity) + ki * x_i + u_ff
        # current-controlled driver: back-EMF compensated, nominal R
        v = r / k * torque + k * velocity
        if vmax > 0.0:
            v = _clip(v, -vmax, vmax)
    return v + u_volt


@nb.njit(cache=True, inline=into_rollouts)
def winding_resistance(r0: float, alpha: float, rise: float, ambient: float,
                       reference: float) -> float:
    """R(T) = R0 (1 + α (T + T_a − T0)), equation (8), T the rise above ambient."""
    return r0 * (1.0 + alpha * (rise + ambient - reference))


@nb.njit(cache=True, inline=into_rollouts)
def stateless_current(v: float, k: float, velocity: float, r: float) -> float:
    """i = (v − Kθ̇)/R(T), equation (2)."""
    return (v - k * velocity) / r


@nb.njit(cache=True, inline=into_rollouts)
def temperature_rate(r: float, i: float, rise: float, rt: float, c: float) -> float:
    """dT/dt = (R(T) i² − T/R_T)/C, the thermal ODE (7)."""
    return (r * i * i - rise / rt) / c


@nb.njit(cache=True, inline=into_rollouts)
def bristle_rate(sigma0: float, g: float, z: float, velocity: float) -> tuple[float, float]:
    """(a, ż): dz/dt = a z + θ̇ with a = −σ0|θ̇|/g(θ̇), equation (9a); g of (10)."""
    a = -sigma0 * abs(velocity) / _max(MINVAL, g)
    return a, a * z + velocity


@nb.njit(cache=True, inline=into_rollouts)
def bristle_exp(a: float, dt: float) -> float:
    """e^{aΔt} of the bristle's update (11), with the C library's exponential."""
    return math.exp(a * dt)


@nb.njit(cache=True, inline=into_rollouts)
def bristle_update(a: float, exp_ah: float, z: float, velocity: float, dt: float) -> float:
    """z after the step by the exact zero-order-hold update (11); ``exp_ah`` = e^{aΔt}."""
    int_h = (exp_ah - 1.0) / a if abs(a) > MINVAL else dt
    return exp_ah * z + int_h * velocity


@nb.njit(cache=True, inline=into_rollouts)
def current_rate(v: float, r: float, k: float, velocity: float, i: float, te: float,
                 dimax: float) -> float:
    """di/dt of the electrical ODE (4), clipped to ±(di/dt)_max (0: none; section 2.2)."""
    i_dot = (v / r - k / r * velocity - i) / te
    return _clip(i_dot, -dimax, dimax) if dimax > 0.0 else i_dot


@nb.njit(cache=True, inline=into_rollouts)
def current_decay(te: float, dt: float) -> tuple[float, float]:
    """(t_c, 1 − e^{−Δt/t_c}) of the exact update of (4), t_c = max(t_e, MINVAL)."""
    tc = _max(MINVAL, te)
    return tc, 1.0 - math.exp(-dt / tc)


@nb.njit(cache=True, inline=into_rollouts)
def current_update(i: float, i_dot: float, tc: float, decay: float) -> float:
    """i after the step, (4) integrated exactly over it (zero-order hold)."""
    return i + i_dot * tc * decay


@nb.njit(cache=True, inline=into_rollouts)
def stateless_force(k: float, r: float, v: float, velocity: float) -> float:
    """K·i of the stateless current (2): K/R·v − K²/R·θ̇."""
    gain = k / _max(MINVAL, r)
    force = gain * v
    force += -(gain * k * velocity)  # back-EMF, equation (2)
    return force


@nb.njit(cache=True, inline=into_rollouts)
def cogging(amplitude: float, poles: float, phase: float, length: float) -> float:
    """A sin(N_p θ + φ), equation (6)."""
    return amplitude * math.sin(poles * length + phase)


@nb.njit(cache=True, inline=into_rollouts)
def motor_step(params: np.ndarray, state: np.ndarray, u_pos: float, u_vel: float, u_ff: float,
               u_volt: float, length: float, velocity: float,
               dt: float) -> tuple[float, float, float, float]:
    """One step from the inputs after the ctrlrange clamp: (force, v, τ_elec, τ_LuGre).

    ``force`` is MuJoCo's actuator_force; ``v`` the terminal voltage of the
    step; τ_elec the electrical torque K·i after the saturation clip (3), i.e.
    the force without cogging and friction; τ_LuGre = −(σ0 z + σ1 ż), the
    friction part of ``force`` (0 without LuGre). ``state`` is advanced in
    place. The composition of the bench (:mod:`bam_sim.models.dcmotor.groups`)
    calls it with the inputs of its control law. Each equation is a function of
    scalar values, which the population's lanes (:mod:`bam_sim.bench.motor_lanes`)
    compose the same way, lane by lane.
    """
    spec = int(params[P_SPEC])
    k = params[P_K]
    te = params[P_TE]

    # slew limit of the first input (section 2.5.3); the first controller
    # input comes first in the canonical order, so it is pos, vel or ff
    slew_dot = 0.0
    if params[P_SLEW] > 0.0:
        prev = state[S_SLEW]
        if spec & INPUT_POS:
            u_pos, slew_dot = slew_input(params[P_SLEW], prev, u_pos, dt)
        elif spec & INPUT_VEL:
            u_vel, slew_dot = slew_input(params[P_SLEW], prev, u_vel, dt)
        else:
            u_ff, slew_dot = slew_input(params[P_SLEW], prev, u_ff, dt)

    # integral of the position error with anti-windup (the integral needs pos)
    x_i = 0.0
    int_dot = 0.0
    if params[P_KI] > 0.0:
        x_i = state[S_INTEGRAL]
        int_dot = integral_rate(x_i, u_pos, length, params[P_IMAX])

    v = drive_voltage(params, u_pos, u_vel, u_ff, u_volt, length, velocity, x_i)

    # R(T), equation (8), and the thermal ODE (7) on the rise above ambient
    r = params[P_R]
    temp_dot = 0.0
    if params[P_RT] > 0.0:
        rise = state[S_TEMPERATURE]
        r = winding_resistance(r, params[P_ALPHA], rise, params[P_TA], params[P_T0])
        i = state[S_CURRENT] if te > 0.0 else stateless_current(v, k, velocity, r)
        temp_dot = temperature_rate(r, i, rise, params[P_RT], params[P_C])

    # LuGre bristle (9a): dz/dt = a z + ω
    a = 0.0
    z_dot = 0.0
    if params[P_SIGMA0] > 0.0:
        a, z_dot = bristle_rate(params[P_SIGMA0], stribeck(params, velocity), state[S_BRISTLE],
                                velocity)

    # electrical ODE (4) and the current rate limit (section 2.2)
    if te > 0.0:
        i_dot = current_rate(v, r, k, velocity, state[S_CURRENT], te, params[P_DIMAX])
        tc, decay = current_decay(te, dt)
        current = current_update(state[S_CURRENT], i_dot, tc, decay)
        force = k * current  # actearly: the current after the step
    else:
        force = stateless_force(k, r, v, velocity)
        current = 0.0

    if params[P_FORCELIMITED] != 0.0:  # current/torque saturation (3)
        force = _clip(force, params[P_FMIN], params[P_FMAX])
    electric = force
    if params[P_COG_A] != 0.0:  # cogging (6), after the clip
        force += cogging(params[P_COG_A], params[P_COG_N], params[P_COG_PHASE], length)
    lugre = 0.0
    if params[P_SIGMA0] > 0.0:  # LuGre friction (9b), state at t, after the clip
        lugre = params[P_SIGMA0] * state[S_BRISTLE] + params[P_SIGMA1] * z_dot
        force -= lugre

    # advance the states (mj_advance -> mj_nextActivation)
    if params[P_SLEW] > 0.0:
        state[S_SLEW] = state[S_SLEW] + slew_dot * dt
    if params[P_KI] > 0.0:
        state[S_INTEGRAL] = integral_update(state[S_INTEGRAL], int_dot, params[P_IMAX], dt)
    if params[P_RT] > 0.0:
        state[S_TEMPERATURE] = state[S_TEMPERATURE] + temp_dot * dt
    if params[P_SIGMA0] > 0.0:  # exact zero-order-hold update (11)
        state[S_BRISTLE] = bristle_update(a, bristle_exp(a, dt), state[S_BRISTLE], velocity, dt)
    if te > 0.0:
        state[S_CURRENT] = current
    return force, v, electric, -lugre


@nb.njit(cache=True)
def dcmotor_step(params: np.ndarray, state: np.ndarray, ctrl: float, length: float,
                 velocity: float, dt: float) -> float:
    """One step of a single-input (or input-less) dcmotor; returns MuJoCo's actuator_force.

    ``state`` (N_STATES slots, S_*) is advanced in place; ``length`` and
    ``velocity`` are the actuator length and velocity at the start of the
    step, ``dt`` the time step. ``ctrl`` is ignored for ``input="none"``.
    """
    spec = int(params[P_SPEC])
    if ctrl_count(params) > 1:
        raise ValueError("dcmotor_step takes one control; use dcmotor_step_inputs")
    u = _prepare(params, ctrl)
    if _bad(u) or spec == INPUT_NONE:
        u = 0.0
    return motor_step(params, state,
                      u if spec == INPUT_POS else 0.0, u if spec == INPUT_VEL else 0.0,
                      u if spec == INPUT_FF else 0.0, u if spec == INPUT_VOLTAGE else 0.0,
                      length, velocity, dt)[0]


@nb.njit(cache=True)
def dcmotor_step_inputs(params: np.ndarray, state: np.ndarray, ctrl: np.ndarray, length: float,
                        velocity: float, dt: float) -> float:
    """:func:`dcmotor_step` for any signature: ``ctrl`` holds the controls in canonical order."""
    spec = int(params[P_SPEC])
    n = ctrl_count(params)
    if ctrl.shape[0] != n:
        raise ValueError("ctrl must hold one value per input of the signature")
    u0 = u1 = u2 = u3 = 0.0  # pos, vel, ff, voltage; absent inputs stay 0
    if spec != INPUT_NONE:
        j = 0
        if spec & INPUT_POS:
            u0 = _prepare(params, ctrl[j])
            j += 1
        if spec & INPUT_VEL:
            u1 = _prepare(params, ctrl[j])
            j += 1
        if spec & INPUT_FF:
            u2 = _prepare(params, ctrl[j])
            j += 1
        if spec & INPUT_VOLTAGE:
            u3 = _prepare(params, ctrl[j])
    if _bad(u0) or _bad(u1) or _bad(u2) or _bad(u3):
        u0 = u1 = u2 = u3 = 0.0  # MuJoCo zeroes every control when one is bad
    return motor_step(params, state, u0, u1, u2, u3, length, velocity, dt)[0]


@nb.njit(cache=True)
def dcmotor_damping(params: np.ndarray, qvel: float) -> float:
    """Joint torque of the actuator ``damping`` at joint velocity q̇ (MuJoCo's qfrc_damper).

    −q̇ (B1 + B2|q̇| + B3 q̇²)·gear², the mechanical drag b of section 1.2,
    applied after the current clamp; the coefficients are scaled by gear²
    like MuJoCo does (for a joint transmission q̇ = θ̇/gear).
    """
    g2 = params[P_GEAR] * params[P_GEAR]
    x = abs(qvel)
    b = params[P_B1] * g2
    b += params[P_B2] * g2 * x
    b += params[P_B3] * g2 * (x * x)
    return -qvel * b


# ---- Python wrapper ---------------------------------------------------------
class DCMotor:
    """One dcmotor actuator: its parameters and states, stepped like ``mj_step``."""

    def __init__(self, params: np.ndarray, name: str = "dcmotor",
                 timestep: float | None = None) -> None:
        params = np.ascontiguousarray(params, dtype=np.float64)
        if params.shape != (N_PARAMS,):
            raise BamError(f"dcmotor parameters must be a vector of {N_PARAMS} values, "
                           f"got shape {params.shape}")
        self.params = params.copy()
        self.name = name
        self.timestep = timestep  # the MJCF's option/timestep, for information
        self._state = np.zeros(N_STATES)

    @classmethod
    def from_mjcf(cls, mjcf: str | Path, actuator_name: str) -> DCMotor:
        """The ``<dcmotor>`` named ``actuator_name`` of an MJCF file (or MJCF text)."""
        params, timestep = read_mjcf(mjcf, actuator_name)
        return cls(params, actuator_name, timestep)

    def reset(self) -> None:
        """All states to 0 (MuJoCo's mj_resetData without a keyframe)."""
        self._state[:] = 0.0

    def step(self, ctrl: float | np.ndarray, length: float, velocity: float,
             dt: float) -> float:
        """Advance one step; returns the actuator force (MuJoCo's actuator_force)."""
        if self.ctrlnum > 1 or not np.isscalar(ctrl):
            block = np.ascontiguousarray(np.atleast_1d(ctrl), dtype=np.float64)
            return float(dcmotor_step_inputs(self.params, self._state, block, float(length),
                                             float(velocity), float(dt)))
        return float(dcmotor_step(self.params, self._state, float(ctrl), float(length),
                                  float(velocity), float(dt)))

    def damping(self, qvel: float) -> float:
        """The joint torque of the actuator damping at joint velocity ``qvel``."""
        return float(dcmotor_damping(self.params, float(qvel)))

    @property
    def reflected_armature(self) -> float:
        """Armature added to the joint inertia: armature·gear² (section 2.1)."""
        return float(self.params[P_ARMATURE] * self.params[P_GEAR] ** 2)

    @property
    def ctrlnum(self) -> int:
        """Number of controls (MuJoCo's actuator_ctrlnum)."""
        return int(ctrl_count(self.params))

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input signature's tokens in canonical order (empty for ``none``)."""
        spec = int(self.params[P_SPEC])
        if spec == INPUT_NONE:
            return ()
        return tuple(name for name, bit in INPUT_TOKENS.items() if spec & bit)

    @property
    def enabled(self) -> tuple[str, ...]:
        """Names of the states this motor has, in MuJoCo's act order."""
        return tuple(n for s, n in enumerate(STATE_NAMES) if state_enabled(self.params, s))

    @property
    def state(self) -> dict[str, float]:
        """The enabled states by name."""
        return {n: float(self._state[STATE_NAMES.index(n)]) for n in self.enabled}

    @property
    def act(self) -> np.ndarray:
        """The states as MuJoCo's ``data.act`` slice of this actuator (enabled ones, in order)."""
        return np.array([self._state[STATE_NAMES.index(n)] for n in self.enabled])

    @act.setter
    def act(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).ravel()
        names = self.enabled
        if values.shape != (len(names),):
            raise BamError(f"dcmotor '{self.name}' has {len(names)} states ({', '.join(names)}), "
                           f"got {values.size} values")
        for n, x in zip(names, values):
            self._state[STATE_NAMES.index(n)] = x

    @property
    def raw_state(self) -> np.ndarray:
        """The fixed-slot state vector the kernels advance (a view)."""
        return self._state


# ---- MJCF reading -----------------------------------------------------------
# Tags of <default> children that set the one actuator default of a class.
_ACTUATOR_TAGS = {"general", "motor", "position", "velocity", "intvelocity", "damper",
                  "cylinder", "muscle", "adhesion", "pid", "dcmotor", "orientation", "plugin"}


@dataclass
class _Spec:
    """The actuator fields a dcmotor uses, as a default class or an element sets them."""

    dc: bool = False  # a dcmotor element has set the fields below (inheritable)
    resistance: float = 0.0
    motorconst: float = 0.0
    alpha: float = 0.0
    t0: float = 0.0
    controller: list[float] = field(default_factory=lambda: [0.0] * 6)
    te: float = 0.0
    dimax: float = 0.0
    thermal: list[float] = field(default_factory=lambda: [0.0] * 3)  # R_T, C, T_a
    lugre: list[float] = field(default_factory=lambda: [0.0] * 5)
    cogging: list[float] = field(default_factory=lambda: [0.0] * 3)
    spec: int = 0
    gear: float = 1.0
    ctrlrange: list[float] = field(default_factory=lambda: [0.0, 0.0])
    ctrllimited: str = "auto"
    forcerange: list[float] = field(default_factory=lambda: [0.0, 0.0])
    forcelimited: str = "auto"
    damping: list[float] = field(default_factory=lambda: [0.0] * 3)
    armature: float = 0.0
    delay: float = 0.0

    def copy(self) -> _Spec:
        return replace(self, controller=list(self.controller), thermal=list(self.thermal),
                       lugre=list(self.lugre), cogging=list(self.cogging),
                       ctrlrange=list(self.ctrlrange), forcerange=list(self.forcerange),
                       damping=list(self.damping))


def read_mjcf(mjcf: str | Path, actuator_name: str) -> tuple[np.ndarray, float]:
    """Parameter vector of a ``<dcmotor>`` and the model's time step, from the MJCF alone.

    Default classes are resolved like MuJoCo's compiler does (a ``<dcmotor>``
    in a class passes its compiled parameters on; other actuator elements of
    a class pass on the common attributes). ``<include>`` is not supported.
    """
    text, where = read_mjcf_text(mjcf)
    root = _parse(text, where)
    if root.find(".//include") is not None:
        raise BamError(f"{where} uses <include>; inline the included files first")
    autolimits = all(c.get("autolimits", "true") == "true" for c in root.findall("compiler"))
    timestep = 0.002  # MuJoCo's default
    for option in root.findall("option"):
        timestep = _floats(option, "timestep", 1, where)[0] if option.get("timestep") else timestep
    clampctrl = not any(f.get("clampctrl") == "disable" for f in root.iter("flag"))
    element = _find_actuator(root, actuator_name, where)
    classes = _default_classes(root, where)
    cls = element.get("class", "main")
    if cls not in classes:
        raise BamError(f"dcmotor '{actuator_name}' in {where} uses class '{cls}', which is "
                       "not defined; add the <default class> or fix the name")
    spec = classes[cls].copy()
    _apply(spec, element, f"dcmotor '{actuator_name}' in {where}")
    return _params(spec, autolimits, clampctrl, f"dcmotor '{actuator_name}' in {where}"), timestep


def read_mjcf_text(mjcf: str | Path) -> tuple[str, str]:
    """The text of an MJCF file (a path) or of MJCF given as text, and how to name it."""
    if isinstance(mjcf, Path) or not str(mjcf).lstrip().startswith("<"):
        path = Path(mjcf)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise BamError(f"cannot read MJCF {path}: {exc}") from None
    return str(mjcf), "<MJCF text>"


def _parse(text: str, where: str) -> ET.Element:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise BamError(f"{where} is not valid XML ({exc}); fix the MJCF") from None
    if root.tag != "mujoco":
        raise BamError(f"{where} is not an MJCF file (root <{root.tag}>, expected <mujoco>)")
    return root


def _find_actuator(root: ET.Element, name: str, where: str) -> ET.Element:
    actuators = [a for section in root.findall("actuator") for a in section]
    found = [a for a in actuators if a.get("name") == name]
    if not found:
        names = ", ".join(sorted(a.get("name", "?") for a in actuators)) or "none"
        raise BamError(f"{where} has no actuator '{name}'; its actuators are: {names}")
    if found[0].tag != "dcmotor":
        raise BamError(f"actuator '{name}' in {where} is a <{found[0].tag}>, not a <dcmotor>")
    return found[0]


def _default_classes(root: ET.Element, where: str) -> dict[str, _Spec]:
    classes: dict[str, _Spec] = {"main": _Spec()}
    for top in root.findall("default"):
        _walk_default(top, classes["main"], classes, where, top=True)
    return classes


def _walk_default(node: ET.Element, parent: _Spec, classes: dict[str, _Spec], where: str,
                  top: bool = False) -> None:
    name = "main" if top else node.get("class")
    if name is None:
        raise BamError(f"a nested <default> in {where} has no class name; name it")
    spec = classes["main"] if top else parent.copy()
    classes[name] = spec
    for child in node:
        if child.tag in _ACTUATOR_TAGS:
            _apply(spec, child, f"<default class='{name}'> <{child.tag}> in {where}")
    for child in node.findall("default"):
        _walk_default(child, spec, classes, where)


def _apply(spec: _Spec, element: ET.Element, what: str) -> None:
    """Apply one actuator element (in a default class or the actuator itself)."""
    _common(spec, element, what)
    if element.tag == "dcmotor":
        _dcmotor(spec, element, what)


def _common(spec: _Spec, el: ET.Element, what: str) -> None:
    if el.get("gear") is not None:
        spec.gear = _floats(el, "gear", 6, what)[0]
    if el.get("ctrlrange") is not None:
        spec.ctrlrange = _floats(el, "ctrlrange", 2, what, exact=True)
    if el.get("forcerange") is not None:
        spec.forcerange = _floats(el, "forcerange", 2, what, exact=True)
    for key in ("ctrllimited", "forcelimited"):
        value = el.get(key)
        if value is not None:
            if value not in ("true", "false", "auto"):
                raise BamError(f"{what}: {key}='{value}' must be true, false or auto")
            setattr(spec, key, value)
    if el.get("damping") is not None:
        spec.damping = _overwrite(spec.damping, _floats(el, "damping", 3, what))
    if el.get("armature") is not None:
        spec.armature = _floats(el, "armature", 1, what, exact=True)[0]
    if el.get("delay") is not None:
        spec.delay = _floats(el, "delay", 1, what, exact=True)[0]


def _dcmotor(spec: _Spec, el: ET.Element, what: str) -> None:
    """MuJoCo's dcmotor compilation (mjs_setToDCMotor, as of MuJoCo 4.0)."""
    inherited = spec.dc
    kt_ke = _overwrite([spec.motorconst if inherited else 0.0, 0.0],
                       _floats(el, "motorconst", 2, what))
    resistance = spec.resistance if inherited else 0.0
    if el.get("resistance") is not None:
        resistance = _floats(el, "resistance", 1, what, exact=True)[0]
    nominal = _overwrite([0.0] * 3, _floats(el, "nominal", 3, what))
    if not inherited:
        _clear(spec)
    spec.dc = True
    if el.get("input") is not None:
        spec.spec = _input_spec(el.get("input", ""), what)
    k, r = _constants(kt_ke, resistance, nominal, spec.damping[0], spec.spec, what)
    spec.motorconst, spec.resistance = k, r
    spec.controller = _overwrite(spec.controller, _floats(el, "controller", 6, what))
    spec.controller[5] = max(spec.controller[5], 0.0)
    _saturation(spec, el, k, what)
    spec.cogging = _overwrite(spec.cogging, _floats(el, "cogging", 3, what))
    _inductance(spec, el, r, what)
    _thermal(spec, el, what)
    lugre = _overwrite(spec.lugre, _floats(el, "lugre", 5, what))
    spec.lugre = lugre if lugre[0] > 0.0 else [0.0] * 5


def _clear(spec: _Spec) -> None:
    spec.alpha = spec.t0 = spec.te = spec.dimax = 0.0
    spec.controller, spec.thermal = [0.0] * 6, [0.0] * 3
    spec.lugre, spec.cogging, spec.spec = [0.0] * 5, [0.0] * 3, 0


def _constants(kt_ke: list[float], r: float, nominal: list[float], b: float, spec: int,
               what: str) -> tuple[float, float]:
    """K and R from motorconst, resistance and nominal (section 2.1, Table 7)."""
    kt, ke = kt_ke
    vn, tau0, w0 = nominal
    if kt < 0.0 or ke < 0.0:
        raise BamError(f"{what}: motor constants must be non-negative, got {kt} {ke}")
    if vn > 0.0 and ke <= 0.0 and w0 > 0.0:
        ke = _ke_from_nominal(vn, tau0, w0, r, b)
    k = math.sqrt(kt * ke) if kt > 0.0 and ke > 0.0 else (kt if kt > 0.0 else ke)
    if r == 0.0 and vn > 0.0 and tau0 > 0.0 and k > 0.0:
        r = k * vn / tau0
    if k <= 0.0 and spec != INPUT_NONE:
        raise BamError(f"{what}: the motor constant K must be positive; set motorconst or "
                       "nominal (voltage and no-load speed)")
    if r <= 0.0:
        raise BamError(f"{what}: the resistance R must be positive; set resistance or nominal "
                       "(voltage and stall torque)")
    return k, r


def _ke_from_nominal(vn: float, tau0: float, w0: float, r: float, b: float) -> float:
    # ω0 = v_n K_e/(K_e² + R B), Table 2, solved for K_e (B: the linear damping)
    if b > 0.0 and r > 0.0:
        disc = vn * vn - 4.0 * r * b * w0 * w0
        return (vn + math.sqrt(disc)) / (2.0 * w0) if disc > 0.0 else vn / w0
    if b > 0.0 and tau0 > 0.0:
        exact = vn / w0 - vn * b / tau0
        return exact if exact > 0.0 else vn / w0
    return vn / w0


def _saturation(spec: _Spec, el: ET.Element, k: float, what: str) -> None:
    if el.get("saturation") is None:
        return
    given = _floats(el, "saturation", 3, what)
    sat = _overwrite([0.0, 0.0, spec.dimax], given)
    tau = sat[0]
    if tau == 0.0 and sat[1] > 0.0:
        tau = k * sat[1]  # τ_max = K i_max (Table 7)
    # an authored saturation replaces any inherited forcerange
    spec.forcerange, spec.forcelimited = [0.0, 0.0], "false"
    if tau > 0.0:
        spec.forcerange, spec.forcelimited = [-tau, tau], "true"
    spec.dimax = sat[2] if sat[2] > 0.0 else 0.0


def _inductance(spec: _Spec, el: ET.Element, r: float, what: str) -> None:
    if el.get("inductance") is None:
        return
    ind, te = _overwrite([0.0, 0.0], _floats(el, "inductance", 2, what))
    if ind < 0.0 or te < 0.0:
        raise BamError(f"{what}: inductance and its time constant must be non-negative")
    spec.te = ind / r if ind > 0.0 else te


def _thermal(spec: _Spec, el: ET.Element, what: str) -> None:
    rt, c, ta = spec.thermal
    values = _overwrite([rt, c, 0.0, spec.alpha, spec.t0, ta], _floats(el, "thermal", 6, what))
    rt, c, tth, alpha, t0, ta = values
    if not (rt > 0.0 or c > 0.0 or tth > 0.0):
        spec.thermal, spec.alpha, spec.t0 = [0.0] * 3, 0.0, 0.0
        return
    rt, c = thermal_pair(rt, c, tth, what)
    spec.thermal, spec.alpha, spec.t0 = [rt, c, ta], alpha, t0


def _input_spec(text: str, what: str) -> int:
    tokens = text.split()
    if tokens == ["none"]:
        return INPUT_NONE
    bits = []
    for token in tokens:
        if token not in INPUT_TOKENS:
            raise BamError(f"{what}: unknown input '{token}'; use 'none' or a subset of "
                           "pos vel ff voltage")
        bits.append(INPUT_TOKENS[token])
    if not bits or any(b <= a for a, b in zip(bits, bits[1:])):
        raise BamError(f"{what}: input '{text}' must list inputs in the order pos vel ff voltage")
    return sum(bits)


def _params(spec: _Spec, autolimits: bool, clampctrl: bool, what: str) -> np.ndarray:
    """Validate the compiled fields and lay them out as the kernel's parameter vector."""
    code = spec.spec or INPUT_VOLTAGE
    kp, ki, kd, slew, imax, vmax = spec.controller
    controller = code != INPUT_NONE and code & CONTROLLER
    if not controller and (kp or ki or kd):
        raise BamError(f"{what}: controller gains need a pos, vel or ff input")
    if ki > 0.0 and not code & INPUT_POS:
        raise BamError(f"{what}: the integral gain needs the pos input")
    if not controller and slew > 0.0:
        raise BamError(f"{what}: the slew limit needs a pos, vel or ff input")
    if spec.delay > 0.0:
        raise BamError(f"{what}: ctrl delay is not supported; remove delay")
    ctrl_on = _limited(spec.ctrllimited, spec.ctrlrange, autolimits) and clampctrl
    force_on = _limited(spec.forcelimited, spec.forcerange, autolimits)
    for on, rng, name in ((ctrl_on, spec.ctrlrange, "ctrlrange"),
                          (force_on, spec.forcerange, "force range")):
        if on and rng[0] >= rng[1]:
            raise BamError(f"{what}: invalid {name} {rng[0]} {rng[1]}; the first value must be "
                           "below the second")
    p = np.zeros(N_PARAMS)
    p[[P_R, P_K, P_ALPHA, P_T0, P_TE, P_DIMAX]] = (spec.resistance, spec.motorconst, spec.alpha,
                                                    spec.t0, spec.te, spec.dimax)
    p[[P_KP, P_KI, P_KD, P_SLEW, P_IMAX, P_VMAX]] = (kp, ki, kd, slew, imax, vmax)
    p[[P_RT, P_C, P_TA]] = spec.thermal
    p[[P_SIGMA0, P_SIGMA1, P_FC, P_FS, P_VS]] = spec.lugre
    p[[P_COG_A, P_COG_N, P_COG_PHASE]] = spec.cogging
    p[[P_FORCELIMITED, P_FMIN, P_FMAX]] = (float(force_on), *spec.forcerange)
    p[[P_CTRLLIMITED, P_CMIN, P_CMAX]] = (float(ctrl_on), *spec.ctrlrange)
    p[[P_SPEC, P_GEAR, P_ARMATURE]] = (code, spec.gear, spec.armature)
    p[[P_B1, P_B2, P_B3]] = spec.damping
    return p


def _limited(flag: str, rng: list[float], autolimits: bool) -> bool:
    if flag == "auto":
        return autolimits and not (rng[0] == 0.0 and rng[1] == 0.0)
    return flag == "true"


def _floats(el: ET.Element, key: str, n: int, what: str, exact: bool = False) -> list[float]:
    text = el.get(key)
    if text is None:
        return []
    try:
        values = [float(x) for x in text.split()]
    except ValueError:
        raise BamError(f"{what}: {key}='{text}' is not a list of numbers") from None
    if len(values) > n or not values or (exact and len(values) != n):
        count = f"{n}" if exact else f"1 to {n}"
        raise BamError(f"{what}: {key}='{text}' must have {count} values")
    if not all(math.isfinite(v) for v in values):
        raise BamError(f"{what}: {key}='{text}' must be finite")
    return values


def _overwrite(base: list[float], given: list[float]) -> list[float]:
    # MJCF vectors given short overwrite only their first components.
    return [*given, *base[len(given):]]
