"""MuJoCo stepped from the servo kernel: the same arm, to the last bit, as from Python.

:mod:`bam_sim.mujoco_arm.native_step` finds ``mj_step`` and the constraint rows of
``mjData`` for a kernel; ServoArm steps through it where it is found and from Python
otherwise. Both paths run here on one arm and must agree exactly: positions,
velocities and every joint's τ_e, which reads the constraint rows (a limit row beside the
friction rows, so a row read at the wrong place shows).
"""

from __future__ import annotations

import mujoco
import numba as nb
import numpy as np
import pytest
from test_arm_core import mixed_arm

from bam_sim.common.errors import BamError
from bam_sim.mujoco_arm.native_step import constraint_rows, native_step, unowned
from bam_sim.mujoco_arm.shipped_arms import ARMS, load_arm


def test_the_pinned_mujoco_is_stepped_from_the_kernel():
    """Found on the MuJoCo of requirements.lock: an upgrade that moves mjData's fields
    must be noticed here, not as a fit twice as slow."""
    assert native_step() is not None


def test_the_kernel_reads_the_rows_the_bindings_show():
    arm = mixed_arm()
    arm.set_command(goals={"j2": 3.0}, gains={"j2": 100.0})  # j2 into its limit
    arm.step(400)
    d = arm.data
    assert mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT in d.efc_type  # a limit row too
    for ours, theirs in zip(constraint_rows(native_step(), d._address),
                            (d.efc_type, d.efc_id, d.efc_force), strict=True):
        np.testing.assert_array_equal(ours, theirs)


@nb.njit
def _write_through_unowned(array):
    view = unowned(array)
    for i in range(view.shape[0]):
        for j in range(view.shape[1]):
            view[i, j] = 10.0 * i + j
    return view.shape[0], view.shape[1], view.strides[0], view.strides[1]


def test_an_unowned_view_is_the_array_itself():
    """The kernel's arrays without their owner: the same memory, shape and strides (a
    strided view of a larger array, as MjData's fields are)."""
    base = np.zeros((6, 8))
    view = base[1:5, ::2]
    assert _write_through_unowned(view) == (*view.shape, *view.strides)
    np.testing.assert_array_equal(view, 10.0 * np.arange(4)[:, None] + np.arange(4))
    assert np.count_nonzero(base) == view.size - 1  # nothing written outside the view


def _run(make, native: bool) -> np.ndarray:
    """(q, q̇, τ_e) after each of 60 commands, the arm stepped natively or from Python."""
    arm = make()
    if not native:
        arm._native = None
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(60):
        arm.set_command(goals=rng.uniform(-1.5, 1.5, arm.n_joints))
        arm.step(int(rng.integers(1, 25)))
        rows.append(np.concatenate([arm.state().q, arm.state().dq, arm.external_torque]))
    return np.array(rows)


ARMS_TO_STEP = {"mixed (limit, gear, passive joints)": mixed_arm,
                **{name: (lambda name=name, **kw: load_arm(name, **kw)) for name in ARMS}}


@pytest.mark.parametrize("integrator", ["euler", "identification"])
@pytest.mark.parametrize("arm", list(ARMS_TO_STEP))
def test_native_and_python_steps_move_the_arm_alike(arm, integrator):
    def make():
        return ARMS_TO_STEP[arm](identification_integrator=integrator == "identification")

    np.testing.assert_array_equal(_run(make, True), _run(make, False))


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_follow_is_set_command_then_step_per_row(native):
    """A whole recording in one call: the positions of commanding row by row."""
    rng = np.random.default_rng(5)
    goals, counts = rng.uniform(-1.0, 1.0, (40, 3)), rng.integers(0, 20, 40)
    enables = rng.uniform(size=(40, 3)) > 0.2
    arm, by_rows = mixed_arm(identification_integrator=True), []
    by_rows.append(arm.positions.copy())
    for goal, enable, count in zip(goals, enables, counts, strict=True):
        arm.set_command(goals=goal, torque_enables=enable.astype(float))
        arm.step(int(count))
        by_rows.append(arm.positions.copy())
    arm = mixed_arm(identification_integrator=True)
    if not native:
        arm._native = None
    np.testing.assert_array_equal(arm.follow(goals, enables, counts), np.array(by_rows))


@pytest.mark.parametrize("goals, counts, message", [
    (np.zeros((4, 2)), np.ones(4, int), r"goals and enables \(4, 3\)"),
    (np.zeros((4, 3)), -np.ones(4, int), "counts >= 0"),
    (np.full((4, 3), np.nan), np.ones(4, int), "non-finite"),
])
def test_follow_refuses_what_it_cannot_follow(goals, counts, message):
    with pytest.raises(BamError, match=message):
        mixed_arm().follow(goals, np.ones((4, 3), bool), counts)
