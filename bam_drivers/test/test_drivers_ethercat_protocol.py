"""EtherCAT pieces without a network: frames, ESC addressing and WKC, SII, AL states, CoE SDO,
CiA 402 and the drive models.

The slaves are emulated eRob drives on a line in this process
(``ethercat_line.Line``); datagrams go through it one at a time, with a
clock the test advances.
"""

from __future__ import annotations

import math
import struct

import pytest
from ethercat_line import STATION, Line, abort_code, sdo_download, sdo_upload

from bam_drivers.emulators.erob_drive import MAILBOX_OUT
from bam_drivers.ethercat import cia402, coe
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat import frames as fr
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.cia402 import State
from bam_sim.models.files.parameter_file import published_named

RX_BYTES = struct.calcsize(dm.struct_format(dm.RX_ENTRIES))
TX_BYTES = struct.calcsize(dm.struct_format(dm.TX_ENTRIES))


@pytest.fixture(scope="module")
def two():
    """Two drives, numbered and in PRE-OP (shared: tests only read or restore)."""
    line = Line(("erob80_100", "erob80_50"))
    line.addresses()
    for station in (STATION, STATION + 1):
        assert line.to_pre_op(station) == reg.AlState.PRE_OP
    return line


# -- frames ---------------------------------------------------------------------------------

def test_frame_round_trip_keeps_every_datagram():
    datagrams = [fr.Datagram(fr.Command.FPRD, 3, 0x1001 | 0x0130 << 16, bytearray(2), 5),
                 fr.Datagram(fr.Command.LRW, 4, 0x10000, bytearray(b"\x01\x02\x03"), 0)]
    payload = fr.build(datagrams, pad_to=46)
    assert len(payload) == 46
    parsed = fr.parse(payload)
    assert [(d.command, d.index, d.address, bytes(d.data), d.wkc) for d in parsed] == \
        [(fr.Command.FPRD, 3, 0x01301001, b"\x00\x00", 5),
         (fr.Command.LRW, 4, 0x10000, b"\x01\x02\x03", 0)]


@pytest.mark.parametrize("payload", [b"\x01", b"\x0c\x20" + bytes(12), b"\x20\x10" + bytes(12)])
def test_malformed_frames_are_refused(payload):
    with pytest.raises(fr.FrameError):
        fr.parse(payload)


# -- addressing and working counters ----------------------------------------------------------

def test_auto_increment_reaches_the_slave_at_its_position(two):
    second = two.send(fr.Command.APRD, 0xFFFF | reg.STATION_ADDRESS << 16, 2)
    assert second.wkc == 1 and struct.unpack("<H", second.data)[0] == STATION + 1
    assert second.adp == 0x0001  # incremented once per slave passed
    assert two.send(fr.Command.APRD, 0xFFFE | reg.STATION_ADDRESS << 16, 2).wkc == 0


def test_broadcast_read_counts_every_slave_and_ors_their_data(two):
    d = two.send(fr.Command.BRD, reg.AL_STATUS << 16, 2)
    assert d.wkc == 2 and struct.unpack("<H", d.data)[0] == reg.AlState.PRE_OP


def test_read_write_counts_three_and_returns_the_old_value(two):
    d = two.send(fr.Command.FPRW, STATION | reg.EVENT_MASK << 16, b"\x34\x12")
    assert d.wkc == 3 and bytes(d.data) == b"\x00\x00"
    assert bytes(two.fprd(STATION, reg.EVENT_MASK, 2).data) == b"\x34\x12"


def test_read_multiple_write_distributes_the_first_slaves_value(two):
    d = two.send(fr.Command.ARMW, 0 | reg.EVENT_MASK << 16, 2)
    assert d.wkc == 2  # slave 1 read, slave 2 wrote
    assert bytes(two.fprd(STATION + 1, reg.EVENT_MASK, 2).data) == b"\x34\x12"
    d = two.send(fr.Command.FRMW, (STATION + 1) | reg.DC_SYSTEM_TIME << 16, 8)
    assert d.wkc == 2 and len(d.data) == 8


def test_read_only_registers_keep_their_value(two):
    assert two.fpwr(STATION, reg.TYPE, b"\x00").wkc == 1  # the ESC counts, ignores the data
    assert two.fprd(STATION, reg.TYPE, 1).data[0] == 0x11


# -- SII EEPROM ---------------------------------------------------------------------------------

def _eeprom_read(line: Line, word: int) -> bytes:
    line.fpwr(STATION, reg.EEPROM_CONTROL, struct.pack("<HI", reg.EEPROM_READ, word))
    status = struct.unpack("<H", line.fprd(STATION, reg.EEPROM_CONTROL, 2).data)[0]
    assert not status & reg.EEPROM_BUSY and status & reg.EEPROM_READ_8_BYTES
    return bytes(line.fprd(STATION, reg.EEPROM_DATA, 8).data)


def test_eeprom_interface_reads_identity_and_categories(two):
    identity = _eeprom_read(two, reg.SII_VENDOR)
    assert struct.unpack("<II", identity) == (dm.VENDOR_ZEROERR, dm.PRODUCT_EROB)
    image = two.drives[0].esc.eeprom
    assert image[14] == reg.crc8(bytes(image[:14]))
    found, word = {}, reg.SII_CATEGORIES  # walk the categories as a master does
    while True:
        kind, length = struct.unpack("<HH", _eeprom_read(two, word)[:4])
        if kind == reg.Category.END:
            break
        found[kind] = bytes(image[(word + 2) * 2:(word + 2 + length) * 2])
        word += 2 + length
    strings = found[reg.Category.STRINGS]
    assert strings[2:2 + strings[1]].decode() == dm.DEVICE_NAME  # string 1: the name
    assert found[reg.Category.GENERAL][5] & reg.COE_COMPLETE_ACCESS
    sms = [struct.unpack_from("<HHBBBB", found[reg.Category.SYNC_MANAGER], 8 * i)
           for i in range(4)]
    assert [(s[0], s[1], s[5]) for s in sms] == [(0x1000, 128, 1), (0x1080, 128, 2),
                                                 (0x1100, RX_BYTES, 3), (0x1400, TX_BYTES, 4)]


# -- AL state machine -------------------------------------------------------------------------

def test_state_machine_refuses_skipped_states_until_acknowledged():
    line = Line()
    line.addresses()
    status = line.al_request(STATION, reg.AlState.SAFE_OP)
    assert status == reg.AlState.INIT | reg.AL_ERROR
    assert line.drives[0].esc.al_code == reg.INVALID_STATE_CHANGE
    assert line.al_request(STATION, reg.AlState.PRE_OP) == status  # ignored: not acknowledged
    assert line.al_request(STATION, reg.AlState.PRE_OP | reg.AL_ERROR) == reg.AlState.INIT \
        | reg.AL_ERROR  # acknowledged, but no mailbox configured
    assert line.drives[0].esc.al_code == reg.INVALID_MAILBOX
    line.mailboxes(STATION)
    assert line.al_request(STATION, reg.AlState.PRE_OP | reg.AL_ERROR) == reg.AlState.PRE_OP


def _to_op(line: Line) -> None:
    line.drives[0].tick()  # self-test done: switch on disabled
    line.addresses()
    line.to_pre_op()
    line.process_data(STATION, RX_BYTES, TX_BYTES)
    assert line.al_request(STATION, reg.AlState.SAFE_OP) == reg.AlState.SAFE_OP
    assert line.al_request(STATION, reg.AlState.OPERATIONAL) == reg.AlState.SAFE_OP  # no outputs
    _lrw(line, cia402.DISABLE_VOLTAGE, 0)
    assert line.drives[0].esc.al_state == reg.AlState.OPERATIONAL


def _lrw(line: Line, controlword: int, torque: int, mode: int = cia402.CST) -> fr.Datagram:
    outputs = struct.pack(dm.struct_format(dm.RX_ENTRIES), controlword, torque, 0, mode)
    return line.send(fr.Command.LRW, 0, outputs + bytes(TX_BYTES))


def test_process_data_counts_three_and_feeds_the_drive():
    line = Line(mass=3.1)
    _to_op(line)
    drive = line.drives[0]
    walk = [cia402.SHUTDOWN, cia402.SWITCH_ON, cia402.ENABLE_OPERATION, cia402.ENABLE_OPERATION]
    for cw in walk:
        assert _lrw(line, cw, 100).wkc == 3
        drive.tick()
    assert drive.state is State.OPERATION_ENABLED
    inputs = struct.unpack(dm.struct_format(dm.TX_ENTRIES),
                           bytes(_lrw(line, cia402.ENABLE_OPERATION, 100).data[RX_BYTES:]))
    assert cia402.decode(inputs[0]) is State.OPERATION_ENABLED
    model = drive.model
    expected = 0.1 * model.rated_torque / model.motor_kt  # 100 per mille of the rated torque
    assert drive.applied_current == pytest.approx(expected, rel=1e-4)  # 0x6076 in mN·m


def test_logical_reads_and_writes_count_one_per_slave():
    line = Line()
    _to_op(line)
    outputs = struct.pack(dm.struct_format(dm.RX_ENTRIES), cia402.SHUTDOWN, 0, 0, cia402.CST)
    assert line.send(fr.Command.LWR, 0, outputs).wkc == 1
    assert line.send(fr.Command.LRD, RX_BYTES, TX_BYTES).wkc == 1
    assert line.send(fr.Command.LRD, 0x1000, 4).wkc == 0  # no FMMU there
    assert line.send(fr.Command.APRW, 0 | reg.EVENT_MASK << 16, b"\x01\x00").wkc == 3


def test_watchdog_trips_when_outputs_stop_and_the_drive_reacts():
    line = Line()
    _to_op(line)
    drive, esc = line.drives[0], line.drives[0].esc
    for cw in (cia402.SHUTDOWN, cia402.SWITCH_ON, cia402.ENABLE_OPERATION):
        _lrw(line, cw, 0)
        drive.tick()
    assert drive.state is State.OPERATION_ENABLED
    line.now_ns += 99_000_000
    assert not esc.check_watchdog()
    line.now_ns += 2_000_000  # 101 ms since the last outputs: past the 100 ms default
    assert esc.check_watchdog()
    assert esc.al_status == reg.AlState.SAFE_OP | reg.AL_ERROR and esc.al_code == 0x001B
    assert drive.state is State.FAULT_REACTION_ACTIVE  # 0x6007 = 1 by default: fault
    drive.tick()
    assert drive.od.get(cia402.ERROR_CODE) == cia402.COMMUNICATION_LOST
    assert _lrw(line, 0, 0).wkc == 1  # inputs read, outputs refused: error indicated


# -- mailbox and SDO --------------------------------------------------------------------------

def test_empty_read_mailbox_and_full_write_mailbox_are_refused(two):
    assert two.fprd(STATION, 0x1080, 128).wkc == 0
    request = two.request(sdo_upload(0x1008, 0))
    assert two.fpwr(STATION, MAILBOX_OUT[0], request).wkc == 1
    status = two.fprd(STATION, reg.SM0 + 8 + reg.SM_STATUS, 1).data[0]
    assert status & reg.SM_STATUS_MAILBOX_FULL
    assert two.fprd(STATION, 0x1080, 128).wkc == 1
    assert two.fprd(STATION, 0x1080, 128).wkc == 0  # read once: empty again


def test_expedited_and_normal_uploads(two):
    answer = two.mailbox(STATION, sdo_upload(0x1018, 1))
    assert answer[2] & coe.EXPEDITED and struct.unpack_from("<I", answer, 6)[0] == \
        dm.VENDOR_ZEROERR
    answer = two.mailbox(STATION, sdo_upload(0x1008, 0))
    size = struct.unpack_from("<I", answer, 6)[0]
    assert answer[10:10 + size].decode() == dm.DEVICE_NAME


def test_segmented_upload_and_download_with_toggle(two):
    text = two.drives[0].od.get(dm.DESCRIPTION)
    answer = two.mailbox(STATION, sdo_upload(dm.DESCRIPTION, 0))
    size = struct.unpack_from("<I", answer, 6)[0]
    data, toggle = bytearray(answer[10:]), 0
    while len(data) < size:
        segment = two.mailbox(STATION, coe.coe(coe.CoeService.SDO_REQUEST,
                                               bytes([0x60 | toggle]) + bytes(7)))
        assert segment[2] & 0xE0 == 0 and segment[2] & coe.TOGGLE == toggle
        chunk = segment[3:]
        if segment[2] & coe.LAST_SEGMENT and len(chunk) == 7:
            chunk = chunk[:7 - (segment[2] >> 1 & 7)]
        data += chunk
        toggle ^= coe.TOGGLE
    assert data.decode() == text
    label = ("x" * 150).encode()
    first = 128 - 16  # what fits in the initiate message
    assert abort_code(two.mailbox(STATION, coe.coe(
        coe.CoeService.SDO_REQUEST,
        struct.pack("<BHBI", 0x21, dm.USER_LABEL, 0, len(label)) + label[:first]))) is None
    wrong = two.mailbox(STATION, coe.coe(coe.CoeService.SDO_REQUEST,
                                         bytes([0x10 | 0x01]) + label[first:]))
    assert abort_code(wrong) == coe.ABORT_TOGGLE


@pytest.mark.parametrize("request_payload,code", [
    (sdo_upload(0x2FFF, 0), coe.ABORT_NO_OBJECT),
    (sdo_upload(0x1018, 9), coe.ABORT_NO_SUBINDEX),
    (sdo_download(0x1008, 0, b"name"), coe.ABORT_READ_ONLY),
    (sdo_download(cia402.CONTROLWORD, 0, b"\x01\x02\x03"), coe.ABORT_TOO_LONG),
    (sdo_download(cia402.CONTROLWORD, 0, b"\x01"), coe.ABORT_TOO_SHORT),
    (sdo_download(cia402.MODES_OF_OPERATION, 0, b"\x03"), coe.ABORT_VALUE_RANGE),
    (sdo_download(cia402.ABORT_CONNECTION_OPTION, 0, b"\x07\x00"), coe.ABORT_VALUE_HIGH),
    (sdo_download(0x1600, 1, struct.pack("<I", 0)), coe.ABORT_SUBINDEX0_NOT_ZERO),
    (coe.coe(coe.CoeService.SDO_REQUEST, bytes([0xE0]) + bytes(7)), coe.ABORT_COMMAND),
])
def test_refused_requests_abort_with_their_code(two, request_payload, code):
    assert abort_code(two.mailbox(STATION, request_payload)) == code


def test_pdo_mapping_is_checked_and_writable_in_pre_op_only(two):
    assert abort_code(two.mailbox(STATION, sdo_download(0x1601, 0, b"\x00"))) is None
    status = cia402.STATUSWORD << 16 | 16  # a TxPDO object in an RxPDO
    assert abort_code(two.mailbox(STATION, sdo_download(0x1601, 1, struct.pack("<I", status))))\
        is None
    assert abort_code(two.mailbox(STATION, sdo_download(0x1601, 0, b"\x01"))) == \
        coe.ABORT_NOT_MAPPABLE
    complete = two.mailbox(STATION, sdo_upload(0x1C12, 0, complete=True))
    assert complete[10:14] == struct.pack("<BBH", 1, 0, dm.RXPDO)  # sub 0 padded to 16 bits
    line = Line()
    _to_op(line)
    assert abort_code(line.mailbox(STATION, sdo_download(0x1C12, 0, b"\x00"))) == \
        coe.ABORT_DEVICE_STATE


def test_a_repeated_mailbox_write_is_ignored(two):
    raw = two.request(sdo_upload(0x1008, 0))
    assert two.fpwr(STATION, MAILBOX_OUT[0], raw).wkc == 1
    assert two.fpwr(STATION, MAILBOX_OUT[0], raw).wkc == 1  # its answer was lost: sent again
    assert two.fprd(STATION, 0x1080, 128).wkc == 1
    assert two.fprd(STATION, 0x1080, 128).wkc == 0  # one answer only


def test_unsupported_mailbox_protocol_gets_a_mailbox_error(two):
    raw = two.request(b"\x01\x00", coe.MailboxType.FOE)
    two.fpwr(STATION, MAILBOX_OUT[0], raw)
    answer = coe.decode_mailbox(bytes(two.fprd(STATION, 0x1080, 128).data))
    assert answer.type == coe.MailboxType.ERROR
    assert struct.unpack("<HH", answer.payload) == (1, coe.MBX_ERROR_UNSUPPORTED_PROTOCOL)


def test_a_fault_sends_an_emergency_and_resets_once_its_cause_is_gone():
    line = Line()
    line.addresses()
    line.to_pre_op()
    drive = line.drives[0]
    drive.inject_fault(cia402.OVER_CURRENT)
    emcy = coe.decode_mailbox(bytes(line.fprd(STATION, 0x1080, 128).data)).payload
    assert coe.coe_service(emcy) == coe.CoeService.EMERGENCY
    assert struct.unpack_from("<HB", emcy, 2) == (cia402.OVER_CURRENT, 0x03)
    drive.tick()
    assert drive.state is State.FAULT
    drive.od.set(cia402.CONTROLWORD, 0, cia402.FAULT_RESET)
    drive.tick()
    assert drive.state is State.FAULT  # the cause is still there
    drive.clear_fault()
    drive.od.set(cia402.CONTROLWORD, 0, 0)
    drive.tick()
    drive.od.set(cia402.CONTROLWORD, 0, cia402.FAULT_RESET)
    drive.tick()
    assert drive.state is State.SWITCH_ON_DISABLED and drive.od.get(cia402.ERROR_CODE) == 0


# -- CiA 402 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("state", list(State))
def test_statusword_decodes_to_its_state(state):
    assert cia402.decode(cia402.statusword(state, voltage=True)) is state


def test_master_controlwords_walk_a_drive_to_operation_and_back():
    state, cw = State.SWITCH_ON_DISABLED, 0
    seen = []
    for _ in range(5):
        cw = cia402.controlword_for(state, True, False, cw)
        state = cia402.transition(state, cw, 0)
        seen.append(state)
    assert seen[:3] == [State.READY, State.SWITCHED_ON, State.OPERATION_ENABLED]
    cw = cia402.controlword_for(state, False, False, cw)
    assert cia402.transition(state, cw, 0) is State.SWITCHED_ON  # torque off, power kept
    assert cia402.transition(State.OPERATION_ENABLED, cia402.QUICK_STOP, 0) is \
        State.QUICK_STOP_ACTIVE


def test_fault_reset_acts_on_the_rising_edge_only():
    assert cia402.controlword_for(State.FAULT, True, True, 0) == cia402.FAULT_RESET
    assert cia402.controlword_for(State.FAULT, True, True, cia402.FAULT_RESET) == 0
    assert cia402.controlword_for(State.FAULT, True, False, 0) == 0
    assert cia402.transition(State.FAULT, cia402.FAULT_RESET, cia402.FAULT_RESET) is State.FAULT
    assert cia402.transition(State.FAULT, cia402.FAULT_RESET, 0) is State.SWITCH_ON_DISABLED


def test_error_codes_have_names():
    assert "over-current" in cia402.error_name(0x2310)
    assert "following error" in cia402.error_name(0x8611)
    assert cia402.error_name(0x4399) == "temperature error"
    assert reg.al_status_code_name(0x001B) == "sync manager watchdog"


# -- drive models -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(dm.DRIVE_MODELS))
def test_drive_model_units(name):
    model = dm.get_drive_model(name)
    kts = [float(published_named(name, f"m{k}").values["kt"]) for k in range(1, 7)]
    assert model.joint_kt == pytest.approx(sum(kts) / len(kts), abs=1e-3)
    assert model.position(model.counts(1.0)) == pytest.approx(1.0, abs=math.pi / (1 << 19))
    permille = dm.torque_permille(3.0, model.motor_kt, model.rated_torque_mnm)
    assert permille == 500  # 3 A of a 6 A rated current
    assert model.max_current_permille == 2000
