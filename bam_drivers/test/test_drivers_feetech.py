"""The Feetech STS tables, the emulated SCS firmware, and the bus's goals and gains.

What the Feetech driver shares with the Dynamixel one is tested there, over
the Feetech bus too: bytes per cycle, SI conversions and fault kinds on the bus
(test_drivers_bus.py), the node's units, goals, several servos, torque off,
SIGINT and bad parameters (test_drivers_node.py), its handling of each fault
(test_drivers_faults.py), and a recording through it fitted
(test_drivers_identify.py).
"""

from __future__ import annotations

import pytest
from drivers_rig import emulator_of

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.emulators.serial_servo_emulator import EmulatorConfig, build_bus
from bam_drivers.feetech.bus import FeetechBus
from bam_drivers.feetech.control_table import CURRENT_UNIT, STEP_RATE, TABLES
from bam_drivers.serial_servo import packet as pk
from bam_drivers.serial_servo.bus import SerialServoBus
from bam_drivers.serial_servo.control_table import RAD_PER_COUNT, Field
from bam_sim.common.errors import BamError
from bam_testing.ros_graph import wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

Inst = pk.Instruction
STS = TABLES["sts3215"]
COUNT = RAD_PER_COUNT


def open_bus(emu: EmulatorProcess, ids, **kwargs) -> FeetechBus:
    kwargs.setdefault("latency_timer_ms", 20.0)  # room for a busy machine (see test_drivers_bus)
    bus = FeetechBus.named(emu.port, "sts3215", ids, **kwargs)
    bus.open()
    return bus


# -- tables and encodings ---------------------------------------------------------------

def test_sign_and_magnitude_encodings():
    speed = Field("speed", 0, 2, "r", "ram", encoding="sign_bit_15", scale=STEP_RATE)
    assert speed.encode(-5) == 0x8005 and speed.decode(0x8005) == -5
    assert speed.decode(0x8000) == 0  # the negative zero
    assert speed.count_range == (-32767, 32767)
    assert speed.to_si(speed.from_si(-1.0)) == pytest.approx(-1.0, abs=STEP_RATE / 2)
    offset = STS.field("homing_offset")
    assert offset.encode(-100) == 0x800 | 100 and offset.count_range == (-2047, 2047)
    assert offset.from_si(-10.0) == 0x800 | 2047  # clamped to the magnitude's bits
    with pytest.raises(BamError, match="must be one of"):
        Field("bad", 0, 2, "r", "ram", encoding="sign_bit_12")


def test_the_sts3215_table():
    assert (STS.model_number, STS.protocol, STS.vendor) == (777, 1, "feetech")
    assert STS.block((*STS.state, STS.current)) == (56, 15)
    assert STS.field("p_gain").address == 21 and STS.gain_per_kp == 1.0
    assert STS.field("present_load").to_si(0x400 | 500) == pytest.approx(-0.5)
    assert STS.field("present_current").to_si(100) == pytest.approx(100 * CURRENT_UNIT)
    assert STS.field("present_input_voltage").to_si(74) == pytest.approx(7.4)
    bus = FeetechBus.named("/dev/null", "sts3215", [1])
    assert bus.hardware_error_names(0x2C) == ["overheating", "overcurrent", "overload"]
    twelve = TABLES["sts3215_12v"]
    differ = [n for n in STS.fields if STS.field(n) != twelve.field(n)]
    assert differ == ["max_voltage_limit"] and twelve.model_number == 777


def test_each_bus_takes_only_its_own_tables_and_baud_rates():
    with pytest.raises(BamError, match="unknown servo model 'mx64_p1'; known: sts3215"):
        FeetechBus.named("/dev/null", "mx64_p1", [1])
    with pytest.raises(BamError, match="unknown servo model 'sts3215'; known: mx64_p1"):
        SerialServoBus.named("/dev/null", "sts3215", [1])
    with pytest.raises(BamError, match="is not a Dynamixel servo; the Dynamixel bus "
                                       "drives mx64_p1"):
        SerialServoBus("/dev/null", STS, [1])
    with pytest.raises(BamError, match="not supported by feetech-servo-sdk"):
        FeetechBus.named("/dev/null", "sts3215", [1], baud_rate=2_000_000)


def test_sync_read_parameters_in_protocol_1_framing():
    params = pk.sync_read_params(56, 15, [1, 2], protocol=1)
    assert params == bytes((56, 15, 1, 2))
    assert pk.parse_sync_read(params, protocol=1) == (56, 15, [1, 2])
    with pytest.raises(pk.PacketError):
        pk.parse_sync_read(bytes((56, 15)), protocol=1)


# -- the emulated firmware, in process ----------------------------------------------------

def ask(bus, servo_id: int, inst: int, params: bytes = b"") -> list[pk.Frame]:
    (frame,) = pk.StreamParser(1).feed(pk.instruction_packet(1, servo_id, inst, params))
    parser = pk.StreamParser(1)
    return [f for _, raw in bus.handle(frame) for f in parser.feed(raw)]


def test_the_emulated_firmware_speaks_scs():
    bus = build_bus(EmulatorConfig(servo_model="sts3215", ids=(1, 2)))
    assert bus.feetech
    # SYNC_READ answers in the order asked; protocol 1.0's BULK_READ does not exist here.
    statuses = ask(bus, pk.BROADCAST_ID, Inst.SYNC_READ, pk.sync_read_params(3, 2, [2, 1], 1))
    assert [(s.id, int.from_bytes(s.data, "little")) for s in statuses] == [(2, 777), (1, 777)]
    assert ask(bus, pk.BROADCAST_ID, Inst.BULK_READ,
               pk.bulk_read_params(1, [(1, 3, 2)])) == []
    # A write the firmware refuses is dropped without error bits.
    (status,) = ask(bus, 1, Inst.WRITE, pk.write_params(1, 56, b"\x05\x00"))
    assert status.error == 0 and bus.servos[1].get("present_position") != 5
    # EEPROM writes apply with Lock set (it only keeps them out of flash).
    assert bus.servos[1].get("lock") == 1
    ask(bus, 1, Inst.WRITE, pk.write_params(1, 21, b"\x10"))
    assert bus.servos[1].get("p_gain") == 16 and bus.servos[1].sim.command.gain == 16.0
    # A bad checksum gets no answer; response level 0 answers reads and pings only.
    raw = pk.corrupt(pk.instruction_packet(1, 1, Inst.READ, pk.read_params(1, 56, 2)))
    (frame,) = pk.StreamParser(1).feed(raw)
    assert not frame.valid and bus.handle(frame) == []
    ask(bus, 2, Inst.WRITE, pk.write_params(1, 8, b"\x00"))
    assert ask(bus, 2, Inst.WRITE, pk.write_params(1, 40, b"\x01")) == []
    assert bus.servos[2].torque_enabled
    assert len(ask(bus, 2, Inst.READ, pk.read_params(1, 40, 1))) == 1
    # Hardware error bits ride on every status, mirrored in the Status register.
    bus.servos[1].set_hardware_error(0x08)
    (status,) = ask(bus, 1, Inst.PING)
    assert status.error == 0x08 and bus.servos[1].get("status") == 0x08


# -- the bus against the emulator process ---------------------------------------------------

def test_goals_gains_and_torque_in_position_mode():
    with emulator_of("feetech", ids=(1, 2)) as emu:
        bus = open_bus(emu, [1, 2])
        bus.write_register(1, "operating_mode", 1)  # a servo left in wheel mode
        assert bus.ensure_position_mode() == ["servo id 1: operating mode 1 -> 0 (position)"]
        assert bus.read_register(1, "operating_mode") == 0
        assert bus.write_gains({1: 32.0, 2: 8.0})
        assert (bus.read_register(1, "p_gain"), bus.read_register(2, "p_gain")) == (32, 8)
        assert bus.write_goals({1: 1.0, 2: -0.5})
        assert bus.write_torque({1: True, 2: True})
        # Sync writes have no reply: a read on the bus comes after them, then the truth.
        assert bus.torque_enabled() == {1: True, 2: True}
        truth = emu.truth()
        assert truth[1]["goal"] == pytest.approx(1.0, abs=COUNT)
        assert truth[2]["goal"] == pytest.approx(-0.5, abs=COUNT)
        assert (truth[1]["gain"], truth[2]["gain"]) == (32.0, 8.0)
        wait_for(lambda: emu.truth()[1]["position"] > 0.3, "servo 1 moving to its goal", 20.0)
        moving = bus.read_state().states[1]  # driven toward +1 rad: positive duty and current
        assert moving.duty > 0.0 and moving.current > 0.0 and moving.position > 0.3
        assert bus.torque_off()
        assert not any(t["torque_enable"] for t in emu.truth().values())
