"""Every fault the emulator injects, observed from dynamixel-sdk; clean shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
import termios
import time

import dynamixel_sdk as sdk
import pytest
from dynamixel_sdk import port_handler
from serial import SerialException

from bam_drivers.emulators.client import EmulatorProcess
from bam_sim.common.errors import BamError

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

LATENCY_TIMER_MS = 60  # SDK status timeout = 2·60 + 2 = 122 ms: room for a busy machine


@pytest.fixture(autouse=True)
def _short_sdk_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(port_handler, "LATENCY_TIMER", LATENCY_TIMER_MS)


def open_port(path: str) -> sdk.PortHandler:
    port = sdk.PortHandler(path)
    assert port.openPort() and port.setBaudRate(1_000_000)
    return port


def _pings(ph, port, dxl_id: int) -> bool:
    try:
        return ph.ping(port, dxl_id)[1] == sdk.COMM_SUCCESS
    except IndexError:  # dynamixel-sdk reading a stale, shorter status
        return False


def answered(exchange, timeout: float = 10.0) -> tuple:
    """The first outcome of ``exchange`` (an SDK call) that is not a timeout.

    On a loaded machine a reply may come after the SDK stopped waiting; the
    exchange is then repeated, as a master would.
    """
    seen: list[tuple] = []

    def done() -> bool:
        try:
            seen.append(tuple(exchange()))
        except IndexError:  # dynamixel-sdk reading a stale, shorter status
            return False
        return seen[-1][1] != sdk.COMM_RX_TIMEOUT

    assert wait_for(done, timeout), f"no reply in {timeout} s"
    return seen[-1]


def wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture(scope="module", params=[1, 2], ids=["p1", "p2"])
def emulator(request):
    model = "mx64_p1" if request.param == 1 else "xm430_w350"
    with EmulatorProcess(protocol=request.param, servo_model=model, ids=(1, 2), seed=7) as emu:
        emu.protocol = request.param
        yield emu


@pytest.fixture
def link(emulator):
    port = open_port(emulator.port)
    yield port, sdk.PacketHandler(float(emulator.protocol))
    emulator.inject(drop=0.0, corrupt=0.0, latency=0.0, hardware_error={1: 0, 2: 0})
    if port.is_open:
        port.closePort()


def test_dropped_replies_time_out(emulator, link) -> None:
    port, ph = link
    emulator.inject(drop=1.0)
    assert ph.ping(port, 1)[1] == sdk.COMM_RX_TIMEOUT
    emulator.inject(drop=0.0)
    assert wait_for(lambda: _pings(ph, port, 1))  # a loaded machine may answer late once


def test_dropped_replies_are_counted(emulator, link) -> None:
    # Asserted on the emulator's counters, not on the SDK's timing: on a loaded machine a
    # reply the SDK stopped waiting for is a timeout there but a reply here, and a later
    # request may read it. A protocol 1.0 ping is two frames (ping, then a model-number
    # read); either reply dropped fails it.
    port, ph = link
    before = emulator.stats()
    emulator.inject(drop=0.5)
    results = [ph.ping(port, 2)[1] for _ in range(40)]

    def delta(key: str) -> int:
        return emulator.stats()[key] - before[key]

    assert wait_for(lambda: delta("received") >= 40
                    and delta("dropped") + delta("replies") == delta("received"))
    dropped, replies = delta("dropped"), delta("replies")
    assert 0.25 < dropped / (dropped + replies) < 0.75
    assert set(results) == {sdk.COMM_SUCCESS, sdk.COMM_RX_TIMEOUT}
    assert results.count(sdk.COMM_SUCCESS) <= replies


def test_corrupted_checksum(emulator, link) -> None:
    port, ph = link
    emulator.inject(corrupt=1.0)
    address = 43 if emulator.protocol == 1 else 146
    assert answered(lambda: ph.read1ByteTxRx(port, 1, address))[1] == sdk.COMM_RX_CORRUPT
    assert emulator.stats()["corrupted"] >= 1


def test_added_latency_beyond_the_sdk_timeout(emulator, link) -> None:
    port, ph = link
    replies = emulator.stats()["replies"]
    emulator.inject(latency=0.4)  # 400 ms > the 122 ms the SDK waits
    assert ph.ping(port, 1)[1] == sdk.COMM_RX_TIMEOUT
    emulator.inject(latency=0.0)
    # The late status still arrives. Once the emulator has written it, it is dropped from
    # the port: left there, the next exchange (of this test or the next) would read it as
    # its own reply (a protocol 2.0 status does not say which instruction it answers).
    assert wait_for(lambda: emulator.stats()["replies"] > replies)
    port.ser.reset_input_buffer()
    assert wait_for(lambda: _pings(ph, port, 1))


def test_hardware_error_bits(emulator, link) -> None:
    port, ph = link
    if emulator.protocol == 1:
        emulator.inject(hardware_error={1: 0x04})  # overheating
        assert answered(lambda: ph.ping(port, 1))[1:] == (sdk.COMM_SUCCESS, 0x04)
        assert answered(lambda: ph.ping(port, 2))[1:] == (sdk.COMM_SUCCESS, 0)
    else:
        emulator.inject(hardware_error={1: 0x20})  # overload
        status, result, error = answered(lambda: ph.read1ByteTxRx(port, 1, 70))
        assert result == sdk.COMM_SUCCESS and error == 0x80 and status == 0x20
        assert "Hardware error" in ph.getRxPacketError(error)
    assert emulator.truth()[1]["hardware_error"] in (0x04, 0x20)
    emulator.inject(hardware_error={1: 0})
    assert answered(lambda: ph.ping(port, 1))[1:] == (sdk.COMM_SUCCESS, 0)


def test_port_vanishes_and_returns_at_the_same_path(emulator, link) -> None:
    port, ph = link
    path = emulator.port
    assert wait_for(lambda: _pings(ph, port, 1))
    emulator.vanish()  # until restore(): no race with a slow test
    assert wait_for(lambda: not os.path.lexists(path))
    # The master side is closed: the old descriptor hangs up (pyserial's tcflush raises
    # termios.error, reads SerialException).
    with pytest.raises((SerialException, OSError, termios.error)):
        for _ in range(3):
            ph.ping(port, 1)
    port.closePort()
    emulator.restore()
    assert wait_for(lambda: os.path.exists(path))
    port2 = open_port(path)
    try:
        assert wait_for(lambda: _pings(ph, port2, 1))
    finally:
        port2.closePort()
    assert emulator.stats()["vanished"] >= 1


def test_faults_from_the_command_line() -> None:
    with EmulatorProcess(protocol=2, servo_model="mx64_p2", ids=(3,), drop=1.0,
                         hardware_error={3: 0x01}) as emu:
        port = open_port(emu.port)
        ph = sdk.PacketHandler(2.0)
        assert ph.ping(port, 3)[1] == sdk.COMM_RX_TIMEOUT
        emu.inject(drop=0.0)
        assert answered(lambda: ph.ping(port, 3))[1:] == (sdk.COMM_SUCCESS, 0x80)
        port.closePort()


def test_control_commands_refuse_bad_input(emulator) -> None:
    with pytest.raises(BamError, match="drop must be a probability"):
        emulator.inject(drop=2.0)
    with pytest.raises(BamError, match="no servo with id 99"):
        emulator.set_position(99, 0.0)
    with pytest.raises(BamError, match="next must be a list of one-shot faults, each one of "
                                       "drop, checksum, short, id, value, late; got .'gone'"):
        emulator.inject(one_shot=["gone"])
    assert emulator.stats()["faults"]["drop"] == 0.0


def test_clean_shutdown_removes_the_port() -> None:
    emu = EmulatorProcess(protocol=1, ids=(1,))
    path, control = emu.port, emu.control
    assert os.path.islink(path) and os.path.exists(control)
    assert emu.stop() == 0
    assert not os.path.lexists(path) and not os.path.exists(control)


def test_orphaned_emulator_stops_with_its_parent() -> None:
    parent = (
        "import os\n"
        "from bam_drivers.emulators.client import EmulatorProcess\n"
        "emu = EmulatorProcess()\n"
        "print(emu.pid, emu.port, flush=True)\n"
        "os._exit(0)\n"  # dies without stopping the emulator
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    pid, path = int(out[0]), out[1]

    def gone() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().split()[2] == "Z"
        except FileNotFoundError:
            return True

    assert wait_for(gone, timeout=30.0) and not os.path.lexists(path)


def test_physics_changes_mid_run_and_refuses_bad_names(emulator) -> None:
    start = emulator.set_physics()  # the set it started with
    try:
        jammed = emulator.set_physics(friction_base=500.0)
        assert jammed["friction_base"] == 500.0 and jammed["kt"] == start["kt"]
        # The stop-torque clip holds the joint where it is put, torque off or on.
        emulator.set_position(1, 0.7)
        ticks = emulator.stats()["physics_ticks"]
        assert wait_for(lambda: emulator.stats()["physics_ticks"] > ticks + 100)
        assert emulator.truth()[1]["position"] == pytest.approx(0.7, abs=1e-6)
        with pytest.raises(BamError, match="did you mean 'friction_base'"):
            emulator.set_physics(frction_base=1.0)
        assert emulator.set_physics() == start  # nothing given: the start set again
    finally:
        emulator.set_physics()
