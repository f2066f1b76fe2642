"""Dynamixel packet framing, protocol 1.0 and 2.0 (ROBOTIS e-manual, "Protocol 1.0/2.0").

Protocol 1.0::

    FF FF | ID | LEN | INST (status: ERROR) | PARAM × (LEN − 2) | CHECKSUM
    CHECKSUM = ~(ID + LEN + INST + Σ PARAM) & 0xFF

Protocol 2.0::

    FF FF FD 00 | ID | LEN_L LEN_H | INST | PARAM… | CRC_L CRC_H
    LEN = bytes after the length field (instruction, stuffed parameters, CRC)
    status: INST = 0x55, first parameter = ERROR (bit 7 alert, bits 0..6 result)

Byte stuffing (2.0): inside the instruction and parameters, every FF FF FD
becomes FF FF FD FD so a header never appears in a payload. The CRC-16
(polynomial x¹⁶ + x¹⁵ + x² + 1 = 0x8005, initial value 0, no reflection)
covers the transmitted packet from the header up to the CRC.

:class:`StreamParser` cuts a byte stream into frames: it skips garbage up to
the next header, waits for the whole frame, reports frames with a wrong
checksum (``valid`` False, the firmware answers them with a checksum error)
and skips past them, and drops a stale partial frame's header on request
so that a truncated packet cannot block the bus.

The parameter layouts of the instructions are built and parsed by the
``*_params`` / ``parse_*`` functions; a malformed layout raises
:class:`PacketError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

BROADCAST_ID = 0xFE
MAX_ID = 0xFC  # largest unicast id of protocol 2.0 (protocol 1.0: 0xFD)
P1_HEADER = b"\xff\xff"
P2_HEADER = b"\xff\xff\xfd\x00"
MAX_P2_LENGTH = 4096  # largest LEN field accepted (larger: garbage)


class Instruction(IntEnum):
    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    FACTORY_RESET = 0x06
    REBOOT = 0x08
    CLEAR = 0x10
    STATUS = 0x55
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83
    FAST_SYNC_READ = 0x8A
    BULK_READ = 0x92
    BULK_WRITE = 0x93
    FAST_BULK_READ = 0x9A


class P1Error(IntEnum):
    """Bits of the protocol-1.0 status error byte."""

    INPUT_VOLTAGE = 0x01
    ANGLE_LIMIT = 0x02
    OVERHEATING = 0x04
    RANGE = 0x08
    CHECKSUM = 0x10
    OVERLOAD = 0x20
    INSTRUCTION = 0x40


class P2Result(IntEnum):
    """Result codes of the protocol-2.0 status error byte (bits 0..6)."""

    OK = 0x00
    RESULT_FAIL = 0x01
    INSTRUCTION = 0x02
    CRC = 0x03
    DATA_RANGE = 0x04
    DATA_LENGTH = 0x05
    DATA_LIMIT = 0x06
    ACCESS = 0x07


P2_ALERT = 0x80  # bit 7 of the protocol-2.0 error byte: see Hardware Error Status


class PacketError(ValueError):
    """A malformed instruction; ``code`` is the protocol's error (P1 bits or P2 result)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _check_protocol(protocol: int) -> None:
    if protocol not in (1, 2):
        raise ValueError(f"protocol must be 1 or 2, got {protocol!r}")


# -- checksums ------------------------------------------------------------------------

def checksum1(body: bytes | bytearray) -> int:
    """Protocol-1.0 checksum of ID, LEN, INST/ERROR and parameters."""
    return ~sum(body) & 0xFF


def _crc_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_CRC_TABLE = _crc_table()


def crc16(data: bytes | bytearray, crc: int = 0) -> int:
    """Dynamixel CRC-16 (poly 0x8005, MSB first, initial 0) of ``data``."""
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[((crc >> 8) ^ byte) & 0xFF]
    return crc


# -- byte stuffing ----------------------------------------------------------------------

def stuff(payload: bytes | bytearray) -> bytes:
    """Insert FD after every FF FF FD (protocol 2.0)."""
    return bytes(payload).replace(b"\xff\xff\xfd", b"\xff\xff\xfd\xfd")


def unstuff(payload: bytes | bytearray) -> bytes:
    """Remove the FD inserted by :func:`stuff`."""
    return bytes(payload).replace(b"\xff\xff\xfd\xfd", b"\xff\xff\xfd")


# -- encoding ---------------------------------------------------------------------------

def _frame(protocol: int, dxl_id: int, first: int, params: bytes | bytearray) -> bytes:
    """Packet with ``first`` (instruction or P1 error) followed by ``params``."""
    _check_protocol(protocol)
    if not 0 <= dxl_id <= 0xFE:
        raise ValueError(f"id must be in 0..254, got {dxl_id}")
    if protocol == 1:
        body = bytes((dxl_id, len(params) + 2, first)) + bytes(params)
        if len(params) + 2 > 0xFF:
            raise ValueError(f"protocol 1.0 packet too long: {len(params)} parameter bytes")
        return P1_HEADER + body + bytes((checksum1(body),))
    field = stuff(bytes((first,)) + bytes(params))
    length = len(field) + 2
    head = P2_HEADER + bytes((dxl_id, length & 0xFF, length >> 8)) + field
    crc = crc16(head)
    return head + bytes((crc & 0xFF, crc >> 8))


def instruction_packet(
    protocol: int, dxl_id: int, instruction: int, params: bytes | bytearray = b""
) -> bytes:
    """An instruction packet as sent by the master."""
    return _frame(protocol, dxl_id, int(instruction), params)


def status_packet(protocol: int, dxl_id: int, error: int, params: bytes | bytearray = b"") -> bytes:
    """A status packet as sent by a servo (P1: error byte; P2: 0x55, error byte)."""
    if protocol == 1:
        return _frame(1, dxl_id, error, params)
    return _frame(2, dxl_id, Instruction.STATUS, bytes((error,)) + bytes(params))


def fast_read_status(parts: list[tuple[int, int, bytes]]) -> bytes:
    """Status of FAST_SYNC_READ / FAST_BULK_READ (2.0) from (id, error, data) per servo.

    One packet of ID 0xFE: 0x55, then per servo ERR, ID, data and the CRC of
    the packet up to there; the last servo's CRC is the packet's CRC. Not
    byte-stuffed (dynamixel-sdk does not unstuff it).
    """
    length = 1 + sum(4 + len(data) for _, _, data in parts)
    packet = bytearray(P2_HEADER + bytes((BROADCAST_ID, length & 0xFF, length >> 8,
                                          Instruction.STATUS)))
    for dxl_id, error, data in parts:
        packet += bytes((error, dxl_id)) + bytes(data)
        crc = crc16(packet)
        packet += bytes((crc & 0xFF, crc >> 8))
    return bytes(packet)


def corrupt(packet: bytes) -> bytes:
    """The packet with its checksum (P1) or CRC high byte (P2) altered."""
    return packet[:-1] + bytes(((packet[-1] + 1) & 0xFF,))


# -- decoding ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """One packet cut from a stream.

    ``instruction`` is the byte after the length: the instruction of an
    instruction packet, 0x55 for a 2.0 status, the error byte for a 1.0
    status. ``params`` are unstuffed. ``valid`` is False when the checksum
    or CRC does not match (the payload is then untrustworthy).
    """

    protocol: int
    id: int
    instruction: int
    params: bytes
    valid: bool = True
    raw: bytes = b""

    @property
    def error(self) -> int:
        """Error byte of a status frame."""
        if self.protocol == 1:
            return self.instruction
        return self.params[0] if self.params else 0

    @property
    def data(self) -> bytes:
        """Parameters of a status frame after its error byte."""
        return self.params if self.protocol == 1 else self.params[1:]


class StreamParser:
    """Incremental packet parser for one protocol; resynchronizes on garbage."""

    def __init__(self, protocol: int) -> None:
        _check_protocol(protocol)
        self.protocol = protocol
        self._buffer = bytearray()
        self.garbage = 0  # bytes skipped while looking for a header
        self.bad_checksums = 0

    @property
    def pending(self) -> int:
        """Bytes buffered (a partial frame)."""
        return len(self._buffer)

    def clear(self) -> None:
        self._buffer.clear()

    def feed(self, data: bytes | bytearray) -> list[Frame]:
        """Append received bytes; return the frames now complete."""
        self._buffer += data
        frames = []
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def drop_stale(self) -> list[Frame]:
        """Give up on the partial frame at the head of the buffer (inter-byte timeout)."""
        if self._buffer:
            del self._buffer[0]
            self.garbage += 1
        return self.feed(b"")

    def _skip(self, count: int) -> None:
        del self._buffer[:count]
        self.garbage += count

    def _next(self) -> Frame | None:
        header = P1_HEADER if self.protocol == 1 else b"\xff\xff\xfd"
        buf = self._buffer
        while True:
            start = buf.find(header)
            if start < 0:
                # Keep a trailing partial header.
                keep = next((k for k in (len(header) - 1, 1) if buf.endswith(header[:k])), 0)
                self._skip(len(buf) - keep if len(buf) > keep else 0)
                return None
            if start:
                self._skip(start)
            frame = self._p1() if self.protocol == 1 else self._p2()
            if frame is not False:
                return frame  # a frame, or None: wait for more bytes
            self._skip(1)  # not a plausible header: look further

    def _p1(self) -> Frame | None | bool:
        buf = self._buffer
        if len(buf) < 4:
            return None
        dxl_id, length = buf[2], buf[3]
        if dxl_id == 0xFF or length < 2:
            return False
        total = 4 + length
        if len(buf) < total:
            return None
        raw = bytes(buf[:total])
        del buf[:total]
        valid = checksum1(raw[2:-1]) == raw[-1]
        self.bad_checksums += not valid
        return Frame(1, dxl_id, raw[4], raw[5:-1], valid, raw)

    def _p2(self) -> Frame | None | bool:
        buf = self._buffer
        if len(buf) < 7:
            return None
        if buf[3] != 0x00 or buf[4] in (0xFD, 0xFF):
            return False
        length = buf[5] | buf[6] << 8
        if length < 3 or length > MAX_P2_LENGTH:
            return False
        total = 7 + length
        if len(buf) < total:
            return None
        raw = bytes(buf[:total])
        del buf[:total]
        valid = crc16(raw[:-2]) == (raw[-2] | raw[-1] << 8)
        self.bad_checksums += not valid
        field = unstuff(raw[7:-2]) if valid else raw[7:-2]
        return Frame(2, raw[4], field[0], field[1:], valid, raw)


# -- instruction parameters -------------------------------------------------------------

def _le(value: int, size: int) -> bytes:
    return int(value).to_bytes(size, "little")


def _word(data: bytes, at: int) -> int:
    return data[at] | data[at + 1] << 8


def _length_error(protocol: int, what: str) -> PacketError:
    code = P1Error.INSTRUCTION if protocol == 1 else P2Result.DATA_LENGTH
    return PacketError(f"malformed {what} parameters", code)


def read_params(protocol: int, address: int, length: int) -> bytes:
    """READ: address and length (P1: 1 byte each; P2: 2 bytes each)."""
    size = 1 if protocol == 1 else 2
    return _le(address, size) + _le(length, size)


def parse_read(protocol: int, params: bytes) -> tuple[int, int]:
    if protocol == 1:
        if len(params) != 2:
            raise _length_error(protocol, "read")
        return params[0], params[1]
    if len(params) != 4:
        raise _length_error(protocol, "read")
    return _word(params, 0), _word(params, 2)


def write_params(protocol: int, address: int, data: bytes) -> bytes:
    """WRITE / REG_WRITE: address then the data."""
    return _le(address, 1 if protocol == 1 else 2) + bytes(data)


def parse_write(protocol: int, params: bytes) -> tuple[int, bytes]:
    size = 1 if protocol == 1 else 2
    if len(params) <= size:
        raise _length_error(protocol, "write")
    address = params[0] if protocol == 1 else _word(params, 0)
    return address, bytes(params[size:])


def sync_write_params(protocol: int, address: int, length: int, data: dict[int, bytes]) -> bytes:
    """SYNC_WRITE: address, length, then id + data for each servo."""
    size = 1 if protocol == 1 else 2
    out = bytearray(_le(address, size) + _le(length, size))
    for dxl_id, chunk in data.items():
        if len(chunk) != length:
            raise ValueError(f"sync write data of id {dxl_id} is not {length} bytes")
        out += bytes((dxl_id,)) + bytes(chunk)
    return bytes(out)


def parse_sync_write(protocol: int, params: bytes) -> tuple[int, int, dict[int, bytes]]:
    size = 1 if protocol == 1 else 2
    if len(params) < 2 * size:
        raise _length_error(protocol, "sync write")
    address = params[0] if protocol == 1 else _word(params, 0)
    length = params[1] if protocol == 1 else _word(params, 2)
    body = params[2 * size:]
    if length == 0 or len(body) % (length + 1):
        raise _length_error(protocol, "sync write")
    return address, length, {
        body[i]: bytes(body[i + 1 : i + 1 + length]) for i in range(0, len(body), length + 1)
    }


def sync_read_params(address: int, length: int, ids: list[int], protocol: int = 2) -> bytes:
    """SYNC_READ: address, length, ids (2.0: 2 bytes each; 1.0 framing, as Feetech's SCS
    protocol has it: 1 byte each)."""
    size = 1 if protocol == 1 else 2
    return _le(address, size) + _le(length, size) + bytes(ids)


def parse_sync_read(params: bytes, protocol: int = 2) -> tuple[int, int, list[int]]:
    size = 1 if protocol == 1 else 2
    if len(params) < 2 * size + 1:
        raise _length_error(protocol, "sync read")
    if protocol == 1:
        return params[0], params[1], list(params[2:])
    return _word(params, 0), _word(params, 2), list(params[4:])


def bulk_read_params(protocol: int, items: list[tuple[int, int, int]]) -> bytes:
    """BULK_READ of (id, address, length) items (P1: 00, then length, id, address)."""
    if protocol == 1:
        return b"\x00" + b"".join(bytes((n, i, a)) for i, a, n in items)
    return b"".join(bytes((i,)) + _le(a, 2) + _le(n, 2) for i, a, n in items)


def parse_bulk_read(protocol: int, params: bytes) -> list[tuple[int, int, int]]:
    if protocol == 1:
        body = params[1:]
        if not params or len(body) % 3 or not body:
            raise _length_error(1, "bulk read")
        return [(body[k + 1], body[k + 2], body[k]) for k in range(0, len(body), 3)]
    if not params or len(params) % 5:
        raise _length_error(2, "bulk read")
    return [(params[k], _word(params, k + 1), _word(params, k + 3))
            for k in range(0, len(params), 5)]


def bulk_write_params(items: list[tuple[int, int, bytes]]) -> bytes:
    """BULK_WRITE (2.0 only) of (id, address, data) items."""
    return b"".join(bytes((i,)) + _le(a, 2) + _le(len(d), 2) + bytes(d) for i, a, d in items)


def parse_bulk_write(params: bytes) -> list[tuple[int, int, bytes]]:
    items, k = [], 0
    while k < len(params):
        if k + 5 > len(params):
            raise _length_error(2, "bulk write")
        dxl_id, address, length = params[k], _word(params, k + 1), _word(params, k + 3)
        if length == 0 or k + 5 + length > len(params):
            raise _length_error(2, "bulk write")
        items.append((dxl_id, address, bytes(params[k + 5 : k + 5 + length])))
        k += 5 + length
    if not items:
        raise _length_error(2, "bulk write")
    return items
