"""The recorder: every message of a burst lands in the bag unchanged; bags read back.

A test node publishes on the bench topics with their interface QoS; the
recorder spins in a thread of its own (as it would in another process).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import rclpy
import yaml
from identify_cases import mx64_session
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from rosbags.interfaces import QosDurability
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from sensor_msgs.msg import JointState

from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_topics import STORAGES
from bam_identify.data.bag_writer import bench_messages, write_bag
from bam_identify.data.typestore import typestore
from bam_identify.nodes.recorder_node import RecorderNode
from bam_msgs.msg import ActuatorState, ActuatorStateArray, BenchInfo, Trial
from bam_sim.common.contract import ACTUATOR_STATES, BENCH_INFO, JOINT_STATES, RECORDED, TRIAL
from bam_sim.common.errors import BamError
from bam_sim.common.qos import profile
from bam_testing.output_cases import small_disk
from bam_testing.processes import read_until
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import Spinner, wait_for, wait_matched

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 60.0  # s: a deadline for events on a loaded machine, never reached when all is well
def resolved(name: str) -> str:
    """The name a relative topic of the root namespace is recorded under."""
    return "/" + name.lstrip("/")


CLASSES = {JOINT_STATES.name: JointState, ACTUATOR_STATES.name: ActuatorStateArray,
           BENCH_INFO.name: BenchInfo, TRIAL.name: Trial}


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


class Recording:
    """A recorder spinning in a background thread, and a publishing test node."""

    def __init__(self, context, path: Path, **parameters):
        overrides = [Parameter("output", value=str(path))]
        overrides += [Parameter(k, value=v) for k, v in parameters.items()]
        self.recorder = RecorderNode(context=context, parameter_overrides=overrides)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.recorder)
        self.spinner = Spinner(self.executor, TIMEOUT).start()
        self.node = rclpy.create_node(f"bam_test_recorder_{uuid.uuid4().hex[:8]}",
                                      context=context)
        self.publishers = {topic.name: self.node.create_publisher(
            CLASSES[topic.name], topic.name, profile(topic.qos)) for topic in RECORDED}

    def wait_for(self, condition, what, timeout=TIMEOUT):
        wait_for(condition, what, timeout)

    def connect(self):
        # Both sides of each match: the recorder's subscriptions are in this process.
        self.wait_for(lambda: all(p.get_subscription_count() > 0
                                  for p in self.publishers.values())
                      and self.recorder.matched(), "discovery")

    def close(self):
        """Stop spinning, then close the bag (as destroy_node does)."""
        self.spinner.close()
        self.recorder.destroy_node()
        self.node.destroy_node()


def stamped(msg, ns):
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 10**9)
    return msg


def joint_state(k):
    return stamped(JointState(name=["pendulum"], position=[0.001 * k], velocity=[-0.5 * k],
                              effort=[]), 10**9 + k * 10**6)


def actuator_states(k):
    state = ActuatorState(name="pendulum", goal_position=0.25 * k, torque_enable=k % 3 != 0,
                          gain=8.0, control=float(k % 7), control_unit="V",
                          current=float("nan"), input_voltage=14.8, temperature=40.0,
                          motor_torque=0.01 * k, error_flags=k)
    return stamped(ActuatorStateArray(actuators=[state]), 10**9 + k * 10**6)


def assert_same(sent, got, path):
    """Two messages equal field by field, NaN equal to NaN."""
    if hasattr(sent, "get_fields_and_field_types"):
        assert type(got) is type(sent), path
        for name in sent.get_fields_and_field_types():
            assert_same(getattr(sent, name), getattr(got, name), f"{path}.{name}")
    elif isinstance(sent, (list, tuple)) or hasattr(sent, "__len__") and not isinstance(
            sent, (str, bytes)):
        assert len(got) == len(sent), path
        for i, (a, b) in enumerate(zip(sent, got)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(sent, float) and math.isnan(sent):
        assert isinstance(got, float) and math.isnan(got), path
    else:
        assert got == sent, f"{path}: {got!r} != {sent!r}"


def read_raw(path: Path) -> tuple[dict, dict]:
    """(topic -> raw messages in bag order, topic -> connection) of a bag."""
    raw, connections = {}, {}
    with Reader(path) as reader:
        for conn in reader.connections:
            connections[conn.topic] = conn
        for conn, _, data in reader.messages():
            raw.setdefault(conn.topic, []).append(bytes(data))
    return raw, connections


@pytest.mark.parametrize("storage", STORAGES)
def test_a_burst_is_recorded_completely_and_unchanged(context, tmp_path, storage):
    n = 2000
    sent = {
        BENCH_INFO.name: [stamped(BenchInfo(actuator="mx64", joint_name="pendulum", mass=1.0,
                                            length=0.15, gravity=9.80665, supply_voltage=14.8,
                                            damping=float("nan"), control_unit="V",
                                            source="sim", control_rate=1000.0, model="m4"),
                                  10**9)],
        TRIAL.name: [stamped(Trial(event=k % 2, trajectory="steps", gain=8.0,
                                   trial_id=k // 2 + 1, success=k % 2 == 1), 10**9 + k)
                     for k in range(40)],
        JOINT_STATES.name: [joint_state(k) for k in range(n)],
        ACTUATOR_STATES.name: [actuator_states(k) for k in range(n)],
    }
    path = tmp_path / "burst"
    rec = Recording(context, path, storage=storage)
    try:
        # Latched topics published before the recorder matched are still recorded.
        rec.publishers[BENCH_INFO.name].publish(sent[BENCH_INFO.name][0])
        rec.connect()
        begin = time.monotonic()
        for k in range(n):
            rec.publishers[JOINT_STATES.name].publish(sent[JOINT_STATES.name][k])
            rec.publishers[ACTUATOR_STATES.name].publish(sent[ACTUATOR_STATES.name][k])
            if k % 50 == 0 and k // 50 < len(sent[TRIAL.name]):
                rec.publishers[TRIAL.name].publish(sent[TRIAL.name][k // 50])
        published = time.monotonic() - begin
        expected = {resolved(topic): len(msgs) for topic, msgs in sent.items()}
        rec.wait_for(lambda: rec.recorder.counts == expected,
                     f"all messages (have {rec.recorder.counts})")
        recorded = time.monotonic() - begin
    finally:
        rec.close()
    print(f"{storage}: published {2 * n + 41} messages in {published:.2f} s, all recorded "
          f"after {recorded:.2f} s")
    assert rec.recorder.closed and rec.recorder.counts == expected
    assert (path / "metadata.yaml").is_file()
    raw, connections = read_raw(path)
    assert {topic: len(msgs) for topic, msgs in raw.items()} == expected
    for topic, msgs in sent.items():  # in order, every field (CDR padding bytes may differ)
        for k, (data, msg) in enumerate(zip(raw[resolved(topic)], msgs)):
            assert_same(msg, deserialize_message(data, CLASSES[topic]), f"{topic}[{k}]")
    for topic in RECORDED:
        conn = connections[topic.absolute()]
        assert conn.msgtype == topic.type and conn.msgdef.data
        qos = conn.ext.offered_qos_profiles[0]
        durable = qos.durability == QosDurability.TRANSIENT_LOCAL
        assert durable == topic.qos.transient_local and qos.depth == topic.qos.depth
    metadata = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert metadata["storage_identifier"] == storage
    assert metadata["message_count"] == sum(expected.values())
    # The stored definitions alone decode the messages (as ros2 bag or another tool would).
    with Reader(path) as reader:
        store = get_typestore(Stores.EMPTY)
        for conn in reader.connections:
            store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
        conn = next(c for c in reader.connections if c.topic == ACTUATOR_STATES.absolute())
        last = store.deserialize_cdr(raw[ACTUATOR_STATES.absolute()][-1], conn.msgtype)
        assert last.actuators[0].error_flags == n - 1


@pytest.mark.parametrize("storage", STORAGES)
def test_round_trip_two_trials_read_back_as_two_logs(context, tmp_path, storage):
    session = mx64_session(duration=0.5)
    store = typestore()
    messages = bench_messages([session])
    path = tmp_path / "session"
    rec = Recording(context, path, storage=storage)
    try:
        rec.connect()
        counts = dict.fromkeys(map(resolved, CLASSES), 0)
        for topic, _, msg in messages:  # written under resolved names, published relative
            name = topic.lstrip("/")
            cdr = bytes(store.serialize_cdr(msg, msg.__msgtype__))
            rec.publishers[name].publish(deserialize_message(cdr, CLASSES[name]))
            counts[topic] += 1
        rec.wait_for(lambda: rec.recorder.counts == counts, "all messages")
    finally:
        rec.close()
    logs = read_bag(path)
    reference = read_bag(write_bag(tmp_path / "reference", [session], storage=storage))
    assert len(logs) == 2 == len(reference)
    for log, ref, trial in zip(logs, reference, session.trials):
        assert log.meta["trajectory"] == trial.trajectory and log.kp == trial.gain
        assert log.meta["trial_id"] == trial.trial_id
        np.testing.assert_array_equal(log.position, ref.position)
        np.testing.assert_array_equal(log.goal, ref.goal)
        np.testing.assert_array_equal(log.enabled, ref.enabled)
        np.testing.assert_allclose(log.position, trial.log.position, atol=1e-12)


def test_existing_output_is_refused_and_left_alone(context, tmp_path):
    existing = write_bag(tmp_path / "old", [mx64_session(duration=0.2)])
    before = {p.name: p.read_bytes() for p in existing.iterdir()}
    with pytest.raises(BamError) as info:
        RecorderNode(context=context, parameter_overrides=[
            Parameter("output", value=str(existing))])
    assert "already exists" in str(info.value) and "overwrite" in str(info.value)
    assert "\n" not in str(info.value)
    assert {p.name: p.read_bytes() for p in existing.iterdir()} == before
    plain = tmp_path / "notes.txt"
    plain.write_text("keep me")
    with pytest.raises(BamError, match="not a bag folder"):
        RecorderNode(context=context, parameter_overrides=[
            Parameter("output", value=str(plain)), Parameter("overwrite", value=True)])
    assert plain.read_text() == "keep me"
    # A bag folder holding a user's files too: refused, every file kept.
    kept = write_bag(tmp_path / "with_notes", [mx64_session(duration=0.2)])
    (kept / "notes.txt").write_text("keep me")
    (kept / "sub").mkdir()
    (kept / "sub" / "calib.yaml").write_text("k: 1")
    files = {p: p.read_bytes() for p in kept.rglob("*") if p.is_file()}
    with pytest.raises(BamError, match=r"not part of its bag \(notes.txt, sub\)"):
        RecorderNode(context=context, parameter_overrides=[
            Parameter("output", value=str(kept)), Parameter("overwrite", value=True)])
    assert {p: p.read_bytes() for p in kept.rglob("*") if p.is_file()} == files
    # With overwrite, an existing bag is replaced by the new recording.
    node = RecorderNode(context=context, parameter_overrides=[
        Parameter("output", value=str(existing)), Parameter("overwrite", value=True),
        Parameter("storage", value="sqlite3")])
    node.destroy_node()
    node.destroy_node()  # closing twice is harmless
    raw, connections = read_raw(existing)
    assert raw == {} and set(connections) == {t.absolute() for t in RECORDED}
    assert [p.suffix for p in existing.iterdir() if p.name != "metadata.yaml"] == [".db3"]


@pytest.mark.parametrize("storage", STORAGES)
def test_a_full_disk_leaves_no_bag_behind_and_the_bag_it_would_replace_as_it_was(
        context, tmp_path, storage):
    """A recorder that cannot write its bag's start removes what it made (a bag folder
    left empty, the folders made for it) and says so; with overwrite, the bag it was to
    replace is set aside until the new one is open, so it is there as it was."""
    with small_disk(tmp_path / "disk") as disk:
        old = write_bag(disk.root / "old", [mx64_session(duration=0.2)])
        contents = {p: p.read_bytes() for p in old.iterdir()}
        before = disk.files()
        disk.fill()
        said = []
        for output, overwrite in ((disk.root / "new" / "bag", False), (old, True)):
            with pytest.raises(BamError) as info:
                RecorderNode(context=context, parameter_overrides=[
                    Parameter("output", value=str(output)),
                    Parameter("overwrite", value=overwrite),
                    Parameter("storage", value=storage)])
            said.append(str(info.value))
        assert disk.files() == before, disk.files()
        assert {p: p.read_bytes() for p in old.iterdir()} == contents
    for text in said:
        assert "\n" not in text and "no space left (" in text, text
    assert f"removed what it had created ({disk.root / 'new'})" in said[0]
    assert said[1].endswith(f"removed what it had created ({old}); the earlier bag is kept")


@pytest.mark.parametrize("parameters, fragment", [
    ({"storage": "bag"}, "unknown storage 'bag'"),
    ({"topics": ["/joint_states", "/tf"]}, "cannot record '/tf'"),
    ({"queue_depth": 0}, "queue_depth"),
    ({"topics": []}, "parameter topics is empty"),
])
def test_bad_parameters(context, tmp_path, parameters, fragment):
    overrides = [Parameter("output", value=str(tmp_path / "bag"))]
    overrides += [Parameter(k, value=v) for k, v in parameters.items()]
    with pytest.raises(BamError, match=fragment):
        RecorderNode(context=context, parameter_overrides=overrides)
    assert not (tmp_path / "bag").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_executable_closes_the_bag_on_a_signal(context, tmp_path, signum):
    """``recorder`` as launched: records what it receives; Ctrl-C or SIGTERM writes the
    metadata and exits with 128 + the signal."""
    path = tmp_path / "cli"
    node = rclpy.create_node(f"bam_test_recorder_cli_{uuid.uuid4().hex[:8]}", context=context)
    pub = node.create_publisher(BenchInfo, BENCH_INFO.name, profile(BENCH_INFO.qos))
    env = dict(os.environ, ROS_DOMAIN_ID=str(ros_domain()))
    code = ("import sys; from bam_identify.nodes.recorder_node import main; "
            "sys.exit(main(sys.argv))")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--ros-args", "-p", f"output:={path}",
         "-p", "topics:=['bam/bench_info', 'bam/trial']"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_matched(pub, "the recorder's subscription", TIMEOUT)
        pub.publish(stamped(BenchInfo(actuator="mx64", source="sim"), 5 * 10**9))
        lines = read_until(proc, f"first message on {BENCH_INFO.absolute()}", TIMEOUT)
        proc.send_signal(signum)
        output, _ = proc.communicate(timeout=TIMEOUT)
        output = lines + output
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
    assert proc.returncode == 128 + signum, output
    assert "closed bag" in output and f"{BENCH_INFO.absolute()} 1" in output, output
    raw, _ = read_raw(path)
    assert len(raw[BENCH_INFO.absolute()]) == 1
    # A second start on the same path is refused with one line and exit status 2.
    again = subprocess.run([sys.executable, "-c", code, "--ros-args", "-p", f"output:={path}"],
                           env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert again.stderr.strip().count("\n") == 0, again.stderr
