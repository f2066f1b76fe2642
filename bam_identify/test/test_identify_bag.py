"""rosbag2 bench recordings: write, read back, resample, stored definitions, header stamps."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from identify_cases import EROB_BENCH, MX64_BENCH, erob_session, mx64_session, simulated
from rosbags.highlevel import AnyReader
from rosbags.interfaces import QosDurability
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_topics import (
    TOPIC_ACTUATOR_STATES,
    TOPIC_BENCH_INFO,
    TOPIC_JOINT_STATES,
    TOPIC_TRIAL,
)
from bam_identify.data.bag_writer import (
    BagSession,
    BagTrial,
    bench_messages,
    write_bag,
    write_messages,
)
from bam_identify.data.typestore import BENCH_INFO, TRIAL, typestore
from bam_sim.bench.geometry import Bench
from bam_sim.models.servo.actuators import get_actuator

STORAGES = ["mcap", "sqlite3"]
SOURCE_MSG = Path(__file__).resolve().parents[2] / "bam_msgs" / "msg"


def originals(sessions):
    return [trial.log for session in sessions for trial in session.trials]


@pytest.fixture(scope="module")
def sessions():
    return [mx64_session(), erob_session()]


@pytest.mark.parametrize("storage", STORAGES)
def test_round_trip_keeps_every_series_and_the_bench(tmp_path, sessions, storage):
    bag = write_bag(tmp_path / "bench_run", sessions, storage=storage)
    suffix = {"mcap": ".mcap", "sqlite3": ".db3"}[storage]
    assert (bag / "metadata.yaml").is_file() and (bag / f"bench_run{suffix}").is_file()
    logs = read_bag(bag)
    assert len(logs) == 3
    for log, orig in zip(logs, originals(sessions)):
        assert len(log) == len(orig) and log.dt == orig.dt
        for series in ("position", "velocity", "goal", "control"):
            np.testing.assert_allclose(getattr(log, series), getattr(orig, series), rtol=0,
                                       atol=1e-9, err_msg=series)
        np.testing.assert_array_equal(log.enabled, orig.enabled)
        assert log.kp == orig.kp and log.bench == orig.bench
    mx_a, mx_b, erob = logs
    assert not mx_a.enabled.all()  # lift_drop releases the arm: the enable did travel
    assert mx_a.supply_voltage == 14.8 and mx_a.damping is None
    assert erob.supply_voltage is None and erob.damping == 1.5
    assert (mx_a.bench, erob.bench) == (MX64_BENCH, EROB_BENCH)  # each session's own bench
    assert [log.name for log in logs] == ["bench_run#1:lift_drop", "bench_run#2:steps",
                                          "bench_run#10:raise_lower"]
    assert mx_b.meta == {"trajectory": "steps", "trial_id": 2, "repetition": 0, "gain": 16.0,
                         "source": str(bag), "actuator": "mx64", "bench_source": "sim",
                         "unit": "", "start_time": mx_b.meta["start_time"]}
    assert (erob.meta["actuator"], erob.meta["repetition"], erob.meta["bench_source"]) == \
        ("erob80_100", 2, "hardware")
    assert erob.meta["start_time"] > mx_b.meta["start_time"] > mx_a.meta["start_time"]


@pytest.mark.parametrize("storage", STORAGES)
def test_a_single_storage_file_reads_like_its_folder(tmp_path, sessions, storage):
    bag = write_bag(tmp_path / "one", sessions[:1], storage=storage)
    (file,) = [p for p in bag.iterdir() if p.name != "metadata.yaml"]
    from_file, from_folder = read_bag(file), read_bag(bag)
    assert [log.name for log in from_file] == [log.name for log in from_folder]
    np.testing.assert_array_equal(from_file[1].position, from_folder[1].position)


def test_a_1ms_recording_resampled_at_5ms_hits_the_original_samples(tmp_path):
    log, _ = simulated("mx64", "lift_drop", MX64_BENCH, 8.0, dt=0.001, duration=1.0)
    bag = write_bag(tmp_path / "fast", [BagSession(get_actuator("mx64"), [(log, "lift_drop", 8.0,
                                                                           4, 0)])])
    (back,) = read_bag(bag, dt=0.005)
    assert back.dt == 0.005 and len(back) == 201
    for series in ("position", "velocity", "goal", "control"):
        np.testing.assert_allclose(getattr(back, series), getattr(log, series)[::5], rtol=0,
                                   atol=1e-9, err_msg=series)
    np.testing.assert_array_equal(back.enabled, log.enabled[::5])


def test_off_grid_samples_are_interpolated_linearly(tmp_path):
    # 2 ms samples read at 5 ms: every other grid point falls half-way between samples.
    log, _ = simulated("mx64", "steps", MX64_BENCH, 16.0, dt=0.002, duration=1.0)
    bag = write_bag(tmp_path / "two_ms", [BagSession(get_actuator("mx64"), [(log, "steps", 16.0, 1,
                                                                             0)])])
    (back,) = read_bag(bag, dt=0.005)
    t = np.arange(len(back)) * 0.005
    assert t[-1] <= log.time[-1] < t[-1] + 0.005
    np.testing.assert_allclose(back.position, np.interp(t, log.time, log.position), atol=1e-12)
    np.testing.assert_allclose(back.goal, np.interp(t, log.time, log.goal), atol=1e-12)
    # t = 5 ms lies half-way between the samples at 4 and 6 ms
    assert back.position[1] == pytest.approx(0.5 * (log.position[2] + log.position[3]), abs=1e-12)


@pytest.mark.parametrize("storage", STORAGES)
def test_message_definitions_are_stored_in_the_bag(tmp_path, sessions, storage):
    bag = write_bag(tmp_path / "defs", sessions[1:], storage=storage)
    counts = {}
    with AnyReader([bag]) as reader:  # no default type store: only what the bag holds
        for conn in reader.connections:
            assert conn.msgdef.data, conn.topic
        for conn, _, raw in reader.messages():
            msg = reader.deserialize(raw, conn.msgtype)
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
            if conn.topic == TOPIC_BENCH_INFO:
                assert (msg.actuator, msg.joint_name, msg.control_unit) == ("erob80_100",
                                                                            "erob", "A")
                assert msg.damping == 1.5 and msg.gravity == 9.80665
        qos = reader.topics[TOPIC_BENCH_INFO].connections[0].ext.offered_qos_profiles
        assert qos[0].durability == QosDurability.TRANSIENT_LOCAL
    n = len(sessions[1].trials[0].log)
    assert counts == {TOPIC_BENCH_INFO: 1, TOPIC_TRIAL: 2, TOPIC_JOINT_STATES: n,
                      TOPIC_ACTUATOR_STATES: n}


def test_rclpy_reads_what_we_serialize(tmp_path, sessions):
    # Same CDR as the rosidl-generated interfaces: the bag replays onto real topics.
    serialization = pytest.importorskip("rclpy.serialization")
    msg_module = pytest.importorskip("bam_msgs.msg")
    sensor = pytest.importorskip("sensor_msgs.msg")
    store = typestore()
    types = {TOPIC_ACTUATOR_STATES: msg_module.ActuatorStateArray,
             TOPIC_BENCH_INFO: msg_module.BenchInfo, TOPIC_TRIAL: msg_module.Trial,
             TOPIC_JOINT_STATES: sensor.JointState}
    seen = set()
    for topic, _, msg in bench_messages(sessions[:1])[:4]:
        raw = bytes(store.serialize_cdr(msg, msg.__msgtype__))
        back = serialization.deserialize_message(raw, types[topic])
        seen.add(topic)
        if topic == TOPIC_ACTUATOR_STATES:
            state = back.actuators[0]
            assert state.name == "pendulum" and state.control_unit == "V"
            assert math.isnan(state.current) and state.gain == 8.0
        if topic == TOPIC_JOINT_STATES:
            assert list(back.name) == ["pendulum"] and len(back.effort) == 1
    assert seen == set(types)


def test_header_stamps_not_bag_times_give_the_time_axis(tmp_path, sessions):
    # A simulation 10x faster than real time: the recorder receives the messages
    # at compressed wall times, but the header stamps hold the simulated time.
    messages = bench_messages(sessions[:1])
    wall = [(topic, 1_700_000_000_000_000_000 + stamp // 10, msg)
            for topic, stamp, msg in messages]
    logs = read_bag(write_messages(tmp_path / "fast_sim", wall))
    reference = read_bag(write_messages(tmp_path / "real_time", messages))
    for log, ref, orig in zip(logs, reference, originals(sessions[:1])):
        assert len(log) == len(orig)
        np.testing.assert_array_equal(log.position, ref.position)
        np.testing.assert_allclose(log.position, orig.position, atol=1e-12)


def test_the_bench_joint_is_picked_among_several(tmp_path, sessions):
    messages = bench_messages(sessions[:1])
    for topic, _, msg in messages:
        if topic == TOPIC_JOINT_STATES:
            msg.name = ["wheel", "pendulum"]
            msg.position = np.array([123.0, msg.position[0]])
            msg.velocity = np.array([-5.0, msg.velocity[0]])
        elif topic == TOPIC_ACTUATOR_STATES:
            other = replace(msg.actuators[0], name="wheel", goal_position=42.0)
            msg.actuators = [other, msg.actuators[0]]
    logs = read_bag(write_messages(tmp_path / "two_joints", messages))
    orig = originals(sessions[:1])
    np.testing.assert_allclose(logs[0].position, orig[0].position, atol=1e-12)
    np.testing.assert_allclose(logs[1].goal, orig[1].goal, atol=1e-12)


def test_aborted_runs_are_skipped_and_sessions_keep_their_bench(tmp_path):
    one, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.5)
    heavy = Bench(mass=1.5, length=0.2)
    two, _ = simulated("mx64", "steps", heavy, 8.0, duration=0.5)
    three, _ = simulated("mx64", "raise_lower", heavy, 4.0, duration=0.5)
    sessions = [BagSession(get_actuator("mx64"), [(one, "steps", 8.0, 1, 0)]),
                BagSession(get_actuator("mx64"), [BagTrial(two, "steps", 8.0, 2, 0, success=False),
                                    (three, "raise_lower", 4.0, 3, 0)])]
    logs = read_bag(write_bag(tmp_path / "abort", sessions))
    assert [log.meta["trial_id"] for log in logs] == [1, 3]
    assert logs[0].bench == MX64_BENCH and logs[1].bench == heavy
    assert logs[1].supply_voltage == 15.0  # the actuator's default supply, from BenchInfo


def test_write_bag_without_overwrite_keeps_the_existing_bag(tmp_path, sessions):
    bag = write_bag(tmp_path / "keep", sessions[:1])
    write_bag(bag, sessions[1:], overwrite=True)
    assert [log.meta["actuator"] for log in read_bag(bag)] == ["erob80_100"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]  # no temporary left


def test_session_fields_are_checked_against_the_logs(tmp_path):
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.3)
    bad = BagSession(get_actuator("mx64"), [(log, "steps", 8.0, 1, 0)], mass=2.0)
    with pytest.raises(ValueError, match="differs from the session's"):
        write_bag(tmp_path / "x", [bad])
    with pytest.raises(ValueError, match="marker gain 16.0 differs"):
        write_bag(tmp_path / "x", [BagSession(get_actuator("mx64"), [(log, "steps", 16.0, 1, 0)])])
    assert not Path(tmp_path / "x").exists()


def write_with(path, store, messages, definitions=True):
    """A bag written with another type store, or without message definitions."""
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {}
        for topic, stamp, msg in messages:
            if topic not in conns:
                extra = {} if definitions else {"msgdef": "",
                                                "rihs01": store.hash_rihs01(msg.__msgtype__)}
                conns[topic] = writer.add_connection(topic, msg.__msgtype__, typestore=store,
                                                     **extra)
            writer.write(conns[topic], stamp, bytes(store.serialize_cdr(msg, msg.__msgtype__)))
    return path


def test_the_definitions_stored_in_the_bag_are_preferred(tmp_path, sessions):
    # A recording made with another revision of Trial (a field inserted in the middle):
    # only its stored definition decodes it.
    text = (SOURCE_MSG / "Trial.msg").read_text().replace(
        "string trajectory", "string operator\nstring trajectory")
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register({**get_types_from_msg(text, TRIAL),
                    **{k: v for k, v in typestore().fielddefs.items()
                       if k.startswith("bam_msgs/") and k != TRIAL}})
    trial_type = store.types[TRIAL]
    messages = []
    for topic, stamp, msg in bench_messages(sessions[:1]):
        if topic == TOPIC_TRIAL:
            msg = trial_type(header=msg.header, event=msg.event, operator="someone at the bench",
                             trajectory=msg.trajectory, gain=msg.gain, trial_id=msg.trial_id,
                             repetition=msg.repetition, success=msg.success)
        messages.append((topic, stamp, msg))
    logs = read_bag(write_with(tmp_path / "revised", store, messages))
    assert [log.meta["trajectory"] for log in logs] == ["lift_drop", "steps"]
    assert [log.kp for log in logs] == [8.0, 16.0]


def test_a_bag_without_definitions_is_read_with_ours(tmp_path, sessions):
    bag = write_with(tmp_path / "bare", typestore(), bench_messages(sessions[:1]),
                     definitions=False)
    with Reader(bag) as reader:
        assert all(not c.msgdef.data for c in reader.connections)
    logs = read_bag(bag)
    np.testing.assert_allclose(logs[1].position, originals(sessions[:1])[1].position,
                               atol=1e-12)


def test_other_topics_are_ignored(tmp_path, sessions):
    clock = typestore().types["rosgraph_msgs/msg/Clock"]
    time = typestore().types["builtin_interfaces/msg/Time"]
    messages = bench_messages(sessions[:1])
    ticks = [("/clock", stamp, clock(clock=time(sec=stamp // 10**9, nanosec=stamp % 10**9)))
             for _, stamp, _ in messages[::7]]
    logs = read_bag(write_messages(tmp_path / "with_clock", sorted(
        messages + ticks, key=lambda item: item[1])))
    assert [log.name for log in logs] == ["with_clock#1:lift_drop", "with_clock#2:steps"]


def test_the_bus_input_voltage_is_read_back(tmp_path):
    session = mx64_session()
    first = session.trials[0]
    volts = np.linspace(14.8, 13.9, len(first.log))
    trials = (replace(first, log=replace(first.log, input_voltage=volts)), *session.trials[1:])
    logs = read_bag(write_bag(tmp_path / "volts", [replace(session, trials=trials)]))
    np.testing.assert_allclose(logs[0].input_voltage, volts, rtol=0, atol=1e-12)
    assert logs[1].input_voltage is None  # NaN readings: not measured


def _before_unit(session_messages):
    """The messages as recorded before BenchInfo had a unit: that revision's type store
    (BenchInfo.msg without its last field) and the bench infos of that type."""
    text = (SOURCE_MSG / "BenchInfo.msg").read_text().split("\nstring unit", 1)[0] + "\n"
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register({**get_types_from_msg(text, BENCH_INFO),
                    **{k: v for k, v in typestore().fielddefs.items()
                       if k.startswith("bam_msgs/") and k != BENCH_INFO}})
    old = store.types[BENCH_INFO]
    messages = []
    for topic, stamp, msg in session_messages:
        if topic == TOPIC_BENCH_INFO:
            msg = old(**{name: getattr(msg, name) for name in old.__dataclass_fields__})
        messages.append((topic, stamp, msg))
    return store, messages


def test_a_bag_names_the_unit_that_recorded_it(tmp_path):
    session = replace(mx64_session(), unit="dynamixel id 3")
    logs = read_bag(write_bag(tmp_path / "unit", [session]))
    assert {log.meta["unit"] for log in logs} == {"dynamixel id 3"}


@pytest.mark.parametrize("definitions", [True, False])
def test_a_bag_recorded_before_the_unit_field_is_read_without_one(tmp_path, definitions):
    """Its stored definition decodes it; without definitions, the type as it was then."""
    store, messages = _before_unit(bench_messages([mx64_session()]))
    logs = read_bag(write_with(tmp_path / "old", store, messages, definitions=definitions))
    assert [log.meta["unit"] for log in logs] == ["", ""]
    np.testing.assert_allclose(logs[1].position, mx64_session().trials[1].log.position,
                               atol=1e-12)
