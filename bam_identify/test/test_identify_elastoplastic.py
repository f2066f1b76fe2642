"""Identification of the elasto-plastic models ep_*: round trip, constraint handling, CLI.

Condition (14) and the coupling limit are those of
reference/chattering-free-stiction.md (see bam_sim.models.elastoplastic.validity).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from identify_cases import run

from bam_identify.cli import eval_main, fit_main
from bam_identify.data.bag_writer import BagSession, BagTrial, write_bag
from bam_identify.data.synthetic import elastoplastic_example, paper_like_set, record
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.objective import INFEASIBLE, Objective
from bam_identify.fitting.space import SearchSpace, nested_start
from bam_sim.bench.bench_log import LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae, batch_violation
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import load, save
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


def values_of(params, space: SearchSpace) -> dict[str, float]:
    """The search-space coordinates of a parameter set (q_offset 0)."""
    return {name: params.values.get(name, 0.0) for name in space.names}


@pytest.fixture(scope="module")
def noisy_logs():
    """12 logs of 3 s (Table I setups × the four trajectories) under a known ep_stribeck
    set, 1 mrad Gaussian noise on the positions: 8 to fit, 4 (one per trajectory) to
    validate."""
    truth = elastoplastic_example(get_actuator("mx64"), get_model("ep_stribeck"))
    logs = paper_like_set(truth, 12, duration=3.0, noise=1e-3, seed=4)
    return truth, logs[:8], logs[8:]


def test_round_trip_recovers_the_truth(noisy_logs):
    """Fitted back from noisy logs until it scores as well as the truth on the training
    logs (their noise floor): the validation MAE at the truth's (noise floor), the
    friction levels close to the truth's, the result valid.

    With a fixed 3000 trials the fit stopped in a local optimum 2 % above the floor,
    F_S 9 % off and the validation MAE 4.2 % above the truth's: a hair from the old 10 %
    and 5 % bands, and where CMA-ES ends depends on the CPU (numpy's and OpenBLAS's
    kernels). Run to the floor, it took 3989 to 4289 trials (one IPOP restart) on the
    CPU variants measured (numpy's AVX-512, AVX2 or SSE kernels, OpenBLAS's host,
    Haswell or Prescott ones, 1 or 2 numba threads): the budget is ~3x that.
    """
    truth, train, validation = noisy_logs
    space = SearchSpace.from_names("mx64", "ep_stribeck")
    at_truth = values_of(truth, space)
    truth_train = Objective(space, train)(space.population_of([at_truth]))[0]
    truth_val = Objective(space, validation)(space.population_of([at_truth]))[0]
    assert 0.7e-3 < truth_val < 0.9e-3  # the MAE of 1 mrad noise is 0.8 mrad
    result = identify(space, train, FitSettings(trials=12000, seed=0, target=truth_train),
                      check_logs=validation)
    assert result.reached_target, (result.trials, result.train_mae / truth_train)
    fitted_val = Objective(space, validation)(space.population_of([result.values]))[0]
    # A fit of p = 10 parameters on N = 4800 samples misses the truth's positions by
    # about σ·sqrt(π/2·p/N) ≈ σ/18 (RMS). Gaussian noise σ: E|ε + δ| = σ·sqrt(2/π)·
    # (1 + δ²/2σ² + ...), so a miss of σ/5 (3.5x that) is 2 % above the truth's MAE.
    assert fitted_val <= (1.0 + 0.2**2 / 2) * truth_val
    v, t = result.values, truth.values
    assert v["friction_base"] == pytest.approx(t["friction_base"], rel=0.05)
    f_s = v["friction_base"] + v["friction_stribeck"]
    assert f_s == pytest.approx(t["friction_base"] + t["friction_stribeck"], rel=0.1)
    assert v["friction_viscous"] == pytest.approx(t["friction_viscous"], rel=0.1)
    everything = LogBatch.pack(train + validation, truth.actuator)
    assert batch_violation(space.model, space.population_of([v]), everything)[0] == 0.0


def test_invalid_candidates_are_scored_not_simulated(noisy_logs):
    truth, train, _ = noisy_logs
    space = SearchSpace.from_names("mx64", "ep_stribeck")
    good = values_of(truth, space)
    # (14): r = (F_S − F_C)/v_S − D grows as v_S shrinks; coupling: T·(K·T + 2B) < 4J.
    bad_14 = {**good, "dtheta_stribeck": 0.01}
    worse_14 = {**good, "dtheta_stribeck": 0.005}
    unstable = {**good, "contact_stiffness": 1500.0, "contact_damping": 3.0,
                "armature": 0.001}
    objective = Objective(space, train)
    scores = objective(space.population_of([good, bad_14, worse_14, unstable]))
    batch = LogBatch.pack(train, truth.actuator)
    simulated = batch_mae(space.model, space.population_of([good]), batch) @ objective.weights
    assert scores[0] == simulated[0]
    assert np.all(scores[1:] > INFEASIBLE)
    assert scores[1] < scores[2]  # ranked by how far they are from (14)
    assert objective.evaluations == 4
    with pytest.raises(BamError) as err:
        objective.per_log(bad_14)
    assert "(14)" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(BamError, match="sticking is unstable"):
        objective.per_log(unstable)


def test_a_fit_without_any_valid_candidate_says_so(noisy_logs):
    """F_S − F_C = 0.5 N·m held with v_S = 1 mrad/s: r = 500 N·m·s/rad, beyond any K·T + B
    of the box; nothing is simulated, and the fit says why instead of writing a set."""
    _, train, _ = noisy_logs
    space = SearchSpace.from_names("mx64", "ep_stribeck",
                              {"friction_stribeck": 0.5, "dtheta_stribeck": 0.001})
    with pytest.raises(BamError, match=r"none of the 24 candidates .* condition \(14\)"):
        identify(space, train, FitSettings(trials=24, seed=0, popsize=12))


def test_m_model_scores_are_unchanged(noisy_logs):
    """The constraint step leaves M1..M6 alone: the same scores as batch_mae's."""
    from bam_sim.models.files.parameter_file import published_named

    _, train, _ = noisy_logs
    space = SearchSpace.from_names("mx64", "m4")
    m4 = values_of(published_named("mx64", "m4"), space)
    objective = Objective(space, train)
    batch = LogBatch.pack(train, objective.batch.actuator)
    direct = batch_mae(get_model("m4"), space.population_of([m4]), batch) @ objective.weights
    assert objective(space.population_of([m4]))[0] == direct[0]


@pytest.mark.parametrize(("simple", "rich"), [("ep_cv", "ep_stribeck"),
                                              ("ep_stribeck", "ep_load")])
def test_nested_start_reproduces_the_simpler_ep_model(noisy_logs, simple, rich):
    """F_S − F_C = 0 turns (21) into (19), K_l = K_l^s = 0 turns ep_load into ep_stribeck
    (only the latter is a warm start of the fit, see NESTED_IN)."""
    _, train, _ = noisy_logs
    fitted = elastoplastic_example(get_actuator("mx64"), get_model(simple)).values
    simple_space, rich_space = SearchSpace.from_names("mx64",
                                                      simple), SearchSpace.from_names("mx64", rich)
    start = nested_start(rich_space, fitted)
    at_simple = {k: fitted.get(k, 0.0) for k in simple_space.names}
    a = Objective(simple_space, train)(simple_space.population_of([at_simple]))
    b = Objective(rich_space, train)(rich_space.population_of([start]))
    assert b[0] == a[0]


# -- the executables --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ep_bag(tmp_path_factory):
    """8 logs of 2 s under the example ep_stribeck set, one bench, two gains."""
    truth = elastoplastic_example(get_actuator("mx64"), get_model("ep_stribeck"))
    bench = Bench(1.0, 0.15)
    rng = np.random.default_rng(6)
    logs = [record(truth, bench, kp, name, duration=2.0, noise=5e-4, rng=rng)
            for kp in (8.0, 16.0)
            for name in ("accelerated_oscillations", "slow_oscillations", "raise_lower",
                         "lift_drop")]
    sessions = [BagSession(get_actuator("mx64"), [BagTrial(log, log.meta["trajectory"], log.kp,
                                                           i + 1, 0)])
                for i, log in enumerate(logs)]
    return truth, write_bag(tmp_path_factory.mktemp("bags") / "ep_bench", sessions)



def test_fit_ep_models_from_a_bag(ep_bag, tmp_path, capsys):
    """fit --models ep_load ep_stribeck: parameter files, warm start, report; eval reads
    them."""
    truth, bag = ep_bag
    code, stdout, err = run(fit_main, ["--bags", bag, "--models", "ep_load", "ep_stribeck",
                                       "--trials", 80, "--output", tmp_path / "{model}.yaml",
                                       "--report", tmp_path / "report", "--quiet"], capsys)
    assert code == 0, err
    fitted = load(tmp_path / "ep_stribeck.yaml")
    assert fitted.model.name == "ep_stribeck" and "warm_start" not in fitted.provenance
    assert set(truth.model.params) <= set(fitted.values)
    assert load(tmp_path / "ep_load.yaml").provenance["warm_start"] == "ep_stribeck"
    assert "ep_stribeck" in stdout and "ep_load" in stdout
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert set(summary["elastoplastic"]) == {"ep_load", "ep_stribeck"}
    ep = summary["elastoplastic"]["ep_stribeck"]
    assert ep["admittance"] >= ep["required_admittance"] and ep["coupling_ratio"] < 1.0
    assert ep["pre_sliding_displacement"] == pytest.approx(
        (fitted.values["friction_base"] + fitted.values["friction_stribeck"])
        / fitted.values["contact_stiffness"])
    figure = tmp_path / "report" / summary["figures"]["friction"]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Elasto-plastic models" in (tmp_path / "report" / "report.md").read_text()
    code, stdout, err = run(eval_main, ["--params", tmp_path / "ep_stribeck.yaml",
                                        save(truth, tmp_path / "truth.yaml"), "--bags", bag],
                            capsys)
    assert code == 0, err
    rows = {line.split()[0]: float(line.split()[-1]) for line in stdout.splitlines()[1:]}
    assert rows[str(tmp_path / "truth.yaml")] < 1e-3  # the noise, 0.5 mrad std


def test_eval_refuses_a_set_violating_14(ep_bag, tmp_path, capsys):
    truth, bag = ep_bag
    # r = (F_S − F_C)/v_S − D = 0.08/0.005 − 0.02 ≈ 16 > K·T + B = 2.85 at 5 ms.
    bad = save(truth.replace(dtheta_stribeck=0.005), tmp_path / "bad.yaml")
    code, _, err = run(eval_main, ["--params", bad, "--bags", bag], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "condition (14)" in err and "ep_stribeck" in err
    assert "T ≥" in err  # and how to satisfy it
