"""Identification of a model's parameters by CMA-ES (paper section V-B): the driver of
the search.

:func:`identify` runs the search over a :class:`~.space.SearchSpace` with the
bench's :class:`~.objective.Objective`; :func:`run_search` is the same driver for
any space and objective (the robot fit's too). CMA-ES (the ``cmaes`` package,
optuna's own backend, driven directly: :mod:`bam_identify.fitting.cma_run`) asks a
whole generation of candidates, the objective simulates them in one batched call,
and they are told back, so the cost of a candidate is its simulation and nothing
per trial. With a storage, the study is recorded in optuna per lease of
generations (:mod:`bam_identify.fitting.study_record`), resumed from there, or
shared between workers. Once CMA-ES has found the basin, Levenberg–Marquardt on
the position residuals finishes the fit (:mod:`bam_identify.fitting.polish`,
scheduled by :mod:`bam_identify.fitting.search`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bam_identify.fitting.cma_run import CmaRun, default_popsize, random_start
from bam_identify.fitting.objective import INFEASIBLE, Objective
from bam_identify.fitting.search import DIVERGED_MAE, Search
from bam_identify.fitting.space import SearchSpace
from bam_identify.fitting.study_record import open_record
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import (
    DEFAULT_TEMPERATURE_WEIGHT,
)


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
    # Workers expected on one stored study: each generation is cut into this many
    # shares, each claimed by one of them (None: as the stored study says, else 1).
    shares: int | None = None
    # Weight of the winding-temperature error (rad/K), for sets with the thermal group.
    temperature_weight: float = DEFAULT_TEMPERATURE_WEIGHT
    # Finish with Levenberg–Marquardt on the position residuals once CMA-ES has
    # found the basin (:mod:`bam_identify.fitting.polish`; not with a temperature
    # term, which the residuals do not hold).
    polish: bool = True


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
    restarts: int = 0
    simulation_seconds: float = 0.0  # of ``seconds``, spent in the batched simulation
    evaluated: int = 0  # candidates simulated by this process (the others were stored)
    polishes: list[tuple[int, str, int]] = field(default_factory=list)  # trial, how, evals


def identify(space: SearchSpace, logs: list[BenchLog], settings: FitSettings,
             progress: Callable[[int, float], None] | None = None,
             check_logs: list[BenchLog] | None = None,
             cancel: Cancellation | None = None) -> FitResult:
    """Run CMA-ES with restarts on the training logs.

    ``check_logs`` (e.g. the validation logs) must admit an ``ep_*`` result too
    (condition (14) and the coupling limit), so that it can be evaluated on them.
    A stored study (``settings.storage``) is resumed where it stopped, or shared
    with the other workers running the same command on it. ``cancel`` ends the
    search at its next step with the best set found (``interrupted``); Cancelled
    when none was found yet.
    """
    objective = Objective(space, logs, settings.replay, check_logs, settings.temperature_weight)
    # The residuals hold the positions only: no polish when a reading is scored too.
    polish = not objective.scores_temperature and objective.voltage_weight == 0.0
    return run_search(space, objective, settings, _fingerprint(space, objective, settings),
                  polish, progress, cancel)


def run_search(space, objective, settings: FitSettings, fingerprint: dict, polish: bool,
               progress: Callable[[int, float], None] | None = None,
               cancel: Cancellation | None = None) -> FitResult:
    """CMA-ES with restarts and the LM polish over ``objective`` (a bench Objective, or any
    with its score, residuals and batch lengths) in ``space`` (SearchSpace or any with its
    bounds, unit box and population); ``fingerprint``: what a stored study must match.
    ``polish``: whether the objective's score is the MAE of its residuals."""
    dims = len(space.names)
    popsize0 = settings.popsize or default_popsize(dims)
    record = open_record(settings.storage, settings.study_name,
                         {**fingerprint, "popsize": popsize0}, space.names,
                         list(space.bounds.values()), settings.shares)
    search = Search(space, objective, settings.trials,
                    settings.target, record, settings.polish and polish, progress, cancel)
    start = None if settings.start is None else space.to_unit(settings.start)
    run = CmaRun(dims, 0, popsize0, settings.seed, start, settings.spread,
                 inject_start=start is not None)
    interrupted = False
    try:
        stored = record.generations(0, run.popsize)
        while search.done < settings.trials and not search.reached():
            if not search.generation(run, stored):
                break
            if search.polish_due(run):
                search.polish(run)
            if settings.restarts and run.stagnated():
                k = run.k + 1
                run = CmaRun(dims, k, popsize0, settings.seed,
                             random_start(dims, settings.seed, k), settings.spread)
                stored = record.generations(k, run.popsize)
    except Cancelled:
        interrupted = True
    finally:
        record.close()
    return _result(space, search, run.k, interrupted)


def _result(space: SearchSpace, search: Search, restarts: int, interrupted: bool) -> FitResult:
    best, done = search.best, search.done
    if interrupted and not best <= DIVERGED_MAE:  # stopped before any set worth keeping
        raise Cancelled
    if done and INFEASIBLE <= best < np.inf:
        raise BamError(f"none of the {done} candidates evaluated satisfied condition (14) "
                       f"and the coupling limit T·(K·T + 2B) < 4J (ep_*) or the LuGre stick "
                       "limits (lugre) at the logs' step; check the parameters held fixed "
                       "(--set) and the step (--dt)")
    if done and not best <= DIVERGED_MAE:
        raise BamError(f"every one of the {done} candidates evaluated diverged (a mean "
                       f"position error beyond {DIVERGED_MAE:g} rad or not finite): check the "
                       "parameters held fixed (--set) and the recorded data")
    if search.best_values is None:
        raise BamError("the fit was stopped before any candidate was evaluated; nothing to write")
    return FitResult(space=space, values=search.best_values, train_mae=best,
                     trials=done, seconds=time.perf_counter() - search.start,
                     interrupted=interrupted, reached_target=search.reached(),
                     history=search.history, restarts=restarts,
                     simulation_seconds=search.simulated, evaluated=search.evaluated,
                     polishes=search.polishes)


def _fingerprint(space: SearchSpace, objective: Objective, settings: FitSettings) -> dict:
    """What a stored study must have been started with to be resumed or shared."""
    digest = hashlib.sha256()
    for batch in (objective.batch, objective.check_batch):
        for item in dataclasses.fields(batch):
            value = getattr(batch, item.name)
            if isinstance(value, np.ndarray):
                digest.update(np.ascontiguousarray(value).tobytes())
    return {"actuator": space.actuator.name, "model": space.model.name,
            "bounds": {k: list(v) for k, v in space.bounds.items()}, "fixed": space.fixed,
            "seed": settings.seed, "restarts": settings.restarts,
            "start": settings.start, "spread": settings.spread, "replay": settings.replay,
            "temperature_weight": settings.temperature_weight, "polish": settings.polish,
            "data": digest.hexdigest()[:16]}
