"""The BAM authors' XL330 recordings: every reading of a legacy log is read, and R(T) is fitted.

The twelve logs (``shared/data/real/xl330`` beside this checkout, see its
README: kp 100, 200 and 400, four runs each, in that order) carry the servo's
temperature, the bus's input voltage, the supply ``vin`` and the firmware's
``load`` (the XL330's Present PWM register). The
tests that need them skip, saying so, where shared/ is absent; those on
made-up logs (missing readings, bad values) always run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from bam_identify.data.legacy_logs import read_legacy_log, read_legacy_logs, write_legacy_log
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.held import group_defaults
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.report import THERMAL_SPAN
from bam_identify.fitting.run import fit
from bam_identify.fitting.space import SearchSpace, nested_start
from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import DEFAULT_TEMPERATURE_WEIGHT, get_group
from bam_sim.models.servo.actuators import get_actuator

# The BAM authors' public XL330 logs, in the shared/ folder beside the repository.
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "xl330"
needs_real = pytest.mark.skipif(not REAL.is_dir(),
                                reason=f"no {REAL} beside this checkout (the real XL330 logs)")
PWM_FULL = 885.0  # the XL330's Present PWM at full duty (its PWM Limit register)
RPM = 2.0 * math.pi / 60.0


def real_files() -> list[Path]:
    return sorted(REAL.glob("*.json"))


def raw(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """A log's top-level fields and its entry columns, straight from the JSON."""
    doc = json.loads(path.read_text())
    keys = doc["entries"][0].keys()
    return doc, {k: np.array([e[k] for e in doc["entries"]], dtype=float) for k in keys}


def signed(counts: np.ndarray) -> np.ndarray:
    """The unsigned 16-bit register as two's complement."""
    return np.where(counts >= 2**15, counts - 2**16, counts)


# What the data's README says of the series: three gains, four runs each, recorded in that
# order; the servo warms from 28 to 34 °C; the bus sags furthest at the highest gain.
GAINS = (100.0, 200.0, 400.0)
RUNS_PER_GAIN = 4
TEMPERATURE_RANGE = (27.0, 34.0)  # °C: the sensor's 1 °C readings, interpolated


@needs_real
def test_the_real_logs_read_temperature_voltage_supply_and_speed():
    means, sags, gains = [], {gain: [] for gain in GAINS}, []
    for path in real_files():
        doc, col = raw(path)
        log = read_legacy_log(path)  # processed at the default dt: kept sample for sample
        np.testing.assert_array_equal(log.temperature, col["temp"])
        np.testing.assert_array_equal(log.input_voltage, col["input_volts"])
        np.testing.assert_array_equal(log.velocity, col["speed"])
        assert log.supply_voltage == doc["vin"] == 7.4
        low, high = TEMPERATURE_RANGE
        assert low <= col["temp"].min() and col["temp"].max() <= high
        means.append(col["temp"].mean())
        gains.append(float(doc["kp"]))
        # The bus reads 7.3 V at rest on the 7.4 V supply, sags under load, and rises
        # above it where a braking motor returns energy to the bus.
        assert 7.0 <= np.median(col["input_volts"]) <= 7.5
        assert 5.5 <= col["input_volts"].min() < 7.5 and col["input_volts"].max() <= 9.5
        sags[gains[-1]].append(col["input_volts"].min())
        # speed is rad/s: its commonest step is the velocity register's 0.229 rpm
        steps, counts = np.unique(np.abs(col["speed"][col["speed"] != 0.0]), return_counts=True)
        assert steps[np.argmax(counts)] == pytest.approx(0.229 * RPM, rel=1e-9)
    # The series: each gain's runs in a row, the gains rising.
    assert gains == [gain for gain in GAINS for _ in range(RUNS_PER_GAIN)]
    # The servo warms over the series (readings in 1 °C steps, interpolated).
    assert np.all(np.diff(means) >= -0.1) and means[-1] - means[0] >= 5.0
    # The deepest sag deepens with the gain (the firmware's duty grows with kp).
    deepest = [min(sags[gain]) for gain in GAINS]
    assert deepest == sorted(deepest, reverse=True) and deepest[-1] < 6.0 < deepest[0]


@needs_real
def test_the_xl330_load_is_its_pwm_duty():
    for path in real_files():
        doc, col = raw(path)
        log = read_legacy_log(path)
        assert log.meta["load"].startswith("applied PWM duty")
        assert np.abs(log.load).max() <= 1.0
        counts = signed(col["load"])
        register = np.abs(counts) <= PWM_FULL  # the rest are blends of 65535 and 0
        assert register.mean() > 0.98
        np.testing.assert_allclose(log.load[register] * PWM_FULL, counts[register], atol=1e-9)
        # The evidence for the unit: the duty is the firmware's P law, kp·gain·error,
        # within the PWM limit (full duty), where the kp 400 runs hold it.
        on = log.enabled & register
        law = doc["kp"] * get_actuator("xl330").duty_gain * (log.goal - log.position)
        inside = on & (np.abs(law) < 1.0)
        slope = np.polyfit(law[inside], log.load[inside], 1)[0]
        assert 0.95 <= slope <= 1.05, path
        clipped = on & (np.abs(law) >= 1.05)  # past the limit by more than the law's scatter
        np.testing.assert_array_equal(log.load[clipped], np.sign(law[clipped]))
    assert clipped.any()  # the last kp 400 run reaches the limit


@needs_real
def test_a_real_log_written_back_reads_the_same(tmp_path):
    log = read_legacy_log(real_files()[0])
    again = read_legacy_log(write_legacy_log(tmp_path / "again.json", log, get_actuator("xl330"),
                                             "sin_sin"))
    for name in ("temperature", "input_voltage", "load", "velocity", "position"):
        np.testing.assert_allclose(getattr(again, name), getattr(log, name), atol=1e-12)
    assert again.supply_voltage == 7.4


def made_up(n: int = 200, dt: float = 0.005, **top) -> dict:
    """A processed XL330 log with every reading, its load as the unsigned register."""
    t = np.arange(n) * dt
    duty = 0.3 * np.sin(20.0 * t)
    return {"mass": 0.49, "length": 0.1, "kp": 100, "vin": 7.4, "motor": "xl330",
            "trajectory": "sin_sin", "dt": dt, **top,
            "entries": [{"timestamp": float(x), "position": float(0.1 * np.sin(x)),
                         "speed": float(0.1 * np.cos(x)), "goal_position": 0.0,
                         "torque_enable": True, "input_volts": 7.3, "temp": 29.0,
                         "load": float(round(d * PWM_FULL) % 2**16)}
                        for x, d in zip(t, duty, strict=True)]}


def write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_a_made_up_log_reads_its_readings_and_without_them(tmp_path):
    log = read_legacy_log(write(tmp_path / "full.json", made_up()))
    assert np.all(log.temperature == 29.0) and np.all(log.input_voltage == 7.3)
    assert 0.25 < np.abs(log.load).max() <= 0.3 + 1.0 / PWM_FULL
    assert log.load.min() < 0.0  # 65535 is -1: the sign is decoded
    bare = made_up()
    for entry in bare["entries"]:
        for key in ("temp", "load", "speed", "input_volts"):
            del entry[key]
    log = read_legacy_log(write(tmp_path / "bare.json", bare))
    assert (log.temperature, log.load, log.velocity, log.input_voltage) == (None,) * 4
    assert "load" not in log.meta and log.supply_voltage == 7.4


def test_a_load_blended_across_zero_is_rebuilt_and_a_foreign_one_refused(tmp_path):
    doc = made_up()
    doc["entries"][50]["load"] = 31000.0  # a resampled 65535 → 0: no register value
    log = read_legacy_log(write(tmp_path / "blend.json", doc))
    assert abs(log.load[50] - 0.5 * (log.load[49] + log.load[51])) < 1e-12
    doc = made_up()
    for entry in doc["entries"][:20]:
        entry["load"] = 40000.0
    path = write(tmp_path / "foreign.json", doc)
    with pytest.raises(BamError) as info:
        read_legacy_log(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "'load'" in message, message


def erob_log() -> dict:
    t = np.arange(100) * 0.001
    return {"mass": 3.1, "arm_mass": 0.5, "length": 0.5, "kp": 25.0, "damping": 1.5,
            "motor": "erob80_50", "trajectory": "steps",
            "entries": [{"timestamp": float(x), "position": 0.0, "goal_position": 0.0,
                         "torque_enable": True, "control": 0.0} for x in t]}


@pytest.mark.parametrize("vin", [0, -15, math.nan, "7.4"])
@pytest.mark.parametrize("doc", [made_up, erob_log])
def test_a_bad_vin_is_refused_in_one_line(tmp_path, doc, vin):
    path = write(tmp_path / "bad_vin.json", {**doc(), "vin": vin})
    with pytest.raises(BamError) as info:
        read_legacy_log(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "'vin' (V)" in message, message


TRIALS = 800  # a second or two per fit on the 48 s of data
# The temperature term weighs 1 mrad per K: the thermal constants settle after the
# positions, so the thermal fit gets more trials (a few seconds).
THERMAL_TRIALS = 2000


def thermal_bounds() -> dict[str, tuple[float, float]]:
    return get_group("thermal").bounds(get_actuator("xl330").scales)


@needs_real
@pytest.mark.numerics
def test_a_thermal_fit_on_the_real_logs_converges(tmp_path):
    job = FitJob(logs=(REAL,), actuator="xl330", models=("m1",), trials=THERMAL_TRIALS,
                 validation_fraction=0.0, groups=("thermal",), quiet=True,
                 output=str(tmp_path / "{model}.yaml"), report=tmp_path / "report")
    (result,) = fit(job).results
    values = result.params.values
    for name, (low, high) in thermal_bounds().items():
        assert low <= values[name] <= high, name
    low, high = get_actuator("xl330").motor_bounds["R"]
    assert low <= values["R"] <= high
    # The servo warms over tens of seconds: no settling within one 6 s run.
    assert values["thermal.resistance"] * values["thermal.capacitance"] > 6.0
    # Ambient and R's reference: the coolest first reading (28 °C).
    assert values["thermal.ambient"] == values["thermal.reftemp"] == 28.0
    # Within one step of the 1 °C sensor: the fitted heating follows its readings (a
    # winding heated by the searched C's lower bound would run away from them).
    assert result.train_temperature_mae < 1.0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "servo's own sensor reading" in report and "not the winding" in report
    temps = np.concatenate([raw(path)[1]["temp"] for path in real_files()])
    span = temps.max() - temps.min()  # 28 to 34 °C: what the warning says it cannot fix
    assert TEMPERATURE_RANGE[1] - TEMPERATURE_RANGE[0] - 1.0 < span < THERMAL_SPAN
    assert f"warm the servo by {span:.1f} K only" in report and "one mass/length setup" in report


@needs_real
@pytest.mark.numerics
def test_the_thermal_fit_is_no_worse_than_the_nested_fit_without_it(tmp_path):
    """R(T) with tempcoef 0 is the model without thermal: started there (the start is
    evaluated first), the thermal fit's score, position MAE + w·temperature MAE, can only
    end at or below the start's, whatever the CPU's rounding. So its position MAE is at
    most the nested fit's plus w times the start's temperature MAE (a fraction of a K)."""
    job = FitJob(logs=(REAL,), actuator="xl330", models=("m1",), trials=TRIALS,
                 validation_fraction=0.0, quiet=True, output=str(tmp_path / "{model}.yaml"),
                 report=tmp_path / "report")
    (plain,) = fit(job).results
    logs = read_legacy_logs(REAL)
    space = SearchSpace.from_names("xl330", "m1", group_defaults(("thermal",), logs),
                              groups=("thermal",))
    start = nested_start(space, plain.params.values)
    # Nested: no tempcoef; a slow, large winding so the start heats little.
    bounds = thermal_bounds()
    start.update({"thermal.tempcoef": 0.0, "thermal.capacitance": bounds["thermal.capacitance"][1],
                  "thermal.resistance": bounds["thermal.resistance"][1]})
    objective = Objective(space, logs)
    start_mae, start_t = objective.errors(start)
    assert start_mae == pytest.approx(plain.train_mae, rel=1e-9)  # the same positions
    found = identify(space, logs, FitSettings(trials=TRIALS // 2, start=start))
    mae, temperature = objective.errors(found.values)
    w = DEFAULT_TEMPERATURE_WEIGHT
    slack = 1e-9 * start_mae  # the batched and the single scoring round differently
    assert mae + w * temperature <= start_mae + w * start_t + slack
    assert mae <= plain.train_mae + w * start_t + slack
    assert start_t < 1.0  # the allowance above is under 1 mrad
