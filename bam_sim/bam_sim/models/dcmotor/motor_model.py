"""MuJoCo's DC-motor model composed with a control law: the motor torque of the bench.

Reference: "MuJoCo DC Motor Model" (Google DeepMind). Every equation of the
motor is the kernel of :mod:`bam_sim.models.dcmotor.model`
(:func:`~bam_sim.models.dcmotor.model.motor_step`); this module only maps a BAM
parameter vector (:mod:`bam_sim.models.parameter_vector`, with the optional groups
of :mod:`bam_sim.models.dcmotor.groups`) onto its parameter layout and feeds it
the input of the actuator's control law:

* ``VOLTAGE`` (Dynamixel MX): the duty law (12) gives the terminal voltage
  v = duty·V_in, the dcmotor's ``voltage`` input; without any group this is
  equation (13) of BAM; with the ``hbridge`` group, the mean terminal voltage
  of a drive/coast bridge (:func:`bam_sim.models.servo.laws.bridge_voltage`);
* ``CURRENT`` (eRob): the host's PD current I, clipped to I_heat, is the
  torque request k_t·I of the dcmotor's ``ff`` input, driven back-EMF
  compensated and clipped to ±U_max (MuJoCo 4's current-controlled driver),
  which is BAM's (14)-(15);
* ``DCMOTOR``: MuJoCo's on-board controller with ``input`` position (12),
  the command's gain as k_p, and the ``controller`` group (k_i, k_d, slew,
  anti-windup, v_max).

Downstream the groups apply as in MuJoCo: R(T) (8) and the thermal ODE (7),
the stateful current (4) with its rate limit, the saturation clip (3),
cogging (6) and, for the ``lugre`` friction model, LuGre (9)-(11).

Three parameter rows per set (``ON``, ``REPLAY``, ``OFF``): with torque on,
with a replayed control (the recorded volts for VOLTAGE and DCMOTOR, amperes
for CURRENT, so the dcmotor's controller is bypassed), and with torque off:
the bridge released, no motor torque (K = 0), no current (it is zeroed after
the step), the controller states frozen; temperature, cogging and friction
carry on. A set goes this way (:func:`uses_motor`) when its actuator is a
dcmotor, its model LuGre, or it carries a group that changes the motor; any
other set keeps BAM's exact arithmetic.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor import model as D
from bam_sim.models.kernel_inlining import into_rollouts
from bam_sim.models.model_registry import LUGRE_ID
from bam_sim.models.servo.actuator import C_MAX_VOLTAGE, CURRENT, DCMOTOR
from bam_sim.models.servo.laws import _clip, bridge_voltage, control_law

ON, REPLAY, OFF = 0, 1, 2
N_MODES = 3


@nb.njit(cache=True)
def uses_motor(family: int, model: int, p: np.ndarray) -> bool:
    """Whether a set runs through the DC-motor model (else BAM's servo law alone)."""
    return (family == DCMOTOR or model == LUGRE_ID or p[P.IND_L] > 0.0 or p[P.IND_TE] > 0.0
            or p[P.SAT_TORQUE] > 0.0 or p[P.SAT_CURRENT] > 0.0 or p[P.TH_R] > 0.0
            or p[P.COG_A] != 0.0)


@nb.njit(cache=True)
def fill_motor(family: int, model: int, p: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    """The dcmotor parameter rows ``out[ON]``, ``out[REPLAY]``, ``out[OFF]`` of a set.

    As MuJoCo compiles a ``<dcmotor>``: t_e = L/R when L > 0 (Table 10), τ_max =
    K·i_max when no torque is given (Table 7); gear 1 (the bench's joint is the
    actuator). The controller's k_p is set per step from the command
    (:func:`motor_torque`).
    """
    k, r = p[P.KT], p[P.R]
    tau = p[P.SAT_TORQUE]
    if not tau > 0.0 and p[P.SAT_CURRENT] > 0.0:
        tau = k * p[P.SAT_CURRENT]
    for mode in range(N_MODES):
        d = out[mode]
        d[:] = 0.0
        d[D.P_R] = r
        d[D.P_K] = 0.0 if mode == OFF else k
        d[D.P_TE] = p[P.IND_L] / r if p[P.IND_L] > 0.0 else p[P.IND_TE]
        d[D.P_DIMAX] = p[P.SAT_RATE]
        if tau > 0.0:
            d[D.P_FORCELIMITED], d[D.P_FMIN], d[D.P_FMAX] = 1.0, -tau, tau
        if p[P.TH_R] > 0.0:
            d[D.P_RT], d[D.P_C] = p[P.TH_R], p[P.TH_C]
            d[D.P_ALPHA], d[D.P_T0], d[D.P_TA] = p[P.TH_ALPHA], p[P.TH_T0], p[P.TH_TA]
        d[D.P_COG_A], d[D.P_COG_N], d[D.P_COG_PHASE] = p[P.COG_A], p[P.COG_N], p[P.COG_PHASE]
        if model == LUGRE_ID:
            d[D.P_SIGMA0], d[D.P_SIGMA1] = p[P.LG_S0], p[P.LG_S1]
            d[D.P_FC], d[D.P_FS], d[D.P_VS] = p[P.LG_FC], p[P.LG_FS], p[P.LG_VS]
            d[D.P_B1] = p[P.LG_S2]  # σ2 as MuJoCo's damping (section 2.4), for reports
        d[D.P_GEAR] = 1.0
        d[D.P_SPEC] = D.INPUT_VOLTAGE
        if mode == ON and family == DCMOTOR:
            d[D.P_SPEC] = D.INPUT_POS
            d[D.P_KI], d[D.P_KD] = p[P.CT_KI], p[P.CT_KD]
            d[D.P_SLEW], d[D.P_IMAX], d[D.P_VMAX] = p[P.CT_SLEW], p[P.CT_IMAX], p[P.CT_VMAX]
        elif mode != OFF and family == CURRENT:
            d[D.P_SPEC] = D.INPUT_FF
            d[D.P_VMAX] = c[C_MAX_VOLTAGE]


@nb.njit(cache=True)
def init_state(params: np.ndarray, state: np.ndarray, goal: float, temperature: float) -> None:
    """States at the start of a log: the slew setpoint at the first goal, the temperature
    rise from the measured ``temperature`` (°C; NaN: at ambient), the rest 0."""
    state[:] = 0.0
    if params[D.P_SLEW] > 0.0:
        state[D.S_SLEW] = goal
    if params[D.P_RT] > 0.0 and temperature == temperature:
        state[D.S_TEMPERATURE] = temperature - params[D.P_TA]


@nb.njit(cache=True, inline=into_rollouts)
def torque_request(kt: float, amps: float) -> float:
    """The dcmotor's ``ff`` input of the current law: the torque k_t·I of the host's
    current I (module docstring)."""
    return kt * amps


@nb.njit(cache=True, inline=into_rollouts)
def motor_torque(family: int, p: np.ndarray, c: np.ndarray, pd: np.ndarray, state: np.ndarray,
                 kp: float, q: float, dq: float, goal: float, enabled: bool, replay: bool,
                 control: float, dt: float) -> tuple[float, float, float, float]:
    """One motor step: (τ_m, τ_LuGre, control, current); ``state`` is advanced.

    τ_m is the motor torque (electrical, clipped, plus cogging); τ_LuGre the
    friction the motor model adds (0 unless the model is LuGre); control the
    applied volts or amperes (the dcmotor's terminal voltage for DCMOTOR); the
    current is τ_elec/K, the driver's clip applied.
    """
    mode = OFF if not enabled else (REPLAY if replay else ON)
    d = pd[mode]
    u_pos = u_ff = u_volt = applied = 0.0
    if mode == REPLAY:
        applied = control
        if family == CURRENT:
            u_ff = torque_request(p[P.KT], _clip(control, -p[P.I_HEAT], p[P.I_HEAT]))
        else:  # the bridge's mean terminal voltage (drive/coast: hbridge group)
            u_volt = bridge_voltage(p, c, control, dq)
    elif mode == ON:
        if family == DCMOTOR:
            d[D.P_KP] = kp
            u_pos = goal
        else:
            applied = control_law(family, p, c, kp, q, dq, goal)
            if family == CURRENT:
                u_ff = torque_request(p[P.KT], applied)
            else:
                u_volt = bridge_voltage(p, c, applied, dq)
    force, volts, electric, lugre = D.motor_step(d, state, u_pos, 0.0, u_ff, u_volt, q, dq, dt)
    if mode == OFF:
        state[D.S_CURRENT] = 0.0  # the released bridge: the current dies out
    elif mode == ON and family == DCMOTOR:
        applied = volts
    k = d[D.P_K]
    current = electric / k if k > 0.0 else 0.0
    return force - lugre, lugre, applied, current


def motor_rows(family: int, model: int, p: np.ndarray, consts: np.ndarray) -> np.ndarray:
    """:func:`fill_motor` into a new (3, dcmotor.N_PARAMS) array."""
    out = np.zeros((N_MODES, D.N_PARAMS))
    fill_motor(int(family), int(model), np.ascontiguousarray(p, dtype=np.float64),
               np.ascontiguousarray(consts, dtype=np.float64), out)
    return out


def dcmotor_parameters(params, kp: float = 0.0, consts: np.ndarray | None = None) -> np.ndarray:
    """The :mod:`~bam_sim.models.dcmotor.model` parameter vector of a ParameterSet, torque on.

    What the bench simulates for ``params`` (k_p = ``kp`` for the dcmotor
    family), e.g. for the curves of :mod:`bam_sim.models.dcmotor.curves`.
    """
    act = params.actuator
    rows = motor_rows(act.family, params.model_id, params.vector(),
                      act.consts() if consts is None else consts)
    rows[ON, D.P_KP] = kp if act.family == DCMOTOR else 0.0
    return rows[ON].copy()


def temperature_of(pd: np.ndarray, state: np.ndarray) -> float:
    """Winding temperature (°C) of a state: T_a + the rise; NaN without thermal model."""
    if pd[D.P_RT] > 0.0:
        return float(pd[D.P_TA] + state[D.S_TEMPERATURE])
    return math.nan
