"""The emulator process seen through dynamixel-sdk itself, both protocols."""

from __future__ import annotations

import math

import dynamixel_sdk as sdk
import pytest
from dynamixel_sdk import port_handler

from bam_drivers.emulators.client import EmulatorError, EmulatorProcess
from bam_testing.ros_graph import wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 20.0  # s: generous, the emulator runs in real time beside a busy machine

# dynamixel-sdk waits 2·LATENCY_TIMER + 2 ms for a status (USB adapters buffer 16 ms);
# the pty answers in well under a millisecond, but a machine with every core busy delayed
# the emulator's replies past 202 ms (a loaded CI run: 14 of these tests timed out). 2 s
# only catches a reply that never comes; the ping of an absent id waits it out once.
LATENCY_TIMER_MS = 1000
COUNTS = 4096 / (2 * math.pi)


@pytest.fixture(autouse=True)
def _short_sdk_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", LATENCY_TIMER_MS)


class Link:
    """An SDK port and packet handler on the emulator's port."""

    def __init__(self, path: str, protocol: int) -> None:
        self.port = sdk.PortHandler(path)
        assert self.port.openPort() and self.port.setBaudRate(1_000_000)
        self.ph = sdk.PacketHandler(float(protocol))

    def close(self) -> None:
        self.port.closePort()


@pytest.fixture(scope="module", params=[(1, "mx64_p1"), (2, "mx106_p2")], ids=["p1", "p2"])
def emulator(request):
    protocol, model = request.param
    with EmulatorProcess(protocol=protocol, servo_model=model, ids=(1, 2, 3), seed=1) as emu:
        emu.protocol, emu.model = protocol, model
        yield emu


@pytest.fixture
def link(emulator):
    lk = Link(emulator.port, emulator.protocol)
    yield lk
    lk.close()


def addr(emulator, p1: int, p2: int) -> int:
    return p1 if emulator.protocol == 1 else p2


def test_ping_returns_model_numbers(emulator, link) -> None:
    expected = {"mx64_p1": 310, "mx106_p2": 321}[emulator.model]
    for dxl_id in (1, 2, 3):
        model, result, error = link.ph.ping(link.port, dxl_id)
        assert (model, result, error) == (expected, sdk.COMM_SUCCESS, 0)
    _, result, _ = link.ph.ping(link.port, 9)
    assert result == sdk.COMM_RX_TIMEOUT


def test_read_and_write_registers(emulator, link) -> None:
    ph, port = link.ph, link.port
    led = addr(emulator, 25, 65)
    assert ph.write1ByteTxRx(port, 2, led, 1) == (sdk.COMM_SUCCESS, 0)
    assert ph.read1ByteTxRx(port, 2, led) == (1, sdk.COMM_SUCCESS, 0)
    assert ph.read1ByteTxRx(port, 1, led)[0] == 0  # other servo untouched
    gain, result, _ = ph.read2ByteTxRx(port, 1, 84) if emulator.protocol == 2 else \
        ph.read1ByteTxRx(port, 1, 28)
    assert result == sdk.COMM_SUCCESS and gain == (32 if emulator.protocol == 1 else 850)
    volts, _, _ = (ph.read1ByteTxRx(port, 3, 42) if emulator.protocol == 1
                   else ph.read2ByteTxRx(port, 3, 144))
    assert volts == 150  # the actuator's 15 V supply, 0.1 V units
    temperature, _, _ = ph.read1ByteTxRx(port, 3, addr(emulator, 43, 146))
    assert temperature == 35
    truth = emulator.truth()[2]
    assert truth["registers"]["led"] == 1
    ph.write1ByteTxRx(port, 2, led, 0)


def test_read_only_write_refused(emulator, link) -> None:
    position = addr(emulator, 36, 132)
    before = emulator.truth()[1]["registers"]["present_position"]
    result, error = link.ph.write2ByteTxRx(link.port, 1, position, 100)
    assert result == sdk.COMM_SUCCESS
    assert error == (0x08 if emulator.protocol == 1 else 7)  # P1 range bit, P2 access error
    assert abs(emulator.truth()[1]["registers"]["present_position"] - before) < 2


def test_sync_write_then_read_back(emulator, link) -> None:
    goal = addr(emulator, 30, 116)
    size = 2 if emulator.protocol == 1 else 4
    writer = sdk.GroupSyncWrite(link.port, link.ph, goal, size)
    wanted = {1: 2100, 2: 2000, 3: 1900}
    for dxl_id, value in wanted.items():
        assert writer.addParam(dxl_id, list(value.to_bytes(size, "little")))
    assert writer.txPacket() == sdk.COMM_SUCCESS

    # A sync write has no reply to wait on. A ping after it was the barrier, unchecked: on a
    # loaded CI run the registers still read 2048, 2048, 2048 after it (a ping timed out, or
    # read a late status of an earlier request of this module's shared port). The servos'
    # own registers are the event to wait for; the bound only catches a write never applied.
    def goals() -> dict[int, int]:
        truth = emulator.truth()
        return {i: truth[i]["registers"]["goal_position"] for i in wanted}

    wait_for(lambda: goals() == wanted, f"the sync write's goal positions {wanted}", TIMEOUT)
    truth = emulator.truth()
    assert truth[3]["goal"] == pytest.approx((1900 - 2048) / COUNTS)
    if emulator.protocol == 2:
        reader = sdk.GroupSyncRead(link.port, link.ph, goal, size)
        for dxl_id in wanted:
            reader.addParam(dxl_id)
        assert reader.txRxPacket() == sdk.COMM_SUCCESS
        got = {i: reader.getData(i, goal, size) for i in wanted}
        assert got == wanted


def test_bulk_read(emulator, link) -> None:
    state = addr(emulator, 36, 124)
    length = 8 if emulator.protocol == 1 else 23
    temperature = addr(emulator, 43, 146)
    if emulator.protocol == 1:
        # dynamixel-sdk 4.1.0's GroupBulkRead calls Protocol1PacketHandler.bulkReadTx with
        # an argument too many (TypeError): use the packet handler's calls directly.
        param = [length, 1, state, 1, 3, temperature]
        assert link.ph.bulkReadTx(link.port, param, len(param)) == sdk.COMM_SUCCESS
        block, result, error = link.ph.readRx(link.port, 1, length)
        assert (result, error, len(block)) == (sdk.COMM_SUCCESS, 0, length)
        data, result, _ = link.ph.readRx(link.port, 3, 1)
        assert result == sdk.COMM_SUCCESS and data == [35]
        assert block[-1] == 35  # the last byte of the state block is the temperature
        return
    reader = sdk.GroupBulkRead(link.port, link.ph)
    assert reader.addParam(1, state, length)
    assert reader.addParam(3, temperature, 1)
    assert reader.txRxPacket() == sdk.COMM_SUCCESS
    assert reader.isAvailable(1, state, length)
    assert reader.getData(3, temperature, 1) == 35
    assert reader.getData(1, temperature, 1) == 35  # the last byte of servo 1's state block


def test_fast_sync_and_bulk_read(emulator, link) -> None:
    if emulator.protocol == 1:
        pytest.skip("fast reads are protocol 2.0 instructions")
    reader = sdk.GroupSyncRead(link.port, link.ph, 124, 23)
    for dxl_id in (1, 2, 3):
        assert reader.addParam(dxl_id)
    assert reader.fastSyncRead() == sdk.COMM_SUCCESS
    truth = emulator.truth()
    for dxl_id in (1, 2, 3):
        assert reader.getData(dxl_id, 146, 1) == 35
        assert reader.getData(dxl_id, 144, 2) == truth[dxl_id]["registers"]["present_input_voltage"]
    bulk = sdk.GroupBulkRead(link.port, link.ph)
    assert bulk.addParam(1, 116, 4) and bulk.addParam(3, 146, 1)
    assert bulk.fastBulkRead() == sdk.COMM_SUCCESS
    assert bulk.getData(1, 116, 4) == truth[1]["registers"]["goal_position"]
    assert bulk.getData(3, 146, 1) == 35


def test_reg_write_and_action(emulator, link) -> None:
    led = addr(emulator, 25, 65)
    for dxl_id in (1, 2):
        assert link.ph.regWriteTxRx(link.port, dxl_id, led, 1, [1]) == (sdk.COMM_SUCCESS, 0)
    truth = emulator.truth()
    assert truth[1]["registers"]["led"] == 0
    assert link.ph.action(link.port, sdk.BROADCAST_ID) == sdk.COMM_SUCCESS
    # A round trip after the action: the bus has served it.
    assert link.ph.read1ByteTxRx(link.port, 1, led) == (1, sdk.COMM_SUCCESS, 0)
    truth = emulator.truth()
    assert truth[1]["registers"]["led"] == truth[2]["registers"]["led"] == 1
    assert truth[3]["registers"]["led"] == 0
    for dxl_id in (1, 2):
        link.ph.write1ByteTxRx(link.port, dxl_id, led, 0)


def _position_counts(emulator, link, dxl_id: int) -> int:
    address = addr(emulator, 36, 132)
    if emulator.protocol == 1:
        raw, result, _ = link.ph.read2ByteTxRx(link.port, dxl_id, address)
    else:
        raw, result, _ = link.ph.read4ByteTxRx(link.port, dxl_id, address)
    assert result == sdk.COMM_SUCCESS
    return raw


def test_physics_converges_and_present_position_matches_truth(emulator, link) -> None:
    ph, port = link.ph, link.port
    goal_address = addr(emulator, 30, 116)
    size = 2 if emulator.protocol == 1 else 4
    emulator.set_position(2, -0.3)
    goal = 0.4
    raw_goal = round(goal * COUNTS) + 2048
    write = ph.write2ByteTxRx if size == 2 else ph.write4ByteTxRx
    assert write(port, 2, goal_address, raw_goal) == (sdk.COMM_SUCCESS, 0)
    assert ph.write1ByteTxRx(port, 2, addr(emulator, 24, 64), 1) == (sdk.COMM_SUCCESS, 0)
    start_error = abs(emulator.truth()[2]["position"] - goal)
    wait_for(lambda: abs(emulator.truth()[2]["velocity"]) < 0.01
             and abs(emulator.truth()[2]["position"] - goal) < 0.25 * start_error,
             "the pendulum settling near its goal", TIMEOUT)  # real-time physics
    truth = emulator.truth()[2]
    assert truth["torque_enable"] and truth["goal"] == pytest.approx(raw_goal / COUNTS - 2048
                                                                    / COUNTS)
    # The P law leaves a steady error against gravity, far below the start error.
    assert abs(truth["position"] - goal) < 0.25 * start_error
    before = emulator.truth()[2]["position"]
    counts = _position_counts(emulator, link, 2)
    after = emulator.truth()[2]["position"]
    low, high = sorted((before * COUNTS + 2048, after * COUNTS + 2048))
    assert low - 1 <= counts <= high + 1
    ph.write1ByteTxRx(port, 2, addr(emulator, 24, 64), 0)


def test_released_pendulum_reports_negative_speed(emulator, link) -> None:
    """Falling back from +1 rad with the torque off: speed < 0 (P1: bit 10 set, P2: two's
    complement). The bus read races the swing, which reverses within a second (a loaded CI
    run read it rising: 65, positive), so it is repeated, from a new release each time,
    until a read lands in the fall; a register that never encodes a fall as negative fails
    after TIMEOUT."""
    def falling_read() -> bool:
        emulator.set_position(3, 1.0)
        wait_for(lambda: emulator.truth()[3]["velocity"] < -0.05, "the pendulum falling",
                 TIMEOUT)
        if emulator.protocol == 1:
            raw, result, _ = link.ph.read2ByteTxRx(link.port, 3, 38)
            return result == sdk.COMM_SUCCESS and bool(raw & 0x400) and raw & 0x3FF > 0
        raw, result, _ = link.ph.read4ByteTxRx(link.port, 3, 128)
        return result == sdk.COMM_SUCCESS and raw >= 1 << 31  # two's complement negative

    wait_for(falling_read, "a read of the speed register during the fall, negative", TIMEOUT)


def test_startup_error_quotes_stderr() -> None:
    with pytest.raises(EmulatorError, match="unknown servo model 'ax12'|invalid choice"):
        EmulatorProcess(servo_model="ax12")
