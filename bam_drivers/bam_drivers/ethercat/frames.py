"""EtherCAT frames and datagrams (ETG.1000.4): parse and build them as slaves see them.

An EtherCAT frame is an Ethernet frame of EtherType 0x88A4 whose payload
starts with a 2-byte header (11-bit length, type 1 = datagrams) followed by
datagrams: command, index, 32-bit address (ADP, ADO for physical commands;
a logical address for LRD/LWR/LRW), 11-bit length with the "more follows"
flag, IRQ, data and the 16-bit working counter (WKC) that every slave which
executes the command increments. The emulator parses the frames the master
sends with :func:`parse`, lets its slaves act on the datagrams in place, and
sends them back with :func:`build`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

ETHERTYPE = 0x88A4
ETH_HEADER = 14  # destination, source MAC, EtherType
FRAME_TYPE_DATAGRAMS = 1
DATAGRAM_HEADER = 10
WKC_SIZE = 2
MORE_FOLLOWS = 0x8000
CIRCULATED = 0x4000
LENGTH_MASK = 0x07FF

_HEADER = struct.Struct("<BBIHH")  # command, index, address, length|flags, IRQ


class Command(IntEnum):
    """Datagram commands (ETG.1000.4, table 12)."""

    NOP = 0
    APRD = 1  # auto-increment physical read
    APWR = 2
    APRW = 3
    FPRD = 4  # configured-address physical read
    FPWR = 5
    FPRW = 6
    BRD = 7  # broadcast read
    BWR = 8
    BRW = 9
    LRD = 10  # logical read
    LWR = 11
    LRW = 12
    ARMW = 13  # auto-increment read, multiple write
    FRMW = 14  # configured-address read, multiple write


AUTO_INCREMENT = frozenset((Command.APRD, Command.APWR, Command.APRW, Command.ARMW))
CONFIGURED = frozenset((Command.FPRD, Command.FPWR, Command.FPRW, Command.FRMW))
BROADCAST = frozenset((Command.BRD, Command.BWR, Command.BRW))
LOGICAL = frozenset((Command.LRD, Command.LWR, Command.LRW))
READS = frozenset((Command.APRD, Command.FPRD, Command.BRD, Command.LRD))
WRITES = frozenset((Command.APWR, Command.FPWR, Command.BWR, Command.LWR))
READ_WRITES = frozenset((Command.APRW, Command.FPRW, Command.BRW, Command.LRW))


class FrameError(ValueError):
    """A frame that is not a well-formed EtherCAT frame (the slaves drop it)."""


@dataclass
class Datagram:
    """One datagram; ``data`` and ``wkc`` are changed in place by the slaves."""

    command: int
    index: int
    address: int  # ADP | ADO << 16, or the 32-bit logical address
    data: bytearray
    wkc: int = 0
    irq: int = 0
    flags: int = 0  # circulated bit as received

    @property
    def adp(self) -> int:
        return self.address & 0xFFFF

    @property
    def ado(self) -> int:
        return self.address >> 16


def parse(payload: bytes) -> list[Datagram]:
    """The datagrams of an EtherCAT frame's payload (after the Ethernet header)."""
    if len(payload) < 2:
        raise FrameError("frame shorter than its EtherCAT header")
    header = int.from_bytes(payload[:2], "little")
    if header >> 12 != FRAME_TYPE_DATAGRAMS:
        raise FrameError(f"EtherCAT frame type {header >> 12} is not datagrams")
    end = 2 + (header & LENGTH_MASK)
    if end > len(payload):
        raise FrameError("EtherCAT length beyond the frame")
    datagrams, offset, more = [], 2, True
    while more:
        if offset + DATAGRAM_HEADER + WKC_SIZE > end:
            raise FrameError("truncated datagram")
        command, index, address, length, irq = _HEADER.unpack_from(payload, offset)
        size = length & LENGTH_MASK
        data_at = offset + DATAGRAM_HEADER
        if data_at + size + WKC_SIZE > end:
            raise FrameError("datagram data beyond the frame")
        wkc = int.from_bytes(payload[data_at + size:data_at + size + 2], "little")
        datagrams.append(Datagram(command, index, address,
                                  bytearray(payload[data_at:data_at + size]), wkc, irq,
                                  length & CIRCULATED))
        offset = data_at + size + WKC_SIZE
        more = bool(length & MORE_FOLLOWS)
    return datagrams


def build(datagrams: list[Datagram], pad_to: int = 0) -> bytes:
    """The EtherCAT payload of ``datagrams`` (header included), zero-padded to ``pad_to``."""
    body = bytearray()
    for i, d in enumerate(datagrams):
        length = len(d.data) | d.flags | (MORE_FOLLOWS if i + 1 < len(datagrams) else 0)
        body += _HEADER.pack(d.command, d.index, d.address, length, d.irq)
        body += d.data
        body += (d.wkc & 0xFFFF).to_bytes(2, "little")
    frame = (len(body) | FRAME_TYPE_DATAGRAMS << 12).to_bytes(2, "little") + body
    return frame + bytes(max(0, pad_to - len(frame)))


def ethernet(destination: bytes, source: bytes, payload: bytes) -> bytes:
    """An Ethernet frame of EtherType 0x88A4 around ``payload``."""
    return destination + source + ETHERTYPE.to_bytes(2, "big") + payload
