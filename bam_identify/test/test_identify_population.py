"""``fit --units``: a type and its units fitted together; ``eval`` places a new unit.

Four simulated MX-64 units (M1) whose k_t and Coulomb friction deviate from the published
set by known factors record three logs each, with 1 mrad of reading noise; R is held (the
positions fix k_t/R and k_t²/R + K_v, not k_t and R apart). The population fit finds each
unit's deviations (k_t to 2 %, friction to 10 %: the bands the noise on 9 s of logs
allows), and a spread of the order of the units' own. ``eval`` on a new unit's logs calls
a unit 60 % off the type's friction outside the population and one of the type inside.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml
from identify_cases import run

from bam_identify.cli import eval_main, fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.export_cli import export_main
from bam_sim.models.files.parameter_file import load, published_named

TRUTH = published_named("mx64", "m1")
# (k_t, friction_base) factors of each unit
UNITS = {"u1": (1.04, 1.20), "u2": (0.96, 0.85), "u3": (1.00, 1.00), "u4": (1.02, 1.10)}


def unit_set(kt: float, friction: float):
    return TRUTH.replace(kt=TRUTH.values["kt"] * kt,
                         friction_base=TRUTH.values["friction_base"] * friction)


def record(folder, params, logs: int, seed: int):
    for i, log in enumerate(paper_like_set(params, logs, duration=3.0, noise=1e-3, seed=seed)):
        write_legacy_log(folder / f"{i}.json", log, TRUTH.actuator, log.meta["trajectory"])
    return folder



@pytest.fixture(scope="module")
def population(tmp_path_factory):
    root = tmp_path_factory.mktemp("units")
    folders = [record(root / name, unit_set(*f), 3, seed=20 + k)
               for k, (name, f) in enumerate(UNITS.items())]
    out = root / "params" / "mx64_m1.yaml"
    code = fit_main([str(a) for a in ("--logs", *folders, "--units", "--models", "m1",
                                      "--unit-parameters", "kt", "friction_base",
                                      "--set", f"R={TRUTH.values['R']!r}",
                                      "--validation-fraction", 0.0, "--trials", 3000,
                                      "--seed", 0, "--output", out, "--report",
                                      root / "report", "--quiet")])
    assert code == 0
    return root, out


@pytest.mark.numerics
def test_each_unit_and_the_spread_are_found(population):
    root, out = population
    params = load(out)
    found = params.provenance["population"]
    assert set(found["units"]) == set(UNITS)
    for name, (kt, friction) in UNITS.items():
        unit = load(out.with_name(f"mx64_m1_{name}.yaml"))
        assert unit.provenance["unit"] == name
        assert unit.values["kt"] == pytest.approx(TRUTH.values["kt"] * kt, rel=0.02), name
        assert unit.values["friction_base"] == pytest.approx(
            TRUTH.values["friction_base"] * friction, rel=0.10), name
    # The spread is the units' own (log scale): the RMS of their deviations about the
    # type, which the fit puts at their centre.
    true_kt = np.log([kt for kt, _ in UNITS.values()])
    true_friction = np.log([f for _, f in UNITS.values()])
    assert found["spread"]["kt"] == pytest.approx(np.std(true_kt), rel=0.5)
    assert found["spread"]["friction_base"] == pytest.approx(np.std(true_friction), rel=0.5)
    # export --randomization draws the spread: the type's value times exp(±2σ).
    ranges = params.provenance["sensitivity"]["parameters"]["friction_base"]
    sigma = found["spread"]["friction_base"]
    assert ranges["upper"] == pytest.approx(params.values["friction_base"] * np.exp(2 * sigma))


@pytest.mark.numerics
def test_eval_places_a_new_unit_inside_or_outside_the_population(population, tmp_path,
                                                                 capsys):
    root, out = population
    typical = record(tmp_path / "typical", unit_set(1.01, 1.02), 2, seed=40)
    odd = record(tmp_path / "odd", unit_set(1.0, 1.6), 2, seed=41)
    verdicts = {}
    for name, folder in (("typical", typical), ("odd", odd)):
        code, stdout, err = run(eval_main, ["--params", out, "--logs", folder, "--json",
                                            tmp_path / f"{name}.json"], capsys)
        assert code == 0, err
        check = json.loads((tmp_path / f"{name}.json").read_text())["scores"][str(out)]
        verdicts[name] = check["population"]
        assert "population" in stdout
    assert verdicts["typical"]["inside"] and not verdicts["odd"]["inside"]
    odd = verdicts["odd"]
    assert math.expm1(odd["deviation"]["friction_base"]) == pytest.approx(0.6, abs=0.15)
    assert odd["mae_refit"] < 0.5 * odd["mae_type_set"]  # the refit is worth it


def test_units_need_two_folders(tmp_path, capsys):
    folder = record(tmp_path / "only", TRUTH, 2, seed=3)
    code, _, err = run(fit_main, ["--logs", folder, "--units", "--models", "m1", "--trials",
                                  10, "--output", tmp_path / "o.yaml", "--report",
                                  tmp_path / "r"], capsys)
    assert code != 0 and "two units at least" in err and "'only'" in err
    assert not (tmp_path / "o.yaml").exists()


def test_a_unit_parameter_the_fit_does_not_search_is_refused(population, tmp_path, capsys):
    root, _ = population
    code, _, err = run(fit_main, ["--logs", root / "u1", root / "u2", "--units", "--models",
                                  "m1", "--unit-parameters", "alpha", "--output",
                                  tmp_path / "o.yaml", "--report", tmp_path / "r"], capsys)
    assert code != 0 and "--unit-parameters alpha: not searched by the m1 fit" in err


def test_export_randomizes_over_the_units_spread(population, tmp_path, capsys):
    _, out = population
    code, _, err = run(export_main, [out, "--randomization", "--output", tmp_path / "s.json"],
                       capsys)
    assert code == 0, err
    text = (tmp_path / "s_randomization.yaml").read_text()
    assert "fit --units" in text and "spread of its 4 units" in text
    spread = load(out).provenance["population"]["spread"]["friction_base"]
    ranges = yaml.safe_load(text)["ranges"]["friction_scale"]
    assert ranges == pytest.approx([np.exp(-2 * spread), np.exp(2 * spread)])


def test_a_units_backlash_deviates_by_an_amount_within_its_bounds():
    """The backlash width is 0 on a tight unit: it deviates from the type's by an amount
    (clipped to its bounds), where k_t deviates by a factor; the candidates' vectors hold
    what each unit's set holds, and centring moves the type by the units' mean amount."""
    from bam_identify.fitting.population import PopulationSpace
    from bam_identify.fitting.space import SearchSpace

    space = SearchSpace.from_names("mx64", "m1", groups=("backlash",))
    low, high = space.bounds["backlash.width"]
    units = PopulationSpace.build(space, ("a", "b"), ("kt", "backlash.width"))
    assert units.bounds["a/backlash.width"] == pytest.approx((-0.7 * (high - low),
                                                               0.7 * (high - low)))
    assert units.bounds["a/kt"] == (-0.7, 0.7)
    values = {**{n: 0.5 * sum(space.bounds[n]) for n in space.names}, "backlash.width": 0.01,
              "a/kt": 0.1, "a/backlash.width": 0.005, "b/kt": 0.0, "b/backlash.width": -0.02}
    a, b = units.unit_values(values, "a"), units.unit_values(values, "b")
    assert a["backlash.width"] == pytest.approx(0.015) and b["backlash.width"] == low
    assert a["kt"] == pytest.approx(values["kt"] * math.exp(0.1))
    rows = units.population(np.array([[values[n] for n in units.names]]))[0]
    for k, own in enumerate((a, b), start=1):
        np.testing.assert_allclose(rows[k], space.population(
            np.array([[own[n] for n in space.names]]))[0])
    centred = units.centred({**values, "b/backlash.width": -0.005})
    assert centred["backlash.width"] == pytest.approx(0.01)  # the mean amount is 0
    centred = units.centred({**values, "b/backlash.width": 0.001})
    assert centred["backlash.width"] == pytest.approx(0.013)
    assert centred["a/backlash.width"] == pytest.approx(0.002)


def test_bags_in_one_folder_are_the_units_they_name(tmp_path):
    """A bag names its unit (BenchInfo.unit, written by the drivers): the bags of two units
    in one folder are two units; a log that names none is its folder's."""
    from dataclasses import replace

    from identify_cases import mx64_session

    from bam_identify.data.bag_reader import read_bag
    from bam_identify.data.bag_writer import write_bag
    from bam_identify.fitting.population import group_by_unit

    logs = []
    for unit in ("dynamixel id 1", "dynamixel id 2"):
        bag = write_bag(tmp_path / "bags" / unit.replace(" ", "_"),
                        [replace(mx64_session(), unit=unit)])
        logs += read_bag(bag)
    legacy = replace(paper_like_set(TRUTH, 1, duration=1.0, seed=1)[0],
                     meta={"source": str(tmp_path / "u9" / "0.json")})
    units = group_by_unit([*logs, legacy])
    assert {u: len(v) for u, v in units.items()} == {"dynamixel id 1": 2, "dynamixel id 2": 2,
                                                     "u9": 1}
