"""Levenberg–Marquardt polish: convergence to known minima, bounds, evaluation counts."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.polish import LevenbergMarquardt
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.files.parameter_file import published_named

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


class Counted:
    """Residuals of an analytic problem, recording every batch asked for."""

    def __init__(self, function):
        self.function = function
        self.batches: list[np.ndarray] = []

    def __call__(self, U: np.ndarray) -> np.ndarray:
        self.batches.append(U.copy())
        return np.array([self.function(u) for u in U])


def _mae(R: np.ndarray) -> np.ndarray:
    return np.abs(R).mean(axis=1)


def rosenbrock(u: np.ndarray) -> np.ndarray:
    """Rosenbrock's valley as residuals; unit box u ↦ x = 4u − 2, minimum at x = (1, 1)."""
    x = 4.0 * u - 2.0
    return np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])


def test_lm_finds_the_minimum_of_rosenbrock():
    residuals, told = Counted(rosenbrock), []
    lm = LevenbergMarquardt(residuals, _mae, lambda U, s: told.append(len(U)), budget=2000,
                            target=1e-12)
    result = lm.run(np.array([0.1, 0.9]))  # x = (-1.6, 1.6), across the valley
    assert result.reason == "target"
    np.testing.assert_allclose(4.0 * result.u - 2.0, [1.0, 1.0], atol=1e-10)
    # Counted: every evaluated point, told to the caller, within the budget.
    assert result.evaluations == sum(len(b) for b in residuals.batches) == sum(told)
    assert result.evaluations < 300
    # The first call is ONE batch of the start and its n perturbations.
    assert len(residuals.batches[0]) == 3
    np.testing.assert_array_equal(residuals.batches[0][0], [0.1, 0.9])


def test_lm_stays_in_the_box_and_stops_on_the_bound():
    """The unconstrained minimum x = (1, 1) lies outside a box that ends at x₀ = 0.5: the
    bounded minimum is on that bound (x₀ = 0.5, x₁ = 0.25), where the gradient points out."""
    def squeezed(u: np.ndarray) -> np.ndarray:
        x = np.array([-2.0 + 2.5 * u[0], 4.0 * u[1] - 2.0])  # x₀ ∈ [-2, 0.5]
        return np.array([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])

    residuals = Counted(squeezed)
    lm = LevenbergMarquardt(residuals, _mae, lambda U, s: None, budget=3000)
    result = lm.run(np.array([0.2, 0.8]))
    every = np.vstack(residuals.batches)
    assert every.min() >= 0.0 and every.max() <= 1.0
    assert result.u[0] == 1.0  # on the bound
    assert 4.0 * result.u[1] - 2.0 == pytest.approx(0.25, abs=1e-6)
    assert result.reason in ("converged", "stalled")


def test_lm_respects_its_budget():
    residuals = Counted(rosenbrock)
    lm = LevenbergMarquardt(residuals, _mae, lambda U, s: None, budget=20, target=1e-30)
    result = lm.run(np.array([0.1, 0.9]))
    assert result.reason == "budget"
    assert result.evaluations == sum(len(b) for b in residuals.batches) <= 20


@pytest.fixture(scope="module")
def m4_logs():
    """Noise-free logs of a known M4 set: the optimum is the truth, at zero error."""
    return paper_like_set(published_named("mx64", "m4"), 8, duration=3.0, arm_mass=0.1, seed=5)


def test_polish_recovers_the_truth_with_far_fewer_evaluations(m4_logs):
    truth = published_named("mx64", "m4")
    space = SearchSpace.from_names("mx64", "m4")
    polished = identify(space, m4_logs, FitSettings(trials=6000, seed=0, target=1e-7))
    plain = identify(space, m4_logs, FitSettings(trials=6000, seed=0, target=1e-7,
                                                 polish=False))
    assert polished.reached_target and polished.train_mae <= 1e-7
    assert any(reason == "target" for _, reason, _ in polished.polishes)
    assert polished.trials < 0.5 * plain.trials
    for name in ("kt", "R", "armature", "friction_base", "friction_viscous", "alpha"):
        assert polished.values[name] == pytest.approx(truth.values[name], rel=1e-3), name
    assert abs(polished.values["q_offset"]) < 1e-5
    # The reported error is the objective at the reported parameters.
    again = Objective(space, m4_logs)(space.population_of([polished.values]))[0]
    assert again == pytest.approx(polished.train_mae, rel=1e-12)


def test_residuals_give_the_objective(m4_logs):
    space = SearchSpace.from_names("mx64", "m4")
    objective = Objective(space, m4_logs)
    rng = np.random.default_rng(1)
    lower, span = space.unit_box()
    candidates = [dict(zip(space.names, lower + rng.uniform(0.3, 0.7, len(span)) * span,
                           strict=True)) for _ in range(3)]
    rows = objective.residuals(space.population_of(candidates))
    mae = np.abs(rows).sum(axis=1) / objective.batch.lengths.sum()
    np.testing.assert_allclose(mae, objective(space.population_of(candidates)), rtol=1e-12)


def test_polish_evaluations_are_counted_and_recorded(m4_logs, tmp_path):
    """Every candidate, CMA-ES's and the polish's, is one trial of the record and one of
    the fit's count; the polishes' own studies are <study>.r<k>.lm<g>."""
    space = SearchSpace.from_names("mx64", "m4")
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    result = identify(space, m4_logs, FitSettings(trials=900, seed=1, target=1e-6,
                                                  storage=url, study_name="lm"))
    assert result.polishes
    names = [n for n in optuna.get_all_study_names(url) if n.startswith("lm.")]
    assert any(".lm" in n.removeprefix("lm.") for n in names)
    stored = sum(len(optuna.load_study(study_name=n, storage=url).trials) for n in names)
    assert stored == result.trials == result.evaluated


def test_a_resumed_fit_reuses_its_polish(tmp_path):
    """Noisy logs: the polish stalls at the noise floor; resumed past it, the fit reads
    the polish from the record instead of running it again, and ends as a direct fit."""
    logs = paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, noise=1e-3, seed=6)
    space = SearchSpace.from_names("mx64", "m1")
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    first = identify(space, logs, FitSettings(trials=500, seed=4, storage=url,
                                              study_name="p", restarts=False))
    assert first.polishes and all(how != "budget" for _, how, _ in first.polishes)
    resumed = identify(space, logs, FitSettings(trials=700, seed=4, storage=url,
                                                study_name="p", restarts=False))
    direct = identify(space, logs, FitSettings(trials=700, seed=4, restarts=False))
    assert resumed.evaluated == 200
    assert resumed.values == direct.values and resumed.polishes == direct.polishes
