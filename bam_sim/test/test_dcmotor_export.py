"""Export of identified servo models to MuJoCo's dcmotor actuator (mujoco_arm.dcmotor_export)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from bam_sim_cases import PENDULUM

from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo import laws as servo
from bam_sim.models.servo.actuator import C_MAX_DUTY, C_MAX_VOLTAGE, C_SUPPLY, CURRENT, VOLTAGE
from bam_sim.mujoco_arm.dcmotor_export import (
    GENERAL_LOSSES,
    ExportJoint,
    consts,
    dcmotor_settings,
    export_dcmotor,
    losses,
    main,
    write_dcmotor,
)
from bam_sim.mujoco_arm.paths import arm_path
from bam_sim.mujoco_arm.shipped_arms import arm_spec, load_arm
from bam_testing.dcmotor_versions import migrate_to_312


def _force(model, data, q, dq, goal):
    data.qpos[0], data.qvel[0], data.ctrl[0] = q, dq, goal
    if model.actuator_actnum[0]:  # an STS's target slew: its state at the goal already
        data.act[model.actuator_actadr[0]] = goal
    mujoco.mj_forward(model, data)
    return float(data.actuator_force[0])


def _grid():
    # Errors from tiny to far past the voltage clip, both velocity signs.
    errors = [0.0, 0.003, -0.02, 0.1, -0.4, 1.5, -3.0]
    velocities = [0.0, 0.5, -1.2, 3.0, -6.0]
    return [(0.3, dq, 0.3 + e) for e in errors for dq in velocities]


@pytest.mark.parametrize("actuator,gain,volts", [
    ("mx64", 32.0, None), ("mx106", 4.0, None), ("mx106", 16.0, 12.0),
    ("sts3215_12v", 32.0, None),  # the STS gain ratio (its target slew: the arm test below)
])
def test_dcmotor_torque_is_the_voltage_servo_law(actuator, gain, volts):
    params = published_named(actuator, "m1")
    result = export_dcmotor(PENDULUM, [ExportJoint("j", params, gain, volts)])
    model = mujoco.MjModel.from_xml_string(result.xml)
    data = mujoco.MjData(model)
    p, c = params.vector(), consts(params, volts)
    clipped = 0
    for q, dq, goal in _grid():
        want, control = servo.servo_torque(VOLTAGE, p, c, gain, q, dq, goal, True)
        clipped += abs(control) >= c[C_MAX_DUTY] * c[C_SUPPLY] - 1e-12
        assert _force(model, data, q, dq, goal) == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert 0 < clipped < len(_grid())  # both the linear and the duty-clipped regimes


@pytest.mark.parametrize("actuator,gain,ratio", [
    ("erob80_100", 25.0, None), ("erob80_50", 100.0, None), ("xl330_current", 400.0, None),
    ("xl330_current", 400.0, 1.6)])  # with the gain group's scale
def test_dcmotor_torque_is_the_current_servo_law_below_the_clip_order_speed(actuator, gain,
                                                                            ratio):
    params = published_named(actuator, "m1")
    if ratio is not None:
        params = params.replace(error_gain_ratio=ratio)
    result = export_dcmotor(PENDULUM, [ExportJoint("j", params, gain)])
    model = mujoco.MjModel.from_xml_string(result.xml)
    data = mujoco.MjData(model)
    p, c = params.vector(), consts(params)
    v = params.values
    bound = (c[C_MAX_VOLTAGE] + v["R"] * v["current_limit"]) / v["kt"]
    for q, dq, goal in _grid():
        assert abs(dq) < bound
        want, _ = servo.servo_torque(CURRENT, p, c, gain, q, dq, goal, True)
        assert _force(model, data, q, dq, goal) == pytest.approx(want, rel=1e-9, abs=1e-9)
    # Beyond the bound, a large error driving against the motion: (14)-(15)
    # end on the back-EMF limit, the dcmotor on its torque saturation k_t·I_heat.
    dq = 1.2 * bound
    want, _ = servo.servo_torque(CURRENT, p, c, gain, 0.0, dq, 3.0, True)
    got = _force(model, data, 0.0, dq, 3.0)
    assert want == pytest.approx(v["kt"] / v["R"] * (c[C_MAX_VOLTAGE] - v["kt"] * dq))
    assert got == pytest.approx(-v["kt"] * v["current_limit"])
    assert any(f"differ for |q̇| > {bound:.6g} rad/s" in line for line in result.losses)


def test_zero_gains_release_the_motor():
    params = published_named("mx64", "m1")
    model = mujoco.MjModel.from_xml_string(
        export_dcmotor(PENDULUM, [ExportJoint("j", params, 32.0)]).xml)
    data = mujoco.MjData(model)
    assert _force(model, data, 0.0, 2.0, 1.0) != 0.0
    model.actuator_gainprm[0, [4, 6]] = 0.0  # the GENERAL_LOSSES recipe for torque off
    assert _force(model, data, 0.0, 2.0, 1.0) == pytest.approx(0.0, abs=1e-12)
    assert any("torque off" in line for line in GENERAL_LOSSES)


def test_export_reads_back_with_the_parameters_and_keeps_the_layout():
    params = published_named("mx106", "m1")
    result = export_dcmotor(PENDULUM, [ExportJoint("j", params, 8.0)])
    model = mujoco.MjModel.from_xml_string(result.xml)
    v = params.values
    assert model.nu == 1 and mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, 0) == "m"
    assert model.actuator_gaintype[0] == mujoco.mjtGain.mjGAIN_DCMOTOR
    assert model.dof_armature[0] == pytest.approx(v["armature"])
    assert model.dof_damping[0] == pytest.approx(v["friction_viscous"])
    assert model.dof_frictionloss[0] == pytest.approx(v["friction_base"])
    assert model.dof_solref[0, 0] == pytest.approx(0.002)
    # gainprm: R, K, ..., kp, ki, kd, Vmax (MuJoCo 4 layout), torque-space kp.
    gp = model.actuator_gainprm[0]
    assert gp[0] == pytest.approx(v["R"]) and gp[1] == pytest.approx(v["kt"])
    assert gp[4] == pytest.approx(v["kt"] / v["R"] * 8.0 * 0.158 * 15.0)
    assert gp[6] == pytest.approx(v["kt"] ** 2 / v["R"]) and gp[7] == pytest.approx(0.9625 * 15)
    assert "<motor" not in result.xml and "a documented pendulum" in result.xml
    assert "lost in the export" in result.xml  # the note travels with the file
    data = mujoco.MjData(model)
    data.ctrl[0] = 1.0
    mujoco.mj_step(model, data, 2000)
    assert np.isfinite(data.qpos).all() and abs(data.qpos[0]) > 0.5


def test_loss_note_lists_every_parameter_beyond_m1():
    m6 = published_named("erob80_100", "m6")
    lines = losses(m6)
    beyond = [n for n in get_model("m6").params if n not in get_model("m1").params]
    assert len(beyond) == 9
    for name in beyond:
        assert sum(line.startswith(f"{name} = ") for line in lines) == 1
    assert any("m6 static budget at rest" in line for line in lines)
    assert not any(" = " in line for line in losses(published_named("mx64", "m1")))
    note = export_dcmotor(PENDULUM, [ExportJoint("j", m6)]).note()
    assert all(f"j: {name} = " in note for name in beyond)


def test_settings_use_the_second_table_gain_by_default():
    params = published_named("erob80_50", "m1")
    default = dcmotor_settings("j", params)
    assert default.kp == pytest.approx(params.values["kt"] * 25.0)
    assert default.torque_limit == pytest.approx(params.values["kt"] * 12.0)


@pytest.mark.parametrize("text,match", [
    (PENDULUM.replace('"j"', '"k"'), "has no joint 'j'; its joints are k"),
    (PENDULUM.replace('<motor name="m" joint="j"/>', '<position name="m" joint="j"/>'),
     "driven by a <position>"),
    (PENDULUM.replace('<motor name="m" joint="j"/>', '<motor name="m" joint="j" gear="5"/>'),
     "has gear 5"),
    (PENDULUM.replace("<mujoco", "<mojuco").replace("</mujoco>", "</mojuco>"),
     "MuJoCo cannot load"),
])
def test_bad_mjcf_raises(text, match):
    with pytest.raises(BamError, match=match):
        export_dcmotor(text, [ExportJoint("j", published_named("mx64", "m1"))])


def test_a_joint_without_motor_gets_a_dcmotor():
    text = PENDULUM.replace('<motor name="m" joint="j"/>', "")
    model = mujoco.MjModel.from_xml_string(
        export_dcmotor(text, [ExportJoint("j", published_named("mx64", "m1"))]).xml)
    assert model.nu == 1 and mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, 0) == "j"


def test_cli_writes_the_export_and_prints_the_note(tmp_path, capsys):
    source = tmp_path / "pendulum.xml"
    source.write_text(PENDULUM)
    params = save(published_named("mx64", "m4"), tmp_path / "mx64_m4.yaml")
    out = tmp_path / "out" / "pendulum_dcmotor.xml"
    assert main([str(source), "--joint", f"j={params}@16", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "j: load_friction_stribeck = " in printed and out.is_file()
    assert mujoco.MjModel.from_xml_path(str(out)).nu == 1
    assert main([str(source), "--joint", f"j={params}", "--output", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    with pytest.raises(BamError, match="already exists"):
        write_dcmotor(source, [ExportJoint("j", published_named("mx64", "m1"))], out)


def _exported_arm(name, model="m1", gains=None, mujoco_version="4"):
    spec = arm_spec(name)
    params = {j.joint: published_named(j.actuator, model) for j in spec.joints}
    gains = gains or [None] * len(spec.joints)
    result = export_dcmotor(spec.mjcf, [ExportJoint(j, p, g)
                                        for (j, p), g in zip(params.items(), gains)],
                            mujoco_version=mujoco_version)
    # MuJoCo 4 refuses the 3.11 convention: read it through 3.12's migration rule
    return spec, params, result, mujoco.MjModel.from_xml_string(migrate_to_312(result.xml))


@pytest.mark.parametrize("name", ["dynamixel", "erob"])
def test_exported_m1_arm_reaches_a_position_goal_and_holds_it_by_friction(name):
    spec, params, result, model = _exported_arm(
        name, gains=[p.actuator.gains[-1] for p in published_sets(name)])
    assert "vertical x-z plane" in result.xml  # the MJCF's own documentation is kept
    data = mujoco.MjData(model)
    goal = np.array([0.7, 1.0])
    data.ctrl[:] = goal
    mujoco.mj_step(model, data, 3000)
    assert np.abs(data.qvel).max() < 1e-4
    mujoco.mj_forward(model, data)
    error = goal - data.qpos
    kp, kd = (np.array([getattr(s, k) for s in result.settings]) for k in ("kp", "kd"))
    # At rest the P torque minus gravity stays inside the static friction (up to
    # the soft constraint), and the remaining error is what gravity and friction
    # allow a P controller: |e| <= (|gravity| + K_c) / kp.
    net = data.actuator_force - data.qfrc_bias
    assert np.all(np.abs(net) <= model.dof_frictionloss * (1 + 1e-4) + 1e-9)
    np.testing.assert_allclose(data.actuator_force, kp * error - kd * data.qvel, rtol=1e-9)
    assert np.all(np.abs(error) <= (np.abs(data.qfrc_bias) + model.dof_frictionloss) / kp * 1.001)
    assert np.all(np.abs(error) < 0.05)


@pytest.mark.parametrize("mujoco_version", ["4", "3.11"])
@pytest.mark.parametrize("name", ["dynamixel", "erob", "feetech"])
def test_exported_m1_arm_moves_like_the_servo_arm_with_m1(name, mujoco_version):
    # Independent implementations of the same physics: MuJoCo's dcmotor with
    # joint friction versus bam_sim.mujoco_arm.servo_arm's servo law in Python/numba with the M1
    # budget written to the joint every step.
    spec, params, _, model = _exported_arm(name, mujoco_version=mujoco_version)
    data = mujoco.MjData(model)
    arm = load_arm(name, params)
    path = arm_path("triangle_wave", *spec.link_lengths, duration=2.0, rate=1000.0)
    arm.reset(path.q[0])
    data.qpos[:] = path.q[0]
    slewed = model.actuator_actnum > 0  # STS: the target slew starts at the joint, as the arm's
    data.act[model.actuator_actadr[slewed]] = path.q[0][slewed]
    worst = 0.0
    for goal in path.q:
        arm.set_command(goals=goal)
        arm.step()
        data.ctrl[:] = goal
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.abs(arm.state().q - data.qpos).max()))
    assert np.abs(data.qpos - path.q[0]).max() > 0.1  # it did move
    assert worst < 1e-5


def published_sets(name):
    return [published_named(j.actuator, "m1") for j in arm_spec(name).joints]


def test_loss_note_names_the_sag_the_delays_and_the_sts_slew():
    params = published_named("sts3215", "m1").replace(**{"supply.resistance": 0.4,
                                                   "latency.command": 0.004})
    lines = losses(params)
    assert any(line.startswith("supply.resistance = 0.4 Ω") for line in lines)
    assert any(line.startswith("latency.command = 0.004 s") for line in lines)
    assert any("slewmax" in line and "data.act" in line for line in lines)
    assert not any("latency" in line or "supply" in line
                   for line in losses(published_named("sts3215", "m1")))
