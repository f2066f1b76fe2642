"""The rosbags type store of the bench topics: where the bam_msgs definitions come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bam_identify.data import typestore as ts
from bam_sim.common.errors import BamError

SOURCE_MSG = Path(__file__).resolve().parents[2] / "bam_msgs" / "msg"


def test_bench_types_are_registered_with_their_constants():
    store = ts.typestore()
    assert store is ts.typestore()  # built once
    for name in (ts.JOINT_STATE, ts.ACTUATOR_STATE_ARRAY, ts.BENCH_INFO, ts.TRIAL):
        assert name in store.types
    trial = store.types[ts.TRIAL]
    assert (trial.START, trial.END) == (0, 1)
    assert store.types[ts.BENCH_INFO].SOURCE_HARDWARE == "hardware"


def test_type_hashes_match_the_rosidl_build():
    # rosidl writes the RIHS01 hash of every interface next to it; a bag written with
    # our definitions must carry the same hash as a recording of the real topics.
    folder = ts.msg_folder()
    generated = sorted(folder.glob("*.json"))
    if not generated:
        pytest.skip("bam_msgs is not built (no rosidl type descriptions)")
    store = ts.typestore()
    for path in generated:
        expected = json.loads(path.read_text())["type_hashes"][0]["hash_string"]
        assert store.hash_rihs01(f"bam_msgs/msg/{path.stem}") == expected, path.stem


def test_source_tree_is_the_fallback(monkeypatch):
    monkeypatch.setenv("AMENT_PREFIX_PATH", "")
    assert ts.msg_folder() == SOURCE_MSG
    assert set(ts.bam_msg_definitions()) >= {f"bam_msgs/msg/{n}" for n in ts.REQUIRED}


def test_missing_definitions_are_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(ts, "_candidates", lambda: [tmp_path])
    with pytest.raises(BamError) as info:
        ts.msg_folder()
    assert "bam_msgs message definitions" in str(info.value)
    assert "source install/setup.bash" in str(info.value) and "\n" not in str(info.value)
