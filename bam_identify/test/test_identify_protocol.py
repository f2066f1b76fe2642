"""Protocol schedules from YAML: the cross product, explicit runs, and every error."""

from __future__ import annotations

from pathlib import Path

import pytest

from bam_identify.protocol import Protocol, Run, load_protocol, parse_protocol, protocol_from_text
from bam_sim.bench.trajectory import TRAJECTORIES
from bam_sim.common.errors import BamError

CONFIG = Path(__file__).resolve().parents[1] / "config"


def fails(text, *fragments):
    with pytest.raises(BamError) as info:
        protocol_from_text(text)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_cross_product_in_a_stable_order():
    protocol = protocol_from_text("""
protocol:
  trajectories: [lift_drop, raise_lower]
  gains: [8, 16]
  repetitions: 2
  duration: 6.0
  settle: 0.5
""")
    assert isinstance(protocol, Protocol)
    assert protocol.duration == 6.0 and protocol.settle == 0.5
    assert len(protocol) == 8
    assert list(protocol) == [
        Run("lift_drop", 8.0, 0), Run("lift_drop", 8.0, 1),
        Run("lift_drop", 16.0, 0), Run("lift_drop", 16.0, 1),
        Run("raise_lower", 8.0, 0), Run("raise_lower", 8.0, 1),
        Run("raise_lower", 16.0, 0), Run("raise_lower", 16.0, 1),
    ]
    assert all(isinstance(run.gain, float) for run in protocol)


def test_explicit_runs_follow_and_repetitions_keep_counting():
    protocol = parse_protocol({"protocol": {
        "trajectories": ["Steps "], "gains": [4], "repetitions": 1,
        "runs": [{"trajectory": "steps", "gain": 4.0, "repetitions": 2},
                 {"trajectory": "lift_drop", "gain": 32}]}})
    assert protocol.runs == (Run("steps", 4.0, 0), Run("steps", 4.0, 1), Run("steps", 4.0, 2),
                             Run("lift_drop", 32.0, 0))
    assert protocol.duration is None and protocol.settle is None  # the node's parameters


def test_runs_only_scalars_and_no_protocol_key():
    protocol = parse_protocol({"runs": [{"trajectory": "raise_lower", "gain": 2.5}]})
    assert protocol.runs == (Run("raise_lower", 2.5, 0),)
    protocol = parse_protocol({"trajectories": "lift_drop", "gains": 8, "settle": 0})
    assert protocol.runs == (Run("lift_drop", 8.0, 0),) and protocol.settle == 0.0


@pytest.mark.parametrize("path", sorted(CONFIG.glob("protocol_*.yaml")), ids=lambda p: p.name)
def test_example_files_load(path):
    protocol = load_protocol(path)
    assert len(protocol) > 0
    assert {run.trajectory for run in protocol} <= set(TRAJECTORIES)
    keys = [(run.trajectory, run.gain, run.repetition) for run in protocol]
    assert len(set(keys)) == len(keys)


def test_unknown_trajectory_is_named_with_the_known_ones():
    message = fails("protocol: {trajectories: [lift_drop, zigzag], gains: [8]}",
                    "'zigzag'", "trajectories")
    for name in TRAJECTORIES:
        assert name in message
    fails("protocol: {runs: [{trajectory: wobble, gain: 8}]}", "runs[0]", "'wobble'",
          "lift_drop")


@pytest.mark.parametrize("gains, fragment", [
    ("[0]", "> 0"), ("[-8]", "> 0"), ("[.nan]", "finite"), ("[.inf]", "finite"),
    ("[eight]", "must be a number"), ("[true]", "must be a number"), ("[[8]]", "number"),
    ("{a: 1}", "must be a list"),
])
def test_bad_gains(gains, fragment):
    fails(f"protocol: {{trajectories: [steps], gains: {gains}}}", "gain", fragment)


def test_bad_gain_in_runs():
    fails("protocol: {runs: [{trajectory: steps, gain: -1}]}", "runs[0]", "> 0")
    fails("protocol: {runs: [{trajectory: steps}]}", "runs[0]", "missing 'gain'")
    fails("protocol: {runs: [{gain: 3}]}", "runs[0]", "missing 'trajectory'")


@pytest.mark.parametrize("text, fragments", [
    ("protocol: {trajectories: [steps], gains: [8], repetitions: 0}", ("repetitions", ">= 1")),
    ("protocol: {trajectories: [steps], gains: [8], repetitions: 1.5}", ("repetitions",)),
    ("protocol: {trajectories: [steps], gains: [8], repetitions: yes}", ("repetitions",)),
    ("protocol: {trajectories: [steps], gains: [8], duration: 0}", ("duration", "> 0")),
    ("protocol: {trajectories: [steps], gains: [8], duration: six}", ("duration", "number")),
    ("protocol: {trajectories: [steps], gains: [8], settle: -0.1}", ("settle", ">= 0")),
    ("protocol: {trajectories: [steps], gains: [8], gain: 3}", ("unknown key 'gain'",
                                                                "gains")),
    ("protocol: {runs: [{trajectory: steps, gain: 8, repeat: 2}]}", ("runs[0]",
                                                                     "unknown key 'repeat'")),
    ("protocol: {runs: [steps]}", ("runs[0]", "mapping")),
    ("protocol: {runs: {trajectory: steps}}", ("runs must be a list",)),
    ("protocol: {trajectories: [steps]}", ("give gains too",)),
    ("protocol: {gains: [8]}", ("give trajectories too",)),
    ("protocol: {trajectories: [], gains: []}", ("schedule is empty",)),
    ("protocol: {trajectories: [7], gains: [8]}", ("must be a name",)),
    ("protocol: [steps, 8]", ("expected a mapping",)),
    ("protocol: {runs: []}\nextra: 1", ("unknown top-level key 'extra'",)),
    ("- just a list", ("expected a mapping",)),
    ("", ("empty",)),
    ("protocol: {trajectories: [steps], gains: [8}", ("invalid YAML", "line 1")),
    ("protocol:\n  trajectories: [steps]\n gains: [8]", ("invalid YAML",)),
])
def test_errors_are_one_line(text, fragments):
    fails(text, *fragments)


def test_file_errors(tmp_path):
    with pytest.raises(BamError, match="cannot read protocol file .*missing.yaml"):
        load_protocol(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("protocol: {trajectories: [zigzag], gains: [8]}\n")
    with pytest.raises(BamError, match=r"protocol file .*bad\.yaml: protocol: trajectories: "
                                       r"unknown trajectory 'zigzag'"):
        load_protocol(bad)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BamError, match="not UTF-8"):
        load_protocol(binary)
    code = tmp_path / "code.yaml"  # safe_load: no Python objects
    code.write_text("protocol: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(BamError, match="invalid YAML"):
        load_protocol(code)
