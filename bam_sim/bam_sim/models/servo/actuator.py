"""The actuator: the constants of a servo that are not identified, and its bounds.

One :class:`Actuator` is one servo type: its firmware's control law (the family and its
constants), the commands it accepts, the bench it is identified on, the bounds of its
identification, and the hardware that runs it. Actuators are data, declared in YAML
files (:mod:`bam_sim.models.servo.actuator_file`); the shipped ones are in
``shipped/`` and listed by :mod:`bam_sim.models.servo.actuators`. Plain data (no numba):
the drivers read it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Control-law families (the servo laws of servo.py branch on them; DCMOTOR is the
# on-board controller of MuJoCo's dcmotor, composed in models/dcmotor/groups.py).
VOLTAGE, CURRENT, DCMOTOR = 0, 1, 2
FAMILY_NAMES = {VOLTAGE: "voltage", CURRENT: "current", DCMOTOR: "dcmotor"}
CONTROL_UNITS = {VOLTAGE: "V", CURRENT: "A", DCMOTOR: "V"}

# Layout of the actuator constant vector handed to the numba kernels.
(C_SUPPLY, C_DUTY_GAIN, C_MAX_DUTY, C_MAX_VOLTAGE, C_DAMPING, C_FIRMWARE_CURRENT,
 C_CURRENT_GAIN) = range(7)
N_CONSTS = 7


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
    # Current family: U_max of the back-EMF limit, the PD damping factor d, and the current
    # per radian and unit of the gain (A; 1: a gain in A/rad, as the eRob's host law).
    max_voltage: float = 0.0
    damping: float = 0.0
    current_gain: float = 1.0
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
    # Commands the actuator accepts: goal positions (rad) and the largest gain kp, and
    # what one unit of that gain is on the hardware (the register, for the reader).
    goal_range: tuple[float, float] = (-math.pi, math.pi)
    gain_limit: float = 0.0
    gain_unit: str = ""
    # Position counts per output turn of an actuator no driver runs (a driven one's comes
    # from its control table, bam_drivers.encoder); 0: a continuous reading.
    encoder_resolution: int = 0
    masses: tuple[float, ...] = ()
    lengths: tuple[float, ...] = ()
    # The hardware side, the one place that says it: the bam_drivers driver that runs the
    # actuator ("" = none, simulation only), its default control table there (a servo's
    # register map, or an EtherCAT drive model), and the published model the driver's
    # emulator simulates it with by default.
    driver: str = ""
    control_table: str = ""
    emulator_model: str = ""
    # The file the actuator was declared in ("" for a shipped one): parameter files of a
    # declared actuator refer to it.
    source: str = field(default="", compare=False)

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
        c[C_CURRENT_GAIN] = self.current_gain
        return c
