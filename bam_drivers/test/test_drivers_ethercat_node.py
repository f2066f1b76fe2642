"""The eRob driver node against the EtherCAT emulator: units, CST torque, lines of two, shutdown.

Each test starts an emulator process (bam_drivers.emulators.ethercat_emulator:
eRob drives behind a veth pair, bam_sim physics) and an ErobNode on the
master's end, and compares what the node publishes with the emulator's
ground truth.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import pytest
from ethercat_rig import ErobRig, emulator, values, wait_truth
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray

from bam_drivers.ethercat import drive_models as dm
from bam_drivers.nodes.driver_node import mean_kt
from bam_drivers.nodes.erob_node import ErobNode
from bam_msgs.msg import ActuatorState, BenchInfo
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import closing, executable_error, stamp_ns

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

COUNT = 2.0 * math.pi / (1 << 19)  # rad, one encoder increment


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


@pytest.fixture
def rigs(context):
    with closing(lambda interface, **params: ErobRig(context, interface, **params)) as make:
        yield make


def same_cycle(rig: ErobRig):
    """The latest joint state and actuator states of one cycle (same stamp)."""
    def found():
        if not rig.actuator_states:
            return None
        _, states = rig.actuator_states[-1]
        for _, joint in reversed(rig.joint_states):
            if stamp_ns(joint) == stamp_ns(states):
                return joint, states
        return None

    rig.wait_for(lambda: found() is not None, "a published cycle")
    return found()


def cycles_by_stamp(rig: ErobRig) -> list[tuple]:
    """Every published cycle both topics delivered, as (joint state, actuator states) pairs
    matched by stamp: the probe's two subscriptions may match the node at different times
    (a loaded host), so the n-th message of one is not the n-th of the other."""
    joints = {stamp_ns(joint): joint for _, joint in list(rig.joint_states)}
    return [(joints[stamp_ns(states)], states) for _, states in list(rig.actuator_states)
            if stamp_ns(states) in joints]


def at_rest(truth: dict) -> bool:
    return all(abs(t["velocity"]) < 1e-6 for t in truth.values())


def published_at_rest(rig: ErobRig, emu, agree) -> tuple:
    """Once every joint rests: the truth and a cycle published after it that ``agree(joint,
    states, truth)`` (messages may reach the probe late on a loaded host)."""
    deadline = time.monotonic() + rig.timeout
    while True:
        truth = emu.truth()
        at = time.monotonic()
        if at_rest(truth):
            rig.wait_for(lambda at=at: rig.states_since(at) > 0
                         and rig.actuator_states[-1][0] > at, "a cycle published at rest")
            joint, states = same_cycle(rig)
            if agree(joint, states, truth):
                return joint, states, truth
        assert time.monotonic() < deadline, f"no published cycle agrees with {truth}"
        time.sleep(0.01)


def test_state_in_si_units_matches_the_emulator(rigs):
    # Torque off, the arm rests where static friction holds it: the truth does not move.
    with emulator(mass=3.1, positions=(0.2,), temperature=41.0) as emu:
        rig = rigs(emu.interface, offsets=[0.1], directions=[-1], mass=3.1, length=0.5)
        rig.wait_ready()
        truth = emu.truth()[1]
        joint, states = same_cycle(rig)
        rig.wait_for(lambda: rig.bench_info, "bench info")
    assert truth["velocity"] == 0.0 and truth["position"] == 0.2
    assert joint.name == ["pendulum"]
    assert joint.position[0] == pytest.approx(-0.2 + 0.1, abs=COUNT)  # q = −θ + offset
    assert joint.velocity[0] == 0.0 and joint.effort[0] == 0.0
    state = states.actuators[0]
    assert (state.name, state.control_unit) == ("pendulum", ActuatorState.CONTROL_UNIT_AMPERE)
    assert not state.torque_enable and state.current == 0.0 and state.control == 0.0
    assert state.temperature == 41.0 and state.input_voltage == 48.0
    assert state.error_flags == 0 and state.goal_position == joint.position[0]
    info = rig.bench_info[-1]
    assert (info.actuator, info.source, info.control_unit) == \
        ("erob80_100", BenchInfo.SOURCE_HARDWARE, ActuatorState.CONTROL_UNIT_AMPERE)
    assert (info.damping, info.supply_voltage, info.mass, info.length) == (2.0, 48.0, 3.1, 0.5)
    assert info.unit == "erob serial 1000"  # the emulated drive's identity 0x1018:4


def test_cst_current_law_holds_the_goal_and_torque_goes_off_at_shutdown(rigs):
    with emulator(mass=3.1) as emu:
        rig = rigs(emu.interface)
        rig.wait_ready()
        rig.command(["pendulum"], goals=[0.5], enables=[True], gains=[50.0])
        wait_truth(emu, lambda t: t[1]["torque_enable"] and abs(t[1]["position"] - 0.5) < 0.05,
                   "holding near the goal")
        joint, states, truth = published_at_rest(
            rig, emu, lambda j, s, t: abs(j.position[0] - t[1]["position"]) < COUNT
            and s.actuators[0].torque_enable)
        frames = emu.frames(1)
        cycles = cycles_by_stamp(rig)
        drive = rig.node.supervisor.bus.drives[0]
        state = states.actuators[0]
        q, dq = joint.position[0], joint.velocity[0]
        # The paper's law, I = clip(kp·(q_d − q) − d·√kp·q̇, ±I_heat), d = 2 (eRob80:100).
        assert state.control == pytest.approx(50.0 * (0.5 - q) - 2.0 * math.sqrt(50.0) * dq,
                                              abs=1e-12)
        assert state.torque_enable and state.gain == 50.0 and state.goal_position == 0.5
        # Holding the arm against gravity takes a current, in cyclic synchronous torque.
        assert truth[1]["control"] > 0.5 and truth[1]["mode"] == 10
        kt = mean_kt(get_actuator("erob80_100"))
        assert state.motor_torque == pytest.approx(kt * state.current)
        # Every cycle published while the drive logged its frames, frame by frame: whatever
        # the timing (frames lost, the loop late), what the driver read is what the drive
        # sent, and the law's current on those readings is what the drive got next.
        checked = sum(law_reached_the_drive(joint_msg, states_msg, frames, drive)
                      for joint_msg, states_msg in cycles)
        assert checked > 100, f"{checked} cycles within {len(frames)} frames"
        rig.close()
        truth = emu.truth()[1]
    assert truth["al_state"] == "SAFE-OP" and not truth["torque_enable"]
    assert truth["cia402_state"] == "switched on"  # operation disabled, then SAFE-OP


def law_reached_the_drive(joint, states, frames: list[dict], drive) -> bool:
    """Check one published cycle against the drive's frame log (False: not within it).

    Matched by value, not by time (a lost frame or a late loop moves a cycle away from the
    frame after its stamp): what the cycle read is a frame the drive sent, exactly, and an
    exchange within the next few carried the target torque the cycle computed. Exact
    where the values are the wire's, within half a count against the drive's currents.
    """
    stamp = stamp_ns(joint) * 1e-9
    state = states.actuators[0]
    if stamp_ns(states) != stamp_ns(joint) or not state.torque_enable or state.control == 0.0:
        return False
    if len(frames) < 3 or not frames[1]["time"] < stamp < frames[-2]["time"]:
        return False  # before the log (the frame that came first may be older) or its end
    model, config = drive.spec.model, drive.config
    reading = (joint.position[0], joint.velocity[0], state.current)

    def decoded(frame: dict) -> tuple[float, float, float]:
        return (model.position(frame["position"]), model.velocity(frame["velocity"]),
                dm.current_from_permille(frame["current"], config.rated_current_ma))

    reads = [k for k in range(len(frames) - 1) if decoded(frames[k]) == reading]
    assert reads, f"the driver published a reading no frame carried: {reading} at {stamp}"
    target = dm.torque_permille(state.control, model.motor_kt, config.rated_torque_mnm)
    sent = next(((k, j) for k in reads for j in range(k + 1, min(k + 4, len(frames)))
                 if frames[j]["target_torque"] == target), None)
    assert sent is not None, f"no exchange after the reading carried {target} ({state.control} A)"
    read, next_frame = frames[sent[0]], frames[sent[1]]
    current_count = config.rated_current_ma / 1.0e6  # A, 6 mA
    assert abs(state.current - read["motor_current"]) <= current_count / 2 + 1e-12
    torque_count = config.rated_torque_mnm / 1.0e6 / model.motor_kt  # A
    assert abs(next_frame["asked_current"] - state.control) <= torque_count / 2 + 1e-12
    return True


def test_two_drives_matched_by_position_and_by_id(rigs):
    with emulator(drives=("erob80_100", "erob80_50"), mass=3.1, positions=(0.1, -0.1)) as emu:
        by_position = rigs(emu.interface, drive_models=["erob80_50", "erob80_100"],
                           slave_positions=[2, 1], joint_names=["small", "big"])
        by_position.wait_ready()
        by_position.command(["small", "big"], goals=[0.3, -0.2], enables=[True, True],
                            gains=[50.0, 50.0])
        wait_truth(emu, lambda t: abs(t[2]["position"] - 0.3) < 0.05
                   and abs(t[1]["position"] + 0.2) < 0.05, "both near their goals")
        joint, _, truth = published_at_rest(
            by_position, emu, lambda j, s, t: abs(j.position[0] - t[2]["position"]) < COUNT
            and abs(j.position[1] - t[1]["position"]) < COUNT)
        assert joint.name == ["small", "big"]  # small: slave 2, big: slave 1
        assert truth[1]["torque_enable"] and truth[2]["torque_enable"]
        by_position.close()
        assert [t["al_state"] for t in emu.truth().values()] == ["SAFE-OP"] * 2
        by_id = rigs(emu.interface, drive_models=["erob80_100", "erob80_50"])
        by_id.wait_ready()
        joint, _, truth = published_at_rest(
            by_id, emu, lambda j, s, t: abs(j.position[0] - t[1]["position"]) < COUNT
            and abs(j.position[1] - t[2]["position"]) < COUNT)
        assert joint.name == ["joint1", "joint2"]
        assert by_id.node.supervisor.bus.expected_wkc == 6
        by_id.wait_ready()
        by_id.positions.publish(Float64MultiArray(data=[0.25, -0.05]))
        by_id.wait_for(lambda: [a.goal_position for a in by_id.actuator_states[-1][1].actuators]
                       == [0.25, -0.05], "position_commands goals")


def test_a_drive_of_another_model_is_refused_by_name(rigs):
    with emulator(drives=("erob80_100",)) as emu:
        rig = rigs(emu.interface, drive_models=["erob80_50"], slave_positions=[1])
        status = rig.wait_status(": EtherCAT line", 0.0, lambda s: "gear ratio" in s.message,
                                 "the refusal on /diagnostics")
        assert not rig.node.connected and "eRob80:50" in status.message
        assert values(status)["slaves found"] == "1"


def test_sigterm_turns_the_torque_off(tmp_path):
    with emulator(mass=3.1) as emu:
        env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain(1))}
        process = subprocess.Popen(
            [sys.executable, "-m", "bam_drivers.nodes.erob_node", "--ros-args",
             "-p", f"interface:={emu.interface}", "-p", "torque_enable_on_start:=true",
             "-p", "command_timeout:=0.0", "-p", "rate:=500.0"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_truth(emu, lambda t: t[1]["torque_enable"], "torque on")
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=20.0)
        finally:
            if process.poll() is None:
                process.kill()
        truth = emu.truth()[1]
    assert process.returncode == 128 + signal.SIGTERM, err
    assert truth["al_state"] == "SAFE-OP" and not truth["torque_enable"]
    assert "torque off on every drive" in err


@pytest.mark.parametrize("params,message", [
    (["drive_models:=[erob99]"], "unknown eRob drive model 'erob99'"),
    (["drive_models:=[erob80_50, erob80_100]", "joint_names:=[a]"], "joint_names must hold 2"),
    (["mode:=cyclic"], "mode must be one of cst, csp"),
    (["actuator:=mx64"], "voltage-controlled"),
])
def test_bad_parameters_are_one_line_errors(params, message):
    argv = ["erob", "--ros-args"] + [x for p in params for x in ("-p", p)]
    line = executable_error("bam_drivers.nodes.erob_node", argv, ros_domain(), 60.0)
    assert message in line


def test_node_parameters_are_checked_in_process(context):
    with pytest.raises(BamError, match="directions must be"):
        ErobNode(context=context, parameter_overrides=[Parameter("directions", value=[2])])
    assert dm.get_drive_model("erob80_100").gear_ratio == 100
