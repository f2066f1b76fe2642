"""The 2R arm with sets of the DC-motor model family: our kernel against MuJoCo's native dcmotor.

The same sets are simulated twice: by :class:`ServoArm` (the numba motor
model on ``<motor>`` actuators) and by MuJoCo alone on the MJCF that
:func:`export_dcmotor` writes (native ``<dcmotor>`` actuators, their inputs
the goal positions). Both must move the arm the same way. The export for MuJoCo
3.11 cannot be loaded by the MuJoCo 4 installed here (it refuses
``input="position"``): it is read through MuJoCo 3.12.0's migration rule
(:mod:`bam_testing.dcmotor_versions`); MuJoCo 3.11 itself runs it in
``benchmarks/mujoco_versions.py``.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.common.share import share_file
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.dcmotor_export import ExportJoint, export_dcmotor, losses
from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
from bam_testing.dcmotor_versions import migrate_to_312

MJCF = "mjcf/dynamixel_2r.xml"
LUGRE = {"lugre.stiffness": 400.0, "lugre.damping": 0.8, "lugre.coulomb": 0.05,
         "lugre.static": 0.09, "lugre.stribeck": 0.2, "lugre.viscous": 0.03}
GROUPS = {"inductance.timeconst": 0.002, "saturation.torque": 3.0,
          "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
          "thermal.reftemp": 25.0, "thermal.ambient": 25.0,
          "cogging.amplitude": 0.01, "cogging.poles": 12.0, "cogging.phase": 0.3}
POSITION_ATOL = 1e-9  # rad


def family_set(armature: float) -> ParameterSet:
    return ParameterSet.from_names("dcmotor", "lugre", {
        "resistance": 2.0, "motorconst": 0.4, "armature": armature, **LUGRE, **GROUPS,
        "controller.kd": 0.2, "controller.ki": 2.0, "controller.Imax": 0.3,
        "controller.slewmax": 6.0, "controller.Vmax": 14.0})


def voltage_set(armature: float) -> ParameterSet:
    # A Dynamixel (the MX duty law) with the groups and LuGre friction.
    return ParameterSet.from_names("mx64", "lugre", {
        "kt": 1.6, "R": 4.0, "armature": armature, **LUGRE, **GROUPS})


def goals(t: float) -> tuple[float, float]:
    return 0.8 * math.sin(2.0 * t), -0.6 + 0.5 * math.sin(3.0 * t + 0.4)


def run_both(params: list[ParameterSet], gains: list[float], steps: int = 2500,
             mujoco_version: str = "4"):
    path = share_file("bam_sim", MJCF)
    names = ("shoulder", "elbow")
    arm = ServoArm.from_mjcf(path, [ArmJoint(n, n, p) for n, p in zip(names, params)],
                             gains=gains)
    export = export_dcmotor(path, [ExportJoint(n, p, g)
                                   for n, p, g in zip(names, params, gains)],
                            mujoco_version=mujoco_version)
    native = mujoco.MjModel.from_xml_string(migrate_to_312(export.xml))
    data = mujoco.MjData(native)
    ours, theirs = [], []
    for k in range(steps):
        g = goals(k * arm.dt)
        arm.set_command(goals=g)
        data.ctrl[:] = g
        ours.append(arm.data.qpos[:2].copy())
        theirs.append(data.qpos[:2].copy())
        arm.step()
        mujoco.mj_step(native, data)
    return arm, data, np.array(ours), np.array(theirs), export


def test_dcmotor_family_arm_equals_native_dcmotor() -> None:
    arm, data, ours, theirs, export = run_both([family_set(0.01), family_set(0.005)],
                                               [6.0, 3.0])
    assert np.ptp(theirs[:, 0]) > 1.0, "the arm hardly moved"
    np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=POSITION_ATOL)
    # the native temperature (act slot of the thermal state) is ours
    rise = [data.act[native_slot] for native_slot in _thermal_slots(export.xml)]
    np.testing.assert_allclose(arm.temperature, 25.0 + np.array(rise), rtol=1e-12)
    assert np.all(arm.temperature > 25.0) and np.all(np.abs(arm.motor_current) > 0.0)
    assert losses(family_set(0.01)) == []  # nothing is lost for this family


@pytest.mark.parametrize("mujoco_version", ["4", "3.11"])
def test_voltage_law_with_groups_arm_equals_native_dcmotor(mujoco_version: str) -> None:
    *_, ours, theirs, _ = run_both([voltage_set(0.01), voltage_set(0.005)], [32.0, 16.0],
                                   mujoco_version=mujoco_version)
    assert np.ptp(theirs[:, 0]) > 1.0, "the arm hardly moved"
    np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=POSITION_ATOL)


def test_dcmotor_family_export_for_311_read_by_the_312_migration_equals_our_arm() -> None:
    *_, ours, theirs, export = run_both([family_set(0.01), family_set(0.005)], [6.0, 3.0],
                                        mujoco_version="3.11")
    assert 'input="position"' in export.xml
    np.testing.assert_allclose(ours, theirs, rtol=0.0, atol=POSITION_ATOL)


def _thermal_slots(xml: str) -> list[int]:
    """Index in act of each actuator's temperature: its states are slew, integral and
    temperature (the sets enable those three first), so the third."""
    model = mujoco.MjModel.from_xml_string(xml)
    return [int(model.actuator_actadr[a]) + 2 for a in range(model.nu)]


def test_elastoplastic_sets_with_groups_are_refused() -> None:
    params = ParameterSet.from_names("mx64", "ep_cv", {
        "kt": 1.6, "R": 4.0, "armature": 0.01, "friction_base": 0.05,
        "friction_viscous": 0.02, "contact_stiffness": 500.0, "contact_damping": 1.0,
        "thermal.resistance": 4.0, "thermal.capacitance": 2.0})
    with pytest.raises(BamError, match="pendulum bench only"):
        ServoArm.from_mjcf(share_file("bam_sim", MJCF), [ArmJoint("shoulder", "shoulder",
                                                                  params)])
