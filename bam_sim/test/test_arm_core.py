"""ServoArm and the shipped arms: loading, input validation, the per-step update.

The per-step update is checked against independent computations: τ_e against
MuJoCo's own bias forces of the previous state evaluated on a separate MjData,
the friction written to the model against bam_sim.models.bam.friction for each joint's
own model, the motor force against the servo output reported before the step.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import friction_budget
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
from bam_sim.mujoco_arm.shipped_arms import ARMS, arm_spec, load_arm, models_dir, pendulum_mjcf

# A horizontal-plane chain with three servo joints of different actuators and
# models, a non-servo hinge, a slide joint, a motor with gear 2 and a limited
# elbow; the servo joints are listed to ServoArm in another order than the MJCF's.
MIXED = """
<mujoco>
  <option timestep="0.001" integrator="Euler"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="a">
      <joint name="slide" type="slide" axis="0 1 0"/>
      <geom type="sphere" size="0.02" mass="0.2"/>
      <body name="b">
        <joint name="j1" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="0.3"/>
        <body name="c" pos="0.2 0 0">
          <joint name="passive" type="hinge" axis="0 0 1" damping="0.01"/>
          <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.1"/>
          <body name="d" pos="0.1 0 0">
            <joint name="j2" type="hinge" axis="0 0 1" limited="true" range="-1 1"/>
            <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="2.0"/>
            <body name="e" pos="0.3 0 0">
              <joint name="j3" type="hinge" axis="0 1 0"/>
              <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.01" mass="0.2"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m1" joint="j1" gear="2"/>
    <motor name="m3" joint="j3"/>
    <motor name="m2" joint="j2"/>
    <position name="servo_pos" joint="passive" kp="1"/>
    <motor name="slide_motor" joint="slide"/>
  </actuator>
</mujoco>
"""
MIXED_JOINTS = (
    ArmJoint("j3", "m3", published_named("mx64", "m1")),
    ArmJoint("j1", "m1", published_named("mx106", "m4")),
    ArmJoint("j2", "m2", published_named("erob80_50", "m6"), supply_voltage=40.0),
)


def mixed_arm(**kw) -> ServoArm:
    return ServoArm(mujoco.MjModel.from_xml_string(MIXED), MIXED_JOINTS, **kw)


def bias_forces(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
    """qfrc_bias (gravity + Coriolis) at a state, on a fresh MjData."""
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, data)
    return data.qfrc_bias.copy()


def dofs(arm: ServoArm) -> np.ndarray:
    return np.array([arm.model.jnt_dofadr[arm.model.joint(n).id] for n in arm.names])


# -- the shipped arms ------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ARMS))
def test_arm_core_shipped_arm_loads_and_tracks_goals(name: str) -> None:
    spec = arm_spec(name)
    assert spec.mjcf.is_file() and spec.mjcf.parent == models_dir()
    arm = load_arm(name)
    assert arm.names == ("shoulder", "elbow") and arm.dt == 0.001
    assert arm.model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    for i, j in enumerate(spec.joints):
        assert arm.joints[i].params.actuator.name == j.actuator
        assert arm.joints[i].params.model.name == j.model
        assert arm.model.dof_armature[dofs(arm)[i]] == arm.joints[i].params.values["armature"]
    arm.set_command(goals=[0.8, -0.6], gains=[g * 2 for g in arm.state().gain])
    arm.step(3000)
    state = arm.state()
    assert arm.time == pytest.approx(3.0)
    # A P-controlled servo under gravity settles near, not at, its goal.
    assert np.all(np.abs(state.q - state.goal) < 0.15)
    assert np.all(np.abs(state.dq) < 0.05)


@pytest.mark.parametrize("name", list(ARMS))
def test_arm_core_tip_site_matches_documented_kinematics(name: str) -> None:
    spec = arm_spec(name)
    arm = load_arm(name)
    l1, l2 = spec.link_lengths
    rng = np.random.default_rng(4)
    for q1, q2 in rng.uniform(-2.5, 2.5, size=(5, 2)):
        arm.data.qpos[[arm.model.joint("shoulder").qposadr[0],
                       arm.model.joint("elbow").qposadr[0]]] = q1, q2
        mujoco.mj_kinematics(arm.model, arm.data)
        x, _, z = arm.data.site("tip").xpos
        assert x == pytest.approx(l1 * math.sin(q1) + l2 * math.sin(q1 + q2), abs=1e-12)
        assert z == pytest.approx(spec.shoulder_height - l1 * math.cos(q1)
                                  - l2 * math.cos(q1 + q2), abs=1e-12)


def test_arm_core_load_arm_reads_parameter_files(tmp_path) -> None:
    path = save(published_named("mx64", "m1"), tmp_path / "elbow.yaml")
    arm = load_arm("dynamixel", {"elbow": str(path)})
    assert arm.joints[1].params.model.name == "m1"
    assert arm.joints[0].params == published_named("mx106", "m4")


# -- the per-step update ---------------------------------------------------------------

@pytest.mark.parametrize("name", list(ARMS))
def test_arm_core_external_torque_is_bias_of_previous_state(name: str) -> None:
    """No constraint but friction: τ_e = −qfrc_bias of the state one step back."""
    arm = load_arm(name)
    arm.reset([0.4, -0.3])
    arm.set_command(goals=[1.2, 0.5])
    speeds = []
    for _ in range(8):
        arm.step(23)
        qpos, qvel = arm.data.qpos.copy(), arm.data.qvel.copy()
        speeds.append(np.abs(qvel).max())
        arm.step(2)
        expected = -bias_forces(arm.model, qpos, qvel)[dofs(arm)]
        np.testing.assert_allclose(arm.external_torque, expected, rtol=1e-9, atol=1e-12)
    assert max(speeds) > 0.5  # checked while moving: Coriolis terms matter


def test_arm_core_external_torque_includes_limits_not_own_friction() -> None:
    """The limit row's force is part of τ_e; the joint's own friction row is not."""
    arm = mixed_arm()
    arm.set_command(goals={"j2": 3.0}, gains={"j2": 100.0})  # push j2 into its limit
    arm.step(400)
    d = arm.data
    limit = [r for r in range(d.nefc)
             if d.efc_type[r] == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT]
    assert limit, "j2 should sit on its limit"
    qpos, qvel = d.qpos.copy(), d.qvel.copy()
    # Generalized force of the limit row alone: J^T of a vector holding only its force.
    only_limit = np.zeros(d.nefc)
    only_limit[limit[0]] = d.efc_force[limit[0]]
    limit_force = np.zeros(arm.model.nv)
    mujoco.mj_mulJacTVec(arm.model, d, limit_force, only_limit)
    dof = arm.model.joint("j2").dofadr[0]
    limit_force, constraint = limit_force[dof], d.qfrc_constraint[dof]
    arm.step(1)
    expected = -bias_forces(arm.model, qpos, qvel)[dof] + limit_force
    assert limit_force < -1.0  # the upper limit pushes back against the motor
    assert abs(constraint - limit_force) > 1e-3  # friction is in qfrc_constraint ...
    assert arm.external_torque[arm.names.index("j2")] == pytest.approx(expected, rel=1e-9)


def test_arm_core_mixed_joints_each_follow_their_own_model() -> None:
    arm = mixed_arm()
    assert arm.names == ("j3", "j1", "j2")
    dof = dofs(arm)
    m, d = arm.model, arm.data
    for i, joint in enumerate(MIXED_JOINTS):
        assert m.dof_armature[dof[i]] == joint.params.values["armature"]
    arm.set_command(goals=[0.5, -0.7, 0.4])
    rng = np.random.default_rng(1)
    for _ in range(20):
        arm.step(int(rng.integers(1, 40)))
        before = arm.state()
        arm.step(1)
        tau_e, budget = arm.external_torque, arm.friction_budget
        # Joint torque of each motor (m1 has gear 2: ctrl = τ_m/2).
        np.testing.assert_allclose(d.qfrc_actuator[dof], before.motor_torque, rtol=1e-12,
                                   atol=1e-12)
        for i, joint in enumerate(MIXED_JOINTS):
            p = joint.params.vector()
            expected = friction_budget(joint.params.model_id, p, before.motor_torque[i],
                                       tau_e[i], before.dq[i])
            assert budget[i] == pytest.approx(expected, rel=1e-12)
            assert m.dof_damping[dof[i]] == p[P.KV]
            # The budget less the damping: MuJoCo's friction row, or, where the joint surely
            # slides, the row's force applied (against the motion, the row then 0).
            row, applied = m.dof_frictionloss[dof[i]], d.qfrc_applied[dof[i]]
            assert row == 0.0 or applied == 0.0
            assert applied * before.dq[i] <= 0.0
            assert row + abs(applied) == pytest.approx(
                expected - p[P.KV] * abs(before.dq[i]), rel=1e-12, abs=1e-15)
    # The non-servo joints keep their MJCF settings.
    assert m.dof_damping[m.joint("passive").dofadr[0]] == 0.01
    assert m.dof_frictionloss[m.joint("slide").dofadr[0]] == 0.0


def test_arm_core_supply_voltage_sets_the_voltage_limit() -> None:
    """A Dynamixel at full duty: τ_m at rest = k_t/R·duty_max·V_in."""
    for volts in (12.0, 15.0):
        arm2 = ServoArm(mujoco.MjModel.from_xml_string(MIXED),
                        [ArmJoint("j3", "m3", published_named("mx64", "m1"), supply_voltage=volts)])
        arm2.set_command(goals=[3.0], gains=[100.0])
        p = published_named("mx64", "m1").values
        act = published_named("mx64", "m1").actuator
        assert arm2.state().motor_torque[0] == pytest.approx(
            p["kt"] / p["R"] * act.max_duty * volts)
        assert arm2.state().control[0] == pytest.approx(act.max_duty * volts)


def test_arm_core_torque_disabled_gives_no_motor_torque() -> None:
    arm = mixed_arm()
    arm.set_command(goals=[1.0, 1.0, 1.0])
    arm.step(50)
    arm.set_command(torque_enables={"j1": False})
    state = arm.state()
    assert state.torque_enable.tolist() == [True, False, True]
    assert state.motor_torque[1] == 0.0 and state.control[1] == 0.0
    assert state.motor_torque[0] != 0.0
    arm.step(1)
    assert arm.data.actuator_force[arm.model.actuator("m1").id] == 0.0


def test_arm_core_default_and_partial_gains() -> None:
    # Table I's second gain: 8 for the Dynamixels, 25 for the eRobs.
    assert mixed_arm().state().gain.tolist() == [8.0, 8.0, 25.0]
    assert mixed_arm(gains={"j2": 50.0}).state().gain.tolist() == [8.0, 8.0, 50.0]
    assert mixed_arm(gains=4.0).state().gain.tolist() == [4.0, 4.0, 4.0]


def test_arm_core_reset_sets_goals_and_time() -> None:
    arm = mixed_arm()
    arm.step(10)
    arm.reset([0.1, 0.2, 0.3], dq=[0.0, 0.5, 0.0])
    state = arm.state()
    assert arm.time == 0.0
    np.testing.assert_array_equal(state.q, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(state.goal, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(state.dq, [0.0, 0.5, 0.0])


def test_arm_core_pendulum_mjcf_matches_bench_inertia() -> None:
    bench = Bench(1.2, 0.17, arm_mass=0.3)
    params = published_named("mx64", "m1")
    arm = ServoArm(mujoco.MjModel.from_xml_string(pendulum_mjcf(bench)),
                   [ArmJoint("pendulum", "pendulum", params)])
    arm.reset([0.7])
    mass_matrix = np.zeros((1, 1))
    mujoco.mj_fullM(arm.model, arm.data, mass_matrix)
    assert mass_matrix[0, 0] == pytest.approx(bench.inertia(params.values["armature"]),
                                              rel=1e-9)
    assert -arm.data.qfrc_bias[0] == pytest.approx(bench.external_torque(0.7), rel=1e-9)


# -- validation ------------------------------------------------------------------------

def _mixed_with(joints) -> ServoArm:
    return ServoArm(mujoco.MjModel.from_xml_string(MIXED), joints)


P64 = published_named("mx64", "m1")


@pytest.mark.parametrize("joints, message", [
    ([ArmJoint("nope", "m1", P64)], "joint 'nope' is not in the MJCF"),
    ([ArmJoint("slide", "slide_motor", P64)], "servo joints must be hinges"),
    ([ArmJoint("j1", "nope", P64)], "actuator 'nope' is not in the MJCF"),
    ([ArmJoint("j1", "m2", P64)], "must be a <motor joint=\"j1\"/>"),
    ([ArmJoint("passive", "servo_pos", P64)], "must be a <motor joint=\"passive\"/>"),
    ([ArmJoint("j1", "m1", P64), ArmJoint("j1", "m1", P64)], "joint 'j1' is given twice"),
    ([ArmJoint("j1", "m1", {"kt": 1.0})], "params must be a ParameterSet"),
    ([ArmJoint("j1", "m1", P64, supply_voltage=-1.0)], "supply_voltage must be > 0"),
    ([], "non-empty"),
])
def test_arm_core_rejects_bad_joints(joints, message: str) -> None:
    with pytest.raises(BamError, match=message.replace("(", r"\(")) as info:
        _mixed_with(joints)
    assert "\n" not in str(info.value)


def test_arm_core_rejects_clipping_motor() -> None:
    xml = MIXED.replace('<motor name="m1" joint="j1" gear="2"/>',
                        '<motor name="m1" joint="j1" ctrlrange="-1 1"/>')
    with pytest.raises(BamError, match="ctrlrange or forcerange"):
        ServoArm(mujoco.MjModel.from_xml_string(xml), [ArmJoint("j1", "m1", P64)])


@pytest.mark.parametrize("kwargs, message", [
    ({"goals": [0.0, math.nan, 0.0]}, "non-finite"),
    ({"goals": [0.0, 1.0]}, "needs 3 values"),
    ({"goals": {"j9": 1.0}}, "unknown joint 'j9'"),
    ({"goals": "up"}, "must be numbers"),
    ({"gains": -1.0}, "gains must be >= 0"),
    ({"torque_enables": [True, None, False]}, "non-finite"),
])
def test_arm_core_rejects_bad_commands(kwargs, message: str) -> None:
    arm = mixed_arm()
    before = arm.state()
    with pytest.raises(BamError, match=message):
        arm.set_command(**kwargs)
    after = arm.state()  # nothing changed
    np.testing.assert_array_equal(before.goal, after.goal)
    np.testing.assert_array_equal(before.gain, after.gain)


def test_arm_core_rejects_bad_arm_names_and_files(tmp_path) -> None:
    with pytest.raises(BamError, match="unknown arm 'ur5'; choose one of dynamixel, erob"):
        arm_spec("ur5")
    with pytest.raises(BamError, match="unknown arm"):
        load_arm("ur5")
    with pytest.raises(BamError, match="no joint 'wrist'"):
        load_arm("dynamixel", {"wrist": P64})
    with pytest.raises(BamError, match="is an mx106; the parameter set given is for mx64"):
        load_arm("dynamixel", {"shoulder": P64})
    with pytest.raises(BamError, match="does not exist"):
        ServoArm.from_mjcf(tmp_path / "missing.xml", [ArmJoint("j1", "m1", P64)])
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(BamError, match="MuJoCo cannot load") as info:
        ServoArm.from_mjcf(broken, [ArmJoint("j1", "m1", P64)])
    assert "\n" not in str(info.value)
    with pytest.raises(BamError, match="give params"):
        load_arm(broken)
    mixed = tmp_path / "mixed.xml"
    mixed.write_text(MIXED)
    with pytest.raises(BamError, match="actuator 'j1' is not in the MJCF"):
        load_arm(mixed, {"j1": P64})
    with pytest.raises(BamError, match="mass \\+ arm_mass > 0"):
        pendulum_mjcf(Bench(0.0, 0.1))
