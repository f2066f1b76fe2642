"""The same recording given twice is one recording: duplicates are left out, with a warning.

A trial is identified by what it recorded (bench, gain, trajectory, stamps and
samples), not by the path it was read from: the same bag named twice, with a
trailing slash, through its storage file, as a copied folder or as an
.mcap and its .db3 copy, and a legacy JSON log copied, all count once. The
training/validation split then never validates on a copy of a training log,
and it holds out the same recordings whatever the order of the paths.
"""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from identify_cases import MX64_BENCH, simulated

from bam_identify.cli import eval_main
from bam_identify.data.bag_writer import BagSession, write_bag
from bam_identify.data.dataset import content_key, load_dataset, split
from bam_identify.data.legacy_logs import write_legacy_log
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.servo.actuators import get_actuator

TRAJECTORIES = ("steps", "lift_drop", "raise_lower")
GAINS = (8.0, 16.0, 32.0, 4.0)


@pytest.fixture(scope="module")
def runs():
    """Twelve MX-64 runs: three trajectories at four gains, in one session."""
    trials = []
    for i, (trajectory, kp) in enumerate((t, g) for t in TRAJECTORIES for g in GAINS):
        log, _ = simulated("mx64", trajectory, MX64_BENCH, kp, duration=0.25)
        trials.append((log, trajectory, kp, i + 1, 0))
    return BagSession(get_actuator("mx64"), trials)


@pytest.fixture(scope="module")
def bags(tmp_path_factory, runs):
    """The session as an .mcap bag, its .db3 copy and a copied folder; and its runs at
    the first two gains and at the last two in two bags of their own."""
    root = tmp_path_factory.mktemp("dups")
    mcap = write_bag(root / "bench", [runs])
    db3 = write_bag(root / "bench_db3", [runs], storage="sqlite3")
    shutil.copytree(mcap, root / "copy" / "bench")
    halves = {}
    for name, gains in (("low", GAINS[:2]), ("high", GAINS[2:])):
        trials = [t for t in runs.trials if t[2] in gains]
        halves[name] = write_bag(root / name, [BagSession(get_actuator("mx64"), trials)])
    return {"mcap": mcap, "db3": db3, "copy": root / "copy" / "bench",
            "file": mcap / "bench.mcap", "slash": f"{mcap}/", **halves}


def keys(logs) -> set[str]:
    return {content_key(log) for log in logs}


def warned(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "duplicate" in r.getMessage()]


@pytest.mark.parametrize("other", ["mcap", "slash", "file", "copy", "db3"])
def test_a_bag_given_twice_counts_once_with_one_warning(bags, other, caplog):
    once = load_dataset(bags=bags["mcap"])
    assert len(once) == 12 and len(keys(once.logs)) == 12  # twelve distinct runs
    assert warned(caplog) == []
    caplog.clear()
    twice = load_dataset(bags=[bags["mcap"], bags[other]])
    assert len(twice) == 12 and keys(twice.logs) == keys(once.logs)
    assert [log.name for log in twice.logs] == [log.name for log in once.logs]  # first kept
    (line,) = warned(caplog)
    assert "\n" not in line and line.startswith("warning: 12 duplicate log(s) left out")
    assert str(bags[other]).rstrip("/") in line and str(bags["mcap"]) in line


def test_the_split_never_validates_on_a_copy_and_ignores_the_path_order(bags, caplog):
    reference = split(load_dataset(bags=bags["mcap"]), 0.25, seed=3)
    train, validation = (keys(part.logs) for part in reference)
    assert len(train) == 9 and len(validation) == 3 and not train & validation
    for paths in ([bags["copy"], bags["mcap"]], [bags["file"], bags["db3"], bags["mcap"]],
                  [bags["db3"]]):
        got = split(load_dataset(bags=paths), 0.25, seed=3)
        assert (keys(got[0].logs), keys(got[1].logs)) == (train, validation), paths
    # other recordings: the runs in two bags, given in either order
    low_high = split(load_dataset(bags=[bags["low"], bags["high"]]), 0.25, seed=3)
    high_low = split(load_dataset(bags=[bags["high"], bags["low"]]), 0.25, seed=3)
    assert [len(part) for part in low_high] == [9, 3]
    assert [keys(part.logs) for part in high_low] == [keys(part.logs) for part in low_high]
    seeds = {frozenset(keys(split(load_dataset(bags=bags["db3"]), 0.25, seed=s)[1].logs))
             for s in range(4)}
    assert len(seeds) > 1  # the seed still matters


def test_a_legacy_log_given_twice_or_copied_counts_once(tmp_path, caplog):
    logs = [simulated("mx64", t, MX64_BENCH, 8.0, duration=0.25)[0] for t in TRAJECTORIES]
    for log, trajectory in zip(logs, TRAJECTORIES):
        write_legacy_log(tmp_path / "logs" / f"{trajectory}.json", log, get_actuator("mx64"),
                         trajectory)
    shutil.copytree(tmp_path / "logs", tmp_path / "again")
    one = tmp_path / "logs" / "steps.json"
    data = load_dataset(logs=[tmp_path / "logs", one, tmp_path / "again"])
    assert sorted(log.meta["trajectory"] for log in data.logs) == sorted(TRAJECTORIES)
    assert data.sources == [str(tmp_path / "logs" / f"{t}.json") for t in sorted(TRAJECTORIES)]
    (line,) = warned(caplog)
    assert line.startswith("warning: 4 duplicate log(s) left out")
    assert str(tmp_path / "again") in line
    # the same run under another trajectory name is another log, not a duplicate
    write_legacy_log(tmp_path / "renamed.json", logs[0], get_actuator("mx64"), "steps_again")
    assert len(load_dataset(logs=[tmp_path / "logs", tmp_path / "renamed.json"])) == 4


def test_eval_scores_a_bag_given_twice_as_the_bag(bags, tmp_path, caplog):
    params = save(published_named("mx64", "m1"), tmp_path / "m1.yaml")
    scores = []
    for name, given in (("once", [bags["mcap"]]), ("twice", [bags["mcap"], bags["db3"]])):
        out = tmp_path / f"{name}.json"
        assert eval_main(["--params", str(params), "--bags", *map(str, given), "--json",
                          str(out)]) == 0
        scores.append(json.loads(out.read_text()))
    (line,) = warned(caplog)
    assert line.startswith("warning: 12 duplicate log(s) left out") and "bench_db3" in line
    assert scores[0] == scores[1]
