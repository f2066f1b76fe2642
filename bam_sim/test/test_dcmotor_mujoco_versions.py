"""The dcmotor export in both MuJoCo conventions (3.11 and 4), and its native command delay.

Only MuJoCo 4 is installed here: it loads the export written for it; the one
written for 3.11 (which MuJoCo 4 refuses) is held to its structure and gains,
and read through MuJoCo 3.12.0's migration rule. The motion of the 3.11 file in
MuJoCo 3.11 itself is compared in ``benchmarks/mujoco_versions.py``.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from bam_sim_cases import PENDULUM

from bam_sim.bench.latency import delayed_command
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.dcmotor_export import (
    MUJOCO_VERSIONS,
    ExportJoint,
    export_dcmotor,
    losses,
    torque_space_gains,
    voltage_space_gains,
)
from bam_testing.dcmotor_versions import controller, dcmotors, migrate_to_312

DT = 0.001


def family_set() -> ParameterSet:
    return ParameterSet.from_names("dcmotor", "m1", {
        "resistance": 2.0, "motorconst": 0.4, "armature": 0.01, "friction_base": 0.02,
        "friction_viscous": 0.01, "controller.kd": 0.2, "controller.ki": 2.0,
        "controller.Imax": 0.3, "controller.slewmax": 6.0, "controller.Vmax": 14.0})


SETS = {"voltage law": lambda: published_named("mx64", "m1"),
        "current law": lambda: published_named("erob80_50", "m1"),
        "sts gain ratio and slew": lambda: published_named("sts3215", "m1"),
        "dcmotor family": family_set}


def test_gain_conversion_is_the_312_changelog_migration() -> None:
    # MuJoCo 3.12.0 changelog, Actuation, item 5 (breaking, commit 2f1843f4): from
    # voltage-space to torque-space gains, multiply kp, ki, kd by K/R, then add K²/R
    # to the converted kd.  R = 2.5 Ω, K = 0.5 N·m/A: K/R = 0.2, K²/R = 0.1.
    kp, ki, kd = torque_space_gains(10.0, 3.0, 0.2, 2.5, 0.5)
    assert kp == pytest.approx(2.0, rel=1e-15)
    assert ki == pytest.approx(0.6, rel=1e-15)
    assert kd == pytest.approx(0.2 * 0.2 + 0.1, rel=1e-15)
    back = voltage_space_gains(kp, ki, kd, 2.5, 0.5)
    np.testing.assert_allclose(back, (10.0, 3.0, 0.2), rtol=1e-14)
    # the voltage law's back-EMF brake, kd = K²/R, is no controller damping before 3.12
    assert voltage_space_gains(1.0, 0.0, 0.5 * 0.5 / 2.5, 2.5, 0.5)[2] == 0.0


def test_both_conventions_drive_the_same_voltage() -> None:
    # 3.11: v = kp_V e + ki_V x − kd_V θ̇;  >= 3.12: v = R/K (kp e + ki x − kd θ̇) + K θ̇
    # (the XML references of both versions): equal for every state.
    r, k, torque_gains = 3.1, 1.6, (7.0, 2.0, 0.9)
    volt_gains = voltage_space_gains(*torque_gains, r, k)
    rng = np.random.default_rng(25)
    for e, x, w in rng.normal(size=(20, 3)) * 3.0:
        new = r / k * (torque_gains[0] * e + torque_gains[1] * x - torque_gains[2] * w) + k * w
        old = volt_gains[0] * e + volt_gains[1] * x - volt_gains[2] * w
        assert old == pytest.approx(new, rel=1e-12, abs=1e-12)


def _exports(params: ParameterSet) -> dict[str, str]:
    return {v: export_dcmotor(PENDULUM, [ExportJoint("j", params)], mujoco_version=v).xml
            for v in MUJOCO_VERSIONS}


@pytest.mark.parametrize("name", list(SETS))
def test_the_4_file_loads_and_the_311_file_is_its_pre_312_form(name: str) -> None:
    params = SETS[name]()
    xml = _exports(params)
    model = mujoco.MjModel.from_xml_string(xml["4"])  # loads in the MuJoCo installed here
    # MuJoCo 4 no longer accepts the 3.11 keyword: the 3.11 file is checked as XML
    with pytest.raises(ValueError, match="invalid keyword"):
        mujoco.MjModel.from_xml_string(xml["3.11"])
    (old,), (new,) = dcmotors(xml["3.11"]), dcmotors(xml["4"])
    assert (old.pop("input"), new.pop("input")) == ("position", "pos")
    gains_old, gains_new = controller(old), controller(new)
    old.pop("controller"), new.pop("controller")
    assert old == new  # every other attribute is the same text
    r, k = float(new["resistance"]), float(new["motorconst"])
    assert gains_old[:3] == list(voltage_space_gains(*gains_new[:3], r, k))
    assert gains_old[3:] == gains_new[3:]  # slewmax, Imax, Vmax keep their units
    # read by 3.12's migration rule, the 3.11 file is the 4 file's model
    migrated = mujoco.MjModel.from_xml_string(migrate_to_312(xml["3.11"]))
    np.testing.assert_allclose(migrated.actuator_gainprm, model.actuator_gainprm,
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(migrated.actuator_dynprm, model.actuator_dynprm)


def test_bad_mujoco_version_is_refused() -> None:
    with pytest.raises(BamError, match="give 3.11 or 4"):
        export_dcmotor(PENDULUM, [ExportJoint("j", published_named("mx64", "m1"))],
                       mujoco_version="3.12")


@pytest.mark.parametrize("version", MUJOCO_VERSIONS)
def test_latency_is_the_native_delay_read_back_as_fitted(version: str) -> None:
    latency = 0.0042  # s, 4.2 steps
    params = published_named("mx64", "m1").replace(**{"latency.command": latency})
    xml = export_dcmotor(PENDULUM, [ExportJoint("j", params)], mujoco_version=version).xml
    (motor,) = dcmotors(xml)
    assert float(motor["delay"]) == latency and motor["interp"] == "linear"
    assert int(motor["nsample"]) * DT >= latency
    model = mujoco.MjModel.from_xml_string(migrate_to_312(xml))
    assert model.actuator_delay[0] == latency  # what MuJoCo 4 reads is the fitted value
    assert model.actuator_history[0, 0] == int(motor["nsample"])
    assert "no dcmotor counterpart" not in xml and "native delay" in xml


def test_no_latency_no_delay_and_a_sub_step_latency_is_said() -> None:
    (motor,) = dcmotors(_exports(published_named("mx64", "m1"))["4"])
    assert "delay" not in motor and "nsample" not in motor
    short = published_named("mx64", "m1").replace(**{"latency.command": 0.0004,
                                               "latency.reading": 0.002})
    lines = losses(short, DT)
    assert any("below the timestep" in line for line in lines)
    assert any(line.startswith("latency.reading = 0.002 s") for line in lines)


@pytest.mark.parametrize("ticks", [3.0, 12.5])
def test_native_delay_moves_like_the_rollouts_delayed_command(ticks: float) -> None:
    # MuJoCo's history read at t − L (linear) against the undelayed export fed the
    # rollouts' delayed command (bam_sim.bench.latency.delayed_command).
    base = published_named("mx64", "m1")
    delayed = mujoco.MjModel.from_xml_string(export_dcmotor(
        PENDULUM, [ExportJoint("j", base.replace(**{"latency.command": ticks * DT}))]).xml)
    plain = mujoco.MjModel.from_xml_string(export_dcmotor(PENDULUM, [ExportJoint("j", base)]).xml)
    n = 1500
    goal = 0.9 * np.sin(np.arange(n) * DT * 7.0) + 0.2
    enabled, control = np.ones(n, dtype=bool), np.zeros(n)
    a, b = mujoco.MjData(delayed), mujoco.MjData(plain)
    mujoco.mj_initCtrlHistory(delayed, a, 0, None,
                              np.full(delayed.actuator_history[0, 0], goal[0]))
    worst = 0.0
    for k in range(n):
        a.ctrl[0] = goal[k]
        b.ctrl[0] = delayed_command(goal, enabled, control, k, ticks)[0]
        mujoco.mj_step(delayed, a)
        mujoco.mj_step(plain, b)
        worst = max(worst, abs(a.qpos[0] - b.qpos[0]))
    assert np.ptp(goal) > 1.0 and abs(a.qpos[0]) > 0.1
    assert worst < 1e-9
