"""Actuator definitions: the constants of each servo that are not identified.

Constants of the MX and eRob servos come from
``reference/identified-parameters.md`` ("Actuator constants"), which reports
those the published parameter sets were identified with; their
identification setups are the paper's Table I. The Dynamixel XL-320 and
XL330 constants are those of the authors' release that identified their
published sets (``better-actuator-models`` 1.0.2, ``bam/dynamixel/actuator.py``:
supply, firmware gain, duty gain measured with an oscilloscope or derived
from the XL330's registers, PWM limit, XL330 current limit); their bench
setups are lighter pendulums chosen here for synthetic data. The Feetech
STS3215 constants come from the same release (``bam/feetech/actuator.py``:
7.4 V supply, duty gain 0.166 per radian and unit of the P register measured
with an oscilloscope, PWM limit 0.97, the firmware target's default rate of
3400 steps/s), and the 12 V set of its branch ``add_sts3215_12v_params``
(commit ce4176b) was identified with the same law at 12 V; its M2..M6 sets are those
of Rhoban/bam commit 31e5b97 (``bam/params/feetech_sts3215_7_4V``). The Waveshare
ST3025 (12 V) is the law of Rhoban/bam pull request #12 at commit 27f3fa5
(``bam/waveshare/actuator.py``): the STS duty law with the STS3215's duty gain 0.166
and its fitted ``error_gain_ratio``, no target slew, PWM limit 1.0 (BAM's default: the
ST3025's own limit is not measured), no firmware current limit, no gear ratio or
encoder term in the law. Plain data (no numba): the drivers read it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bam_sim.common.errors import BamError

# Control-law families (the servo laws of servo.py branch on them; DCMOTOR is the
# on-board controller of MuJoCo's dcmotor, composed in models/dcmotor/groups.py).
VOLTAGE, CURRENT, DCMOTOR = 0, 1, 2
FAMILY_NAMES = {VOLTAGE: "voltage", CURRENT: "current", DCMOTOR: "dcmotor"}
CONTROL_UNITS = {VOLTAGE: "V", CURRENT: "A", DCMOTOR: "V"}

# Layout of the actuator constant vector handed to the numba kernels.
C_SUPPLY, C_DUTY_GAIN, C_MAX_DUTY, C_MAX_VOLTAGE, C_DAMPING, C_FIRMWARE_CURRENT = range(6)
N_CONSTS = 6


@dataclass(frozen=True)
class Actuator:
    """A servo actuator: its control law, constants and identification ranges."""

    name: str
    title: str
    family: int
    supply_voltage: float
    # Voltage family: duty = kp·duty_gain·error, |duty| <= max_duty; with a firmware
    # current limit (A, 0: none; not the eRob's identified current_limit, I_heat) the duty
    # is first held where |I| <= firmware_current_limit.
    duty_gain: float = 0.0
    max_duty: float = 0.0
    firmware_current_limit: float = 0.0
    # Current family: U_max of the back-EMF limit and the PD damping factor d.
    max_voltage: float = 0.0
    damping: float = 0.0
    # Motor parameters identified with the friction model, with their bounds.
    motor_bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Parameters held fixed (not identified), e.g. I_heat.
    fixed: dict[str, float] = field(default_factory=dict)
    # Scales of the friction-parameter bounds (see model_registry.ParamSpec), and bounds
    # of single friction parameters that differ for this servo.
    scales: dict[str, float] = field(default_factory=dict)
    friction_bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Values the reference's actuator starts from, filled in when a legacy BAM JSON file
    # identified before the parameter existed omits it.
    legacy_defaults: dict[str, float] = field(default_factory=dict)
    gains: tuple[float, ...] = ()
    # Commands the actuator accepts: goal positions (rad) and the largest gain kp.
    goal_range: tuple[float, float] = (-math.pi, math.pi)
    gain_limit: float = 0.0
    masses: tuple[float, ...] = ()
    lengths: tuple[float, ...] = ()
    # The hardware side, the one place that says it: the bam_drivers driver that runs the
    # actuator ("" = none, simulation only), its default control table there (a servo's
    # register map, or an EtherCAT drive model), and the published model the driver's
    # emulator simulates it with by default.
    driver: str = ""
    control_table: str = ""
    emulator_model: str = ""

    def __hash__(self) -> int:
        # Equal actuators have equal names; the dict fields keep the generated hash out.
        return hash(self.name)

    @property
    def control_unit(self) -> str:
        return CONTROL_UNITS[self.family]

    def consts(self) -> np.ndarray:
        """The constant vector the numba kernels read (layout above)."""
        c = np.zeros(N_CONSTS)
        c[C_SUPPLY] = self.supply_voltage
        c[C_DUTY_GAIN] = self.duty_gain
        c[C_MAX_DUTY] = self.max_duty
        c[C_MAX_VOLTAGE] = self.max_voltage
        c[C_DAMPING] = self.damping
        c[C_FIRMWARE_CURRENT] = self.firmware_current_limit
        return c


def _dynamixel(name: str, title: str, kt: tuple, r: tuple, armature: tuple, **kw) -> Actuator:
    return Actuator(
        name=name, title=title, family=VOLTAGE, supply_voltage=15.0,
        driver="dynamixel", control_table=f"{name}_p1", emulator_model="m4",
        duty_gain=0.158, max_duty=0.9625,
        motor_bounds={"kt": kt, "R": r, "armature": armature},
        # stiffness, damping: the elasto-plastic spring-damper (K, B), whose sticking
        # is stable when T·(K·T + 2B) < 4J: J ≥ 0.015 kg·m² on these benches.
        scales={"friction": 0.5, "viscous": 0.2, "stiffness": 1500.0, "damping": 3.0,
                "current": 5.0, "thermal": 20.0},
        gains=(4.0, 8.0, 16.0, 32.0), masses=(0.5, 1.0, 1.5), lengths=(0.1, 0.15, 0.2),
        # One turn of the position register; the P-gain register of protocol 1.0 (0..254).
        goal_range=(-math.pi, math.pi - 2.0 * math.pi / 4096), gain_limit=254.0, **kw,
    )


# The XL330's duty per radian and unit of its P gain: encoder counts per radian over the
# firmware's gain divisor (256, observed by the authors; the manual says 128) times the
# PWM limit register (885 = full duty).
XL330_DUTY_GAIN = (4096.0 / (2.0 * math.pi)) / (256.0 * 885.0)
XL_SCALES = {"friction": 0.5, "viscous": 0.2, "stiffness": 150.0, "damping": 0.3,
             "current": 2.0, "thermal": 20.0}


def _dynamixel_xl(name: str, title: str, table: str, duty_gain: float, gains: tuple,
                  gain_limit: float, goal_range: tuple, motor_bounds: dict, masses: tuple,
                  lengths: tuple, firmware_current_limit: float = 0.0) -> Actuator:
    return Actuator(
        name=name, title=title, family=VOLTAGE, supply_voltage=7.5, duty_gain=duty_gain,
        driver="dynamixel", control_table=table, emulator_model="m4",
        max_duty=1.0, firmware_current_limit=firmware_current_limit, motor_bounds=motor_bounds,
        # The release identified the XL sets with the Stribeck exponent α in [0.5, 10]
        # (its XL330 M6 set has α = 8.7).
        scales=XL_SCALES, friction_bounds={"alpha": (0.5, 10.0)}, gains=gains,
        masses=masses, lengths=lengths,
        goal_range=goal_range, gain_limit=gain_limit,
    )


# The STS firmware's target rate by default: 3400 steps/s of its 4096-step turn.
STS_TARGET_RATE = 3400.0 * 2.0 * math.pi / 4096.0


def _feetech_sts(name: str, title: str, supply: float) -> Actuator:
    return Actuator(
        name=name, title=title, family=VOLTAGE, supply_voltage=supply,
        # M1 is published at both supplies (M2..M6 at 7.4 V since Rhoban/bam 31e5b97).
        driver="feetech", control_table=name, emulator_model="m1",
        duty_gain=0.166, max_duty=0.97,
        # The release frees the duty gain's ratio and the target rate with the motor.
        motor_bounds={"kt": (0.05, 2.5), "R": (0.1, 10.0), "armature": (1e-5, 0.04),
                      "error_gain_ratio": (0.1, 10.0),
                      "max_velocity": (0.1 * STS_TARGET_RATE, 10.0 * STS_TARGET_RATE)},
        legacy_defaults={"error_gain_ratio": 1.0, "max_velocity": STS_TARGET_RATE},
        scales={"friction": 0.5, "viscous": 0.2, "stiffness": 1500.0, "damping": 3.0,
                "current": 5.0, "thermal": 20.0},
        # P coefficient register 0..254 (default 32); one turn of 4096 steps.
        gains=(8.0, 16.0, 32.0, 64.0), masses=(0.2, 0.35, 0.5), lengths=(0.1, 0.15, 0.2),
        goal_range=(-math.pi, math.pi - 2.0 * math.pi / 4096), gain_limit=254.0,
    )


def _waveshare_st3025() -> Actuator:
    # Rhoban/bam 27f3fa5 bam/waveshare/actuator.py: vin 12 V, kp 32, error_gain 0.166,
    # max_pwm 1.0; it identifies kt in [0.05, 2.5] (from the datasheet's 0.8826 N·m/A),
    # error_gain_ratio in [0.1, 10], R in [0.1, 10], armature in [1e-5, 0.04]. No driver
    # here: upstream runs it with the STS3215's position control, but our Feetech driver
    # has no ST3025 control table (limits, supply check) to serve it with.
    return Actuator(
        name="st3025", title="Waveshare ST3025 (12 V)", family=VOLTAGE, supply_voltage=12.0,
        duty_gain=0.166, max_duty=1.0,
        motor_bounds={"kt": (0.05, 2.5), "R": (0.1, 10.0), "armature": (1e-5, 0.04),
                      "error_gain_ratio": (0.1, 10.0)},
        legacy_defaults={"error_gain_ratio": 1.0},
        scales={"friction": 0.5, "viscous": 0.2, "stiffness": 1500.0, "damping": 3.0,
                "current": 5.0, "thermal": 20.0},
        # Upstream's bench: P gains 4, 8, 16, 32 (8 held out there as the test gain).
        gains=(4.0, 8.0, 16.0, 32.0), masses=(0.2, 0.35, 0.5), lengths=(0.1, 0.15, 0.2),
        goal_range=(-math.pi, math.pi - 2.0 * math.pi / 4096), gain_limit=254.0,
    )


def _erob(name: str, title: str, damping: float, bounds: dict, fixed: dict,
          scales: dict) -> Actuator:
    return Actuator(
        name=name, title=title, family=CURRENT, supply_voltage=48.0,
        driver="erob", control_table=name, emulator_model="m6",
        max_voltage=48.0, damping=damping, motor_bounds=bounds,
        fixed={"current_limit": 12.0, **fixed}, scales=scales,
        gains=(10.0, 25.0, 50.0, 100.0), masses=(3.1, 8.2, 12.7, 14.6, 19.6), lengths=(0.5,),
        # Multi-turn: no register bound here; absurd goals and gains are still refused.
        goal_range=(-1000.0, 1000.0), gain_limit=1.0e4,
    )


def _dcmotor() -> Actuator:
    # A generic motor with MuJoCo's on-board position controller ("MuJoCo DC Motor
    # Model" section 2.5, MuJoCo 4's torque-space gains): the command's gain is k_p
    # (N·m/rad). Bounds span small servo motors; the bench is the Dynamixel one.
    return Actuator(
        name="dcmotor", title="DC motor (MuJoCo dcmotor controller)", family=DCMOTOR,
        supply_voltage=24.0,
        motor_bounds={"motorconst": (0.05, 3.0), "resistance": (0.2, 20.0),
                      "armature": (0.001, 0.1)},
        scales={"friction": 0.5, "viscous": 0.2, "stiffness": 1500.0, "damping": 3.0,
                "current": 5.0, "thermal": 20.0},
        gains=(5.0, 10.0, 20.0, 40.0), masses=(0.5, 1.0, 1.5), lengths=(0.1, 0.15, 0.2),
        goal_range=(-1000.0, 1000.0), gain_limit=1.0e4,
    )


ACTUATORS: dict[str, Actuator] = {
    a.name: a
    for a in (
        _dynamixel("mx64", "Dynamixel MX-64", (0.5, 3.0), (1.0, 6.0), (0.001, 0.05)),
        _dynamixel("mx106", "Dynamixel MX-106", (0.5, 4.0), (1.0, 6.0), (0.002, 0.08)),
        _erob(
            "erob80_50", "eRob80:50", 1.0,
            {"kt": (2.0, 10.0), "R": (0.3, 5.0), "armature": (0.05, 1.0)},
            {}, {"friction": 10.0, "viscous": 5.0, "stiffness": 5.0e4, "damping": 200.0,
                 "current": 20.0, "thermal": 200.0},
        ),
        _erob(
            "erob80_100", "eRob80:100", 2.0,
            {"kt": (4.0, 15.0), "armature": (0.2, 2.0)},
            {"R": 2.0}, {"friction": 15.0, "viscous": 20.0, "stiffness": 5.0e4,
                         "damping": 200.0, "current": 20.0, "thermal": 200.0},
        ),
        # Protocol 2.0: a 300° position register of 1024 steps; P gain 0..254.
        _dynamixel_xl("xl320", "Dynamixel XL-320", "xl320", 0.05048199,
                      (8.0, 16.0, 32.0, 64.0), 254.0,
                      (-5.0 * math.pi / 6.0, 5.0 * math.pi / 6.0),
                      {"kt": (0.25, 1.5), "R": (3.0, 40.0), "armature": (1e-4, 0.01)},
                      masses=(0.05, 0.1, 0.15), lengths=(0.05, 0.1, 0.15)),
        # One turn of 4096 steps; P gain 0..16383 (default 400); 1.75 A current limit.
        # Near its limits, from evidence (the authors' XL330 logs, docs/how-to/real-logs.md;
        # ROBOTIS e-Manual, XL330-M288 control table):
        # - position mode under a sagging supply: the firmware's duty does not depend on
        #   the supply. The recorded Present PWM equals kp·duty_gain·(goal − q) to 0.5 %
        #   (99th percentile) while input_volts sags to 6.0 V, so the law applies
        #   duty·V_in: modelled (the law; the `supply` group for the sag).
        # - PWM Limit(36) = 885 (full duty, max_duty 1.0): modelled; reached only at kp
        #   400, where the law asks up to 1.4 times full duty and the recorded duty stops
        #   at 885. PWM Slope(62) (140: 277 mV/ms) is not modelled: the law's duty moves
        #   0.08 per 5 ms at most (kp 400), under half of the slope.
        # - Current Limit(38) = 1,750 mA: kept because the authors' release models it
        #   (max_current) and the published sets were identified with it. The e-Manual
        #   applies it in torque and current-based position modes only, and the logs agree:
        #   at kp 400 the current estimated from the recorded duty, input_volts and speed
        #   passes 1.75 A while the recorded duty still follows the law. Removing it moves
        #   the kp 400 validation of the kp 100+200 fits by 0.002 rad at most
        #   (benchmarks/xl330_gains.py): not what the model misses at high gain.
        # - Supply: the bus sits ~0.2 V under 7.4 V on average at every gain and its dips
        #   do not follow the estimated current (correlation about 0 or negative): a
        #   series resistance of a few tenths of an ohm at most. A fitted `supply` group
        #   (R_s at its 3 ohm bound) lowers the torque at high duty and so the position
        #   error, but simulates a V_in a volt below the bus at kp 400: a stand-in,
        #   documented as such (docs/how-to/real-logs.md).
        _dynamixel_xl("xl330", "Dynamixel XL330", "xl330_m288", XL330_DUTY_GAIN,
                      (100.0, 200.0, 400.0, 800.0), 16383.0,
                      (-math.pi, math.pi - 2.0 * math.pi / 4096),
                      {"kt": (0.1, 3.0), "R": (2.0, 5.0), "armature": (1e-4, 0.05)},
                      # Loads up to its 1.75 A limit (k_t·1.75 ≈ 0.64 N·m).
                      masses=(0.1, 0.2, 0.3), lengths=(0.1, 0.15, 0.2),
                      firmware_current_limit=1.75),
        _feetech_sts("sts3215", "Feetech STS3215 (7.4 V)", 7.4),
        _feetech_sts("sts3215_12v", "Feetech STS3215 (12 V)", 12.0),
        _waveshare_st3025(),
        _dcmotor(),
    )
}


def get_actuator(name: str) -> Actuator:
    """Lookup by name (mx64, mx106, xl320, xl330, sts3215, sts3215_12v, st3025, erob80_50, ...)."""
    key = str(name).strip().lower()
    if key not in ACTUATORS:
        raise BamError(f"unknown actuator '{name}'; choose one of {', '.join(ACTUATORS)}")
    return ACTUATORS[key]


DRIVERS: tuple[str, ...] = tuple(dict.fromkeys(a.driver for a in ACTUATORS.values() if a.driver))


def driven_by(driver: str) -> tuple[str, ...]:
    """The actuators ``driver`` runs, in registry order (every list of them derives here)."""
    if driver not in DRIVERS:
        raise BamError(f"unknown driver '{driver}'; choose one of {', '.join(DRIVERS)}")
    return tuple(name for name, a in ACTUATORS.items() if a.driver == driver)
