"""Bad bags: each fails with one line naming the bag, the problem and, where it applies,
the trial and the time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from identify_cases import MX64_BENCH, simulated

from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_topics import (
    TOPIC_ACTUATOR_STATES,
    TOPIC_BENCH_INFO,
    TOPIC_JOINT_STATES,
    TOPIC_TRIAL,
)
from bam_identify.data.bag_writer import BagSession, bench_messages, write_bag, write_messages
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator


@pytest.fixture(scope="module")
def session():
    one, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.3)
    two, _ = simulated("mx64", "lift_drop", MX64_BENCH, 16.0, duration=0.3)
    return BagSession(get_actuator("mx64"), [(one, "steps", 8.0, 1, 0), (two, "lift_drop", 16.0, 2,
                                                                         0)])


def fails(path, *fragments, dt=0.005):
    with pytest.raises(BamError) as info:
        read_bag(path, dt=dt)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_missing_path(tmp_path):
    fails(tmp_path / "nowhere", str(tmp_path / "nowhere"), "does not exist")


def test_folder_without_metadata(tmp_path):
    (tmp_path / "plain").mkdir()
    fails(tmp_path / "plain", "plain", "not a rosbag2 bag", "metadata.yaml")


def test_empty_bag_with_the_topics_but_no_messages(tmp_path):
    bag = write_messages(tmp_path / "empty", [])
    fails(bag, "empty", "holds no messages", "/joint_states")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_corrupt_storage_file(tmp_path, session, storage):
    bag = write_bag(tmp_path / "broken", [session], storage=storage)
    (data,) = [p for p in bag.iterdir() if p.name != "metadata.yaml"]
    size = data.stat().st_size
    data.write_bytes(b"\x13garbage, not a bag\x00" * (size // 20))
    fails(bag, "broken", "cannot read bag", "complete rosbag2 recording")


def test_truncated_mcap(tmp_path, session):
    bag = write_bag(tmp_path / "cut", [session])
    data = bag / "cut.mcap"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    fails(bag, "cut", "cannot read bag")


def without(messages, topic):
    return [item for item in messages if item[0] != topic]


@pytest.mark.parametrize("topic, what", [(TOPIC_BENCH_INFO, "bench description"),
                                         (TOPIC_JOINT_STATES, "joint states"),
                                         (TOPIC_TRIAL, "trial markers"),
                                         (TOPIC_ACTUATOR_STATES, "actuator commands")])
def test_bag_without_a_bench_topic(tmp_path, session, topic, what):
    bag = write_messages(tmp_path / "partial", without(bench_messages([session]), topic))
    fails(bag, "partial", f"no {topic} messages", what)


def test_unknown_actuator_in_bench_info(tmp_path, session):
    messages = bench_messages([session])
    messages[0][2].actuator = "ax12"
    bag = write_messages(tmp_path / "xl", messages)
    fails(bag, "xl", "trial 1", "unknown actuator 'ax12'", "mx64")


def test_nan_position_names_trial_and_time(tmp_path, session):
    messages = bench_messages([session])
    states = [msg for topic, _, msg in messages if topic == TOPIC_JOINT_STATES]
    states[len(session.trials[0][0]) + 7].position[0] = math.nan  # 8th sample of trial 2
    bag = write_messages(tmp_path / "nan", messages)
    fails(bag, "nan", "trial 2 ('lift_drop')", "position of joint 'joint' is nan",
          "0.035000 s into the trial")


def test_an_absurd_position_or_velocity_names_trial_and_time(tmp_path, session):
    """A position of 1e308 (a corrupt sample) is refused, not fitted to an MAE of 1e303."""
    for field, value, what in (("position", 1e308, "position of joint 'joint' is 1e+308"),
                               ("velocity", -5e3, "velocity of joint 'joint' is -5000.0")):
        messages = bench_messages([session])
        states = [msg for topic, _, msg in messages if topic == TOPIC_JOINT_STATES]
        getattr(states[3], field)[0] = value
        bag = write_messages(tmp_path / field, messages)
        fails(bag, field, "trial 1", what, "beyond", "0.015000 s into the trial")


def test_non_monotonic_joint_state_stamps(tmp_path, session):
    messages = bench_messages([session])
    states = [msg for topic, _, msg in messages if topic == TOPIC_JOINT_STATES]
    states[20].header.stamp, states[21].header.stamp = states[21].header.stamp, \
        states[20].header.stamp
    bag = write_messages(tmp_path / "jumpy", messages)
    fails(bag, "jumpy", "/joint_states", "not increasing", "1.605000 s then 1.600000 s",
          "messages 20 and 21")


def test_trial_without_end_marker_is_left_out_with_a_warning(tmp_path, session, caplog):
    messages = bench_messages([session])
    messages = [item for item in messages
                if not (item[0] == TOPIC_TRIAL and item[2].event == 1 and item[2].trial_id == 2)]
    bag = write_messages(tmp_path / "unended", messages)
    logs = read_bag(bag)
    assert [log.meta["trial_id"] for log in logs] == [1]
    assert "trial 2 ('lift_drop'" in caplog.text and "no END marker" in caplog.text


def test_trial_markers_that_never_start(tmp_path, session):
    messages = [item for item in bench_messages([session])
                if not (item[0] == TOPIC_TRIAL and item[2].event == 0)]
    bag = write_messages(tmp_path / "ends_only", messages)
    fails(bag, "ends_only", "no trial START markers")


def test_trial_with_a_single_sample(tmp_path, session):
    messages = bench_messages([session])
    first_trial = len(session.trials[0][0])
    keep = {0}  # only the first joint state of trial 1
    kept, seen = [], -1
    for item in messages:
        if item[0] == TOPIC_JOINT_STATES:
            seen += 1
            if seen < first_trial and seen not in keep:
                continue
        kept.append(item)
    bag = write_messages(tmp_path / "short", kept)
    fails(bag, "short", "trial 1 ('steps')", "fewer than 2 samples", "(1 joint states)")


def test_write_over_an_existing_bag_needs_overwrite(tmp_path, session):
    bag = write_bag(tmp_path / "taken", [session])
    before = (bag / "taken.mcap").read_bytes()
    with pytest.raises(BamError) as info:
        write_bag(bag, [session], storage="sqlite3")
    assert "already exists" in str(info.value) and "\n" not in str(info.value)
    assert (bag / "taken.mcap").read_bytes() == before
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")
    with pytest.raises(BamError, match="not a rosbag2 bag"):
        write_bag(tmp_path / "notes", [session], overwrite=True)
    assert (tmp_path / "notes" / "todo.txt").read_text() == "keep me"
    (tmp_path / "empty").mkdir()  # nothing to lose: replaced
    assert read_bag(write_bag(tmp_path / "empty", [session], overwrite=True))


def test_bad_arguments(tmp_path, session):
    with pytest.raises(BamError, match="unknown bag storage 'zip'"):
        write_bag(tmp_path / "z", [session], storage="zip")
    bag = write_bag(tmp_path / "ok", [session])
    with pytest.raises(BamError, match="time step dt"):
        read_bag(bag, dt=0.0)


def test_control_unit_must_match_the_actuator(tmp_path, session):
    messages = bench_messages([session])
    for topic, _, msg in messages:
        if topic == TOPIC_ACTUATOR_STATES:
            msg.actuators[0].control_unit = "A"
    bag = write_messages(tmp_path / "amps", messages)
    fails(bag, "amps", "trial 1", "control unit A does not match actuator mx64 (V)")


def test_bench_joint_missing_among_several(tmp_path, session):
    messages = bench_messages([session])
    for topic, _, msg in messages:
        if topic == TOPIC_JOINT_STATES:
            msg.name = ["left", "right"]
            msg.position = np.zeros(2)
            msg.velocity = np.zeros(2)
    bag = write_messages(tmp_path / "two", messages)
    fails(bag, "two", "joint 'joint' of /bam/bench_info is not in /joint_states",
          "names: left, right")


def test_bench_info_of_equal_stamps_is_the_last_recorded():
    """Mass then length changed in one instant: the trial gets the final description."""
    from bam_identify.data.bag_reader import _bench_info_at

    infos = [(0, "first"), (500, "mass changed"), (500, "mass and length changed"), (900, "x")]
    assert _bench_info_at(infos, 600) == "mass and length changed"
    assert _bench_info_at(infos, 500) == "mass and length changed"
    assert _bench_info_at(infos, 100) == "first"
