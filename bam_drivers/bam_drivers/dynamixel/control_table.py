"""Dynamixel control tables as data (ROBOTIS e-manual of each model).

The fields, their encodings and unit conversions are those of
:mod:`bam_drivers.serial_servo.control_table`; the Feetech STS tables are in
:mod:`bam_drivers.feetech.control_table`.

Positions: 4096 counts per turn, register 2048 is 0 rad (the XL-320: 1024 counts over
300°). Gains stay in register counts (scale 1); :attr:`ControlTable.gain_per_kp`
converts the model gain of bam_sim's voltage law (the MX protocol-1 P-gain register,
with Kp = P/8) to the P-gain register of the table (protocol 2.0: Kp = P/128, so 16
register counts per model kp; the XL330's model kp is its register).

Adding a model is adding a table to :data:`TABLES`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from bam_drivers.serial_servo.control_table import (
    POSITION,
    RAD_PER_COUNT,
    ControlTable,
    Field,
    field_of,
    make_table,
)

RPM = 2.0 * math.pi / 60.0  # rad/s per rev/min
P1_SPEED_UNIT = 0.114 * RPM  # rad/s per count (e-manual: "about 0.114 rpm")
P2_VELOCITY_UNIT = 0.229 * RPM  # rad/s per count
PWM_FULL_SCALE = 885  # protocol 2.0 present PWM at 100 % duty
XL320_SPEED_UNIT = 0.111 * RPM  # rad/s per count (e-manual XL-320: 0.111 rpm)


def _mx_protocol1_fields(drive_mode: bool) -> list[Field]:
    """MX-64 / MX-106 protocol-1.0 firmware (e-manual "MX-64AR/AT", "MX-106R/T")."""
    e, r = "eeprom", "ram"
    eeprom = [
        field_of("model_number", 0, 2, "r", e),
        field_of("firmware_version", 2, 1, "r", e, 41),
        field_of("id", 3, 1, "rw", e, 1, maximum=253),
        field_of("baud_rate", 4, 1, "rw", e, 34),
        field_of("return_delay_time", 5, 1, "rw", e, 250, maximum=254, scale=2e-6),
        field_of("cw_angle_limit", 6, 2, "rw", e, 0, maximum=4095),
        field_of("ccw_angle_limit", 8, 2, "rw", e, 4095, maximum=4095),
        field_of("temperature_limit", 11, 1, "rw", e, 80, maximum=99),
        field_of("min_voltage_limit", 12, 1, "rw", e, 60, minimum=50, maximum=250, scale=0.1),
        field_of("max_voltage_limit", 13, 1, "rw", e, 160, minimum=50, maximum=250, scale=0.1),
        field_of("max_torque", 14, 2, "rw", e, 1023, maximum=1023, scale=0.001),
        field_of("status_return_level", 16, 1, "rw", e, 2, maximum=2),
        field_of("alarm_led", 17, 1, "rw", e, 36, maximum=127),
        field_of("alarm_shutdown", 18, 1, "rw", e, 36, maximum=127),
        field_of("multi_turn_offset", 20, 2, "rw", e, 0, encoding="twos", minimum=-28672,
                 maximum=28672),
        field_of("resolution_divider", 22, 1, "rw", e, 1, minimum=1, maximum=4),
    ]
    if drive_mode:  # MX-106 only: master/slave and reverse mode
        eeprom.append(field_of("drive_mode", 10, 1, "rw", e, 0, maximum=3))
    ram = [
        field_of("torque_enable", 24, 1, "rw", r, 0, maximum=1),
        field_of("led", 25, 1, "rw", r, 0, maximum=1),
        field_of("d_gain", 26, 1, "rw", r, 0, maximum=254),
        field_of("i_gain", 27, 1, "rw", r, 0, maximum=254),
        field_of("p_gain", 28, 1, "rw", r, 32, maximum=254),
        field_of("goal_position", 30, 2, "rw", r, 2048, maximum=4095, **POSITION),
        field_of("moving_speed", 32, 2, "rw", r, 0, maximum=2047, scale=P1_SPEED_UNIT),
        field_of("torque_limit", 34, 2, "rw", r, 1023, maximum=1023, scale=0.001),
        field_of("present_position", 36, 2, "r", r, 2048, **POSITION),
        field_of("present_velocity", 38, 2, "r", r, 0, encoding="sign_bit_10", scale=P1_SPEED_UNIT),
        field_of("present_load", 40, 2, "r", r, 0, encoding="sign_bit_10", scale=0.001),
        field_of("present_input_voltage", 42, 1, "r", r, 120, scale=0.1),
        field_of("present_temperature", 43, 1, "r", r, 35),
        field_of("registered", 44, 1, "r", r, 0),
        field_of("moving", 46, 1, "r", r, 0),
        field_of("lock", 47, 1, "rw", r, 0, maximum=1),
        field_of("punch", 48, 2, "rw", r, 0, maximum=1023),
        field_of("realtime_tick", 50, 2, "r", r, 0, scale=1e-3),
        field_of("present_current", 68, 2, "rw", r, 2048, scale=0.0045, zero=2048),
        field_of("torque_control_mode_enable", 70, 1, "rw", r, 0, maximum=1),
        field_of("goal_torque", 71, 2, "rw", r, 0, encoding="sign_bit_10", scale=0.0045),
        field_of("goal_acceleration", 73, 1, "rw", r, 0, maximum=254),
    ]
    return eeprom + ram


def _protocol2_fields(*, current_limit: int, velocity_limit: int, p_gain: int,
                      min_voltage: int, current_unit: float, voltage_floor: int | None = None,
                      voltage_ceiling: int = 160, velocity_ceiling: int = 1023) -> list[Field]:
    """MX (2.0) and X-series protocol-2.0 firmware (e-manual "MX-64(2.0)", "XM430-W350",
    "XL330-M288"). Voltage limits in 0.1 V: both within [floor (default: min_voltage),
    ceiling], the maximum's factory value the ceiling."""
    floor = min_voltage if voltage_floor is None else voltage_floor
    e, r = "eeprom", "ram"
    velocity = dict(encoding="twos", scale=P2_VELOCITY_UNIT)
    current = dict(encoding="twos", scale=current_unit)
    return [
        field_of("model_number", 0, 2, "r", e),
        field_of("model_information", 2, 4, "r", e, 0),
        field_of("firmware_version", 6, 1, "r", e, 45),
        field_of("id", 7, 1, "rw", e, 1, maximum=252),
        field_of("baud_rate", 8, 1, "rw", e, 1, maximum=7),
        field_of("return_delay_time", 9, 1, "rw", e, 250, maximum=254, scale=2e-6),
        field_of("drive_mode", 10, 1, "rw", e, 0, maximum=5),
        field_of("operating_mode", 11, 1, "rw", e, 3, maximum=16),
        field_of("secondary_id", 12, 1, "rw", e, 255),
        field_of("protocol_type", 13, 1, "rw", e, 2, minimum=1, maximum=2),
        field_of("homing_offset", 20, 4, "rw", e, 0, encoding="twos", minimum=-1044479,
                 maximum=1044479, scale=RAD_PER_COUNT),
        field_of("moving_threshold", 24, 4, "rw", e, 10, maximum=1023, scale=P2_VELOCITY_UNIT),
        field_of("temperature_limit", 31, 1, "rw", e, 80, maximum=100),
        field_of("max_voltage_limit", 32, 2, "rw", e, voltage_ceiling, minimum=floor,
                 maximum=voltage_ceiling, scale=0.1),
        field_of("min_voltage_limit", 34, 2, "rw", e, min_voltage, minimum=floor,
                 maximum=voltage_ceiling, scale=0.1),
        field_of("pwm_limit", 36, 2, "rw", e, PWM_FULL_SCALE, maximum=PWM_FULL_SCALE,
                 scale=1.0 / PWM_FULL_SCALE),
        field_of("current_limit", 38, 2, "rw", e, current_limit, maximum=current_limit,
                 scale=current_unit),
        field_of("acceleration_limit", 40, 4, "rw", e, 32767, maximum=32767),
        field_of("velocity_limit", 44, 4, "rw", e, velocity_limit, maximum=velocity_ceiling,
                 scale=P2_VELOCITY_UNIT),
        field_of("max_position_limit", 48, 4, "rw", e, 4095, maximum=4095, **POSITION),
        field_of("min_position_limit", 52, 4, "rw", e, 0, maximum=4095, **POSITION),
        field_of("shutdown", 63, 1, "rw", e, 52),
        field_of("torque_enable", 64, 1, "rw", r, 0, maximum=1),
        field_of("led", 65, 1, "rw", r, 0, maximum=1),
        field_of("status_return_level", 68, 1, "rw", r, 2, maximum=2),
        field_of("registered_instruction", 69, 1, "r", r, 0),
        field_of("hardware_error_status", 70, 1, "r", r, 0),
        field_of("velocity_i_gain", 76, 2, "rw", r, 1920, maximum=16383),
        field_of("velocity_p_gain", 78, 2, "rw", r, 100, maximum=16383),
        field_of("position_d_gain", 80, 2, "rw", r, 0, maximum=16383),
        field_of("position_i_gain", 82, 2, "rw", r, 0, maximum=16383),
        field_of("p_gain", 84, 2, "rw", r, p_gain, maximum=16383),
        field_of("feedforward_2nd_gain", 88, 2, "rw", r, 0, maximum=16383),
        field_of("feedforward_1st_gain", 90, 2, "rw", r, 0, maximum=16383),
        field_of("bus_watchdog", 98, 1, "rw", r, 0, maximum=127),
        field_of("goal_pwm", 100, 2, "rw", r, PWM_FULL_SCALE, encoding="twos",
                 minimum=-PWM_FULL_SCALE, maximum=PWM_FULL_SCALE, scale=1.0 / PWM_FULL_SCALE),
        field_of("goal_current", 102, 2, "rw", r, current_limit, minimum=-current_limit,
                 maximum=current_limit, **current),
        field_of("goal_velocity", 104, 4, "rw", r, 0, minimum=-velocity_limit,
                 maximum=velocity_limit, **velocity),
        field_of("profile_acceleration", 108, 4, "rw", r, 0, maximum=32767),
        field_of("profile_velocity", 112, 4, "rw", r, 0, maximum=32767),
        field_of("goal_position", 116, 4, "rw", r, 2048, encoding="twos", minimum=0,
                 maximum=4095, **POSITION),
        field_of("realtime_tick", 120, 2, "r", r, 0, scale=1e-3),
        field_of("moving", 122, 1, "r", r, 0),
        field_of("moving_status", 123, 1, "r", r, 0),
        field_of("present_pwm", 124, 2, "r", r, 0, encoding="twos", scale=1.0 / PWM_FULL_SCALE),
        field_of("present_current", 126, 2, "r", r, 0, **current),
        field_of("present_velocity", 128, 4, "r", r, 0, **velocity),
        field_of("present_position", 132, 4, "r", r, 2048, encoding="twos", **POSITION),
        field_of("velocity_trajectory", 136, 4, "r", r, 0, **velocity),
        field_of("position_trajectory", 140, 4, "r", r, 2048, encoding="twos", **POSITION),
        field_of("present_input_voltage", 144, 2, "r", r, 120, scale=0.1),
        field_of("present_temperature", 146, 1, "r", r, 35),
    ]


def _xl320_fields() -> list[Field]:
    """XL-320 (e-manual "XL-320"; the authors' release reads its position as
    (raw − 512)·300°/1023, the scale its published sets were identified with)."""
    e, r = "eeprom", "ram"
    position = dict(scale=math.radians(300.0) / 1023, zero=512, maximum=1023)
    speed = dict(encoding="sign_bit_10", scale=XL320_SPEED_UNIT)
    return [
        field_of("model_number", 0, 2, "r", e),
        field_of("firmware_version", 2, 1, "r", e, 30),
        field_of("id", 3, 1, "rw", e, 1, maximum=252),
        field_of("baud_rate", 4, 1, "rw", e, 3, maximum=3),
        field_of("return_delay_time", 5, 1, "rw", e, 250, maximum=254, scale=2e-6),
        field_of("cw_angle_limit", 6, 2, "rw", e, 0, maximum=1023),
        field_of("ccw_angle_limit", 8, 2, "rw", e, 1023, maximum=1023),
        field_of("control_mode", 11, 1, "rw", e, 2, minimum=1, maximum=2),
        field_of("temperature_limit", 12, 1, "rw", e, 65, maximum=150),
        field_of("min_voltage_limit", 13, 1, "rw", e, 60, minimum=50, maximum=250, scale=0.1),
        field_of("max_voltage_limit", 14, 1, "rw", e, 90, minimum=50, maximum=250, scale=0.1),
        field_of("max_torque", 15, 2, "rw", e, 1023, maximum=1023, scale=0.001),
        field_of("status_return_level", 17, 1, "rw", e, 2, maximum=2),
        field_of("shutdown", 18, 1, "rw", e, 3),
        field_of("torque_enable", 24, 1, "rw", r, 0, maximum=1),
        field_of("led", 25, 1, "rw", r, 0, maximum=7),
        field_of("d_gain", 27, 1, "rw", r, 0, maximum=254),
        field_of("i_gain", 28, 1, "rw", r, 0, maximum=254),
        field_of("p_gain", 29, 1, "rw", r, 32, maximum=254),
        field_of("goal_position", 30, 2, "rw", r, 512, **position),
        field_of("moving_speed", 32, 2, "rw", r, 0, maximum=2047, scale=XL320_SPEED_UNIT),
        field_of("torque_limit", 35, 2, "rw", r, 1023, maximum=1023, scale=0.001),
        field_of("present_position", 37, 2, "r", r, 512, **position),
        field_of("present_velocity", 39, 2, "r", r, 0, **speed),
        field_of("present_load", 41, 2, "r", r, 0, encoding="sign_bit_10", scale=0.001),
        field_of("present_input_voltage", 45, 1, "r", r, 74, scale=0.1),
        field_of("present_temperature", 46, 1, "r", r, 35),
        field_of("registered_instruction", 47, 1, "r", r, 0),
        field_of("moving", 49, 1, "r", r, 0),
        field_of("hardware_error_status", 50, 1, "r", r, 0),
        field_of("punch", 51, 2, "rw", r, 32, maximum=1023),
    ]


_P1_STATE = ("present_position", "present_velocity", "present_load", "present_input_voltage",
             "present_temperature")
_P2_STATE = ("present_pwm", "present_current", "present_velocity", "present_position",
             "present_input_voltage", "present_temperature")
_P1 = dict(state=_P1_STATE, duty="present_load", gain_per_kp=1.0, current="present_current")
_P2 = dict(state=_P2_STATE, duty="present_pwm", gain_per_kp=16.0, current="present_current",
           hardware_error="hardware_error_status", position_mode=("operating_mode", 3),
           current_position_mode=("operating_mode", 5))

TABLES: Mapping[str, ControlTable] = MappingProxyType({
    "mx64_p1": make_table("mx64_p1", "MX-64 (protocol 1.0)", 1, 310,
                          _mx_protocol1_fields(drive_mode=False), **_P1),
    "mx106_p1": make_table("mx106_p1", "MX-106 (protocol 1.0)", 1, 320,
                           _mx_protocol1_fields(drive_mode=True), **_P1),
    "mx64_p2": make_table("mx64_p2", "MX-64 (2.0)", 2, 311, _protocol2_fields(
        current_limit=1941, velocity_limit=435, p_gain=850, min_voltage=95,
        current_unit=0.00336), **_P2),
    "mx106_p2": make_table("mx106_p2", "MX-106 (2.0)", 2, 321, _protocol2_fields(
        current_limit=2047, velocity_limit=360, p_gain=850, min_voltage=95,
        current_unit=0.00336), **_P2),
    "xm430_w350": make_table("xm430_w350", "XM430-W350", 2, 1020, _protocol2_fields(
        current_limit=1193, velocity_limit=200, p_gain=800, min_voltage=95,
        current_unit=0.00269), **_P2),
    # A 3.7-6 V servo (limits 3.1-7.0 V), current in mA. Its P-gain register is the
    # model's kp itself: bam_sim's XL330 duty gain holds the firmware's divisor.
    "xl330_m288": make_table("xl330_m288", "XL330-M288", 2, 1200, _protocol2_fields(
        current_limit=1750, velocity_limit=445, p_gain=400, min_voltage=35,
        current_unit=0.001, voltage_floor=31, voltage_ceiling=70, velocity_ceiling=2047),
        **{**_P2, "gain_per_kp": 1.0}),
    # Protocol 2.0 on the register layout of protocol 1.0, a 10-bit 300° encoder, no
    # current sense; its P register is the model's kp.
    "xl320": make_table("xl320", "XL-320", 2, 350, _xl320_fields(),
                        state=_P1_STATE, duty="present_load", gain_per_kp=1.0,
                        hardware_error="hardware_error_status",
                        position_mode=("control_mode", 2)),
})
