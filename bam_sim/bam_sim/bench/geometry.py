"""The pendulum bench's geometry: what the sim, the drivers and the fit all describe.

Paper section II-A, with the conventions of the published parameter sets:
q = 0 with the arm pointing down, positive counter-clockwise; a point mass
``mass`` at ``length`` on a uniform rod of mass ``arm_mass``. No numerics
beyond numpy: drivers publish it in ``bam/bench_info`` without loading numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number

GRAVITY = 9.80665  # m/s², standard gravity, as in the published identification


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
