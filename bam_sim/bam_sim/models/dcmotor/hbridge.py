"""Averaged drive/coast H-bridge: mean motor current and torque over one PWM period.

The paper's voltage law (13) assumes a drive/brake bridge: during the
off-time the motor is shorted, the current may reverse, and the mean terminal
voltage is d·V whatever L, so τ = K/R·(d V − e). A drive/coast bridge
(sign-magnitude PWM, all switches open during the off-time) differs, and its
mean depends on L/R and the PWM period. Ideal switches and diodes.

Circuit: L di/dt = v − R i − e, back-EMF e = K θ̇ constant over the period
(the mechanical time scale is far above T_pwm). Duty d ∈ [0, 1], supply V,
|e| < V; negative duty by symmetry, ī(−d, e) = −ī(d, −e).

* on-time [0, dT): v = +V; the current relaxes towards i_on = (V − e)/R
  with the time constant τ_e = L/R.
* off-time: the current freewheels through the diodes back into the supply
  (regenerative, "fast decay"): v = −V for i > 0, the current relaxes towards
  i_off = −(V + e)/R < 0. When it reaches 0 the diodes block and, with
  |e| < V, the circuit stays open (i = 0, terminal voltage e) until the next
  on-time.

Each interval is an exponential, i(t) = i_∞ + (i(0) − i_∞) exp(−t/τ_e).
In the periodic steady state the inductor's mean voltage is zero, so
ī = (v̄ − e)/R, with v̄ the mean terminal voltage (= e while open). Let σT be
the time the current flows in the off-time:

    ī = [(V − e)·d − (V + e)·σ] / R

* continuous conduction (current > 0 throughout): σ = 1 − d, hence
  ī = ((2d − 1)V − e)/R, independent of L and T_pwm;
* discontinuous conduction: the period starts at i = 0; the on-time ends at
  i₁ = i_on(1 − exp(−dT/τ_e)); the off-time decay reaches 0 after
  s = τ_e ln(1 + i₁/|i_off|) = σT.

The conduction is discontinuous iff s ≤ (1 − d)T: starting from zero the
current is back to zero before the period ends. (The periodic start current
of the continuous case, i₀ = [i_off(1 − b) + i_on b(1 − a)]/(1 − ab) with
a = exp(−dT/τ_e), b = exp(−(1 − d)T/τ_e), is positive exactly when s > (1 − d)T;
at the boundary both branches give the same ī.)

Limits and comparison with drive/brake, ī_b = (dV − e)/R:

* d = 1: ī = (V − e)/R for both bridges;
* continuous conduction: ī = ī_b − (1 − d)V/R, i.e. the drive/brake law at
  the duty 2d − 1 (the locked anti-phase average); the two bridges agree only
  at d = 1;
* τ_e ≪ T_pwm: ī → d(V − e)/R (current only while driven), which equals the
  drive/brake value only when e = 0 (ī = dV/R);
* τ_e ≫ T_pwm: ī → max(0, (2d − 1)V − e)/R: the discontinuous band shrinks
  to zero current, a dead zone d < (1 + e/V)/2;
* |e| ≥ V (the motor outruns the supply): the diodes conduct whatever the
  switches do. For e ≥ V the current is negative throughout (v = +V in both
  intervals), ī = (V − e)/R; for e ≤ −V it is positive throughout,
  ī = ((2d − 1)V − e)/R (continuous).

:func:`simulate_coast_bridge` integrates the circuit itself (RK4 far below
the PWM period, diode switching located by bisection) to check all of this.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from bam_sim.common.errors import BamError


@nb.njit(cache=True)
def _average(duty: float, supply: float, emf: float, resistance: float, inductance: float,
             period: float) -> tuple[float, bool]:
    # (mean current, continuous conduction) for duty >= 0
    if emf >= supply:
        return (supply - emf) / resistance, True
    ccm = ((2.0 * duty - 1.0) * supply - emf) / resistance
    if emf <= -supply:
        return ccm, True
    if duty <= 0.0:
        return 0.0, False
    if inductance <= 0.0:  # τ_e = 0: the current follows the voltage instantly
        return duty * (supply - emf) / resistance, duty >= 1.0
    tau = inductance / resistance
    i_on = (supply - emf) / resistance
    i_off = (supply + emf) / resistance  # magnitude of the off-time asymptote
    i1 = -i_on * math.expm1(-duty * period / tau)
    s = tau * math.log1p(i1 / i_off)
    if s <= (1.0 - duty) * period:
        return (i_on * duty * period - i_off * s) / period, False
    return ccm, True


@nb.njit(cache=True)
def average_current(duty: float, supply: float, emf: float, resistance: float,
                    inductance: float, period: float) -> float:
    """Mean motor current over a PWM period of a drive/coast bridge (module docstring)."""
    if duty < 0.0:
        return -_average(-duty, supply, -emf, resistance, inductance, period)[0]
    return _average(duty, supply, emf, resistance, inductance, period)[0]


@nb.njit(cache=True)
def average_torque(duty: float, supply: float, emf: float, resistance: float,
                   inductance: float, motorconst: float, period: float) -> float:
    """Mean motor torque K·ī over a PWM period of a drive/coast bridge."""
    return motorconst * average_current(duty, supply, emf, resistance, inductance, period)


@nb.njit(cache=True)
def continuous(duty: float, supply: float, emf: float, resistance: float, inductance: float,
               period: float) -> bool:
    """Whether the current flows during the whole period (continuous conduction)."""
    if duty < 0.0:
        return _average(-duty, supply, -emf, resistance, inductance, period)[1]
    return _average(duty, supply, emf, resistance, inductance, period)[1]


@nb.njit(cache=True)
def drive_brake_current(duty: float, supply: float, emf: float, resistance: float) -> float:
    """Mean current of a drive/brake bridge, (dV − e)/R, the law of the paper's (13)."""
    return (duty * supply - emf) / resistance


class BridgeAverage(NamedTuple):
    """Mean current (A) and torque (N·m) over a PWM period, and the conduction mode."""

    current: float
    torque: float
    continuous: bool


def coast_average(duty: float, supply: float, emf: float, resistance: float,
                  inductance: float, motorconst: float, period: float) -> BridgeAverage:
    """Checked :func:`average_current` / :func:`average_torque` with the conduction mode."""
    _check(duty, supply, resistance, inductance, period)
    i = average_current(duty, supply, emf, resistance, inductance, period)
    mode = continuous(duty, supply, emf, resistance, inductance, period)
    return BridgeAverage(float(i), float(motorconst * i), bool(mode))


def _check(duty: float, supply: float, resistance: float, inductance: float,
           period: float) -> None:
    if not -1.0 <= duty <= 1.0:
        raise BamError(f"duty must be in [-1, 1], got {duty}")
    for name, value in (("supply", supply), ("resistance", resistance), ("period", period)):
        if not (math.isfinite(value) and value > 0.0):
            raise BamError(f"{name} must be > 0, got {value}")
    if not (math.isfinite(inductance) and inductance >= 0.0):
        raise BamError(f"inductance must be >= 0, got {inductance}")


# ---- brute-force circuit simulation -----------------------------------------
@nb.njit(cache=True)
def _rk4(i: float, v: float, emf: float, resistance: float, inductance: float,
         h: float) -> tuple[float, float]:
    # one RK4 step of L di/dt = v − R i − e with the charge ∫i dt alongside
    k1 = (v - resistance * i - emf) / inductance
    i2 = i + 0.5 * h * k1
    k2 = (v - resistance * i2 - emf) / inductance
    i3 = i + 0.5 * h * k2
    k3 = (v - resistance * i3 - emf) / inductance
    i4 = i + h * k3
    k4 = (v - resistance * i4 - emf) / inductance
    return i + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4), h / 6.0 * (i + 2.0 * i2 + 2.0 * i3 + i4)


@nb.njit(cache=True)
def _off_step(i: float, supply: float, emf: float, resistance: float, inductance: float,
              h: float) -> tuple[float, float]:
    """One substep with the switches open: diodes conduct or the circuit is open."""
    charge = 0.0
    left = h
    while left > 0.0:
        if i > 0.0:
            v = -supply  # the freewheeling diodes put the supply across the motor, reversed
        elif i < 0.0:
            v = supply
        elif emf > supply:
            v = supply   # at zero current the diodes conduct only if |e| exceeds the supply
        elif emf < -supply:
            v = -supply
        else:
            break        # open circuit: i stays 0
        i_new, q = _rk4(i, v, emf, resistance, inductance, left)
        if i == 0.0 or (i_new > 0.0) == (i > 0.0):
            return i_new, charge + q
        lo, hi = 0.0, left  # the diodes block at the zero crossing: locate it
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if (_rk4(i, v, emf, resistance, inductance, mid)[0] > 0.0) == (i > 0.0):
                lo = mid
            else:
                hi = mid
        charge += _rk4(i, v, emf, resistance, inductance, lo)[1]
        i = 0.0
        left -= lo
        if emf >= -supply and emf <= supply:
            break
    return i, charge


@nb.njit(cache=True)
def simulate_coast_bridge(duty: float, supply: float, emf: float, resistance: float,
                          inductance: float, period: float, periods: int,
                          substeps: int) -> np.ndarray:
    """Mean current of each of ``periods`` PWM periods, from i = 0 (brute force).

    The on-time and the off-time are each split into ``substeps`` RK4 steps,
    so the switching instants fall on step boundaries. On: v = sign(d)·V
    through the switches (either current direction). Off: diode logic of
    :func:`_off_step`. ``inductance`` must be > 0.
    """
    v_on = supply if duty >= 0.0 else -supply
    t_on = abs(duty) * period
    t_off = period - t_on
    out = np.zeros(periods)
    i = 0.0
    for p in range(periods):
        charge = 0.0
        if t_on > 0.0:
            h = t_on / substeps
            for _ in range(substeps):
                i, q = _rk4(i, v_on, emf, resistance, inductance, h)
                charge += q
        if t_off > 0.0:
            h = t_off / substeps
            for _ in range(substeps):
                i, q = _off_step(i, supply, emf, resistance, inductance, h)
                charge += q
        out[p] = charge / period
    return out


def brute_force_average(duty: float, supply: float, emf: float, resistance: float,
                        inductance: float, period: float, substeps: int = 400) -> float:
    """Mean current in the periodic steady state of :func:`simulate_coast_bridge`.

    Runs 40 electrical time constants (the start-up transient decays by
    e⁻⁴⁰) plus a few periods, and returns the last period's mean.
    """
    _check(duty, supply, resistance, inductance, period)
    if inductance <= 0.0:
        raise BamError("the brute-force simulation needs an inductance > 0")
    periods = int(math.ceil(40.0 * inductance / resistance / period)) + 5
    return float(simulate_coast_bridge(duty, supply, emf, resistance, inductance, period,
                                       periods, substeps)[-1])
