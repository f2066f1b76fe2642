"""CMA-ES identification: recovery of a known truth, fixed parameters, resume, Ctrl-C."""

from __future__ import annotations

import numpy as np
import pytest

from bam_identify.data.synthetic import paper_like_set, record
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace, nested_start, parse_assignments
from bam_sim.bench.geometry import Bench
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


@pytest.fixture(scope="module")
def m1_logs():
    return paper_like_set(published_named("mx64", "m1"), 8, duration=3.0, seed=3)


def test_fit_recovers_a_known_m1_set(m1_logs):
    truth = published_named("mx64", "m1")
    space = SearchSpace.from_names("mx64", "m1")
    result = identify(space, m1_logs, FitSettings(trials=1500, seed=1, target=2e-5))
    assert result.train_mae <= 2e-5
    assert result.reached_target
    for name in ("kt", "R", "armature", "friction_base", "friction_viscous"):
        assert result.values[name] == pytest.approx(truth.values[name], rel=0.03), name
    assert abs(result.values["q_offset"]) < 1e-3
    # The reported error is the objective at the reported parameters.
    again = Objective(space, m1_logs)(space.population_of([result.values]))[0]
    assert again == pytest.approx(result.train_mae, rel=1e-12)


@pytest.mark.parametrize("actuator", ["xl320", "xl330"])
def test_fit_recovers_a_published_xl_set(actuator):
    """The XL servos' published M4 sets (the XL330 with its current limit binding on the
    heavier setups) recovered from logs simulated with them."""
    truth = published_named(actuator, "m4")
    logs = paper_like_set(truth, 12, duration=4.0, seed=3)
    result = identify(SearchSpace.from_names(actuator, "m4"), logs,
                      FitSettings(trials=4000, seed=0, target=1e-5))
    assert result.train_mae <= 1e-5
    for name in ("kt", "R", "armature", "q_offset"):
        assert result.values[name] == pytest.approx(truth.values[name], rel=0.01), name


def test_same_seed_same_result(m1_logs):
    space = SearchSpace.from_names("mx64", "m1")
    a = identify(space, m1_logs, FitSettings(trials=120, seed=5))
    b = identify(space, m1_logs, FitSettings(trials=120, seed=5))
    assert a.values == b.values and a.train_mae == b.train_mae


def test_fixed_parameters_are_not_searched(m1_logs):
    space = SearchSpace.from_names("mx64", "m1", {"kt": 1.62247, "R": 3.94943},
                                   identify_offset=False)
    assert set(space.names) == {"armature", "friction_base", "friction_viscous"}
    result = identify(space, m1_logs, FitSettings(trials=48, seed=0))
    params = space.parameter_set(result.values, {})
    assert params.values["kt"] == 1.62247 and params.values["q_offset"] == 0.0


def test_set_on_a_parameter_the_model_lacks():
    with pytest.raises(BamError, match="--set load_friction_base: .* not a parameter of model m1"):
        SearchSpace.from_names("mx64", "m1", {"load_friction_base": 0.1})


@pytest.mark.parametrize(("items", "message"), [
    (["kt"], "write it as name=value"),
    (["kt=fast"], "'fast' is not a number"),
    (["kt=nan"], "give a finite number"),
    (["=1"], "write it as name=value"),
])
def test_bad_assignments(items, message):
    with pytest.raises(BamError, match=message):
        parse_assignments(items)


def test_assignments_are_parsed_not_evaluated():
    assert parse_assignments(["kt=1.5e0", " R = 2"]) == {"kt": 1.5, "R": 2.0}
    with pytest.raises(BamError):
        parse_assignments(["kt=__import__('os').getcwd()"])


def test_a_cancellation_keeps_the_best_found(m1_logs):
    space = SearchSpace.from_names("mx64", "m1")
    seen, cancel = [], Cancellation()

    def progress(count, best):
        seen.append(best)
        if len(seen) == 5:
            cancel.request("test")

    result = identify(space, m1_logs, FitSettings(trials=10_000, seed=2), progress,
                      cancel=cancel)
    assert result.interrupted
    assert result.trials < 10_000
    assert result.train_mae == pytest.approx(min(seen))


def test_storage_resumes_a_study(m1_logs, tmp_path):
    space = SearchSpace.from_names("mx64", "m1")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    first = identify(space, m1_logs, FitSettings(trials=36, seed=0, storage=url,
                                                 study_name="resume"))
    second = identify(space, m1_logs, FitSettings(trials=72, seed=0, storage=url,
                                                  study_name="resume"))
    assert first.trials == 36 and second.trials == 72
    assert second.train_mae <= first.train_mae
    import optuna

    names = [n for n in optuna.get_all_study_names(url) if n.startswith("resume.r")]
    assert sum(len(optuna.load_study(study_name=n, storage=url).trials) for n in names) == 72


def test_restarts_after_stagnation_keep_the_best():
    """Noisy data: CMA-ES reaches the noise floor, stalls, restarts with a larger population."""
    logs = paper_like_set(published_named("mx64", "m1"), 6, duration=2.0, noise=2e-3, seed=3)
    space = SearchSpace.from_names("mx64", "m1")
    result = identify(space, logs, FitSettings(trials=2500, seed=0))
    assert result.restarts >= 1
    assert result.train_mae < 2e-3  # about 0.8 σ, the MAE of the noise itself
    assert [h[2] for h in result.history] == sorted((h[2] for h in result.history),
                                                    reverse=True)
    plain = identify(space, logs, FitSettings(trials=2500, seed=0, restarts=False))
    assert plain.restarts == 0


def test_stagnation_rule():
    from bam_identify.fitting.cma_run import CmaRun

    run = CmaRun(11, 0, 12, seed=0)
    horizon = 10 + -(-30 * 11 // 12)
    run.bests = [1.0] * (horizon + 1)
    assert run.stagnated()
    run.bests = list(np.geomspace(1.0, 0.5, horizon + 1))
    assert not run.stagnated()
    run.bests = [1.0] * horizon
    assert not run.stagnated()  # too early to tell


def test_objective_is_the_step_weighted_mae(m1_logs):
    truth = published_named("mx64", "m1")
    space = SearchSpace.from_names("mx64", "m1")
    values = {k: truth.values[k] for k in space.names if k != "q_offset"}
    values["q_offset"] = 0.01
    objective = Objective(space, m1_logs)
    per_log = objective.per_log(values)
    lengths = np.array([len(log) for log in m1_logs])
    score = objective(space.population_of([values]))[0]
    assert score == pytest.approx((per_log * lengths).sum() / lengths.sum())
    # the truth reproduces the logs
    assert objective(space.population_of([{**values, "q_offset": 0.0}]))[0] == 0.0


@pytest.mark.parametrize(("simple", "rich"), [("m1", "m2"), ("m1", "m3"), ("m2", "m4"),
                                              ("m3", "m4"), ("m4", "m5"), ("m5", "m6"),
                                              ("m4", "m6")])
def test_nested_start_reproduces_the_simpler_model(simple, rich):
    logs = paper_like_set(published_named("mx106", "m4"), 4, duration=2.0, seed=8)
    fitted = published_named("mx106", simple).values
    simple_space, rich_space = SearchSpace.from_names("mx106",
                                                      simple), SearchSpace.from_names("mx106", rich)
    start = nested_start(rich_space, fitted)
    assert set(start) == set(rich_space.names)
    at_simple = {k: fitted.get(k, 0.0) for k in simple_space.names}
    a = Objective(simple_space, logs)(simple_space.population_of([at_simple]))[0]
    b = Objective(rich_space, logs)(rich_space.population_of([start]))[0]
    assert b == pytest.approx(a, rel=1e-12, abs=1e-15)


def test_warm_started_fit_is_no_worse_than_its_start():
    logs = paper_like_set(published_named("mx64", "m5"), 6, duration=2.0, seed=9)
    m4 = published_named("mx64", "m4").values
    space = SearchSpace.from_names("mx64", "m5")
    start = nested_start(space, m4)
    at_start = Objective(space, logs)(space.population_of([start]))[0]
    result = identify(space, logs, FitSettings(trials=24, seed=0, start=start))
    assert result.train_mae <= at_start


def test_bad_storage_url_is_a_clear_error(m1_logs):
    space = SearchSpace.from_names("mx64", "m1")
    with pytest.raises(BamError, match="storage 'nosuchdb://x': the fit records into SQLite"):
        identify(space, m1_logs, FitSettings(trials=10, storage="nosuchdb://x"))


def test_a_fit_whose_every_rollout_diverges_says_so(m1_logs, monkeypatch):
    """Non-finite or absurd errors (a rollout gone to 1e57 rad) are reported as divergence,
    never written as a result."""
    from bam_identify.fitting import fit

    class Diverging(Objective):
        def score(self, population):
            scores = np.full(len(population), 1e57)
            scores[::2] = np.nan
            return scores, np.zeros(len(population))

    monkeypatch.setattr(fit, "Objective", Diverging)
    with pytest.raises(BamError, match=r"every one of the 20 candidates evaluated diverged"):
        identify(SearchSpace.from_names("mx64", "m1"), m1_logs[:2],
                 FitSettings(trials=20, seed=0, popsize=10))


@pytest.mark.parametrize("actuator", ["sts3215", "sts3215_12v"])
def test_fit_recovers_a_published_sts_set_with_its_firmware(actuator):
    """The STS3215 sets recovered with the firmware's gain ratio and target rate freed.
    The target rate is seen only where goals move faster than it: the protocol's steps
    (the section V-A trajectories stay below the 12 V set's 14.6 rad/s)."""
    truth = published_named(actuator, "m1")
    logs = paper_like_set(truth, 12, duration=4.0, seed=3, trajectories=(
        "steps", "accelerated_oscillations", "lift_drop", "slow_oscillations"))
    result = identify(SearchSpace.from_names(actuator, "m1"), logs,
                      FitSettings(trials=3000, seed=0, target=1e-5))
    assert result.train_mae <= 1e-5
    for name in ("kt", "R", "armature", "error_gain_ratio", "max_velocity"):
        assert result.values[name] == pytest.approx(truth.values[name], rel=0.02), name


def test_fit_recovers_the_supply_sag():
    """--groups supply: the series resistance of a sagging supply, identified from the
    positions of simulated logs (the MX-64 draws amperes at full duty)."""
    truth = published_named("mx64", "m1").replace(**{"supply.resistance": 1.2})
    logs = paper_like_set(truth, 12, duration=4.0, seed=3)
    result = identify(SearchSpace.from_names("mx64", "m1", groups=("supply",)), logs,
                      FitSettings(trials=3000, seed=0, target=1e-5))
    assert result.train_mae <= 1e-5
    assert result.values["supply.resistance"] == pytest.approx(1.2, rel=0.1)
    for name in ("kt", "R", "armature"):
        assert result.values[name] == pytest.approx(truth.values[name], rel=0.02), name


def test_fit_recovers_the_supply_sag_from_the_bus_voltage():
    """Light loads and noisy positions hide the sag in the motion; the input voltage
    the bus reports (0.1 V steps) still tells R_s, and is scored when it is searched."""
    truth = published_named("mx64", "m1").replace(**{"supply.resistance": 0.8})
    rng = np.random.default_rng(4)
    logs = [record(truth, Bench(0.5, 0.1), kp, name, noise=2e-3, rng=rng, voltage_step=0.1,
                   duration=3.0)
            for kp in (8.0, 32.0) for name in ("lift_drop", "steps", "raise_lower")]
    assert all(log.input_voltage is not None and log.input_voltage.min() < 14.0
               for log in logs if log.meta["trajectory"] == "steps")
    space = SearchSpace.from_names("mx64", "m1", groups=("supply",))
    objective = Objective(space, logs)
    assert objective.voltage_weight > 0.0
    result = identify(space, logs, FitSettings(trials=1500, seed=0))
    assert result.values["supply.resistance"] == pytest.approx(0.8, rel=0.1)
    assert objective.voltage_error(result.values) < 0.05  # V: the readings' rounding
    # a search without the sag ignores the readings
    assert Objective(SearchSpace.from_names("mx64", "m1"), logs).voltage_weight == 0.0


def test_fit_recovers_an_st3025_set_with_its_law():
    """The ST3025's law (no target slew, PWM limit 1.0, fitted duty-gain ratio) identified
    from noiseless simulated logs: the motor of its published M6 (Rhoban/bam 27f3fa5) under
    M1 friction. Bands as the STS3215's: noiseless logs, so only the optimiser's stop."""
    m6 = published_named("st3025", "m6").values
    truth = ParameterSet.from_names("st3025", "m1", {
        name: m6[name] for name in ("kt", "R", "armature", "error_gain_ratio", "q_offset",
                                    "friction_base", "friction_viscous")})
    logs = paper_like_set(truth, 12, duration=4.0, seed=3)
    result = identify(SearchSpace.from_names("st3025", "m1"), logs,
                      FitSettings(trials=3000, seed=0, target=1e-5))
    assert result.train_mae <= 1e-5
    for name in ("kt", "R", "armature", "error_gain_ratio", "friction_base"):
        assert result.values[name] == pytest.approx(truth.values[name], rel=0.02), name
