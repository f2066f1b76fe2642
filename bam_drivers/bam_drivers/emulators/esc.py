"""EtherCAT slave controllers (ESC) on a line: what each does with the datagrams of a frame.

No I/O here: :class:`Chain` takes the datagrams of a frame and lets every
:class:`Esc` on the line act on them in order, as the frame passes through
the slaves: auto-increment addressing (each slave increments ADP; the one
that sees 0 answers), configured station addresses (0x0010), broadcast
(reads OR their data in), logical addressing through the FMMUs (0x0600),
read-multiple-write (ARMW/FRMW: one slave reads, the others write), and the
working counter of each (+1 read, +1 write; +1/+2 for read-write). Memory
is registers (0x0000-0x0FFF) and process RAM; the RAM under an enabled sync
manager (0x0800) obeys it: a mailbox SM refuses a write while full and a
read while empty (no WKC), completes when its last byte is accessed and
hands the message to the application (the drive); buffered SMs hold the
process data. The EEPROM interface (0x0500) reads the SII image; AL control
(0x0120) runs the state machine INIT/PRE-OP/SAFE-OP/OP with error
acknowledge and the application's checks; the process-data watchdog
(0x0400, 0x0420, 0x0440) trips when SM2 is not written in time; DC
receive-time latches (0x0900) and the system time (0x0910) run on the
emulator's clock.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from typing import Protocol

from bam_drivers.ethercat import frames as fr
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.registers import AL_ERROR, AlState

MEMORY_SIZE = 0x3000  # registers and 8 KiB of process RAM
DEFAULT_WD_DIVIDER = 2498  # 100 µs watchdog ticks
DEFAULT_WD_TIME = 1000  # ticks: 100 ms
HOP_DELAY_NS = 100  # DC receive-time difference per slave passed

# Byte ranges ECAT may write (the rest of the registers is read-only for the master).
_WRITABLE = (
    (reg.STATION_ADDRESS, reg.STATION_ADDRESS + 2), (reg.DL_CONTROL, reg.DL_CONTROL + 4),
    (reg.AL_CONTROL, reg.AL_CONTROL + 2), (reg.EVENT_MASK, reg.EVENT_MASK + 4),
    (reg.RX_ERROR_COUNTERS, reg.ERROR_COUNTERS_END), (reg.WD_DIVIDER, reg.WD_DIVIDER + 2),
    (reg.WD_TIME_PDI, reg.WD_TIME_PDI + 2),
    (reg.WD_TIME_PROCESS_DATA, reg.WD_TIME_PROCESS_DATA + 2),
    (reg.EEPROM_CONFIG, reg.EEPROM_CONFIG + 1), (reg.EEPROM_CONTROL, reg.EEPROM_DATA + 8),
    (reg.FMMU0, reg.FMMU0 + 16 * reg.FMMU_SIZE), (0x0900, 0x0928), (0x0928, 0x092C),
    (0x0930, 0x0938), (0x0980, 0x09B0),
)


class Application(Protocol):
    """What runs behind the ESC's PDI (the drive's firmware)."""

    def mailbox_received(self, raw: bytes) -> None: ...

    def check_transition(self, current: AlState, requested: AlState) -> int: ...

    def al_changed(self, old: AlState, new: AlState) -> None: ...

    def outputs_written(self, data: bytes) -> None: ...

    def watchdog_expired(self) -> None: ...


class SyncManager:
    """A view of one sync manager's 8 registers."""

    def __init__(self, memory: bytearray, number: int) -> None:
        self.number = number
        self.base = reg.SM0 + reg.SM_SIZE * number
        self._memory = memory
        self.full = False  # mailbox: a message is in the buffer

    @property
    def start(self) -> int:
        return int.from_bytes(self._memory[self.base:self.base + 2], "little")

    @property
    def length(self) -> int:
        return int.from_bytes(self._memory[self.base + 2:self.base + 4], "little")

    @property
    def control(self) -> int:
        return self._memory[self.base + reg.SM_CONTROL]

    @property
    def enabled(self) -> bool:
        return bool(self._memory[self.base + reg.SM_ACTIVATE] & reg.SM_ENABLE) and self.length > 0

    @property
    def mailbox(self) -> bool:
        return self.control & 0x03 == reg.SM_MODE_MAILBOX

    @property
    def ecat_writes(self) -> bool:
        return self.control & 0x0C == reg.SM_DIRECTION_WRITE

    @property
    def end(self) -> int:
        return self.start + self.length

    def overlaps(self, address: int, size: int) -> bool:
        return self.enabled and address < self.end and address + size > self.start


class Esc:
    """One slave controller: memory, SII EEPROM, sync managers, FMMUs, AL state, watchdog.

    ``clock()`` is the emulator's time in ns; ``app`` the application behind
    the PDI. Not thread-safe: the emulator holds one lock around the chain.
    """

    def __init__(self, eeprom: bytes, clock: Callable[[], int], app: Application) -> None:
        self.memory = bytearray(MEMORY_SIZE)
        self.eeprom = bytearray(eeprom)
        self._clock = clock
        self.app = app
        self.sms = [SyncManager(self.memory, i) for i in range(8)]
        self._outbox: deque[bytes] = deque()  # mailbox messages waiting for SM1
        self._last_sent = b""  # for the mailbox repeat request
        self._outputs_since_safe_op = False
        self._pending_op = False
        self._wd_last = 0
        self._wd_armed = False
        self.stats = {"watchdog_trips": 0, "mailbox_in": 0, "mailbox_out": 0}
        self.downstream_slaves = 0  # set by the chain: slaves after this one
        self._reset_registers()

    # -- registers ---------------------------------------------------------------------

    def _reset_registers(self) -> None:
        m = self.memory
        m[reg.TYPE], m[reg.REVISION] = 0x11, 0x02
        struct.pack_into("<HBBBB", m, reg.BUILD, 0x0001, 8, 8, 8, 0x0F)
        struct.pack_into("<H", m, reg.FEATURES, reg.FEATURE_DC | reg.FEATURE_DC_64BIT)
        m[reg.STATION_ALIAS:reg.STATION_ALIAS + 2] = self.eeprom[8:10]
        m[reg.PDI_CONTROL] = 0x05  # SPI
        struct.pack_into("<H", m, reg.WD_DIVIDER, DEFAULT_WD_DIVIDER)
        struct.pack_into("<H", m, reg.WD_TIME_PDI, DEFAULT_WD_TIME)
        struct.pack_into("<H", m, reg.WD_TIME_PROCESS_DATA, DEFAULT_WD_TIME)
        m[reg.WD_STATUS_PROCESS_DATA] = 0x01
        self._put(reg.AL_STATUS, "<H", AlState.INIT)  # power-up: no application callback

    def _u16(self, address: int) -> int:
        return int.from_bytes(self.memory[address:address + 2], "little")

    def _put(self, address: int, fmt: str, *values: int) -> None:
        struct.pack_into(fmt, self.memory, address, *values)

    @property
    def station_address(self) -> int:
        return self._u16(reg.STATION_ADDRESS)

    @property
    def al_status(self) -> int:
        return self._u16(reg.AL_STATUS)

    @property
    def al_state(self) -> AlState:
        return AlState(self.al_status & reg.AL_STATE_MASK)

    @property
    def al_code(self) -> int:
        return self._u16(reg.AL_STATUS_CODE)

    def set_dl_status(self, downstream: bool) -> None:
        """Links of a line: port 0 towards the master, port 1 open when a slave follows."""
        status = 0x0001 | 0x0010 | 0x0200  # PDI operational, link and traffic on port 0
        status |= (0x0020 | 0x0800) if downstream else 0x0400  # port 1: traffic or closed
        status |= 0x1000 | 0x4000  # ports 2, 3 closed
        self._put(reg.DL_STATUS, "<H", status)

    # -- physical access (the datagram's view) -------------------------------------------

    def read(self, address: int, size: int) -> bytes | None:
        """Bytes at ``address`` as a master reads them; None when refused (no WKC)."""
        if address < 0 or address + size > MEMORY_SIZE:
            return None
        if address < reg.PROCESS_RAM:
            self._refresh_registers(address, size)
            return bytes(self.memory[address:address + size])
        for sm in self.sms:
            if sm.overlaps(address, size):
                return self._read_sm(sm, address, size)
        return bytes(self.memory[address:address + size])

    def write(self, address: int, data: bytes) -> bool:
        """Write as a master does; False when refused (no WKC)."""
        size = len(data)
        if address < 0 or address + size > MEMORY_SIZE:
            return False
        if address < reg.PROCESS_RAM:
            self._write_registers(address, data)
            return True
        for sm in self.sms:
            if sm.overlaps(address, size):
                return self._write_sm(sm, address, data)
        self.memory[address:address + size] = data
        return True

    def _refresh_registers(self, address: int, size: int) -> None:
        end = address + size
        if address < reg.SM0 + 8 * reg.SM_SIZE and end > reg.SM0:
            for sm in self.sms:
                status = reg.SM_STATUS_MAILBOX_FULL if sm.mailbox and sm.full else 0
                self.memory[sm.base + reg.SM_STATUS] = status
                pdi = self.memory[sm.base + reg.SM_PDI_CONTROL] & reg.SM_REPEAT
                if not sm.mailbox and not self._process_data_active(sm.ecat_writes):
                    pdi |= reg.SM_PDI_DEACTIVATED
                self.memory[sm.base + reg.SM_PDI_CONTROL] = pdi
        if address < reg.DC_SYSTEM_TIME + 8 and end > reg.DC_SYSTEM_TIME:
            self._put(reg.DC_SYSTEM_TIME, "<Q", self.system_time() & (1 << 64) - 1)
        if address < reg.EEPROM_CONTROL + 2 and end > reg.EEPROM_CONTROL:
            control = self._u16(reg.EEPROM_CONTROL) & ~(reg.EEPROM_BUSY | 0x0700)
            self._put(reg.EEPROM_CONTROL, "<H", control | reg.EEPROM_READ_8_BYTES)

    def _write_registers(self, address: int, data: bytes) -> None:
        end = address + len(data)
        for offset, byte in enumerate(data):
            a = address + offset
            if self._writable(a):
                self.memory[a] = byte
        if address < reg.AL_CONTROL + 2 and end > reg.AL_CONTROL:
            self._al_request(self._u16(reg.AL_CONTROL))
        if address < reg.ERROR_COUNTERS_END and end > reg.RX_ERROR_COUNTERS:
            self.memory[reg.RX_ERROR_COUNTERS:reg.ERROR_COUNTERS_END] = bytes(
                reg.ERROR_COUNTERS_END - reg.RX_ERROR_COUNTERS)
        if address < reg.EEPROM_CONTROL + 2 and end > reg.EEPROM_CONTROL:
            self._eeprom_command()
        if address <= reg.DC_RECEIVE_TIME_PORT0 < end:
            self._latch_receive_times()
        if address < reg.DC_SYSTEM_TIME + 8 and end > reg.DC_SYSTEM_TIME:
            written = int.from_bytes(bytes(data[max(0, reg.DC_SYSTEM_TIME - address):][:4]),
                                     "little")
            difference = (written - self.system_time()) & 0xFFFFFFFF
            self._put(reg.DC_SYSTEM_TIME_DIFFERENCE, "<I", difference)
        if address < reg.SM0 + 8 * reg.SM_SIZE and end > reg.SM0:
            self._write_sm_registers(address, data)

    @staticmethod
    def _writable(address: int) -> bool:
        return any(lo <= address < hi for lo, hi in _WRITABLE)

    def _write_sm_registers(self, address: int, data: bytes) -> None:
        for offset, byte in enumerate(data):
            a = address + offset
            if not reg.SM0 <= a < reg.SM0 + 8 * reg.SM_SIZE:
                continue
            sm = self.sms[(a - reg.SM0) // reg.SM_SIZE]
            part = (a - reg.SM0) % reg.SM_SIZE
            if part in (reg.SM_STATUS, reg.SM_PDI_CONTROL):
                continue  # read-only for ECAT
            was_enabled = sm.enabled
            repeat_before = self.memory[a] & reg.SM_REPEAT if part == reg.SM_ACTIVATE else 0
            self.memory[a] = byte
            if part == reg.SM_ACTIVATE and byte & reg.SM_REPEAT != repeat_before:
                self._repeat_mailbox(sm, byte & reg.SM_REPEAT)
            if was_enabled and not sm.enabled:
                sm.full = False
        self._next_mailbox()

    # -- sync managers -------------------------------------------------------------------

    def _process_data_active(self, outputs: bool = False) -> bool:
        """Buffered SMs work in SAFE-OP and OP; outputs not while an error is indicated."""
        status = self.al_status
        return status & reg.AL_STATE_MASK in (AlState.SAFE_OP, AlState.OPERATIONAL) \
            and not (outputs and status & AL_ERROR)

    def _read_sm(self, sm: SyncManager, address: int, size: int) -> bytes | None:
        if sm.ecat_writes:
            return None
        if sm.mailbox:
            if not sm.full:
                return None  # empty read mailbox: refused
            data = bytes(self.memory[address:address + size])
            if address + size >= sm.end:  # last byte read: the mailbox is free again
                sm.full = False
                self._next_mailbox()
            return data
        if not self._process_data_active():
            return None
        return bytes(self.memory[address:address + size])

    def _write_sm(self, sm: SyncManager, address: int, data: bytes) -> bool:
        if not sm.ecat_writes:
            return False
        if sm.mailbox:
            if sm.full or self.al_state == AlState.INIT:
                return False
            self.memory[address:address + len(data)] = data
            if address + len(data) >= sm.end:
                self.stats["mailbox_in"] += 1
                message = bytes(self.memory[sm.start:sm.end])
                self.app.mailbox_received(message)  # the PDI reads it at once
            return True
        if not self._process_data_active(outputs=True):
            return False
        self.memory[address:address + len(data)] = data
        if address + len(data) >= sm.end:
            self._outputs_complete(sm)
        return True

    def _outputs_complete(self, sm: SyncManager) -> None:
        if sm.control & reg.SM_WATCHDOG_TRIGGER:
            self._wd_last = self._clock()
            self._wd_armed = True
            self.memory[reg.WD_STATUS_PROCESS_DATA] = 0x01
        self._outputs_since_safe_op = True
        self.app.outputs_written(bytes(self.memory[sm.start:sm.end]))
        if self._pending_op:
            self._pending_op = False
            self._set_al(AlState.OPERATIONAL, 0)

    def post_mailbox(self, message: bytes) -> None:
        """A message from the application for the master (SM1), queued while SM1 is full."""
        self._outbox.append(message)
        self._next_mailbox()

    def _next_mailbox(self) -> None:
        sm = self.sms[1]
        if sm.full or not self._outbox or not sm.enabled or self.al_state == AlState.INIT \
                or sm.start < reg.PROCESS_RAM or sm.end > MEMORY_SIZE:
            return
        message = self._outbox.popleft()[:sm.length]
        self.memory[sm.start:sm.end] = message + bytes(sm.length - len(message))
        self._last_sent = message
        sm.full = True
        self.stats["mailbox_out"] += 1

    def _repeat_mailbox(self, sm: SyncManager, request: int) -> None:
        """Repeat request (activate bit 1 toggled): the last message again, then ack."""
        if sm.number == 1 and self._last_sent and not sm.full and sm.enabled \
                and sm.length >= len(self._last_sent) and sm.end <= MEMORY_SIZE:
            self.memory[sm.start:sm.end] = self._last_sent + bytes(sm.length
                                                                  - len(self._last_sent))
            sm.full = True
        pdi = sm.base + reg.SM_PDI_CONTROL
        self.memory[pdi] = (self.memory[pdi] & ~reg.SM_REPEAT) | request

    def set_inputs(self, sm_number: int, data: bytes) -> None:
        """The application's new input process data (buffered SM ``sm_number``)."""
        sm = self.sms[sm_number]
        size = min(len(data), sm.length)
        if sm.start >= reg.PROCESS_RAM and sm.start + size <= MEMORY_SIZE:
            self.memory[sm.start:sm.start + size] = data[:size]

    def clear_mailboxes(self) -> None:
        self._outbox.clear()
        for sm in self.sms[:2]:
            sm.full = False

    # -- logical addressing (FMMUs) ---------------------------------------------------------

    def logical(self, command: int, address: int, data: bytearray) -> int:
        """Apply LRD/LWR/LRW at logical ``address`` to ``data``; the WKC increment."""
        read = written = False
        for i in range(16):
            base = reg.FMMU0 + i * reg.FMMU_SIZE
            if not self.memory[base + reg.FMMU_ACTIVATE] & 0x01:
                continue
            start, length = struct.unpack_from("<IH", self.memory, base)
            physical = self._u16(base + reg.FMMU_PHYSICAL_START)
            kind = self.memory[base + reg.FMMU_TYPE]
            lo, hi = max(start, address), min(start + length, address + len(data))
            if lo >= hi:
                continue
            at, size = physical + lo - start, hi - lo
            window = slice(lo - address, hi - address)
            if kind & reg.FMMU_WRITE and command in (fr.Command.LWR, fr.Command.LRW):
                written |= self.write(at, bytes(data[window]))
            if kind & reg.FMMU_READ and command in (fr.Command.LRD, fr.Command.LRW):
                got = self.read(at, size)
                if got is not None:
                    data[window] = got
                    read = True
        if command == fr.Command.LRW:
            return int(read) + 2 * int(written)
        return int(read or written)

    # -- EEPROM interface ------------------------------------------------------------------

    def _eeprom_command(self) -> None:
        control = self._u16(reg.EEPROM_CONTROL)
        command = control & reg.EEPROM_COMMAND_MASK
        word = int.from_bytes(self.memory[reg.EEPROM_ADDRESS:reg.EEPROM_ADDRESS + 4], "little")
        error = 0
        if command == reg.EEPROM_READ:
            chunk = bytes(self.eeprom[word * 2:word * 2 + 8])
            self.memory[reg.EEPROM_DATA:reg.EEPROM_DATA + 8] = chunk + bytes(8 - len(chunk))
        elif command == reg.EEPROM_WRITE:
            if control & reg.EEPROM_WRITE_ENABLE and word * 2 + 2 <= len(self.eeprom):
                self.eeprom[word * 2:word * 2 + 2] = self.memory[reg.EEPROM_DATA:
                                                                 reg.EEPROM_DATA + 2]
            else:
                error = reg.EEPROM_ERROR_COMMAND
        elif command not in (0, reg.EEPROM_RELOAD):
            error = reg.EEPROM_ERROR_COMMAND
        # Done at once: command bits back to 0, never busy.
        self._put(reg.EEPROM_CONTROL, "<H", (control & 0x00FF) | error)

    # -- distributed clocks ----------------------------------------------------------------

    def system_time(self) -> int:
        offset = struct.unpack_from("<q", self.memory, reg.DC_SYSTEM_TIME_OFFSET)[0]
        return self._clock() + offset

    def _latch_receive_times(self) -> None:
        now = self._clock()
        self._put(reg.DC_RECEIVE_TIME_PORT0, "<I", now & 0xFFFFFFFF)
        downstream = self._u16(reg.DL_STATUS) & 0x0800
        port1 = now + 2 * HOP_DELAY_NS * self.downstream_slaves if downstream else 0
        self._put(reg.DC_RECEIVE_TIME_PORT0 + 4, "<I", port1 & 0xFFFFFFFF)
        self._put(reg.DC_RECEIVE_TIME_ECAT, "<Q", now)

    # -- AL state machine ------------------------------------------------------------------

    def _set_al(self, state: AlState, code: int, error: bool = False) -> None:
        old = self.al_state
        self._put(reg.AL_STATUS, "<H", int(state) | (AL_ERROR if error else 0))
        self._put(reg.AL_STATUS_CODE, "<H", code)
        if state != AlState.OPERATIONAL:
            self._wd_armed = False
        if old != state:
            if state in (AlState.INIT, AlState.PRE_OP):
                self._outputs_since_safe_op = False
            if state == AlState.INIT:
                self.clear_mailboxes()
            self.app.al_changed(old, state)
        self._next_mailbox()

    def fail(self, state: AlState, code: int) -> None:
        """The application reports an error: ``state`` with the error flag and ``code``."""
        self._pending_op = False
        self._set_al(state, code, error=True)

    def _al_request(self, control: int) -> None:
        requested, acknowledge = control & reg.AL_STATE_MASK, bool(control & AL_ERROR)
        status = self.al_status
        current = AlState(status & reg.AL_STATE_MASK)
        if status & AL_ERROR and not acknowledge:
            return  # an indicated error must be acknowledged first
        self._pending_op = False
        if requested not in AlState._value2member_map_ or requested == AlState.NONE:
            self.fail(current, reg.UNKNOWN_STATE)
            return
        target = AlState(requested)
        if target == AlState.BOOT:
            self.fail(current, reg.BOOTSTRAP_NOT_SUPPORTED)
            return
        if target <= current:
            self._set_al(target, 0)  # downwards (or acknowledge): always allowed
            return
        if (current, target) not in ((AlState.INIT, AlState.PRE_OP),
                                     (AlState.PRE_OP, AlState.SAFE_OP),
                                     (AlState.SAFE_OP, AlState.OPERATIONAL)):
            self.fail(current, reg.INVALID_STATE_CHANGE)
            return
        code = self.app.check_transition(current, target)
        if code:
            self.fail(current, code)
        elif target == AlState.OPERATIONAL and not self._outputs_since_safe_op:
            self._set_al(current, 0)
            self._pending_op = True  # OP once valid outputs arrived
        else:
            self._set_al(target, 0)

    # -- process-data watchdog -----------------------------------------------------------

    def watchdog_time_ns(self) -> int:
        ticks = self._u16(reg.WD_TIME_PROCESS_DATA)
        return ticks * (self._u16(reg.WD_DIVIDER) + 2) * 40

    def check_watchdog(self) -> bool:
        """Trip the watchdog when SM2 was not written in time (OP only); True when it did."""
        limit = self.watchdog_time_ns()
        if not self._wd_armed or limit == 0 or self.al_state != AlState.OPERATIONAL:
            return False
        if self._clock() - self._wd_last <= limit:
            return False
        self._wd_armed = False
        self.memory[reg.WD_STATUS_PROCESS_DATA] = 0x00
        self.memory[reg.WD_COUNTER_PROCESS_DATA] = (
            self.memory[reg.WD_COUNTER_PROCESS_DATA] + 1) & 0xFF
        self.stats["watchdog_trips"] += 1
        self.fail(AlState.SAFE_OP, reg.SM_WATCHDOG)
        self.app.watchdog_expired()
        return True


class Chain:
    """Slaves on a line, in order from the master: they act on each datagram in turn."""

    def __init__(self, slaves: list[Esc]) -> None:
        self.slaves = slaves
        for i, esc in enumerate(slaves):
            esc.set_dl_status(downstream=i + 1 < len(slaves))
            esc.downstream_slaves = len(slaves) - i - 1

    def process(self, datagrams: list[fr.Datagram]) -> None:
        for d in datagrams:
            self.datagram(d)

    def datagram(self, d: fr.Datagram) -> None:
        command = d.command
        if command in fr.AUTO_INCREMENT:
            self._auto_increment(d)
        elif command in fr.CONFIGURED:
            self._configured(d)
        elif command in fr.BROADCAST:
            for esc in self.slaves:
                self._access(esc, d, broadcast=True)
        elif command in fr.LOGICAL:
            for esc in self.slaves:
                d.wkc += esc.logical(command, d.address, d.data)

    def _auto_increment(self, d: fr.Datagram) -> None:
        adp = d.adp
        for esc in self.slaves:
            if d.command == fr.Command.ARMW:
                self._read_multiple_write(esc, d, adp == 0)
            elif adp == 0:
                self._access(esc, d)
            adp = (adp + 1) & 0xFFFF
        d.address = (d.address & 0xFFFF0000) | adp

    def _configured(self, d: fr.Datagram) -> None:
        for esc in self.slaves:
            match = esc.station_address == d.adp
            if d.command == fr.Command.FRMW:
                self._read_multiple_write(esc, d, match)
            elif match:
                self._access(esc, d)

    @staticmethod
    def _read_multiple_write(esc: Esc, d: fr.Datagram, reader: bool) -> None:
        if reader:
            got = esc.read(d.ado, len(d.data))
            if got is not None:
                d.data[:] = got
                d.wkc += 1
        elif esc.write(d.ado, bytes(d.data)):
            d.wkc += 1

    @staticmethod
    def _access(esc: Esc, d: fr.Datagram, broadcast: bool = False) -> None:
        command = fr.Command(d.command)
        incoming = bytes(d.data)
        if command in fr.READS or command in fr.READ_WRITES:
            got = esc.read(d.ado, len(d.data))
            if got is not None:
                if broadcast:
                    got = bytes(a | b for a, b in zip(got, d.data))
                d.data[:] = got
                d.wkc += 1
        if command in fr.WRITES or command in fr.READ_WRITES:
            if esc.write(d.ado, incoming):
                d.wkc += 1 if command in fr.WRITES else 2
