"""The four test paths of the 2R arm validation (paper section VI-B, Fig. 6).

Circle (A), square (B), square wave (C) and triangular wave (D), drawn by the
end effector of a planar two-link (2R) arm in its vertical plane, timed, and
turned into joint targets by the closed-form inverse kinematics of the 2R arm.

Plane coordinates: x horizontal (in front of the arm), z vertical (up), origin
at the shoulder axis. Joint angles follow the bench convention (arm hanging
down = 0): q1 is the angle of link 1 from the downward vertical, positive
towards +x, and q2 the angle of link 2 relative to link 1. Forward kinematics::

    x =  l1 sin q1 + l2 sin(q1 + q2)
    z = −l1 cos q1 − l2 cos(q1 + q2)

Inverse kinematics (one elbow branch, kept for the whole path)::

    cos q2 = (x² + z² − l1² − l2²) / (2 l1 l2),   q2 = elbow · arccos(cos q2)
    q1 = atan2(x, −z) − atan2(l2 sin q2, l1 + l2 cos q2)

A point is reachable when |l1 − l2| ≤ √(x² + z²) ≤ l1 + l2; a path keeps a
margin from both circles so it never crosses the stretched or folded
singularity (q2 = 0 or ±π) and the branch stays the same. The shapes are
placed from the reach L = l1 + l2 (centre in front of and below the shoulder,
where gravity loads both joints); every size can be given explicitly. Mapping
these angles onto an MJCF (hinge axis sign, zero pose) is the caller's job.

The end effector moves along the shape at constant speed, with smooth
(trapezoidal-velocity) start and stop ramps so the targets start and end at
rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bam_sim.common.errors import BamError

PATH_NAMES: tuple[str, ...] = ("circle", "square", "square_wave", "triangle_wave")
ELBOWS = (-1, 1)
# Fraction of the path duration spent accelerating (and as much decelerating).
RAMP = 0.1
# Radial margin kept from the workspace boundaries, as a fraction of l1 + l2.
MARGIN = 0.02


@dataclass(frozen=True)
class PathShape:
    """Where a path is drawn: its centre (x, z) and size, all in metres.

    ``size`` is the circle's radius, the square's side, or the width of a
    wave; ``amplitude`` is a wave's half height; ``periods`` its periods.
    """

    center: tuple[float, float]
    size: float
    amplitude: float = 0.0
    periods: int = 2


@dataclass(frozen=True)
class ArmPath:
    """A timed end-effector path and its joint targets (rows are samples)."""

    name: str
    t: np.ndarray          # s, from 0 to the duration
    xz: np.ndarray         # (N, 2) end-effector targets, m
    q: np.ndarray          # (N, 2) joint targets (shoulder, elbow), rad
    l1: float
    l2: float
    elbow: int
    shape: PathShape

    @property
    def duration(self) -> float:
        return float(self.t[-1])


def default_shape(name: str, l1: float, l2: float) -> PathShape:
    """The placement used when none is given: sizes proportional to the reach."""
    reach = _check_lengths(l1, l2)
    center = (0.6 * reach, -0.25 * reach)
    sizes = {"circle": (0.2, 0.0), "square": (0.35, 0.0),
             "square_wave": (0.4, 0.1), "triangle_wave": (0.4, 0.1)}
    size, amplitude = sizes[_check_name(name)]
    return PathShape(center=center, size=size * reach, amplitude=amplitude * reach)


def outline(name: str, shape: PathShape) -> np.ndarray:
    """Vertices of the shape as a closed or open polyline (circle: 720 points).

    Polylines are traversed in order; the circle counter-clockwise from its
    top, the square counter-clockwise from its top-left corner, the waves left
    to right starting low.
    """
    cx, cz = shape.center
    if _check_name(name) == "circle":
        a = np.pi / 2 + np.linspace(0.0, 2 * np.pi, 721)
        return np.column_stack([cx + shape.size * np.cos(a), cz + shape.size * np.sin(a)])
    if name == "square":
        h = shape.size / 2
        corners = [(-h, h), (-h, -h), (h, -h), (h, h), (-h, h)]
        return np.array([(cx + u, cz + v) for u, v in corners])
    return _wave(name, shape)


def _wave(name: str, shape: PathShape) -> np.ndarray:
    cx, cz = shape.center
    if shape.periods < 1 or shape.amplitude <= 0.0:
        raise BamError(f"{name}: give at least one period and an amplitude > 0 m, got "
                       f"{shape.periods} and {shape.amplitude}")
    left, period, a = cx - shape.size / 2, shape.size / shape.periods, shape.amplitude
    points = []
    for k in range(shape.periods):
        x0 = left + k * period
        if name == "square_wave":
            points += [(x0, cz - a), (x0 + period / 2, cz - a), (x0 + period / 2, cz + a),
                       (x0 + period, cz + a), (x0 + period, cz - a)]
        else:
            points += [(x0, cz - a), (x0 + period / 2, cz + a)]
    if name == "square_wave":
        points = points[:-1]  # ends on the last top level, no trailing drop
    else:
        points.append((left + shape.size, cz - a))
    return np.array(points)


def progress(t: np.ndarray, duration: float, ramp: float = RAMP) -> np.ndarray:
    """Fraction of the path travelled at t: trapezoidal speed, 0 → 1, at rest at both ends."""
    tau = np.clip(np.asarray(t, dtype=float) / duration, 0.0, 1.0)
    v = 1.0 / (1.0 - ramp)
    return np.where(tau < ramp, v * tau**2 / (2 * ramp),
                    np.where(tau > 1.0 - ramp, 1.0 - v * (1.0 - tau) ** 2 / (2 * ramp),
                             v * (tau - ramp / 2)))


def along(polyline: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Points at arc-length fractions ``s`` ∈ [0, 1] of a polyline."""
    seg = np.linalg.norm(np.diff(polyline, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    d = np.asarray(s) * cum[-1]
    return np.column_stack([np.interp(d, cum, polyline[:, i]) for i in range(2)])


def forward_kinematics(q: np.ndarray, l1: float, l2: float) -> np.ndarray:
    """End-effector (x, z) of joint angles q (…, 2), bench convention (down = 0)."""
    q = np.asarray(q, dtype=float)
    q1, q12 = q[..., 0], q[..., 0] + q[..., 1]
    return np.stack([l1 * np.sin(q1) + l2 * np.sin(q12),
                     -l1 * np.cos(q1) - l2 * np.cos(q12)], axis=-1)


def inverse_kinematics(xz: np.ndarray, l1: float, l2: float, elbow: int = 1) -> np.ndarray:
    """Joint angles (…, 2) reaching the points xz (…, 2) on one elbow branch.

    ``elbow`` is the sign of q2 (+1 or −1). Raises BamError naming the first
    unreachable point. Shoulder angles are unwrapped along the path, so a
    path crossing the upward vertical gives continuous targets.
    """
    reach = _check_lengths(l1, l2)
    if elbow not in ELBOWS:
        raise BamError(f"elbow must be +1 or -1 (the sign of the elbow angle), got {elbow!r}")
    xz = np.asarray(xz, dtype=float)
    if xz.shape[-1:] != (2,) or not np.all(np.isfinite(xz)):
        raise BamError("inverse kinematics needs finite (x, z) points, an array of shape (N, 2)")
    x, z = xz[..., 0], xz[..., 1]
    r = np.hypot(x, z)
    bad = np.flatnonzero(((r > reach) | (r < abs(l1 - l2))).ravel())
    if bad.size:
        i = bad[0]
        raise BamError(
            f"point {i} ({x.ravel()[i]:.4g}, {z.ravel()[i]:.4g}) m is at {r.ravel()[i]:.4g} m "
            f"from the shoulder, outside the reachable ring [{abs(l1 - l2):.4g}, {reach:.4g}] m "
            f"of links {l1:g} m and {l2:g} m; move or shrink the path")
    c2 = np.clip((r**2 - l1**2 - l2**2) / (2 * l1 * l2), -1.0, 1.0)
    q2 = elbow * np.arccos(c2)
    q1 = np.arctan2(x, -z) - np.arctan2(l2 * np.sin(q2), l1 + l2 * np.cos(q2))
    if q1.ndim == 1:
        q1 = np.unwrap(q1)
    return np.stack([q1, q2], axis=-1)


def arm_path(name: str, l1: float, l2: float, *, duration: float = 8.0, rate: float = 1000.0,
             elbow: int = 1, shape: PathShape | None = None) -> ArmPath:
    """Path ``name`` sampled at ``rate`` Hz over ``duration`` s, with its joint targets.

    Raises BamError for an unknown name, bad timing, or a shape leaving the
    workspace (with the margin that keeps the elbow branch).
    """
    _check_name(name)
    if not (np.isfinite(duration) and duration > 0.0 and np.isfinite(rate) and rate > 0.0):
        raise BamError(f"path timing must be positive, got duration {duration} s and rate "
                       f"{rate} Hz")
    shape = shape or default_shape(name, l1, l2)
    t = np.arange(round(duration * rate) + 1) / rate
    xz = along(outline(name, shape), progress(t, duration))
    _check_margin(name, xz, l1, l2)
    return ArmPath(name, t, xz, inverse_kinematics(xz, l1, l2, elbow), float(l1), float(l2),
                   elbow, shape)


def _check_margin(name: str, xz: np.ndarray, l1: float, l2: float) -> None:
    reach = l1 + l2
    r = np.hypot(xz[:, 0], xz[:, 1])
    lo, hi = abs(l1 - l2) + MARGIN * reach, reach - MARGIN * reach
    i = int(np.argmax((r < lo) | (r > hi)))
    if r[i] < lo or r[i] > hi:
        raise BamError(
            f"path '{name}' reaches ({xz[i, 0]:.4g}, {xz[i, 1]:.4g}) m, {r[i]:.4g} m from the "
            f"shoulder, outside [{lo:.4g}, {hi:.4g}] m (the workspace of links {l1:g} m and "
            f"{l2:g} m less a {MARGIN:g}·reach margin); move or shrink the path")


def _check_lengths(l1: float, l2: float) -> float:
    if not all(isinstance(v, (int, float, np.floating)) and np.isfinite(v) and v > 0.0
               for v in (l1, l2)):
        raise BamError(f"link lengths must be finite and > 0 m, got l1={l1!r}, l2={l2!r}")
    return float(l1 + l2)


def _check_name(name: str) -> str:
    if name not in PATH_NAMES:
        raise BamError(f"unknown arm path '{name}'; choose one of {', '.join(PATH_NAMES)}")
    return name

