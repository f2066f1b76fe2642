"""What one mass/length setup cannot fix is held (bam_identify.fitting.priors): the load
terms of M3..M6 at 0, the nested load-free model, unless --free-load-terms or --set.

The guard itself: a simulated MX-64 with load-dependent friction (the published M4 set),
recorded at one setup and two gains, validated at a third. Held, M4 is M2, which nests
M1 and starts from the M1 fit, so it cannot validate worse than M1 for want of load data;
searched on these exact-model logs, it gives the load friction back (what the prior costs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import record
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.plan import plan_fit
from bam_identify.fitting.priors import (
    LOAD_REASON,
    LOAD_TERMS,
    SWING_REASON,
    load_priors,
    swing_priors,
)
from bam_identify.fitting.run import fit
from bam_sim.bench.geometry import Bench
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.model_registry import FRICTION_MODELS, get_model
from bam_sim.models.servo.actuators import get_actuator

TRUTH = published_named("mx64", "m4")
ONE = Bench(mass=1.0, length=0.15)
OTHER = Bench(mass=1.5, length=0.20)
TRAJECTORIES = ("slow_oscillations", "lift_drop", "raise_lower")


def logs_folder(folder: Path, benches: list[Bench], gains: tuple[float, ...]) -> Path:
    """Legacy logs of TRUTH, one per bench, gain and trajectory (seeded noise of 1 mrad)."""
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i, (bench, kp, trajectory) in enumerate(
            (b, k, t) for b in benches for k in gains for t in TRAJECTORIES):
        log = record(TRUTH, bench, kp, trajectory, duration=4.0, noise=1e-3, rng=rng)
        write_legacy_log(folder / f"{i:02d}.json", log, get_actuator("mx64"), trajectory)
    return folder


def job(folder: Path, tmp_path: Path, **options) -> FitJob:
    return FitJob(logs=(folder,), actuator="mx64", quiet=True,
                  output=str(tmp_path / "out" / "{model}.yaml"), report=tmp_path / "report",
                  **options)


@pytest.mark.parametrize("model", sorted(FRICTION_MODELS))
def test_one_setup_holds_each_load_term_of_a_model_at_zero(model):
    logs = [record(TRUTH, ONE, 32.0, "lift_drop", duration=0.5)]
    terms = [name for name in get_model(model).params if name in LOAD_TERMS]
    prior = load_priors(logs, get_model(model))
    assert prior.values == dict.fromkeys(terms, 0.0)
    assert prior.sources == dict.fromkeys(terms, "nested")
    # a second setup, or --free-load-terms: searched
    assert not load_priors([*logs, record(TRUTH, OTHER, 32.0, "lift_drop", duration=0.5)],
                           get_model(model)).values
    assert not load_priors(logs, get_model(model), free=True).values


def test_without_a_free_swing_the_viscous_friction_is_held_at_the_published_m1():
    held = [record(TRUTH, ONE, 32.0, "slow_oscillations", duration=0.5)]
    assert held[0].enabled.all()
    prior = swing_priors(held, TRUTH.actuator, get_model("m4"))
    assert prior.values == {"friction_viscous": published_named("mx64", "m1").values[
        "friction_viscous"]}
    assert prior.reasons == (SWING_REASON,)
    dropped = [*held, record(TRUTH, ONE, 32.0, "lift_drop", duration=4.0)]
    assert not dropped[1].enabled.all()  # a torque-off segment: the swing fixes it
    assert not swing_priors(dropped, TRUTH.actuator, get_model("m4")).values
    combined = load_priors(held, get_model("m4")) + prior
    assert set(combined.values) == {"friction_viscous", "load_friction_base",
                                    "load_friction_stribeck"}
    assert combined.without({"friction_viscous": 0.1}).reasons == (LOAD_REASON,)


def test_the_plan_holds_them_and_set_or_free_searches_them(tmp_path):
    folder = logs_folder(tmp_path / "logs", [ONE], (32.0,))
    plan = plan_fit(job(folder, tmp_path, models=("m1", "m4", "m6")))
    for m in plan.models[1:]:
        held = [n for n in m.model.params if n in LOAD_TERMS]
        assert held and not set(held) & set(m.space.names), m.name
        assert all(m.space.fixed[n] == 0.0 for n in held)
    assert any("held at 0" in w for w in plan.warnings)
    given = plan_fit(job(folder, tmp_path, models=("m4",), set=("load_friction_base=0.1",)))
    (m4,) = given.models
    assert m4.space.fixed["load_friction_base"] == 0.1 and m4.held == {"load_friction_base": 0.1}
    assert m4.prior.values == {"load_friction_stribeck": 0.0}
    assert m4.prior.provenance()["reasons"] == [LOAD_REASON]
    (free,) = plan_fit(job(folder, tmp_path, models=("m4",), free_load_terms=True)).models
    assert {"load_friction_base", "load_friction_stribeck"} <= set(free.space.names)
    assert not free.prior.values


@pytest.mark.numerics
def test_held_m4_validates_no_worse_than_m1_on_a_gain_it_did_not_see(tmp_path):
    folder = logs_folder(tmp_path / "logs", [ONE], (16.0, 32.0, 64.0))
    outcome = fit(job(folder, tmp_path, models=("m1", "m4"), trials=600, validation_kp=64.0))
    m1, m4 = outcome.results
    assert m4.train_mae <= m1.train_mae * (1 + 1e-9)  # nested, started from the M1 fit
    # Validation: no worse than M1's beyond the recordings' 1 mrad noise floor's share.
    assert m4.validation_mae <= m1.validation_mae + 1e-4, (m1.validation_mae, m4.validation_mae)
    written = load(m4.output)
    assert written.provenance["prior"]["sources"] == {
        "load_friction_base": "nested", "load_friction_stribeck": "nested"}
    assert written.values["load_friction_base"] == written.values["load_friction_stribeck"] == 0.0


@pytest.mark.numerics
def test_searched_on_an_exact_model_one_setup_gives_the_load_friction_back(tmp_path):
    """What the prior costs where the model is exact (--free-load-terms): the same logs, M4
    searched, meets the noise floor at the gain it did not see; M1 stays far above it."""
    folder = logs_folder(tmp_path / "logs", [ONE], (16.0, 32.0, 64.0))
    outcome = fit(job(folder, tmp_path, models=("m1", "m4"), trials=600, validation_kp=64.0,
                      free_load_terms=True))
    m1, m4 = outcome.results
    floor = 1e-3 * np.sqrt(2 / np.pi)  # mean |noise| of the recordings' 1 mrad deviation
    assert m4.validation_mae < 1.5 * floor, m4.validation_mae
    assert m1.validation_mae > 3 * m4.validation_mae, (m1.validation_mae, m4.validation_mae)
    assert m4.params.values["load_friction_stribeck"] == pytest.approx(
        TRUTH.values["load_friction_stribeck"], rel=0.05)
