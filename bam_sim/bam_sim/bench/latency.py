"""The ``latency`` group in a rollout: the commands a servo acts on, late.

With the group, the commands reach the servo L_c late and its states are read
L_r late. A reading at t is then the state at t − L_r of a servo driven by the
commands of t − L_r − L_c: on a bench that starts at rest, as the protocol's
do, only the sum L = L_c + L_r shows, and a rollout applies it to the commands
(:func:`delayed_command`): the command of step k is the one given at k − L/Δt,
interpolated between the two ticks around it (the first command before the
log). The fit therefore frees L_c and holds L_r; the bench simulator keeps them
apart (:mod:`bam_sim.bench.stepper`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bam_sim.models.kernel_inlining import into_rollouts


@nb.njit(cache=True, inline=into_rollouts)
def delay_ticks(latency_command: float, latency_reading: float, dt: float) -> float:
    """L/Δt: the ticks a rollout's commands come late (module docstring)."""
    return (latency_command + latency_reading) / dt


@nb.njit(cache=True, inline=into_rollouts)
def delayed_command(goal: np.ndarray, enabled: np.ndarray, control: np.ndarray, k: int,
                    delay: float) -> tuple[float, bool, float]:
    """(goal, enable, control) acting at step k with the commands ``delay`` ticks late.

    Between two ticks the goal and control are interpolated; the enable is the
    last one that has arrived. Before the first tick, the first command.
    """
    if not delay > 0.0:
        return goal[k], enabled[k], control[k]
    x = k - delay
    if x <= 0.0:
        return goal[0], enabled[0], control[0]
    i = int(np.floor(x))
    f = x - i
    if f == 0.0:
        return goal[i], enabled[i], control[i]
    return (goal[i] + f * (goal[i + 1] - goal[i]), enabled[i],
            control[i] + f * (control[i + 1] - control[i]))
