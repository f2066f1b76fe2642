"""Upstream's later parameter sets, shipped and cited (issue 25, item 4).

* Feetech STS3215 (7.4 V) M2..M6: Rhoban/bam commit
  31e5b97b3cabfe2b909850d483c4e84afa9781c4, ``bam/params/feetech_sts3215_7_4V/m2..m6.json``;
  each carries a fitted ``command_delay``, our ``latency.command``.
* Waveshare ST3025 (12 V) M4 and M6: Rhoban/bam pull request #12 at commit
  27f3fa5ba7e3b14371d1bcb7ee9fd26a89caa1d0, ``bam/params/waveshare_st3025/m4.json`` and
  ``m6.json``, with the law of ``bam/waveshare/actuator.py`` at that commit.

The numbers below are cited data from those files, checked against what ships.
"""

from __future__ import annotations

import json

import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import PROTOCOL_TRAJECTORIES, command_log
from bam_sim.models.files.bam_json import ISAACLAB, parameters_from_json, parameters_to_json
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.servo.actuator import VOLTAGE
from bam_sim.models.servo.actuators import get_actuator

# command_delay of each STS3215 file at 31e5b97 (s).
STS_DELAYS = {"m2": 0.0011553725873945605, "m3": 0.0049444980290521065,
              "m4": 0.004944939195123091, "m5": 0.005192230394620662,
              "m6": 0.0049807526194816515}
# kt, error_gain_ratio and max_velocity of the same files.
STS_MOTOR = {"m2": (1.1689820311010983, 1.0022318073322358, 5.297335177631078),
             "m6": (1.2753202369175398, 1.1616979929275297, 5.095754044445978)}
# The ST3025 at 27f3fa5: m6 as a published write-up of upstream main gives it
# (kt 1.651, R 3.10, armature 0.0048, viscous 0.0222, no max_velocity), to its digits.
ST3025_M6 = {"kt": 1.6505452653898973, "R": 3.100477300209682,
             "armature": 0.004784795646826235, "friction_viscous": 0.02221608287954161,
             "error_gain_ratio": 1.25267331811306}
ST3025_M4_KT = 1.6662368942151977
NEW_SETS = [("sts3215", m) for m in STS_DELAYS] + [("st3025", "m4"), ("st3025", "m6")]


@pytest.mark.parametrize(("actuator", "model"), NEW_SETS, ids="_".join)
def test_new_sets_load_cite_their_source_and_round_trip(actuator, model):
    params = published_named(actuator, model)
    assert params.provenance["source"] == "published"
    commit = "31e5b97b3cabfe2b909850d483c4e84afa9781c4" if actuator == "sts3215" else (
        "27f3fa5ba7e3b14371d1bcb7ee9fd26a89caa1d0")
    assert commit in params.provenance["release"]
    doc = json.loads(parameters_to_json(params))
    assert doc["actuator"] == {"st3025": "waveshare_st3025"}.get(actuator, actuator)
    delay = STS_DELAYS[model] if actuator == "sts3215" else 0.0
    assert doc["command_delay"] == delay
    back = parameters_from_json(json.dumps(doc))
    assert (back.actuator.name, back.model.name) == (actuator, model)
    assert back.values == params.values  # bit for bit


@pytest.mark.parametrize("model", list(STS_DELAYS))
def test_sts3215_command_delay_is_the_latency_group(model):
    params = published_named("sts3215", model)
    assert params.values["latency.command"] == STS_DELAYS[model]
    assert "latency" in params.groups
    if model in STS_MOTOR:
        kt, ratio, rate = STS_MOTOR[model]
        assert (params.values["kt"], params.values["error_gain_ratio"],
                params.values["max_velocity"]) == (kt, ratio, rate)


def test_st3025_sets_are_upstreams_27f3fa5_files():
    m6 = published_named("st3025", "m6")
    for name, value in ST3025_M6.items():
        assert m6.values[name] == value, name
    assert "max_velocity" not in m6.values
    assert published_named("st3025", "m4").values["kt"] == ST3025_M4_KT


def test_st3025_law_is_upstreams():
    # bam/waveshare/actuator.py at 27f3fa5: VoltageControlledActuator with vin 12.0,
    # error_gain 0.166, max_pwm 1.0 (no current limit); duty = kp·error_gain·ratio·(q_t − q)
    # clipped at ±max_pwm, no target slew; kt identified in [0.05, 2.5], ratio in
    # [0.1, 10], R in [0.1, 10], armature in [1e-5, 0.04].
    act = get_actuator("st3025")
    assert (act.family, act.supply_voltage, act.duty_gain, act.max_duty,
            act.firmware_current_limit) == (VOLTAGE, 12.0, 0.166, 1.0, 0.0)
    assert act.motor_bounds == {"kt": (0.05, 2.5), "R": (0.1, 10.0),
                                "armature": (1e-5, 0.04), "error_gain_ratio": (0.1, 10.0)}
    assert act.driver == ""  # simulation only here (actuators._waveshare_st3025)


def test_upstream_st3025_file_imports_under_our_name():
    doc = {**ST3025_M6, "q_offset": 0.0, "friction_base": 0.05, "model": "m1",
           "actuator": "waveshare_st3025"}
    params = parameters_from_json(json.dumps(doc))
    assert params.actuator.name == "st3025"
    assert params.values["error_gain_ratio"] == ST3025_M6["error_gain_ratio"]


def test_st3025_for_isaaclab_folds_the_ratio_and_moves_alike():
    """Isaac Lab's law has no error_gain_ratio: error_gain carries it, the same duty."""
    params = published_named("st3025", "m6")
    doc = json.loads(parameters_to_json(params, target=ISAACLAB))
    assert "error_gain_ratio" not in doc
    assert doc["error_gain"] == pytest.approx(0.166 * ST3025_M6["error_gain_ratio"],
                                              rel=1e-15)
    back = parameters_from_json(json.dumps(doc))
    assert back.values["error_gain_ratio"] == pytest.approx(ST3025_M6["error_gain_ratio"],
                                                            rel=1e-15)
    act = params.actuator
    bench = Bench(act.masses[-1], act.lengths[-1])
    for name in PROTOCOL_TRAJECTORIES[:2]:
        log = command_log(name, bench, act.gains[-1])
        gap = abs(rollout(params, log).position - rollout(back, log).position).max()
        assert gap <= 1e-12, name
