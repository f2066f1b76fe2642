"""The optional parameter groups of MuJoCo's DC-motor model, which any actuator may carry.

Reference: "MuJoCo DC Motor Model" (Google DeepMind), ``shared/reference/
mujoco-dc-motor-model.md``. Its ``dcmotor`` actuator describes a motor by MJCF
attributes grouping sub-attributes (Table 5); a parameter file names them the
same way, nested (``thermal: {resistance: 3.0, capacitance: 40.0}``), and a
parameter set holds them flat as ``group.sub-attribute``:

=============  ==========================================  ==============  =========
group          sub-attributes                              symbols         document
=============  ==========================================  ==============  =========
inductance     L, timeconst                                L, t_e = L/R    (4), T.10
saturation     torque, current, current_rate               τ_max, i_max,   (3), T.10
                                                           (di/dt)_max
thermal        resistance, capacitance, tempcoef,          R_T, C, α,      (7)-(8),
               reftemp, ambient                            T_0, T_a        T.11
cogging        amplitude, poles, phase                     A, N_p, φ       (6), T.8
controller     ki, kd, slewmax, Imax, Vmax                 k_i, k_d, s,    (12),
               (the dcmotor family only)                   I_max, v_max    T.13-16
hbridge        pwm_period (the voltage family only)        T_pwm           (13),
                                                                           Sihite
supply         resistance, min_voltage (voltage family)    R_s, V_min      servo.py
latency        command, reading                            L_c, L_r        rollouts.py
gain           error_gain_ratio (voltage, current)         r               laws.py
backlash       width                                       b               backlash.py
=============  ==========================================  ==============  =========

``supply``, ``latency`` and ``gain`` are not MuJoCo's: the servo's input sagging under
the current it draws through the supply's series resistance
(:mod:`bam_sim.models.servo.laws`), the pure delays between a command and its action and
between a state and its reading (:mod:`bam_sim.bench.rollouts`), and a scale r on the
firmware's P gain, for a servo whose gain unit is not known (the firmware laws' factor
on their duty or current gain, which the Feetech STS law identifies anyway: for those
servos it is a motor parameter, not a group). ``backlash`` is not MuJoCo's either: the
dead band of the gear train between the motor (its armature J_m) and the output the encoder reads
(:mod:`bam_sim.bench.backlash`), with M1..M6 and the servo laws (not through the
DC-motor model, not with the elasto-plastic or LuGre friction).

As MuJoCo: ``inductance.L`` wins over ``timeconst`` (t_e = L/R); ``saturation.torque``
wins over ``current`` (τ_max = K i_max); the thermal state exists when R_T > 0.
``thermal.timeconst`` t_T = R_T C is accepted in a file in place of one of the
other two and turned into it (:func:`thermal_pair`). LuGre's ``lugre`` group is a
friction model of the registry (:mod:`bam_sim.models.model_registry`), and the
dcmotor family's ``resistance``/``motorconst`` are its motor parameters
(:data:`bam_sim.models.parameter_vector.ALIASES`); ``input`` is the dcmotor family's
input mode (only ``position``: the bench commands goal positions; a recorded
voltage is replayed with ``--replay``). The controller's k_p is the command's
gain (MuJoCo 4's torque-space gain, N·m/rad), so a file holds no
``controller.kp``.

Plain data, no numba: parameter files and drivers read it. The numba kernels
that compose these groups with a control law are in
:mod:`bam_sim.models.dcmotor.motor_model`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass

from bam_sim.common.errors import BamError
from bam_sim.models.model_registry import FrictionModel, ParamSpec
from bam_sim.models.servo.actuator import CURRENT, DCMOTOR, FAMILY_NAMES, VOLTAGE, Actuator


@dataclass(frozen=True)
class Group:
    """One optional group: its parameters, those ``fit --groups`` searches, who may carry it."""

    name: str
    title: str
    specs: tuple[ParamSpec, ...]
    identified: tuple[str, ...]
    families: tuple[int, ...] = ()  # the control-law families that carry it (): any

    def carried_by(self, actuator: Actuator) -> bool:
        return not self.families or actuator.family in self.families

    @property
    def family_text(self) -> str:
        return " and ".join(FAMILY_NAMES[f] for f in self.families)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specs)

    def bounds(self, scales: dict[str, float]) -> dict[str, tuple[float, float]]:
        """Identification bounds of the parameters ``fit --groups`` searches."""
        return {s.name: (s.lower * scales.get(s.scale, 1.0), s.upper * scales.get(s.scale, 1.0))
                for s in self.specs if s.name in self.identified}

    def defaults(self, scales: dict[str, float]) -> dict[str, float]:
        """Starting values of every parameter of the group, scaled for an actuator."""
        return {s.name: s.default * scales.get(s.scale, 1.0) for s in self.specs}


def _spec(name: str, symbol: str, unit: str, lower: float, upper: float, default: float,
          scale: str | None = None) -> ParamSpec:
    return ParamSpec(name, symbol, unit, lower, upper, default, scale)


GROUPS: dict[str, Group] = {
    g.name: g
    for g in (
        Group("inductance", "winding inductance (4), stateful current", (
            _spec("inductance.L", "L", "H", 1.0e-5, 2.0e-2, 1.0e-3),
            _spec("inductance.timeconst", "t_e", "s", 1.0e-5, 5.0e-2, 1.0e-3),
        ), ("inductance.L",)),
        Group("saturation", "current saturation (3) and current rate limit", (
            _spec("saturation.torque", "τ_max", "N·m", 1.0, 40.0, 10.0, "friction"),
            _spec("saturation.current", "i_max", "A", 0.1, 4.0, 1.0, "current"),
            _spec("saturation.current_rate", "(di/dt)_max", "A/s", 1.0e2, 1.0e6, 1.0e4),
        ), ("saturation.current",)),
        Group("thermal", "lumped thermal model (7) and R(T) (8)", (
            _spec("thermal.resistance", "R_T", "K/W", 0.5, 20.0, 5.0),
            _spec("thermal.capacitance", "C", "J/K", 0.05, 5.0, 1.0, "thermal"),
            _spec("thermal.tempcoef", "α", "1/K", 0.0, 0.008, 0.0039),
            _spec("thermal.reftemp", "T_0", "°C", -50.0, 150.0, 25.0),
            _spec("thermal.ambient", "T_a", "°C", -50.0, 150.0, 25.0),
        ), ("thermal.resistance", "thermal.capacitance", "thermal.tempcoef")),
        Group("cogging", "cogging torque (6)", (
            _spec("cogging.amplitude", "A", "N·m", 0.0, 0.5, 0.05, "friction"),
            _spec("cogging.poles", "N_p", "", 1.0, 200.0, 6.0),
            _spec("cogging.phase", "φ", "rad", -math.pi, math.pi, 0.0),
        ), ("cogging.amplitude", "cogging.phase")),
        Group("controller", "on-board PID of the dcmotor family (12), section 2.5", (
            _spec("controller.ki", "k_i", "N·m/(rad·s)", 0.0, 200.0, 0.0),
            _spec("controller.kd", "k_d", "N·m·s/rad", 0.0, 5.0, 0.0),
            _spec("controller.slewmax", "s", "rad/s", 0.0, 100.0, 0.0),
            _spec("controller.Imax", "I_max", "rad·s", 0.0, 10.0, 0.0),
            _spec("controller.Vmax", "v_max", "V", 0.0, 100.0, 0.0),
        ), ("controller.ki", "controller.kd"), (DCMOTOR,)),
        # A known constant of the drive (not identified): the PWM period of a drive/coast
        # bridge; the voltage law then averages that bridge (models/dcmotor/hbridge.py).
        Group("hbridge", "drive/coast H-bridge of the voltage law (averaged over a PWM "
              "period)", (_spec("hbridge.pwm_period", "T_pwm", "s", 1.0e-6, 1.0e-2, 5.0e-5),),
              (), (VOLTAGE,)),
        # The supply's series resistance (battery, wires) is identified; its floor (a
        # regulator's or a brown-out's) is a known constant of the bench.
        Group("supply", "input voltage sagging under load (series resistance, floor)", (
            _spec("supply.resistance", "R_s", "Ω", 0.0, 3.0, 0.3),
            _spec("supply.min_voltage", "V_min", "V", 0.0, 100.0, 0.0),
        ), ("supply.resistance",), (VOLTAGE,)),
        # On a bench only L_c + L_r shows (rollouts.py): the fit frees L_c, L_r is held.
        Group("latency", "pure delays of the link: command to action, state to reading", (
            _spec("latency.command", "L_c", "s", 0.0, 0.05, 0.0),
            _spec("latency.reading", "L_r", "s", 0.0, 0.05, 0.0),
        ), ("latency.command",)),
        # A servo whose P gain is in an unknown unit (PACE issue #13): the duty (or the
        # current) per radian is kp·duty_gain·r (kp·current_gain·r), r found with the rest.
        # It trades against k_t/R (k_t for the current law; fit warns).
        Group("gain", "a scale r on the firmware's P gain (an unknown gain unit)", (
            _spec("error_gain_ratio", "r", "", 0.1, 10.0, 1.0),
        ), ("error_gain_ratio",), (VOLTAGE, CURRENT)),
        # Up to ~3°: the STS3215's is about 1° (TheRobotStudio/SO-ARM100#134).
        Group("backlash", "dead band between the motor and the output (the gear train's)", (
            _spec("backlash.width", "b", "rad", 0.0, 0.05, 0.0),
        ), ("backlash.width",)),
    )
}
GROUP_OF: dict[str, str] = {name: g.name for g in GROUPS.values() for name in g.names}
# Weight of the winding-temperature error when the thermal group is identified
# (bam_identify's fit), rad per K: a mean temperature error of 1 K counts as much as a
# mean position error of 1 mrad. With a servo's 1 °C temperature readings (a
# quantization error of 0.25 K on average) the temperature term of a good fit is a few
# 1e-4 rad, the size of a good position MAE, so neither error drowns the other.
DEFAULT_TEMPERATURE_WEIGHT = 1.0e-3
# Weight of the input-voltage error when the supply group is identified, rad per V: a
# bus reads the voltage in steps of 0.1 V (a quantization error of 0.025 V on average,
# 2.5e-4 rad here), so a good fit's voltage term is the size of a good position MAE.
DEFAULT_VOLTAGE_WEIGHT = 1.0e-2
# Sub-attributes of the document a file may use although the set does not hold them.
FILE_ONLY = {"thermal.timeconst", "motorconst.Kt", "motorconst.Ke"}
INPUT_MODES = ("position",)  # the bench commands goal positions (section 2.5.1)
NOT_SUPPORTED = {
    "controller.kp": "the dcmotor controller's k_p is the command's gain (bam/commands, the "
                     "trajectory's kp, N·m/rad); remove controller.kp",
    "nominal": "give resistance and motorconst instead of nominal (Table 7)",
    "damping": "the drag b(ω) of the motor is the friction model's viscous term (lugre."
               "viscous, friction_viscous); remove damping",
}


def allowed_group_names(actuator: Actuator) -> frozenset[str]:
    """Group parameters ``actuator`` may carry (every group; controller: dcmotor only)."""
    return frozenset(name for g in GROUPS.values() if g.carried_by(actuator)
                     for name in g.names)


def carried(values: Mapping[str, object]) -> tuple[str, ...]:
    """The groups ``values`` gives at least one parameter of, in registry order."""
    return tuple(g for g in GROUPS if any(n in values for n in GROUPS[g].names))


def get_group(name: str) -> Group:
    key = str(name).strip().lower()
    if key not in GROUPS:
        raise BamError(f"unknown parameter group '{name}'; choose among {', '.join(GROUPS)}")
    return GROUPS[key]


def group_error(name: str, actuator: Actuator, model: FrictionModel) -> str | None:
    """Why ``name`` cannot be in a set of (actuator, model), when it is about the groups."""
    head = name.split(".", 1)[0]
    if name in NOT_SUPPORTED or head in NOT_SUPPORTED:
        return f"'{name}': {NOT_SUPPORTED.get(name, NOT_SUPPORTED.get(head))}"
    if head == "lugre" and not model.lugre:
        return (f"'{name}' belongs to the LuGre friction model; set model: lugre (this set "
                f"is {model.name})")
    if name == "lugre":
        subs = ", ".join(n.split(".", 1)[1] for n in model.params)
        return f"'lugre' must be a mapping of its sub-attributes ({subs})"
    if "." not in name and name in GROUP_OF:  # a group's plain parameter (gain)
        return _family_error(GROUPS[GROUP_OF[name]], actuator)
    group = GROUPS.get(head)
    if group is None:
        return None
    subs = ", ".join(n.split(".", 1)[1] for n in group.names)
    if name == head:
        return f"group {head} must be a mapping of its sub-attributes ({subs})"
    if name not in group.names:
        close = difflib.get_close_matches(name, group.names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; it has {subs}"
        return f"'{name}' is not a sub-attribute of group {head}{hint}"
    return _family_error(group, actuator)


def _family_error(group: Group, actuator: Actuator) -> str | None:
    if not group.carried_by(actuator):
        return (f"group {group.name} ({group.title}) belongs to the {group.family_text} "
                f"family; {actuator.name} runs its own {FAMILY_NAMES[actuator.family]} law")
    return None


def check_groups(values: Mapping[str, float], where: str = "") -> None:
    """What the groups need beyond each value being plausible (one-line BamError)."""
    origin = f" in {where}" if where else ""
    thermal = [n for n in GROUPS["thermal"].names if n in values]
    if thermal and not (values.get("thermal.resistance", 0.0) > 0.0
                        and values.get("thermal.capacitance", 0.0) > 0.0):
        raise BamError(f"group thermal{origin} needs resistance and capacitance > 0 (or one "
                       "of them and timeconst); give both")
    if "supply.min_voltage" in values and "supply.resistance" not in values:
        raise BamError(f"group supply{origin} has a min_voltage but no resistance; give "
                       "supply.resistance (R_s, Ω)")
    if "supply.resistance" in values and "hbridge.pwm_period" in values:
        raise BamError(f"groups supply and hbridge{origin} are not combined (the averaged "
                       "bridge assumes a stiff supply); drop one of them")
    if values.get("cogging.amplitude", 0.0) != 0.0 and not values.get("cogging.poles", 0.0) > 0:
        raise BamError(f"group cogging{origin} has an amplitude but no poles > 0; give "
                       "cogging.poles (N_p, equation 6)")


def thermal_pair(rt: float, c: float, tth: float, what: str) -> tuple[float, float]:
    """(R_T, C) from two of R_T, C and t_T = R_T C (section 2.3; 0 = not given).

    As MuJoCo's compiler: t_T wins over an inconsistent capacitance.
    """
    if tth > 0.0 and rt > 0.0 and (c == 0.0 or rt * c != tth):
        c = tth / rt
    elif tth > 0.0 and c > 0.0 and rt == 0.0:
        rt = tth / c
    if rt <= 0.0 or c <= 0.0:
        raise BamError(f"{what}: thermal needs two of resistance, capacitance, timeconst "
                       "(all positive)")
    return rt, c


def effective_constant(kt: float, ke: float, what: str) -> float:
    """K = √(K_t K_e) when both are given, else the one given (section 2.1)."""
    if kt < 0.0 or ke < 0.0:
        raise BamError(f"{what}: motor constants must be non-negative, got Kt={kt}, Ke={ke}")
    k = math.sqrt(kt * ke) if kt > 0.0 and ke > 0.0 else max(kt, ke)
    if k <= 0.0:
        raise BamError(f"{what}: motorconst needs Kt or Ke > 0")
    return k
