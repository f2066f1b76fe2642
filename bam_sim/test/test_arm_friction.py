"""Friction of ServoArm joints holds a static load inside the budget and releases it outside.

Tolerance of "static". MuJoCo's friction constraint is soft: at rest under a
net generalized force τ within the budget a joint creeps at
q̇ = (1 − d)·Δt·w0·τ, d the impedance (``dof_solimp[:, 0]``, 0.9999 with
ServoArm's stiff settings) and w0 = ``dof_invweight0`` (see the bam_sim.mujoco_arm.servo_arm
docstring; the derivation holds row by row for several stuck joints, because
MuJoCo's regularisation is diagonal). Over T seconds the displacement must
stay below that creep times T (with a 1.5 margin); it is a few µrad here,
against ~0.1 rad of motion when the load exceeds the budget.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import published_named
from bam_sim.mujoco_arm.servo_arm import (
    W_SLIDE,
    W_SLIDE_FLOOR,
    W_SLIDE_MISSES,
    ArmJoint,
    ServoArm,
)
from bam_sim.mujoco_arm.shipped_arms import load_arm, pendulum_mjcf

BENCHES = {"mx64": Bench(1.0, 0.15), "erob80_100": Bench(8.2, 0.5)}
HOLD_TIME = 2.0  # s


def pendulum(actuator: str, model: str = "m1") -> tuple[ServoArm, Bench]:
    bench = BENCHES[actuator]
    arm = ServoArm(mujoco.MjModel.from_xml_string(pendulum_mjcf(bench)),
                   [ArmJoint("pendulum", "pendulum", published_named(actuator, model))])
    return arm, bench


def creep_bound(arm: ServoArm, load: np.ndarray, duration: float) -> np.ndarray:
    """1.5 × the soft-constraint creep (1 − d)·Δt·w0·|τ| over ``duration`` (rad)."""
    dofs = [arm.model.jnt_dofadr[arm.model.joint(name).id] for name in arm.names]
    d = arm.model.dof_solimp[dofs, 0]
    w0 = arm.model.dof_invweight0[dofs]
    return 1.5 * (1.0 - d) * arm.dt * w0 * np.abs(load) * duration


@pytest.mark.parametrize("fraction", [0.5, 0.99])
@pytest.mark.parametrize("actuator", list(BENCHES))
def test_arm_friction_holds_unpowered_pendulum_inside_budget(actuator: str,
                                                            fraction: float) -> None:
    arm, bench = pendulum(actuator)
    kc = arm.joints[0].params.values["friction_base"]  # M1 at rest, τ_m = 0: budget K_c
    q0 = math.asin(fraction * kc / bench.gravity_torque)
    arm.set_command(torque_enables=False)
    arm.reset([q0])
    arm.step(int(HOLD_TIME / arm.dt))
    moved = abs(arm.state().q[0] - q0)
    bound = creep_bound(arm, np.array([fraction * kc]), HOLD_TIME)[0]
    assert bound < 2e-6  # the documented tolerance is tiny ...
    assert moved <= bound  # ... and the joint stays inside it
    assert arm.friction_budget[0] == pytest.approx(kc)
    # τ_e is the gravity torque (of the state one step back: 1e-4 covers the creep).
    assert arm.external_torque[0] == pytest.approx(-bench.gravity_torque * math.sin(q0),
                                                   rel=1e-4)


@pytest.mark.parametrize("actuator", list(BENCHES))
def test_arm_friction_releases_unpowered_pendulum_above_budget(actuator: str) -> None:
    """Load 2·K_c: the joint starts at q̈ = (|τ_e| − K_c)/J (closed form, first 20 ms).

    After N steps of semi-implicit Euler at constant q̈ the displacement is
    q̈·Δt²·N(N + 1)/2. Viscous friction slows it (measured −0.4 % on the MX-64,
    −2.1 % on the eRob80:100, K_v = 8.4 N·m·s/rad), gravity changes little
    over 20 ms: 3 % tolerance.
    """
    arm, bench = pendulum(actuator)
    params = arm.joints[0].params.values
    kc = params["friction_base"]
    q0 = math.asin(2.0 * kc / bench.gravity_torque)
    arm.set_command(torque_enables=False)
    arm.reset([q0])
    n = 20
    arm.step(n)
    expected = -kc / bench.inertia(params["armature"]) * arm.dt**2 * n * (n + 1) / 2
    assert arm.state().q[0] - q0 == pytest.approx(expected, rel=0.03)
    arm.step(500)
    assert q0 - arm.state().q[0] > 0.02  # it keeps falling


@pytest.mark.parametrize("actuator", list(BENCHES))
def test_arm_friction_holds_powered_joint_against_applied_load(actuator: str) -> None:
    """Torque on, goal = position (τ_m = 0 at rest), a user torque on the hanging
    pendulum (no gravity torque at q = 0): held below K_c, pushed away above it."""
    kc = published_named(actuator, "m1").values["friction_base"]
    for fraction, held in ((0.9, True), (1.5, False)):
        arm, _ = pendulum(actuator)
        arm.reset([0.0])
        arm.data.qfrc_applied[0] = fraction * kc
        mujoco.mj_forward(arm.model, arm.data)
        arm.step(int(HOLD_TIME / arm.dt))
        moved = abs(arm.state().q[0])
        bound = creep_bound(arm, np.array([fraction * kc]), HOLD_TIME)[0]
        if held:
            assert arm.external_torque[0] == pytest.approx(fraction * kc, rel=1e-4)
            assert moved <= bound
        else:
            assert moved > 1e-3 > 100 * bound


def test_arm_friction_holds_and_releases_dynamixel_arm() -> None:
    """Both joints unpowered with their M4 budgets (load-dependent, Stribeck at rest)."""
    for q, held in (((0.1, 0.3), True), ((0.6, 0.6), False)):
        arm = load_arm("dynamixel")
        arm.set_command(torque_enables=False)
        arm.reset(q)
        arm.step(1)
        load, budget = arm.external_torque, arm.friction_budget
        for i, name in enumerate(arm.names):
            p = arm.joints[i].params.vector()
            # At rest with τ_m = 0, M4 is K_c + K_c^s + (K_l + K_l^s)·|τ_e|.
            static = (p[P.KC] + p[P.KCS] + (p[P.KL] + p[P.KLS]) * abs(load[i]))
            assert budget[i] == pytest.approx(static, rel=1e-6), name
        inside = np.abs(load) < budget
        assert inside.all() == held  # the chosen poses really are inside / outside
        arm.step(int(HOLD_TIME / arm.dt))
        moved = np.abs(arm.state().q - np.array(q))
        if held:
            assert np.all(moved <= creep_bound(arm, load, HOLD_TIME))
        else:
            assert moved.max() > 0.1


@pytest.mark.parametrize("arm_name", ["dynamixel", "feetech"])
def test_arm_friction_of_sliding_joints_applied_is_the_row_to_rounding(arm_name: str) -> None:
    """A joint that surely slides gets its friction row's force applied instead of the row
    (servo_arm._slide): the arm moves as with the rows kept, to rounding, while most of the
    joint-steps leave the constraint solve and no guess of the sign turned out wrong."""
    arms = [load_arm(arm_name) for _ in range(2)]
    arms[1]._work[:, W_SLIDE_FLOOR] = np.inf  # the rows always
    rng = np.random.default_rng(7)
    slid = steps = 0
    for goals, count in zip(rng.uniform(-0.8, 0.8, (40, 2)), rng.integers(5, 80, 40),
                            strict=True):
        for arm in arms:
            arm.set_command(goals=goals)
        for _ in range(count):
            for arm in arms:
                arm.step(1)
            slid += int((arms[0]._work[:, W_SLIDE] == 1.0).sum())
            steps += 2
        np.testing.assert_allclose(arms[0].positions, arms[1].positions, rtol=0, atol=1e-12)
    assert arms[0]._work[:, W_SLIDE_MISSES].sum() == 0
    assert (arms[1]._work[:, W_SLIDE] != 1.0).all()
    assert slid > 0.5 * steps
