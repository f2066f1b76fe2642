"""The fit's record in an optuna storage: read back through optuna, resumed exactly."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named


@pytest.fixture(scope="module")
def logs():
    return paper_like_set(published_named("mx64", "m1"), 6, duration=2.0, seed=4)


@pytest.fixture(scope="module")
def space():
    return SearchSpace.from_names("mx64", "m1")


def _stored_trials(url: str, name: str) -> list[optuna.trial.FrozenTrial]:
    names = sorted(n for n in optuna.get_all_study_names(url) if n.startswith(f"{name}.r"))
    return [t for n in names for t in optuna.load_study(study_name=n, storage=url).trials]


def test_every_candidate_is_an_optuna_trial(logs, space, tmp_path):
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    result = identify(space, logs, FitSettings(trials=100, seed=3, storage=url,
                                               study_name="rec"))
    trials = _stored_trials(url, "rec")
    assert len(trials) == result.trials == 100
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert len({t.number for t in trials}) == 100
    best = min(trials, key=lambda t: t.value)
    assert best.value == result.train_mae and best.params == result.values
    # A stored value is the objective of the stored parameters, recomputed here.
    some = trials[37]
    again = Objective(space, logs)(space.population_of([some.params]))[0]
    assert again == pytest.approx(some.value, rel=1e-12)
    assert set(some.distributions) == set(space.names)


def test_a_resumed_fit_continues_exactly(logs, space, tmp_path):
    """Stopped at 45 trials (mid-generation) and resumed to 150: the same result as one
    uninterrupted fit of 150, and only the 105 new candidates are simulated."""
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    first = identify(space, logs, FitSettings(trials=45, seed=7, storage=url,
                                              study_name="again"))
    resumed = identify(space, logs, FitSettings(trials=150, seed=7, storage=url,
                                                study_name="again"))
    direct = identify(space, logs, FitSettings(trials=150, seed=7))
    assert first.evaluated == 45 and resumed.evaluated == 105
    assert resumed.values == direct.values and resumed.train_mae == direct.train_mae
    assert [h[2] for h in resumed.history] == [h[2] for h in direct.history]
    assert len(_stored_trials(url, "again")) == 150


def test_an_interrupted_stored_fit_resumes(logs, space, tmp_path):
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    calls, cancel = [], Cancellation()

    def progress(count, best):
        calls.append(count)
        if len(calls) == 4:
            cancel.request("test")

    stopped = identify(space, logs, FitSettings(trials=150, seed=2, storage=url,
                                                study_name="int"), progress, cancel=cancel)
    assert stopped.interrupted and stopped.trials == sum(calls)
    resumed = identify(space, logs, FitSettings(trials=150, seed=2, storage=url,
                                                study_name="int"))
    direct = identify(space, logs, FitSettings(trials=150, seed=2))
    assert resumed.evaluated == 150 - stopped.trials
    assert resumed.values == direct.values


def test_restarts_are_recorded_and_replayed(tmp_path):
    """Noisy data stagnates, so the fit restarts with twice the population; a resumed
    fit replays the restarts (their studies .r0, .r1, ...) to the same result."""
    noisy = paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, noise=2e-3, seed=3)
    space = SearchSpace.from_names("mx64", "m1")
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    first = identify(space, noisy, FitSettings(trials=1500, seed=0, storage=url,
                                               study_name="ipop"))
    assert first.restarts >= 1
    names = optuna.get_all_study_names(url)
    assert {f"ipop.r{k}" for k in range(first.restarts + 1)} <= set(names)
    more = identify(space, noisy, FitSettings(trials=1800, seed=0, storage=url,
                                              study_name="ipop"))
    direct = identify(space, noisy, FitSettings(trials=1800, seed=0))
    assert more.evaluated == 300
    assert more.values == direct.values and more.restarts == direct.restarts


def test_a_study_started_otherwise_is_refused(logs, space, tmp_path):
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    identify(space, logs, FitSettings(trials=20, seed=1, storage=url, study_name="s"))
    with pytest.raises(BamError, match=r"study 's' in .* was started with other seed; "):
        identify(space, logs, FitSettings(trials=40, seed=2, storage=url, study_name="s"))
    with pytest.raises(BamError, match=r"started with other data; "):
        identify(space, logs[:4], FitSettings(trials=40, seed=1, storage=url,
                                              study_name="s"))


def test_no_storage_imports_no_optuna(logs, space):
    """A local fit records nothing: optuna (and SQLAlchemy) stay unimported."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from bam_identify.data.synthetic import paper_like_set\n"
            "from bam_identify.fitting.fit import FitSettings, SearchSpace, identify\n"
            "from bam_sim.models.files.parameter_file import published_named\n"
            "logs = paper_like_set(published_named('mx64', 'm1'), 2, duration=1.0)\n"
            "identify(SearchSpace.from_names('mx64', 'm1'), logs, FitSettings(trials=20))\n"
            "print(sorted(m for m in ('optuna', 'sqlalchemy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_same_seed_same_result_with_or_without_storage(logs, space, tmp_path):
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    a = identify(space, logs, FitSettings(trials=90, seed=11, storage=url, study_name="d"))
    b = identify(space, logs, FitSettings(trials=90, seed=11))
    assert a.values == b.values
    assert np.isfinite(a.train_mae)
