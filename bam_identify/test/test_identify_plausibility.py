"""Plausibility of bench recordings: legacy JSON logs and bags pass the same checks.

A corrupt number (1e308), a wrong unit (timestamps in milliseconds, a length
in millimetres), a hole in the timestamps or a supply of -15 V is refused with
one line naming the file, the field and the remedy (exit 2 from the
commands), whichever source it comes from; a field a log may lack (speed,
the supply, the temperature) still reads. A property test feeds corrupted
logs and requires either that one-line error or a finite, plausible log.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from identify_cases import MX64_BENCH, simulated

from bam_identify.cli import fit_main
from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_topics import TOPIC_BENCH_INFO, TOPIC_JOINT_STATES
from bam_identify.data.bag_writer import BagSession, bench_messages, write_messages
from bam_identify.data.dataset import load_dataset
from bam_identify.data.legacy_logs import read_legacy_log
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator

# The BAM authors' public XL330 logs, in the shared/ folder beside the repository.
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "xl330"
N = 200  # entries of the base log: 1 kHz for 0.2 s


def base_log(n: int = N, step: float = 0.001) -> dict:
    """A plausible raw MX-64 log: positions sin(5t) rad, speeds, a goal ramp, 14.2 V."""
    t = 0.25 + np.arange(n) * step
    return {"mass": 1.0, "arm-mass": 0.1, "length": 0.15, "kp": 16, "vin": 14.2,
            "motor": "mx64", "trajectory": "steps",
            "entries": [{"timestamp": float(x), "position": float(np.sin(5 * x)),
                         "speed": float(5 * np.cos(5 * x)), "goal_position": float(0.5 * x),
                         "torque_enable": True, "input_volts": 14.0, "temp": 40}
                        for x in t]}


def write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def refused(path: Path, *fragments: str) -> str:
    with pytest.raises(BamError) as info:
        read_legacy_log(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def with_entries(doc: dict, key: str, values) -> dict:
    doc["entries"] = [{**e, key: v} for e, v in zip(doc["entries"], values)]
    return doc


def at_entry(doc: dict, k: int, key: str, value) -> dict:
    doc["entries"][k][key] = value
    return doc


def shifted(entry: dict, seconds: float, factor: float = 1.0) -> dict:
    """``entry`` with its timestamp moved (or rescaled), where it has a number there."""
    stamp = entry.get("timestamp")
    if isinstance(stamp, float):
        return {**entry, "timestamp": stamp * factor + seconds}
    return entry


def hole(doc: dict, k: int, seconds: float) -> dict:
    doc["entries"] = [shifted(e, seconds if i >= k else 0.0)
                      for i, e in enumerate(doc["entries"])]
    return doc


# (case, change to the base log, fragments of the one-line error)
LEGACY_CASES = {
    "position 1e308": (lambda d: at_entry(d, 7, "position", 1e308),
                       ("'position' is 1e+308", "beyond", "entry 7", "repair the log")),
    "speed of a runaway": (lambda d: at_entry(d, 3, "speed", -5e4), ("'speed' is -50000.0",)),
    "mass 1e308": (lambda d: {**d, "mass": 1e308}, ("'mass' (kg) must be in [0, 100]",)),
    "negative arm mass": (lambda d: {**d, "arm-mass": -0.1}, ("'arm-mass' (kg)",)),
    "kp 1e300": (lambda d: {**d, "kp": 1e300}, ("'kp' (mx64 gain) must be in [0, 254]",)),
    "length 1e6 m": (lambda d: {**d, "length": 1e6}, ("'length' (m) must be in (0, 5]",)),
    "length as text": (lambda d: {**d, "length": "0.15"}, ("'length' (m) must be a number",)),
    "one-hour hole": (lambda d: hole(d, 120, 3600.0),
                      ("timestamps have a hole of 3600", "after entry 119", "re-record")),
    "timestamps in ms": (lambda d: with_entries(d, "timestamp",
                                                [e["timestamp"] * 1e3 for e in d["entries"]]),
                         ("timestamps are 1 s apart", "milliseconds", "in seconds")),
    "vin -15 V": (lambda d: {**d, "vin": -15}, ("'vin' (V) must be in (0, 60], got -15",
                                                 "nominal supply is 15 V")),
    "vin 0 V": (lambda d: {**d, "vin": 0}, ("'vin' (V) must be in (0, 60], got 0",)),
    "vin in mV": (lambda d: {**d, "vin": 14200}, ("'vin' (V)",)),
    "processed dt off its stamps": (lambda d: {**d, "dt": 0.005},
                                    ("'dt' is 0.005 s but its timestamps are 0.001 s apart",)),
    "input_volts negative": (lambda d: at_entry(d, 12, "input_volts", -14.0),
                             ("'input_volts' is -14 V at entry 12, outside (0, 60] V",
                              "repair the log, or drop 'input_volts' from every entry")),
    "input_volts 0 V while moving": (lambda d: at_entry(d, 12, "input_volts", 0),
                                     ("'input_volts' is 0 V at entry 12",
                                      "runs on the supply it reports")),
    "temp -300 °C": (lambda d: at_entry(d, 5, "temp", -300),
                     ("'temp' is -300 °C at entry 5, outside [-40, 150] °C",
                      "repair the log, or drop 'temp' from every entry")),
    "temp 1000 °C": (lambda d: at_entry(d, 5, "temp", 1000), ("'temp' is 1000 °C",)),
    "temp jumps 100 K": (lambda d: with_entries(d, "temp", [40] * 57 + [140] * (N - 57)),
                         ("'temp' jumps from 40 to 140 °C in 0.001 s at entry 57",
                          "faster than 100 K/s")),
}


@pytest.mark.parametrize("case", LEGACY_CASES)
def test_an_implausible_legacy_log_is_refused_in_one_line(tmp_path, case):
    change, fragments = LEGACY_CASES[case]
    refused(write(tmp_path / "bad.json", change(base_log())), *fragments)


def test_the_base_log_and_its_missing_optional_fields_read(tmp_path):
    log = read_legacy_log(write(tmp_path / "good.json", base_log()))
    assert log.supply_voltage == 14.2 and log.velocity is not None and len(log) == 40
    bare = base_log()
    for key in ("vin", "arm-mass", "trajectory"):
        del bare[key]
    bare["entries"] = [{k: e[k] for k in ("timestamp", "position", "goal_position",
                                          "torque_enable")} for e in bare["entries"]]
    log = read_legacy_log(write(tmp_path / "bare.json", bare))
    assert log.supply_voltage is None and log.velocity is None and log.input_voltage is None
    assert log.bench.arm_mass == 0.0 and len(log) == 40
    # irregular sampling that is no hole: jitter, a pause of eight periods
    jitter = base_log()
    rng = np.random.default_rng(1)
    with_entries(jitter, "timestamp", [e["timestamp"] + rng.uniform(-3e-4, 3e-4)
                                       for e in jitter["entries"]])
    times = [e["timestamp"] for e in hole(jitter, 50, 0.008)["entries"]]
    log = read_legacy_log(write(tmp_path / "jitter.json", jitter))
    assert len(log) == int((times[-1] - times[0]) // 0.005) + 1


def test_a_temperature_a_winding_can_reach_reads(tmp_path):
    """Heating at a winding's pace through a whole-degree sensor passes: a 5 ms log whose
    reading toggles one count, then climbs 20 K/s (the XL330 at stall), then falls back."""
    doc = base_log(n=400, step=0.005)
    rising = [40 + (k % 2) for k in range(100)] + [41 + round(0.1 * k) for k in range(300)]
    log = read_legacy_log(write(tmp_path / "warm.json",
                                with_entries(doc, "temp", rising)))
    assert log.temperature.max() == 71.0
    doc = with_entries(base_log(n=400, step=0.005), "temp", [40] * 200 + [140] * 200)
    refused(write(tmp_path / "jump.json", doc),
            "'temp' jumps from 40 to 140 °C in 0.005 s at entry 200")


@pytest.mark.skipif(not REAL.is_dir(), reason=f"no {REAL} beside this checkout")
def test_the_published_xl330_recordings_pass():
    """The BAM authors' 12 XL330 logs (kp 100, 200 and 400; 27 to 34 °C; the bus from
    5.8 V under load up to 9.15 V while braking) are within every physical range."""
    data = load_dataset(logs=REAL)
    assert len(data) == 12 and data.gains == [100.0, 200.0, 400.0]
    assert {log.supply_voltage for log in data.logs} == {7.4}
    volts = np.concatenate([log.input_voltage for log in data.logs])
    temps = np.concatenate([log.temperature for log in data.logs])
    assert 5.8 <= volts.min() < 6.0 and 9.1 < volts.max() <= 9.15
    assert 27.0 <= temps.min() < 28.0 and 33.0 < temps.max() <= 34.0


@pytest.mark.parametrize(("group", "field", "reading"), [
    ("supply", "input_volts", "input voltage"), ("thermal", "temp", "temperature")])
def test_a_group_without_its_reading_in_any_log_is_refused(tmp_path, capsys, group, field,
                                                            reading):
    doc = base_log()
    doc["entries"] = [{k: v for k, v in e.items() if k != field} for e in doc["entries"]]
    logs = write(tmp_path / "logs" / "run.json", doc).parent
    code = fit_main(["--logs", str(logs), "--models", "m1", "--groups", group, "--trials", "4",
                     "--quiet", "--output", str(tmp_path / "p.yaml"),
                     "--report", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"--groups {group} needs a recorded {reading}, but no training log recorded " \
        f"one" in err and f"'{field}'" in err and f"leave {group} out" in err, err
    assert not (tmp_path / "p.yaml").exists()


def test_the_fit_command_exits_2_naming_the_file_and_field(tmp_path, capsys):
    bad = write(tmp_path / "logs" / "run.json", {**base_log(), "mass": 1e308})
    code = fit_main(["--logs", str(bad.parent), "--models", "m1", "--trials", "4", "--quiet",
                     "--output", str(tmp_path / "p.yaml"), "--report", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(bad) in err and "'mass' (kg)" in err and "repair the log" in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "p.yaml").exists()


# Bags go through the same checks: the bench description, and the sampling of a trial.

@pytest.fixture(scope="module")
def session():
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.5)
    return BagSession(get_actuator("mx64"), [(log, "steps", 8.0, 1, 0)])


def bag_refused(path: Path, *fragments: str) -> None:
    with pytest.raises(BamError) as info:
        read_bag(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "trial 1" in message, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("mass", 1e308, "/bam/bench_info mass (kg) must be in [0, 100]"),
    ("length", 1e6, "/bam/bench_info length (m) must be in (0, 5]"),
    ("supply_voltage", -15.0, "/bam/bench_info supply_voltage (V) must be in (0, 60]"),
])
def test_an_implausible_bench_description_in_a_bag_is_refused(tmp_path, session, field, value,
                                                               fragment):
    messages = bench_messages([session])
    setattr(messages[0][2], field, value)
    assert messages[0][0] == TOPIC_BENCH_INFO
    bag_refused(write_messages(tmp_path / field, messages), fragment)


@pytest.mark.parametrize(("series", "value", "fragment"), [
    ("input_voltage", 0.0, "input voltage of 'joint' is 0 V at 0.000000 s into the trial"),
    ("temperature", -300.0, "temperature of 'joint' is -300 °C at 0.000000 s into the trial"),
])
def test_an_impossible_reading_in_a_bag_is_refused(tmp_path, series, value, fragment):
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.5)
    log = type(log)(**{**log.__dict__, series: np.full(len(log), value)})
    bag = write_messages(tmp_path / series, bench_messages([BagSession(
        get_actuator("mx64"), [(log, "steps", 8.0, 1, 0)])]))
    bag_refused(bag, fragment, "repair or drop that trial")


def test_a_bag_without_a_supply_reading_uses_the_actuators(tmp_path, session):
    messages = bench_messages([session])
    messages[0][2].supply_voltage = math.nan  # the bench does not know it
    (log,) = read_bag(write_messages(tmp_path / "nan_supply", messages))
    assert log.supply_voltage is None


def test_a_hole_in_a_trials_joint_states_is_refused(tmp_path):
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=2.0)
    messages = bench_messages([BagSession(get_actuator("mx64"), [(log, "steps", 8.0, 1, 0)])])
    states = [i for i, m in enumerate(messages) if m[0] == TOPIC_JOINT_STATES]
    for count, refuse in ((60, False), (220, True)):  # pauses of 0.305 s and 1.105 s
        cut = set(states[40:40 + count])
        kept = [m for i, m in enumerate(messages) if i not in cut]
        bag = write_messages(tmp_path / f"cut{count}", kept)
        if refuse:
            bag_refused(bag, "header stamps of /joint_states", "hole of 1.105 s (221 sampling "
                        "periods", "0.195000 s into the trial")
        else:  # a driver's stall, not a hole
            assert len(read_bag(bag)[0]) == len(log)


# The property: whatever is corrupted, a one-line BamError naming the file, or a log that is
# finite and plausible.

TOP_FIELDS = ("mass", "arm-mass", "length", "kp", "vin", "dt")
ENTRY_FIELDS = ("timestamp", "position", "speed", "goal_position", "torque_enable",
                "input_volts", "temp")
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, -1.0, -15.0, 1e6, 1e300, 1e308, -1e308, 0.005, 14.2, 1e-12]),
    st.integers(min_value=-10**6, max_value=10**6),
    st.sampled_from([None, True, "0.1", "abc", [], {}]),
)


@st.composite
def corrupted(draw) -> dict:
    """The base log with one to three corruptions: a top-level field or a run of entries'
    field set to any value or dropped, a hole in the timestamps, their unit changed."""
    doc = base_log()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["top", "drop top", "entry", "drop entry", "hole",
                                     "scale time"]))
        if kind == "top":
            doc[draw(st.sampled_from(TOP_FIELDS))] = draw(VALUES)
        elif kind == "drop top":
            doc.pop(draw(st.sampled_from(TOP_FIELDS + ("mass", "entries"))), None)
        elif kind == "entry" and isinstance(doc.get("entries"), list):
            k, key, value = draw(st.integers(0, N - 1)), draw(st.sampled_from(ENTRY_FIELDS)), \
                draw(VALUES)
            for entry in doc["entries"][k:k + draw(st.integers(1, 10))]:
                entry[key] = value
        elif kind == "drop entry" and isinstance(doc.get("entries"), list):
            key = draw(st.sampled_from(ENTRY_FIELDS))
            every = draw(st.booleans())
            for k, entry in enumerate(doc["entries"]):
                if every or k == N // 2:
                    entry.pop(key, None)
        elif kind == "hole" and isinstance(doc.get("entries"), list):
            hole(doc, draw(st.integers(1, N - 1)), draw(st.sampled_from([0.005, 0.05, 1.0,
                                                                         3600.0])))
        elif kind == "scale time" and isinstance(doc.get("entries"), list):
            factor = draw(st.sampled_from([1e-3, 1e3, 1e6]))
            doc["entries"] = [shifted(e, 0.0, factor) for e in doc["entries"]]
    return doc


def plausible(log, doc: dict) -> None:
    """What an accepted log must be, from the test's own bounds."""
    act = get_actuator("mx64")
    assert 0.0 <= log.bench.mass <= 100.0 and 0.0 <= log.bench.arm_mass <= 100.0
    assert 0.0 < log.bench.length <= 5.0 and 0.0 <= log.kp <= act.gain_limit
    assert log.supply_voltage is None or 0.0 < log.supply_voltage <= 4 * act.supply_voltage
    for name in ("position", "goal", "velocity", "input_voltage", "temperature"):
        series = getattr(log, name)
        assert series is None or (np.isfinite(series).all() and np.abs(series).max() <= 1e4)
    # a servo that answers is powered; no servo runs below -40 °C or above 150 °C
    assert log.input_voltage is None or log.input_voltage.min() > 0.0
    assert log.temperature is None or -40.0 <= log.temperature.min() <= \
        log.temperature.max() <= 150.0
    # the base log spans 0.2 s at 1 kHz, and each of at most three corruptions may add a
    # pause of at most 1 s (a driver's stall): no hole or change of unit got through
    assert 2 <= len(log) <= (0.2 + 3 * 1.0) / log.dt + 1
    times = np.array([e["timestamp"] for e in doc["entries"]])
    assert 1e-5 <= np.median(np.diff(times)) <= 0.1
    assert np.diff(times).max() <= max(1.0, 10 * np.median(np.diff(times)))


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_a_corrupted_legacy_log_is_refused_in_one_line_or_is_plausible(doc):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.json"
        path.write_text(json.dumps(doc))
        try:
            log = read_legacy_log(path)
        except BamError as err:
            message = str(err)
            assert "\n" not in message and str(path) in message, message
            return
    plausible(log, doc)
