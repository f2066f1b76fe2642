"""Serial servo control tables as data, with their unit conversions.

A control table is the register map of a servo model: every field has an
address, a size (1, 2 or 4 bytes, little-endian), an access right ("r" or
"rw"), an area ("eeprom" survives power cycles and is writable only with the
torque off on protocol-2.0 firmware; "ram" is volatile) and a factory value.
The tables below follow the ROBOTIS e-manual of each model; the Feetech STS
tables, built from the same fields, are in :mod:`bam_drivers.feetech.control_table`.

Unit conversions are linear after decoding the sign::

    si = (counts − zero) · scale

with these raw encodings of the sign:

* ``unsigned`` — the raw value is the count;
* ``twos`` — two's complement over the field's size (protocol 2.0);
* ``sign_bit_N`` — sign and magnitude: the bits below N hold the
  magnitude, bit N set means the negative direction, so both signs of 0
  exist. Dynamixel protocol-1.0 speed and load use bit 10; Feetech STS
  speeds and positions bit 15, its load bit 10 and its offset bit 11.

Positions: 4096 counts per turn, register 2048 is 0 rad. Gains stay in
register counts (scale 1); :attr:`ControlTable.gain_per_kp` converts the
model gain of bam_sim's voltage law (the MX protocol-1 P-gain register, with
Kp = P/8) to the P-gain register of the table (protocol 2.0: Kp = P/128, so
16 register counts per model kp; the XL330's model kp is its register).

Adding a model is adding a table to :data:`TABLES`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from types import MappingProxyType

from bam_sim.common.errors import BamError

SIGN_BITS = (10, 11, 15)
ENCODINGS = ("unsigned", "twos", *(f"sign_bit_{b}" for b in SIGN_BITS))
VENDORS = ("dynamixel", "feetech")
ACCESS = ("r", "rw")
AREAS = ("eeprom", "ram")

COUNTS_PER_TURN = 4096
RAD_PER_COUNT = 2.0 * math.pi / COUNTS_PER_TURN
RPM = 2.0 * math.pi / 60.0  # rad/s per rev/min
P1_SPEED_UNIT = 0.114 * RPM  # rad/s per count (e-manual: "about 0.114 rpm")
P2_VELOCITY_UNIT = 0.229 * RPM  # rad/s per count
PWM_FULL_SCALE = 885  # protocol 2.0 present PWM at 100 % duty
XL320_SPEED_UNIT = 0.111 * RPM  # rad/s per count (e-manual XL-320: 0.111 rpm)


@dataclass(frozen=True)
class Field:
    """One register of a control table and its conversion to SI."""

    name: str
    address: int
    size: int
    access: str
    area: str
    default: int = 0
    encoding: str = "unsigned"
    scale: float = 1.0
    zero: int = 0
    minimum: int | None = None  # signed counts accepted by the firmware (None: the encoding's)
    maximum: int | None = None

    def __post_init__(self) -> None:
        if self.size not in (1, 2, 4):
            raise BamError(f"field {self.name!r}: size {self.size} must be 1, 2 or 4 bytes")
        if self.access not in ACCESS or self.area not in AREAS:
            raise BamError(f"field {self.name!r}: access must be one of {ACCESS}, area of {AREAS}")
        if self.encoding not in ENCODINGS:
            raise BamError(f"field {self.name!r}: encoding must be one of {ENCODINGS}")

    @property
    def end(self) -> int:
        """First address after the field."""
        return self.address + self.size

    @property
    def count_range(self) -> tuple[int, int]:
        """Smallest and largest signed count the field holds."""
        bits = 8 * self.size
        if self.encoding == "twos":
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        elif self.sign_bit:
            lo, hi = -((1 << self.sign_bit) - 1), (1 << self.sign_bit) - 1
        else:
            lo, hi = 0, (1 << bits) - 1
        lo = lo if self.minimum is None else max(lo, self.minimum)
        hi = hi if self.maximum is None else min(hi, self.maximum)
        return lo, hi

    @property
    def sign_bit(self) -> int:
        """The sign bit of a sign-and-magnitude field (0: another encoding)."""
        return int(self.encoding[9:]) if self.encoding.startswith("sign_bit_") else 0

    def decode(self, raw: int) -> int:
        """Signed count of a raw register value."""
        if self.encoding == "twos":
            bits = 8 * self.size
            raw &= (1 << bits) - 1
            return raw - (1 << bits) if raw >> (bits - 1) else raw
        if self.sign_bit:
            magnitude = raw & ((1 << self.sign_bit) - 1)
            return -magnitude if raw >> self.sign_bit & 1 else magnitude
        return raw

    def encode(self, counts: int) -> int:
        """Raw register value of a signed count (not clamped)."""
        if self.encoding == "twos":
            return counts & ((1 << (8 * self.size)) - 1)
        if self.sign_bit:
            return (-counts) | 1 << self.sign_bit if counts < 0 else counts
        return counts

    def to_si(self, raw: int) -> float:
        """SI value of a raw register value."""
        return (self.decode(raw) - self.zero) * self.scale

    def from_si(self, value: float) -> int:
        """Raw register value of an SI value: rounded, clamped to the field's range, encoded."""
        if not math.isfinite(value):
            raise BamError(f"field {self.name!r}: value {value} is not finite; give a number")
        lo, hi = self.count_range
        counts = min(max(round(value / self.scale) + self.zero, lo), hi)
        return self.encode(counts)

    def unpack(self, data: bytes | bytearray, start: int) -> int:
        """Little-endian raw value from a block that begins at register ``start``."""
        offset = self.address - start
        if offset < 0 or offset + self.size > len(data):
            raise BamError(
                f"field {self.name!r} at {self.address} is outside the block "
                f"[{start}, {start + len(data)}); read a block that covers it"
            )
        return int.from_bytes(data[offset : offset + self.size], "little")

    def pack(self, raw: int) -> bytes:
        """Little-endian bytes of a raw value."""
        return (raw & ((1 << (8 * self.size)) - 1)).to_bytes(self.size, "little")


@dataclass(frozen=True)
class ControlTable:
    """The register map of one servo model."""

    name: str
    title: str
    protocol: int
    model_number: int
    fields: Mapping[str, Field]
    state: tuple[str, ...]
    duty: str
    gain_per_kp: float
    current: str | None = None  # field giving the motor current, if the model reports it
    hardware_error: str | None = None  # register of the hardware error bits, if any
    vendor: str = "dynamixel"  # "feetech": its protocol-1.0 framing, own error bits
    position_mode: tuple[str, int] | None = None  # (register, value) of position control
    _by_address: Mapping[int, Field] = dc_field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.vendor not in VENDORS:
            raise BamError(f"table {self.name}: vendor must be one of {VENDORS}")
        by_address: dict[int, Field] = {}
        for f in self.fields.values():
            for a in range(f.address, f.end):
                if a in by_address:
                    raise BamError(f"table {self.name}: {f.name} overlaps {by_address[a].name}")
                by_address[a] = f
        object.__setattr__(self, "_by_address", MappingProxyType(by_address))
        mode = self.position_mode[0] if self.position_mode else None
        for name in (*self.state, self.duty, self.current, self.hardware_error, mode):
            if name is not None:
                self.field(name)

    @property
    def size(self) -> int:
        """Bytes of memory the table spans (end of its last field)."""
        return max(f.end for f in self.fields.values())

    def field(self, name: str) -> Field:
        """The field called ``name``."""
        try:
            return self.fields[name]
        except KeyError:
            known = ", ".join(sorted(self.fields))
            raise BamError(
                f"control table {self.name} has no field {name!r}; known: {known}"
            ) from None

    def has(self, name: str) -> bool:
        """Whether the table has a field called ``name``."""
        return name in self.fields

    def at(self, address: int) -> Field | None:
        """The field that holds the byte at ``address`` (None in a reserved gap)."""
        return self._by_address.get(address)

    def block(self, names: Iterable[str] | None = None) -> tuple[int, int]:
        """(start address, length) of the smallest block covering the fields."""
        chosen = [self.field(n) for n in (self.state if names is None else names)]
        if not chosen:
            raise BamError(f"control table {self.name}: block of no fields; name some fields")
        start = min(f.address for f in chosen)
        return start, max(f.end for f in chosen) - start

    def decode(
        self, names: Iterable[str], data: bytes | bytearray, start: int
    ) -> dict[str, float]:
        """SI values of the fields read in a block beginning at register ``start``."""
        return {n: self.field(n).to_si(self.field(n).unpack(data, start)) for n in names}

    def initial_memory(self) -> bytearray:
        """Factory content of the whole table (reserved bytes are zero)."""
        memory = bytearray(self.size)
        for f in self.fields.values():
            memory[f.address : f.end] = f.pack(f.default)
        return memory


def field_of(name: str, address: int, size: int, access: str, area: str, default: int = 0,
             **conversion) -> Field:
    """A field, conversion given by keyword (encoding, scale, zero, minimum, maximum)."""
    return Field(name, address, size, access, area, default, **conversion)


def make_table(name, title, protocol, model_number, fields, **kwargs) -> ControlTable:
    """A table of ``fields`` whose model number register holds ``model_number``."""
    by_name = {f.name: f for f in fields}
    by_name["model_number"] = replace(by_name["model_number"], default=model_number)
    return ControlTable(name, title, protocol, model_number, MappingProxyType(by_name), **kwargs)


POSITION = dict(scale=RAD_PER_COUNT, zero=2048)


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
           hardware_error="hardware_error_status", position_mode=("operating_mode", 3))

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


def get_table(name: str, tables: Mapping[str, ControlTable] = TABLES) -> ControlTable:
    """The control table of a servo model, by name (see :data:`TABLES`)."""
    try:
        return tables[name]
    except KeyError:
        raise BamError(
            f"unknown servo model {name!r}; known: {', '.join(tables)}"
        ) from None


def table_for_model_number(protocol: int, model_number: int,
                           tables: Mapping[str, ControlTable] = TABLES) -> ControlTable:
    """The table whose model number a ping returned."""
    for table in tables.values():
        if table.protocol == protocol and table.model_number == model_number:
            return table
    known = ", ".join(f"{t.name}={t.model_number}" for t in tables.values())
    raise BamError(
        f"no protocol {protocol} control table for model number {model_number}; known: {known}"
    )
