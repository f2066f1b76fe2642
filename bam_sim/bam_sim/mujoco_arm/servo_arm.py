"""Servo actuator models applied to the joints of a MuJoCo robot (paper section IV-E).

MuJoCo has Coulomb-viscous joint friction only (``dof_frictionloss``, a
box-bounded constraint, and ``dof_damping``), so :class:`ServoArm` updates
both every step from the M1..M6 budget τ_f^m (equations 3, 6–10): damping ←
K_v, frictionloss ← τ_f^m − K_v·|q̇|, armature ← J_m; MuJoCo's friction row
then applies clip(τ_stop, ±frictionloss), equations (4)–(5). One numba kernel
does every servo joint per step: τ_m of the servo law into ``ctrl``, τ_e of
the *previous* step (τ_e and τ_f come out of the same constraint solve)::

    τ_e = qfrc_smooth − τ_m,prev + K_v,prev·q̇_prev + qfrc_constraint − f_friction,own

i.e. gravity, bias, springs, applied forces, other actuators, contacts and
limits, without the servo's own motor, damping and friction row. ``step(n)`` runs
the n steps in one kernel call that steps MuJoCo itself
(:mod:`bam_sim.mujoco_arm.native_step`), else from Python: the same positions.

A joint that surely slides through the step (its speed above what one step could take
off it: :func:`_slide`) gets its row's force instead of the row: in its linear zone the
row's force is the bound against the motion, so applying ∓frictionloss (in
``qfrc_applied``, beside a user's forces) moves the arm as the row does, to rounding
(tested against the rows kept), and the row leaves MuJoCo's constraint solve, most of
what a servo joint costs MuJoCo; a step without rows skips the solve. A joint near
stiction keeps its row.

MuJoCo's friction constraint is soft: at rest inside the box the joint creeps
at q̇ = (1 − d)/d · d_max·t_c/2 · w0·τ. ServoArm makes it as stiff as MuJoCo
allows (t_c = 2Δt, d = d_max = 0.9999, ``mj_setConst`` after the armature), so
the creep becomes (1 − d)·Δt·w0·τ; ``stiff_friction=False`` keeps the MJCF's.
``identification_integrator=True`` adds Algorithm 1's ½q̈Δt² position term
to the servo joints, to reproduce what the parameter sets were identified
with; the default keeps MuJoCo's semi-implicit Euler for every joint (the
residuals of both against the numba pendulum are measured in
``bam_sim/test/test_arm_equivalence.py``).

Elasto-plastic joints (``ep_*``, Cisneros et al.) have no budget for MuJoCo's
friction row: their friction force f_k = Φ_Z(q̇_k + Z·K·e_k−1) (Algorithm 1
of ``reference/chattering-free-stiction.md``, deflection e kept per joint) is
applied through the motor, ctrl ← (τ_m − f)·scale, with frictionloss and
damping 0, and MuJoCo's semi-implicit Euler is the integration that model is
validated with, so the ½q̈Δt² term is never added to those joints. Each such
joint is checked at binding for condition (14) and the coupling limit
T·(K·T + 2B) < 4J, with J its mass-matrix diagonal at qpos0 (``dof_M0``,
armature included) and, for ``ep_load``, the load bound of the stall torque
alone (the external torques of an arm are not known in advance).

A joint with the ``backlash`` group (a dead band of width b = 2h between its motor and
its output, :mod:`bam_sim.bench.backlash` on the bench) is the MuJoCo joint while the
teeth touch, as above; its motor's lead s = ±h is kept, and the gear's push on the load
in the last step, F = τ_m + τ_f − J_m·q̈ (τ_f the friction row's force less the damping's),
is checked: where it would pull, the teeth part. Apart, the MuJoCo joint is the load alone
(armature, ctrl, friction and damping 0) and the kernel steps the motor itself, Algorithm 1
with J_m and no load, semi-implicit Euler as MuJoCo; when the motor is h from the output
again, a plastic impact gives the joint (J_m·v_m + J_l·q̇)/(J_m + J_l), J_l its inertia at
qpos0 less the armature (exact for one joint, approximate elsewhere). A reset puts the load
leaning on the gear as the forces at rest pull it (mid-gap, apart, without a load).

Joints whose set runs through MuJoCo's DC-motor model (the ``dcmotor`` family,
the ``lugre`` friction model or any group of :mod:`bam_sim.models.dcmotor.groups`)
get their motor torque from :func:`bam_sim.models.dcmotor.motor_model.motor_torque`,
with the motor's states (slew, integral, temperature, bristle, current) kept
per joint; an M1..M6 budget then applies as above, while LuGre's force (9b)
goes through the motor with σ2 as the joint's damping, as MuJoCo's native
``<dcmotor>`` does. The same sets exported by
:func:`bam_sim.mujoco_arm.dcmotor_export.export_dcmotor` and simulated by
MuJoCo alone move the arm the same way (tests).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import mujoco
import numba as nb
import numpy as np

from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import applied_friction, friction_budget
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.motor_model import ON, init_state, motor_rows, motor_torque, uses_motor
from bam_sim.models.elastoplastic.model import ep_step, friction_level
from bam_sim.models.elastoplastic.validity import check_step
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import EP_FIRST, LUGRE_ID
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo import laws as servo
from bam_sim.models.servo.actuator import C_SUPPLY, N_CONSTS
from bam_sim.mujoco_arm.native_step import constraint_rows, native_step, unowned
from bam_sim.mujoco_arm.native_step import step as mj_step

FRICTION_DOF = int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF)
# Stiffest friction constraint MuJoCo accepts (see the module docstring).
STIFF_IMPEDANCE = 0.9999
# A joint slides surely when its speed exceeds SLIDE_MARGIN times what it could lose in one
# step (its last step's change, plus every servo torque's change over the smallest rotor
# inertia), and SLIDE_FLOOR (rad/s, far above the stiff row's smoothing band of ~1e-6).
SLIDE_MARGIN = 2.0
SLIDE_FLOOR = 1.0e-3

# Columns of the per-joint integer table handed to the kernel.
I_QADR, I_DADR, I_ACT, I_MODEL, I_FAMILY, I_MOTOR = range(6)
N_INTS = 6
# Columns of the per-joint float work table: command, memory of the last
# step, and the outputs of the last step.
W_GOAL, W_ENABLE, W_KP, W_CTRL_SCALE = 0, 1, 2, 3
W_PREV_TAU_M, W_PREV_KV, W_PREV_DQ = 4, 5, 6
W_CONTROL, W_TAU_M, W_TAU_E, W_BUDGET = 7, 8, 9, 10
W_DEFLECTION = 11  # e_k−1 of an elasto-plastic joint
W_CURRENT = 12  # motor current (A) of a joint of the DC-motor model, last step
W_TARGET = 13  # the servo firmware's target (servo.firmware_target; the goal but on an STS)
# A joint with backlash (_update_backlash): the gear's state, the motor's lead on the
# output in contact (±h), its position and speed apart, the load's inertia at qpos0.
W_GAP, W_LEAD, W_MOTOR_POS, W_MOTOR_RATE, W_LOAD_INERTIA = 14, 15, 16, 17, 18
# A sliding M1..M6 joint (_slide): this step's change of the torque it applies and of its
# velocity over the last step, whether its friction went through the motor (1), stayed
# MuJoCo's row (0) or is not a budget (-1), the speed under which it keeps the row, and
# the steps whose velocity then turned (a wrong guess, counted for the tests), and the
# friction force it put in qfrc_applied for the step.
W_DTAU, W_DV, W_SLIDE, W_SLIDE_FLOOR, W_SLIDE_MISSES, W_SLID = 19, 20, 21, 22, 23, 24
N_WORK = 25
CONTACT, APART, CLOSED = 0.0, 1.0, 2.0  # W_GAP: in contact, apart, contact just made


@dataclass(frozen=True)
class ArmJoint:
    """One servo joint: MJCF hinge, its ``<motor>`` actuator and its servo model."""

    joint: str
    actuator: str
    params: ParameterSet
    supply_voltage: float | None = None  # None: the actuator's default


class ArmState(NamedTuple):
    """Arrays of length n_joints, in joint order.

    ``control`` (V or A) and ``motor_torque`` (N·m) are the servo's output at
    the current state and command, i.e. what drives the next step (the
    convention of :class:`bam_sim.bench.stepper.BenchStepper`'s samples).
    """

    q: np.ndarray
    dq: np.ndarray
    goal: np.ndarray
    torque_enable: np.ndarray
    gain: np.ndarray
    control: np.ndarray
    motor_torque: np.ndarray


@nb.njit(cache=True)
def _update(ints, params, consts, work, rows, motor_state, qpos, qvel, qfrc_smooth,
            qfrc_constraint, qfrc_applied, efc_type, efc_id, efc_force, ctrl, frictionloss,
            damping, armature, dt):
    """Steps 1-3 of the module docstring for every servo joint (before mj_step)."""
    for i in range(ints.shape[0]):
        dof = ints[i, I_DADR]
        p = params[i]
        q = qpos[ints[i, I_QADR]]
        dq = qvel[dof]
        own_friction = 0.0
        for r in range(efc_type.size):
            if efc_type[r] == FRICTION_DOF and efc_id[r] == dof:
                own_friction += efc_force[r]
        tau_e = (qfrc_smooth[dof] - work[i, W_PREV_TAU_M]
                 + work[i, W_PREV_KV] * work[i, W_PREV_DQ]
                 + qfrc_constraint[dof] - own_friction)
        model = ints[i, I_MODEL]
        target = servo.firmware_target(p, work[i, W_TARGET], work[i, W_GOAL], dt)
        work[i, W_TARGET] = target
        if p[P.BACKLASH] > 0.0:  # M1..M6 on a servo law (ParameterSet refuses the rest)
            _update_backlash(i, ints, p, consts[i], work, q, dq, own_friction, tau_e, target,
                             ctrl, frictionloss, damping, armature, qvel, dt)
            continue
        if ints[i, I_MOTOR] != 0:
            tau_m, lugre, control, current = motor_torque(
                ints[i, I_FAMILY], p, consts[i], rows[i], motor_state[i], work[i, W_KP], q, dq,
                target, work[i, W_ENABLE] != 0.0, False, 0.0, dt)
            work[i, W_CURRENT] = current
            if model == LUGRE_ID:
                _update_lugre(i, p, work, tau_m, lugre, tau_e, dq, control, ctrl,
                              ints[i, I_ACT], frictionloss, damping, dof)
                continue
        else:
            tau_m, control = servo.servo_torque(
                ints[i, I_FAMILY], p, consts[i], work[i, W_KP], q, dq, target,
                work[i, W_ENABLE] != 0.0,
            )
        if model >= EP_FIRST:
            _update_elastoplastic(i, model - EP_FIRST, p, work, tau_m, tau_e, dq, control,
                                  ctrl, ints[i, I_ACT], frictionloss, damping, dof, dt)
            continue
        _update_budget(i, model, p, work, tau_m, tau_e, dq, control, ctrl, ints[i, I_ACT],
                       frictionloss, damping, dof)
    _slide(ints, work, qfrc_applied, frictionloss, armature, dt)


@nb.njit(cache=True, inline=into_rollouts)
def _update_budget(i, model, p, work, tau_m, tau_e, dq, control, ctrl, act, frictionloss,
                   damping, dof):
    """An M1..M6 joint: τ_m into ctrl, the budget into MuJoCo's friction row and damping."""
    budget = friction_budget(model, p, tau_m, tau_e, dq)
    viscous = p[P.KV]
    # Rounding can make budget − K_v|q̇| a hair negative; MuJoCo wants ≥ 0.
    _apply(i, work, ctrl, act, frictionloss, damping, dof, tau_m,
           max(budget - viscous * abs(dq), 0.0), viscous, dq, control, tau_m, tau_e, budget)
    work[i, W_SLIDE] = 0.0  # may slide (_slide)


@nb.njit(cache=True, inline=into_rollouts)
def _slide(ints, work, qfrc_applied, frictionloss, armature, dt):
    """The friction of the M1..M6 joints that surely slide this step, through their motor.

    MuJoCo's friction row of a joint whose velocity keeps its sign over the step is in its
    linear zone: its force is the bound, ∓frictionloss, the same as that force applied to
    the joint (MuJoCo's solve is convex: with the other rows it has one solution). Applied
    so (in ``qfrc_applied``, beside what a user applies there: the actuator's force stays
    the motor's), the row leaves the constraint solve, which is most of a servo joint's cost in
    MuJoCo; without any row left, MuJoCo skips the solve. The sign is sure when the speed
    exceeds what one step could take off it, bounded by the last step's change plus every
    servo torque's change over the smallest rotor inertia (the mass matrix is at least
    the armatures), twice, and SLIDE_FLOOR. A turn the bound missed is counted
    (W_SLIDE_MISSES); the next step, slow, keeps the row."""
    change, inertia = 0.0, np.inf
    for i in range(ints.shape[0]):
        qfrc_applied[ints[i, I_DADR]] -= work[i, W_SLID]  # the last step's
        work[i, W_SLID] = 0.0
        change += work[i, W_DTAU]
        inertia = min(inertia, armature[ints[i, I_DADR]])
    if not inertia > 0.0:
        return
    for i in range(ints.shape[0]):
        dof = ints[i, I_DADR]
        row, dq = frictionloss[dof], work[i, W_PREV_DQ]
        if work[i, W_SLIDE] != 0.0 or row == 0.0:
            continue
        reach = SLIDE_MARGIN * (work[i, W_DV] + dt * change / inertia) + work[i, W_SLIDE_FLOOR]
        if abs(dq) > reach:
            force = -row if dq > 0.0 else row
            qfrc_applied[dof] += force
            work[i, W_SLID] = force
            frictionloss[dof] = 0.0
            work[i, W_PREV_TAU_M] += force  # τ_e of the next step leaves it out
            work[i, W_SLIDE] = 1.0


@nb.njit(cache=True, inline=into_rollouts)
def _apply(i, work, ctrl, act, frictionloss, damping, dof, force, row, viscous, dq, control,
           tau_m, tau_e, budget):
    """What a joint hands MuJoCo for the next step (``force`` through its motor, ``row``
    its friction row's bound, ``viscous`` its damping) and what it remembers of it: τ_e of
    the next step leaves out what the joint applies itself."""
    if work[i, W_SLIDE] == 1.0 and dq * work[i, W_PREV_DQ] <= 0.0:
        work[i, W_SLIDE_MISSES] += 1.0  # the last step's sliding guess was wrong
    work[i, W_DTAU] = abs(force - work[i, W_PREV_TAU_M])
    work[i, W_DV] = abs(dq - work[i, W_PREV_DQ])
    work[i, W_SLIDE] = -1.0
    ctrl[act] = force * work[i, W_CTRL_SCALE]
    frictionloss[dof] = row
    damping[dof] = viscous
    work[i, W_PREV_TAU_M] = force
    work[i, W_PREV_KV] = viscous
    work[i, W_PREV_DQ] = dq
    work[i, W_CONTROL] = control
    work[i, W_TAU_M] = tau_m
    work[i, W_TAU_E] = tau_e
    work[i, W_BUDGET] = budget


@nb.njit(cache=True)
def _update_backlash(i, ints, p, c, work, q, dq, own_friction, tau_e, target, ctrl,
                     frictionloss, damping, armature, qvel, dt):
    """A joint with a dead band between its motor and its output (module docstring)."""
    dof, act = ints[i, I_DADR], ints[i, I_ACT]
    h, motor_inertia = 0.5 * p[P.BACKLASH], p[P.ARMATURE]
    gap = work[i, W_GAP]
    if gap == APART and abs(work[i, W_MOTOR_POS] - q) >= h:
        # the gap closed in the last step: a plastic impact, the momentum shared
        load = work[i, W_LOAD_INERTIA]
        dq = (motor_inertia * work[i, W_MOTOR_RATE] + load * dq) / (motor_inertia + load)
        qvel[dof] = dq
        work[i, W_LEAD] = h if work[i, W_MOTOR_POS] > q else -h
        gap = CLOSED
    elif gap == CONTACT:
        # the gear's push on the load in the last step: τ_m + τ_f − J_m·q̈
        push = (work[i, W_PREV_TAU_M] + own_friction - work[i, W_PREV_KV] * dq
                - motor_inertia * (dq - work[i, W_PREV_DQ]) / dt)
        if work[i, W_LEAD] * push < 0.0:  # it would pull: the teeth part
            gap = APART
            work[i, W_MOTOR_POS] = q + work[i, W_LEAD]
            work[i, W_MOTOR_RATE] = dq
    enabled = work[i, W_ENABLE] != 0.0
    family = ints[i, I_FAMILY]
    control = servo.control_law(family, p, c, work[i, W_KP], q, dq, target) if enabled else 0.0
    speed = work[i, W_MOTOR_RATE] if gap == APART else dq  # the motor's (its back-EMF)
    tau_m = servo.torque_from_control(family, p, c, control, speed, enabled)
    if gap != APART:
        armature[dof] = motor_inertia
        _update_budget(i, ints[i, I_MODEL], p, work, tau_m, tau_e, dq, control, ctrl, act,
                       frictionloss, damping, dof)
        work[i, W_GAP] = CONTACT
        return
    # apart: the motor (Algorithm 1 with J_m, no load) in the kernel, the load in MuJoCo
    budget = friction_budget(ints[i, I_MODEL], p, tau_m, 0.0, speed)
    tau_f = applied_friction(-(motor_inertia / dt * speed + tau_m), budget)
    speed += dt * (tau_m + tau_f) / motor_inertia
    work[i, W_MOTOR_RATE] = speed
    work[i, W_MOTOR_POS] += dt * speed  # semi-implicit Euler, as MuJoCo steps the load
    armature[dof] = 0.0
    work[i, W_GAP] = APART
    _apply(i, work, ctrl, act, frictionloss, damping, dof, 0.0, 0.0, 0.0, dq, control, tau_m,
           tau_e, budget)


@nb.njit(cache=True)
def _update_elastoplastic(i, form, p, work, tau_m, tau_e, dq, control, ctrl, act,
                          frictionloss, damping, dof, dt):
    """An ep_* joint: f of Algorithm 1 applied with τ_m through the motor, no friction row."""
    f, e = ep_step(form, p, dt, dq, work[i, W_DEFLECTION], tau_m, tau_e)
    work[i, W_DEFLECTION] = e
    _apply(i, work, ctrl, act, frictionloss, damping, dof, tau_m - f, 0.0, 0.0, dq, control,
           tau_m, tau_e, friction_level(form, p, tau_m, tau_e, dq))


@nb.njit(cache=True)
def _update_lugre(i, p, work, tau_m, lugre, tau_e, dq, control, ctrl, act, frictionloss,
                  damping, dof):
    """A LuGre joint: the dcmotor's force (motor and LuGre (9b)) through the motor, σ2 as
    the joint's damping (MuJoCo's implicit damping, as its dcmotor ``damping``)."""
    sigma2 = p[P.LG_S2]
    _apply(i, work, ctrl, act, frictionloss, damping, dof, tau_m + lugre, 0.0, sigma2, dq,
           control, tau_m, tau_e, abs(lugre) + sigma2 * abs(dq))


@nb.njit(cache=True)
def _half_step(ints, work, qpos, qvel, dt):
    """The ½·q̈·Δt² position term of the identification integrator (after mj_step).

    q̈ is taken as (q̇_k+1 − q̇_k)/Δt, the acceleration MuJoCo actually
    integrated (implicit damping included).
    """
    for i in range(ints.shape[0]):
        if ints[i, I_MODEL] >= EP_FIRST or ints[i, I_MODEL] == LUGRE_ID:
            continue  # validated with / defined by semi-implicit Euler (module docstring)
        qpos[ints[i, I_QADR]] += 0.5 * dt * (qvel[ints[i, I_DADR]] - work[i, W_PREV_DQ])


@nb.njit(cache=True, nogil=True)
def _steps(n, half_step, access, model, data, ints, params, consts, work, rows, motor_state,
           qpos, qvel, qfrc_smooth, qfrc_constraint, qfrc_applied, ctrl, frictionloss, damping,
           armature, dt):
    """``n`` steps of :meth:`ServoArm.step` in one call: MuJoCo stepped from the kernel
    (:mod:`bam_sim.mujoco_arm.native_step`), the GIL released."""
    # Views without reference counting in the loop (native_step.unowned).
    ints, params, consts, work = unowned(ints), unowned(params), unowned(consts), unowned(work)
    rows, motor_state = unowned(rows), unowned(motor_state)
    qpos, qvel = unowned(qpos), unowned(qvel)
    qfrc_smooth, qfrc_constraint = unowned(qfrc_smooth), unowned(qfrc_constraint)
    qfrc_applied = unowned(qfrc_applied)
    ctrl, frictionloss, damping = unowned(ctrl), unowned(frictionloss), unowned(damping)
    armature = unowned(armature)
    for _ in range(n):
        efc_type, efc_id, efc_force = constraint_rows(access, data)
        _update(ints, params, consts, work, rows, motor_state, qpos, qvel, qfrc_smooth,
                qfrc_constraint, qfrc_applied, efc_type, efc_id, efc_force, ctrl, frictionloss,
                damping, armature, dt)
        mj_step(access, model, data)
        if half_step:
            _half_step(ints, work, qpos, qvel, dt)


@nb.njit(cache=True, nogil=True)
def _follow(goals, enables, counts, out, half_step, access, model, data, ints, params, consts,
            work, rows, motor_state, qpos, qvel, qfrc_smooth, qfrc_constraint, qfrc_applied,
            ctrl, frictionloss, damping, armature, dt):
    """:meth:`ServoArm.follow` in one call: goal k held for counts[k] steps, the servo
    joints' positions into out[k + 1]."""
    n = ints.shape[0]
    for i in range(n):
        out[0, i] = qpos[ints[i, I_QADR]]
    for k in range(counts.size):
        for i in range(n):
            work[i, W_GOAL] = goals[k, i]
            work[i, W_ENABLE] = 1.0 if enables[k, i] else 0.0
        _steps(counts[k], half_step, access, model, data, ints, params, consts, work, rows,
               motor_state, qpos, qvel, qfrc_smooth, qfrc_constraint, qfrc_applied, ctrl,
               frictionloss, damping, armature, dt)
        for i in range(n):
            out[k + 1, i] = qpos[ints[i, I_QADR]]


@nb.njit(cache=True)
def _servo_outputs(ints, params, consts, work, rows, motor_state, qpos, qvel, dt, out_tau,
                   out_control):
    """τ_m and control of every joint at the current state and command (no side effect)."""
    for i in range(ints.shape[0]):
        target = servo.firmware_target(params[i], work[i, W_TARGET], work[i, W_GOAL], dt)
        if ints[i, I_MOTOR] != 0:  # the motor's states are advanced on a copy
            out_tau[i], _, out_control[i], _ = motor_torque(
                ints[i, I_FAMILY], params[i], consts[i], rows[i].copy(), motor_state[i].copy(),
                work[i, W_KP], qpos[ints[i, I_QADR]], qvel[ints[i, I_DADR]], target,
                work[i, W_ENABLE] != 0.0, False, 0.0, dt)
            continue
        out_tau[i], out_control[i] = servo.servo_torque(
            ints[i, I_FAMILY], params[i], consts[i], work[i, W_KP], qpos[ints[i, I_QADR]],
            qvel[ints[i, I_DADR]], target, work[i, W_ENABLE] != 0.0,
        )


def _name(model: mujoco.MjModel, kind: mujoco.mjtObj, index: int) -> str:
    return mujoco.mj_id2name(model, kind, index) or f"#{index}"


def _joint_index(model: mujoco.MjModel, name: str) -> int:
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if index < 0:
        hinges = [_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(model.njnt)
                  if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
        raise BamError(f"joint '{name}' is not in the MJCF; its hinge joints are: "
                       f"{', '.join(hinges) or 'none'}")
    if model.jnt_type[index] != mujoco.mjtJoint.mjJNT_HINGE:
        kind = mujoco.mjtJoint(model.jnt_type[index]).name
        raise BamError(f"joint '{name}' is a {kind} joint; servo joints must be hinges")
    if model.jnt_actfrclimited[index]:
        raise BamError(f"joint '{name}' has actuatorfrcrange, which would clip the servo "
                       "torque; remove it (the servo model limits the torque)")
    return index


def _motor_scale(model: mujoco.MjModel, name: str, joint: int,
                 joint_name: str) -> tuple[int, float]:
    """Actuator index and 1/(gear·gain): ctrl = τ_m·scale gives the torque τ_m."""
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
    if index < 0:
        names = [_name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(model.nu)]
        raise BamError(f"actuator '{name}' is not in the MJCF; its actuators are: "
                       f"{', '.join(names) or 'none'}")
    is_motor = (model.actuator_trntype[index] == mujoco.mjtTrn.mjTRN_JOINT
                and model.actuator_dyntype[index] == mujoco.mjtDyn.mjDYN_NONE
                and model.actuator_gaintype[index] == mujoco.mjtGain.mjGAIN_FIXED
                and model.actuator_biastype[index] == mujoco.mjtBias.mjBIAS_NONE)
    if not is_motor or model.actuator_trnid[index, 0] != joint:
        raise BamError(f"actuator '{name}' must be a <motor joint=\"{joint_name}\"/>; "
                       "declare one for each servo joint")
    if model.actuator_ctrllimited[index] or model.actuator_forcelimited[index]:
        raise BamError(f"motor '{name}' has a ctrlrange or forcerange, which would clip the "
                       "servo torque; remove it (the servo model limits the torque)")
    gain = float(model.actuator_gear[index, 0] * model.actuator_gainprm[index, 0])
    if gain == 0.0 or not math.isfinite(gain):
        raise BamError(f"motor '{name}' has gear·gain {gain}; give it gear=\"1\"")
    return index, 1.0 / gain


def _per_joint(name: str, values: object, n: int, names: tuple[str, ...],
               current: np.ndarray) -> np.ndarray:
    """A validated float array of length n from a scalar, a sequence or a name->value map."""
    if isinstance(values, Mapping):
        out = current.copy()
        for joint, value in values.items():
            if joint not in names:
                raise BamError(f"{name}: unknown joint '{joint}'; joints are {', '.join(names)}")
            out[names.index(joint)] = _number(name, value)
        return out
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise BamError(f"{name} must be numbers, got {values!r}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise BamError(f"{name} needs {n} values (joints {', '.join(names)}), got shape "
                       f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise BamError(f"{name} holds non-finite values {arr.tolist()}; give finite numbers")
    return arr


def _number(name: str, value: object) -> float:
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    return number(value, name, text=False)


class ServoArm:
    """A MuJoCo model whose hinge joints are servo actuators (M1..M6, ep_*, DC-motor model).

    ``model`` is modified in place (armature, friction, damping, and with
    ``stiff_friction`` the friction constraint's solref/solimp of the servo
    joints): give each ServoArm its own MjModel. ``gains`` defaults to each
    actuator's second Table I gain; every joint starts torque-enabled with its
    goal at its position.
    """

    def __init__(self, model: mujoco.MjModel, joints: Sequence[ArmJoint], *,
                 gains: Sequence[float] | None = None, stiff_friction: bool = True,
                 identification_integrator: bool = False) -> None:
        if not isinstance(model, mujoco.MjModel):
            raise BamError(f"model must be a mujoco.MjModel, got {type(model).__name__}")
        joints = tuple(joints)
        if not joints or not all(isinstance(j, ArmJoint) for j in joints):
            raise BamError("joints must be a non-empty sequence of ArmJoint")
        for j in joints:
            if not isinstance(j.joint, str) or not isinstance(j.actuator, str):
                raise BamError(f"joint and actuator names must be strings, got {j.joint!r}, "
                               f"{j.actuator!r}")
        self.model = model
        self.data = mujoco.MjData(model)
        self.joints = joints
        self.names: tuple[str, ...] = tuple(j.joint for j in joints)
        self._check_unique([j.joint for j in joints], "joint")
        self._half_step = bool(identification_integrator)
        self._check_unique([j.actuator for j in joints], "actuator")
        n = len(joints)
        self._ints = np.zeros((n, N_INTS), dtype=np.int64)
        self._params = np.zeros((n, P.N_PARAMS))
        self._consts = np.zeros((n, N_CONSTS))
        self._work = np.zeros((n, N_WORK))
        self._rows = np.zeros((n, 3, D.N_PARAMS))  # dcmotor rows of DC-motor model joints
        self._motor_state = np.zeros((n, D.N_STATES))
        for i, spec in enumerate(joints):
            self._bind(i, spec, stiff_friction)
        # The armature changed the mass matrix: recompute the constants MuJoCo derives
        # from it at qpos0, among them dof_invweight0, which scales the friction
        # constraint's regularisation (hence the creep at rest, see the docstring).
        mujoco.mj_setConst(model, self.data)
        self._load_inertia()
        for spec in joints:
            self._check_elastoplastic(spec)
        # Table I's second gain of each actuator, then the given ones (a map may
        # name only some joints).
        self._work[:, W_KP] = [j.params.actuator.gains[1] for j in joints]
        if gains is not None:
            self._work[:, W_KP] = self._gains(gains)
        self._work[:, W_ENABLE] = 1.0
        # Views of MjData/MjModel arrays: fixed buffers, fetched once.
        d, m = self.data, self.model
        self._views = (d.qpos, d.qvel, d.qfrc_smooth, d.qfrc_constraint, d.qfrc_applied)
        self._outputs = (d.ctrl, m.dof_frictionloss, m.dof_damping, m.dof_armature)
        # MuJoCo stepped from the kernel, else from Python (the positions are the same).
        self._native = native_step()
        self.reset()

    @classmethod
    def from_mjcf(cls, path: str | Path, joints: Sequence[ArmJoint], **kw) -> ServoArm:
        """Load an MJCF file and bind its servo joints."""
        path = Path(path)
        if not path.is_file():
            raise BamError(f"MJCF file {path} does not exist")
        try:
            model = mujoco.MjModel.from_xml_path(str(path))
        except ValueError as exc:
            raise BamError(f"MuJoCo cannot load {path}: {one_line(exc)}") from None
        return cls(model, joints, **kw)

    @staticmethod
    def _check_unique(names: list[str], what: str) -> None:
        seen = {name for name in names if names.count(name) > 1}
        if seen:
            raise BamError(f"{what} '{sorted(seen)[0]}' is given twice; list each servo once")

    def _bind(self, i: int, spec: ArmJoint, stiff_friction: bool) -> None:
        m = self.model
        if not isinstance(spec.params, ParameterSet):
            raise BamError(f"joint '{spec.joint}': params must be a ParameterSet, got "
                           f"{type(spec.params).__name__}")
        joint = _joint_index(m, spec.joint)
        act, scale = _motor_scale(m, spec.actuator, joint, spec.joint)
        dof = int(m.jnt_dofadr[joint])
        actuator = spec.params.actuator
        motor = uses_motor(actuator.family, spec.params.model_id, spec.params.vector())
        if motor and spec.params.model.elastoplastic:
            raise BamError(f"joint '{spec.joint}': an {spec.params.model.name} set with DC-motor "
                           f"groups ({', '.join(spec.params.groups)}) is simulated on the "
                           "pendulum bench only; use M1..M6 or lugre with groups in the arm")
        if "latency" in spec.params.groups:
            raise BamError(f"joint '{spec.joint}': the latency group is simulated on the pendulum "
                           "bench and in the fit, not in the arm; drop latency.* from its set")
        self._ints[i] = (m.jnt_qposadr[joint], dof, act, spec.params.model_id, actuator.family,
                         int(motor))
        self._params[i] = spec.params.vector()
        self._consts[i] = actuator.consts()
        if spec.supply_voltage is not None:
            volts = _number(f"joint '{spec.joint}' supply_voltage", spec.supply_voltage)
            if volts <= 0.0:
                raise BamError(f"joint '{spec.joint}' supply_voltage must be > 0 V, got {volts}")
            self._consts[i, C_SUPPLY] = volts
        if motor:
            self._rows[i] = motor_rows(actuator.family, spec.params.model_id, self._params[i],
                                       self._consts[i])
        self._work[i, W_CTRL_SCALE] = scale
        m.dof_armature[dof] = self._params[i, P.ARMATURE]
        # The MJCF's own, softer row smooths the friction over a wider band: it keeps it.
        self._work[i, W_SLIDE_FLOOR] = SLIDE_FLOOR if stiff_friction else np.inf
        if stiff_friction:
            m.dof_solref[dof] = (2.0 * m.opt.timestep, 1.0)
            m.dof_solimp[dof, :2] = STIFF_IMPEDANCE

    def set_parameters(self, vectors: np.ndarray) -> None:
        """New parameter vectors (n_joints, N_PARAMS) for the joints' bound models: each
        joint keeps its actuator, friction model and groups, only the values change (a
        fit's candidates). The armature goes into the model and MuJoCo's constants derived
        from the mass matrix are recomputed, as at binding; ``reset`` before rolling out."""
        vectors = np.asarray(vectors, dtype=np.float64)
        if vectors.shape != self._params.shape:
            raise BamError(f"parameter vectors must be {self._params.shape}, got {vectors.shape}")
        if any(j.params.model.elastoplastic for j in self.joints):
            raise BamError("new values for elasto-plastic joints must pass condition (14): "
                           "bind a new ServoArm with their sets")
        m = self.model
        self._params[:] = vectors
        for i in range(self.n_joints):
            if self._ints[i, I_MOTOR]:
                self._rows[i] = motor_rows(self._ints[i, I_FAMILY], self._ints[i, I_MODEL],
                                           vectors[i], self._consts[i])
            m.dof_armature[self._ints[i, I_DADR]] = vectors[i, P.ARMATURE]
        mujoco.mj_setConst(m, self.data)
        self._load_inertia()

    def _load_inertia(self) -> None:
        """J_l of each joint, its inertia at qpos0 less its motor's: a backlash joint's
        share of momentum in an impact (exact for one joint, approximate in another pose)."""
        dof = self._ints[:, I_DADR]
        self._work[:, W_LOAD_INERTIA] = self.model.dof_M0[dof] - self._params[:, P.ARMATURE]

    def _check_elastoplastic(self, spec: ArmJoint) -> None:
        """Condition (14) and the coupling limit of an ep_* joint at this timestep."""
        if not spec.params.model.elastoplastic:
            return
        m = self.model
        dof = int(m.jnt_dofadr[_joint_index(m, spec.joint)])
        try:
            check_step(spec.params.model, spec.params.actuator, spec.params.vector(),
                       float(m.opt.timestep), float(m.dof_M0[dof]), 0.0,
                       spec.params.actuator.supply_voltage
                       if spec.supply_voltage is None else float(spec.supply_voltage))
        except BamError as exc:
            raise BamError(f"joint '{spec.joint}': {exc}") from None

    def _gains(self, gains: object) -> np.ndarray:
        kp = _per_joint("gains", gains, len(self.names), self.names, self._work[:, W_KP])
        if np.any(kp < 0.0):
            raise BamError(f"gains must be >= 0, got {kp.tolist()}")
        return kp

    # -- state and commands --------------------------------------------------------------

    @property
    def dt(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def n_joints(self) -> int:
        return len(self.names)

    def set_command(self, goals: object = None, torque_enables: object = None,
                    gains: object = None) -> None:
        """New goals (rad), torque enables and gains: arrays in joint order, scalars for
        every joint, or {joint: value} maps; None keeps the current ones."""
        n, names, w = self.n_joints, self.names, self._work
        new_goal = None if goals is None else _per_joint("goals", goals, n, names, w[:, W_GOAL])
        new_enable = None if torque_enables is None else _per_joint(
            "torque_enables", torque_enables, n, names, w[:, W_ENABLE])
        new_kp = None if gains is None else self._gains(gains)
        # Validate everything before changing anything.
        if new_goal is not None:
            w[:, W_GOAL] = new_goal
        if new_enable is not None:
            w[:, W_ENABLE] = new_enable != 0.0
        if new_kp is not None:
            w[:, W_KP] = new_kp

    def step(self, n: int = 1) -> None:
        """Advance n steps of Δt: servo model → ctrl, friction → model, mj_step."""
        m, d = self.model, self.data
        ints, params, consts, work = self._ints, self._params, self._consts, self._work
        qpos, qvel, smooth, constraint, applied = self._views
        ctrl, frictionloss, damping, armature = self._outputs
        dt = m.opt.timestep
        rows, motor_state = self._rows, self._motor_state
        if self._native is not None:
            _steps(n, self._half_step, self._native, m._address, d._address, ints, params,
                   consts, work, rows, motor_state, qpos, qvel, smooth, constraint, applied,
                   ctrl, frictionloss, damping, armature, dt)
            return
        for _ in range(n):  # where the native step is not available (another MuJoCo)
            _update(ints, params, consts, work, rows, motor_state, qpos, qvel, smooth,
                    constraint, applied, d.efc_type, d.efc_id, d.efc_force, ctrl, frictionloss,
                    damping, armature, dt)
            mujoco.mj_step(m, d)
            if self._half_step:
                _half_step(ints, work, qpos, qvel, dt)

    def follow(self, goals: np.ndarray, enables: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Positions (K+1, n) of the servo joints, now and after each of K commands: goal
        row k (rad) with torque enables row k (K, n), held for counts[k] steps (K,).
        What ``set_command`` then ``step`` per row does, in one kernel call where MuJoCo
        is stepped natively."""
        goals = np.ascontiguousarray(goals, dtype=np.float64)
        enables = np.ascontiguousarray(enables, dtype=np.bool_)
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        shape = (counts.size, self.n_joints)
        if goals.shape != shape or enables.shape != shape or np.any(counts < 0):
            raise BamError(f"follow takes goals and enables {shape} and counts >= 0 "
                           f"({counts.size},), got {goals.shape}, {enables.shape}")
        if not np.all(np.isfinite(goals)):
            raise BamError("follow: the goals hold non-finite values; give finite numbers")
        out = np.empty((counts.size + 1, self.n_joints))
        if self._native is None:
            out[0] = self.positions
            for k in range(counts.size):
                self.set_command(goals=goals[k], torque_enables=enables[k].astype(float))
                self.step(int(counts[k]))
                out[k + 1] = self.positions
            return out
        m, d = self.model, self.data
        _follow(goals, enables, counts, out, self._half_step, self._native, m._address,
                d._address, self._ints, self._params, self._consts, self._work, self._rows,
                self._motor_state, *self._views, *self._outputs, m.opt.timestep)
        return out

    def state(self) -> ArmState:
        qadr, dadr = self._ints[:, I_QADR], self._ints[:, I_DADR]
        tau, control = np.empty(self.n_joints), np.empty(self.n_joints)
        _servo_outputs(self._ints, self._params, self._consts, self._work, self._rows,
                       self._motor_state, self.data.qpos, self.data.qvel, self.dt, tau, control)
        w = self._work
        return ArmState(self.data.qpos[qadr].copy(), self.data.qvel[dadr].copy(),
                        w[:, W_GOAL].copy(), w[:, W_ENABLE] != 0.0, w[:, W_KP].copy(),
                        control, tau)

    @property
    def diverged(self) -> bool:
        """Whether MuJoCo found an acceleration not finite since the last :meth:`reset`
        (it then resets the data itself and goes on: what follows is not this arm's)."""
        return bool(self.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number)

    @property
    def positions(self) -> np.ndarray:
        """q (rad) of each servo joint, in joint order (a copy)."""
        return self.data.qpos[self._ints[:, I_QADR]]

    @property
    def external_torque(self) -> np.ndarray:
        """τ_e (N·m) each joint's friction budget used in the last step."""
        return self._work[:, W_TAU_E].copy()

    @property
    def motor_current(self) -> np.ndarray:
        """Current (A) of each joint of the DC-motor model in the last step; NaN elsewhere."""
        return np.where(self._ints[:, I_MOTOR] != 0, self._work[:, W_CURRENT], np.nan)

    @property
    def temperature(self) -> np.ndarray:
        """Winding temperature (°C) of each joint with a thermal group; NaN elsewhere."""
        rise = self._motor_state[:, D.S_TEMPERATURE]
        thermal = (self._ints[:, I_MOTOR] != 0) & (self._rows[:, ON, D.P_RT] > 0.0)
        return np.where(thermal, self._rows[:, ON, D.P_TA] + rise, np.nan)

    @property
    def friction_budget(self) -> np.ndarray:
        """τ_f^m (N·m) of each joint in the last step (viscous part included); for an
        ep_* joint |Φ(q̇)| at its load, F_S at rest."""
        return self._work[:, W_BUDGET].copy()

    def reset(self, q: object = None, dq: object = None) -> None:
        """Reset the simulation (time 0) to joint positions q and velocities dq.

        Defaults: the MJCF's reference positions (qpos0), at rest. Goals are set
        to q; torque enables and gains are kept. The servo joints' friction and
        damping are cleared and the forces recomputed (mj_forward) so that the
        first step's τ_e is the external torque at the new state.
        """
        m, d = self.model, self.data
        qadr, dadr = self._ints[:, I_QADR], self._ints[:, I_DADR]
        n, names = self.n_joints, self.names
        q0 = m.qpos0[qadr]
        q = q0.copy() if q is None else _per_joint("q", q, n, names, q0)
        dq = np.zeros(n) if dq is None else _per_joint("dq", dq, n, names, np.zeros(n))
        mujoco.mj_resetData(m, d)
        d.qpos[qadr] = q
        d.qvel[dadr] = dq
        self._work[:, W_GOAL] = q
        self._work[:, W_TARGET] = q
        d.ctrl[self._ints[:, I_ACT]] = 0.0
        m.dof_frictionloss[dadr] = 0.0
        m.dof_damping[dadr] = 0.0
        self._work[:, W_PREV_TAU_M] = 0.0
        self._work[:, W_PREV_KV] = 0.0
        self._work[:, W_PREV_DQ] = dq
        self._work[:, W_DEFLECTION] = 0.0  # Algorithm 1 line 1
        self._work[:, W_CURRENT] = 0.0
        self._work[:, W_SLIDE] = -1.0
        self._work[:, W_SLID] = 0.0  # mj_resetData cleared qfrc_applied
        for i in range(n):  # the motor's states: slew at the goal, temperature at ambient
            init_state(self._rows[i, ON], self._motor_state[i], float(q[i]), math.nan)
        m.dof_armature[dadr] = self._params[:, P.ARMATURE]
        mujoco.mj_forward(m, d)
        # backlash: the load leaning on the gear as the forces at rest pull it
        lean = np.sign(d.qfrc_smooth[dadr] + d.qfrc_constraint[dadr])
        self._work[:, W_LEAD] = -0.5 * self._params[:, P.BACKLASH] * lean
        self._work[:, W_GAP] = np.where(lean == 0.0, APART, CLOSED)  # no load: mid-gap
        self._work[:, W_MOTOR_POS] = q
        self._work[:, W_MOTOR_RATE] = dq
