"""Servos on an emulated serial bus: control tables, firmware law, instruction semantics.

No I/O here: :class:`EmulatedBus` turns an instruction
:class:`~bam_drivers.serial_servo.packet.Frame` into the status packets the
servos would send, and :class:`EmulatedServo` holds one servo's control-table
memory and its physics. The process that puts this behind a pseudo-terminal is
:mod:`bam_drivers.emulators.serial_servo_emulator`.

Firmware behaviour emulated (ROBOTIS e-manual, protocol 1.0 / 2.0 and the
control tables of :mod:`bam_drivers.dynamixel.control_table`):

* the joint is a :class:`bam_sim.bench.stepper.BenchStepper` pendulum driven by
  the MX voltage P law of bam_sim (equations 12, 13 of the paper):
  goal from Goal Position, kp = P-gain register / ``table.gain_per_kp``,
  torque from Torque Enable; the present registers are computed from the
  simulated state when they are read: position quantized to counts,
  velocity, duty = control / supply voltage (P1 Present Load, P2 Present
  PWM), current I = (U − k_t·q̇)/R (0 with the torque off), input voltage,
  a constant temperature, Moving = |q̇| above the moving threshold;
* writes are checked before any byte changes: read-only fields and writes
  past the table refuse with the access error (P1 has no access error: the
  range error bit), values outside a field's range with the range error,
  P2 writes covering part of a field with the data length error, EEPROM
  writes while the torque is on (P2) or the Lock register is set (P1) with
  the access error; reserved gaps between fields ignore writes and read 0;
* REG_WRITE stores one write and sets Registered, ACTION applies it (without
  one: instruction error), FACTORY_RESET (keeps the ID for P1 and for P2
  options 0x01/0x02), REBOOT (RAM to factory values, hardware error cleared);
* Status Return Level (0: ping only, 1: ping and reads, 2: all); no status
  for broadcast, SYNC_WRITE, BULK_WRITE; replies of SYNC_READ / BULK_READ in
  the order asked; a packet with a bad checksum addressed to a servo gets a
  checksum (P1) / CRC (P2) error status;
* injected hardware errors: P2 sets Hardware Error Status (70) and the alert
  bit 7 of every status error byte; P1 ORs the bits into the error byte.
  Unlike the firmware, the torque is not shut down by a hardware error.

Feetech STS servos (tables of :mod:`bam_drivers.feetech.control_table`) speak
the SCS protocol: protocol-1.0 framing and semantics, plus SYNC_READ (1-byte
address and length) and without BULK_READ; the Response Status Level (1: all,
0: reads and pings) replaces the Status Return Level; status error bytes
carry the injected alarm bits only (no instruction, range or checksum bits:
a refused write is dropped silently, a packet with a bad checksum gets no
answer); EEPROM writes apply whatever the Lock register holds (it only keeps
them out of flash); the joint runs bam_sim's STS law (``sts3215``: the
firmware's target slews toward Goal Position, kp = P Coefficient).

FAST_SYNC_READ / FAST_BULK_READ (2.0) answer with one status packet of ID
0xFE whose parameters chain, per servo, ERR, ID, data and a CRC of the
packet so far (the last servo's CRC is the packet's), not byte-stuffed, as
dynamixel-sdk parses them.

Current-based position control (protocol 2.0 operating mode 5, the table's
``current_position_mode``) runs the servo's current-law actuator of the registry
(:func:`bam_sim.models.servo.actuators.law_siblings`: ``xl330_current`` for an XL330)
on the same motor and friction, clipped at Goal Current within Current Limit; Present
Current is then the law's current and Present PWM the duty (R·I + k_t·q̇)/V_in that
drives it. A servo with no such actuator keeps its position law in mode 5.

Not emulated: CLEAR, indirect addresses,
operating modes other than position and current-based position control, profiles,
baud-rate changes
(a pseudo-terminal has no baud rate), bus collisions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from enum import Enum

from bam_drivers.dynamixel.control_table import P2_VELOCITY_UNIT
from bam_drivers.serial_servo import packet as pk
from bam_drivers.serial_servo.control_table import ControlTable
from bam_sim.bench.stepper import BenchStepper
from bam_sim.models import parameter_vector as P
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import CURRENT, VOLTAGE
from bam_sim.models.servo.actuators import law_siblings


class Fault(Enum):
    """Protocol-independent refusals, mapped to each protocol's error byte."""

    ACCESS = "access"
    RANGE = "range"
    LENGTH = "length"
    INSTRUCTION = "instruction"
    CHECKSUM = "checksum"
    FAIL = "fail"


_P1_ERRORS = {
    Fault.ACCESS: pk.P1Error.RANGE, Fault.RANGE: pk.P1Error.RANGE,
    Fault.LENGTH: pk.P1Error.RANGE, Fault.INSTRUCTION: pk.P1Error.INSTRUCTION,
    Fault.CHECKSUM: pk.P1Error.CHECKSUM, Fault.FAIL: pk.P1Error.INSTRUCTION,
}
_P2_ERRORS = {
    Fault.ACCESS: pk.P2Result.ACCESS, Fault.RANGE: pk.P2Result.DATA_RANGE,
    Fault.LENGTH: pk.P2Result.DATA_LENGTH, Fault.INSTRUCTION: pk.P2Result.INSTRUCTION,
    Fault.CHECKSUM: pk.P2Result.CRC, Fault.FAIL: pk.P2Result.RESULT_FAIL,
}
# Moving flag threshold when the table has no Moving Threshold register (P1):
# the protocol-2.0 factory value, 10 × 0.229 rpm.
_DEFAULT_MOVING_THRESHOLD = 10 * P2_VELOCITY_UNIT

SimFactory = Callable[[float, float], BenchStepper]  # (position, velocity) -> simulator


class EmulatedServo:
    """One servo: control-table memory, firmware law and pendulum physics."""

    def __init__(
        self,
        dxl_id: int,
        table: ControlTable,
        make_sim: SimFactory,
        *,
        position: float = 0.0,
        temperature: float = 35.0,
        return_delay: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self._make_sim = make_sim
        self._clock = clock
        self._start = clock()
        self.temperature = temperature
        self.sim = make_sim(position, 0.0)
        self.supply_voltage = self.sim.supply_voltage
        self._params = self.sim.params  # the joint's set; its operating mode picks the law
        self._laws: dict[tuple[int, float], ParameterSet] = {}
        self.control = 0.0  # V or A (the law's), of the last physics tick
        self.motor_torque = 0.0  # N m
        self.injected_error = 0  # P1 error bits / P2 hardware error status
        self.torque_ever_enabled = False  # tests: was the torque on at any moment
        self.registered: tuple[int, bytes] | None = None
        self.memory = table.initial_memory()
        self.set("id", dxl_id)
        self.set("return_delay_time", self.table.field("return_delay_time").from_si(return_delay))
        self.set("goal_position", table.field("goal_position").from_si(position))
        self._factory_eeprom = bytes(self.memory)
        self.apply_command()
        self.refresh()

    # -- registers ---------------------------------------------------------------

    @property
    def id(self) -> int:
        return self.get("id")

    @property
    def protocol(self) -> int:
        return self.table.protocol

    def get(self, name: str) -> int:
        f = self.table.field(name)
        return int.from_bytes(self.memory[f.address : f.end], "little")

    def set(self, name: str, raw: int) -> None:
        f = self.table.field(name)
        self.memory[f.address : f.end] = f.pack(raw)

    def _si(self, name: str) -> float:
        return self.table.field(name).to_si(self.get(name))

    @property
    def return_delay(self) -> float:
        """Seconds the servo waits before its status (Return Delay Time × 2 µs)."""
        return self._si("return_delay_time")

    @property
    def feetech(self) -> bool:
        return self.table.vendor == "feetech"

    @property
    def status_return_level(self) -> int:
        """Dynamixel's level: 0 ping only, 1 ping and reads, 2 all (Feetech's response
        level 1 answers all, 0 reads and pings)."""
        if self.feetech:
            return 2 if self.get("response_status_level") else 1
        return self.get("status_return_level")

    @property
    def torque_enabled(self) -> bool:
        return self.get("torque_enable") != 0

    @property
    def error_byte(self) -> int:
        """Bits every status of this servo carries (before the instruction's result)."""
        if self.protocol == 1:
            return self.injected_error & 0x7F
        return pk.P2_ALERT if self.injected_error else 0

    def set_hardware_error(self, bits: int) -> None:
        self.injected_error = int(bits) & 0xFF
        if self.table.hardware_error is not None:
            self.set(self.table.hardware_error, self.injected_error)

    # -- firmware law and physics ---------------------------------------------------

    def apply_command(self) -> None:
        """Hand the operating mode, goal, torque enable and gain registers to the
        simulator."""
        law = self._law()
        if law is not self.sim.params:
            self.sim.set_parameters(law)
        self.sim.set_command(
            goal=self._si("goal_position"),
            torque_enable=self.torque_enabled,
            gain=self.get("p_gain") / self.table.gain_per_kp,
        )
        self.torque_ever_enabled |= self.torque_enabled

    def tick(self) -> None:
        """One physics step of the simulator's Δt."""
        sample = self.sim.tick()
        self.control, self.motor_torque = sample.control, sample.motor_torque

    def set_state(self, position: float, velocity: float = 0.0) -> None:
        """Move the joint (a new simulator with the same command and parameters)."""
        command, params = self.sim.command, self.sim.params
        self.sim = self._make_sim(position, velocity)
        if self.sim.params != params:  # changed by set_parameters since the start
            self.sim.set_parameters(params)
        self.sim.set_command(*command)

    def set_parameters(self, params: ParameterSet) -> None:
        """Swap the joint's parameter set mid-run (a fault: more friction, a jam); the state
        and the command are kept."""
        self._params, self._laws = params, {}
        self.apply_command()

    def _law(self) -> ParameterSet:
        """The joint's set under the law of its operating mode: in current-based position
        control (the table's ``current_position_mode``) the servo's current-law sibling,
        clipped at Goal Current; in position control its voltage law. A servo with no
        sibling of that law keeps its set's."""
        mode = self.table.current_position_mode
        current = mode is not None and self.get(mode[0]) == mode[1]
        family = CURRENT if current else VOLTAGE
        limit = min(abs(self._si("goal_current")), self._si("current_limit")) if current else 0.0
        key = (family, limit)
        if key not in self._laws:
            base = self._params
            law = next((a for a in law_siblings(base.actuator) if a.family == family), None)
            if law is None:
                self._laws[key] = base
            elif current:
                self._laws[key] = base.on_actuator(law, current_limit=limit)
            else:
                self._laws[key] = base.on_actuator(law)
        return self._laws[key]

    @property
    def current(self) -> float:
        """Motor current: the voltage law's I = (U − k_t·q̇)/R at the present velocity, the
        current law's τ_m/k_t; 0 with the torque off (A)."""
        if not self.torque_enabled:
            return 0.0
        p = self.sim.params.vector()
        if self.sim.actuator.family == VOLTAGE:
            return (self.control - p[P.KT] * self.sim.state[1]) / p[P.R]
        return self.motor_torque / p[P.KT]

    @property
    def duty(self) -> float:
        """PWM duty: the voltage law's U/V_in; under the current law the duty whose mean
        voltage drives I against the back-EMF, (R·I + k_t·q̇)/V_in."""
        if not self.torque_enabled:
            return 0.0
        if self.sim.actuator.family == VOLTAGE:
            return self.control / self.supply_voltage
        p = self.sim.params.vector()
        volts = p[P.R] * self.current + p[P.KT] * self.sim.state[1]
        return volts / self.supply_voltage

    def refresh(self) -> None:
        """Write the present registers from the simulated state."""
        q, dq = self.sim.state
        t = self.table
        position = t.field("present_position")
        # A 12-bit turn wraps (MX protocol 1.0, STS); a 4-byte or bounded register (the
        # XL-320's 300°) holds the position clamped to its range.
        bounded = position.size == 4 or position.maximum is not None
        raw = position.from_si(q) if bounded else (
            round(q / position.scale) + position.zero) % 4096
        self.set("present_position", raw)
        self.set("present_velocity", t.field("present_velocity").from_si(dq))
        self.set(t.duty, t.field(t.duty).from_si(self.duty))
        if t.current is not None:
            self.set(t.current, t.field(t.current).from_si(self.current))
        self.set("present_input_voltage",
                 t.field("present_input_voltage").from_si(self.supply_voltage))
        self.set("present_temperature", t.field("present_temperature").from_si(self.temperature))
        threshold = (self._si("moving_threshold") if t.has("moving_threshold")
                     else _DEFAULT_MOVING_THRESHOLD)
        self.set("moving", int(abs(dq) > threshold))
        if t.has("realtime_tick"):
            self.set("realtime_tick", int((self._clock() - self._start) * 1000.0) % 32768)

    # -- instruction semantics -------------------------------------------------------

    def read(self, address: int, length: int) -> tuple[Fault | None, bytes]:
        if length == 0 or address + length > self.table.size:
            return Fault.ACCESS, b""
        self.refresh()
        return None, bytes(self.memory[address : address + length])

    def check_write(self, address: int, data: bytes) -> Fault | None:
        """Why the firmware would refuse this write (None: accepted)."""
        end = address + len(data)
        if not data or end > self.table.size:
            return Fault.ACCESS
        touched = {f for a in range(address, end) if (f := self.table.at(a)) is not None}
        # Feetech's Lock only keeps EEPROM writes out of flash: they apply at once.
        eeprom_locked = self.torque_enabled if self.protocol == 2 else (
            not self.feetech and self.table.has("lock") and self.get("lock") != 0)
        new = bytearray(self.memory)
        new[address:end] = data
        for f in touched:
            if f.access != "rw" or (f.area == "eeprom" and eeprom_locked):
                return Fault.ACCESS
            if self.protocol == 2 and (f.address < address or f.end > end):
                return Fault.LENGTH
            lo, hi = f.count_range
            counts = f.decode(int.from_bytes(new[f.address : f.end], "little"))
            if not lo <= counts <= hi:
                return Fault.RANGE
        return None

    def write(self, address: int, data: bytes) -> None:
        """Apply a checked write (reserved gaps keep 0)."""
        for offset, byte in enumerate(data):
            if self.table.at(address + offset) is not None:
                self.memory[address + offset] = byte
        self.apply_command()

    def reboot(self) -> None:
        """RAM back to factory values, hardware error and registered write cleared."""
        factory = self.table.initial_memory()
        for f in self.table.fields.values():
            if f.area == "ram" and f.access == "rw":
                self.memory[f.address : f.end] = factory[f.address : f.end]
        self.registered = None
        self._set_registered(0)
        self.set_hardware_error(0)
        self.apply_command()

    def factory_reset(self, keep_id: bool, keep_baud: bool) -> None:
        dxl_id, baud = self.id, self.get("baud_rate")
        factory = self.table.initial_memory()
        for f in self.table.fields.values():
            if f.access == "rw":
                self.memory[f.address : f.end] = factory[f.address : f.end]
        if keep_id:
            self.set("id", dxl_id)
        if keep_baud:
            self.set("baud_rate", baud)
        self.registered = None
        self._set_registered(0)
        self.apply_command()

    def _set_registered(self, value: int) -> None:
        for name in ("registered", "registered_instruction"):
            if self.table.has(name):
                self.set(name, value)

    def register(self, address: int, data: bytes) -> None:
        """REG_WRITE: keep the write for ACTION."""
        self.registered = (address, data)
        self._set_registered(1)

    def take_registered(self) -> tuple[int, bytes]:
        """ACTION: the registered write, now cleared."""
        registered, self.registered = self.registered, None
        self._set_registered(0)
        return registered

    # -- truth -----------------------------------------------------------------

    def truth(self) -> dict:
        """The emulator's ground truth in SI units, and the raw registers."""
        self.refresh()
        q, dq = self.sim.state
        command = self.sim.command
        return {
            "position": q, "velocity": dq, "goal": command.goal,
            "torque_enable": command.torque_enable, "gain": command.gain,
            "torque_ever_enabled": self.torque_ever_enabled,
            "control": self.control if command.torque_enable else 0.0,
            "motor_torque": self.motor_torque, "current": self.current,
            "actuator": self.sim.actuator.name,
            "input_voltage": self.supply_voltage, "temperature": self.temperature,
            "hardware_error": self.injected_error, "time": self.sim.time,
            "registers": {name: self.get(name) for name in self.table.fields},
        }


class EmulatedBus:
    """The servos of one bus and the instruction semantics of their firmware."""

    def __init__(self, protocol: int, servos: list[EmulatedServo]) -> None:
        self.protocol = protocol
        self.servos: dict[int, EmulatedServo] = {}
        for servo in servos:
            if servo.protocol != protocol:
                raise ValueError(f"servo {servo.id} speaks protocol {servo.protocol}")
            self.servos[servo.id] = servo
        vendors = {servo.table.vendor for servo in servos}
        if len(vendors) > 1:
            raise ValueError(f"servos of several vendors on one bus: {sorted(vendors)}")
        # Feetech's SCS protocol: protocol-1.0 framing with a sync read, no error
        # bits for bad instructions (a refused write is not applied, silently)
        # and no answer to a packet with a bad checksum.
        self.feetech = vendors == {"feetech"}
        self.errors_sent = 0

    # -- helpers -----------------------------------------------------------------

    def _status(self, servo: EmulatedServo, fault: Fault | None, data: bytes = b"") -> bytes:
        code = 0
        if fault is not None and not self.feetech:
            code = (_P1_ERRORS if self.protocol == 1 else _P2_ERRORS)[fault]
            self.errors_sent += 1
        return pk.status_packet(self.protocol, servo.id, servo.error_byte | code, data)

    def _targets(self, dxl_id: int) -> list[EmulatedServo]:
        if dxl_id == pk.BROADCAST_ID:
            return [self.servos[k] for k in sorted(self.servos)]
        servo = self.servos.get(dxl_id)
        return [servo] if servo is not None else []

    def _reads(self, frame: pk.Frame,
               sync: pk.Instruction) -> Iterator[tuple[EmulatedServo, Fault | None, bytes, int]]:
        """The servos a sync (instruction ``sync``) or bulk read addresses, each read as
        it comes: (servo, refusal, data, length asked). Absent and silent servos
        (status return level 0) are left out."""
        if frame.instruction == sync:
            address, length, ids = pk.parse_sync_read(frame.params, self.protocol)
            items = [(i, address, length) for i in ids]
        else:
            items = pk.parse_bulk_read(self.protocol, frame.params)
        for dxl_id, address, length in items:
            servo = self.servos.get(dxl_id)
            if servo is None or servo.status_return_level < 1:
                continue
            fault, data = servo.read(address, length)
            yield servo, fault, data, length

    def _rekey(self) -> None:
        self.servos = {s.id: s for s in self.servos.values()}

    # -- dispatch -----------------------------------------------------------------

    def handle(self, frame: pk.Frame) -> list[tuple[EmulatedServo, bytes]]:
        """Status packets (with their servo) answering one received frame."""
        if not frame.valid:
            servo = self.servos.get(frame.id)
            if servo is None or servo.status_return_level < 2 or self.feetech:
                return []
            return [(servo, self._status(servo, Fault.CHECKSUM))]
        if self.protocol == 2 and frame.instruction == pk.Instruction.STATUS:
            return []  # another servo's status seen on the bus
        inst = frame.instruction
        try:
            if inst == pk.Instruction.PING:
                return self._ping(frame)
            if inst in (pk.Instruction.SYNC_READ, pk.Instruction.BULK_READ):
                return self._group_read(frame)
            if inst in (pk.Instruction.FAST_SYNC_READ, pk.Instruction.FAST_BULK_READ):
                return self._fast_read(frame)
            if inst in (pk.Instruction.SYNC_WRITE, pk.Instruction.BULK_WRITE):
                self._group_write(frame)
                return []
        except pk.PacketError:
            return []  # broadcast instructions: nobody answers a malformed one
        replies = []
        for servo in self._targets(frame.id):
            fault, data = self._unicast(servo, frame)
            if frame.id == pk.BROADCAST_ID:
                continue
            level = servo.status_return_level
            if level >= 2 or (level == 1 and inst == pk.Instruction.READ):
                replies.append((servo, self._status(servo, fault, data)))
        self._rekey()
        return replies

    def _ping(self, frame: pk.Frame) -> list[tuple[EmulatedServo, bytes]]:
        replies = []
        for servo in self._targets(frame.id):
            data = b""
            if self.protocol == 2:
                data = servo.table.model_number.to_bytes(2, "little") + bytes(
                    (servo.get("firmware_version"),))
            replies.append((servo, self._status(servo, None, data)))
        return replies

    def _unicast(self, servo: EmulatedServo, frame: pk.Frame) -> tuple[Fault | None, bytes]:
        """Execute an instruction on one servo: (refusal, status data)."""
        inst, params = frame.instruction, frame.params
        try:
            if inst == pk.Instruction.READ:
                return servo.read(*pk.parse_read(self.protocol, params))
            if inst in (pk.Instruction.WRITE, pk.Instruction.REG_WRITE):
                address, data = pk.parse_write(self.protocol, params)
                fault = self._check_write(servo, address, data)
                if fault is None:
                    if inst == pk.Instruction.WRITE:
                        servo.write(address, data)
                    else:
                        servo.register(address, data)
                return fault, b""
            if inst == pk.Instruction.ACTION:
                if servo.registered is None:
                    return Fault.INSTRUCTION, b""
                address, data = servo.take_registered()
                fault = self._check_write(servo, address, data)
                if fault is None:
                    servo.write(address, data)
                return fault, b""
            if inst == pk.Instruction.REBOOT:
                servo.reboot()
                return None, b""
            if inst == pk.Instruction.FACTORY_RESET:
                return self._factory_reset(servo, params), b""
        except pk.PacketError:
            return (Fault.LENGTH if self.protocol == 2 else Fault.INSTRUCTION), b""
        return Fault.INSTRUCTION, b""

    def _check_write(self, servo: EmulatedServo, address: int, data: bytes) -> Fault | None:
        fault = servo.check_write(address, data)
        if fault is None:
            id_field = servo.table.field("id")
            if address <= id_field.address < address + len(data):
                new_id = data[id_field.address - address]
                if new_id != servo.id and new_id in self.servos:
                    return Fault.FAIL  # would put two servos on one id
        return fault

    def _factory_reset(self, servo: EmulatedServo, params: bytes) -> Fault | None:
        option = params[0] if params else 0x01
        if self.protocol == 2 and option not in (0x01, 0x02, 0xFF):
            return Fault.RANGE
        keep_id = self.protocol == 1 or option != 0xFF
        if not keep_id and servo.id != 1 and 1 in self.servos:
            return Fault.FAIL
        servo.factory_reset(keep_id=keep_id, keep_baud=option == 0x02)
        return None

    def _group_read(self, frame: pk.Frame) -> list[tuple[EmulatedServo, bytes]]:
        if frame.id != pk.BROADCAST_ID:
            servo = self.servos.get(frame.id)
            return [] if servo is None else [(servo, self._status(servo, Fault.INSTRUCTION))]
        if self.protocol == 1 and self.feetech != (frame.instruction == pk.Instruction.SYNC_READ):
            return []  # protocol 1.0 has BULK_READ only, Feetech's SCS SYNC_READ only
        return [(servo, self._status(servo, fault, data))
                for servo, fault, data, _ in self._reads(frame, pk.Instruction.SYNC_READ)]

    def _fast_read(self, frame: pk.Frame) -> list[tuple[EmulatedServo, bytes]]:
        if self.protocol == 1 or frame.id != pk.BROADCAST_ID:
            return []
        parts = []
        for servo, fault, data, length in self._reads(frame, pk.Instruction.FAST_SYNC_READ):
            code = 0 if fault is None else _P2_ERRORS[fault]
            self.errors_sent += fault is not None
            parts.append((servo, servo.error_byte | code, data or bytes(length)))
        if not parts:
            return []
        return [(parts[0][0], pk.fast_read_status(
            [(servo.id, error, data) for servo, error, data in parts]))]

    def _group_write(self, frame: pk.Frame) -> None:
        if frame.id != pk.BROADCAST_ID:
            return
        if frame.instruction == pk.Instruction.SYNC_WRITE:
            address, _, chunks = pk.parse_sync_write(self.protocol, frame.params)
            items = [(i, address, d) for i, d in chunks.items()]
        elif self.protocol == 2:
            items = pk.parse_bulk_write(frame.params)
        else:
            return
        for dxl_id, address, data in items:
            servo = self.servos.get(dxl_id)
            if servo is not None and self._check_write(servo, address, data) is None:
                servo.write(address, data)
        self._rekey()

    # -- physics -------------------------------------------------------------------

    def tick(self) -> None:
        for servo in self.servos.values():
            servo.tick()
