"""The Dynamixel driver node against the emulator: units, commands, several servos, safety.

Its Feetech binding (``feetech``: the same node on the Feetech bus, STS3215
servos in the emulator) is checked at the end: units, goals and gains, several
servos, torque off, bad parameters.

Each test starts an emulator process (bam_drivers.emulators.serial_servo_emulator: servos behind a
pseudo-terminal, physics of bam_sim) and a SerialServoNode on its port, and
compares what the node publishes with the emulator's ground truth.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticStatus
from drivers_rig import EMULATOR_PRIORITY, MODELS, Rig, emulator_of, settle, values

from bam_drivers.dynamixel.control_table import TABLES
from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.feetech.control_table import CURRENT_UNIT as FEETECH_CURRENT_UNIT
from bam_drivers.nodes.driver_node import mean_kt
from bam_drivers.nodes.feetech_node import FeetechNode
from bam_drivers.nodes.serial_servo_node import SerialServoNode
from bam_drivers.serial_servo.control_table import RAD_PER_COUNT
from bam_msgs.msg import BenchInfo
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator_file import actuator_document
from bam_sim.models.servo.actuators import get_actuator
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import closing, wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

COUNT = RAD_PER_COUNT  # rad, one position count


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


@pytest.fixture
def rigs(context):
    with closing(lambda port, **params: Rig(context, port, **params)) as make:
        yield make


@pytest.mark.parametrize("protocol", [1, 2])
def test_state_in_si_units_matches_the_emulator(rigs, protocol):
    model = MODELS[protocol]
    with EmulatorProcess(protocol=protocol, servo_model=model, supply_voltage=14.8,
                         temperature=41.0) as emulator:
        rig = rigs(emulator.port, servo_model=model, offsets=[0.2], directions=[-1],
                   mass=1.0, length=0.15)
        rig.wait_ready()
        rig.command(["pendulum"], goals=[0.8], enables=[True], gains=[16.0])
        rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on")
        truth = settle(rig, emulator)[1]
        time.sleep(0.05)
        _, joint = rig.joint_states[-1]
        _, states = rig.actuator_states[-1]
    # Commands reach the servo through offset and direction: θ_goal = (0.8 − 0.2)·(−1).
    assert truth["goal"] == pytest.approx(-0.6, abs=COUNT)
    assert truth["gain"] == 16.0 and truth["torque_enable"]
    # q = −θ + 0.2, at rest under gravity (the arm hangs off its goal).
    assert joint.name == ["pendulum"]
    assert joint.position[0] == pytest.approx(-truth["position"] + 0.2, abs=2 * COUNT)
    assert abs(truth["position"] + 0.6) > 0.01  # not trivially at the goal
    assert joint.velocity[0] == pytest.approx(0.0, abs=0.05)
    state = states.actuators[0]
    assert (state.name, state.control_unit) == ("pendulum", "V")
    assert state.goal_position == 0.8 and state.torque_enable and state.gain == 16.0
    assert state.input_voltage == pytest.approx(14.8, abs=1e-9)
    assert state.temperature == 41.0
    assert state.error_flags == 0
    # Holding against gravity takes a voltage; duty quantum 1/1000 (P1) or 1/885 (P2).
    assert abs(truth["control"]) > 0.3
    assert state.control == pytest.approx(-truth["control"], abs=3 * 14.8 / 885)
    # Current: 4.5 mA (P1) / 2.69 mA (P2) per count.
    assert state.current == pytest.approx(-truth["current"], abs=0.01)
    # τ_m = k_t·I with the mean published k_t (within 2.5 % of the emulator's).
    kt = mean_kt(get_actuator("mx64"))
    assert state.motor_torque == pytest.approx(kt * state.current, rel=1e-12)
    assert joint.effort[0] == state.motor_torque
    assert state.motor_torque == pytest.approx(-truth["motor_torque"], rel=0.05, abs=0.01)
    info = rig.bench_info[-1]
    assert info.source == BenchInfo.SOURCE_HARDWARE and info.actuator == "mx64"
    assert info.supply_voltage == pytest.approx(14.8) and info.control_rate == 200.0
    assert (info.joint_name, info.mass, info.length, info.control_unit) == \
        ("pendulum", 1.0, 0.15, "V")
    assert math.isnan(info.damping)
    assert info.unit == "dynamixel id 1"  # the recording names its unit (no serial on a bus)


@pytest.mark.parametrize("protocol", [1, 2])
def test_goals_and_gains_are_applied(rigs, protocol):
    model = MODELS[protocol]
    table = TABLES[model]
    with EmulatorProcess(protocol=protocol, servo_model=model) as emulator:
        rig = rigs(emulator.port, servo_model=model)
        rig.wait_ready()
        rig.command(goals=[0.3], enables=[True], gains=[12.0])
        # The driver writes goal and gain before it turns the torque on, possibly
        # over several bus cycles: wait for the last of them, then check them all.
        rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on")
        truth = emulator.truth()[1]
        assert truth["goal"] == pytest.approx(0.3, abs=COUNT) and truth["gain"] == 12.0
        assert truth["registers"]["p_gain"] == 12 * table.gain_per_kp
        rig.position_command(-0.4)
        rig.wait_for(lambda: abs(emulator.truth()[1]["goal"] + 0.4) <= COUNT, "goal -0.4")
        rig.command(gains=[32.0])
        rig.wait_for(lambda: emulator.truth()[1]["gain"] == 32.0, "gain 32")
        rig.wait_for(lambda: abs(emulator.truth()[1]["position"] + 0.4) < 0.05, "the move")
        assert emulator.truth()[1]["registers"]["goal_position"] == \
            round(-0.4 / COUNT) + 2048
        rig.command(enables=[False])
        rig.wait_for(lambda: not emulator.truth()[1]["torque_enable"], "torque off")


@pytest.mark.parametrize("protocol", [1, 2])
def test_several_servos_on_one_bus(rigs, protocol):
    model = MODELS[protocol]
    ids = [3, 1, 2]
    with EmulatorProcess(protocol=protocol, servo_model=model, ids=ids) as emulator:
        rig = rigs(emulator.port, servo_model=model, ids=ids, joint_names=["a", "b", "c"],
                   offsets=[0.0, 0.1, 0.0], directions=[1, 1, -1])
        rig.wait_ready()
        # Names select joints in any order; "b" (id 1) is left alone.
        rig.command(["c", "a"], goals=[0.25, -0.35], enables=[True, True])
        rig.wait_for(lambda: emulator.truth()[2]["torque_enable"]
                     and emulator.truth()[3]["torque_enable"], "torque on of ids 2, 3")
        truth = emulator.truth()
        assert truth[2]["goal"] == pytest.approx(-0.25, abs=COUNT)  # direction -1
        assert truth[3]["goal"] == pytest.approx(-0.35, abs=COUNT)
        assert not truth[1]["torque_enable"]
        truth = settle(rig, emulator)  # a and c reach their goals
        _, joint = rig.joint_states[-1]
        _, states = rig.actuator_states[-1]
    assert list(joint.name) == ["a", "b", "c"]
    # q = direction·θ + offset per joint (b hangs at rest, torque off).
    assert joint.position[1] == pytest.approx(truth[1]["position"] + 0.1, abs=0.01)
    assert joint.position[0] == pytest.approx(truth[3]["position"], abs=0.01)
    assert joint.position[2] == pytest.approx(-truth[2]["position"], abs=0.01)
    assert [s.name for s in states.actuators] == ["a", "b", "c"]
    assert [s.torque_enable for s in states.actuators] == [True, False, True]
    assert states.actuators[0].goal_position == -0.35
    assert states.actuators[2].goal_position == 0.25


def test_torque_off_when_the_node_is_destroyed(rigs, context):
    with EmulatorProcess() as emulator:
        rig = rigs(emulator.port, torque_enable_on_start=True)
        rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on at start")
        # Holding the position it started at.
        assert emulator.truth()[1]["goal"] == pytest.approx(0.0, abs=COUNT)
        rig.close()
        assert not emulator.truth()[1]["torque_enable"]
        assert emulator.truth()[1]["registers"]["torque_enable"] == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize(("module", "bus"), [("serial_servo_node", "protocol1"),
                                             ("feetech_node", "feetech")])
def test_a_signal_turns_the_torque_off(module, bus, signum):
    """The `dynamixel` and `feetech` executables: SIGINT and SIGTERM end them with the
    torque off and exit code 128 + the signal."""
    with emulator_of(bus) as emulator:
        env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
               "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        process = subprocess.Popen(
            [sys.executable, "-m", f"bam_drivers.nodes.{module}", "--ros-args",
             "-p", f"port:={emulator.port}",
             "-p", "torque_enable_on_start:=true", "-p", "command_timeout:=0.0"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on", 20.0)
            process.send_signal(signum)
            output, _ = process.communicate(timeout=20.0)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 128 + signum, output
        assert not emulator.truth()[1]["torque_enable"]
        assert "torque off on every servo" in output


def enabled_since(rig: Rig, at: float) -> bool:
    """A state published after ``at`` (time.monotonic()) says the torque is on: the cycle
    that wrote it (the torque may be off again since, 0.3 s later: a busy host may look
    later than that)."""
    return any(s.actuators[0].torque_enable for when, s in rig.actuator_states if when > at)


def test_watchdog_releases_the_torque_on_stale_commands(rigs):
    with EmulatorProcess() as emulator:
        rig = rigs(emulator.port, command_timeout=0.3)
        rig.wait_ready()
        at = time.monotonic()
        rig.command(goals=[0.2], enables=[True])
        rig.wait_for(lambda: enabled_since(rig, at), "torque on")
        assert emulator.truth()[1]["torque_ever_enabled"]
        # No more commands: torque off after 0.3 s.
        rig.wait_for(lambda: not emulator.truth()[1]["torque_enable"], "watchdog torque off")
        assert rig.node.watchdog_tripped
        at = time.monotonic()
        rig.wait_for(lambda: rig.status(": bus", at) is not None, "diagnostics")
        assert values(rig.status(": bus", at))["watchdog"] == "tripped: torque off"
        assert not rig.actuator_states[-1][1].actuators[0].torque_enable
        # The next command (a plain position command) turns it back on.
        back = time.monotonic()
        rig.position_command(0.1)
        rig.wait_for(lambda: enabled_since(rig, back), "torque back on")
        assert emulator.truth()[1]["goal"] == pytest.approx(0.1, abs=COUNT)
        rig.wait_for(lambda: not emulator.truth()[1]["torque_enable"], "tripped again")


def test_bad_commands_are_rejected_and_logged_once(rigs):
    with EmulatorProcess() as emulator:
        rig = rigs(emulator.port)
        rig.wait_ready()
        rig.command(goals=[0.1], enables=[True])
        rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on")
        for _ in range(3):
            rig.command(goals=[4.0])  # beyond the 12-bit range, ±π
        rig.command(gains=[300.0])  # the P1 P-gain register holds 254
        rig.command(["elbow"], goals=[0.0])
        rig.wait_for(lambda: sum(rig.node.rejected_commands.values()) == 5, "rejections")
        assert rig.node.rejected_commands["commands/value"] == 4
        assert rig.node.rejected_commands["commands/joint"] == 1
        assert rig.node.logged_command_errors == ["commands/value", "commands/joint"]
        assert emulator.truth()[1]["goal"] == pytest.approx(0.1, abs=COUNT)
        assert emulator.truth()[1]["gain"] == 8.0  # the mx64's default kp, unchanged


def test_starts_before_the_port_exists_and_connects(rigs, tmp_path):
    port = str(tmp_path / "ttyDXL")
    rig = rigs(port, connect_timeout=0.0)  # however long the emulator takes to start
    at = time.monotonic()
    rig.wait_for(lambda: rig.status(": bus", at) is not None, "diagnostics")
    bus = rig.status(": bus", at)
    assert bus.level == DiagnosticStatus.ERROR and "No such file" in bus.message
    assert rig.joint_states == []
    with EmulatorProcess(port=port, priority=EMULATOR_PRIORITY):  # diagnostics windows OK
        rig.wait_ready()
        at = time.monotonic()
        rig.wait_for(lambda: (s := rig.status("(id 1)", at)) is not None
                     and s.level == DiagnosticStatus.OK, "servo OK")


def test_a_servo_of_another_model_is_refused_and_reported(rigs):
    with EmulatorProcess(protocol=2, servo_model="xm430_w350") as emulator:
        rig = rigs(emulator.port, servo_model="mx64_p2")
        assert rig.node.failed.wait(rig.timeout)  # a configuration error: the driver stops
        assert "model number 1020" in str(rig.node.failure)
        at = time.monotonic()
        rig.wait_for(lambda: rig.status(": bus", at) is not None, "diagnostics")
        message = rig.status(": bus", at).message
        assert "model number 1020" in message and "servo_model:=xm430_w350" in message
        assert rig.joint_states == []


@pytest.mark.parametrize(("params", "message"), [
    ({"joint_names": ["a", "b"]}, "joint_names must hold 1"),
    ({"servo_model": "mx64_p1", "protocol": 2}, "speaks protocol 1"),
    ({"servo_model": "ax12"}, "unknown servo model 'ax12'"),
    ({"actuator": "erob80_50"}, "actuator erob80_50 is not a servo of the Dynamixel driver; "
                                "give one of mx64, mx106, xl320, xl330"),
    ({"ids": [1, 1]}, "ids must differ"),
    ({"ids": []}, "ids is empty"),
    ({"directions": [2]}, "directions must hold 1 values"),
    ({"baud_rate": 250000}, "baud rate 250000 is not supported"),
    ({"baud_rate": 1234}, r"baud_rate must be in \[9600, 4.5e\+06\], got 1234"),
    ({"gain": 300.0}, r"gain 300.0 is outside \[0, 254\]"),
    ({"mass": 1}, "write doubles with a decimal point"),
    # The Feetech driver (its own tables, actuators and baud rates):
    ({"node": FeetechNode, "servo_model": "mx64_p1"},
     "unknown servo model 'mx64_p1'; known: sts3215, sts3215_12v"),
    ({"node": FeetechNode, "actuator": "mx64"},
     "actuator mx64 is not a servo of the Feetech driver; give one of sts3215, sts3215_12v"),
    ({"node": FeetechNode, "gain": 300.0}, r"gain 300.0 is outside \[0, 254\]"),
    ({"node": FeetechNode, "actuator_file": "/nonexistent/servo.yaml"},
     "actuator file /nonexistent/servo.yaml does not exist"),
    ({"node": FeetechNode, "baud_rate": 2000000},
     r"baud_rate must be in \[9600, 1e\+06\], got 2000000"),
])
def test_bad_parameters_are_one_line_errors(context, params, message):
    from rclpy.parameter import Parameter

    params = {"port": "/nonexistent", **params}
    node = params.pop("node", SerialServoNode)
    with pytest.raises(BamError, match=message):
        node(context=context, parameter_overrides=[
            Parameter(k, value=v) for k, v in params.items()])


# -- the same node on the Feetech bus (STS3215, published M1 in the emulator) -----------

def test_feetech_node_publishes_si_state_and_applies_goals_and_gains(rigs):
    with emulator_of("feetech", supply_voltage=7.4, temperature=41.0, length=0.15) as emu:
        rig = rigs(emu.port, node=FeetechNode, offsets=[0.2], directions=[-1], mass=0.35,
                   length=0.15)
        rig.wait_ready()
        rig.command(["pendulum"], goals=[0.8], enables=[True], gains=[32.0])
        rig.wait_for(lambda: emu.truth()[1]["torque_enable"], "torque on")
        truth = settle(rig, emu)[1]
        _, joint = rig.joint_states[-1]
        _, states = rig.actuator_states[-1]
    # θ_goal = (0.8 − 0.2)·(−1); kp is the P coefficient register itself.
    assert truth["goal"] == pytest.approx(-0.6, abs=COUNT)
    assert truth["gain"] == 32.0 and truth["registers"]["p_gain"] == 32
    assert joint.position[0] == pytest.approx(-truth["position"] + 0.2, abs=2 * COUNT)
    assert abs(truth["position"] + 0.6) > 0.005  # holding against gravity, off its goal
    state = states.actuators[0]
    assert (state.control_unit, state.gain, state.torque_enable) == ("V", 32.0, True)
    assert state.input_voltage == pytest.approx(7.4, abs=1e-9) and state.temperature == 41.0
    # Duty in 0.1 % of the supply; current in 6.5 mA counts (sign bit 15).
    assert abs(truth["control"]) > 0.1
    assert state.control == pytest.approx(-truth["control"], abs=2e-3 * 7.4)
    assert state.current == pytest.approx(-truth["current"], abs=2 * FEETECH_CURRENT_UNIT)
    assert state.motor_torque == pytest.approx(mean_kt(get_actuator("sts3215")) * state.current,
                                               rel=1e-12)


def test_feetech_node_runs_a_servo_declared_in_an_actuator_file(rigs, tmp_path):
    """A servo the project does not ship: its file names the Feetech driver and the STS3215
    control table, which the node then uses by default (no servo_model given)."""
    doc = actuator_document(get_actuator("sts3215"))
    doc.update(name="bench_sts_copy", title="An STS3215 declared by its user")
    path = tmp_path / "bench_sts_copy.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    with emulator_of("feetech", supply_voltage=7.4, length=0.15) as emu:
        rig = rigs(emu.port, node=FeetechNode, actuator="bench_sts_copy",
                   actuator_file=str(path), mass=0.35, length=0.15)
        rig.wait_ready()
        rig.command(["pendulum"], goals=[0.5], enables=[True], gains=[32.0])
        rig.wait_for(lambda: emu.truth()[1]["torque_enable"], "torque on")
        truth = settle(rig, emu)[1]
        _, states = rig.actuator_states[-1]
    assert truth["goal"] == pytest.approx(0.5, abs=COUNT)
    assert states.actuators[0].gain == 32.0
    declared = get_actuator("bench_sts_copy")
    assert declared.control_table == "sts3215" and declared.source == str(path.resolve())


def test_a_current_law_actuator_runs_its_servo_in_current_based_position_mode(rigs):
    """xl330_current: the node writes operating mode 5 and Goal Current at the law's clip,
    and publishes the present current as the control (A)."""
    with EmulatorProcess(protocol=2, servo_model="xl330_m288", physics="xl330:m4",
                         mass=0.2, length=0.15) as emulator:
        rig = rigs(emulator.port, actuator="xl330_current", mass=0.2, length=0.15)
        rig.wait_ready()
        rig.command(["pendulum"], goals=[0.6], enables=[True], gains=[400.0])
        rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on")
        truth = settle(rig, emulator)[1]
        time.sleep(0.05)
        _, states = rig.actuator_states[-1]
    registers = truth["registers"]
    assert (registers["operating_mode"], registers["goal_current"]) == (5, 1750)
    assert truth["actuator"] == "xl330_current"
    state = states.actuators[0]
    assert state.control_unit == "A" and rig.bench_info[-1].control_unit == "A"
    # Holding against gravity takes a current; 1 mA per count.
    assert abs(truth["control"]) > 0.1
    assert state.control == pytest.approx(truth["current"], abs=0.002)
    assert state.control == state.current


def test_feetech_node_drives_several_servos_and_releases_them(rigs):
    ids = [3, 1, 2]
    with emulator_of("feetech", ids=ids) as emu:
        rig = rigs(emu.port, node=FeetechNode, ids=ids, joint_names=["a", "b", "c"],
                   directions=[1, 1, -1])
        rig.wait_ready()
        rig.command(["c", "a"], goals=[0.25, -0.35], enables=[True, True])
        rig.wait_for(lambda: emu.truth()[2]["torque_enable"] and emu.truth()[3]["torque_enable"],
                     "torque on of ids 2, 3")
        truth = emu.truth()
        assert truth[2]["goal"] == pytest.approx(-0.25, abs=COUNT)  # direction -1
        assert truth[3]["goal"] == pytest.approx(-0.35, abs=COUNT)
        assert not truth[1]["torque_enable"]
        truth = settle(rig, emu)
        _, joint = rig.joint_states[-1]
        assert list(joint.name) == ["a", "b", "c"]
        assert joint.position[0] == pytest.approx(truth[3]["position"], abs=0.01)
        assert joint.position[2] == pytest.approx(-truth[2]["position"], abs=0.01)
        rig.close()  # the node stops: torque off on every servo, read back
        assert not any(t["torque_enable"] for t in emu.truth().values())

