"""The actuator parameter vector shared by every model.

All models M1..M6 and both actuator families read their parameters from one
flat float64 vector with a fixed layout, so that a population of candidate
parameter sets is a 2-D array ``(population, N_PARAMS)`` that the numba kernels
index without any Python objects. A model simply ignores the entries it does
not use. Names follow ``reference/identified-parameters.md``; the last two
are the virtual spring-damper of the elasto-plastic models (``ep_*``, Cisneros
et al., ``reference/chattering-free-stiction.md`` (4)), which read the BAM
names where the meaning is the same (K_c = F_C, K_c^s = F_S − F_C, K_v = D,
v_s = v_S, K_l, K_l^s):

=================================  ===========  ===========
name                               paper        unit
=================================  ===========  ===========
kt                                 k_t          N·m/A
R                                  R            Ω
armature                           J_m          kg·m²
q_offset                           (bench)      rad
friction_base                      K_c          N·m
friction_stribeck                  K_c^s        N·m
load_friction_base                 K_l          –
load_friction_stribeck             K_l^s        –
load_friction_motor                K_m          –
load_friction_external             K_e          –
load_friction_motor_stribeck       K_m^s        –
load_friction_external_stribeck    K_e^s        –
load_friction_motor_quad           K_m^q        1/(N·m)
load_friction_external_quad        K_e^q        1/(N·m)
dtheta_stribeck                    v_s          rad/s
alpha                              α            –
friction_viscous                   K_v          N·m·s/rad
current_limit                      I_heat       A
contact_stiffness                  K            N·m/rad
contact_damping                    B            N·m·s/rad
=================================  ===========  ===========

Then the optional groups of MuJoCo's DC-motor model ("MuJoCo DC Motor Model",
Tables 10-16), named ``group.sub-attribute`` as the document's MJCF attributes
(a parameter file nests them: ``thermal: {resistance: 3.0, ...}``), read by
:mod:`bam_sim.models.dcmotor.groups`: ``inductance.L``/``timeconst`` (L, t_e),
``saturation.torque``/``current``/``current_rate`` (τ_max, i_max, (di/dt)_max),
``thermal.resistance``/``capacitance``/``tempcoef``/``reftemp``/``ambient``
(R_T, C, α, T_0, T_a), ``cogging.amplitude``/``poles``/``phase`` (A, N_p, φ),
the LuGre friction model's ``lugre.stiffness``/``damping``/``coulomb``/
``static``/``stribeck``/``viscous`` (σ0, σ1, τ_c, τ_s, ω_s, σ2) and the dcmotor
family's ``controller.ki``/``kd``/``slewmax``/``Imax``/``Vmax``; the PWM period
``hbridge.pwm_period`` of a voltage-law servo with a drive/coast bridge. The dcmotor
family calls R and k_t ``resistance`` and ``motorconst`` (Table 7): aliases
of the same entries. Last, the Feetech STS firmware's ``error_gain_ratio`` (a factor
on its duty gain) and ``max_velocity`` (rad/s, the slew rate of its internal target),
named as in the authors' release; 0 in the vector of other servos means "absent".
The ``supply`` group (``supply.resistance`` R_s, ``supply.min_voltage`` V_min) is the
sag of a voltage-law servo's input under load (:mod:`bam_sim.models.servo.laws`); the
``latency`` group (``latency.command``, ``latency.reading``, s) the pure delays of the
link to the servo (:mod:`bam_sim.bench.rollouts`); the ``backlash`` group
(``backlash.width``, rad) the dead band between the motor and the output
(:mod:`bam_sim.bench.backlash`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number

PARAM_NAMES: tuple[str, ...] = (
    "kt",
    "R",
    "armature",
    "q_offset",
    "friction_base",
    "friction_stribeck",
    "load_friction_base",
    "load_friction_stribeck",
    "load_friction_motor",
    "load_friction_external",
    "load_friction_motor_stribeck",
    "load_friction_external_stribeck",
    "load_friction_motor_quad",
    "load_friction_external_quad",
    "dtheta_stribeck",
    "alpha",
    "friction_viscous",
    "current_limit",
    # Appended, so the indices above (and the published files) are unchanged.
    "contact_stiffness",
    "contact_damping",
    # The optional groups of the DC-motor document (models/dcmotor/groups.py), named
    # group.sub-attribute as its MJCF attributes (Tables 10-16), and the LuGre model.
    "inductance.L",
    "inductance.timeconst",
    "saturation.torque",
    "saturation.current",
    "saturation.current_rate",
    "thermal.resistance",
    "thermal.capacitance",
    "thermal.tempcoef",
    "thermal.reftemp",
    "thermal.ambient",
    "cogging.amplitude",
    "cogging.poles",
    "cogging.phase",
    "lugre.stiffness",
    "lugre.damping",
    "lugre.coulomb",
    "lugre.static",
    "lugre.stribeck",
    "lugre.viscous",
    "controller.ki",
    "controller.kd",
    "controller.slewmax",
    "controller.Imax",
    "controller.Vmax",
    "hbridge.pwm_period",
    # The Feetech STS firmware's position loop (models/servo/laws.py): a factor on the duty
    # gain and the rate at which the firmware's target follows the goal.
    "error_gain_ratio",
    "max_velocity",
    # The servo's supply sagging under load (group supply, models/dcmotor/groups.py).
    "supply.resistance",
    "supply.min_voltage",
    # Pure delays of the link to the servo (group latency, models/dcmotor/groups.py).
    "latency.command",
    "latency.reading",
    # The dead band between the motor and the output (group backlash, bench/backlash.py).
    "backlash.width",
)
N_PARAMS = len(PARAM_NAMES)
# The dcmotor family names its motor as the document does (Table 7): resistance is R,
# motorconst the effective constant K (= k_t); the same entries of the vector.
ALIASES = {"resistance": "R", "motorconst": "kt"}
INDEX: dict[str, int] = {name: i for i, name in enumerate(PARAM_NAMES)}
INDEX.update({alias: INDEX[name] for alias, name in ALIASES.items()})
NAMES = PARAM_NAMES + tuple(ALIASES)  # every name a set or a file may use

# Integer indices for the numba kernels (module-level constants are frozen
# into the compiled code, so they cost nothing at run time).
KT = INDEX["kt"]
R = INDEX["R"]
ARMATURE = INDEX["armature"]
Q_OFFSET = INDEX["q_offset"]
KC = INDEX["friction_base"]
KCS = INDEX["friction_stribeck"]
KL = INDEX["load_friction_base"]
KLS = INDEX["load_friction_stribeck"]
KM = INDEX["load_friction_motor"]
KE = INDEX["load_friction_external"]
KMS = INDEX["load_friction_motor_stribeck"]
KES = INDEX["load_friction_external_stribeck"]
KMQ = INDEX["load_friction_motor_quad"]
KEQ = INDEX["load_friction_external_quad"]
VS = INDEX["dtheta_stribeck"]
ALPHA = INDEX["alpha"]
KV = INDEX["friction_viscous"]
I_HEAT = INDEX["current_limit"]
CONTACT_K = INDEX["contact_stiffness"]
CONTACT_B = INDEX["contact_damping"]
IND_L = INDEX["inductance.L"]
IND_TE = INDEX["inductance.timeconst"]
SAT_TORQUE = INDEX["saturation.torque"]
SAT_CURRENT = INDEX["saturation.current"]
SAT_RATE = INDEX["saturation.current_rate"]
TH_R = INDEX["thermal.resistance"]
TH_C = INDEX["thermal.capacitance"]
TH_ALPHA = INDEX["thermal.tempcoef"]
TH_T0 = INDEX["thermal.reftemp"]
TH_TA = INDEX["thermal.ambient"]
COG_A = INDEX["cogging.amplitude"]
COG_N = INDEX["cogging.poles"]
COG_PHASE = INDEX["cogging.phase"]
LG_S0 = INDEX["lugre.stiffness"]
LG_S1 = INDEX["lugre.damping"]
LG_FC = INDEX["lugre.coulomb"]
LG_FS = INDEX["lugre.static"]
LG_VS = INDEX["lugre.stribeck"]
LG_S2 = INDEX["lugre.viscous"]
CT_KI = INDEX["controller.ki"]
CT_KD = INDEX["controller.kd"]
CT_SLEW = INDEX["controller.slewmax"]
CT_IMAX = INDEX["controller.Imax"]
CT_VMAX = INDEX["controller.Vmax"]
HB_PERIOD = INDEX["hbridge.pwm_period"]
GAIN_RATIO = INDEX["error_gain_ratio"]
TARGET_RATE = INDEX["max_velocity"]
SUPPLY_R = INDEX["supply.resistance"]
SUPPLY_VMIN = INDEX["supply.min_voltage"]
LATENCY_COMMAND = INDEX["latency.command"]
LATENCY_READING = INDEX["latency.reading"]
BACKLASH = INDEX["backlash.width"]

# Physically plausible values (unit, low, high; low excluded where the parameter
# divides something): far wider than the identification bounds, which must lie
# inside them, but they catch a value in the wrong units or a typo (kt: 1e30)
# before it silently turns a simulation or a fit into nonsense.
PLAUSIBLE: dict[str, tuple[str, float, float]] = {
    "kt": ("N·m/A", 0.0, 1.0e3),
    "R": ("Ω", 0.0, 1.0e3),
    "armature": ("kg·m²", 0.0, 1.0e2),
    "q_offset": ("rad", -3.15, 3.15),
    "friction_base": ("N·m", 0.0, 1.0e3),
    "friction_stribeck": ("N·m", 0.0, 1.0e3),
    "load_friction_base": ("", 0.0, 10.0),
    "load_friction_stribeck": ("", 0.0, 10.0),
    "load_friction_motor": ("", 0.0, 10.0),
    "load_friction_external": ("", 0.0, 10.0),
    "load_friction_motor_stribeck": ("", 0.0, 10.0),
    "load_friction_external_stribeck": ("", 0.0, 10.0),
    "load_friction_motor_quad": ("1/(N·m)", 0.0, 10.0),
    "load_friction_external_quad": ("1/(N·m)", 0.0, 10.0),
    "dtheta_stribeck": ("rad/s", 0.0, 1.0e3),
    "alpha": ("", 0.0, 100.0),
    "friction_viscous": ("N·m·s/rad", 0.0, 1.0e3),
    "current_limit": ("A", 0.0, 1.0e3),
    "contact_stiffness": ("N·m/rad", 0.0, 1.0e8),
    "contact_damping": ("N·m·s/rad", 0.0, 1.0e6),
    "resistance": ("Ω", 0.0, 1.0e3),
    "motorconst": ("N·m/A", 0.0, 1.0e3),
    "inductance.L": ("H", 0.0, 10.0),
    "inductance.timeconst": ("s", 0.0, 10.0),
    "saturation.torque": ("N·m", 0.0, 1.0e4),
    "saturation.current": ("A", 0.0, 1.0e4),
    "saturation.current_rate": ("A/s", 0.0, 1.0e9),
    "thermal.resistance": ("K/W", 0.0, 1.0e4),
    "thermal.capacitance": ("J/K", 0.0, 1.0e7),
    "thermal.tempcoef": ("1/K", -0.1, 0.1),
    "thermal.reftemp": ("°C", -273.15, 1.0e3),
    "thermal.ambient": ("°C", -273.15, 1.0e3),
    "cogging.amplitude": ("N·m", -1.0e3, 1.0e3),
    "cogging.poles": ("", 0.0, 1.0e4),
    "cogging.phase": ("rad", -1.0e3, 1.0e3),
    "lugre.stiffness": ("N·m/rad", 0.0, 1.0e9),
    "lugre.damping": ("N·m·s/rad", 0.0, 1.0e6),
    "lugre.coulomb": ("N·m", 0.0, 1.0e3),
    "lugre.static": ("N·m", 0.0, 1.0e3),
    "lugre.stribeck": ("rad/s", 0.0, 1.0e3),
    "lugre.viscous": ("N·m·s/rad", 0.0, 1.0e3),
    "controller.ki": ("N·m/(rad·s)", 0.0, 1.0e6),
    "controller.kd": ("N·m·s/rad", 0.0, 1.0e6),
    "controller.slewmax": ("rad/s", 0.0, 1.0e6),
    "controller.Imax": ("rad·s", 0.0, 1.0e6),
    "controller.Vmax": ("V", 0.0, 1.0e4),
    "hbridge.pwm_period": ("s", 0.0, 1.0),
    "error_gain_ratio": ("", 0.0, 100.0),
    "max_velocity": ("rad/s", 0.0, 1.0e3),
    "supply.resistance": ("Ω", 0.0, 1.0e2),
    "supply.min_voltage": ("V", 0.0, 1.0e3),
    "latency.command": ("s", 0.0, 1.0),
    "latency.reading": ("s", 0.0, 1.0),
    "backlash.width": ("rad", 0.0, 0.5),
}
# Parameters that must be strictly positive (they divide something).
STRICTLY_POSITIVE = frozenset({"kt", "R", "dtheta_stribeck", "alpha", "contact_stiffness",
                               "contact_damping", "resistance", "motorconst",
                               "lugre.stiffness", "lugre.stribeck", "error_gain_ratio",
                               "max_velocity"})


def check_value(name: str, value: object, where: str = "") -> float:
    """Return ``value`` as a float after checking it is finite and physically plausible.

    Raises :class:`BamError` naming the field (and ``where`` it came from).
    """
    origin = f" in {where}" if where else ""
    if name not in INDEX:
        raise BamError(
            f"unknown parameter '{name}'{origin}; known parameters: {', '.join(NAMES)}"
        )
    x = number(value, f"parameter '{name}'{origin}")
    unit, low, high = PLAUSIBLE[name]
    low_open = name in STRICTLY_POSITIVE
    if x > high or x < low or (low_open and x == low):
        span = f"{'(' if low_open else '['}{low:g}, {high:g}] {unit}".rstrip()
        raise BamError(f"parameter '{name}'{origin} = {x:g} is outside its plausible range "
                       f"{span}; check the value and its units (SI)")
    return x


def to_vector(values: Mapping[str, float], base: np.ndarray | None = None) -> np.ndarray:
    """Pack a name->value mapping into a parameter vector (unused entries stay 0)."""
    vec = np.zeros(N_PARAMS) if base is None else np.array(base, dtype=np.float64)
    for name, value in values.items():
        vec[INDEX[name]] = check_value(name, value)
    return vec


def from_vector(vec: np.ndarray, names: tuple[str, ...] | list[str]) -> dict[str, float]:
    """Unpack the named entries of a parameter vector."""
    return {name: float(vec[INDEX[name]]) for name in names}
