"""Feetech STS control tables as data, built from the fields of the Dynamixel tables.

The STS series (the STS3215 of the SO-100/SO-101 arms) speaks Feetech's SCS
protocol: the framing of Dynamixel protocol 1.0 (``FF FF ID LEN INST PARAM…
CHECKSUM``) with a sync read (0x82), 1-byte addresses and little-endian
2-byte registers (``SCS_END`` 0 in ``feetech-servo-sdk``). Its register map
(Feetech's STS memory table, as ``feetech-servo-sdk`` and the LeRobot stack
address it):

* EEPROM 0..39: version and model number (3, STS3215: 777), id (5), baud
  rate index (6: 0 = 1 Mbaud), return delay (7, 2 µs), response level (8:
  1 = every instruction answered, 0 = reads and pings only), position and
  voltage limits, P / D / I coefficients (21..23), homing offset (31, sign
  bit 11), operating mode (33: 0 = position);
* RAM 40..70: torque enable (40), goal position (42), goal time (44), goal
  speed (46, sign bit 15; 0 = the firmware's maximum), lock (55: 1 keeps
  EEPROM writes out of flash), present position (56), speed (58, steps/s,
  sign bit 15), load (60: the PWM duty in 0.1 %, sign bit 10), voltage (62,
  0.1 V), temperature (63, °C), status (65, the error bits), moving (66),
  current (69, 6.5 mA).

Only the registers a driver reads or writes, and those whose factory values
the references agree on, are listed: the emulator reads 0 in the others.
Gains: the P coefficient register is the model gain kp of bam_sim's STS law
(``sts3215``: duty = kp·0.166·r·(q_f − q)); the authors' recorder writes kp
into it directly (``bam/feetech/record.py`` of Rhoban/bam).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from bam_drivers.serial_servo.control_table import (
    POSITION,
    ControlTable,
    Field,
    field_of,
    make_table,
)

STEP_RATE = 2.0 * math.pi / 4096  # rad/s per step/s (speed registers)
CURRENT_UNIT = 0.0065  # A per count of Present Current


def _sts_fields(max_voltage: int) -> list[Field]:
    """STS firmware (STS3215); ``max_voltage`` the factory Max Voltage Limit, 0.1 V."""
    e, r = "eeprom", "ram"
    speed = dict(encoding="sign_bit_15", scale=STEP_RATE)
    return [
        field_of("model_number", 3, 2, "r", e),
        field_of("id", 5, 1, "rw", e, 1, maximum=253),
        field_of("baud_rate", 6, 1, "rw", e, 0, maximum=7),
        field_of("return_delay_time", 7, 1, "rw", e, 0, maximum=254, scale=2e-6),
        field_of("response_status_level", 8, 1, "rw", e, 1, maximum=1),
        field_of("min_position_limit", 9, 2, "rw", e, 0, maximum=4095, **POSITION),
        field_of("max_position_limit", 11, 2, "rw", e, 4095, maximum=4095, **POSITION),
        field_of("temperature_limit", 13, 1, "rw", e, 70, maximum=100),
        field_of("max_voltage_limit", 14, 1, "rw", e, max_voltage, maximum=254, scale=0.1),
        field_of("min_voltage_limit", 15, 1, "rw", e, 40, maximum=254, scale=0.1),
        field_of("max_torque_limit", 16, 2, "rw", e, 1000, maximum=1000, scale=0.001),
        field_of("p_gain", 21, 1, "rw", e, 32, maximum=254),
        field_of("d_gain", 22, 1, "rw", e, 32, maximum=254),
        field_of("i_gain", 23, 1, "rw", e, 0, maximum=254),
        field_of("protection_current", 28, 2, "rw", e, 500, maximum=4095, scale=CURRENT_UNIT),
        field_of("homing_offset", 31, 2, "rw", e, 0, encoding="sign_bit_11",
                 scale=POSITION["scale"]),
        field_of("operating_mode", 33, 1, "rw", e, 0, maximum=3),
        field_of("torque_enable", 40, 1, "rw", r, 0, maximum=1),
        field_of("acceleration", 41, 1, "rw", r, 0, maximum=254),
        field_of("goal_position", 42, 2, "rw", r, 2048, encoding="sign_bit_15", minimum=0,
                 maximum=4095, **POSITION),
        field_of("goal_time", 44, 2, "rw", r, 0, scale=1e-3),
        field_of("goal_velocity", 46, 2, "rw", r, 0, **speed),
        field_of("torque_limit", 48, 2, "rw", r, 1000, maximum=1000, scale=0.001),
        field_of("lock", 55, 1, "rw", r, 1, maximum=1),
        field_of("present_position", 56, 2, "r", r, 2048, encoding="sign_bit_15", **POSITION),
        field_of("present_velocity", 58, 2, "r", r, 0, **speed),
        field_of("present_load", 60, 2, "r", r, 0, encoding="sign_bit_10", scale=0.001),
        field_of("present_input_voltage", 62, 1, "r", r, 74, scale=0.1),
        field_of("present_temperature", 63, 1, "r", r, 35),
        field_of("status", 65, 1, "r", r, 0),
        field_of("moving", 66, 1, "r", r, 0),
        field_of("present_current", 69, 2, "r", r, 0, encoding="sign_bit_15",
                 scale=CURRENT_UNIT),
    ]


_STS = dict(
    state=("present_position", "present_velocity", "present_load", "present_input_voltage",
           "present_temperature"),
    duty="present_load", gain_per_kp=1.0, current="present_current", hardware_error="status",
    vendor="feetech", position_mode=("operating_mode", 0))

TABLES: Mapping[str, ControlTable] = MappingProxyType({
    # 4.0-14 V servo sold in 7.4 V and 12 V versions (one model number): the 12 V
    # version's factory Max Voltage Limit is 14 V.
    "sts3215": make_table("sts3215", "STS3215", 1, 777, _sts_fields(max_voltage=80), **_STS),
    "sts3215_12v": make_table("sts3215_12v", "STS3215 (12 V)", 1, 777,
                              _sts_fields(max_voltage=140), **_STS),
})
