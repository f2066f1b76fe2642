"""Datasets: loading bags and legacy logs of one actuator, training/validation splits."""

from __future__ import annotations

import numpy as np
import pytest
from identify_cases import EROB_BENCH, MX64_BENCH, simulated

from bam_identify.data.bag_writer import BagSession, write_bag
from bam_identify.data.dataset import Dataset, bag_paths, load_dataset, split
from bam_identify.data.legacy_logs import write_legacy_log
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator


def mx_session(trajectory: str, kp: float, trial_id: int) -> BagSession:
    log, _ = simulated("mx64", trajectory, MX64_BENCH, kp, duration=0.3)
    return BagSession(get_actuator("mx64"), [(log, trajectory, kp, trial_id, 0)])


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    root = tmp_path_factory.mktemp("recordings")
    write_bag(root / "bags" / "b_second", [mx_session("steps", 16.0, 1)], storage="sqlite3")
    write_bag(root / "bags" / "a_first", [mx_session("lift_drop", 8.0, 1),
                                          mx_session("steps", 8.0, 2)])
    (root / "bags" / "README").write_text("not a bag")
    erob, _ = simulated("erob80_100", "steps", EROB_BENCH, 25.0, duration=0.3)
    write_bag(root / "erob", [BagSession(get_actuator("erob80_100"), [(erob, "steps", 25.0, 1,
                                                                       0)])])
    log, _ = simulated("mx64", "raise_lower", MX64_BENCH, 32.0, duration=0.3)
    write_legacy_log(root / "json" / "old.json", log, get_actuator("mx64"), "raise_lower")
    return root


def test_folder_of_bags_and_legacy_logs(recordings):
    found = bag_paths(recordings / "bags")
    assert [p.name for p in found] == ["a_first", "b_second"]
    data = load_dataset(bags=[recordings / "bags"], logs=recordings / "json")
    assert data.actuator.name == "mx64" and len(data) == 4
    assert [log.meta["trajectory"] for log in data.logs] == ["lift_drop", "steps", "steps",
                                                             "raise_lower"]
    assert data.sources == [str(recordings / "bags" / "a_first"),
                            str(recordings / "bags" / "b_second"),
                            str(recordings / "json" / "old.json")]
    assert data.trajectories == ["lift_drop", "raise_lower", "steps"]
    assert data.gains == [8.0, 16.0, 32.0]
    assert data.masses == [1.0] and data.lengths == [0.15]
    assert "mx64: 4 logs from 3 sources" in data.summary()
    # a bag folder and a single storage file are bags as well
    single = load_dataset(bags=recordings / "bags" / "a_first" / "a_first.mcap")
    assert len(single) == 2


def test_one_actuator_per_dataset(recordings):
    both = [recordings / "bags", recordings / "erob"]
    with pytest.raises(BamError) as info:
        load_dataset(bags=both)
    message = str(info.value)
    assert "erob80_100, mx64" in message and "--actuator" in message and "\n" not in message
    erob = load_dataset(bags=both, actuator="erob80_100")
    assert erob.actuator.name == "erob80_100" and len(erob) == 1
    assert erob.sources == [str(recordings / "erob")]
    with pytest.raises(BamError, match="no log of actuator 'mx106'"):
        load_dataset(bags=both, actuator="mx106")


def test_nothing_to_load(tmp_path):
    with pytest.raises(BamError, match="no bench logs"):
        load_dataset()
    (tmp_path / "empty").mkdir()
    with pytest.raises(BamError, match="holds no rosbag2 bag"):
        load_dataset(bags=tmp_path / "empty")
    with pytest.raises(BamError, match="does not exist"):
        load_dataset(bags=tmp_path / "missing")


def dataset(counts: dict[str, int], gains=(8.0, 16.0)) -> Dataset:
    logs = []
    for trajectory, n in counts.items():
        for i in range(n):
            logs.append(BenchLog(MX64_BENCH, gains[i % len(gains)], 0.005, np.zeros(3),
                                 np.ones(3, bool), name=f"{trajectory}{i}",
                                 meta={"trajectory": trajectory, "actuator": "mx64",
                                       "source": f"{trajectory}.mcap"}))
    return Dataset(get_actuator("mx64"), logs, [])


def names(data: Dataset) -> list[str]:
    return [log.name for log in data.logs]


def test_split_is_stratified_and_deterministic():
    data = dataset({"steps": 8, "lift_drop": 4, "raise_lower": 2, "slow": 1})
    train, val = split(data, 0.25, seed=5)
    held = {t: sum(log.meta["trajectory"] == t for log in val.logs) for t in data.trajectories}
    assert held == {"steps": 2, "lift_drop": 1, "raise_lower": 1, "slow": 0}
    assert sorted(names(train) + names(val)) == sorted(names(data))
    assert names(train) == [n for n in names(data) if n in names(train)]  # order kept
    again = split(data, 0.25, seed=5)
    assert (names(again[0]), names(again[1])) == (names(train), names(val))
    others = {tuple(names(split(data, 0.25, seed=s)[1])) for s in range(6)}
    assert len(others) > 1  # the seed matters
    assert train.sources == ["steps.mcap", "lift_drop.mcap", "raise_lower.mcap", "slow.mcap"]
    # never a whole trajectory in validation, and a zero fraction holds nothing out
    train, val = split(dataset({"steps": 2}), 0.9)
    assert len(train) == 1 and len(val) == 1
    train, val = split(data, 0.0)
    assert len(val) == 0 and names(train) == names(data)


def test_split_by_gain():
    data = dataset({"steps": 3, "lift_drop": 3}, gains=(8.0, 16.0, 32.0))
    train, val = split(data, validation_kp=16)
    assert {log.kp for log in val.logs} == {16.0} and len(val) == 2
    assert 16.0 not in train.gains and len(train) == 4
    with pytest.raises(BamError, match="no log has kp = 4"):
        split(data, validation_kp=4)
    with pytest.raises(BamError, match="nothing would be left to train"):
        split(dataset({"steps": 2}, gains=(8.0,)), validation_kp=8.0)
    with pytest.raises(BamError, match=r"in \[0, 1\)"):
        split(data, 1.0)
