"""An emulated eRob drive: its ESC, object dictionary, CiA 402 firmware and pendulum joint.

:class:`ErobDrive` is the application behind one :class:`~bam_drivers.emulators.esc.Esc`:

* SII EEPROM with the ZeroErr identity, mailbox SM0/SM1, process data
  SM2/SM3, FMMU and PDO categories (:mod:`bam_drivers.ethercat.registers`);
* a CiA 402 object dictionary (identity 0x1018, PDO mapping 0x1600/0x1A00 and
  assignment 0x1C12/0x1C13 writable in PRE-OP only, sync manager types
  0x1C00, the drive objects 0x6040-0x6502 of :mod:`bam_drivers.ethercat.cia402`
  and the manufacturer objects of :mod:`bam_drivers.ethercat.drive_models`),
  served over CoE SDO (:mod:`.coe_server`);
* AL transition checks: mailbox SMs as the SII says (0x0016), SM2/SM3
  lengths equal to the assigned PDOs (0x001D/0x001E);
* every tick (the emulator's bus cycle): outputs applied in OP, the CiA 402
  state machine on the controlword, the motor current of the mode (CST 10:
  target torque 0x6071 in per mille of the rated torque through the nominal
  motor k_t; CSP 8: the drive's own current law on 0x607A with gain 0x2002),
  limited by 0x6072/0x6073, the pendulum stepped by it
  (:func:`bam_sim.bench.pendulum.step` with the applied current, as the
  paper's Algorithm 1 replays a recorded control), then the inputs;
* a log of the last ``FRAME_LOG`` process-data exchanges that wrote its outputs
  (:attr:`ErobDrive.frames`): the inputs the frame took back (raw position,
  velocity and current, and the current the motor carried), the target torque
  it brought and the current that torque asks in CST: what a test compares the
  driver's cycles with, frame by frame, whatever the timing;
* the mailbox: a write repeating the counter of the previous one is a
  repetition (its answer was lost) and is ignored, as ETG.1000.4 asks;
* faults: an injected error code (over-current, over-temperature, following
  error, ...) latches the fault state, sets 0x603F and 0x1001 and sends an
  EMCY; a fault reset clears it only once the cause is gone. Leaving OP
  while operation is enabled (the SM watchdog tripped, or the master left)
  acts per 0x6007: 1 fault 0x8130, 2 disable voltage, 3 quick stop.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from bam_drivers.emulators.coe_server import SdoServer
from bam_drivers.emulators.esc import Esc
from bam_drivers.emulators.object_dictionary import Entry, ObjectDictionary, SdoAbort
from bam_drivers.ethercat import cia402, coe
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.cia402 import State
from bam_drivers.ethercat.coe import DataType, MailboxType
from bam_drivers.ethercat.registers import AlState
from bam_sim.bench.geometry import Bench
from bam_sim.bench.pendulum import step
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.model_registry import EP_FIRST
from bam_sim.models.parameter_set import ParameterSet

MAILBOX_OUT = (0x1000, 128)  # SM0: master -> slave
MAILBOX_IN = (0x1080, 128)  # SM1: slave -> master
OUTPUTS_START = 0x1100  # SM2
INPUTS_START = 0x1400  # SM3
MAX_PDO_BYTES = 64
RX_MAPPINGS = (0x1600, 0x1601)
TX_MAPPINGS = (0x1A00, 0x1A01)
MAPPING_ENTRIES = 12
FRAME_LOG = 4096  # process-data exchanges kept in ErobDrive.frames (8 s at 500 Hz)
OVER_TEMPERATURE_READING = 95.0  # °C reported while an over-temperature fault is injected
SUPPORTED_MODES = (cia402.CSP, cia402.CST)


class DrivenPendulum:
    """The bench joint driven by the current a drive applies (paper Algorithm 1)."""

    def __init__(self, params: ParameterSet, bench: Bench, dt: float, position: float = 0.0,
                 velocity: float = 0.0) -> None:
        if params.model_id >= EP_FIRST:  # a friction state this joint does not carry yet
            raise BamError(f"the EtherCAT emulator simulates M1..M6 friction, not "
                           f"{params.model.name}; give an m1..m6 parameter file")
        actuator = params.actuator
        self._family = int(actuator.family)
        self._consts = actuator.consts()
        self._p = params.vector()
        self._model = int(params.model_id)
        self._inertia = float(bench.inertia(self._p[P.ARMATURE]))
        self._gravity = float(bench.gravity_torque)
        self.dt = float(dt)
        self.kt = float(self._p[P.KT])
        self.damping = float(actuator.damping)
        self.q, self.dq = float(position), float(velocity)
        self.motor_torque = 0.0
        self._advance(0.0, False)  # compile or load the kernel now, not at the first tick

    def _advance(self, current: float, enabled: bool) -> tuple[float, float, float]:
        q, dq, tau, _ = step(self._model, self._family, self._p, self._consts, 0.0,
                             self._inertia, self._gravity, self.q, self.dq, 0.0, enabled, True,
                             current, self.dt)
        return q, dq, tau

    def step(self, current: float, enabled: bool) -> None:
        """One Δt with motor current ``current`` (A) through the back-EMF limit."""
        self.q, self.dq, self.motor_torque = self._advance(current, enabled)

    @property
    def current(self) -> float:
        """The current the motor actually carries (A): τ_m / k_t."""
        return self.motor_torque / self.kt


def _mapping_entries(defaults: tuple[dm.PdoObject, ...]) -> list[Entry]:
    values = [e.mapping for e in defaults] + [0] * (MAPPING_ENTRIES - len(defaults))
    return [Entry(f"entry {i + 1}", DataType.UNSIGNED32, values[i], "rw")
            for i in range(MAPPING_ENTRIES)]


class ErobDrive:
    """One emulated eRob (see the module docstring); the emulator holds a lock around it."""

    def __init__(self, model: dm.DriveModel, params: ParameterSet, bench: Bench, dt: float,
                 clock: Callable[[], int], *, position: float = 0.0, temperature: float = 35.0,
                 serial: int = 1) -> None:
        self.model = model
        self.temperature = float(temperature)
        self.pendulum = DrivenPendulum(params, bench, dt, position)
        self.state = State.NOT_READY
        self.fault_cause = 0  # injected error code still present (0: none)
        self.emergencies = 0
        self._previous_cw = 0
        self._outputs = b""
        self._rx_layout: list[tuple[int, int, DataType]] = []
        self._tx_layout: list[tuple[int, int, DataType]] = []
        self._mailbox_counter = 0
        self._request_counter = 0  # counter of the master's last mailbox write
        self.applied_current = 0.0
        self.frames: deque[dict] = deque(maxlen=FRAME_LOG)
        self.od = self._dictionary(serial)
        self.sdo = SdoServer(self.od, MAILBOX_IN[1])
        self.esc = Esc(reg.sii_image(self._sii(serial)), clock, self)

    # -- description -------------------------------------------------------------------

    def _sii(self, serial: int) -> reg.SiiContent:
        m = self.model
        rx_bytes = sum(e.bits for e in dm.RX_ENTRIES) // 8
        tx_bytes = sum(e.bits for e in dm.TX_ENTRIES) // 8
        sms = (reg.SyncManagerConfig(*MAILBOX_OUT, 0x26, reg.SM_TYPE_MAILBOX_OUT),
               reg.SyncManagerConfig(*MAILBOX_IN, 0x22, reg.SM_TYPE_MAILBOX_IN),
               reg.SyncManagerConfig(OUTPUTS_START, rx_bytes, 0x64, reg.SM_TYPE_OUTPUTS),
               reg.SyncManagerConfig(INPUTS_START, tx_bytes, 0x20, reg.SM_TYPE_INPUTS))

        def pdo(index, sm, entries):
            return reg.PdoDescription(index, sm, tuple(
                reg.PdoEntry(e.index, e.subindex, e.bits, e.data_type) for e in entries))

        return reg.SiiContent(
            vendor=m.vendor, product=m.product, revision=m.revision, serial=serial,
            name=dm.DEVICE_NAME, group="eRob", order=m.title, rx_mailbox=MAILBOX_OUT,
            tx_mailbox=MAILBOX_IN,
            coe_details=reg.COE_SDO | reg.COE_PDO_ASSIGN | reg.COE_PDO_CONFIG
            | reg.COE_COMPLETE_ACCESS,
            sync_managers=sms, fmmus=(1, 2, 3, 0xFF),
            txpdos=(pdo(dm.TXPDO, 3, dm.TX_ENTRIES),), rxpdos=(pdo(dm.RXPDO, 2, dm.RX_ENTRIES),))

    def _dictionary(self, serial: int) -> ObjectDictionary:
        m, od = self.model, ObjectDictionary()
        u8, u16, u32 = DataType.UNSIGNED8, DataType.UNSIGNED16, DataType.UNSIGNED32
        i8, i16, i32 = DataType.INTEGER8, DataType.INTEGER16, DataType.INTEGER32
        od.add_var(0x1000, "device type", u32, 0x00020192)
        od.add_var(cia402.ERROR_REGISTER, "error register", u8, 0)
        od.add_var(0x1008, "device name", DataType.VISIBLE_STRING, dm.DEVICE_NAME)
        od.add_var(0x1009, "hardware version", DataType.VISIBLE_STRING, m.title)
        od.add_var(0x100A, "software version", DataType.VISIBLE_STRING, "bam emulator 1")
        od.add_compound(cia402.IDENTITY, "identity", [
            Entry("vendor id", u32, m.vendor), Entry("product code", u32, m.product),
            Entry("revision", u32, m.revision), Entry("serial number", u32, serial)])
        for index, defaults in ((RX_MAPPINGS[0], dm.RX_ENTRIES), (RX_MAPPINGS[1], ()),
                                (TX_MAPPINGS[0], dm.TX_ENTRIES), (TX_MAPPINGS[1], ())):
            obj = od.add_compound(index, f"PDO mapping 0x{index:04X}",
                                  _mapping_entries(defaults), "rw")
            obj.entries[0].value = len(defaults)
            obj.entries[0].high = MAPPING_ENTRIES
            obj.validate = self._check_mapping
        od.add_compound(0x1C00, "sync manager types", [Entry(f"SM{i}", u8, t) for i, t in
                                                       enumerate((1, 2, 3, 4))])
        for index, first in ((0x1C12, RX_MAPPINGS[0]), (0x1C13, TX_MAPPINGS[0])):
            obj = od.add_compound(index, f"SM{index - 0x1C10} PDO assignment",
                                  [Entry("PDO 1", u16, first, "rw"), Entry("PDO 2", u16, 0, "rw")],
                                  "rw")
            obj.entries[0].value = 1
            obj.validate = self._check_assignment
        for index in (0x1C32, 0x1C33):
            od.add_compound(index, "sync manager parameter", [
                Entry("synchronization type", u16, 0, "rw", low=0, high=1),
                Entry("cycle time", u32, 1_000_000), Entry("shift time", u32, 0),
                Entry("supported synchronization types", u16, 0x0001),
                Entry("minimum cycle time", u32, 250_000)])
        od.add_var(dm.DESCRIPTION, "drive description", DataType.VISIBLE_STRING,
                   self._description())
        od.add_var(dm.USER_LABEL, "user label", DataType.VISIBLE_STRING, "", "rw", max_size=240)
        od.add_var(dm.POSITION_GAIN, "CSP position gain (0.001 A/rad)", u32, 25_000, "rw")
        od.add_var(dm.TEMPERATURE, "drive temperature (0.1 C)", i16,
                   round(self.temperature * 10), pdo="tx")
        od.add_var(cia402.ERROR_CODE, "error code", u16, 0, pdo="tx")
        od.add_var(cia402.CONTROLWORD, "controlword", u16, 0, "rw", pdo="rx")
        od.add_var(cia402.STATUSWORD, "statusword", u16, 0, pdo="tx")
        od.add_var(cia402.ABORT_CONNECTION_OPTION, "abort connection option code", i16, 1, "rw",
                   low=0, high=3)
        od.add_var(cia402.QUICK_STOP_OPTION, "quick stop option code", i16, 2, "rw", low=0,
                   high=4)
        od.add_var(cia402.MODES_OF_OPERATION, "modes of operation", i8, 0, "rw", pdo="rx")
        od.objects[cia402.MODES_OF_OPERATION].validate = self._check_mode
        od.add_var(cia402.MODES_DISPLAY, "modes of operation display", i8, 0, pdo="tx")
        od.add_var(cia402.POSITION_ACTUAL, "position actual value", i32, 0, pdo="tx")
        od.add_var(cia402.VELOCITY_ACTUAL, "velocity actual value", i32, 0, pdo="tx")
        od.add_var(cia402.TARGET_TORQUE, "target torque", i16, 0, "rw", pdo="rx")
        od.add_var(cia402.MAX_TORQUE, "max torque", u16, 2 * m.max_current_permille, "rw",
                   pdo="rx")
        od.add_var(cia402.MAX_CURRENT, "max current", u16, m.max_current_permille, "rw",
                   high=m.max_current_permille)
        od.add_var(cia402.RATED_CURRENT, "motor rated current", u32, m.rated_current_ma)
        od.add_var(cia402.RATED_TORQUE, "motor rated torque", u32, m.rated_torque_mnm)
        od.add_var(cia402.TORQUE_ACTUAL, "torque actual value", i16, 0, pdo="tx")
        od.add_var(cia402.CURRENT_ACTUAL, "current actual value", i16, 0, pdo="tx")
        od.add_var(cia402.DC_LINK_VOLTAGE, "DC link circuit voltage", u32,
                   round(m.supply_voltage * 1000), pdo="tx")
        od.add_var(cia402.TARGET_POSITION, "target position", i32, 0, "rw", pdo="rx")
        od.add_compound(cia402.ENCODER_RESOLUTION, "position encoder resolution", [
            Entry("encoder increments", u32, m.counts_per_turn),
            Entry("motor revolutions", u32, 1)])
        od.add_compound(cia402.GEAR_RATIO, "gear ratio", [
            Entry("motor revolutions", u32, m.gear_ratio), Entry("shaft revolutions", u32, 1)])
        od.add_var(cia402.SUPPORTED_MODES, "supported drive modes", u32, 0x0280)  # CSP, CST
        return od

    def _description(self) -> str:
        m = self.model
        return (f"{m.title} joint module, ZeroErr EtherCAT drive (emulated by bam_drivers). "
                f"Gear {m.gear_ratio}:1, {m.counts_per_turn} encoder increments per output "
                f"turn, rated current {m.rated_current:g} A, current limit "
                f"{m.max_current:g} A, DC link {m.supply_voltage:g} V. Modes: cyclic "
                "synchronous position (8) and torque (10).")

    # -- object validators ---------------------------------------------------------------

    def _require_pre_op(self) -> None:
        if self.esc.al_state != AlState.PRE_OP:
            raise SdoAbort(coe.ABORT_DEVICE_STATE)

    def _check_mapping(self, index: int, subindex: int, value) -> None:
        self._require_pre_op()
        entries = self.od.objects[index].entries
        if subindex:
            if entries[0].value != 0:
                raise SdoAbort(coe.ABORT_SUBINDEX0_NOT_ZERO)
            return
        direction = "rx" if index in RX_MAPPINGS else "tx"
        bits = 0
        for sub in range(1, int(value) + 1):
            bits += self._mapped_bits(entries[sub].value, direction)
        if bits > MAX_PDO_BYTES * 8:
            raise SdoAbort(coe.ABORT_PDO_LENGTH)

    def _mapped_bits(self, mapping: int, direction: str) -> int:
        index, subindex, bits = mapping >> 16, mapping >> 8 & 0xFF, mapping & 0xFF
        if index == 0:
            return bits  # padding
        try:
            entry = self.od.entry(index, subindex)
        except SdoAbort:
            raise SdoAbort(coe.ABORT_NOT_MAPPABLE) from None
        if entry.pdo != direction or entry.bits != bits:
            raise SdoAbort(coe.ABORT_NOT_MAPPABLE)
        return bits

    def _check_assignment(self, index: int, subindex: int, value) -> None:
        self._require_pre_op()
        entries = self.od.objects[index].entries
        if subindex:
            if entries[0].value != 0:
                raise SdoAbort(coe.ABORT_SUBINDEX0_NOT_ZERO)
            allowed = RX_MAPPINGS if index == 0x1C12 else TX_MAPPINGS
            if value not in allowed:
                raise SdoAbort(coe.ABORT_VALUE_RANGE)

    @staticmethod
    def _check_mode(index: int, subindex: int, value) -> None:
        if value not in SUPPORTED_MODES and value != 0:
            raise SdoAbort(coe.ABORT_VALUE_RANGE)

    # -- the ESC's application interface -----------------------------------------------------

    def mailbox_received(self, raw: bytes) -> None:
        try:
            message = coe.decode_mailbox(raw)
        except ValueError:
            self._post(MailboxType.ERROR, coe.mailbox_error(coe.MBX_ERROR_INVALID_HEADER))
            return
        if message.counter and message.counter == self._request_counter:
            return  # a repeated write (its answer was lost): ETG.1000.4 repeat detection
        self._request_counter = message.counter
        if message.type != MailboxType.COE:
            self._post(MailboxType.ERROR, coe.mailbox_error(coe.MBX_ERROR_UNSUPPORTED_PROTOCOL))
            return
        if coe.coe_service(message.payload) != coe.CoeService.SDO_REQUEST:
            self._post(MailboxType.ERROR, coe.mailbox_error(0x0004))  # service not supported
            return
        response = self.sdo.handle(message.payload)
        if response:
            self._post(MailboxType.COE, response)

    def _post(self, kind: int, payload: bytes) -> None:
        self._mailbox_counter = self._mailbox_counter % 7 + 1
        message = coe.Mailbox(kind, self._mailbox_counter, payload)
        self.esc.post_mailbox(message.encode(0))

    def check_transition(self, current: AlState, requested: AlState) -> int:
        if requested == AlState.PRE_OP:
            return self._check_mailboxes()
        if requested == AlState.SAFE_OP:
            return self._check_process_data()
        return 0

    def _check_mailboxes(self) -> int:
        for sm, (start, length), writes in ((0, MAILBOX_OUT, True), (1, MAILBOX_IN, False)):
            s = self.esc.sms[sm]
            if (s.start, s.length) != (start, length) or not s.enabled or not s.mailbox \
                    or s.ecat_writes != writes:
                return reg.INVALID_MAILBOX
        return 0

    def _check_process_data(self) -> int:
        try:
            self._rx_layout = self._layout(0x1C12, "rx")
        except SdoAbort:
            return reg.INVALID_OUTPUT_MAPPING
        try:
            self._tx_layout = self._layout(0x1C13, "tx")
        except SdoAbort:
            return reg.INVALID_INPUT_MAPPING
        for sm, layout, code, writes in ((2, self._rx_layout, reg.INVALID_OUTPUTS, True),
                                         (3, self._tx_layout, reg.INVALID_INPUTS, False)):
            size = sum(coe.type_size(t) if i else t // 8 for i, _, t in layout)
            s = self.esc.sms[sm]
            if size and (s.length != size or not s.enabled or s.mailbox
                         or s.ecat_writes != writes):
                return code
        return 0

    def _layout(self, assignment: int, direction: str) -> list[tuple[int, int, int]]:
        """(index, subindex, data type) of each mapped object; padding as (0, 0, bits)."""
        od, layout = self.od, []
        for k in range(1, int(od.get(assignment, 0)) + 1):
            pdo = od.get(assignment, k)
            for sub in range(1, int(od.get(pdo, 0)) + 1):
                mapping = od.get(pdo, sub)
                bits = self._mapped_bits(mapping, direction)
                index = mapping >> 16
                if index == 0:
                    layout.append((0, 0, bits))
                else:
                    sub_index = mapping >> 8 & 0xFF
                    layout.append((index, sub_index, od.entry(index, sub_index).data_type))
        return layout

    def al_changed(self, old: AlState, new: AlState) -> None:
        if old == AlState.OPERATIONAL and new != AlState.OPERATIONAL:
            self._connection_lost()
        if new in (AlState.INIT, AlState.PRE_OP):
            self.sdo = SdoServer(self.od, MAILBOX_IN[1])  # a fresh mailbox: no transfer left
        if new == AlState.INIT:
            self._request_counter = 0

    def outputs_written(self, data: bytes) -> None:
        """The outputs of a process-data exchange, applied at the next tick; logged with the
        inputs the same frame took back (those of the last tick)."""
        self._outputs = data
        od, enabled = self.od, self.state is State.OPERATION_ENABLED
        torque = dict(self._received(data)).get((cia402.TARGET_TORQUE, 0))
        self.frames.append({
            "time": time.time(), "position": int(od.get(cia402.POSITION_ACTUAL)),
            "velocity": int(od.get(cia402.VELOCITY_ACTUAL)),
            "current": int(od.get(cia402.CURRENT_ACTUAL)),
            "motor_current": self.pendulum.current if enabled else 0.0,
            "target_torque": torque,
            "asked_current": None if torque is None else self._cst_current(torque)})

    def watchdog_expired(self) -> None:
        """The ESC went SAFE-OP + error 0x001B; al_changed applied the reaction."""

    def _connection_lost(self) -> None:
        """The drive no longer gets outputs: the reaction of 0x6007 when it makes torque."""
        if self.state is not State.OPERATION_ENABLED:
            return
        option = int(self.od.get(cia402.ABORT_CONNECTION_OPTION))
        if option == 1:
            self._enter_fault(cia402.COMMUNICATION_LOST)
        elif option == 2:
            self.state = State.SWITCH_ON_DISABLED
        elif option == 3:
            self.state = State.QUICK_STOP_ACTIVE

    # -- faults ----------------------------------------------------------------------------

    def inject_fault(self, code: int) -> None:
        """An error (e.g. 0x2310 over-current) appears and stays until :meth:`clear_fault`."""
        if not 0 < code <= 0xFFFF:
            raise ValueError(f"error code 0x{code:X} must be in 0x0001..0xFFFF")
        self.fault_cause = code
        self._enter_fault(code)

    def clear_fault(self) -> None:
        """The cause is gone; the drive stays in fault until the master resets it."""
        self.fault_cause = 0

    def _enter_fault(self, code: int) -> None:
        if self.state in (State.FAULT, State.FAULT_REACTION_ACTIVE):
            return
        self.state = State.FAULT_REACTION_ACTIVE
        self.od.set(cia402.ERROR_CODE, 0, code)
        register = cia402.error_register(code)
        self.od.set(cia402.ERROR_REGISTER, 0, register)
        self._emergency(code, register)

    def _emergency(self, code: int, register: int) -> None:
        self.emergencies += 1
        self._post(MailboxType.COE, coe.emergency(code, register))

    # -- the drive cycle ---------------------------------------------------------------------

    def tick(self) -> None:
        """One cycle of the drive: outputs, state machine, current, physics, inputs."""
        if self.esc.al_state == AlState.OPERATIONAL and self._outputs:
            self._apply_outputs()
        self._state_machine()
        current = self._current() if self.state is State.OPERATION_ENABLED else 0.0
        self.applied_current = current
        self.pendulum.step(current, self.state is State.OPERATION_ENABLED)
        self._update_inputs()

    def _apply_outputs(self) -> None:
        for (index, subindex), value in self._received(self._outputs):
            if index != cia402.MODES_OF_OPERATION or value in SUPPORTED_MODES:
                self.od.set(index, subindex, value)

    def _received(self, data: bytes) -> list[tuple[tuple[int, int], object]]:
        """The objects of the RxPDO ``data``, ((index, subindex), value), gaps left out."""
        offset, values = 0, []
        for index, subindex, data_type in self._rx_layout:
            size = coe.type_size(data_type) if index else data_type // 8
            if index:
                raw = data[offset:offset + size]
                if len(raw) == size:
                    values.append(((index, subindex), coe.unpack(data_type, raw)))
            offset += size
        return values

    def _state_machine(self) -> None:
        cw = int(self.od.get(cia402.CONTROLWORD))
        state = self.state
        if state is State.NOT_READY:
            self.state = State.SWITCH_ON_DISABLED  # self-test done
        elif state is State.FAULT_REACTION_ACTIVE:
            self.state = State.FAULT  # power stage off: the reaction is over
        elif state is State.QUICK_STOP_ACTIVE and \
                1 <= int(self.od.get(cia402.QUICK_STOP_OPTION)) <= 4:
            self.state = State.SWITCH_ON_DISABLED  # stopped (torque ramped to 0 at once)
        else:
            self.state = cia402.transition(state, cw, self._previous_cw)
            if state is State.FAULT and self.state is not State.FAULT:
                if self.fault_cause:
                    self.state = State.FAULT  # the cause is still there: the reset fails
                else:
                    self._fault_reset()
        if self.fault_cause and self.state not in (State.FAULT, State.FAULT_REACTION_ACTIVE):
            self._enter_fault(self.fault_cause)
        self._previous_cw = cw
        mode = int(self.od.get(cia402.MODES_OF_OPERATION))
        if mode in SUPPORTED_MODES:
            self.od.set(cia402.MODES_DISPLAY, 0, mode)

    def _fault_reset(self) -> None:
        self.od.set(cia402.ERROR_CODE, 0, 0)
        self.od.set(cia402.ERROR_REGISTER, 0, 0)
        self._emergency(0x0000, 0)  # CiA 301: error reset

    def _current(self) -> float:
        """The motor current (A) of the active mode, within the drive's limits."""
        m, od = self.model, self.od
        mode = int(od.get(cia402.MODES_DISPLAY))
        if mode == cia402.CST:
            return self._cst_current(int(od.get(cia402.TARGET_TORQUE)))
        if mode == cia402.CSP:
            kp = int(od.get(dm.POSITION_GAIN)) / 1000.0
            target = m.position(int(od.get(cia402.TARGET_POSITION)))
            q, dq = self.pendulum.q, self.pendulum.dq
            current = kp * (target - q) - self.pendulum.damping * math.sqrt(kp) * dq
            return self._limited(current)
        return 0.0

    def _cst_current(self, torque_permille: int) -> float:
        """The motor current (A) a CST target torque asks, within the drive's limits."""
        od = self.od
        max_torque = int(od.get(cia402.MAX_TORQUE))
        torque_permille = max(-max_torque, min(max_torque, torque_permille))
        rated_torque = int(od.get(cia402.RATED_TORQUE)) / 1000.0
        return self._limited(torque_permille / 1000.0 * rated_torque / self.model.motor_kt)

    def _limited(self, current: float) -> float:
        limit = int(self.od.get(cia402.MAX_CURRENT)) * self.model.rated_current / 1000.0
        return max(-limit, min(limit, current))

    def _update_inputs(self) -> None:
        m, od, p = self.model, self.od, self.pendulum
        od.set(cia402.STATUSWORD, 0, cia402.statusword(
            self.state, voltage=self.state in (State.SWITCHED_ON, State.OPERATION_ENABLED,
                                               State.QUICK_STOP_ACTIVE)))
        od.set(cia402.POSITION_ACTUAL, 0, _clamp32(m.counts(p.q)))
        od.set(cia402.VELOCITY_ACTUAL, 0, _clamp32(m.counts(p.dq)))
        current = p.current if self.state is State.OPERATION_ENABLED else 0.0
        current_permille = round(1000.0 * current / m.rated_current)
        od.set(cia402.CURRENT_ACTUAL, 0, max(-32768, min(32767, current_permille)))
        od.set(cia402.TORQUE_ACTUAL, 0, max(-32768, min(32767, dm.torque_permille(
            current, m.motor_kt, int(od.get(cia402.RATED_TORQUE))))))
        od.set(dm.TEMPERATURE, 0, round(self.reported_temperature * 10))
        self.esc.set_inputs(3, self._pack_inputs())

    @property
    def reported_temperature(self) -> float:
        if self.fault_cause == cia402.OVER_TEMPERATURE:
            return max(self.temperature, OVER_TEMPERATURE_READING)
        return self.temperature

    def _pack_inputs(self) -> bytes:
        out = bytearray()
        for index, subindex, data_type in self._tx_layout:
            if index:
                out += coe.pack(data_type, self.od.get(index, subindex))
            else:
                out += bytes(data_type // 8)
        return bytes(out)

    # -- ground truth ------------------------------------------------------------------------

    def truth(self) -> dict:
        od, p, esc = self.od, self.pendulum, self.esc
        return {
            "position": p.q, "velocity": p.dq,
            "current": p.current if self.state is State.OPERATION_ENABLED else 0.0,
            "control": self.applied_current, "motor_torque": p.motor_torque,
            "torque_enable": self.state is State.OPERATION_ENABLED,
            "cia402_state": self.state.value, "statusword": int(od.get(cia402.STATUSWORD)),
            "controlword": int(od.get(cia402.CONTROLWORD)),
            "mode": int(od.get(cia402.MODES_DISPLAY)),
            "target_torque": int(od.get(cia402.TARGET_TORQUE)),
            "target_position": int(od.get(cia402.TARGET_POSITION)),
            "error_code": int(od.get(cia402.ERROR_CODE)), "fault_cause": self.fault_cause,
            "al_state": reg.al_state_name(esc.al_status), "al_status": esc.al_status,
            "al_code": esc.al_code, "station_address": esc.station_address,
            "temperature": self.reported_temperature,
            "watchdog_trips": esc.stats["watchdog_trips"],
            "watchdog_ms": esc.watchdog_time_ns() / 1e6,
            "abort_connection_option": int(od.get(cia402.ABORT_CONNECTION_OPTION)),
            "emergencies": self.emergencies, "sdo_aborts": self.sdo.aborts,
            "mailbox_in": esc.stats["mailbox_in"], "mailbox_out": esc.stats["mailbox_out"],
        }

    def set_state(self, position: float, velocity: float = 0.0) -> None:
        self.pendulum.q, self.pendulum.dq = float(position), float(velocity)


def _clamp32(value: int) -> int:
    return max(-(1 << 31), min((1 << 31) - 1, value))
