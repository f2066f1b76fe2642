"""The fit as a library: :func:`fit` plans a :class:`~bam_identify.fitting.job.FitJob` and
runs it; :func:`run_plan` runs a plan already made.

Every model of the plan is searched in turn (simpler first, each richer one
warm-started from the best nested simpler fit), its parameter file written
as soon as it is fitted, then the report. ``fit``, ``campaign work``, the
bench session and the benchmarks all fit through here.

A cancellation (the caller's: ``fit`` requests it on SIGINT or SIGTERM) ends
the search at its next step and keeps the best set found: it is written,
beside an existing file rather than over it, the report follows without the
figures not drawn yet, and :class:`~bam_sim.common.cancellation.Cancelled`
names what was written.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable

from bam_identify.fitting.fit import FitResult, FitSettings, identify
from bam_identify.fitting.job import FitJob
from bam_identify.fitting.latency import latency_of
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.outcome import FitOutcome, conclude, save_fit, write_fit_report
from bam_identify.fitting.plan import FitPlan, ModelPlan, plan_fit
from bam_identify.fitting.report import ModelResult
from bam_identify.fitting.selection import Candidate, append_selection, select
from bam_identify.fitting.sensitivity import sensitivity
from bam_identify.fitting.space import SearchSpace, best_nested, nested_start
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.models.parameter_set import ParameterSet


def fit(job: FitJob, cancel: Cancellation | None = None) -> FitOutcome:
    """Check ``job`` whole (a one-line BamError before anything is written), then fit."""
    cancel = cancel or Cancellation()
    return run_plan(plan_fit(job, cancel), cancel)


def run_plan(plan: FitPlan, cancel: Cancellation | None = None) -> FitOutcome:
    """Fit every model of ``plan`` and write its parameter files and report; once
    ``cancel`` is requested, Cancelled naming what was written (nothing when no model
    had a set yet)."""
    job, cancel = plan.job, cancel or Cancellation()
    for warning in plan.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    _use_threads(job.jobs)
    results: list[ModelResult] = []
    try:
        for model in plan.models:
            cancel.check()
            base = _warm_start(job, model.name, results)
            settings = _settings(job, model, base)
            if job.units:
                results.append(_fit_units(plan, model, settings, cancel))
                continue
            fitted = _fit_one(model.space, plan.train.logs, settings, job.quiet, identify,
                              plan.validation.logs, cancel)
            results.append(_save_result(plan, model, settings, fitted, base))
    except Cancelled:  # the models fitted so far are kept, and reported
        if not results:
            raise
    report = write_fit_report(job.report, results, plan.validation.logs, plan.train.logs,
                              list(plan.warnings), plan.provenance, cancel, job.force)
    outcome = conclude(results, report, cancel)
    if plan.selected is None or cancel.is_set():
        return outcome
    return _select(plan, outcome)


def _select(plan: FitPlan, outcome: FitOutcome) -> FitOutcome:
    """``fit --select``: the recommended model written as its own file, and said why."""
    choice = select([Candidate(r.model, r.validation_per_log) for r in outcome.results])
    winner = next(r for r in outcome.results if r.model == choice.winner)
    params = winner.params
    provenance = {**params.provenance, "selected": {
        "rule": "the simplest model within one standard error of the best on validation",
        "candidates": {m: {"validation_mae": mae, "standard_error": se, "verdict": v}
                       for m, mae, se, v in choice.rows}}}
    written = save_fit(ParameterSet.build(params.actuator, params.model, params.values,
                                          provenance), plan.selected, plan.job.force, False)
    lines = [*choice.lines(), f"  written: {written}"]
    if outcome.report is not None:
        append_selection(outcome.report, lines)
    return dataclasses.replace(outcome, summary=outcome.summary + "\n" + "\n".join(lines))


def _fit_units(plan: FitPlan, model: ModelPlan, settings: FitSettings,
               cancel: Cancellation) -> ModelResult:
    """``fit --units``: the type and its units (fitting/population.py)."""
    import time

    from bam_identify.fitting.population import (
        fit_population,
        population_result,
        unit_parameters,
    )

    job = plan.job
    shared = unit_parameters(model.space, job.unit_parameters)
    started = time.perf_counter()
    fitted = fit_population(model.space, plan.train.logs, shared, settings, job.unit_spread,
                            cancel)
    trials = sum(r.trials for r in fitted.rounds)
    return population_result(plan, model, fitted, time.perf_counter() - started, trials)


def _use_threads(jobs: int | None) -> None:
    """``--jobs``: numba's threads for the simulation (at most those it started with)."""
    if jobs:
        import numba

        numba.set_num_threads(max(1, min(jobs, numba.config.NUMBA_NUM_THREADS)))


def _settings(job: FitJob, model: ModelPlan, base: ModelResult | None) -> FitSettings:
    """The search of ``model``: the job's budget and options, its study, its warm start."""
    return FitSettings(trials=job.trials, seed=job.seed, popsize=job.popsize,
                       target=job.target_mae, storage=job.storage, study_name=model.study,
                       shares=job.workers,
                       start=nested_start(model.space, base.params.values) if base else None,
                       temperature_weight=job.temperature_weight, polish=not job.no_polish)


def _warm_start(job: FitJob, model: str, results: list[ModelResult]) -> ModelResult | None:
    """The best nested simpler model fitted so far, to start from (None: start cold)."""
    by_name = {r.model: r for r in results}
    best = best_nested(model, {name: r.train_mae for name, r in by_name.items()})
    return None if job.no_warm_start or best is None else by_name[best]


def _fit_one(space: SearchSpace, logs: list[BenchLog], settings: FitSettings, quiet: bool,
             identify: Callable[..., FitResult], check_logs: list[BenchLog] | None = None,
             cancel: Cancellation | None = None) -> FitResult:
    """One model's fit with its progress bar."""
    from tqdm import tqdm

    with tqdm(total=settings.trials, desc=f"fit {space.model.name}", unit="trial", disable=quiet,
              mininterval=0.5, file=sys.stderr) as bar:
        def progress(count: int, best: float) -> None:
            bar.update(count)
            bar.set_postfix_str(f"best MAE {best:.3e} rad", refresh=False)

        # The validation logs are checked too: an ep_* set valid on every training
        # bench must also run on the validation ones.
        return identify(space, logs, settings, progress, check_logs=check_logs or None,
                        cancel=cancel)


def _save_result(plan: FitPlan, model: ModelPlan, settings: FitSettings, fitted: FitResult,
                 base: ModelResult | None) -> ModelResult:
    """Score the set found on both splits, write it with its provenance; its result."""
    job, space = plan.job, model.space
    train = Objective(space, plan.train.logs, temperature_weight=job.temperature_weight)
    train_mae, train_t = train.errors(fitted.values)
    val_mae, val_t = (Objective(space, plan.validation.logs).errors(fitted.values)
                      if plan.validation.logs else (None, None))
    record = {**plan.provenance, "model": model.name, "trials": fitted.trials,
              "seconds": round(fitted.seconds, 3), "train_mae": train_mae,
              "interrupted": fitted.interrupted}
    if job.storage:  # the others were read from the study (resumed, other workers)
        record.update(study=settings.study_name, evaluated_here=fitted.evaluated)
    if val_mae is not None:
        record["validation_mae"] = val_mae
    if train_t is not None:
        record.update(train_temperature_mae=train_t, temperature_weight=job.temperature_weight,
                      objective=fitted.train_mae)
    if val_t is not None:
        record["validation_temperature_mae"] = val_t
    if job.groups:
        record["groups"] = list(job.groups)
    # Each parameter's interval within --sensitivity % of the fit's error (export reads it).
    intervals = sensitivity(train, fitted.values, job.sensitivity, logs=plan.train.logs)
    record["sensitivity"] = intervals
    delays = latency_of(intervals, space)
    if delays is not None:
        record["latency_range"] = [delays["low"], delays["high"]]
    if model.held:
        record["fixed"] = model.held
    if model.prior.values:
        record["prior"] = model.prior.provenance()
    if base is not None:
        record["warm_start"] = base.model
    params = space.parameter_set(fitted.values, record)
    output = save_fit(params, model.output, job.force, fitted.interrupted)
    per_log = (Objective(space, plan.validation.logs).per_log(fitted.values)
               if plan.validation.logs else None)
    return ModelResult(params, train_mae, val_mae, fitted.trials, fitted.seconds, output,
                       fitted.interrupted, train_t, val_t, delays, intervals, per_log)
