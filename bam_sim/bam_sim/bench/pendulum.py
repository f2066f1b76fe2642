"""The pendulum test bench and one step of the paper's Algorithm 1.

Bench (paper section II-A, with the conventions of the published parameter
sets): q = 0 with the arm pointing down, positive counter-clockwise; a point
mass ``mass`` at ``length`` on a uniform rod of mass ``arm_mass``::

    J   = mass·l² + arm_mass·l²/3 + J_m                                  (Alg. 1, line 3)
    τ_e = −(mass + arm_mass/2)·g·l·sin(q + q_offset)                     (Alg. 1, line 2)

One step (Algorithm 1)::

    τ_m   = S(q_k, q̇_k, q_d,k+1)                        servo model, servo.py
    τ_f^m = M(τ_m, τ_e, q̇_k)                            friction model, friction.py
    τ_stop = −(J/Δt·q̇_k + τ_m + τ_e)                    (4)
    τ_f   = clip(τ_stop, ±τ_f^m)                         (5)
    q̈     = (τ_m + τ_e + τ_f)/J                          (1)
    q̇_k+1 = clip(q̇_k + q̈·Δt, ±100 rad/s)
    q_k+1 = q_k + q̇_k+1·Δt + ½·q̈·Δt²

The position update uses the *updated* velocity, as the published
implementation with which the parameter sets were identified (line 9 of
Algorithm 1 as printed uses q̇_k). That integrator is slightly dissipative:
for small oscillations of angular frequency ω it multiplies the phase-space
area, hence the energy, by 1 − ω²Δt²/2 per step.

When the joint is at rest and |τ_m + τ_e| ≤ τ_f^m, τ_f is exactly −(τ_m + τ_e)
and q̈ is exactly zero in floating point: the sums below are written so that
they are evaluated in the same order, which is what keeps a static joint
static for ever (no drift, no chattering).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models import parameters as P
from bam_sim.models.friction import applied_friction, friction_budget
from bam_sim.models.servo import _clip, servo_torque, torque_from_control

GRAVITY = 9.80665  # m/s², standard gravity, as in the published identification
MAX_VELOCITY = 100.0  # rad/s, velocity clip of the published implementation


@dataclass(frozen=True)
class Bench:
    """Pendulum bench geometry: point mass (kg), rod mass (kg), length (m)."""

    mass: float
    length: float
    arm_mass: float = 0.0

    def __post_init__(self) -> None:
        for name in ("mass", "length", "arm_mass"):
            object.__setattr__(self, name, number(getattr(self, name), f"bench {name}",
                                                  low=0.0))
        if self.length <= 0.0:
            raise BamError(f"bench length must be > 0 m, got {self.length}")

    def inertia(self, armature: float) -> float:
        """J = mass·l² + arm_mass·l²/3 + J_m (kg·m²)."""
        return self.mass * self.length**2 + self.arm_mass * self.length**2 / 3.0 + armature

    @property
    def gravity_torque(self) -> float:
        """(mass + arm_mass/2)·g·l, the amplitude of τ_e (N·m)."""
        return (self.mass + 0.5 * self.arm_mass) * GRAVITY * self.length

    def external_torque(self, q: float | np.ndarray, q_offset: float = 0.0):
        """τ_e(q) of the bench (N·m)."""
        return -self.gravity_torque * np.sin(np.asarray(q) + q_offset)

    def energy(self, q: np.ndarray, dq: np.ndarray, armature: float) -> np.ndarray:
        """Mechanical energy ½Jq̇² + mgl(1 − cos q) of the bench (J)."""
        q = np.asarray(q)
        dq = np.asarray(dq)
        return 0.5 * self.inertia(armature) * dq**2 + self.gravity_torque * (1.0 - np.cos(q))


@nb.njit(cache=True, inline="always")
def step(
    model: int,
    family: int,
    p: np.ndarray,
    c: np.ndarray,
    kp: float,
    inertia: float,
    gravity_torque: float,
    q: float,
    dq: float,
    goal: float,
    enabled: bool,
    replay: bool,
    control: float,
    dt: float,
) -> tuple[float, float, float, float]:
    """Algorithm 1: returns (q_k+1, q̇_k+1, τ_m, control).

    Inlined into the rollout kernels; also callable from Python (one dispatch
    per call), e.g. by a node stepping the bench in real time. With
    ``replay`` the recorded ``control`` (V or A) drives the motor model
    instead of the control law, which then is not evaluated.
    """
    if replay:
        tau_m = torque_from_control(family, p, c, control, dq, enabled)
        applied = control if enabled else 0.0
    else:
        tau_m, applied = servo_torque(family, p, c, kp, q, dq, goal, enabled)
    tau_e = -gravity_torque * np.sin(q + p[P.Q_OFFSET])
    budget = friction_budget(model, p, tau_m, tau_e, dq)
    tau_f = applied_friction(-(inertia / dt * dq + tau_m + tau_e), budget)
    ddq = (tau_m + tau_e + tau_f) / inertia
    dq_next = _clip(dq + ddq * dt, -MAX_VELOCITY, MAX_VELOCITY)
    q_next = q + dq_next * dt + 0.5 * ddq * dt * dt
    return q_next, dq_next, tau_m, applied

