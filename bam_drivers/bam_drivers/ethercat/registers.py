"""ESC registers, application-layer states and the SII EEPROM (ETG.1000.4/.6, ETG.2010).

What a master reads and writes in an EtherCAT slave controller (ESC): the
register addresses, the AL (application layer) states and status codes,
the sync manager and FMMU register layouts, and the SII EEPROM the slave
describes itself with (identity, mailbox, categories). The emulator builds
its slaves from these; the driver names AL states and codes with them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

# -- register addresses (ESC datasheet section II; the ones a master touches) --------------
TYPE = 0x0000
REVISION = 0x0001
BUILD = 0x0002
FMMUS_SUPPORTED = 0x0004
SMS_SUPPORTED = 0x0005
RAM_SIZE = 0x0006
PORT_DESCRIPTOR = 0x0007
FEATURES = 0x0008
STATION_ADDRESS = 0x0010
STATION_ALIAS = 0x0012
DL_CONTROL = 0x0100
DL_STATUS = 0x0110
AL_CONTROL = 0x0120
AL_STATUS = 0x0130
AL_STATUS_CODE = 0x0134
PDI_CONTROL = 0x0140
EVENT_MASK = 0x0200
RX_ERROR_COUNTERS = 0x0300
ERROR_COUNTERS_END = 0x0314
WD_DIVIDER = 0x0400
WD_TIME_PDI = 0x0410
WD_TIME_PROCESS_DATA = 0x0420
WD_STATUS_PROCESS_DATA = 0x0440
WD_COUNTER_PROCESS_DATA = 0x0442
EEPROM_CONFIG = 0x0500
EEPROM_CONTROL = 0x0502
EEPROM_ADDRESS = 0x0504
EEPROM_DATA = 0x0508
FMMU0 = 0x0600
FMMU_SIZE = 16
SM0 = 0x0800
SM_SIZE = 8
DC_RECEIVE_TIME_PORT0 = 0x0900
DC_SYSTEM_TIME = 0x0910
DC_RECEIVE_TIME_ECAT = 0x0918
DC_SYSTEM_TIME_OFFSET = 0x0920
DC_SYSTEM_TIME_DELAY = 0x0928
DC_SYSTEM_TIME_DIFFERENCE = 0x092C
DC_SYNC_ACTIVATION = 0x0981
PROCESS_RAM = 0x1000

# ESC feature bits (0x0008)
FEATURE_DC = 0x0004
FEATURE_DC_64BIT = 0x0008

# EEPROM control/status bits (0x0502)
EEPROM_WRITE_ENABLE = 0x0001
EEPROM_READ_8_BYTES = 0x0040
EEPROM_COMMAND_MASK = 0x0700
EEPROM_READ = 0x0100
EEPROM_WRITE = 0x0200
EEPROM_RELOAD = 0x0300
EEPROM_ERROR_COMMAND = 0x0800
EEPROM_NACK = 0x2000
EEPROM_BUSY = 0x8000

# Sync manager register bytes (offsets in its 8 bytes) and bits
SM_START, SM_LENGTH, SM_CONTROL, SM_STATUS, SM_ACTIVATE, SM_PDI_CONTROL = 0, 2, 4, 5, 6, 7
SM_MODE_MAILBOX = 0x02  # control bits 0-1: 00 buffered (3 buffers), 10 mailbox
SM_DIRECTION_WRITE = 0x04  # control bits 2-3: 01 = ECAT writes, PDI reads
SM_WATCHDOG_TRIGGER = 0x40  # control bit 6
SM_STATUS_MAILBOX_FULL = 0x08
SM_ENABLE = 0x01  # activate bit 0
SM_REPEAT = 0x02  # activate bit 1: repeat request; PDI control bit 1: repeat ack
SM_PDI_DEACTIVATED = 0x01

# FMMU bytes
FMMU_LOGICAL_START, FMMU_LENGTH, FMMU_PHYSICAL_START, FMMU_TYPE, FMMU_ACTIVATE = 0, 4, 8, 11, 12
FMMU_READ, FMMU_WRITE = 0x01, 0x02


class AlState(IntEnum):
    """Application-layer states (AL control 0x0120 / AL status 0x0130, bits 0-3)."""

    NONE = 0x00
    INIT = 0x01
    PRE_OP = 0x02
    BOOT = 0x03
    SAFE_OP = 0x04
    OPERATIONAL = 0x08


AL_ERROR = 0x10  # AL status bit 4: error indicated; in AL control: error acknowledge
AL_STATE_MASK = 0x0F

AL_STATE_NAMES = {0: "NONE", 1: "INIT", 2: "PRE-OP", 3: "BOOT", 4: "SAFE-OP", 8: "OP"}


def al_state_name(status: int) -> str:
    """"SAFE-OP", "SAFE-OP + ERROR", ... of an AL status word."""
    name = AL_STATE_NAMES.get(status & AL_STATE_MASK, f"0x{status & AL_STATE_MASK:x}")
    return name + (" + ERROR" if status & AL_ERROR else "")


# AL status codes (0x0134), ETG.1000.6 table 11
AL_STATUS_CODES = {
    0x0000: "no error",
    0x0001: "unspecified error",
    0x0002: "no memory",
    0x0011: "invalid requested state change",
    0x0012: "unknown requested state",
    0x0013: "bootstrap not supported",
    0x0014: "no valid firmware",
    0x0015: "invalid mailbox configuration (bootstrap)",
    0x0016: "invalid mailbox configuration",
    0x0017: "invalid sync manager configuration",
    0x0018: "no valid inputs available",
    0x0019: "no valid outputs",
    0x001A: "synchronization error",
    0x001B: "sync manager watchdog",
    0x001C: "invalid sync manager types",
    0x001D: "invalid output configuration",
    0x001E: "invalid input configuration",
    0x001F: "invalid watchdog configuration",
    0x0020: "slave needs cold start",
    0x0021: "slave needs INIT",
    0x0022: "slave needs PREOP",
    0x0023: "slave needs SAFEOP",
    0x0024: "invalid input mapping",
    0x0025: "invalid output mapping",
    0x0026: "inconsistent settings",
    0x0027: "free run not supported",
    0x0028: "synchronization not supported",
    0x002B: "no valid inputs and outputs",
    0x002C: "fatal sync error",
    0x0030: "invalid DC sync configuration",
}

SM_WATCHDOG = 0x001B
INVALID_STATE_CHANGE = 0x0011
UNKNOWN_STATE = 0x0012
BOOTSTRAP_NOT_SUPPORTED = 0x0013
INVALID_MAILBOX = 0x0016
INVALID_OUTPUTS = 0x001D
INVALID_INPUTS = 0x001E
INVALID_OUTPUT_MAPPING = 0x0025
INVALID_INPUT_MAPPING = 0x0024


def al_status_code_name(code: int) -> str:
    return AL_STATUS_CODES.get(code, "manufacturer specific" if code >= 0x8000 else "unknown")


# -- SII EEPROM (ETG.2010): word addresses and categories -------------------------------------
SII_VENDOR = 0x0008
SII_PRODUCT = 0x000A
SII_REVISION = 0x000C
SII_SERIAL = 0x000E
SII_RX_MAILBOX = 0x0018  # offset, size: master -> slave (SM0)
SII_TX_MAILBOX = 0x001A  # offset, size: slave -> master (SM1)
SII_MAILBOX_PROTOCOLS = 0x001C
SII_SIZE = 0x003E
SII_VERSION = 0x003F
SII_CATEGORIES = 0x0040

MAILBOX_COE = 0x0004  # mailbox protocol bits (SII word 0x1C)


class Category(IntEnum):
    STRINGS = 10
    GENERAL = 30
    FMMU = 40
    SYNC_MANAGER = 41
    TXPDO = 50
    RXPDO = 51
    END = 0xFFFF


# CoE details (SII general category, byte 5)
COE_SDO = 0x01
COE_PDO_ASSIGN = 0x04
COE_PDO_CONFIG = 0x08
COE_COMPLETE_ACCESS = 0x20

# Sync manager types (SII category 41, byte 7)
SM_TYPE_MAILBOX_OUT, SM_TYPE_MAILBOX_IN, SM_TYPE_OUTPUTS, SM_TYPE_INPUTS = 1, 2, 3, 4


@dataclass(frozen=True)
class SyncManagerConfig:
    """A sync manager as the SII describes it: start, length, control byte, type."""

    start: int
    length: int
    control: int
    kind: int  # SM_TYPE_*
    enable: bool = True


@dataclass(frozen=True)
class PdoEntry:
    index: int
    subindex: int
    bits: int
    data_type: int = 0  # CoE data type code (0: unknown)


@dataclass(frozen=True)
class PdoDescription:
    """A PDO as the SII lists it: index, sync manager, entries."""

    index: int
    sync_manager: int
    entries: tuple[PdoEntry, ...]


@dataclass(frozen=True)
class SiiContent:
    """What a slave's SII EEPROM says about it."""

    vendor: int
    product: int
    revision: int
    serial: int
    name: str
    group: str
    order: str
    rx_mailbox: tuple[int, int]  # (offset, size), SM0
    tx_mailbox: tuple[int, int]  # SM1
    coe_details: int
    sync_managers: tuple[SyncManagerConfig, ...]
    fmmus: tuple[int, ...]  # 1 outputs, 2 inputs, 3 mailbox status
    txpdos: tuple[PdoDescription, ...] = field(default_factory=tuple)
    rxpdos: tuple[PdoDescription, ...] = field(default_factory=tuple)
    station_alias: int = 0
    ebus_current: int = 0  # mA


def crc8(data: bytes) -> int:
    """The SII configuration-area checksum: CRC-8, polynomial x^8+x^2+x+1, seed 0xFF."""
    crc = 0xFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def sii_image(c: SiiContent, size_bytes: int = 2048) -> bytes:
    """The EEPROM image of ``c``: configuration area, identity, mailboxes, categories."""
    head = bytearray(SII_CATEGORIES * 2)
    struct.pack_into("<HHHHH", head, 0, 0x0005, 0x0000, 0x0000, 0x0000, c.station_alias)
    head[14] = crc8(bytes(head[:14]))
    struct.pack_into("<IIII", head, SII_VENDOR * 2, c.vendor, c.product, c.revision, c.serial)
    struct.pack_into("<HHHHH", head, SII_RX_MAILBOX * 2, *c.rx_mailbox, *c.tx_mailbox,
                     MAILBOX_COE)
    struct.pack_into("<HH", head, SII_SIZE * 2, size_bytes * 8 // 1024 - 1, 1)
    strings = [c.name, c.group, c.order]  # SOEM names a slave after string 1
    body = bytearray()
    body += _category(Category.STRINGS, _strings(strings))
    body += _category(Category.GENERAL, _general(c, strings))
    body += _category(Category.FMMU, bytes(c.fmmus))
    body += _category(Category.SYNC_MANAGER, b"".join(
        struct.pack("<HHBBBB", s.start, s.length, s.control, 0, int(s.enable), s.kind)
        for s in c.sync_managers))
    for kind, pdos in ((Category.TXPDO, c.txpdos), (Category.RXPDO, c.rxpdos)):
        for pdo in pdos:
            body += _category(kind, _pdo(pdo))
    body += Category.END.to_bytes(2, "little") + b"\xff\xff"
    image = bytes(head + body)
    if len(image) > size_bytes:
        raise ValueError(f"SII content of {len(image)} bytes exceeds {size_bytes}")
    return image + b"\xff" * (size_bytes - len(image))


def _category(kind: int, data: bytes) -> bytes:
    if len(data) % 2:
        data += b"\x00"
    return struct.pack("<HH", kind, len(data) // 2) + data


def _strings(strings: list[str]) -> bytes:
    out = bytearray([len(strings)])
    for s in strings:
        raw = s.encode("ascii")
        out += bytes([len(raw)]) + raw
    return bytes(out)


def _general(c: SiiContent, strings: list[str]) -> bytes:
    data = bytearray(32)
    data[0] = 2  # group: string 2
    data[2] = 3  # order: string 3
    data[3] = 1  # name: string 1
    data[5] = c.coe_details
    struct.pack_into("<h", data, 12, c.ebus_current)
    data[16] = 0x11  # ports 0 and 1: MII
    return bytes(data)


def _pdo(pdo: PdoDescription) -> bytes:
    out = bytearray(struct.pack("<HBBBBH", pdo.index, len(pdo.entries), pdo.sync_manager, 0, 0,
                                0))
    for e in pdo.entries:
        out += struct.pack("<HBBBBH", e.index, e.subindex, 0, e.data_type, e.bits, 0)
    return bytes(out)
