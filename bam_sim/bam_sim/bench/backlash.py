"""Backlash on the pendulum bench: a dead band of width b between the motor and the output.

The gear train of a servo has play (about 1° on an STS3215, TheRobotStudio/SO-ARM100#134).
The motor, whose rotor is the set's armature J_m reflected to the output, and the output,
the bench's load J_l = J − J_m (:mod:`bam_sim.bench.pendulum`), turn together only while
the teeth touch. The encoder reads the output (a magnet on the output shaft of a Dynamixel
or an STS), so the firmware's law sees the output, while the motor's torque depends on the
motor's own speed (its back-EMF). With s = θ_m − q the motor's lead on the output,
|s| ≤ h = b/2:

* **in contact** (s = ±h): one body of inertia J, stepped exactly as Algorithm 1 steps it
  without backlash (the friction budget τ_f^m(τ_m, τ_e, q̇) of the whole train). The gear
  pushes the load with F = J_l·q̈ − τ_e; the contact holds while F pushes from the side
  the motor leads on (s = +h: F ≥ 0), else the teeth part and the step is taken apart;
* **apart**: two bodies. The motor under τ_m and the train's friction, Algorithm 1 with
  J_m and no load (τ_e = 0 in the budget), so the friction can hold it while the output
  swings; the output under τ_e alone. Where the gap closes within the step, a rigid,
  inelastic impact: both take the momentum-weighted velocity (J_m v_m + J_l q̇)/J, the
  output where it got to, the motor at the side (it overshot by less than a step's
  relative travel).

The contact is rigid: a tooth's stiffness (≥ 1e3 N·m/rad on a J_m of 1e-3 kg·m² rings
above 150 Hz) is not fixed by logs sampled at 5 ms, so it is not a parameter.

A log starts at rest with the load leaning on the gear on the side gravity pulls it to,
s = −h·sign(τ_e) (mid-gap without a load torque). A set without the group (b = 0) never
comes here: the kernels branch on b > 0, so today's sets keep their bits.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.bench.pendulum import MAX_VELOCITY, external_torque
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import applied_friction, friction_budget
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.servo.laws import _clip, control_law, torque_from_control


@nb.njit(cache=True, inline=into_rollouts)
def initial_lead(p: np.ndarray, gravity_torque: float, q: float) -> float:
    """s at the start of a log at q: the load leaning on the gear as gravity pulls it."""
    tau_e = external_torque(gravity_torque, q, p[P.Q_OFFSET])
    h = 0.5 * p[P.BACKLASH]
    if tau_e > 0.0:
        return -h
    if tau_e < 0.0:
        return h
    return 0.0


@nb.njit(cache=True, inline=into_rollouts)
def step_backlash(model: int, family: int, p: np.ndarray, c: np.ndarray, kp: float,
                  inertia: float, gravity_torque: float, q: float, dq: float, s: float,
                  ds: float, goal: float, enabled: bool, replay: bool, control: float,
                  dt: float) -> tuple[float, float, float, float, float, float]:
    """One step with a dead band: (q_k+1, q̇_k+1, s_k+1, ṡ_k+1, τ_m, control).

    The arguments of :func:`bam_sim.bench.pendulum.step` (``inertia`` J = J_l + J_m),
    and s, ṡ: the motor's lead on the output and its rate (in contact ṡ = 0 and |s| = h,
    exactly). Inlined into the rollouts; the stepper calls it from Python.
    """
    tau_e = external_torque(gravity_torque, q, p[P.Q_OFFSET])
    if replay:
        applied = control if enabled else 0.0
    elif enabled:
        applied = control_law(family, p, c, kp, q, dq, goal)
    else:
        applied = 0.0
    tau_m = torque_from_control(family, p, c, applied, dq + ds, enabled)
    h = 0.5 * p[P.BACKLASH]
    if ds == 0.0 and abs(s) == h:
        budget = friction_budget(model, p, tau_m, tau_e, dq)
        tau_f = applied_friction(-(inertia / dt * dq + tau_m + tau_e), budget)
        ddq = (tau_m + tau_e + tau_f) / inertia
        side = 1.0 if s > 0.0 else -1.0
        if side * ((inertia - p[P.ARMATURE]) * ddq - tau_e) >= 0.0:
            dq_next = _clip(dq + ddq * dt, -MAX_VELOCITY, MAX_VELOCITY)
            return q + dq_next * dt + 0.5 * ddq * dt * dt, dq_next, s, 0.0, tau_m, applied
    q_next, dq_next, s_next, ds_next = _apart(model, p, inertia, tau_e, tau_m, q, dq, s, ds,
                                              h, dt)
    return q_next, dq_next, s_next, ds_next, tau_m, applied


@nb.njit(cache=True, inline=into_rollouts)
def _apart(model: int, p: np.ndarray, inertia: float, tau_e: float, tau_m: float, q: float,
           dq: float, s: float, ds: float, h: float, dt: float
           ) -> tuple[float, float, float, float]:
    """The motor and the output stepped apart, the impact where the gap closes."""
    motor_inertia = p[P.ARMATURE]
    load_inertia = inertia - motor_inertia
    vm = dq + ds
    budget = friction_budget(model, p, tau_m, 0.0, vm)
    tau_f = applied_friction(-(motor_inertia / dt * vm + tau_m), budget)
    am = (tau_m + tau_f) / motor_inertia
    vm_next = _clip(vm + am * dt, -MAX_VELOCITY, MAX_VELOCITY)
    theta_next = q + s + vm_next * dt + 0.5 * am * dt * dt
    al = tau_e / load_inertia
    dq_next = _clip(dq + al * dt, -MAX_VELOCITY, MAX_VELOCITY)
    q_next = q + dq_next * dt + 0.5 * al * dt * dt
    s_next = theta_next - q_next
    if abs(s_next) < h:
        return q_next, dq_next, s_next, vm_next - dq_next
    side = 1.0 if s_next > 0.0 else -1.0
    velocity = (motor_inertia * vm_next + load_inertia * dq_next) / inertia
    return q_next, velocity, side * h, 0.0
