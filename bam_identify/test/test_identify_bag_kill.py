"""A recording killed with SIGKILL: what was flushed is recovered; an empty bag is said to
hold nothing (not advice to recover it)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from bam_identify.cli import eval_main, recover_main
from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_recovery import needs_recovery
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named, save
from bam_testing.processes import read_until

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

# A recording process: the first trial written and flushed, then it waits to be killed
# with the second trial's messages still in rosbags' chunk (1 MiB would close it).
RECORD = """
import sys
from identify_cases import mx64_session
from rosbags.rosbag2 import Writer
from bam_identify.data.bag_topics import ROSBAG2_VERSION, STORAGES, TOPICS
from bam_identify.data.bag_writer import bench_messages, flush_recording
from bam_identify.data.typestore import typestore

messages = bench_messages([mx64_session(duration=0.5)])
ends = [i for i, (topic, _, msg) in enumerate(messages)
        if topic == "/bam/trial" and msg.event == 1]
store = typestore()
writer = Writer(sys.argv[1], version=ROSBAG2_VERSION, storage_plugin=STORAGES["mcap"])
writer.open()
conns = {t: writer.add_connection(t, k, typestore=store) for t, k in TOPICS.items()}
flush_recording(writer)
for i, (topic, stamp, msg) in enumerate(messages):
    writer.write(conns[topic], stamp, bytes(store.serialize_cdr(msg, msg.__msgtype__)))
    if i == ends[0]:
        flush_recording(writer)
        print("first trial flushed", flush=True)
print("all written", flush=True)
sys.stdin.read()
"""


def _killed_recording(tmp_path, wait_for: str):
    bag = tmp_path / "bag"
    process = subprocess.Popen([sys.executable, "-c", RECORD, str(bag)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               cwd=str(tmp_path), env=_env())
    try:
        read_until(process, wait_for, timeout=120)
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=120) == -signal.SIGKILL
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
    return bag


def _env() -> dict:
    import os
    from pathlib import Path

    here = str(Path(__file__).parent)  # identify_cases
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [here, os.environ.get("PYTHONPATH")]))}


def test_a_killed_recording_keeps_what_was_flushed(tmp_path, capsys):
    bag = _killed_recording(tmp_path, "all written")
    assert needs_recovery(bag)
    assert recover_main([str(bag)]) == 0, capsys.readouterr().err
    logs = read_bag(tmp_path / "bag_recovered")
    # the first trial, flushed, is whole; the second was still in memory
    assert [log.meta["trajectory"] for log in logs] == ["lift_drop"]
    assert len(logs[0]) >= 100  # 0.5 s at 5 ms


@pytest.mark.parametrize("content", [b"", b"\x89MCAP0\r\n\x01\x20"])
def test_a_bag_with_nothing_recorded_says_so(tmp_path, capsys, content):
    bag = tmp_path / "bag"
    bag.mkdir()
    (bag / "bag_0.mcap").write_bytes(content)
    with pytest.raises(BamError, match="nothing was recorded in it"):
        needs_recovery(bag)
    params = save(published_named("mx64", "m1"), tmp_path / "m1.yaml")
    for main, args in ((recover_main, [str(bag)]),
                       (eval_main, ["--params", str(params), "--bags", str(bag)])):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "nothing was recorded in it" in err, err
        assert "recover" not in err.split(":", 1)[1], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bag", "m1.yaml"]
