"""The bus layer (no ROS) against the emulator: set-up errors, conversions, bytes, faults."""

from __future__ import annotations

import math
import os
import pty
import time

import pytest
from drivers_rig import SERIAL_BUSES, emulator_of

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.serial_servo.bus import (
    ATTEMPTS,
    CORRUPT,
    MODEL_READS,
    TIMEOUT,
    SerialServoBus,
    detect_latency_timer,
)
from bam_drivers.supervisor import ConfigurationError
from bam_sim.common.errors import BamError
from bam_testing.ros_graph import wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load


def open_bus(emulator, model, ids, bus_class=SerialServoBus, **kwargs) -> SerialServoBus:
    # A reply timeout of 0.2 s: the emulator answers in well under 1 ms, but a busy
    # machine may delay it (the pty's detected 1 ms would then fail reads at random); a
    # timeout here only catches a servo that does not answer.
    kwargs.setdefault("latency_timer_ms", 100.0)
    bus = bus_class.named(emulator.port, model, ids, **kwargs)
    bus.open()
    return bus


def serial_bus(name: str, ids, **options):
    """An emulator of the bus ``name`` (drivers_rig.SERIAL_BUSES; ``options`` override its
    options) and a function opening the driver's bus class on it."""
    emulator = emulator_of(name, ids=ids, **options)
    model, node = SERIAL_BUSES[name][0]["servo_model"], SERIAL_BUSES[name][1]
    return emulator, lambda ids, **kwargs: open_bus(emulator, model, ids, node.BUS, **kwargs)


def test_the_latency_timer_is_detected(tmp_path):
    master, slave = pty.openpty()
    try:
        assert detect_latency_timer(os.ttyname(slave)) == (1.0, "pseudo-terminal")
    finally:
        os.close(master)
        os.close(slave)
    assert detect_latency_timer(str(tmp_path / "none")) == (16.0, "the SDK's default")
    with EmulatorProcess() as emulator:
        assert open_bus(emulator, "mx64_p1", [1], latency_timer_ms=0.0).latency_timer_ms == 1.0
        bus = SerialServoBus.named(emulator.port, "mx64_p1", [1], latency_timer_ms=5.0)
        bus.open()
        assert (bus.latency_timer_ms, bus.latency_timer_source) == (5.0, "given")


def test_a_missing_port_is_a_clear_error(tmp_path):
    bus = SerialServoBus.named(str(tmp_path / "ttyNone"), "mx64_p1", [1])
    with pytest.raises(BamError, match=r"cannot open the Dynamixel port .*ttyNone.*No such "
                                       r"file.*check the port parameter"):
        bus.open()
    assert not bus.is_open and "No such file" in bus.port_error
    assert bus.read_state().port_error
    not_a_tty = tmp_path / "file"
    not_a_tty.write_text("")
    with pytest.raises(BamError, match="cannot open the Dynamixel port"):
        SerialServoBus.named(str(not_a_tty), "mx64_p1", [1]).open()


def test_ping_checks_ids_and_models():
    with EmulatorProcess(protocol=2, servo_model="xm430_w350", ids=(1, 2)) as emulator:
        assert open_bus(emulator, "xm430_w350", [1, 2]).ping() == {1: 1020, 2: 1020}
        with pytest.raises(BamError, match="model number 1020, not MX-64 .2.0. .311.; set "
                                           "servo_model:=xm430_w350"):
            open_bus(emulator, "mx64_p2", [1]).check_models()
        with pytest.raises(BamError, match="servo id 7 does not answer"):
            open_bus(emulator, "xm430_w350", [1, 7]).check_models()


def test_a_servo_of_another_model_is_refused_even_with_the_same_registers():
    # The MX-106's registers used here are the MX-64's: it would run, and be recorded
    # as the wrong servo.
    with EmulatorProcess(servo_model="mx64_p1") as emulator:
        open_bus(emulator, "mx64_p1", [1]).check_models()
        with pytest.raises(ConfigurationError, match="model number 310, not MX-106 .protocol "
                                                     r"1.0. .320.; set servo_model:=mx64_p1"):
            open_bus(emulator, "mx106_p1", [1]).check_models()


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
@pytest.mark.parametrize("n", [1, 3])
def test_bytes_per_cycle_match_the_packet_sizes(name, n):
    ids = list(range(1, n + 1))
    emulator, bus_on = serial_bus(name, ids)
    with emulator:
        bus = bus_on(ids)
        bus.write_torque(dict.fromkeys(ids, True))
        tx0, rx0 = bus.bytes()
        cycles = 20
        for _ in range(cycles):
            assert bus.read_state().ok
            assert bus.write_goals(dict.fromkeys(ids, 0.1))
        tx1, rx1 = bus.bytes()
    # Read request + goal sync write, and the status packets (module docstring).
    # Feetech: sync read 8 + n, replies 21n, goals 8 + 3n (bam_drivers.feetech.bus).
    tx, rx = {"protocol1": (7 + 3 * n + 8 + 3 * n, 40 * n),
              "protocol2": (14 + n + 14 + 5 * n, 34 * n),
              "feetech": (8 + n + 8 + 3 * n, 21 * n)}[name]
    assert ((tx1 - tx0) / cycles, (rx1 - rx0) / cycles) == (tx, rx)


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
def test_state_conversions_with_offsets_and_directions(name):
    # A light pendulum: with the torque off, friction alone slows the joints, so between
    # the state set and the truth read after the bus read, positions and velocities move
    # one way and the bus's reading lies between them, however long a busy machine takes.
    emulator, bus_on = serial_bus(name, (1, 2), supply_voltage=11.1, mass=0.001)
    with emulator:
        bus = bus_on([1, 2], offsets=[0.5, -0.25], directions=[1, -1])
        emulator.set_position(1, 0.7, velocity=1.5)
        emulator.set_position(2, -0.4, velocity=-2.0)
        result = bus.read_state()
        truth = emulator.truth()
    assert result.ok
    one, two = result.states[1], result.states[2]
    count, speed = 0.003, 0.05  # a position count (10-bit) and a velocity step, with margin

    def between(value: float, start: float, end: float, margin: float) -> bool:
        return min(start, end) - margin <= value <= max(start, end) + margin

    assert between(one.position, 0.7 + 0.5, truth[1]["position"] + 0.5, count)
    assert between(two.position, 0.4 - 0.25, -truth[2]["position"] - 0.25, count)
    assert between(one.velocity, 1.5, truth[1]["velocity"], speed)
    assert between(two.velocity, 2.0, -truth[2]["velocity"], speed)  # direction −1
    assert one.velocity > 0.5 and two.velocity > 0.5
    assert one.control == 0.0 and one.current == 0.0
    assert one.input_voltage == pytest.approx(11.1, abs=1e-12) and one.temperature == 35.0


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
def test_faults_are_classified(name):
    emulator, bus_on = serial_bus(name, (1, 2))
    with emulator:
        bus = bus_on([1, 2])
        emulator.inject(drop=1.0)
        assert bus.read_state().failures == {1: TIMEOUT, 2: TIMEOUT}
        emulator.inject(drop=0.0, corrupt=1.0)
        assert bus.read_state().failures == {1: CORRUPT, 2: CORRUPT}
        emulator.inject(corrupt=0.0, hardware_error={2: 0x24})
        result = bus.read_state()
        assert result.ok and result.states[1].hardware_error == 0
        assert result.states[2].hardware_error == 0x24
        assert bus.hardware_error_names(0x24) == ["overheating", "overload"]  # on every bus
        assert bus.counters[2].status_errors == 0  # alarms are not instruction errors
        counters = bus.counters
        assert (counters[1].timeouts, counters[1].corrupt, counters[1].reads) == (1, 1, 1)
        assert counters[2].hardware_error == 0x24


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
@pytest.mark.parametrize("kind", ["short", "checksum", "id"])
def test_a_reply_garbled_once_is_read_again_and_the_cycle_goes_on(name, kind):
    emulator, bus_on = serial_bus(name, (1, 2))
    with emulator:
        bus = bus_on([1, 2])
        emulator.inject(one_shot=[kind])  # the state block of servo 1, its first reply
        result = bus.read_state()
        truth = emulator.truth()  # the joints rest, torque off
        assert emulator.stats()["one_shot"] == 1
    assert result.ok, result.failures
    assert result.states[1].position == truth[1]["position"] == 0.0
    one = bus.counters[1]
    assert (one.rereads, one.reads, one.errors) == (1, 1, 0)
    # A truncated reply takes the head of the next one with it: servo 2 is read again too.
    assert bus.counters[2].rereads == (kind == "short")


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
def test_a_late_reply_does_not_answer_the_next_request(name):
    # The cause of the garbled replies seen under load: a reply that came after its
    # request timed out was read as the answer to the next request (a state block's
    # first byte as the servo's id, its first two as a model number, ...).
    emulator, bus_on = serial_bus(name, (1,))
    with emulator:
        bus = bus_on([1])
        replies = emulator.stats()["replies"]
        emulator.inject(one_shot=["late"])
        bus.read_state()  # it times out (unless this thread was held up longer still)
        wait_for(lambda: emulator.stats()["replies"] > replies, "the late reply", 30.0)
        assert bus.read_register(1, "id") == 1
        bus.check_models()
        assert bus.read_state().ok


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
def test_a_model_number_is_refused_only_when_the_servo_says_so_consistently(name):
    emulator, bus_on = serial_bus(name, (1,))
    with emulator:
        bus = bus_on([1])
        # Replies with a wrong value, checksum right, fewer than the reads that must agree.
        emulator.inject(one_shot=["value"] * (MODEL_READS - 1))
        bus.check_models()
        assert emulator.stats()["one_shot"] == MODEL_READS - 1
        emulator.inject(one_shot=["value"] * MODEL_READS)
        with pytest.raises(ConfigurationError, match=r"servo id 1 .* is model number \d+, not "):
            bus.check_models()


@pytest.mark.parametrize("name", sorted(SERIAL_BUSES))
def test_the_torque_off_confirmation_asks_again_for_lost_replies(name):
    emulator, bus_on = serial_bus(name, (1, 2))
    with emulator:
        bus = bus_on([1, 2])
        bus.write_torque({1: True, 2: True})
        lost = ATTEMPTS + 1  # more than one read of the confirmation asks
        emulator.inject(one_shot=["drop"] * lost)
        assert bus.torque_off(budget=30.0)  # the budget only catches a servo that never answers
        assert emulator.stats()["dropped"] == lost
        assert not any(t["torque_enable"] for t in emulator.truth().values())


def test_a_vanished_port_reopens_when_it_returns():
    with EmulatorProcess() as emulator:
        bus = open_bus(emulator, "mx64_p1", [1])
        emulator.vanish()  # until restore()
        deadline = time.monotonic() + 60.0  # catches a hang only
        while not (result := bus.read_state()).port_error:
            assert time.monotonic() < deadline, "the port never failed"
        assert not bus.is_open and "port lost" in result.port_error
        emulator.restore()
        while True:
            try:
                bus.open()
                bus.check_models()
                break
            except BamError:
                assert time.monotonic() < deadline, "the port never came back"
                time.sleep(0.05)
        assert bus.read_state().ok


def test_torque_off_is_confirmed():
    with EmulatorProcess(protocol=2, servo_model="xm430_w350", ids=(1, 2)) as emulator:
        bus = open_bus(emulator, "xm430_w350", [1, 2])
        bus.write_torque({1: True, 2: True})
        assert bus.torque_enabled() == {1: True, 2: True}
        assert bus.torque_off()
        assert not any(t["torque_enable"] for t in emulator.truth().values())


def test_an_xl320_bus_on_its_own_register_map():
    with EmulatorProcess(protocol=2, servo_model="xl320", ids=(1, 2),
                         physics="xl320:m4") as emulator:
        bus = open_bus(emulator, "xl320", [1, 2])
        bus.check_models()  # both are XL-320s (model number 350)
        assert bus.ping() == {1: 350, 2: 350}
        bus.write_register(2, "control_mode", 1)  # a servo left in wheel mode
        assert bus.ensure_position_mode() == ["servo id 2: control mode 1 -> 2 (position)"]
        emulator.set_position(1, -0.6)
        result = bus.read_state()
        assert result.ok and math.isnan(result.states[1].current)  # no current sense
        assert result.states[1].position == pytest.approx(-0.6, abs=0.006)  # 0.29° counts
        assert result.states[2].input_voltage == 7.5  # the supply of the XL-320's model
        count = math.radians(300) / 1023
        assert bus.goal_limits(0) == pytest.approx((-512 * count, 511 * count), rel=1e-12)
        assert bus.write_gains({1: 64.0, 2: 8.0})
        assert bus.read_register(1, "p_gain") == 64 and bus.read_register(2, "p_gain") == 8
        assert bus.write_goals({1: 0.2})  # a sync write has no reply: read it back on the bus
        assert bus.read_register(1, "goal_position") == round(0.2 / count) + 512
        assert emulator.truth()[1]["goal"] == pytest.approx(0.2, abs=count / 2)
        bus.write_torque({1: True, 2: True})
        assert bus.torque_off()
        assert not any(t["torque_enable"] for t in emulator.truth().values())


def test_an_xl330_bus_in_si_units_with_its_own_gain():
    with EmulatorProcess(protocol=2, servo_model="xl330_m288", ids=(1, 2),
                         physics="xl330:m4") as emulator:
        bus = open_bus(emulator, "xl330_m288", [1, 2])
        assert bus.ping() == {1: 1200, 2: 1200}
        emulator.set_position(1, 0.3)
        result = bus.read_state()
        assert result.ok
        assert result.states[1].position == pytest.approx(0.3, abs=0.01)
        assert result.states[2].input_voltage == 7.5  # the supply of the XL330's model
        assert bus.write_gains({1: 800.0, 2: 100.0})  # the model's kp is the register
        assert bus.read_register(1, "p_gain") == 800 and bus.read_register(2, "p_gain") == 100
        bus.write_torque({1: True, 2: True})
        assert bus.torque_off()
        assert not any(t["torque_enable"] for t in emulator.truth().values())


def test_an_xl330_in_current_based_position_mode_holds_its_goal_current():
    # A 0.2 kg load at 0.15 m (0.29 N·m of gravity at horizontal) and Goal Current 0.3 A
    # (k_t·0.3 ≈ 0.12 N·m): in mode 5 the servo stalls near 0.5 rad, short of a goal 1.5
    # rad up, at the clip; back in position mode (3) the voltage law lifts it near its goal.
    with EmulatorProcess(protocol=2, servo_model="xl330_m288", physics="xl330:m4", mass=0.2,
                         length=0.15) as emulator:
        bus = open_bus(emulator, "xl330_m288", [1])
        assert bus.ensure_position_mode(0.3) == [
            "servo id 1: operating mode 3 -> 5 (current-based position)"]
        assert bus.read_register(1, "goal_current") == 300  # mA
        assert emulator.truth()[1]["actuator"] == "xl330_current"
        assert bus.write_gains({1: 400.0}) and bus.write_goals({1: 1.5})
        bus.write_torque({1: True})

        def stalled(limit: float) -> bool:
            state = bus.read_state().states[1]
            return abs(state.velocity) < 0.05 and abs(state.current - limit) < 0.0015

        wait_for(lambda: stalled(0.3), timeout=30.0, what="a stall at Goal Current")
        truth = emulator.truth()[1]
        assert truth["control"] == pytest.approx(0.3) and truth["position"] < 0.8
        with pytest.raises(BamError, match="Current Limit holds 1.75 A, below the 2 A"):
            bus.ensure_position_mode(2.0)
        assert bus.ensure_position_mode() == ["servo id 1: operating mode 5 -> 3 (position)"]
        assert emulator.truth()[1]["actuator"] == "xl330"
        bus.write_torque({1: True})  # the mode change turned it off
        # Its hold: duty 1.15/rad·(1.5 − q) balancing m·g·l·sin q at q ≈ 1.2 rad.
        wait_for(lambda: emulator.truth()[1]["position"] > 1.0, timeout=30.0,
                 what="the position law lifting the load toward its goal")
