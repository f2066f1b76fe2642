"""Identification of a model's parameters by CMA-ES (paper section V-B).

The objective is the mean absolute error between the simulated and recorded
positions over the training logs, the simulation recomputing the servo's
control law from the simulated state (Algorithm 1 with the servo model). The
search runs optuna's CMA-ES sampler through its ask/tell interface: a whole
generation of candidates is asked, simulated in ONE batched, parallel numba
call (:func:`bam_sim.simulator.batch_mae`) and told back, so the cost of a
candidate is a few hundred microseconds of simulation instead of a Python
rollout per log.

Identified: the actuator's motor parameters (k_t, R, J_m where they are not
fixed constants), the bench offset q_offset and the friction parameters of
the model, each within the registry's bounds; any of them can be held fixed.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bam_sim import parameters as P
from bam_sim.actuators import get_actuator
from bam_sim.bench_log import BenchLog, LogBatch
from bam_sim.errors import BamError
from bam_sim.friction import get_model
from bam_sim.parameter_set import ParameterSet, identification_bounds, required_names
from bam_sim.simulator import batch_mae

Q_OFFSET_BOUNDS = (-0.2, 0.2)  # rad: a bench mounting error, not a free rotation


@dataclass(frozen=True)
class SearchSpace:
    """The free parameters of one (actuator, model) pair and their bounds."""

    actuator: str
    model: str
    bounds: dict[str, tuple[float, float]]
    fixed: dict[str, float]

    @classmethod
    def build(cls, actuator: str, model: str, fixed: dict[str, float] | None = None,
              identify_offset: bool = True) -> SearchSpace:
        act, mdl = get_actuator(actuator), get_model(model)
        bounds = dict(identification_bounds(act, mdl))
        if identify_offset:
            bounds["q_offset"] = Q_OFFSET_BOUNDS
        allowed = set(required_names(act, mdl)) | set(act.fixed) | {"q_offset"}
        fixed = dict(fixed or {})
        for name, value in fixed.items():
            if name not in allowed:
                raise BamError(f"--set {name}: '{name}' is not a parameter of model {mdl.name} on "
                               f"{act.name}; its parameters are {', '.join(sorted(allowed))}")
            P.check_value(name, value, "--set")
            bounds.pop(name, None)
        return cls(act.name, mdl.name, bounds, fixed)

    @property
    def names(self) -> list[str]:
        return list(self.bounds)

    def base_vector(self) -> np.ndarray:
        """The vector of fixed values (actuator constants, --set values, q_offset 0)."""
        act = get_actuator(self.actuator)
        return P.to_vector({"q_offset": 0.0, **act.fixed, **self.fixed})

    def population(self, candidates: list[dict[str, float]]) -> np.ndarray:
        base = self.base_vector()
        pop = np.tile(base, (len(candidates), 1))
        for i, candidate in enumerate(candidates):
            for name, value in candidate.items():
                pop[i, P.INDEX[name]] = value
        return pop

    def parameter_set(self, values: dict[str, float], provenance: dict) -> ParameterSet:
        act = get_actuator(self.actuator)
        merged = {**act.fixed, "q_offset": 0.0, **self.fixed, **values}
        return ParameterSet.build(self.actuator, self.model, merged, provenance)


def parse_assignments(items: list[str] | None) -> dict[str, float]:
    """["kt=1.6", "R=3.9"] -> {"kt": 1.6, "R": 3.9}: floats parsed, never evaluated."""
    fixed: dict[str, float] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BamError(f"--set '{item}': write it as name=value, e.g. --set kt=1.6")
        try:
            value = float(text)
        except ValueError:
            raise BamError(f"--set {name}: '{text.strip()}' is not a number") from None
        if not math.isfinite(value):
            raise BamError(f"--set {name}: give a finite number, not '{text.strip()}'")
        fixed[name] = value
    return fixed


class Objective:
    """Training MAE of a population: one batched simulation of every log."""

    def __init__(self, space: SearchSpace, logs: list[BenchLog], replay: bool = False):
        if not logs:
            raise BamError("no training logs to identify from")
        self.space = space
        self.batch = LogBatch.pack(logs, get_actuator(space.actuator))
        self.weights = self.batch.lengths / self.batch.lengths.sum()
        self.replay = replay
        self.evaluations = 0

    def __call__(self, candidates: list[dict[str, float]]) -> np.ndarray:
        """Step-weighted MAE over all logs, for each candidate (rad)."""
        errors = batch_mae(self.space.model, self.space.population(candidates), self.batch,
                           self.replay)
        self.evaluations += len(candidates)
        scores = errors @ self.weights
        return np.where(np.isfinite(scores), scores, np.inf)

    def per_log(self, values: dict[str, float]) -> np.ndarray:
        return batch_mae(self.space.model, self.space.population([values]), self.batch,
                         self.replay)[0]


@dataclass
class FitSettings:
    trials: int = 4000
    seed: int = 0
    popsize: int | None = None
    restarts: bool = True
    target: float | None = None  # stop as soon as the training MAE is at most this
    storage: str | None = None
    study_name: str | None = None
    replay: bool = False
    # Warm start: the search's initial mean (parameter values) and spread (as a
    # fraction of each parameter's range); the mean is also evaluated first.
    start: dict[str, float] | None = None
    spread: float = 0.05


@dataclass
class FitResult:
    space: SearchSpace
    values: dict[str, float]
    train_mae: float
    trials: int
    seconds: float
    interrupted: bool = False
    reached_target: bool = False
    history: list[tuple[int, float, float]] = field(default_factory=list)  # trial, s, best


def _sampler(space: SearchSpace, settings: FitSettings):
    import optuna

    popsize = settings.popsize or _default_popsize(len(space.names))
    warm = {"x0": settings.start, "sigma0": settings.spread} if settings.start else {}
    with warnings.catch_warnings():
        # optuna flags restart_strategy as experimental, and x0/sigma0 as deprecated
        # since 4.9 (removed in 6.0; requirements pin 5.x): we want them all the same.
        warnings.simplefilter("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", category=FutureWarning)
        return optuna.samplers.CmaEsSampler(**warm,
            seed=settings.seed, popsize=popsize, n_startup_trials=0,
            # The first generation is drawn at random, before CMA-ES has a trial.
            warn_independent_sampling=False,
            restart_strategy="ipop" if settings.restarts else None, inc_popsize=2,
        ), popsize


def _default_popsize(dims: int) -> int:
    # CMA-ES's 4 + 3 ln n, rounded up to an even batch: a generation is one
    # parallel call, so a slightly larger population costs nothing extra.
    size = 4 + int(3 * math.log(max(dims, 1)))
    return size + size % 2


def identify(space: SearchSpace, logs: list[BenchLog], settings: FitSettings,
             progress: Callable[[int, float], None] | None = None) -> FitResult:
    """Run CMA-ES on the training logs; Ctrl-C stops and keeps the best found."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    objective = Objective(space, logs, settings.replay)
    sampler, popsize = _sampler(space, settings)
    try:
        study = optuna.create_study(
            sampler=sampler, storage=settings.storage, direction="minimize",
            study_name=settings.study_name, load_if_exists=settings.storage is not None,
        )
    except Exception as exc:  # noqa: BLE001 - optuna, SQLAlchemy or a driver: all mean "cannot open"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BamError(f"cannot open the optuna storage '{settings.storage}': {first}") from None
    distributions = {name: optuna.distributions.FloatDistribution(lo, hi)
                     for name, (lo, hi) in space.bounds.items()}
    if settings.start and not study.trials:
        study.enqueue_trial(settings.start)
    done = len(study.trials)
    start = time.perf_counter()
    history: list[tuple[int, float, float]] = []
    best = _best_value(study)
    interrupted = False
    try:
        while done < settings.trials and not _reached(best, settings.target):
            batch = min(popsize, settings.trials - done)
            trials = [study.ask(distributions) for _ in range(batch)]
            scores = objective([trial.params for trial in trials])
            for trial, score in zip(trials, scores, strict=True):
                study.tell(trial, float(score))
            done += batch
            best = min(best, float(scores.min()))
            history.append((done, time.perf_counter() - start, best))
            if progress is not None:
                progress(batch, best)
    except KeyboardInterrupt:
        interrupted = True
    if not any(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials):
        raise BamError("the fit was stopped before any candidate was evaluated; nothing to write")
    values = {**study.best_params}
    return FitResult(space=space, values=values, train_mae=float(study.best_value),
                     trials=done, seconds=time.perf_counter() - start, interrupted=interrupted,
                     reached_target=_reached(study.best_value, settings.target), history=history)


# Each model's nearest simpler models: M1 ⊂ M2, M3 ⊂ M4 ⊂ M5 ⊂ M6 (section III).
NESTED_IN = {"m2": ("m1",), "m3": ("m1",), "m4": ("m2", "m3", "m1"),
             "m5": ("m4", "m3", "m2", "m1"), "m6": ("m5", "m4", "m3", "m2", "m1")}


def nested_start(space: SearchSpace, fitted: dict[str, float]) -> dict[str, float]:
    """A starting point for ``space`` that reproduces a fitted simpler model.

    Terms the simpler model lacks are (nearly) zero, so the richer model starts
    from the simpler model's friction budget: K_m = K_e = K_l and
    K_m^s = K_e^s = K_l^s turn M4 into M5 (equation 9 with equal coefficients
    is equation 8); the Stribeck shape keeps the simpler model's v_s and α or
    the registry's defaults. Values are only clipped into the bounds, so the
    start reproduces the simpler model exactly: evaluated first, it guarantees
    the richer fit ends no worse than the simpler one.
    """
    mdl = get_model(space.model)
    defaults = mdl.defaults(get_actuator(space.actuator).scales)
    load, load_static = (fitted.get("load_friction_base", 0.0),
                         fitted.get("load_friction_stribeck", 0.0))
    derived = {"load_friction_motor": load, "load_friction_external": load,
               "load_friction_motor_stribeck": load_static,
               "load_friction_external_stribeck": load_static}
    start = {}
    for name, (lo, hi) in space.bounds.items():
        if name in fitted:
            value = fitted[name]
        elif name in derived:
            value = derived[name]
        elif name in ("dtheta_stribeck", "alpha"):
            value = defaults[name]
        else:
            value = 0.0
        start[name] = min(max(value, lo), hi)
    return start


def _best_value(study) -> float:
    try:
        return float(study.best_value)
    except ValueError:  # no completed trial yet
        return math.inf


def _reached(best: float, target: float | None) -> bool:
    return target is not None and best <= target
