"""The mailbox and CANopen over EtherCAT (ETG.1000.6 section 5.6, CiA 301): SDO, EMCY, types.

A mailbox message is a 6-byte header (length, address, channel/priority,
type and counter) and a payload; for CoE (type 3) the payload starts with
a 2-byte CoE header whose top 4 bits name the service (2 SDO request, 3
SDO response, 1 emergency). SDO transfers: expedited (up to 4 bytes in the
initiate message), normal (size and data in the initiate message) and
segmented (the rest in segments of toggled messages), plus complete access
(all subindices at once) and aborts with a 32-bit code. The emulator serves
these; the driver uses pysoem as the client and names the abort codes with
:data:`ABORT_CODES`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

MAILBOX_HEADER = struct.Struct("<HHBB")  # length, address, channel|priority, type|counter
COE_HEADER = 2
SDO_HEADER = 4  # command, index, subindex (after the CoE header)


class MailboxType(IntEnum):
    ERROR = 0x00
    AOE = 0x01
    EOE = 0x02
    COE = 0x03
    FOE = 0x04
    SOE = 0x05
    VOE = 0x0F


class CoeService(IntEnum):
    EMERGENCY = 1
    SDO_REQUEST = 2
    SDO_RESPONSE = 3
    TXPDO = 4
    RXPDO = 5
    SDO_INFO = 8


# SDO command specifiers (top 3 bits of the command byte)
CCS_DOWNLOAD_SEGMENT = 0
CCS_DOWNLOAD_INITIATE = 1
CCS_UPLOAD_INITIATE = 2
CCS_UPLOAD_SEGMENT = 3
CCS_ABORT = 4
SCS_UPLOAD_SEGMENT = 0
SCS_DOWNLOAD_SEGMENT = 1
SCS_UPLOAD_INITIATE = 2
SCS_DOWNLOAD_INITIATE = 3
SDO_ABORT = 0x80
COMPLETE_ACCESS = 0x10  # initiate command bit 4
TOGGLE = 0x10  # segment command bit 4
EXPEDITED = 0x02
SIZE_INDICATED = 0x01
LAST_SEGMENT = 0x01

# Mailbox error codes (mailbox type 0, ETG.1000.4 table 29)
MBX_ERROR_UNSUPPORTED_PROTOCOL = 0x0002
MBX_ERROR_INVALID_HEADER = 0x0005
MBX_ERROR_SIZE_TOO_SHORT = 0x0006

# SDO abort codes (ETG.1000.6 table 41, CiA 301)
ABORT_TOGGLE = 0x05030000
ABORT_TIMEOUT = 0x05040000
ABORT_COMMAND = 0x05040001
ABORT_UNSUPPORTED_ACCESS = 0x06010000
ABORT_WRITE_ONLY = 0x06010001
ABORT_READ_ONLY = 0x06010002
ABORT_SUBINDEX0_NOT_ZERO = 0x06010003
ABORT_NO_OBJECT = 0x06020000
ABORT_NOT_MAPPABLE = 0x06040041
ABORT_PDO_LENGTH = 0x06040042
ABORT_TYPE_LENGTH = 0x06070010
ABORT_TOO_LONG = 0x06070012
ABORT_TOO_SHORT = 0x06070013
ABORT_NO_SUBINDEX = 0x06090011
ABORT_VALUE_RANGE = 0x06090030
ABORT_VALUE_HIGH = 0x06090031
ABORT_VALUE_LOW = 0x06090032
ABORT_GENERAL = 0x08000000
ABORT_DEVICE_STATE = 0x08000022

ABORT_CODES = {
    ABORT_TOGGLE: "toggle bit not changed",
    ABORT_TIMEOUT: "SDO protocol timeout",
    ABORT_COMMAND: "client/server command specifier not valid or unknown",
    ABORT_UNSUPPORTED_ACCESS: "unsupported access to an object",
    ABORT_WRITE_ONLY: "attempt to read a write-only object",
    ABORT_READ_ONLY: "attempt to write a read-only object",
    ABORT_SUBINDEX0_NOT_ZERO: "subindex cannot be written, SI0 must be 0 for write access",
    ABORT_NO_OBJECT: "the object does not exist in the object dictionary",
    ABORT_NOT_MAPPABLE: "the object cannot be mapped to the PDO",
    ABORT_PDO_LENGTH: "the number and length of the objects to be mapped would exceed the "
                      "PDO length",
    ABORT_TYPE_LENGTH: "data type does not match, length of service parameter does not match",
    ABORT_TOO_LONG: "data type does not match, length of service parameter too high",
    ABORT_TOO_SHORT: "data type does not match, length of service parameter too low",
    ABORT_NO_SUBINDEX: "subindex does not exist",
    ABORT_VALUE_RANGE: "value range of parameter exceeded",
    ABORT_VALUE_HIGH: "value of parameter written too high",
    ABORT_VALUE_LOW: "value of parameter written too low",
    ABORT_GENERAL: "general error",
    ABORT_DEVICE_STATE: "data cannot be transferred or stored because of the present device "
                        "state",
}


def abort_name(code: int) -> str:
    return ABORT_CODES.get(code, "unknown abort code")


class DataType(IntEnum):
    """CoE basic data types (ETG.1000.6 table 63); the value is the type's index."""

    BOOLEAN = 0x0001
    INTEGER8 = 0x0002
    INTEGER16 = 0x0003
    INTEGER32 = 0x0004
    UNSIGNED8 = 0x0005
    UNSIGNED16 = 0x0006
    UNSIGNED32 = 0x0007
    VISIBLE_STRING = 0x0009
    OCTET_STRING = 0x000A
    INTEGER64 = 0x0015
    UNSIGNED64 = 0x001B


_FORMATS = {
    DataType.BOOLEAN: "<B", DataType.INTEGER8: "<b", DataType.INTEGER16: "<h",
    DataType.INTEGER32: "<i", DataType.UNSIGNED8: "<B", DataType.UNSIGNED16: "<H",
    DataType.UNSIGNED32: "<I", DataType.INTEGER64: "<q", DataType.UNSIGNED64: "<Q",
}


def is_string(data_type: int) -> bool:
    return data_type in (DataType.VISIBLE_STRING, DataType.OCTET_STRING)


def type_size(data_type: int) -> int:
    """Bytes of a fixed-size type (0 for strings)."""
    fmt = _FORMATS.get(DataType(data_type)) if not is_string(data_type) else None
    return struct.calcsize(fmt) if fmt else 0


def pack(data_type: int, value: int | bytes | str) -> bytes:
    """``value`` in the little-endian wire form of ``data_type``."""
    if data_type == DataType.VISIBLE_STRING:
        return value.encode("ascii") if isinstance(value, str) else bytes(value)
    if data_type == DataType.OCTET_STRING:
        return bytes(value)
    return struct.pack(_FORMATS[DataType(data_type)], int(value))


def unpack(data_type: int, raw: bytes) -> int | bytes | str:
    """The value of ``raw`` as ``data_type`` (struct.error when the length is wrong)."""
    if data_type == DataType.VISIBLE_STRING:
        return raw.decode("ascii", errors="replace")
    if data_type == DataType.OCTET_STRING:
        return bytes(raw)
    return struct.unpack(_FORMATS[DataType(data_type)], raw)[0]


def in_range(data_type: int, value: int) -> bool:
    """Whether ``value`` fits ``data_type``."""
    size = type_size(data_type)
    if data_type in (DataType.INTEGER8, DataType.INTEGER16, DataType.INTEGER32,
                     DataType.INTEGER64):
        return -(1 << (8 * size - 1)) <= value < 1 << (8 * size - 1)
    return 0 <= value < 1 << (8 * size)


# -- messages --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mailbox:
    """A mailbox message: type, counter (1..7, 0 = none) and payload."""

    type: int
    counter: int
    payload: bytes
    address: int = 0
    channel: int = 0

    def encode(self, size: int) -> bytes:
        """The message zero-padded to the mailbox ``size`` (a sync manager's length)."""
        header = MAILBOX_HEADER.pack(len(self.payload), self.address, self.channel,
                                     (self.type & 0x0F) | (self.counter & 0x07) << 4)
        raw = header + self.payload
        return raw + bytes(max(0, size - len(raw)))


def decode_mailbox(raw: bytes) -> Mailbox:
    """The message in a mailbox buffer (ValueError when the header lies about its length)."""
    if len(raw) < MAILBOX_HEADER.size:
        raise ValueError("mailbox shorter than its header")
    length, address, channel, kind = MAILBOX_HEADER.unpack_from(raw)
    if MAILBOX_HEADER.size + length > len(raw):
        raise ValueError(f"mailbox header length {length} beyond the buffer")
    return Mailbox(kind & 0x0F, (kind >> 4) & 0x07,
                   bytes(raw[MAILBOX_HEADER.size:MAILBOX_HEADER.size + length]), address,
                   channel)


def coe(service: int, body: bytes, number: int = 0) -> bytes:
    """A CoE payload: the CoE header (number, service) then ``body``."""
    return ((number & 0x01FF) | (service & 0x0F) << 12).to_bytes(2, "little") + body


def coe_service(payload: bytes) -> int:
    return int.from_bytes(payload[:2], "little") >> 12


def sdo_abort(index: int, subindex: int, code: int) -> bytes:
    """The CoE payload of an SDO abort."""
    return coe(CoeService.SDO_REQUEST, struct.pack("<BHBI", SDO_ABORT, index, subindex, code))


def emergency(code: int, register: int, data: bytes = b"") -> bytes:
    """The CoE payload of an emergency: error code, error register (0x1001), 5 data bytes."""
    return coe(CoeService.EMERGENCY, struct.pack("<HB", code, register)
               + (data + bytes(5))[:5])


def mailbox_error(detail: int) -> bytes:
    """The payload of a mailbox error reply (mailbox type 0)."""
    return struct.pack("<HH", 0x0001, detail)
