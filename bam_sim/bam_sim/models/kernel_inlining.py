"""Where numba inlines the models' small functions: into the rollout kernels, nowhere else.

The models' functions (friction, laws, DC motor, elasto-plastic steps) are inlined, in
numba's IR, into the kernels that step them thousands of times per log:

* the SIMD lane kernels (:mod:`bam_sim.bench.lanes`, :mod:`bam_sim.bench.motor_lanes`):
  LLVM vectorizes their loop over the lanes only when nothing is called in it, and only
  under the kernel's NumPy error model (a call keeps Python's division checks: the loop
  stays scalar, 2 to 4 times slower, measured);
* the general rollout (:mod:`bam_sim.bench.rollouts`): plain calls made the single
  rollouts and the fits that take the general kernel (the ``supply`` group, an
  input-voltage score) 1.4 to 1.8 times slower;
* the MuJoCo arm's step (:mod:`bam_sim.mujoco_arm.servo_arm`), since it steps MuJoCo from
  the kernel: the servo laws' calls were a fifth of a robot step of the SO-101-class arm
  (1.1 of 4.9 µs, the law and friction of six joints; 0.6 µs inlined, measured).

Everywhere else (the bench stepper of the nodes and emulators, the diagram, a function
compiled on its own) a plain call runs as fast (measured: the stepper's ticks) and
compiles in a fraction of the time: numba's
passes over the inlined copies are most of a compile. The workspace's precompile took
203 CPU-s with every function inlined everywhere, 175 with this rule; the numerics tests
for a generic CPU in a fresh cache 547 and 448 CPU-s. Positions are the same to the bit
either way (no fast-math, FMA explicit).
"""

from __future__ import annotations

from typing import Any

KERNEL_MODULES = frozenset({"bam_sim.bench.lanes", "bam_sim.bench.motor_lanes",
                            "bam_sim.bench.rollouts",
                            "bam_sim.mujoco_arm.servo_arm"})


def into_rollouts(expr: Any, caller: Any, callee: Any) -> bool:
    """numba's inline cost model (``@nb.njit(inline=into_rollouts)``), called with the call
    expression and the caller's and callee's IR: inline where the function being compiled
    (the caller, whose IR takes in what was inlined before) is one of the rollout kernels'
    modules."""
    return caller.func_id.modname in KERNEL_MODULES
