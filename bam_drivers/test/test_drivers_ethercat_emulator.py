"""The EtherCAT emulator against pysoem (SOEM) on a real veth link, frame by frame.

What a master does with a line of eRob drives: scan (config_init: SII
reads, station addresses, PRE-OP), CoE SDO (expedited, normal, segmented,
complete access, aborts), PDO mapping (config_map with complete access,
SAFE-OP), OP with the expected working counter, CST torque, the SM
watchdog of a silent master, emergencies, lost frames.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import time

import pysoem
import pytest
from ethercat_rig import emulator, wait_truth

from bam_drivers.emulators.ethercat_emulator import NO_NAMESPACE
from bam_drivers.ethercat import cia402
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat.coe import ABORT_DEVICE_STATE, ABORT_NO_OBJECT, ABORT_READ_ONLY

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

RX = struct.Struct(dm.struct_format(dm.RX_ENTRIES))
TX = struct.Struct(dm.struct_format(dm.TX_ENTRIES))
TIMEOUT = 15.0  # s, a deadline: reached only when something is wrong


@pytest.fixture(scope="module")
def line():
    """Two drives behind a veth pair (eRob80:100 then eRob80:50)."""
    with emulator(drives=("erob80_100", "erob80_50"), mass=3.1, positions=(0.1, -0.1)) as emu:
        yield emu


@pytest.fixture
def master(line):
    m = pysoem.Master()
    m.open(line.interface)
    try:
        assert m.config_init(release_gil=True) == 2
        yield m
    finally:
        m.close()


def to_op(m) -> int:
    """config_map, SAFE-OP, then OP with process data flowing; the IO map size."""
    size = m.config_map()
    assert m.state_check(pysoem.SAFEOP_STATE, 2_000_000) == pysoem.SAFEOP_STATE
    for s in m.slaves:
        s.output = RX.pack(0, 0, 0, cia402.CST)
    m.send_processdata()
    m.receive_processdata(5000)
    m.state = pysoem.OP_STATE
    m.write_state()
    deadline = time.monotonic() + TIMEOUT
    while m.state_check(pysoem.OP_STATE, 5000) != pysoem.OP_STATE:
        assert time.monotonic() < deadline, "slaves did not reach OP"
        m.send_processdata()
        m.receive_processdata(5000)
    return size


def cycle(m) -> int:
    m.send_processdata()
    return m.receive_processdata(20_000)


def cycle_until(m, emu, predicate, what: str) -> dict:
    """Process data cycles (each with the full working counter) until the truth says so."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        assert cycle(m) == m.expected_wkc
        truth = emu.truth()
        if predicate(truth):
            return truth
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {truth}"


def test_scan_reads_identity_and_names_from_the_sii(line, master):
    assert [(s.name, s.man, s.id, s.rev) for s in master.slaves] == \
        [(dm.DEVICE_NAME, dm.VENDOR_ZEROERR, dm.PRODUCT_EROB, 1)] * 2
    assert master.state_check(pysoem.PREOP_STATE, 2_000_000) == pysoem.PREOP_STATE
    truth = line.truth()
    assert [truth[k]["station_address"] for k in (1, 2)] == [0x1001, 0x1002]
    assert struct.unpack("<I", master.slaves[1].eeprom_read(0x000A))[0] == dm.PRODUCT_EROB


def test_sdo_transfers_and_aborts(master):
    drive = master.slaves[0]
    assert drive.sdo_read(0x1008, 0) == dm.DEVICE_NAME.encode()
    assert struct.unpack("<I", drive.sdo_read(0x6091, 1))[0] == 100
    assert struct.unpack("<I", master.slaves[1].sdo_read(0x6091, 1))[0] == 50
    description = drive.sdo_read(dm.DESCRIPTION, 0).decode()  # segmented: > one mailbox
    assert len(description) > 128 and "eRob80:100" in description
    label = bytes(range(32, 127)) * 2  # segmented download
    drive.sdo_write(dm.USER_LABEL, 0, label)
    assert drive.sdo_read(dm.USER_LABEL, 0) == label
    assert drive.sdo_read(0x1C12, 0, ca=True) == struct.pack("<BBH", 1, 0, dm.RXPDO)
    drive.sdo_write(0x1C13, 0, struct.pack("<BBH", 1, 0, dm.TXPDO), ca=True)
    with pytest.raises(pysoem.SdoError) as missing:
        drive.sdo_read(0x2FFF, 0)
    assert missing.value.abort_code == ABORT_NO_OBJECT
    with pytest.raises(pysoem.SdoError) as read_only:
        drive.sdo_write(0x6041, 0, b"\x00\x00")
    assert read_only.value.abort_code == ABORT_READ_ONLY


def test_mapping_to_op_with_the_expected_working_counter(line, master):
    assert master.config_dc()  # DC: receive-time latches, offsets, delays
    assert to_op(master) == 2 * (RX.size + TX.size)
    assert master.expected_wkc == 6  # per slave: outputs 2, inputs 1
    before = master.dc_time
    assert all(cycle(master) == 6 for _ in range(20))
    assert master.dc_time > before  # the reference clock's system time, read by FRMW
    statusword = TX.unpack(master.slaves[0].input)[0]
    assert cia402.decode(statusword) is cia402.State.SWITCH_ON_DISABLED
    with pytest.raises(pysoem.SdoError) as refused:
        master.slaves[0].sdo_write(0x1C12, 0, b"\x00")
    assert refused.value.abort_code == ABORT_DEVICE_STATE  # mapping: PRE-OP only


def test_cst_torque_reaches_the_joint_and_a_silent_master_trips_the_watchdog(line, master):
    to_op(master)
    drive, model = master.slaves[0], dm.get_drive_model("erob80_100")
    torque = 300  # per mille of the rated torque
    walk = ((cia402.SHUTDOWN, "ready to switch on"), (cia402.SWITCH_ON, "switched on"),
            (cia402.ENABLE_OPERATION, "operation enabled"))
    for controlword, state in walk:
        drive.output = RX.pack(controlword, torque, 0, cia402.CST)
        truth = cycle_until(master, line, lambda t, s=state: t[1]["cia402_state"] == s, state)
    assert truth[1]["target_torque"] == torque
    expected = torque / 1000 * model.rated_torque_mnm / 1000 / model.motor_kt
    assert truth[1]["control"] == pytest.approx(expected, rel=1e-6)
    # The master stops sending: after 100 ms the ESC trips, the drive stops its torque. The
    # count is the emulator's whole life: an earlier test's OP left idle for 100 ms before
    # the next master took over (a loaded machine) tripped it already.
    before = truth[1]["watchdog_trips"]
    truth = wait_truth(line, lambda t: t[1]["watchdog_trips"] > before, "SM watchdog")
    assert truth[1]["al_state"] == "SAFE-OP + ERROR" and truth[1]["al_code"] == 0x001B
    assert not truth[1]["torque_enable"] and truth[1]["control"] == 0.0
    assert truth[1]["error_code"] == cia402.COMMUNICATION_LOST  # 0x6007 default: fault
    assert cycle(master) == 2  # both tripped: inputs read, outputs refused (error indicated)


def test_emergency_reaches_the_master(line, master):
    received = []
    drive = master.slaves[1]
    drive.add_emergency_callback(received.append)
    line.fault(2, 0x4310)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not received:
            assert time.monotonic() < deadline, "no emergency"
            drive.mbx_receive()
        assert (received[0].error_code, received[0].error_reg) == (0x4310, 0x09)
        assert struct.unpack("<H", drive.sdo_read(0x603F, 0))[0] == 0x4310
        assert line.truth()[2]["temperature"] >= 90.0
    finally:
        line.clear_fault(2)


def test_lost_replies_still_leave_sdo_transfers_correct(line, master):
    drive = master.slaves[0]
    line.inject(drop=0.15)
    try:
        results = []
        for _ in range(30):
            try:
                results.append(drive.sdo_read(0x1008, 0))
            except (pysoem.WkcError, pysoem.SdoError, pysoem.PacketError, pysoem.MailboxError):
                results.append(None)
    finally:
        line.inject(drop=0.0)
    good = [r for r in results if r is not None]
    assert len(good) >= 10 and set(good) == {dm.DEVICE_NAME.encode()}
    assert line.stats()["dropped"] > 0


def test_without_privileges_the_emulator_says_so_in_one_line():
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop the capabilities")
    done = subprocess.run(
        [setpriv, "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-m",
         "bam_drivers.emulators.ethercat_emulator"], capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == NO_NAMESPACE, done.stderr
    assert len(lines) == 1 and "cannot create a network namespace" in lines[0]
