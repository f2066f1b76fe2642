"""Legacy JSON logs of the published implementation: raw and processed forms, writing, errors."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from identify_cases import EROB_BENCH, MX64_BENCH, simulated

from bam_identify.data.legacy_logs import read_legacy_log, read_legacy_logs, write_legacy_log
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuators import get_actuator


def jittered_times(n=700, step=0.001, jitter=0.0003, first=0.0023, seed=3):
    rng = np.random.default_rng(seed)
    return first + np.arange(n) * step + rng.uniform(-jitter, jitter, n)


def raw_dynamixel(times):
    """A raw MX-64 log: position sin(3t), speed 3cos(3t), goal 0.3 + 2t, enabled until 0.4 s."""
    return {
        "mass": 1.0, "arm-mass": 0.12, "length": 0.15, "kp": 8, "vin": 14.2, "motor": "mx64",
        "trajectory": "lift_drop",
        "entries": [{"position": float(np.sin(3 * t)), "speed": float(3 * np.cos(3 * t)),
                     "load": 120, "input_volts": 14.2, "temp": 41, "timestamp": float(t),
                     "goal_position": float(0.3 + 2 * t), "torque_enable": bool(t < 0.4)}
                    for t in times],
    }


def write_json(path, doc):
    path.write_text(json.dumps(doc))
    return path


def test_raw_log_with_jittered_timestamps_is_resampled(tmp_path):
    times = jittered_times()
    log = read_legacy_log(write_json(tmp_path / "raw.json", raw_dynamixel(times)), dt=0.005)
    t = times[0] + np.arange(len(log)) * 0.005
    assert len(log) == int((times[-1] - times[0]) // 0.005) + 1 and log.dt == 0.005
    # linear signals are interpolated exactly, smooth ones within h²/8·|f''|
    np.testing.assert_allclose(log.goal, 0.3 + 2 * t, atol=1e-12)
    h2 = np.diff(times).max() ** 2 / 8 * 1.001
    np.testing.assert_allclose(log.position, np.sin(3 * t), rtol=0, atol=9 * h2)
    np.testing.assert_allclose(log.velocity, 3 * np.cos(3 * t), rtol=0, atol=27 * h2)
    assert np.abs(log.position - np.sin(3 * t)).max() > 1e-9  # it did interpolate
    switch = np.flatnonzero(~log.enabled)[0]
    assert t[switch - 1] < 0.4 + 0.0016 and t[switch] > 0.4 - 0.0016
    assert log.enabled[:switch].all() and not log.enabled[switch:].any()
    assert log.bench.arm_mass == 0.12 and log.kp == 8.0 and log.supply_voltage == 14.2
    assert log.control is None and log.damping is None
    assert log.name == "raw:lift_drop"
    assert log.meta["actuator"] == "mx64" and log.meta["format"] == "raw"


def test_raw_erob_log_keeps_its_measured_current_and_damping(tmp_path):
    times = np.arange(300) * 0.001 + 0.0004
    doc = {"mass": 3.1, "arm_mass": 0.5, "length": 0.5, "kp": 25.0, "damping": 1.5,
           "motor": "erob80_100", "trajectory": "steps",
           "entries": [{"position": 0.1 * t, "speed": 0.1, "torque_demand": 3.0,
                        "control": 2.0 - t, "timestamp": t, "goal_position": 0.2,
                        "torque_enable": True} for t in times]}
    log = read_legacy_log(write_json(tmp_path / "erob.json", doc), dt=0.002)
    t = times[0] + np.arange(len(log)) * 0.002
    np.testing.assert_allclose(log.control, 2.0 - t, atol=1e-12)
    assert log.damping == 1.5 and log.supply_voltage is None and log.bench == EROB_BENCH


def test_processed_log_is_kept_or_resampled(tmp_path):
    dt = 0.005
    doc = raw_dynamixel(np.arange(120) * dt)
    doc["dt"] = dt
    path = write_json(tmp_path / "processed.json", doc)
    kept = read_legacy_log(path, dt=dt)
    positions = [e["position"] for e in doc["entries"]]
    np.testing.assert_array_equal(kept.position, positions)  # bit for bit
    assert kept.meta["format"] == "processed" and len(kept) == 120
    coarse = read_legacy_log(path, dt=0.01)
    np.testing.assert_allclose(coarse.position, positions[::2], atol=1e-15)


def test_write_then_read_round_trip(tmp_path):
    log, _ = simulated("mx64", "lift_drop", MX64_BENCH, 8.0, duration=0.5, supply_voltage=14.8)
    path = write_legacy_log(tmp_path / "mx.json", log, get_actuator("mx64"), "lift_drop")
    doc = json.loads(path.read_text())
    assert doc["arm_mass"] == doc["arm-mass"] == 0.1 and doc["vin"] == 14.8
    assert doc["dt"] == 0.005 and "damping" not in doc
    assert set(doc["entries"][0]) == {"timestamp", "position", "speed", "goal_position",
                                      "torque_enable", "control"}
    back = read_legacy_log(path)
    for series in ("position", "velocity", "goal", "control", "enabled"):
        np.testing.assert_array_equal(getattr(back, series), getattr(log, series))
    assert (back.bench, back.kp, back.supply_voltage) == (log.bench, log.kp, 14.8)

    erob, _ = simulated("erob80_100", "steps", EROB_BENCH, 25.0, duration=0.3)
    path = write_legacy_log(tmp_path / "erob.json", erob, get_actuator("erob80_100"), "steps")
    doc = json.loads(path.read_text())
    assert doc["damping"] == 2.0 and "vin" not in doc  # the actuator's default damping
    assert read_legacy_log(path).damping == 2.0


def test_folder_of_logs_reads_in_name_order(tmp_path):
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.2)
    for name in ("b", "a", "c"):
        write_legacy_log(tmp_path / "logs" / f"{name}.json", log, get_actuator("mx64"), f"t{name}")
    (tmp_path / "logs" / "notes.txt").write_text("not a log")
    logs = read_legacy_logs(tmp_path / "logs")
    assert [log.meta["trajectory"] for log in logs] == ["ta", "tb", "tc"]


def fails(path, *fragments):
    with pytest.raises(BamError) as info:
        read_legacy_log(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    for fragment in fragments:
        assert fragment in message, message


def test_bad_logs(tmp_path):
    base = raw_dynamixel(np.arange(50) * 0.001)
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    fails(bad, "not valid JSON", "line 1")
    fails(write_json(tmp_path / "keys.json", {k: v for k, v in base.items()
                                              if k not in ("kp", "motor")}),
          "lacks 'kp', 'motor'")
    fails(write_json(tmp_path / "motor.json", {**base, "motor": "ax12"}),
          "unknown actuator 'ax12'")
    nan = json.loads(json.dumps(base))
    nan["entries"][3]["position"] = float("nan")
    fails(write_json(tmp_path / "nan.json", nan), "'position' is nan at entry 3")
    back = json.loads(json.dumps(base))
    back["entries"][10]["timestamp"] = back["entries"][8]["timestamp"]
    fails(write_json(tmp_path / "back.json", back), "timestamps are not increasing at entry 10")
    gap = json.loads(json.dumps(base))
    del gap["entries"][5]["goal_position"]
    fails(write_json(tmp_path / "gap.json", gap), "entry 5 lacks 'goal_position'")
    fails(tmp_path / "missing.json", "does not exist")


def test_write_needs_overwrite_to_replace(tmp_path):
    log, _ = simulated("mx64", "steps", MX64_BENCH, 8.0, duration=0.2)
    path = write_legacy_log(tmp_path / "x.json", log, get_actuator("mx64"), "steps")
    with pytest.raises(BamError, match="already exists"):
        write_legacy_log(path, log, get_actuator("mx64"), "steps")
    write_legacy_log(path, log, get_actuator("mx64"), "raise", overwrite=True)
    assert json.loads(path.read_text())["trajectory"] == "raise"


def test_the_bus_input_voltage_travels_as_input_volts(tmp_path):
    log, _ = simulated("mx64", "lift_drop", MX64_BENCH, 8.0, duration=0.5)
    volts = 14.8 - 0.1 * (np.arange(len(log)) % 10)
    log = dataclasses.replace(log, input_voltage=volts)
    path = write_legacy_log(tmp_path / "mx.json", log, get_actuator("mx64"), "lift_drop")
    assert "input_volts" in json.loads(path.read_text())["entries"][0]
    np.testing.assert_array_equal(read_legacy_log(path).input_voltage, volts)
