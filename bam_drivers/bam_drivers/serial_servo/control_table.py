"""Serial servo control tables as data, with their unit conversions.

A control table is the register map of a servo model: every field has an
address, a size (1, 2 or 4 bytes, little-endian), an access right ("r" or
"rw"), an area ("eeprom" survives power cycles and is writable only with the
torque off on protocol-2.0 firmware; "ram" is volatile) and a factory value.
This module holds what every vendor's table is made of; the tables themselves are
data of each vendor: :mod:`bam_drivers.dynamixel.control_table` (ROBOTIS) and
:mod:`bam_drivers.feetech.control_table` (Feetech STS).

Unit conversions are linear after decoding the sign::

    si = (counts − zero) · scale

with these raw encodings of the sign:

* ``unsigned`` — the raw value is the count;
* ``twos`` — two's complement over the field's size (protocol 2.0);
* ``sign_bit_N`` — sign and magnitude: the bits below N hold the
  magnitude, bit N set means the negative direction, so both signs of 0
  exist. Dynamixel protocol-1.0 speed and load use bit 10; Feetech STS
  speeds and positions bit 15, its load bit 10 and its offset bit 11.

Positions (:data:`POSITION`): 4096 counts per turn, register 2048 is 0 rad.
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
    # (register, value) of current-based position control, whose current the goal_current
    # register clips (protocol 2.0: operating mode 5); None where the model has none.
    current_position_mode: tuple[str, int] | None = None
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
        modes = [m[0] for m in (self.position_mode, self.current_position_mode) if m]
        if self.current_position_mode:
            modes.append("goal_current")
        for name in (*self.state, self.duty, self.current, self.hardware_error, *modes):
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


def get_table(name: str, tables: Mapping[str, ControlTable]) -> ControlTable:
    """The control table of a servo model in ``tables`` (a vendor's), by name."""
    try:
        return tables[name]
    except KeyError:
        raise BamError(
            f"unknown servo model {name!r}; known: {', '.join(tables)}"
        ) from None


def table_for_model_number(protocol: int, model_number: int,
                           tables: Mapping[str, ControlTable]) -> ControlTable:
    """The table whose model number a ping returned."""
    for table in tables.values():
        if table.protocol == protocol and table.model_number == model_number:
            return table
    known = ", ".join(f"{t.name}={t.model_number}" for t in tables.values())
    raise BamError(
        f"no protocol {protocol} control table for model number {model_number}; known: {known}"
    )
