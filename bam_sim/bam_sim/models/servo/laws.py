"""Servo actuator models S(q, q̇, q_d) -> τ_m (paper section IV).

Two control-law families, selected by an integer so the numba kernels can
branch on it:

* ``VOLTAGE`` — Dynamixel MX firmware: a P controller on position sets the
  PWM duty cycle of a drive/brake H-bridge, clipped to the maximum duty
  (equation 12), and the DC motor equation (13) gives the torque::

      duty = clip(kp·k_duty·(q_d − q), ±duty_max),   U = duty·V_in
      τ_m  = k_t/R·U − k_t²/R·q̇                                          (13)

  A firmware current limit I_max (the XL330's, as the authors' release
  models it) acts on the only thing the firmware sets, the duty: before the
  PWM clip, the duty is held in the window where the drive current
  (duty·V_in − k_t q̇)/R stays within ±I_max::

      duty ← clip(duty, (k_t q̇ − R·I_max)/V_in, (k_t q̇ + R·I_max)/V_in)

  The PWM clip comes last, so against a large back-EMF the limit is not
  reached (the supply cannot push that current).

  The Feetech STS firmware runs the same law on its own target q_f, which
  follows the goal at a limited rate v_f (``max_velocity``), and scales its
  duty gain by a factor r (``error_gain_ratio``)::

      q_f,k = clip(q_d,k, q_f,k−1 ± v_f·Δt),   duty = clip(kp·k_duty·r·(q_f,k − q), ±duty_max)

  The evidence is the authors' release (``bam/feetech/actuator.py`` of
  better-actuator-models 1.0.2): the duty per radian and P unit measured on
  STS3215s with an oscilloscope, and the slew of the firmware's target, whose
  rate its 12 V set identifies. The slew runs every tick, torque on or off, as
  there; :func:`firmware_target` is its update, whose state q_f the caller
  carries (it starts at the first goal: the servo held it before a log).

* ``CURRENT`` — eRob80 driven in current mode by a PD law on the host,
  clipped to the heat limit I_heat, the torque being limited by what the
  supply voltage U_max can push against the back-EMF (equations 14, 15)::

      I   = clip(kp·k_I·(q_d − q) − d·√kp·q̇, ±I_heat)
      τ_m = clip(k_t·I, (−U_max − k_t·q̇)·k_t/R, (U_max − k_t·q̇)·k_t/R)   (14, 15)

  k_I (``current_gain``) is the current per radian and unit of the gain: 1 for the
  eRob, whose host gain is in A/rad. A servo whose firmware runs this law on its own
  position loop has its own unit: the XL330 in current-based position mode (operating
  mode 5: the position P term's output is a goal current, clipped to Goal Current)
  has k_I = 4096/(2π)/256 mA per radian and P-gain unit, the duty gain of its position
  mode with a current where the duty was (``shipped/xl330_current.yaml``). With the
  ``gain`` group, r scales the P term: kp·k_I·r·(q_d − q).

  The voltage limit is the one of the published eRob identification: the
  current the supply can drive is (±U_max − k_t q̇)/R, which is the
  physically consistent form of I_emf in (14).

  With the optional ``hbridge`` group (a PWM period T_pwm > 0) the bridge is
  drive/coast instead of drive/brake (Sihite et al., to which the paper's
  (13) points): the mean current over a PWM period ī(duty, V_in, k_t q̇, R,
  L, T_pwm) of :mod:`bam_sim.models.dcmotor.hbridge` (L of the ``inductance`` group,
  0 without it) replaces (U − k_t q̇)/R; the bridge is then the mean terminal
  voltage U_eff = k_t q̇ + R ī (:func:`bridge_voltage`), which also feeds
  the DC-motor model's voltage input.

With the optional ``supply`` group the input voltage sags under load: the
supply of e.m.f. V_s (the bench's) and series resistance R_s feeds the bridge
the bus current duty·I, I = (duty·V_in − k_t q̇)/R the motor current of (13),
so V_in = V_s − R_s·duty·I has the closed form::

    V_in = (V_s·R + R_s·duty·k_t q̇)/(R + R_s·duty²),   V_in ← clip(V_in, V_min, V_s)

and U = duty·V_in. The supply does not absorb current (V_in ≤ V_s: a braking
servo returns nothing), and V_min is the floor a regulator or brown-out holds.
The firmware's duty (and the XL330's current window) is computed as before,
from the nominal V_s: the firmware sets a duty, the sag follows. Each servo
sags on its own supply here (in an arm, the shared bus is not summed).

With torque disabled there is no motor torque at all: the H-bridge is
released (no back-EMF braking) or the current set to zero.

The *control* is the low-level value the servo applies: volts for
``VOLTAGE``, amperes for ``CURRENT``. Replaying a recorded control through
:func:`torque_from_control` is the second simulation mode.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.hbridge import average_current
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.servo.actuator import (  # the family ids and constant layout
    C_CURRENT_GAIN,
    C_DAMPING,
    C_DUTY_GAIN,
    C_FIRMWARE_CURRENT,
    C_MAX_DUTY,
    C_MAX_VOLTAGE,
    C_SUPPLY,
    VOLTAGE,
)


@nb.njit(cache=True, inline=into_rollouts)
def _clip(x: float, lo: float, hi: float) -> float:
    # np.clip is not available on scalars in nopython mode.
    return lo if x < lo else (hi if x > hi else x)


@nb.njit(cache=True, inline=into_rollouts)
def control_law(
    family: int, p: np.ndarray, c: np.ndarray, kp: float, q: float, dq: float, goal: float
) -> float:
    """Low-level control (V or A) the servo's controller computes, torque enabled."""
    if family == VOLTAGE:
        duty = firmware_duty(p, c, kp, q, dq, goal)
        return duty * supply_voltage(p, c, duty, dq)
    return current_law(kp * c[C_CURRENT_GAIN], p[P.GAIN_RATIO], c[C_DAMPING] * np.sqrt(kp),
                       p[P.I_HEAT], q, dq, goal)


@nb.njit(cache=True, inline=into_rollouts)
def current_law(current_gain: float, ratio: float, damping: float, heat_limit: float,
                q: float, dq: float, goal: float) -> float:
    """The current law's PD command, clipped to ±I_heat (14): ``current_gain`` = kp·k_I,
    ``ratio`` the gain group's r (0: none), ``damping`` = d·√kp."""
    gain = current_gain * ratio if ratio > 0.0 else current_gain
    current = gain * (goal - q) - damping * dq
    return _clip(current, -heat_limit, heat_limit)


@nb.njit(cache=True, inline=into_rollouts)
def firmware_duty(p: np.ndarray, c: np.ndarray, kp: float, q: float, dq: float,
                  goal: float) -> float:
    """The voltage law's PWM duty (12), with the STS ratio and the XL330's current window."""
    return duty_law(kp * c[C_DUTY_GAIN], p[P.GAIN_RATIO], c[C_FIRMWARE_CURRENT], c[C_SUPPLY],
                    c[C_MAX_DUTY], p[P.KT], p[P.R], q, dq, goal)


@nb.njit(cache=True, inline=into_rollouts)
def duty_law(duty_gain: float, ratio: float, limit: float, supply: float, max_duty: float,
             kt: float, resistance: float, q: float, dq: float, goal: float) -> float:
    """:func:`firmware_duty` from its values: ``duty_gain`` = kp·k_duty, ``ratio`` the STS
    factor r (0: none), ``limit`` the firmware's I_max (0: none), ``supply`` V_s."""
    duty = duty_gain * (goal - q)
    if ratio > 0.0:  # the STS firmware's factor (module docstring)
        duty *= ratio
    if limit > 0.0:  # the firmware's current limit, on the duty (module docstring)
        duty = _clip(duty, (kt * dq - resistance * limit) / supply,
                     (kt * dq + resistance * limit) / supply)
    return _clip(duty, -max_duty, max_duty)


@nb.njit(cache=True, inline=into_rollouts)
def input_voltage(family: int, p: np.ndarray, c: np.ndarray, kp: float, q: float, dq: float,
                  goal: float, enabled: bool) -> float:
    """The input voltage a voltage-law servo's bus reports: V_s, sagged while it drives.

    NaN for the other families (their input is not modelled)."""
    if family != VOLTAGE:
        return np.nan
    if not enabled:
        return c[C_SUPPLY]
    return supply_voltage(p, c, firmware_duty(p, c, kp, q, dq, goal), dq)


@nb.njit(cache=True, inline=into_rollouts)
def supply_voltage(p: np.ndarray, c: np.ndarray, duty: float, dq: float) -> float:
    """V_in at a duty and joint velocity: the bench's V_s, sagged with the supply group."""
    nominal = c[C_SUPPLY]
    series = p[P.SUPPLY_R]
    if not series > 0.0:
        return nominal
    kt, resistance = p[P.KT], p[P.R]
    sagged = (nominal * resistance + series * duty * kt * dq) / (resistance + series * duty * duty)
    return _clip(sagged, p[P.SUPPLY_VMIN], nominal)


@nb.njit(cache=True, inline=into_rollouts)
def firmware_target(p: np.ndarray, target: float, goal: float, dt: float) -> float:
    """The STS firmware's target after one tick toward ``goal`` (the goal itself elsewhere)."""
    return slew(p[P.TARGET_RATE], target, goal, dt)


@nb.njit(cache=True, inline=into_rollouts)
def slew(rate: float, target: float, goal: float, dt: float) -> float:
    """:func:`firmware_target` at slew rate ``rate`` (rad/s; none unless > 0)."""
    if not rate > 0.0:
        return goal
    return _clip(goal, target - rate * dt, target + rate * dt)


@nb.njit(cache=True, inline=into_rollouts)
def bridge_voltage(p: np.ndarray, c: np.ndarray, control: float, dq: float) -> float:
    """Mean terminal voltage of the voltage law's bridge for a commanded U = duty·V_in.

    U itself for drive/brake (13); with the ``hbridge`` group, k_t q̇ + R ī of the
    averaged drive/coast bridge (module docstring).
    """
    period = p[P.HB_PERIOD]
    if not period > 0.0:
        return control
    supply = c[C_SUPPLY]
    emf = p[P.KT] * dq
    inductance = p[P.IND_L] if p[P.IND_L] > 0.0 else p[P.IND_TE] * p[P.R]
    return emf + p[P.R] * average_current(control / supply, supply, emf, p[P.R], inductance,
                                          period)


@nb.njit(cache=True, inline=into_rollouts)
def torque_from_control(
    family: int, p: np.ndarray, c: np.ndarray, control: float, dq: float, enabled: bool
) -> float:
    """Motor torque τ_m for a low-level control at joint velocity q̇ (13 or 14-15)."""
    if not enabled:
        return 0.0
    kt = p[P.KT]
    resistance = p[P.R]
    if family == VOLTAGE:
        return voltage_torque(kt, resistance, bridge_voltage(p, c, control, dq), dq)
    return current_torque(kt, resistance, c[C_MAX_VOLTAGE], p[P.I_HEAT], control, dq)


@nb.njit(cache=True, inline=into_rollouts)
def voltage_torque(kt: float, resistance: float, volts: float, dq: float) -> float:
    """τ_m = k_t/R·U − k_t²/R·q̇ (13) for the bridge's mean terminal voltage U."""
    back_emf = kt * kt / resistance * dq
    return kt / resistance * volts - back_emf


@nb.njit(cache=True, inline=into_rollouts)
def current_torque(kt: float, resistance: float, max_voltage: float, heat_limit: float,
                   control: float, dq: float) -> float:
    """τ_m = k_t·I for a current command, within I_heat and the supply's limit (14, 15)."""
    back_emf = kt * kt / resistance * dq
    limit = kt / resistance * max_voltage
    current = _clip(control, -heat_limit, heat_limit)
    return _clip(kt * current, -limit - back_emf, limit - back_emf)


@nb.njit(cache=True, inline=into_rollouts)
def servo_torque(
    family: int,
    p: np.ndarray,
    c: np.ndarray,
    kp: float,
    q: float,
    dq: float,
    goal: float,
    enabled: bool,
) -> tuple[float, float]:
    """S(q, q̇, q_d) of equation (11): returns (τ_m, control)."""
    if not enabled:
        return 0.0, 0.0
    control = control_law(family, p, c, kp, q, dq, goal)
    return torque_from_control(family, p, c, control, dq, True), control
