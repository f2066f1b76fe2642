"""Dynamixel packet framing against the e-manual's example packets and hand computations."""

from __future__ import annotations

import random

import pytest

from bam_drivers.serial_servo import packet as pk


def h(text: str) -> bytes:
    return bytes.fromhex(text)


# Example packets of the ROBOTIS e-manual (protocol 2.0 and 1.0 pages).
P2_PING_1 = h("FF FF FD 00 01 03 00 01 19 4E")
P2_PING_STATUS_1 = h("FF FF FD 00 01 07 00 55 00 06 04 26 65 5D")  # model 1030, fw 38
P2_READ_132_4 = h("FF FF FD 00 01 07 00 02 84 00 04 00 1D 15")
P2_WRITE_116_512 = h("FF FF FD 00 01 09 00 03 74 00 00 02 00 00 CA 89")
P1_PING_1 = h("FF FF 01 02 01 FB")
P1_READ_43_1 = h("FF FF 01 04 02 2B 01 CC")
P1_STATUS_32 = h("FF FF 01 03 00 20 DB")
P1_WRITE_ID_1_BROADCAST = h("FF FF FE 04 03 03 01 F6")
P2_ACTION_1 = h("FF FF FD 00 01 03 00 05 02 CE")
P2_EMPTY_STATUS_1 = h("FF FF FD 00 01 04 00 55 00 A1 0C")


def test_protocol2_examples() -> None:
    assert pk.instruction_packet(2, 1, pk.Instruction.PING) == P2_PING_1
    assert pk.status_packet(2, 1, 0, h("06 04 26")) == P2_PING_STATUS_1
    assert pk.instruction_packet(2, 1, pk.Instruction.READ, pk.read_params(2, 132, 4)) \
        == P2_READ_132_4
    data = (512).to_bytes(4, "little")
    assert pk.instruction_packet(2, 1, pk.Instruction.WRITE, pk.write_params(2, 116, data)) \
        == P2_WRITE_116_512
    assert pk.instruction_packet(2, 1, pk.Instruction.ACTION) == P2_ACTION_1
    assert pk.status_packet(2, 1, 0) == P2_EMPTY_STATUS_1


def test_protocol1_examples() -> None:
    assert pk.instruction_packet(1, 1, pk.Instruction.PING) == P1_PING_1
    assert pk.instruction_packet(1, 1, pk.Instruction.READ, pk.read_params(1, 43, 1)) \
        == P1_READ_43_1
    assert pk.status_packet(1, 1, 0, b"\x20") == P1_STATUS_32
    assert pk.instruction_packet(1, pk.BROADCAST_ID, pk.Instruction.WRITE,
                                 pk.write_params(1, 3, b"\x01")) == P1_WRITE_ID_1_BROADCAST
    # Hand computed: ~(0x01 + 0x02 + 0x01) & 0xFF = 0xFB.
    assert pk.checksum1(h("01 02 01")) == 0xFB


def test_crc_matches_a_bitwise_reference() -> None:
    def bitwise(data: bytes) -> int:  # the polynomial division, one bit at a time
        crc = 0
        for byte in data:
            crc ^= byte << 8
            for _ in range(8):
                crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
        return crc

    rng = random.Random(3)
    for size in (0, 1, 7, 64):
        data = bytes(rng.randrange(256) for _ in range(size))
        assert pk.crc16(data) == bitwise(data)
    assert pk.crc16(P2_PING_1[:-2]) == 0x4E19


def test_byte_stuffing() -> None:
    assert pk.stuff(h("FF FF FD 01")) == h("FF FF FD FD 01")
    assert pk.unstuff(h("FF FF FD FD 01")) == h("FF FF FD 01")
    payload = h("FF FF FD 00 FF FF FD")
    packet = pk.instruction_packet(2, 3, pk.Instruction.WRITE, pk.write_params(2, 10, payload))
    # LEN counts the stuffed bytes: inst 1 + address 2 + 7 data + 2 stuffing + CRC 2.
    assert packet[5] | packet[6] << 8 == 1 + 2 + 7 + 2 + 2
    assert h("FF FF FD FD 00 FF FF FD FD") in packet
    (frame,) = pk.StreamParser(2).feed(packet)
    assert frame.valid and frame.id == 3
    assert pk.parse_write(2, frame.params) == (10, payload)


@pytest.mark.parametrize("protocol", [1, 2])
def test_parser_resynchronizes_on_garbage(protocol: int) -> None:
    good = pk.instruction_packet(protocol, 7, pk.Instruction.READ, pk.read_params(protocol, 36, 8))
    garbage = h("00 FF 12 FF FF") if protocol == 1 else h("00 FF FF FD FF FF FD FD 01")
    parser = pk.StreamParser(protocol)
    frames = []
    stream = garbage + good + good
    for k in range(0, len(stream), 3):  # arrives in pieces
        frames += parser.feed(stream[k : k + 3])
    valid = [f for f in frames if f.valid]
    assert len(valid) == 2
    assert all(pk.parse_read(protocol, f.params) == (36, 8) and f.id == 7 for f in valid)


@pytest.mark.parametrize("protocol", [1, 2])
def test_bad_checksum_is_reported_then_skipped(protocol: int) -> None:
    good = pk.instruction_packet(protocol, 1, pk.Instruction.PING)
    parser = pk.StreamParser(protocol)
    bad, ok = parser.feed(pk.corrupt(good) + good)
    assert not bad.valid and bad.id == 1
    assert ok.valid and ok.instruction == pk.Instruction.PING
    assert parser.bad_checksums == 1


def test_stale_partial_frame_is_dropped() -> None:
    parser = pk.StreamParser(2)
    good = pk.instruction_packet(2, 1, pk.Instruction.PING)
    # A truncated header claiming 1000 bytes would block the good packet for ever.
    assert parser.feed(h("FF FF FD 00 01 E8 03 02") + good) == []
    frames = parser.drop_stale()
    assert [f.instruction for f in frames if f.valid] == [pk.Instruction.PING]


def test_status_frames() -> None:
    (p2,) = pk.StreamParser(2).feed(pk.status_packet(2, 4, pk.P2_ALERT | 7, h("01 02")))
    assert p2.instruction == pk.Instruction.STATUS
    assert p2.error == 0x87 and p2.data == h("01 02")
    (p1,) = pk.StreamParser(1).feed(pk.status_packet(1, 4, pk.P1Error.OVERLOAD, h("01 02")))
    assert p1.error == 0x20 and p1.data == h("01 02")


def test_group_instruction_parameters() -> None:
    sync = pk.sync_write_params(2, 116, 4, {1: h("00 08 00 00"), 2: h("FF 07 00 00")})
    assert sync == h("74 00 04 00 01 00 08 00 00 02 FF 07 00 00")
    assert pk.parse_sync_write(2, sync) == (116, 4, {1: h("00 08 00 00"), 2: h("FF 07 00 00")})
    assert pk.parse_sync_write(1, h("1E 02 01 00 08 02 FF 07")) == (
        30, 2, {1: h("00 08"), 2: h("FF 07")})
    assert pk.parse_sync_read(pk.sync_read_params(132, 4, [1, 2])) == (132, 4, [1, 2])
    items = [(1, 36, 8), (2, 30, 2)]
    assert pk.bulk_read_params(1, items) == h("00 08 01 24 02 02 1E")
    assert pk.parse_bulk_read(1, pk.bulk_read_params(1, items)) == items
    assert pk.parse_bulk_read(2, pk.bulk_read_params(2, items)) == items
    writes = [(1, 116, h("00 08 00 00")), (3, 64, h("01"))]
    assert pk.parse_bulk_write(pk.bulk_write_params(writes)) == writes


@pytest.mark.parametrize("params", [h("74 00 04"), h("74 00 04 00 01 00 08")])
def test_malformed_parameters_raise_data_length(params: bytes) -> None:
    with pytest.raises(pk.PacketError) as info:
        pk.parse_sync_write(2, params)
    assert info.value.code == pk.P2Result.DATA_LENGTH
    with pytest.raises(pk.PacketError):
        pk.parse_read(1, h("24"))


def test_fast_read_status_layout() -> None:
    packet = pk.fast_read_status([(1, 0, h("0A 0B")), (2, 0x80, h("0C"))])
    # Header, ID FE, LEN = 1 + (4 + 2) + (4 + 1) = 12, then ERR ID DATA CRC per servo.
    assert packet[:8] == h("FF FF FD 00 FE 0C 00 55")
    assert packet[8:12] == h("00 01 0A 0B")
    assert packet[12:14] == pk.crc16(packet[:12]).to_bytes(2, "little")
    assert packet[14:17] == h("80 02 0C")
    assert packet[17:] == pk.crc16(packet[:17]).to_bytes(2, "little")  # the packet's CRC
    (frame,) = pk.StreamParser(2).feed(packet)
    assert frame.valid and frame.id == pk.BROADCAST_ID
