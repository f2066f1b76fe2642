"""Export an identified servo model to MuJoCo's own ``dcmotor`` actuator (MuJoCo 3.11 or 4).

What MuJoCo 4.0's ``dcmotor`` computes with ``input="pos"`` (checked on the
compiled model, see the tests): the ``controller`` gains are in *torque
space*; the controller asks for the torque τ* = k_p (u − θ) − k_d θ̇, the
driver applies the voltage that yields it, v = R/K·τ* + K θ̇, clipped to
±V_max, and the motor gives τ = K/R (v − K θ̇), finally clipped to
±τ_max (``saturation``)::

    τ = clip( clip(τ*, K/R(−V_max − Kθ̇), K/R(V_max − Kθ̇)), ±τ_max )

This expresses both servo laws of :mod:`bam_sim.models.servo.laws` (paper IV-B, IV-C):

* voltage law (Dynamixel), equations (12)-(13), exactly, duty clip included:
  k_p = k_t/R · kp·k_duty·V_in, k_d = k_t²/R (the brake-mode back-EMF the
  firmware does not compensate), V_max = duty_max·V_in; on a Feetech STS, k_p
  also carries the ratio r and the firmware target's rate v_f is the
  controller's ``slewmax`` (the same rate limit of the position input);
* current law (eRob), equations (14)-(15): k_p = k_t·kp, k_d = k_t·d·√kp,
  V_max = U_max, τ_max = k_t·I_heat. The two clips are applied in the other
  order than in (14)-(15); both give the same torque except when the
  intervals are disjoint, i.e. |θ̇| > (U_max + R·I_heat)/k_t.

Friction: the joint's ``frictionloss`` = K_c and ``damping`` = K_v are MuJoCo's
Coulomb-viscous friction, the model M1 (equation 3); ``armature`` = J_m. Every
term of M2..M6 (Stribeck, load-dependent, directional, quadratic) has no
counterpart and is dropped; :func:`losses` lists what a given set loses.
(dcmotor's LuGre friction has a Stribeck curve, but with bristle dynamics and
a fixed exponent 2: not the paper's static budget, so it is not used for M2..M6.)

Sets of the DC-motor model family (:mod:`bam_sim.models.dcmotor.groups`) export
without loss: their groups become the dcmotor attributes of the same names
(``inductance`` as its time constant, ``saturation`` with the current rate,
``thermal``, ``cogging``), the ``lugre`` friction model its ``lugre`` attribute
with σ2 as the actuator's ``damping`` (the joint then gets no frictionloss or
damping), and the ``dcmotor`` family's controller its ``controller`` (the
servo gain is k_p). :class:`~bam_sim.mujoco_arm.servo_arm.ServoArm` simulates the
same sets with the numba kernel; a test checks both give the same motion.

Two conventions (``mujoco_version``): ``"4"`` writes the above (MuJoCo 3.12 and
later); ``"3.11"`` the dcmotor of MuJoCo 3.7 to 3.11, which mjlab and Isaac Lab
pin: ``input="position"`` and gains in *voltage* space, the controller asking
for the voltage v = k_p^V (u − θ) + k_i^V x_I − k_d^V θ̇ with back-EMF felt on
top (:func:`voltage_space_gains`, the inverse of the migration rule of MuJoCo
3.12.0's changelog). Both give the same drive voltage, hence the same motion.
The identified command latency L_c is the actuator's native ``delay`` (with
``nsample`` samples of history, interpolated linearly, as our rollouts do),
which both versions read (MuJoCo >= 3.5).
"""

from __future__ import annotations

import math
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number
from bam_sim.common.output_paths import check_output, write_new
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor import model as dc
from bam_sim.models.dcmotor.model import read_mjcf_text
from bam_sim.models.dcmotor.motor_model import dcmotor_parameters, uses_motor
from bam_sim.models.diagram import static_level
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import (
    C_CURRENT_GAIN,
    C_DAMPING,
    C_DUTY_GAIN,
    C_MAX_DUTY,
    C_MAX_VOLTAGE,
    C_SUPPLY,
    VOLTAGE,
)
from bam_sim.models.servo.actuator import (
    CURRENT as CURRENT_LAW,
)
from bam_sim.mujoco_arm.servo_arm import STIFF_IMPEDANCE

M1_PARAMS = get_model("m1").params
# The MuJoCo versions an export is written for: the dcmotor before 3.12 (3.7..3.11),
# and the one of 3.12 and later (4.x).
PRE_312, CURRENT = "3.11", "4"
MUJOCO_VERSIONS = (PRE_312, CURRENT)
# The dcmotor's position input, by version (3.12.0 renamed it).
_POSITION_INPUT = {PRE_312: "position", CURRENT: "pos"}
# What each group of richer-model parameters models (paper section III).
_EFFECTS = {
    "friction_stribeck": "Stribeck static friction K_c^s (eq. 6)",
    "dtheta_stribeck": "Stribeck velocity v_s (eq. 6)",
    "alpha": "Stribeck exponent α (eq. 6)",
    "load_friction_base": "load-dependent friction K_l (eq. 7)",
    "load_friction_stribeck": "load-dependent Stribeck friction K_l^s (eq. 8)",
    "load_friction_motor": "directional motor-load friction K_m (eq. 9)",
    "load_friction_external": "directional external-load friction K_e (eq. 9)",
    "load_friction_motor_stribeck": "directional Stribeck motor friction K_m^s (eq. 9)",
    "load_friction_external_stribeck": "directional Stribeck external friction K_e^s (eq. 9)",
    "load_friction_motor_quad": "quadratic motor friction K_m^q (eq. 10)",
    "load_friction_external_quad": "quadratic external friction K_e^q (eq. 10)",
    "contact_stiffness": "elasto-plastic pre-sliding stiffness K (Cisneros et al. (4))",
    "contact_damping": "elasto-plastic pre-sliding damping B (Cisneros et al. (4))",
}


@dataclass(frozen=True)
class ExportJoint:
    """One joint to export: its parameters and servo gain (default: Table I's second)."""

    joint: str
    params: ParameterSet
    gain: float | None = None
    supply_voltage: float | None = None  # None: the actuator's default


@dataclass(frozen=True)
class DcMotorSettings:
    """What the dcmotor and its joint get, in MuJoCo 4's units (torque-space gains)."""

    joint: str
    resistance: float      # Ω
    motorconst: float      # N·m/A
    kp: float              # N·m/rad
    kd: float              # N·m·s/rad
    vmax: float            # V, the voltage clip
    torque_limit: float    # N·m, 0: none
    armature: float        # kg·m²
    damping: float         # N·m·s/rad
    frictionloss: float    # N·m
    # The DC-motor family's controller terms and groups (zero/empty otherwise).
    ki: float = 0.0
    slewmax: float = 0.0
    imax: float = 0.0
    groups: tuple[tuple[str, str], ...] = ()  # (dcmotor attribute, value), e.g. thermal
    delay: float = 0.0     # s, the command latency L_c (the actuator's native delay)

    def controller(self, mujoco_version: str = CURRENT) -> str:
        """The ``controller`` attribute of ``mujoco_version``: kp ki kd slewmax Imax Vmax."""
        gains = (self.kp, self.ki, self.kd)
        if mujoco_version == PRE_312:
            gains = voltage_space_gains(*gains, self.resistance, self.motorconst)
        return " ".join(_num(v) for v in (*gains, self.slewmax, self.imax, self.vmax))


def torque_space_gains(kp: float, ki: float, kd: float, resistance: float,
                       motorconst: float) -> tuple[float, float, float]:
    """The dcmotor gains of MuJoCo <= 3.11 (voltage space) as those of >= 3.12 (torque space).

    MuJoCo 3.12.0's changelog, Actuation, item 5 (breaking change, commit 2f1843f4):
    multiply the gains by K/R, then add K²/R (the back-EMF damping the new driver
    compensates) to the converted kd.
    """
    per_volt = motorconst / resistance
    return kp * per_volt, ki * per_volt, kd * per_volt + motorconst * motorconst / resistance


def voltage_space_gains(kp: float, ki: float, kd: float, resistance: float,
                        motorconst: float) -> tuple[float, float, float]:
    """The inverse of :func:`torque_space_gains`: gains of MuJoCo >= 3.12 for MuJoCo <= 3.11.

    A k_d of exactly K²/R (the voltage law's back-EMF brake) gives exactly 0.
    """
    per_torque = resistance / motorconst
    back_emf = motorconst * motorconst / resistance
    return kp * per_torque, ki * per_torque, (kd - back_emf) * per_torque


@dataclass(frozen=True)
class DcMotorExport:
    """The exported MJCF text, what each joint got, and what the export loses."""

    xml: str
    settings: tuple[DcMotorSettings, ...]
    losses: tuple[str, ...]
    mujoco_version: str = CURRENT

    def note(self) -> str:
        """A readable summary: the attributes of each joint, then the losses."""
        return _note(self.settings, self.losses, self.mujoco_version)


def consts(params: ParameterSet, supply_voltage: float | None = None) -> np.ndarray:
    """The servo constant vector of :mod:`bam_sim.models.servo.laws`, with a supply voltage
    override."""
    c = params.actuator.consts()
    if supply_voltage is not None:
        c[C_SUPPLY] = number(supply_voltage, "supply voltage (V)", low=0.0,
                                       low_open=True)
    return c


def dcmotor_settings(joint: str, params: ParameterSet, gain: float | None = None,
                     supply_voltage: float | None = None) -> DcMotorSettings:
    """Closed-form mapping of a servo model onto dcmotor attributes (module docstring)."""
    act = params.actuator
    kp = number(act.gains[1] if gain is None else gain, f"servo gain of joint '{joint}'",
                low=0.0)
    c = consts(params, supply_voltage)
    v, vec = params.values, params.vector()
    kt, resistance = float(vec[P.KT]), float(vec[P.R])  # the dcmotor family's aliases too
    ki = slew = imax = 0.0
    if act.family == VOLTAGE:
        kp_t = kt / resistance * kp * c[C_DUTY_GAIN] * c[C_SUPPLY]
        vmax = c[C_MAX_DUTY] * c[C_SUPPLY]
        kd_t, limit = kt * kt / resistance, 0.0
        # The STS firmware: its gain ratio, and its target slew as the controller's slew.
        kp_t *= v.get("error_gain_ratio", 1.0)
        slew = v.get("max_velocity", 0.0)
    elif act.family == CURRENT_LAW:
        kp_t = kt * kp * c[C_CURRENT_GAIN] * v.get("error_gain_ratio", 1.0)
        kd_t = kt * c[C_DAMPING] * math.sqrt(kp)
        vmax, limit = c[C_MAX_VOLTAGE], kt * vec[P.I_HEAT]
    else:  # the dcmotor family: MuJoCo's own controller, the gain is its k_p
        kp_t, ki, kd_t = kp, v.get("controller.ki", 0.0), v.get("controller.kd", 0.0)
        slew, imax = v.get("controller.slewmax", 0.0), v.get("controller.Imax", 0.0)
        vmax, limit = v.get("controller.Vmax", 0.0), 0.0
    damping = v.get("friction_viscous", 0.0)
    frictionloss, groups = v.get("friction_base", 0.0), ()
    if uses_motor(act.family, params.model_id, params.vector()):
        row = dcmotor_parameters(params, kp, c)
        groups = _group_attributes(params, row)
        if row[dc.P_FORCELIMITED] != 0.0:
            limit = min(limit, float(row[dc.P_FMAX])) if limit > 0.0 else float(row[dc.P_FMAX])
        if params.model.lugre:  # friction is the actuator's (σ2 its damping)
            damping = frictionloss = 0.0
    return DcMotorSettings(joint, resistance, kt, kp_t, kd_t, vmax, limit, float(vec[P.ARMATURE]),
                           damping, frictionloss, ki, slew, imax, groups,
                           float(v.get("latency.command", 0.0)))


def _group_attributes(params: ParameterSet, row: np.ndarray) -> tuple[tuple[str, str], ...]:
    """The dcmotor attributes of the set's groups, from its compiled dcmotor row."""
    out = []
    if row[dc.P_TE] > 0.0:
        out.append(("inductance", f"0 {_num(row[dc.P_TE])}"))
    if row[dc.P_DIMAX] > 0.0:
        out.append(("saturation_rate", _num(row[dc.P_DIMAX])))
    if row[dc.P_RT] > 0.0:
        out.append(("thermal", " ".join(_num(row[i]) for i in (dc.P_RT, dc.P_C)) + " 0 "
                    + " ".join(_num(row[i]) for i in (dc.P_ALPHA, dc.P_T0, dc.P_TA))))
    if row[dc.P_COG_A] != 0.0:
        out.append(("cogging", " ".join(_num(row[i]) for i in
                                        (dc.P_COG_A, dc.P_COG_N, dc.P_COG_PHASE))))
    if params.model.lugre:
        out.append(("lugre", " ".join(_num(row[i]) for i in
                                      (dc.P_SIGMA0, dc.P_SIGMA1, dc.P_FC, dc.P_FS, dc.P_VS))))
        out.append(("damping", _num(params.vector()[P.LG_S2])))
    return tuple(out)


# Losses of every export, whatever the parameters.
GENERAL_LOSSES = (
    "torque off (released H-bridge / zero current) is not in the MJCF: at run time set "
    "actuator_gainprm[i, 4] and [i, 6] (kp, kd) to 0, which gives zero torque while "
    "|K·q̇| < V_max",
    "the servo gain is baked into kp and kd: to change it, rewrite actuator_gainprm[i, 4] "
    "and [i, 6] at run time",
)
# The same for the 3.11 file, whose voltage-space kd of 0 leaves the back-EMF brake on.
GENERAL_LOSSES_311 = (
    "torque off (released H-bridge / zero current) is not in the MJCF: at run time set "
    "actuator_gainprm[i, 4] (kp) to 0 and [i, 6] (kd) to -K, which gives zero torque while "
    "|K·q̇| < V_max",
    GENERAL_LOSSES[1] + " (voltage-space gains: torque-space ones times R/K, kd less K)",
)


def losses(params: ParameterSet, timestep: float | None = None) -> list[str]:
    """What a dcmotor export of ``params`` cannot express, one line each.

    Every parameter beyond M1 (with its value and effect), the richer model's
    friction budget at rest that the export drops, the clip-order corner of
    the current law, a non-zero bench offset. See also GENERAL_LOSSES. The
    DC-motor family (its groups, LuGre, its controller) is MuJoCo's own model:
    it loses nothing. ``timestep`` (s, the model's) tells whether the command latency
    is at least one step, the shortest delay MuJoCo applies.
    """
    v, act = params.values, params.actuator
    out = [f"{name} = {_fmt(v[name])}: {_EFFECTS[name]}"
           for name in params.model.params
           if name not in M1_PARAMS and not params.model.lugre]
    if out:
        p = params.vector()
        # ep_*: F_S, the level the elasto-plastic friction holds at rest.
        rest = static_level(params.model_id, p, 0.0, 0.0, 0.0)
        out.append(f"{params.model.name} static budget at rest, no load: {_fmt(rest)} N·m; the "
                   f"export keeps K_c = {_fmt(v['friction_base'])} N·m (for a dcmotor, prefer a "
                   "set identified as M1)")
    if act.family == CURRENT_LAW:
        vec = params.vector()
        speed = (act.max_voltage + vec[P.R] * vec[P.I_HEAT]) / vec[P.KT]
        out.append(f"current law: the I_heat and back-EMF clips differ for |q̇| > "
                   f"{_fmt(speed)} rad/s (clips applied in the other order)")
    if v.get("hbridge.pwm_period", 0.0) > 0.0:
        out.append(f"hbridge.pwm_period = {_fmt(v['hbridge.pwm_period'])} s: the drive/coast "
                   "bridge (averaged) has no dcmotor counterpart; the export drives as "
                   "drive/brake")
    if v.get("supply.resistance", 0.0) > 0.0:
        out.append(f"supply.resistance = {_fmt(v['supply.resistance'])} Ω: the supply's sag "
                   "under load has no dcmotor counterpart; the export drives at the nominal "
                   "supply")
    if v.get("backlash.width", 0.0) > 0.0:
        out.append(f"backlash.width = {_fmt(v['backlash.width'])} rad: the dead band between "
                   "the motor and the output has no dcmotor counterpart; the exported joint "
                   "is rigid")
    out += _latency_losses(v, timestep)
    if v.get("max_velocity", 0.0) > 0.0:
        out.append(f"max_velocity = {_fmt(v['max_velocity'])} rad/s is the controller's slewmax, "
                   "whose state MuJoCo starts at 0: at a reset set data.act[actuator_actadr] "
                   "to the joint position, as the servo's firmware target is")
    if v.get("q_offset", 0.0) != 0.0:
        out.append(f"q_offset = {_fmt(v['q_offset'])} rad (bench mounting offset)")
    return out


def _latency_losses(v: dict[str, float], timestep: float | None) -> list[str]:
    """What the native delay changes or leaves out of the latency group (none: nothing)."""
    out = []
    command, reading = v.get("latency.command", 0.0), v.get("latency.reading", 0.0)
    if command > 0.0:
        out.append(f"latency.command = {_fmt(command)} s is the dcmotor's native delay: MuJoCo "
                   "starts its history at 0, so after a reset fill it with the initial goal "
                   "(mj_initCtrlHistory), as the servo held it")
    if command > 0.0 and timestep is not None and command < timestep:
        out.append(f"latency.command = {_fmt(command)} s is below the timestep "
                   f"{_fmt(timestep)} s: MuJoCo delays ctrl by one timestep at least")
    if reading > 0.0:
        out.append(f"latency.reading = {_fmt(reading)} s: the readings' delay has no "
                   "actuator counterpart (qpos is the joint now); read the state that much "
                   "later in the simulation loop")
    return out


def export_dcmotor(mjcf: str | Path, joints: Sequence[ExportJoint], *,
                   stiff_friction: bool = True,
                   mujoco_version: str = CURRENT) -> DcMotorExport:
    """Replace the ``<motor>`` of each joint by a dcmotor (or add one) in an MJCF.

    ``mjcf`` is a file path or the MJCF text. Each listed hinge joint gets
    ``armature``, ``damping`` and ``frictionloss``; its ``<motor>`` actuator (if
    any) becomes a ``<dcmotor>`` of the same name at the same place, so the
    actuator order is kept. With ``stiff_friction`` the joints also get the
    stiff friction constraint :class:`bam_sim.mujoco_arm.servo_arm.ServoArm` uses
    (``solreffriction`` = 2Δt 1, ``solimpfriction`` = 0.9999 0.9999: no visible
    creep inside the static friction). ``mujoco_version`` is the dcmotor convention
    written (:data:`MUJOCO_VERSIONS`, module docstring). The export in today's
    convention is compiled by the MuJoCo installed here before returning (the
    3.11 form, which MuJoCo 4 refuses, differs from it only in the dcmotor's
    ``input`` and ``controller``). Asset file paths are left as they are: write the
    export next to the source when it references files.
    """
    if mujoco_version not in MUJOCO_VERSIONS:
        raise BamError(f"MuJoCo version '{mujoco_version}' is not one the dcmotor export "
                       f"writes for; give {' or '.join(MUJOCO_VERSIONS)}")
    text, where = read_mjcf_text(mjcf)
    timestep = _compile(text, where, "cannot load").opt.timestep
    if not joints:
        raise BamError("no joints to export; give at least one joint and its parameters")
    current = _build(text, where, joints, timestep, stiff_friction, CURRENT)
    _check_stable(_compile(current.xml, where, "rejects the export of"), joints)
    if mujoco_version == CURRENT:
        return current
    return _build(text, where, joints, timestep, stiff_friction, mujoco_version)


def _build(text: str, where: str, joints: Sequence[ExportJoint], timestep: float,
           stiff_friction: bool, mujoco_version: str) -> DcMotorExport:
    """The export's MJCF in the convention of ``mujoco_version``, not compiled."""
    root = _parse(text, where)
    if root.find(".//include") is not None:
        raise BamError(f"{where} uses <include>; inline the included files before exporting")
    settings, notes = [], []
    for spec in joints:
        s = dcmotor_settings(spec.joint, spec.params, spec.gain, spec.supply_voltage)
        _set_joint(root, s, where, timestep if stiff_friction else None)
        _set_actuator(root, s, where, mujoco_version, timestep)
        settings.append(s)
        notes += [f"{spec.joint}: {line}" for line in losses(spec.params, timestep)]
    notes += GENERAL_LOSSES_311 if mujoco_version == PRE_312 else GENERAL_LOSSES
    summary = _note(settings, notes, mujoco_version).replace("--", "- -")  # none in a comment
    root.insert(0, ET.Comment(f" Exported by bam_sim.mujoco_arm.dcmotor_export.\n{summary}\n"))
    ET.indent(root)
    xml = _prologue(text) + ET.tostring(root, encoding="unicode") + "\n"
    return DcMotorExport(xml, tuple(settings), tuple(notes), mujoco_version)


def _check_stable(model: mujoco.MjModel, joints: Sequence[ExportJoint]) -> None:
    """Each set valid on its joint at the model's step, as the simulators require
    (ServoArm, the bench, eval): an unstable LuGre bristle or an ep_* set beyond its
    coupling limit is refused, not exported to blow up in someone's simulator. The
    joint's inertia is the compiled one, armature included."""
    from bam_sim.models.elastoplastic.validity import check_step
    from bam_sim.mujoco_arm.servo_arm import _joint_index

    for spec in joints:
        dof = int(model.jnt_dofadr[_joint_index(model, spec.joint)])
        act = spec.params.actuator
        supply = act.supply_voltage if spec.supply_voltage is None else spec.supply_voltage
        try:
            check_step(spec.params.model, act, spec.params.vector(),
                       float(model.opt.timestep), float(model.dof_M0[dof]), 0.0, float(supply))
        except BamError as exc:
            raise BamError(f"joint '{spec.joint}': {exc}") from None


def write_dcmotor(mjcf: str | Path, joints: Sequence[ExportJoint], output: str | Path,
                  overwrite: bool = False, mujoco_version: str = CURRENT) -> DcMotorExport:
    """:func:`export_dcmotor` and write the MJCF to ``output`` (never replaced unless asked)."""
    # the MJCF is text or a file; a file is an input, never overwritten by its export
    is_file = isinstance(mjcf, Path) or "<" not in mjcf
    source = [("mjcf", mjcf)] if is_file else []
    output = check_output(output, "--output", force=overwrite, inputs=source)
    result = export_dcmotor(mjcf, joints, mujoco_version=mujoco_version)
    write_new(output, result.xml, "--output", overwrite)
    return result


def _parse(text: str, where: str) -> ET.Element:
    try:
        # Keep the source's comments: shipped MJCFs document their numbers there.
        parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
        root = ET.fromstring(text, parser=parser)
    except ET.ParseError as exc:
        raise BamError(f"{where} is not valid XML ({exc}); fix the MJCF") from None
    if root.tag != "mujoco":
        raise BamError(f"{where} is not an MJCF file (root <{root.tag}>, expected <mujoco>)")
    return root


def _prologue(text: str) -> str:
    """The comments before the root element (ElementTree drops them), kept verbatim."""
    head = text[:text.find("<mujoco")]
    head = re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", head)
    return head.strip() + "\n" if head.strip() else ""


def _set_joint(root: ET.Element, s: DcMotorSettings, where: str,
               timestep: float | None) -> None:
    found = [j for j in root.iter("joint") if j.get("name") == s.joint]
    if len(found) != 1:
        names = sorted(j.get("name", "?") for j in root.iter("joint"))
        raise BamError(f"{where} has no joint '{s.joint}'; its joints are {', '.join(names)}")
    if found[0].get("type", "hinge") != "hinge":
        raise BamError(f"joint '{s.joint}' in {where} is a {found[0].get('type')} joint; "
                       "a servo drives a hinge joint")
    found[0].set("armature", _num(s.armature))
    found[0].set("damping", _num(s.damping))
    found[0].set("frictionloss", _num(s.frictionloss))
    if timestep is not None:
        found[0].set("solreffriction", f"{_num(2.0 * timestep)} 1")
        # MuJoCo's defaults for width, midpoint and power.
        found[0].set("solimpfriction", f"{STIFF_IMPEDANCE} {STIFF_IMPEDANCE} 0.001 0.5 2")


def _set_actuator(root: ET.Element, s: DcMotorSettings, where: str, mujoco_version: str,
                  timestep: float) -> None:
    section = root.find("actuator")
    if section is None:
        section = ET.SubElement(root, "actuator")
    driving = [a for a in section if a.get("joint") == s.joint]
    others = [a for a in driving if a.tag != "motor"]
    if others:
        raise BamError(f"joint '{s.joint}' in {where} is driven by a <{others[0].tag}>; only "
                       "<motor> actuators are replaced, remove the other one")
    if len(driving) > 1:
        raise BamError(f"joint '{s.joint}' in {where} has {len(driving)} <motor> actuators; "
                       "keep one")
    motor = driving[0] if driving else None
    if motor is not None and float(motor.get("gear", "1").split()[0]) != 1.0:
        raise BamError(f"the motor of joint '{s.joint}' in {where} has gear {motor.get('gear')}; "
                       "parameters are at the joint output, set gear to 1")
    attrs = {"name": motor.get("name", s.joint) if motor is not None else s.joint,
             "joint": s.joint, "resistance": _num(s.resistance),
             "motorconst": _num(s.motorconst), "input": _POSITION_INPUT[mujoco_version],
             "controller": s.controller(mujoco_version)}
    attrs.update(_delay_attributes(s.delay, timestep))
    groups = dict(s.groups)
    rate = groups.pop("saturation_rate", None)
    if s.torque_limit > 0.0 or rate is not None:
        attrs["saturation"] = f"{_num(s.torque_limit)} 0 {rate or 0}"
    attrs.update(groups)
    element = ET.Element("dcmotor", attrs)
    if motor is None:
        section.append(element)
    else:
        index = list(section).index(motor)
        section.remove(motor)
        section.insert(index, element)


def _delay_attributes(delay: float, timestep: float) -> dict[str, str]:
    """The native actuator delay of ``delay`` s (none for 0): ``nsample`` samples of ctrl
    history cover it (MuJoCo reads before it writes, so the newest is one step old) and
    ``interp="linear"`` reads between them, as a rollout's delayed command does."""
    if not delay > 0.0:
        return {}
    samples = max(1, math.ceil(delay / timestep - 1e-9)) + 1  # one spare against rounding
    return {"delay": _num(delay), "nsample": str(samples), "interp": "linear"}


def _compile(xml: str, where: str, verb: str) -> mujoco.MjModel:
    try:
        return mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        raise BamError(f"MuJoCo {verb} {where}: {one_line(exc)}") from None


_HEADERS = {
    CURRENT: "dcmotor export for MuJoCo >= 3.12 (4.x): input=\"pos\", torque-space gains",
    PRE_312: "dcmotor export for MuJoCo 3.7 to 3.11 (mjlab's pin): input=\"position\", "
             "voltage-space gains (those below are torque-space: kp_V = kp·R/K, "
             "ki_V = ki·R/K, kd_V = (kd − K²/R)·R/K)",
}


def _note(settings: Sequence[DcMotorSettings], notes: Sequence[str],
          mujoco_version: str = CURRENT) -> str:
    lines = [_HEADERS[mujoco_version] + ":"]
    for s in settings:
        lines.append(f"  {s.joint}: R={_fmt(s.resistance)} Ω, K={_fmt(s.motorconst)} N·m/A, "
                     f"kp={_fmt(s.kp)} N·m/rad, kd={_fmt(s.kd)} N·m·s/rad, "
                     f"Vmax={_fmt(s.vmax)} V, saturation={_fmt(s.torque_limit)} N·m, "
                     f"armature={_fmt(s.armature)} kg·m², damping={_fmt(s.damping)} N·m·s/rad, "
                     f"frictionloss={_fmt(s.frictionloss)} N·m"
                     + (f", delay={_fmt(s.delay)} s" if s.delay > 0.0 else ""))
    lines.append("lost in the export:")
    lines += [f"  - {line}" for line in notes]
    return "\n".join(lines)


def _fmt(x: float) -> str:
    return f"{float(x):.6g}"


def _num(x: float) -> str:
    # Shortest text that reads back as the same double: the export is exact.
    return repr(float(x))


def main(argv: list[str] | None = None) -> int:
    """``python -m bam_sim.mujoco_arm.dcmotor_export``: export an MJCF, print what it loses."""
    parser = ArgumentParser(prog="python -m bam_sim.mujoco_arm.dcmotor_export",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("mjcf", type=Path, help="MJCF whose <motor> actuators are replaced")
    parser.add_argument("--joint", action="append", required=True, metavar="NAME=PARAMS[@GAIN]",
                        help="a joint, its parameter file and optionally its servo gain")
    parser.add_argument("--output", type=Path, required=True, help="MJCF to write")
    parser.add_argument("--mujoco", choices=MUJOCO_VERSIONS, default=CURRENT,
                        help="the MuJoCo version the dcmotor is written for (default 4: "
                        "3.12 and later; 3.11: 3.7 to 3.11, mjlab's pin)")
    parser.add_argument("--force", action="store_true", help="overwrite --output")
    args = parser.parse_args(argv)
    try:
        result = write_dcmotor(args.mjcf, [_parse_joint(item) for item in args.joint],
                               args.output, args.force, args.mujoco)
    except BamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result.note())
    print(f"wrote {args.output}")
    return 0


def _parse_joint(item: str) -> ExportJoint:
    from bam_sim.models.files.parameter_file import load

    name, sep, rest = item.partition("=")
    if not sep or not name or not rest:
        raise BamError(f"--joint '{item}': write it as NAME=PARAMS.yaml or NAME=PARAMS.yaml@GAIN")
    path, _, gain = rest.partition("@")
    # the same range as export --gain: a servo gain holds something and fits a register
    value = number(gain, f"--joint {name}: gain", low=0.0, low_open=True,
                   high=1.0e4) if gain else None
    return ExportJoint(name.strip(), load(path), value)


if __name__ == "__main__":
    sys.exit(main())
