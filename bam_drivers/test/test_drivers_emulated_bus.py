"""Firmware semantics of the emulated bus, in process (packets in, status packets out)."""

from __future__ import annotations

import math

import pytest

from bam_drivers.emulators.serial_servo_emulator import EmulatorConfig, build_bus
from bam_drivers.emulators.serial_servos import EmulatedBus
from bam_drivers.serial_servo import packet as pk
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import published_named

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

Inst = pk.Instruction


def make_bus(model: str, ids=(1, 2), **kwargs) -> EmulatedBus:
    return build_bus(EmulatorConfig(servo_model=model, ids=tuple(ids), **kwargs))


def ask(bus: EmulatedBus, dxl_id: int, inst: int, params: bytes = b"") -> list[pk.Frame]:
    """Send one instruction through the wire format and parse the status packets."""
    (frame,) = pk.StreamParser(bus.protocol).feed(
        pk.instruction_packet(bus.protocol, dxl_id, inst, params))
    replies = bus.handle(frame)
    parser = pk.StreamParser(bus.protocol)
    return [f for _, raw in replies for f in parser.feed(raw)]


def write(bus, dxl_id, address, data) -> list[pk.Frame]:
    return ask(bus, dxl_id, Inst.WRITE, pk.write_params(bus.protocol, address, data))


def read(bus, dxl_id, address, length) -> pk.Frame:
    (status,) = ask(bus, dxl_id, Inst.READ, pk.read_params(bus.protocol, address, length))
    return status


def test_ping_and_unknown_id() -> None:
    bus = make_bus("xm430_w350")
    (status,) = ask(bus, 2, Inst.PING)
    assert status.valid and status.id == 2 and status.error == 0
    assert int.from_bytes(status.data[:2], "little") == 1020
    assert ask(bus, 9, Inst.PING) == []
    assert [s.id for s in ask(bus, pk.BROADCAST_ID, Inst.PING)] == [1, 2]


@pytest.mark.parametrize("model,address,expected", [
    ("mx64_p1", 36, pk.P1Error.RANGE), ("mx64_p2", 132, pk.P2Result.ACCESS)])
def test_read_only_write_refused(model: str, address: int, expected: int) -> None:
    bus = make_bus(model)
    before = read(bus, 1, address, 2).data
    (status,) = write(bus, 1, address, b"\x05\x00")
    assert status.error == expected
    assert read(bus, 1, address, 2).data == before


def test_protocol2_eeprom_locked_while_torque_on() -> None:
    bus = make_bus("mx106_p2")
    (ok,) = write(bus, 1, 11, b"\x04")  # operating mode, torque off
    assert ok.error == 0
    write(bus, 1, 64, b"\x01")
    (refused,) = write(bus, 1, 11, b"\x03")
    assert refused.error == pk.P2Result.ACCESS
    assert read(bus, 1, 11, 1).data == b"\x04"


def test_protocol1_lock_register_protects_eeprom() -> None:
    bus = make_bus("mx64_p1")
    write(bus, 1, 47, b"\x01")
    (refused,) = write(bus, 1, 11, b"\x46")
    assert refused.error == pk.P1Error.RANGE


def test_range_and_length_errors() -> None:
    bus = make_bus("xm430_w350")
    (status,) = write(bus, 1, 116, (5000).to_bytes(4, "little"))  # beyond 0..4095
    assert status.error == pk.P2Result.DATA_RANGE
    (status,) = write(bus, 1, 116, b"\x00\x08")  # half of a 4-byte field
    assert status.error == pk.P2Result.DATA_LENGTH
    (status,) = ask(bus, 1, Inst.READ, b"\x84\x00")  # READ needs 4 parameter bytes
    assert status.error == pk.P2Result.DATA_LENGTH
    status = read(bus, 1, 140, 100)  # past the end of the table
    assert status.error == pk.P2Result.ACCESS
    (status,) = ask(bus, 1, 0x77)
    assert status.error == pk.P2Result.INSTRUCTION
    bus1 = make_bus("mx64_p1")
    (status,) = write(bus1, 1, 30, (4096).to_bytes(2, "little"))
    assert status.error == pk.P1Error.RANGE


def test_bad_checksum_answered_with_checksum_error() -> None:
    for model, expected in (("mx64_p1", pk.P1Error.CHECKSUM), ("mx64_p2", pk.P2Result.CRC)):
        bus = make_bus(model)
        raw = pk.corrupt(pk.instruction_packet(bus.protocol, 1, Inst.PING))
        (frame,) = pk.StreamParser(bus.protocol).feed(raw)
        ((servo, reply),) = bus.handle(frame)
        assert pk.StreamParser(bus.protocol).feed(reply)[0].error == expected


def test_reg_write_and_action() -> None:
    bus = make_bus("mx64_p1")
    goal = (2100).to_bytes(2, "little")
    (status,) = ask(bus, 1, Inst.REG_WRITE, pk.write_params(1, 30, goal))
    assert status.error == 0
    assert read(bus, 1, 30, 2).data != goal and read(bus, 1, 44, 1).data == b"\x01"
    assert ask(bus, pk.BROADCAST_ID, Inst.ACTION) == []
    assert read(bus, 1, 30, 2).data == goal and read(bus, 1, 44, 1).data == b"\x00"
    (status,) = ask(bus, 1, Inst.ACTION)  # nothing registered
    assert status.error == pk.P1Error.INSTRUCTION


def test_status_return_level() -> None:
    bus = make_bus("xm430_w350")
    write(bus, 1, 68, b"\x01")  # ping and reads only
    assert write(bus, 1, 65, b"\x01") == []
    assert read(bus, 1, 65, 1).data == b"\x01"
    write(bus, 1, 68, b"\x00")
    assert ask(bus, 1, Inst.READ, pk.read_params(2, 65, 1)) == []
    assert len(ask(bus, 1, Inst.PING)) == 1


def test_group_instructions() -> None:
    bus = make_bus("mx64_p2", ids=(1, 2, 3))
    data = {i: (2000 + i).to_bytes(4, "little") for i in (1, 2, 3)}
    assert ask(bus, pk.BROADCAST_ID, Inst.SYNC_WRITE, pk.sync_write_params(2, 116, 4, data)) == []
    statuses = ask(bus, pk.BROADCAST_ID, Inst.SYNC_READ, pk.sync_read_params(116, 4, [3, 1, 7]))
    assert [(s.id, s.data) for s in statuses] == [(3, data[3]), (1, data[1])]
    writes = [(2, 65, b"\x01"), (3, 116, (1000).to_bytes(4, "little"))]
    assert ask(bus, pk.BROADCAST_ID, Inst.BULK_WRITE, pk.bulk_write_params(writes)) == []
    statuses = ask(bus, pk.BROADCAST_ID, Inst.BULK_READ,
                   pk.bulk_read_params(2, [(2, 65, 1), (3, 116, 4)]))
    assert [s.data for s in statuses] == [b"\x01", (1000).to_bytes(4, "little")]


def test_id_change_and_collision() -> None:
    bus = make_bus("mx64_p1", ids=(1, 2))
    (status,) = write(bus, 2, 3, b"\x02")  # same id: fine
    assert status.error == 0
    (status,) = write(bus, 2, 3, b"\x01")  # would collide with servo 1
    assert status.error != 0 and sorted(bus.servos) == [1, 2]
    write(bus, 2, 3, b"\x05")
    assert sorted(bus.servos) == [1, 5]
    assert len(ask(bus, 5, Inst.PING)) == 1


def test_reboot_and_factory_reset() -> None:
    bus = make_bus("xm430_w350", ids=(4,), hardware_error={4: 0x20})
    (status,) = ask(bus, 4, Inst.PING)
    assert status.error == pk.P2_ALERT
    write(bus, 4, 64, b"\x01")
    write(bus, 4, 84, (1234).to_bytes(2, "little"))
    ask(bus, 4, Inst.REBOOT)
    assert read(bus, 4, 64, 1).data == b"\x00"
    assert read(bus, 4, 70, 1).data == b"\x00"
    assert int.from_bytes(read(bus, 4, 84, 2).data, "little") == 800
    write(bus, 4, 9, b"\x00")  # return delay 0
    ask(bus, 4, Inst.FACTORY_RESET, b"\x02")
    assert read(bus, 4, 9, 1).data == bytes((250,)) and 4 in bus.servos


def test_present_registers_follow_physics() -> None:
    bus = make_bus("mx64_p2", ids=(1,), initial_position=0.5, supply_voltage=12.0)
    servo = bus.servos[1]
    write(bus, 1, 64, b"\x01")  # torque on, goal = initial position 0.5 rad
    write(bus, 1, 116, (2048).to_bytes(4, "little"))
    for _ in range(5):
        bus.tick()
    block = read(bus, 1, 124, 23).data
    table = servo.table
    values = table.decode(table.state, block, 124)
    q, dq = servo.sim.state
    assert values["present_position"] == pytest.approx(q, abs=math.pi / 4096)
    assert values["present_velocity"] == pytest.approx(dq, abs=0.024)
    assert values["present_pwm"] == pytest.approx(servo.control / 12.0, abs=1 / 885)
    p = published_named("mx64", "m4").vector()
    current = (servo.control - p[P.KT] * dq) / p[P.R]
    assert values["present_current"] == pytest.approx(current, abs=0.00336)
    assert values["present_input_voltage"] == pytest.approx(12.0)
    assert values["present_temperature"] == 35.0
    assert servo.control < 0.0  # pulls toward the goal 0 from 0.5 rad


def test_xl330_registers_follow_its_own_law() -> None:
    """The XL330-M288 table on XL330 physics: its P register is the model's kp, its
    current is in mA, and a large error meets the firmware's 1.75 A limit."""
    bus = make_bus("xl330_m288", ids=(1,), initial_position=0.5, supply_voltage=7.5)
    servo = bus.servos[1]
    assert read(bus, 1, 84, 2).data == (400).to_bytes(2, "little")  # factory P gain
    write(bus, 1, 84, (1600).to_bytes(2, "little"))
    write(bus, 1, 64, b"\x01")
    write(bus, 1, 116, (2048).to_bytes(4, "little"))  # 0.5 rad away: beyond the limit
    assert servo.sim.command.gain == 1600.0
    bus.tick()  # from rest: the drive current (U − k_t·0)/R is the firmware's limit
    p = published_named("xl330", "m4").vector()
    assert servo.control / p[P.R] == pytest.approx(-1.75, abs=1e-12)
    table = servo.table
    values = table.decode(table.state, read(bus, 1, 124, 23).data, 124)
    assert values["present_current"] == pytest.approx(servo.current, abs=0.001)
    assert values["present_pwm"] == pytest.approx(servo.control / 7.5, abs=1 / 885)


def test_xl320_registers_follow_its_own_table() -> None:
    """The XL-320 on XL-320 physics: 300° over 1023 counts around 512, the P register
    (29) the model's kp, the duty in Present Load (0.1 %), a position beyond its 300°
    read at the end of the range."""
    bus = make_bus("xl320", ids=(1,), initial_position=0.5, supply_voltage=7.5)
    servo = bus.servos[1]
    table = servo.table
    values = table.decode(table.state, read(bus, 1, 37, 10).data, 37)
    assert values["present_position"] == pytest.approx(0.5, abs=math.radians(300) / 1023)
    assert read(bus, 1, 29, 1).data == b"\x20"  # factory P gain 32
    write(bus, 1, 29, b"\x40")
    write(bus, 1, 24, b"\x01")
    assert servo.sim.command.gain == 64.0 and servo.sim.command.goal == pytest.approx(0.5,
                                                                                     abs=0.01)
    write(bus, 1, 30, (512).to_bytes(2, "little"))  # goal 0 rad
    bus.tick()
    values = table.decode(table.state, read(bus, 1, 37, 10).data, 37)
    assert values["present_load"] == pytest.approx(servo.control / 7.5, abs=1e-3)
    assert values["present_load"] < -0.1  # driving back toward 0
    servo.set_state(3.0)  # beyond +150°: the register holds its end
    assert int.from_bytes(read(bus, 1, 37, 2).data, "little") == 1023


def test_configuration_errors() -> None:
    with pytest.raises(BamError, match="protocol 1, not 2"):
        build_bus(EmulatorConfig(servo_model="mx64_p1", protocol=2))
    with pytest.raises(BamError, match="distinct"):
        build_bus(EmulatorConfig(ids=(1, 1)))
    with pytest.raises(BamError, match="ACTUATOR:MODEL"):
        build_bus(EmulatorConfig(physics="mx64"))
    for physics in ("erob80_50:m1", "sts3215:m1"):
        with pytest.raises(BamError, match="does not run the MX-64"):
            build_bus(EmulatorConfig(physics=physics))
    with pytest.raises(BamError, match="give sts3215, sts3215_12v parameters"):
        build_bus(EmulatorConfig(servo_model="sts3215", physics="mx64:m4"))
    with pytest.raises(BamError, match="give servo_model xl330_m288 with its actuators' "
                                       "physics only"):
        build_bus(EmulatorConfig(physics="xl330:m4"))
    with pytest.raises(BamError, match="does not run servo model xl330_m288"):
        build_bus(EmulatorConfig(servo_model="xl330_m288", physics="mx64:m4"))
    with pytest.raises(BamError, match="give servo_model xl320 with its actuators' physics only"):
        build_bus(EmulatorConfig(servo_model="mx64_p2", physics="xl320:m4"))
    with pytest.raises(BamError, match="does not run servo model xl320"):
        build_bus(EmulatorConfig(servo_model="xl320", physics="xl330:m4"))
