"""The Fig. 6 test paths of the 2R arm and their closed-form inverse kinematics."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.mujoco_arm.paths import (
    PATH_NAMES,
    PathShape,
    arm_path,
    default_shape,
    forward_kinematics,
    inverse_kinematics,
)

LINKS = [(0.25, 0.2), (0.3, 0.3), (0.5, 0.45)]


def _fk_by_hand(q, l1, l2):
    # Independent of forward_kinematics: compose the two link vectors, each a
    # rotation of the downward unit vector (0, -1) by its absolute angle.
    out = []
    for q1, q2 in q:
        elbow = l1 * np.array([np.sin(q1), -np.cos(q1)])
        rot = np.array([[np.cos(q1 + q2), -np.sin(q1 + q2)], [np.sin(q1 + q2), np.cos(q1 + q2)]])
        out.append(elbow + l2 * rot @ np.array([0.0, -1.0]))
    return np.array(out)


@pytest.mark.parametrize("name", PATH_NAMES)
@pytest.mark.parametrize("l1,l2", LINKS)
@pytest.mark.parametrize("elbow", [1, -1])
def test_forward_kinematics_of_the_targets_reproduces_the_path(name, l1, l2, elbow):
    path = arm_path(name, l1, l2, duration=6.0, rate=200.0, elbow=elbow)
    assert path.q.shape == path.xz.shape == (1201, 2)
    np.testing.assert_allclose(_fk_by_hand(path.q[::37], l1, l2), path.xz[::37], atol=1e-12)
    np.testing.assert_allclose(forward_kinematics(path.q, l1, l2), path.xz, atol=1e-12)
    # One elbow branch for the whole path, away from the singularities.
    assert np.all(elbow * path.q[:, 1] > 0.05) and np.all(np.abs(path.q[:, 1]) < np.pi - 0.05)
    # Continuous joint targets: no branch flip or ±π wrap between samples.
    assert np.abs(np.diff(path.q, axis=0)).max() < 0.05


def test_circle_has_its_radius_and_goes_round_once():
    l1, l2 = 0.3, 0.25
    path = arm_path("circle", l1, l2, duration=8.0, rate=500.0)
    shape = default_shape("circle", l1, l2)
    d = path.xz - np.array(shape.center)
    np.testing.assert_allclose(np.hypot(d[:, 0], d[:, 1]), 0.2 * (l1 + l2), rtol=1e-4)
    angle = np.unwrap(np.arctan2(d[:, 1], d[:, 0]))
    assert angle[-1] - angle[0] == pytest.approx(2 * np.pi, abs=1e-3)
    np.testing.assert_allclose(path.xz[0], path.xz[-1], atol=1e-9)  # closed


def test_square_is_a_square_through_its_four_corners():
    shape = PathShape(center=(0.25, -0.12), size=0.16)
    path = arm_path("square", 0.25, 0.2, shape=shape, rate=1000.0)
    d = path.xz - np.array(shape.center)
    # Every sample lies on the boundary of the square of side 0.16 m.
    np.testing.assert_allclose(np.max(np.abs(d), axis=1), 0.08, atol=1e-12)
    for corner in [(-0.08, 0.08), (-0.08, -0.08), (0.08, -0.08), (0.08, 0.08)]:
        assert np.min(np.linalg.norm(d - corner, axis=1)) < 1e-3
    # Straight sides: between corners, one coordinate is constant.
    on_side = np.isclose(np.abs(d[:, 0]), 0.08) | np.isclose(np.abs(d[:, 1]), 0.08)
    assert on_side.all()


def test_waves_have_their_amplitude_width_and_shape():
    shape = PathShape(center=(0.27, -0.11), size=0.2, amplitude=0.04, periods=2)
    sq = arm_path("square_wave", 0.25, 0.2, shape=shape).xz - np.array(shape.center)
    assert sq[:, 0].min() == pytest.approx(-0.1) and sq[:, 0].max() == pytest.approx(0.1)
    # Square wave: either on a level ±A, or on a vertical jump at a half period.
    on_level = np.isclose(np.abs(sq[:, 1]), 0.04)
    jumps = np.array([-0.05, 0.0, 0.05])
    on_jump = np.min(np.abs(sq[:, [0]] - jumps), axis=1) < 1e-12
    assert (on_level | on_jump).all() and on_level.mean() > 0.5
    tri = arm_path("triangle_wave", 0.25, 0.2, shape=shape).xz - np.array(shape.center)
    # Triangular wave: |slope| = 2A / (period / 2) everywhere, peaks at ±A.
    slope = np.diff(tri[:, 1]) / np.diff(tri[:, 0])
    moving = np.abs(np.diff(tri[:, 0])) > 1e-7
    np.testing.assert_allclose(np.abs(slope[moving]), 0.08 / 0.05, rtol=1e-6, atol=0)
    assert tri[:, 1].max() == pytest.approx(0.04) and tri[:, 1].min() == pytest.approx(-0.04)


def test_paths_start_and_end_at_rest():
    path = arm_path("triangle_wave", 0.25, 0.2, duration=6.0, rate=1000.0)
    speed = np.linalg.norm(np.diff(path.xz, axis=0), axis=1) * 1000.0
    assert speed[0] < 1e-3 and speed[-1] < 1e-3 and speed.max() > 0.05


def test_unreachable_points_raise():
    with pytest.raises(BamError, match="outside the reachable ring"):
        inverse_kinematics(np.array([[0.5, 0.0]]), 0.25, 0.2)
    with pytest.raises(BamError, match="outside the reachable ring"):
        inverse_kinematics(np.array([[0.01, -0.02]]), 0.25, 0.2)  # inside the folded hole
    with pytest.raises(BamError, match="move or shrink the path"):
        arm_path("circle", 0.25, 0.2, shape=PathShape(center=(0.3, 0.0), size=0.2))


@pytest.mark.parametrize("kw,match", [
    ({"name": "spiral"}, "unknown arm path 'spiral'"),
    ({"l1": -0.1}, "link lengths must be finite and > 0"),
    ({"duration": 0.0}, "path timing must be positive"),
    ({"elbow": 0}, "elbow must be"),
])
def test_bad_arguments_raise(kw, match):
    args = {"name": "circle", "l1": 0.25, "l2": 0.2, **kw}
    with pytest.raises(BamError, match=match):
        arm_path(args.pop("name"), args.pop("l1"), args.pop("l2"), **args)
