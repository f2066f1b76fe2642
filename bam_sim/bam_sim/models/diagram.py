"""Drive/backdrive torques and diagrams (paper section II-C, Fig. 2-4).

For a motor torque τ_m and an external torque τ_e, the joint stays static when
friction can hold it, |τ_m + τ_e| ≤ τ_f^m(τ_m, τ_e, q̇). Along a vertical line
of constant τ_m, the static interval around the equilibrium τ_e = −τ_m ends
at two boundaries:

* the **drive torque** τ_drive(τ_m), beyond which the joint moves in the
  direction of τ_m;
* the **backdrive torque** τ_backdrive(τ_m), beyond which it moves in the
  direction of τ_e.

For M1 at rest they are τ_e = −τ_m ± K_c. For load-dependent models the
budget depends on τ_e itself, so each boundary is found by walking out from
the equilibrium until friction no longer holds, then bisecting. A boundary
that is not reached within ``limit`` (a self-locking transmission, K_e ≥ 1)
is returned as ±inf. Evaluating the budget at a speed |q̇| > 0 gives the
velocity-shifted boundaries drawn with lower opacity in the paper's Fig. 4.

The elasto-plastic models (``ep_*``) hold the joint while |τ_m + τ_e| ≤ F_S
at that load, and slide steadily at |q̇| where the applied torque equals Φ(|q̇|)
(:func:`bam_sim.models.elastoplastic.model.friction_level`): that level takes the
budget's place, so their diagrams read the same way.
"""

from __future__ import annotations

import math
from pathlib import Path

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import friction_budget
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.model import stribeck_curve
from bam_sim.models.dcmotor.motor_model import motor_rows
from bam_sim.models.elastoplastic.model import friction_level
from bam_sim.models.elastoplastic.validity import stall_torque
from bam_sim.models.model_registry import EP_FIRST, LUGRE_ID
from bam_sim.models.parameter_set import ParameterSet


@nb.njit(cache=True)
def static_level(model: int, p: np.ndarray, tau_m: float, tau_e: float, dq: float) -> float:
    """What friction can hold at speed |q̇|: the budget (M1..M6), |Φ(q̇)| at the load (ep_*),
    or LuGre's steady state g(q̇) + σ2|q̇| (the DC-motor document's (9)-(10), Fig. 6)."""
    if model == LUGRE_ID:
        speed = abs(dq)
        return (stribeck_curve(p[P.LG_FC], p[P.LG_FS], p[P.LG_VS], speed)
                + p[P.LG_S2] * speed)
    if model >= EP_FIRST:
        return friction_level(model - EP_FIRST, p, tau_m, tau_e, dq)
    return friction_budget(model, p, tau_m, tau_e, dq)


@nb.njit(cache=True)
def _holds(model: int, p: np.ndarray, tau_m: float, tau_e: float, dq: float) -> bool:
    return abs(tau_m + tau_e) <= static_level(model, p, tau_m, tau_e, dq)


@nb.njit(cache=True)
def _boundary(model: int, p: np.ndarray, tau_m: float, dq: float, direction: float,
              limit: float, resolution: float) -> float:
    """Edge of the static interval from τ_e = −τ_m in ``direction`` (±1)."""
    inside = -tau_m
    n_steps = int(limit / resolution) + 1
    for _ in range(n_steps):
        outside = inside + direction * resolution
        if not _holds(model, p, tau_m, outside, dq):
            for _ in range(60):
                middle = 0.5 * (inside + outside)
                if _holds(model, p, tau_m, middle, dq):
                    inside = middle
                else:
                    outside = middle
            return 0.5 * (inside + outside)
        inside = outside
    return direction * np.inf


@nb.njit(cache=True)
def _boundaries(model, p, tau_m, dq, limit, resolution, upper, lower):
    for i in range(tau_m.size):
        upper[i] = _boundary(model, p, tau_m[i], dq, 1.0, limit, resolution)
        lower[i] = _boundary(model, p, tau_m[i], dq, -1.0, limit, resolution)


def max_motor_torque(params: ParameterSet) -> float:
    """Stall torque of the actuator at rest (N·m): the natural range of a diagram.

    Within the saturation τ_max of the DC-motor model when the set carries it.
    """
    act = params.actuator
    p = params.vector()
    stall = float(stall_torque(act, p, act.supply_voltage))
    rows = motor_rows(act.family, params.model_id, p, act.consts())
    if rows[0, D.P_FORCELIMITED] != 0.0:
        stall = min(stall, float(rows[0, D.P_FMAX]))
    return stall


def drive_backdrive(params: ParameterSet, tau_m: np.ndarray, velocity: float = 0.0,
                    limit: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(τ_drive, τ_backdrive) for each motor torque, at joint speed |velocity|.

    For τ_m ≥ 0 the drive boundary is the upper edge of the static interval
    (τ_m + τ_e > 0 moves the joint along τ_m); for τ_m < 0 it is the lower one.
    """
    tau_m = np.atleast_1d(np.asarray(tau_m, dtype=np.float64))
    limit = 4.0 * max_motor_torque(params) if limit is None else float(limit)
    resolution = limit / 4000.0
    upper, lower = np.empty_like(tau_m), np.empty_like(tau_m)
    _boundaries(params.model_id, params.vector(), tau_m, abs(float(velocity)), limit,
                resolution, upper, lower)
    positive = tau_m >= 0.0
    return np.where(positive, upper, lower), np.where(positive, lower, upper)


def plot_diagram(params_list: list[ParameterSet], path: str | Path,
                 velocities: tuple[float, ...] = (1.0, 2.0, 3.0),
                 title: str | None = None) -> Path:
    """Draw the drive/backdrive diagram of one or more parameter sets to a PNG.

    One panel per set: static area (gray), drive (blue) and backdrive (red)
    areas at rest, boundaries at the given speeds with lower opacity, and the
    friction-free equilibrium τ_e = −τ_m dashed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(params_list)
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 4.0 * rows), squeeze=False)
    for ax, params in zip(axes.flat[:n], params_list, strict=True):
        _draw(ax, params, velocities)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _draw(ax, params: ParameterSet, velocities: tuple[float, ...]) -> None:
    span = max_motor_torque(params)
    tau_m = np.linspace(-span, span, 241)
    drive, backdrive = drive_backdrive(params, tau_m)
    upper = np.maximum(drive, backdrive)
    lower = np.minimum(drive, backdrive)
    top, bottom = 2.0 * span, -2.0 * span
    positive = tau_m >= 0
    # Above the upper edge the joint moves forward: drive for τ_m > 0.
    ax.fill_between(tau_m, np.clip(upper, bottom, top), top, where=positive, color="tab:blue",
                    alpha=0.25, lw=0, label="drive")
    ax.fill_between(tau_m, np.clip(upper, bottom, top), top, where=~positive, color="tab:red",
                    alpha=0.25, lw=0, label="backdrive")
    ax.fill_between(tau_m, bottom, np.clip(lower, bottom, top), where=positive, color="tab:red",
                    alpha=0.25, lw=0)
    ax.fill_between(tau_m, bottom, np.clip(lower, bottom, top), where=~positive,
                    color="tab:blue", alpha=0.25, lw=0)
    ax.fill_between(tau_m, np.clip(lower, bottom, top), np.clip(upper, bottom, top),
                    color="0.6", alpha=0.5, lw=0, label="static")
    ax.plot(tau_m, drive, color="tab:blue", lw=1.5)
    ax.plot(tau_m, backdrive, color="tab:red", lw=1.5)
    for k, speed in enumerate(velocities):
        d, b = drive_backdrive(params, tau_m, velocity=speed)
        alpha = 0.5 / (k + 1)
        ax.plot(tau_m, d, color="tab:blue", lw=1, alpha=alpha)
        ax.plot(tau_m, b, color="tab:red", lw=1, alpha=alpha)
    ax.plot(tau_m, -tau_m, "k--", lw=0.8, label=r"$\tau_e=-\tau_m$")
    ax.set_xlim(-span, span)
    ax.set_ylim(bottom, top)
    ax.set_xlabel(r"motor torque $\tau_m$ [N·m]")
    ax.set_ylabel(r"external torque $\tau_e$ [N·m]")
    ax.set_title(f"{params.actuator.name} {params.model.name} ({params.model.title})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
