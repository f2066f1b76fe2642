"""A Dynamixel bus: servos of one model on one serial port, read and written in SI units.

The port is ``dynamixel-sdk``'s ``PortHandler`` (opening, baud rates, byte
time); the packets are framed and checked here, with
:mod:`bam_drivers.serial_servo.packet`, and the control tables of
:mod:`bam_drivers.dynamixel.control_table` give the registers. No ROS
import. Every servo must be of the table's model
(:meth:`SerialServoBus.check_models`: its model number): an MX-64 is not
driven, nor recorded, as an MX-106. :meth:`SerialServoBus.open` (re)opens
the port and locks it for this process
(:mod:`bam_drivers.serial_servo.port_lock`: a second driver on the port is
refused, naming the first), :meth:`SerialServoBus.close` closes it; a port
that fails during a transfer is closed and the failure reported
(``port_error``).

The Feetech STS bus (:mod:`bam_drivers.feetech.bus`) is this bus on
``feetech-servo-sdk``'s port: its tables, read request and error bits are
the class attributes and methods it overrides; everything else is shared.

Every cycle of a driver is

* one read of the state block of every servo: a *sync read* on protocol 2.0,
  a *bulk read* on protocol 1.0, which has no sync read. The block is the
  table's state fields plus its present current where the model reports it
  (protocol 1.0: 36..69, 34 bytes; protocol 2.0: 124..146, 23 bytes);
* one *sync write* of the goal positions of the servos whose torque is on,
  plus a sync write of the P gains and of the torque enables only in the
  cycles where they change (a servo's torque is turned on after its goal is
  written, off before anything else).

Bytes on the wire per cycle, n servos, steady state (:meth:`SerialServoBus.bytes`
counts them)::

    protocol 1.0: read tx 7 + 3n, rx 40n; goals tx 8 + 3n
    protocol 2.0: read tx 14 + n, rx 34n; goals tx 14 + 5n

Joint values: q = direction·θ + offset, with θ the servo angle (register
2048 = 0 rad); velocities, duties, currents and torques take the direction's
sign. SI: rad, rad/s, V, °C, duty as a fraction, A. The low-level control is
the voltage the H-bridge applies, U = duty·V_in (paper equation 12).

Replies. Every request first discards what the port holds: a reply that came
after its request timed out (a servo, or an emulator on a loaded machine,
answering late) would otherwise be read as the answer to the next request, a
state block taken for a model number, and every later read one request behind
(feetech-servo-sdk's packet handler, used here before, did that: its
``clearPort`` waits for the output instead). A status packet is taken only
when it is whole and checks out: its checksum (1.0) or CRC (2.0), a status
instruction (2.0), an error byte without bit 7 (1.0), the id of a servo that
still owes a reply and the data length asked. Anything else (a truncated
packet, a bad checksum, another id, another length) is *garbled*: in a cycle,
the servos whose reply did not come then are read again at once, one READ
each, and the cycle goes on with what that brings; a set-up read or write is
asked again, ``ATTEMPTS`` times in all. Per servo, a cycle ends in success,
``timeout`` (no reply), ``corrupt`` (garbled, and garbled or missing again) or
``failed`` (the request could not be sent). A servo is refused for its model
number only when ``MODEL_READS`` reads agree on it. Replies carry the status
error byte: on protocol 1.0 its bits are the alarms (input voltage, angle
limit, overheating, range, checksum, overload, instruction), on protocol 2.0
bit 7 (alert) says the hardware error status register (70) holds an error,
which is then read (at most every 0.2 s per servo while the alert lasts).

Reply timeout and the latency timer: a status is waited for (bytes·t_byte +
2·latency timer + 2) ms, the SDK's formula, with a latency timer of 16 ms by
default (``LATENCY_TIMER`` of ``dynamixel_sdk.port_handler``, the default of
FTDI USB adapters, which hold received bytes up to that long). A
pseudo-terminal (the emulator) or an adapter whose latency timer was lowered
to 1 ms answers far sooner, and 34 ms per lost reply would stall a 500 Hz
loop for 17 cycles. The bus takes ``latency_timer_ms`` as an argument; 0
(the default) detects it when the port opens (:func:`detect_latency_timer`):
1 ms for a pseudo-terminal, the adapter's own setting for a USB serial
adapter (``/sys/class/tty/ttyUSB0/device/latency_timer``), else the SDK's
16 ms. The port waits for bytes with ``select``, so a bus waiting for its
servos leaves the CPU to other processes.
"""

from __future__ import annotations

import math
import os
import select
import termios
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import serial
from dynamixel_sdk import PortHandler

from bam_drivers.dynamixel.control_table import TABLES
from bam_drivers.serial_servo import packet as pk
from bam_drivers.serial_servo import port_lock
from bam_drivers.serial_servo.control_table import (
    ControlTable,
    get_table,
    table_for_model_number,
)
from bam_drivers.supervisor import ConfigurationError
from bam_sim.common.errors import BamError, one_line

BAUD_RATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 500000, 576000, 921600,
              1000000, 1152000, 2000000, 2500000, 3000000, 3500000, 4000000)
SDK_LATENCY_TIMER_MS = 16.0  # dynamixel_sdk.port_handler.LATENCY_TIMER
PTY_LATENCY_TIMER_MS = 1.0  # a pseudo-terminal has no latency timer: the smallest FTDI value
PTY_MAJORS = range(136, 144)  # Unix98 pseudo-terminal slaves (Linux devices.txt)
HARDWARE_ERROR_POLL = 0.2  # s between reads of a servo's hardware error status while alerted
# Exceptions of a serial port that vanished (unplugged adapter, closed pseudo-terminal).
PORT_ERRORS = (OSError, serial.SerialException, termios.error, ValueError)

# Bytes of a status packet besides its data: 1.0 header, id, length, error, checksum;
# 2.0 header, id, length, instruction, error, CRC.
STATUS_OVERHEAD = {1: 6, 2: 11}
ATTEMPTS = 3  # requests of a set-up read or write before it fails (lost or garbled replies)
MODEL_READS = 3  # reads of a model number that must agree before a servo is refused for it
# s a stop's torque off keeps writing it and reading it back until every servo confirms:
# a loaded machine may leave the servos' replies (an emulator's) late for a while.
TORQUE_OFF_BUDGET = 2.0
# Protocol 1.0 status error bits; the alarms of the servo itself (HARDWARE_P1) vs its
# complaints about our instruction packet.
P1_ERROR_BITS = {0: "input voltage", 1: "angle limit", 2: "overheating", 3: "range",
                 4: "checksum", 5: "overload", 6: "instruction"}
HARDWARE_P1 = 0b0010_0111
# Protocol 2.0: status error byte = alert bit | error number; hardware error status bits.
P2_ALERT = 0x80
P2_ERROR_NUMBERS = {1: "result fail", 2: "instruction error", 3: "CRC error",
                    4: "data range error", 5: "data length error", 6: "data limit error",
                    7: "access error"}
P2_HARDWARE_BITS = {0: "input voltage", 2: "overheating", 3: "motor encoder",
                    4: "electrical shock", 5: "overload"}
TIMEOUT, CORRUPT, FAILED = "timeout", "corrupt", "failed"


def detect_latency_timer(port: str) -> tuple[float, str]:
    """The latency timer of ``port`` (ms) and where it comes from.

    A pseudo-terminal (the emulator) has none: 1 ms. A USB serial adapter
    shows its setting in sysfs. Anything else gets the SDK's 16 ms.
    """
    try:
        device = os.path.realpath(port)
        if os.major(os.stat(device).st_rdev) in PTY_MAJORS:
            return PTY_LATENCY_TIMER_MS, "pseudo-terminal"
        sysfs = f"/sys/class/tty/{os.path.basename(device)}/device/latency_timer"
        with open(sysfs, encoding="ascii") as f:
            return float(f.read().strip()), sysfs
    except (OSError, ValueError):
        return SDK_LATENCY_TIMER_MS, "the SDK's default"


def bit_names(names: dict[int, str], bits: int) -> list[str]:
    """Names of the bits set in ``bits`` ("bit N" for a bit ``names`` does not name)."""
    return [name for bit, name in names.items() if bits >> bit & 1] + \
        [f"bit {bit}" for bit in range(8) if bits >> bit & 1 and bit not in names]


def hardware_error_names(protocol: int, bits: int) -> list[str]:
    """Names of the hardware error bits set (protocol 1.0 alarms or 2.0 status bits)."""
    return bit_names(P1_ERROR_BITS if protocol == 1 else P2_HARDWARE_BITS, bits)


def status_error_text(protocol: int, error: int) -> str:
    """A status error byte as text ("" when it holds no instruction error)."""
    if protocol == 1:
        return ", ".join(P1_ERROR_BITS[b] for b in (3, 4, 6) if error >> b & 1)
    number = error & 0x7F
    return P2_ERROR_NUMBERS.get(number, f"error {number}") if number else ""


class PortMixin:
    """An SDK port with its own latency timer, byte counters and a blocking wait.

    Mixed into the ``PortHandler`` of dynamixel-sdk or feetech-servo-sdk (the
    same interface): ``latency_timer_ms`` and ``counts`` are set by the bus.
    """

    latency_timer_ms: float
    counts: list[int]  # [tx bytes, rx bytes], shared by the bus across reopenings

    def reply_timeout(self, reply_bytes: int) -> float:
        """Seconds to wait for ``reply_bytes`` bytes of status packets (the SDK's formula)."""
        return (self.tx_time_per_byte * reply_bytes + 2.0 * self.latency_timer_ms + 2.0) / 1e3

    def send(self, packet: bytes) -> bool:
        """Discard what was received, then write ``packet``; False if it was not all written.

        The discard is what keeps a late reply (one whose request timed out) from being
        read as the answer to this request.
        """
        self.ser.reset_input_buffer()
        written = self.ser.write(packet) or 0
        self.counts[0] += written
        return written == len(packet)

    def receive(self, deadline: float) -> bytes:
        """The bytes received, waiting for some until ``deadline`` (time.monotonic());
        b"" when none came."""
        ser = self.ser
        if not ser.in_waiting:
            wait = deadline - time.monotonic()
            if wait > 0.0:
                select.select([ser.fileno()], [], [], wait)
        data = ser.read(max(ser.in_waiting, 1))
        self.counts[1] += len(data)
        return data


class _Port(PortMixin, PortHandler):
    """dynamixel-sdk's port."""


@dataclass
class ServoState:
    """One servo's state in one cycle, joint frame, SI units."""

    position: float  # rad
    velocity: float  # rad/s
    duty: float  # PWM duty, fraction (-1..1)
    control: float  # V, duty·input voltage
    current: float  # A, NaN when the model has no current sense
    input_voltage: float  # V
    temperature: float  # °C
    hardware_error: int  # hardware error bits (protocol 1.0 alarms, 2.0 status register)
    status_error: int  # status error byte of the reply


@dataclass
class ServoCounters:
    """Communication record of one servo since the bus was made."""

    reads: int = 0  # successful state reads
    timeouts: int = 0
    corrupt: int = 0
    failed: int = 0  # other failures (a request not sent whole)
    rereads: int = 0  # replies garbled in a cycle and read again (not failures when that read)
    status_errors: int = 0  # replies whose error byte held an instruction error
    hardware_error: int = 0  # last hardware error bits
    last_error: str = ""
    last_error_time: float = math.nan  # time.monotonic()

    @property
    def errors(self) -> int:
        return self.timeouts + self.corrupt + self.failed


@dataclass
class CycleResult:
    """What one read brought: the servos read, the ones that failed and why."""

    states: dict[int, ServoState] = field(default_factory=dict)
    failures: dict[int, str] = field(default_factory=dict)  # id -> TIMEOUT, CORRUPT, FAILED
    port_error: str = ""  # the port was lost during the read

    @property
    def ok(self) -> bool:
        return not self.failures and not self.port_error


class SerialServoBus:
    """Servos of one control table on one port, with joint offsets and directions.

    The class attributes and ``_read_request`` bind it to Dynamixel servos and
    dynamixel-sdk's port; :class:`bam_drivers.feetech.bus.FeetechBus` binds the same bus
    to Feetech servos and feetech-servo-sdk's port.
    """

    KIND = "Dynamixel"
    SDK = "dynamixel-sdk"
    BAUD_RATES = BAUD_RATES
    TABLES = TABLES
    TABLES_MODULE = "bam_drivers.dynamixel.control_table"
    PORT: type[PortMixin] = _Port  # the SDK's port class, with PortMixin

    def __init__(self, port: str, table: ControlTable, ids: Sequence[int], *,
                 baud_rate: int = 1_000_000, offsets: Sequence[float] | None = None,
                 directions: Sequence[int] | None = None,
                 latency_timer_ms: float = 0.0) -> None:
        if self.TABLES.get(table.name) is not table:
            raise BamError(f"{table.title} is not a {self.KIND} servo; the {self.KIND} bus "
                           f"drives {', '.join(self.TABLES)}")
        self.table = table
        self.port_name = str(port)
        self.ids = _check_ids(ids)
        n = len(self.ids)
        self.offsets = tuple(float(v) for v in (offsets if offsets is not None else [0.0] * n))
        self.directions = tuple(int(v) for v in (directions if directions is not None
                                                 else [1] * n))
        self._check_args(baud_rate, latency_timer_ms)
        self.baud_rate = int(baud_rate)
        self.latency_timer_setting = float(latency_timer_ms)  # 0: detect at open
        self.latency_timer_ms, self.latency_timer_source = float(latency_timer_ms), "given"
        self.protocol = self.table.protocol
        self._fields = self._state_fields()
        self.block = self.table.block(self._fields)
        self.counters = {i: ServoCounters() for i in self.ids}
        self.port_error = ""  # why the port is closed ("" while open or never opened)
        self._counts = [0, 0]
        self._port: PortMixin | None = None
        self._locked = False  # this bus holds the port's lock
        self._claim = port_lock.Claim(self.port_name, self.KIND)  # held across reopenings
        self._alert_read = dict.fromkeys(self.ids, -math.inf)

    @classmethod
    def named(cls, port: str, servo_model: str, ids: Sequence[int], **kw) -> SerialServoBus:
        """A bus of the servo model a parameter or a command line names (one of
        :attr:`TABLES`); ``kw`` as :class:`SerialServoBus`."""
        return cls(port, get_table(servo_model, cls.TABLES), ids, **kw)

    def _check_args(self, baud_rate: int, latency_timer_ms: float) -> None:
        n = len(self.ids)
        if len(self.offsets) != n or not all(math.isfinite(v) for v in self.offsets):
            raise BamError(f"offsets must hold {n} finite numbers (one per id), got "
                           f"{list(self.offsets)}")
        if len(self.directions) != n or any(d not in (1, -1) for d in self.directions):
            raise BamError(f"directions must hold {n} values, each 1 or -1 (one per id), got "
                           f"{list(self.directions)}")
        if int(baud_rate) not in self.BAUD_RATES:
            raise BamError(f"baud rate {baud_rate} is not supported by {self.SDK}; use one "
                           f"of {', '.join(map(str, self.BAUD_RATES))}")
        if not (math.isfinite(latency_timer_ms) and 0.0 <= latency_timer_ms <= 1000.0):
            raise BamError(f"latency_timer_ms must be within [0, 1000] ms (0: detect), got "
                           f"{latency_timer_ms}")

    def _state_fields(self) -> tuple[str, ...]:
        names = list(self.table.state)
        if self.table.current is not None and self.table.current not in names:
            names.append(self.table.current)
        return tuple(names)

    # -- what differs between buses --------------------------------------------------

    def hardware_error_names(self, bits: int) -> list[str]:
        """Names of the hardware error bits set."""
        return hardware_error_names(self.protocol, bits)

    def status_error_text(self, error: int) -> str:
        """A status error byte as text ("" when it holds no instruction error)."""
        return status_error_text(self.protocol, error)

    def _read_request(self, start: int, length: int) -> bytes:
        """The cycle's request of the state block of every servo: a sync read (2.0), a
        bulk read (1.0: it has no sync read)."""
        if self.protocol == 2:
            params = pk.sync_read_params(start, length, list(self.ids))
            return pk.instruction_packet(2, pk.BROADCAST_ID, pk.Instruction.SYNC_READ, params)
        params = pk.bulk_read_params(1, [(i, start, length) for i in self.ids])
        return pk.instruction_packet(1, pk.BROADCAST_ID, pk.Instruction.BULK_READ, params)

    # -- port --------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._port is not None

    def open(self) -> None:
        """Open the port at the baud rate (BamError naming the port and the fix)."""
        self.close()
        try:
            self._claim.take()
        except ConfigurationError as exc:
            self.port_error = str(exc)
            raise
        if self.latency_timer_setting <= 0.0:
            self.latency_timer_ms, self.latency_timer_source = \
                detect_latency_timer(self.port_name)
        port = self.PORT(self.port_name)
        port.latency_timer_ms, port.counts = self.latency_timer_ms, self._counts
        try:
            opened = port.setBaudRate(self.baud_rate)
        except PORT_ERRORS as exc:
            self.port_error = one_line(exc)
            raise BamError(f"cannot open the {self.KIND} port {self.port_name}: "
                           f"{self.port_error}; check the port parameter, that the adapter "
                           "is plugged in and that you may use it (dialout group)") from None
        if not opened:
            raise BamError(f"cannot set {self.port_name} to {self.baud_rate} baud")
        self._port = port
        try:
            port_lock.lock(port.ser.fileno(), self.port_name, self.KIND)
        except ConfigurationError as exc:
            self.close()
            self.port_error = str(exc)
            raise
        self._locked = True
        self.port_error = ""

    def close(self) -> None:
        port, self._port = self._port, None
        locked, self._locked = self._locked, False
        if port is not None and port.ser is not None:
            try:
                if locked and port.ser.is_open:  # never a lock another driver holds
                    port_lock.unlock(port.ser.fileno())
                port.closePort()
            except PORT_ERRORS:
                pass

    def release(self) -> None:
        """Close the port and let it go for good (the driver's end)."""
        self.close()
        self._claim.release()

    def _lost(self, exc: BaseException) -> str:
        """The port failed: close it and remember why."""
        self.port_error = f"port lost: {one_line(exc)}"
        self.close()
        return self.port_error

    def bytes(self) -> tuple[int, int]:
        """Bytes transmitted and received since the bus was made."""
        return self._counts[0], self._counts[1]

    # -- requests --------------------------------------------------------------------

    def _transact(self, packet: bytes,
                  expected: dict[int, int]) -> tuple[dict[int, tuple[bytes, int]], bool] | None:
        """Send ``packet``, then collect the status packets of ``expected`` (id -> data
        length) until all came or the reply timeout: the valid ones by id, as (data, error
        byte), and whether anything else came (see the module docstring: garbled). None
        when the packet could not be sent whole. Port failures raise PORT_ERRORS."""
        port = self._port
        if not port.send(packet):
            return None
        span = port.reply_timeout(sum(STATUS_OVERHEAD[self.protocol] + n
                                      for n in expected.values()))
        deadline = time.monotonic() + span
        parser = pk.StreamParser(self.protocol)
        replies: dict[int, tuple[bytes, int]] = {}
        garbled = False
        while len(replies) < len(expected):
            # Bytes that came while this thread was not scheduled are read even past the
            # deadline, up to a second span (bytes streaming in for ever end it too).
            data = port.receive(deadline)
            if not data:
                break
            for frame in parser.feed(data):
                if frame.raw == packet:
                    continue  # our own request, echoed by an adapter
                if self._is_reply(frame, expected) and frame.id not in replies:
                    replies[frame.id] = (frame.data, frame.error)
                else:
                    garbled = True
            if time.monotonic() > deadline + span:
                break
        return replies, garbled or parser.pending > 0 or parser.garbage > 0

    def _is_reply(self, frame: pk.Frame, expected: dict[int, int]) -> bool:
        """A whole, valid status packet of a servo asked, with the data length asked."""
        if not frame.valid or expected.get(frame.id) != len(frame.data):
            return False
        if self.protocol == 2:
            return frame.instruction == pk.Instruction.STATUS and len(frame.params) >= 1
        return frame.error < 0x80  # bit 7 of a 1.0 error byte is never set

    def _ask(self, dxl_id: int, instruction: int, params: bytes, length: int, what: str,
             hint: str = "") -> tuple[bytes, int]:
        """One servo's reply (data, error byte) to an instruction, asked again while it
        is lost or garbled, ``ATTEMPTS`` times in all; then a BamError: ``what``, why,
        ``hint``."""
        packet = pk.instruction_packet(self.protocol, dxl_id, instruction, params)
        why = "no reply"
        for _ in range(ATTEMPTS):
            try:
                outcome = self._transact(packet, {dxl_id: length})
            except PORT_ERRORS as exc:
                raise BamError(self._lost(exc)) from None
            if outcome is None:
                why = "the request could not be sent"
                continue
            replies, garbled = outcome
            if dxl_id in replies:
                return replies[dxl_id]
            if garbled:
                why = "garbled replies"
        raise BamError(f"{what}: {why} ({ATTEMPTS} tries){hint}")

    # -- set-up ------------------------------------------------------------------------

    def model_number(self, dxl_id: int) -> int:
        """The model number of one servo, read until it is the table's or ``MODEL_READS``
        reads agree on another (BamError when it does not answer, or its reads disagree)."""
        seen = []
        for _ in range(MODEL_READS):
            model = self._read(dxl_id, "model_number", (
                f"servo id {dxl_id} does not answer on {self.port_name} at {self.baud_rate} "
                f"baud (protocol {self.protocol})"),
                "; check its power, its id, baud_rate and protocol")
            if model == self.table.model_number:
                return model
            seen.append(model)
        if len(set(seen)) > 1:  # a reply garbled past its checksum, or two servos answering
            raise BamError(f"servo id {dxl_id} on {self.port_name} gives model numbers "
                           f"{seen} in {MODEL_READS} reads; check the wiring and that no two "
                           "servos share the id")
        return seen[0]

    def ping(self) -> dict[int, int]:
        """Model number of every servo (:meth:`model_number`)."""
        return {dxl_id: self.model_number(dxl_id) for dxl_id in self.ids}

    def check_models(self) -> None:
        """Every servo answers with the table's model number: a ConfigurationError
        naming the servo and the table to use otherwise, when its reads agree (BamError
        when one does not answer). Even a model with the same registers (MX-64 and
        MX-106) is refused: its recording would be labelled with the wrong servo."""
        for dxl_id, model in self.ping().items():
            if model == self.table.model_number:
                continue
            try:
                other = table_for_model_number(self.protocol, model, self.TABLES)
            except BamError:
                other = None
            hint = (f"set servo_model:={other.name}" if other is not None
                    else f"add a control table for it to {self.TABLES_MODULE}")
            raise ConfigurationError(
                f"servo id {dxl_id} on {self.port_name} is model number {model}, not "
                f"{self.table.title} ({self.table.model_number}); {hint}")

    def input_voltages(self) -> dict[int, float]:
        """Input voltage every servo measures, V (BamError on failure)."""
        f = self.table.field("present_input_voltage")
        return {i: f.to_si(self.read_register(i, "present_input_voltage")) for i in self.ids}

    def read_register(self, dxl_id: int, name: str) -> int:
        """Raw value of one register of one servo (BamError on failure)."""
        return self._read(dxl_id, name, f"cannot read {name} of servo id {dxl_id}")

    def _read(self, dxl_id: int, name: str, what: str, hint: str = "") -> int:
        f = self.table.field(name)
        self._require()
        data, _ = self._ask(dxl_id, pk.Instruction.READ,
                            pk.read_params(self.protocol, f.address, f.size), f.size, what,
                            hint)
        return int.from_bytes(data, "little")

    def write_register(self, dxl_id: int, name: str, raw: int) -> None:
        """Write one register and wait for the status (BamError on failure)."""
        f = self.table.field(name)
        self._require()
        what = f"cannot write {name} of servo id {dxl_id}"
        _, error = self._ask(dxl_id, pk.Instruction.WRITE,
                             pk.write_params(self.protocol, f.address, f.pack(raw)), 0, what)
        if self.status_error_text(error):
            raise BamError(f"{what}: {self.status_error_text(error)}")

    def ensure_position_mode(self, current_limit: float | None = None) -> list[str]:
        """Put servos in position control (the table's ``position_mode``: protocol 2.0
        operating mode 3, XL-320 control mode 2, Feetech operating mode 0); what was
        changed. Protocol 1.0 MX servos are in position control unless their angle
        limits say wheel mode, which this driver leaves to the user.

        With ``current_limit`` (A): current-based position control (the table's
        ``current_position_mode``, protocol 2.0 operating mode 5), Goal Current written to
        that limit, which the servo's Current Limit register must allow."""
        mode, label = self.table.position_mode, "position"
        if current_limit is not None:
            mode, label = self.table.current_position_mode, "current-based position"
            if mode is None:
                raise BamError(f"the {self.table.title} has no current-based position mode; "
                               "give an actuator of its position mode")
        if mode is None:
            return []
        name, wanted = mode
        changed = []
        for dxl_id in self.ids:
            present = self.read_register(dxl_id, name)
            if present != wanted:
                self.write_register(dxl_id, "torque_enable", 0)  # EEPROM needs torque off
                self.write_register(dxl_id, name, wanted)
                changed.append(f"servo id {dxl_id}: {name.replace('_', ' ')} {present} -> "
                               f"{wanted} ({label})")
            if current_limit is not None:
                self._write_goal_current(dxl_id, current_limit)
        return changed

    def _write_goal_current(self, dxl_id: int, amps: float) -> None:
        """Goal Current at ``amps``, within the servo's Current Limit (BamError if above)."""
        limit_field = self.table.field("current_limit")
        limit = limit_field.to_si(self.read_register(dxl_id, "current_limit"))
        if amps > limit + limit_field.scale / 2:
            raise BamError(f"servo id {dxl_id}: Current Limit holds {limit:g} A, below the "
                           f"{amps:g} A the actuator's law clips at; raise the register, or "
                           f"declare the actuator with current_limit {limit:g}")
        self.write_register(dxl_id, "goal_current",
                            self.table.field("goal_current").from_si(amps))

    def return_delays(self) -> dict[int, float]:
        """Return delay time of every servo, s (each adds to every reply)."""
        f = self.table.field("return_delay_time")
        return {i: f.to_si(self.read_register(i, "return_delay_time")) for i in self.ids}

    def torque_enabled(self) -> dict[int, bool]:
        """Torque enable register of every servo (BamError on failure)."""
        return {i: bool(self.read_register(i, "torque_enable")) for i in self.ids}

    # -- the cycle ---------------------------------------------------------------------

    def read_state(self) -> CycleResult:
        """One sync read (protocol 2.0) or bulk read (1.0) of every servo's state block;
        the servos whose reply was garbled read again, one READ each."""
        result = CycleResult()
        if self._port is None:
            result.port_error = self.port_error or "port closed"
            return result
        try:
            for dxl_id, reply in self._transact_read().items():
                if isinstance(reply, str):
                    result.failures[dxl_id] = reply
                else:
                    result.states[dxl_id] = self._decode(dxl_id, *reply)
        except PORT_ERRORS as exc:
            result.port_error = self._lost(exc)
            result.states.clear()
            result.failures.clear()
        self._count(result)
        return result

    def _transact_read(self) -> dict[int, tuple[bytes, int] | str]:
        """Each servo's state block (data, error byte), or why it was not read."""
        start, length = self.block
        outcome = self._transact(self._read_request(start, length), dict.fromkeys(self.ids,
                                                                                   length))
        if outcome is None:
            return dict.fromkeys(self.ids, FAILED)
        replies: dict[int, tuple[bytes, int] | str] = dict(outcome[0])
        missing = [i for i in self.ids if i not in replies]
        if not outcome[1]:  # nothing garbled: the servos missing are silent
            return {**replies, **dict.fromkeys(missing, TIMEOUT)}
        request = pk.read_params(self.protocol, start, length)
        for dxl_id in missing:
            self.counters[dxl_id].rereads += 1
            again = self._transact(pk.instruction_packet(
                self.protocol, dxl_id, pk.Instruction.READ, request), {dxl_id: length})
            if again is None:
                replies[dxl_id] = FAILED
            else:
                replies[dxl_id] = again[0].get(dxl_id, CORRUPT)
        return replies

    def _decode(self, dxl_id: int, data: bytes, error: int) -> ServoState:
        i = self.ids.index(dxl_id)
        sign, offset = self.directions[i], self.offsets[i]
        t = self.table
        v = t.decode(self._fields, data, self.block[0])
        voltage = v["present_input_voltage"]
        duty = sign * v[t.duty]
        current = sign * v[t.current] if t.current is not None else math.nan
        return ServoState(
            position=sign * v["present_position"] + offset,
            velocity=sign * v["present_velocity"], duty=duty, control=duty * voltage,
            current=current, input_voltage=voltage, temperature=v["present_temperature"],
            hardware_error=self._hardware_error(dxl_id, error), status_error=error)

    def _hardware_error(self, dxl_id: int, error: int) -> int:
        if self.protocol == 1:
            return error & HARDWARE_P1
        counters = self.counters[dxl_id]
        if not error & P2_ALERT:
            return 0
        now = time.monotonic()
        if now - self._alert_read[dxl_id] >= HARDWARE_ERROR_POLL:
            self._alert_read[dxl_id] = now
            try:
                counters.hardware_error = self.read_register(dxl_id, self.table.hardware_error)
            except BamError:
                pass  # counted with the next cycles; the last value stands
        return counters.hardware_error

    def _count(self, result: CycleResult) -> None:
        now = time.monotonic()
        for dxl_id, state in result.states.items():
            c = self.counters[dxl_id]
            c.reads += 1
            c.hardware_error = state.hardware_error
            text = self.status_error_text(state.status_error)
            if text:
                c.status_errors += 1
                c.last_error, c.last_error_time = f"status: {text}", now
        for dxl_id, kind in result.failures.items():
            c = self.counters[dxl_id]
            if kind == TIMEOUT:
                c.timeouts += 1
            elif kind == CORRUPT:
                c.corrupt += 1
            else:
                c.failed += 1
            c.last_error, c.last_error_time = kind, now
        if result.port_error:
            for c in self.counters.values():
                c.last_error, c.last_error_time = result.port_error, now

    # -- writes ------------------------------------------------------------------------

    def goal_limits(self, index: int) -> tuple[float, float]:
        """Joint positions (rad) the goal register of servo ``index`` can hold."""
        f = self.table.field("goal_position")
        lo, hi = (f.to_si(f.encode(c)) for c in f.count_range)
        ends = sorted(self.directions[index] * v + self.offsets[index] for v in (lo, hi))
        return ends[0], ends[1]

    def gain_limit(self) -> float:
        """Largest model gain kp the P-gain register holds."""
        return self.table.field("p_gain").count_range[1] / self.table.gain_per_kp

    def write_goals(self, goals: dict[int, float]) -> bool:
        """Goal positions (joint frame, rad) by id, in one sync write; False: port lost."""
        f = self.table.field("goal_position")
        raw = {}
        for dxl_id, goal in goals.items():
            i = self.ids.index(dxl_id)
            raw[dxl_id] = f.from_si((goal - self.offsets[i]) * self.directions[i])
        return self._sync_write("goal_position", raw)

    def write_gains(self, gains: dict[int, float]) -> bool:
        """Model gains kp by id (P-gain register = kp·gain_per_kp), one sync write."""
        f = self.table.field("p_gain")
        lo, hi = f.count_range
        raw = {i: min(max(round(kp * self.table.gain_per_kp), lo), hi) for i, kp in gains.items()}
        return self._sync_write("p_gain", raw)

    def write_torque(self, enables: dict[int, bool]) -> bool:
        """Torque enables by id, one sync write."""
        return self._sync_write("torque_enable", {i: int(bool(e)) for i, e in enables.items()})

    def _sync_write(self, name: str, raw: dict[int, int]) -> bool:
        if not raw:
            return True
        if self._port is None:
            return False
        f = self.table.field(name)
        params = pk.sync_write_params(self.protocol, f.address, f.size,
                                      {i: f.pack(v) for i, v in raw.items()})
        try:
            return self._port.send(pk.instruction_packet(
                self.protocol, pk.BROADCAST_ID, pk.Instruction.SYNC_WRITE, params))
        except PORT_ERRORS as exc:
            self._lost(exc)
            return False

    def torque_off(self, budget: float = TORQUE_OFF_BUDGET) -> bool:
        """Torque off on every servo, confirmed by reading it back: written and read
        again until every servo confirms, or for ``budget`` s; False if unconfirmed."""
        deadline = time.monotonic() + budget
        while self._port is not None:
            self.write_torque(dict.fromkeys(self.ids, False))
            try:
                if not any(self.torque_enabled().values()):
                    return True
            except BamError:
                pass  # a reply lost or garbled ATTEMPTS times: written and asked again
            if time.monotonic() >= deadline:
                break
        return False

    def _require(self) -> PortMixin:
        if self._port is None:
            raise BamError(f"the {self.KIND} port {self.port_name} is not open"
                           + (f" ({self.port_error})" if self.port_error else ""))
        return self._port


def _check_ids(ids: Iterable[int]) -> tuple[int, ...]:
    ids = tuple(int(i) for i in ids)
    if not ids:
        raise BamError("ids is empty; give the id of every servo on the bus, e.g. [1]")
    bad = [i for i in ids if not 0 <= i <= 252]
    if bad:
        raise BamError(f"servo ids must be within 0..252, got {bad}")
    if len(set(ids)) != len(ids):
        raise BamError(f"servo ids must differ, got {list(ids)}")
    return ids

