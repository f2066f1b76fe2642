"""Characteristic curves of a ``dcmotor`` parameter set, for reports and checks.

Reference: "MuJoCo DC Motor Model" (Google DeepMind):

* :func:`torque_speed_envelope`: the achievable output torque at each speed,
  Fig. 2-3: the electrical torque K/R (v − Kω) of (2) for the largest
  voltage of either sign, clipped to ±τ_max (3), minus the mechanical losses
  applied after the clip: the drag b(ω) = B1 ω + B2 ω|ω| + B3 ω³ and the
  LuGre steady-state friction g(ω) sgn(ω) of (9)-(10).
* :func:`stribeck_curve`: the steady-state friction τ_ss(ω) = −g(ω) sgn(ω) −
  b(ω), Fig. 6 (MuJoCo carries σ2 ω in the drag b).
* :func:`hysteresis_loop`: the LuGre friction torque against displacement
  under slow periodic motion, Fig. 5, computed by stepping the bristle state
  with the exact zero-order-hold update (11) of :mod:`bam_sim.models.dcmotor.model`.

All are in actuator space (the motor side of the ``gear``); R is the
resistance at the reference temperature unless a temperature rise is given,
with R(T) of (8).
"""

from __future__ import annotations

import math

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor import model as D


def max_voltage(params: np.ndarray) -> float:
    """The largest drive voltage of the set: the controller's clip, else the control range."""
    if params[D.P_VMAX] > 0.0:
        return float(params[D.P_VMAX])
    spec = int(params[D.P_SPEC])
    if spec & D.INPUT_VOLTAGE and params[D.P_CTRLLIMITED] != 0.0:
        return float(max(abs(params[D.P_CMIN]), abs(params[D.P_CMAX])))
    raise BamError("the dcmotor set has no voltage limit (controller vmax or a voltage "
                   "ctrlrange); pass voltage= to draw its envelope")


def resistance(params: np.ndarray, rise: float = 0.0) -> float:
    """R(T) of equation (8) at a temperature ``rise`` above ambient (R0 without thermal)."""
    r = float(params[D.P_R])
    if params[D.P_RT] > 0.0:
        r *= 1.0 + params[D.P_ALPHA] * (rise + params[D.P_TA] - params[D.P_T0])
    return r


def electrical_torque(params: np.ndarray, voltage: float, omega: np.ndarray,
                      rise: float = 0.0) -> np.ndarray:
    """Quasi-static torque K/R (v − Kω), equation (2), clipped to the force range (3)."""
    k = params[D.P_K]
    tau = k / resistance(params, rise) * (voltage - k * np.asarray(omega, dtype=float))
    if params[D.P_FORCELIMITED] != 0.0:
        tau = np.clip(tau, params[D.P_FMIN], params[D.P_FMAX])
    return tau


def drag(params: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """b(ω) = B1 ω + B2 ω|ω| + B3 ω³ on the motor side (section 1.2)."""
    w = np.asarray(omega, dtype=float)
    return params[D.P_B1] * w + params[D.P_B2] * w * np.abs(w) + params[D.P_B3] * w**3


def lugre_level(params: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """g(ω) of equation (10), γ = 2; zero when the set has no LuGre friction."""
    w = np.asarray(omega, dtype=float)
    if params[D.P_SIGMA0] <= 0.0:
        return np.zeros_like(w)
    vs = max(D.MINVAL, float(params[D.P_VS]))
    return params[D.P_FC] + (params[D.P_FS] - params[D.P_FC]) * np.exp(-((w / vs) ** 2))


def stribeck_curve(params: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """Steady-state friction τ_ss(ω) = −g(ω) sgn(ω) − b(ω) (Fig. 6)."""
    w = np.asarray(omega, dtype=float)
    return -lugre_level(params, w) * np.sign(w) - drag(params, w)


def torque_speed_envelope(params: np.ndarray, omega: np.ndarray, voltage: float | None = None,
                          rise: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) net output torque at each speed ω (Fig. 2-3).

    The electrical torque at −v and +v, each minus the losses at that speed:
    the shaded region of the document's Fig. 3 lies between the two.
    """
    v = max_voltage(params) if voltage is None else float(voltage)
    loss = -stribeck_curve(params, omega)
    low = electrical_torque(params, -v, omega, rise) - loss
    high = electrical_torque(params, v, omega, rise) - loss
    return low, high


def friction_only(params: np.ndarray) -> np.ndarray:
    """A copy of ``params`` with only the LuGre bristle active (no motor, no drag)."""
    p = np.zeros(D.N_PARAMS)
    for slot in (D.P_SIGMA0, D.P_SIGMA1, D.P_FC, D.P_FS, D.P_VS, D.P_GEAR):
        p[slot] = params[slot]
    p[D.P_R] = 1.0  # K = 0: the stateless electrical branch gives no torque
    p[D.P_SPEC] = D.INPUT_NONE
    return p


def hysteresis_loop(params: np.ndarray, amplitude: float, period: float = 2.0,
                    cycles: float = 2.0, dt: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """LuGre friction torque against displacement θ = A sin(2πt/P) (Fig. 5).

    Starts from a relaxed bristle (z = 0); returns (θ, τ) at every step, the
    velocity being the exact derivative of the imposed motion.
    """
    if params[D.P_SIGMA0] <= 0.0:
        raise BamError("the dcmotor set has no LuGre friction (lugre σ0 = 0): no hysteresis "
                       "to draw")
    if not (amplitude > 0.0 and period > 0.0 and cycles > 0.0 and 0.0 < dt < period):
        raise BamError("hysteresis_loop needs amplitude > 0, period > 0, cycles > 0 and "
                       "0 < dt < period")
    p = friction_only(params)
    state = np.zeros(D.N_STATES)
    n = int(math.ceil(cycles * period / dt))
    t = np.arange(n) * dt
    w = 2.0 * math.pi / period
    theta = amplitude * np.sin(w * t)
    omega = amplitude * w * np.cos(w * t)
    tau = np.empty(n)
    for k in range(n):
        tau[k] = D.dcmotor_step(p, state, 0.0, theta[k], omega[k], dt)
    return theta, tau


def plot_curves(params: np.ndarray, axes, voltage: float | None = None,
                label: str = "") -> None:
    """Draw the envelope, the Stribeck curve and the hysteresis loop on three axes."""
    ax_env, ax_str, ax_hys = axes
    v = voltage if voltage is not None else max_voltage(params)
    no_load = v / max(D.MINVAL, float(params[D.P_K]))
    omega = np.linspace(-1.2 * no_load, 1.2 * no_load, 801)
    low, high = torque_speed_envelope(params, omega, v)
    ax_env.fill_between(omega, low, high, alpha=0.25, label=label or None)
    ax_env.plot(omega, -stribeck_curve(params, omega), "--", color="gray", lw=0.8)
    ax_env.set(xlabel="speed ω (rad/s)", ylabel="torque (N·m)", title="Torque-speed envelope")
    if params[D.P_SIGMA0] > 0.0:
        scale = 5.0 * max(D.MINVAL, float(params[D.P_VS]))
        ws = np.linspace(-scale, scale, 801)
        ax_str.plot(ws, stribeck_curve(params, ws), label=label or None)
        amplitude = 3.0 * float(params[D.P_FS]) / float(params[D.P_SIGMA0])
        theta, tau = hysteresis_loop(params, amplitude)
        ax_hys.plot(theta, tau, label=label or None)
    ax_str.set(xlabel="speed ω (rad/s)", ylabel="friction τ_ss (N·m)", title="Stribeck curve")
    ax_hys.set(xlabel="displacement θ (rad)", ylabel="friction τ (N·m)",
               title="Pre-sliding hysteresis")
    ax_hys.ticklabel_format(axis="x", style="sci", scilimits=(-2, 2))
