"""Control tables: registers of the issue, encodings, SI round trips, errors."""

from __future__ import annotations

import math

import pytest

from bam_drivers.dynamixel.control_table import TABLES
from bam_drivers.serial_servo.control_table import get_table, table_for_model_number
from bam_sim.common.errors import BamError

# Registers named in issue 5: (field, address, size).
P1_REGISTERS = [
    ("torque_enable", 24, 1), ("p_gain", 28, 1), ("goal_position", 30, 2),
    ("present_position", 36, 2), ("present_velocity", 38, 2), ("present_load", 40, 2),
    ("present_input_voltage", 42, 1), ("present_temperature", 43, 1),
]
P2_REGISTERS = [
    ("torque_enable", 64, 1), ("p_gain", 84, 2), ("goal_position", 116, 4),
    ("present_pwm", 124, 2), ("present_current", 126, 2), ("present_velocity", 128, 4),
    ("present_position", 132, 4), ("present_input_voltage", 144, 2),
    ("present_temperature", 146, 1), ("hardware_error_status", 70, 1), ("operating_mode", 11, 1),
]
# The XL-320: protocol 2.0 on a register map of its own (e-manual "XL-320").
XL320_REGISTERS = [
    ("torque_enable", 24, 1), ("p_gain", 29, 1), ("goal_position", 30, 2),
    ("present_position", 37, 2), ("present_velocity", 39, 2), ("present_load", 41, 2),
    ("present_input_voltage", 45, 1), ("present_temperature", 46, 1),
    ("hardware_error_status", 50, 1), ("control_mode", 11, 1),
]
MODEL_NUMBERS = {"mx64_p1": 310, "mx106_p1": 320, "mx64_p2": 311, "mx106_p2": 321,
                 "xm430_w350": 1020, "xl330_m288": 1200, "xl320": 350}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_registers_of_the_issue(name: str) -> None:
    table = TABLES[name]
    registers = XL320_REGISTERS if name == "xl320" else (
        P1_REGISTERS if table.protocol == 1 else P2_REGISTERS)
    for field_name, address, size in registers:
        f = table.field(field_name)
        assert (f.address, f.size) == (address, size), field_name
    assert table.model_number == MODEL_NUMBERS[name]
    memory = table.initial_memory()
    assert int.from_bytes(memory[0:2], "little") == MODEL_NUMBERS[name]
    assert table_for_model_number(table.protocol, table.model_number, TABLES) is table


def test_state_blocks() -> None:
    assert TABLES["mx64_p1"].block() == (36, 8)  # 36..43
    assert TABLES["xl320"].block() == (37, 10)  # 37..46
    assert TABLES["mx106_p2"].block() == (124, 23)  # 124..146
    assert TABLES["xm430_w350"].block(["goal_position"]) == (116, 4)
    assert TABLES["mx64_p1"].block(["p_gain", "goal_position"]) == (28, 4)


def test_sign_bit_10_decoding() -> None:
    speed = TABLES["mx64_p1"].field("present_velocity")
    unit = 0.114 * 2 * math.pi / 60
    assert speed.to_si(300) == pytest.approx(300 * unit)
    assert speed.to_si(1024 + 300) == pytest.approx(-300 * unit)
    assert speed.to_si(1024) == 0.0 and speed.to_si(0) == 0.0
    assert speed.from_si(-300 * unit) == 1024 + 300
    assert speed.from_si(-1e6) == 1024 + 1023  # clamped to the magnitude range
    load = TABLES["mx106_p1"].field("present_load")
    assert load.to_si(1024 + 512) == pytest.approx(-0.512)


def test_twos_complement_and_positions() -> None:
    table = TABLES["mx64_p2"]
    velocity = table.field("present_velocity")
    assert velocity.from_si(-1.0) == (1 << 32) - round(1.0 / (0.229 * 2 * math.pi / 60))
    assert velocity.to_si(0xFFFFFFFF) == pytest.approx(-0.229 * 2 * math.pi / 60)
    pwm = table.field("present_pwm")
    assert pwm.to_si(885) == pytest.approx(1.0)
    assert pwm.to_si((1 << 16) - 885) == pytest.approx(-1.0)
    position = table.field("present_position")
    assert position.to_si(2048) == 0.0
    assert position.to_si(3072) == pytest.approx(math.pi / 2)
    assert position.to_si(0xFFFFFFFF) == pytest.approx(-2049 * 2 * math.pi / 4096)
    assert TABLES["xm430_w350"].field("present_current").to_si(100) == pytest.approx(0.269)
    assert table.field("present_current").to_si(100) == pytest.approx(0.336)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_round_trips(name: str) -> None:
    table = TABLES[name]
    for f in table.fields.values():
        lo, hi = f.count_range
        for counts in {lo, hi, (lo + hi) // 2, min(max(0, lo), hi)}:
            raw = f.encode(counts)
            assert f.decode(raw) == counts, f.name
            assert f.from_si(f.to_si(raw)) == raw, f.name
            assert f.unpack(b"\x00" + f.pack(raw), f.address - 1) == raw


def test_goal_position_clamped_to_firmware_range() -> None:
    goal = TABLES["mx64_p1"].field("goal_position")
    assert goal.from_si(0.0) == 2048
    assert goal.from_si(10.0) == 4095
    assert goal.from_si(-10.0) == 0
    with pytest.raises(BamError, match="not finite"):
        goal.from_si(float("nan"))


def test_decode_block() -> None:
    table = TABLES["mx64_p1"]
    start, length = table.block()
    data = bytearray(length)
    data[0:2] = (2048 + 1024).to_bytes(2, "little")
    data[2:4] = (1024 + 10).to_bytes(2, "little")
    data[4:6] = (250).to_bytes(2, "little")
    data[6] = 121
    data[7] = 36
    values = table.decode(table.state, bytes(data), start)
    assert values["present_position"] == pytest.approx(math.pi / 2)
    assert values["present_velocity"] == pytest.approx(-10 * 0.114 * 2 * math.pi / 60)
    assert values["present_load"] == pytest.approx(0.25)
    assert values["present_input_voltage"] == pytest.approx(12.1)
    assert values["present_temperature"] == 36.0


def test_errors() -> None:
    with pytest.raises(BamError, match="unknown servo model 'ax12'; known: mx64_p1"):
        get_table("ax12", TABLES)
    with pytest.raises(BamError, match="no field 'present_pwm'"):
        TABLES["mx64_p1"].field("present_pwm")
    with pytest.raises(BamError, match="outside the block"):
        TABLES["mx64_p1"].field("present_position").unpack(b"\x00", 36)
    with pytest.raises(BamError, match="model number 999"):
        table_for_model_number(2, 999, TABLES)


def test_areas_and_access() -> None:
    table = TABLES["xm430_w350"]
    assert table.field("present_position").access == "r"
    assert table.field("operating_mode").area == "eeprom"
    assert table.field("goal_position").area == "ram"
    assert table.at(117).name == "goal_position"
    assert table.at(14) is None  # reserved
