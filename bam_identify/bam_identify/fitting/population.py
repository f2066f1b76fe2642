"""Population fits: one servo type, several units of it, each with its own deviations.

Units of one type differ (a magnet, a gearbox's run-in): a set fitted on one unit is off
on the next. ``fit --units`` fits the type and its units together, a hierarchical fit.
Each unit's set is the type's set with a deviation on the *unit parameters* U (by default
k_t and the model's friction magnitudes, what differs from unit to unit)::

    θ_u,p = θ_p · exp(δ_u,p)   for p in U;   θ_u,p = θ_p otherwise

The deviations have a Gaussian prior of spread σ_p (on the log scale: 0.1 is about
10 %), and the fit maximises the posterior with Laplace position errors whose scale is
profiled out per unit::

    J(θ, δ) = Σ_u n_u · ln MAE_u(θ_u) + ½ Σ_u,p (δ_u,p / σ_p)²

n_u counts the unit's independent samples: its duration over :data:`WINDOW` (a servo's
position errors are correlated over its response time; counting every 5 ms sample would
drown the prior). σ is identified from the data, as an empirical-Bayes hierarchical fit
does: a first fit with σ = ``--unit-spread`` gives the deviations, each σ_p becomes their
root mean square (at least :data:`MIN_SPREAD`), and a second fit, started from the first,
uses it. A unit with few logs then borrows from the others, where independent fits would
follow its noise, and a shared set would miss its deviation. ``--trials`` is the budget of
the type's values: each round searches ``trials`` × (all its values / the type's), as the
search has the units' deviations too.

A dead band is 0 on a tight unit and a degree on a worn one: the backlash width (the
``backlash`` group, a unit parameter by default when it is searched) moves by an amount,
θ_u = clip(θ + δ, bounds), and its σ is in radians; the first round's σ is
``--unit-spread`` times its bounds' span.

A unit is the one a bag names (``/bam/bench_info``'s ``unit``: the drivers write the bus
id, and the serial number where the servo reports one), else the folder its recordings
are in (legacy logs, older bags): give those a folder per unit, named after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bam_identify.fitting.fit import FitResult, FitSettings, run_search
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace, UnitBox
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.groups import GROUP_OF, GROUPS

WINDOW = 0.1  # s: one independent position error per window (module docstring)
ADDITIVE = frozenset({"backlash.width"})  # deviations by an amount (module docstring)
MIN_SPREAD = 0.01  # the smallest σ the second round uses (1 %)
DEVIATION = 0.7  # |δ| bound: a unit within a factor of 2 of its type
DEFAULT_SPREAD = 0.2


def unit_of(log: BenchLog) -> str:
    """The unit a log was recorded on: the one its recording names (a bag's
    ``/bam/bench_info`` unit: bus id and serial), else the folder its recording is in."""
    named = str(log.meta.get("unit", ""))
    return named or Path(str(log.meta.get("source", ""))).parent.name or "."


def group_by_unit(logs: list[BenchLog]) -> dict[str, list[BenchLog]]:
    units: dict[str, list[BenchLog]] = {}
    for log in logs:
        units.setdefault(unit_of(log), []).append(log)
    return dict(sorted(units.items()))


def unit_parameters(space: SearchSpace, asked: tuple[str, ...]) -> tuple[str, ...]:
    """U: ``asked``, else k_t and the friction magnitudes the model searches."""
    if asked:
        missing = [p for p in asked if p not in space.bounds]
        if missing:
            raise BamError(f"--unit-parameters {missing[0]}: not searched by the "
                           f"{space.model.name} fit on {space.actuator.name}; choose among "
                           f"{', '.join(space.names)}")
        return tuple(asked)
    default = ("kt", "motorconst", "friction_base", "friction_stribeck", "friction_viscous",
               "lugre.coulomb", "lugre.static", "lugre.viscous", "backlash.width")
    return tuple(p for p in default if p in space.bounds)


@dataclass(frozen=True)
class PopulationSpace(UnitBox):
    """The type's free values, then each unit's deviations named ``unit/parameter``."""

    space: SearchSpace
    units: tuple[str, ...]
    shared: tuple[str, ...]  # U, the unit parameters
    bounds: dict[str, tuple[float, float]]

    @classmethod
    def build(cls, space: SearchSpace, units: tuple[str, ...],
              shared: tuple[str, ...]) -> PopulationSpace:
        bounds = dict(space.bounds)
        bounds.update({f"{u}/{p}": (-DEVIATION * unit_scale(space, p),
                                    DEVIATION * unit_scale(space, p))
                       for u in units for p in shared})
        return cls(space, units, shared, bounds)

    def applied(self, p: str, value: float, delta: float) -> float:
        """A unit's value of p: the type's ``value`` moved by its deviation ``delta``."""
        if p in ADDITIVE:
            low, high = parameter_span(self.space, p)
            return min(max(value + delta, low), high)
        return value * math.exp(delta)

    @property
    def model(self):
        return self.space.model

    def centred(self, values: dict[str, float]) -> dict[str, float]:
        """The same units' sets with the type at their centre: each unit parameter's type
        value moved by the mean deviation, the deviations by minus it. The data term of J
        is unchanged and its prior term the least (the type is the units' geometric mean);
        a type value the bounds or a hold keep is left."""
        out = dict(values)
        for p in self.shared:
            keys = [f"{u}/{p}" for u in self.units]
            mean = float(np.mean([values[k] for k in keys]))
            low, high = self.space.bounds[p]
            moved = values[p] + mean if p in ADDITIVE else values[p] * math.exp(mean)
            reach = DEVIATION * unit_scale(self.space, p)
            if low <= moved <= high and all(abs(values[k] - mean) <= reach for k in keys):
                out[p] = moved
                out.update({k: values[k] - mean for k in keys})
        return out

    def type_values(self, values: dict[str, float]) -> dict[str, float]:
        return {k: values[k] for k in self.space.bounds}

    def deviations(self, values: dict[str, float]) -> dict[str, dict[str, float]]:
        return {u: {p: values[f"{u}/{p}"] for p in self.shared} for u in self.units}

    def unit_values(self, values: dict[str, float], unit: str) -> dict[str, float]:
        """The free values of ``unit``'s set: the type's, its deviations applied."""
        own = self.type_values(values)
        for p in self.shared:
            own[p] = self.applied(p, own[p], values[f"{unit}/{p}"])
        return own

    def population(self, x: np.ndarray) -> np.ndarray:
        """(m, 1 + n_units, N_PARAMS): each candidate's type vector, then its units'."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        n = len(self.space.bounds)
        base = self.space.population(x[:, :n])
        out = np.repeat(base[:, None, :], 1 + len(self.units), axis=1)
        deltas = x[:, n:].reshape(x.shape[0], len(self.units), len(self.shared))
        for k, p in enumerate(self.shared):
            i = P.INDEX[p]
            if p in ADDITIVE:
                low, high = parameter_span(self.space, p)
                out[:, 1:, i] = np.clip(out[:, 1:, i] + deltas[:, :, k], low, high)
            else:
                out[:, 1:, i] *= np.exp(deltas[:, :, k])
        return out


def unit_scale(space: SearchSpace, p: str) -> float:
    """What a deviation of 1 is for p: a factor e (log scale), or its bounds' span."""
    if p not in ADDITIVE:
        return 1.0
    low, high = parameter_span(space, p)
    return high - low


def parameter_span(space: SearchSpace, p: str) -> tuple[float, float]:
    """p's identification bounds: the space's, else its group's (a type's set held)."""
    if p in space.bounds:
        return space.bounds[p]
    return GROUPS[GROUP_OF[p]].bounds(space.actuator.scales)[p]


class PopulationObjective:
    """J of the module docstring for a population of candidates (PopulationSpace rows)."""

    def __init__(self, space: PopulationSpace, units: dict[str, list[BenchLog]],
                 spread: dict[str, float], temperature_weight: float) -> None:
        self.space, self.spread = space, spread
        self.objectives = [Objective(space.space, units[u], temperature_weight=temperature_weight)
                           for u in space.units]
        self.samples = np.array([sum(log.position.size * log.dt for log in units[u]) / WINDOW
                                 for u in space.units])
        self.sigma = np.array([spread[p] for p in space.shared])
        self.index = [P.INDEX[p] for p in space.shared]
        self.additive = np.array([p in ADDITIVE for p in space.shared])
        self.evaluations = 0

    def score(self, population: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        population = np.asarray(population, dtype=np.float64)
        data = np.zeros(len(population))
        violation = np.zeros(len(population))
        for k, objective in enumerate(self.objectives):
            mae, bad = objective.score(population[:, 1 + k])
            data += self.samples[k] * np.log(np.maximum(mae, 1e-300))
            violation = np.maximum(violation, bad)
        base = population[:, :1, self.index]
        own = population[:, 1:, self.index]
        with np.errstate(divide="ignore", invalid="ignore"):  # a type value of 0: no δ
            deltas = np.where(self.additive, own - base,
                              np.where(base > 0.0, np.log(own / base), 0.0))
        prior = 0.5 * np.sum((deltas / self.sigma) ** 2, axis=(1, 2))
        self.evaluations += len(population)
        return data + prior, violation

    def __call__(self, population: np.ndarray) -> np.ndarray:
        return self.score(population)[0]


@dataclass(frozen=True)
class PopulationFit:
    space: PopulationSpace
    values: dict[str, float]
    spread: dict[str, float]  # σ_p identified (log scale)
    rounds: tuple[FitResult, ...]

    @property
    def type_values(self) -> dict[str, float]:
        return self.space.type_values(self.values)

    def unit_values(self, unit: str) -> dict[str, float]:
        return self.space.unit_values(self.values, unit)


def fit_population(space: SearchSpace, logs: list[BenchLog], shared: tuple[str, ...],
                   settings: FitSettings, spread: float = DEFAULT_SPREAD,
                   cancel: Cancellation | None = None, progress=None) -> PopulationFit:
    """The two rounds of the module docstring on the training ``logs`` (two units at
    least); ``settings.trials`` per round."""
    units = group_by_unit(logs)
    if len(units) < 2:
        raise BamError(f"--units needs the recordings of two units at least, in a folder "
                       f"each; these logs are all in {next(iter(units))!r}")
    pop_space = PopulationSpace.build(space, tuple(units), shared)
    sigma = {p: spread * unit_scale(space, p) for p in shared}
    start = None if settings.start is None else {
        **settings.start, **{f"{u}/{p}": 0.0 for u in units for p in shared}}
    rounds = []
    trials = settings.trials * len(pop_space.names) // max(1, len(space.names))
    for _ in range(2):
        objective = PopulationObjective(pop_space, units, sigma, settings.temperature_weight)
        # J is no MAE: no target, no polish on it (the polish fits residuals).
        result = run_search(pop_space, objective,
                            replace(settings, trials=trials, start=start, target=None,
                                    polish=False),
                            {"population": list(units), "spread": sigma}, False, progress,
                            cancel)
        values = pop_space.centred(result.values)
        rounds.append(replace(result, values=values))
        deviations = np.array([[values[f"{u}/{p}"] for p in shared] for u in units])
        sigma = {p: max(float(np.sqrt(np.mean(deviations[:, i] ** 2))),
                        MIN_SPREAD * unit_scale(space, p)) for i, p in enumerate(shared)}
        start = values
        if result.interrupted:
            break
    return PopulationFit(pop_space, rounds[-1].values, sigma, tuple(rounds))


def population_result(plan, model, fitted: PopulationFit, seconds: float, trials: int):
    """Write the type's file (its provenance holding the population) and each unit's
    beside it; the model's result for the report: the units' sets scored on their own
    logs (train and validation, step-weighted over the units)."""
    from bam_identify.fitting.outcome import save_fit
    from bam_identify.fitting.report import ModelResult

    job, space = plan.job, model.space
    train, check = group_by_unit(plan.train.logs), group_by_unit(plan.validation.logs)
    units = {}
    for u in fitted.space.units:
        values = fitted.unit_values(u)
        row = {"deviation": fitted.space.deviations(fitted.values)[u],
               "train_mae": Objective(space, train[u]).errors(values)[0],
               "train_samples": sum(log.position.size for log in train[u])}
        if check.get(u):
            row["validation_mae"] = Objective(space, check[u]).errors(values)[0]
            row["validation_mae_type_set"] = Objective(space, check[u]).errors(
                fitted.type_values)[0]
            row["validation_samples"] = sum(log.position.size for log in check[u])
        units[u] = row
    record = {**plan.provenance, "model": model.name, "trials": trials,
              "seconds": round(seconds, 3), "population": {
                  "unit_parameters": list(fitted.space.shared), "spread": fitted.spread,
                  "window_s": WINDOW, "units": units}}
    train_mae = _weighted(units, "train_mae", "train_samples")
    record["train_mae"] = train_mae
    validated = {k: v for k, v in units.items() if "validation_mae" in v}
    val_mae = _weighted(validated, "validation_mae", "validation_samples") if validated else None
    if val_mae is not None:
        record["validation_mae"] = val_mae
    record["sensitivity"] = spread_intervals(fitted, train_mae, len(units))
    params = space.parameter_set(fitted.type_values, record)
    output = save_fit(params, model.output, job.force, fitted.rounds[-1].interrupted)
    for u in fitted.space.units:
        own = space.parameter_set(fitted.unit_values(u), {
            **{k: v for k, v in record.items() if k != "population"},
            "unit": u, "population_file": output.name, **units[u]})
        save_fit(own, output.with_name(f"{output.stem}_{u}{output.suffix}"), job.force,
                 fitted.rounds[-1].interrupted)
    return ModelResult(params, train_mae, val_mae, trials, seconds, output,
                       fitted.rounds[-1].interrupted)


SPAN = 2.0  # the randomization's ranges: the type's value times exp(±SPAN·σ)
FRICTION = ("friction_base", "friction_stribeck", "friction_viscous", "lugre.coulomb",
            "lugre.static", "lugre.viscous")


def spread_intervals(fitted: PopulationFit, train_mae: float, units: int) -> dict:
    """The population's ranges in the layout of a fit's sensitivity intervals, so that
    ``export --randomization`` draws the units' spread: each unit parameter's type value
    times exp(±2σ), and the friction scale from the widest friction spread."""
    values, space = fitted.type_values, fitted.space
    intervals = {p: {"value": values[p], "lower": space.applied(p, values[p], -SPAN * s),
                     "upper": space.applied(p, values[p], SPAN * s), "lower_clamped": False,
                     "upper_clamped": False} for p, s in fitted.spread.items()}
    friction = max((s for p, s in fitted.spread.items() if p in FRICTION), default=0.0)
    return {"percent": 0.0, "base_mae": train_mae, "threshold_mae": train_mae,
            "population_units": units, "parameters": intervals,
            "friction_scale": {"value": 1.0, "lower": math.exp(-SPAN * friction),
                               "upper": math.exp(SPAN * friction), "lower_clamped": False,
                               "upper_clamped": False}}


def _weighted(units: dict, key: str, weight: str) -> float:
    total = sum(u[weight] for u in units.values())
    return float(sum(u[key] * u[weight] for u in units.values()) / total)


INSIDE = 2.0  # |δ/σ| up to which a unit is inside its population (about 95 %)


def unit_check(params, logs: list[BenchLog], trials: int = 800, seed: int = 0,
               cancel: Cancellation | None = None) -> dict:
    """Whether the unit of ``logs`` is inside the population of ``params`` (a type's set
    from ``fit --units``) and what a refit of its deviations gains: its deviations found
    with the population's spread as their prior (the type's values held), each over σ."""
    population = params.provenance["population"]
    shared = tuple(population["unit_parameters"])
    sigma = {p: float(population["spread"][p]) for p in shared}
    held = SearchSpace.build(params.actuator, params.model, params.values, False)
    space = PopulationSpace.build(held, ("unit",), shared)
    objective = PopulationObjective(space, {"unit": logs}, sigma, 0.0)
    result = run_search(space, objective, FitSettings(trials=trials, seed=seed, polish=False,
                                                      restarts=False),
                        {"check": params.model.name}, False, None, cancel)
    x = np.array([[result.values[n] for n in space.names]])
    found = space.population(x)
    bench = objective.objectives[0]
    deviation = {p: result.values[f"unit/{p}"] for p in shared}
    z = {p: deviation[p] / sigma[p] for p in shared}
    before = float(bench.score(found[:, 0])[0][0])
    after = float(bench.score(found[:, 1])[0][0])
    return {"deviation": deviation, "z": z, "inside": bool(max(map(abs, z.values())) <= INSIDE),
            "mae_type_set": before, "mae_refit": after}


def check_lines(check: dict) -> list[str]:
    """What ``eval`` prints of :func:`unit_check`."""
    far = sorted(check["z"].items(), key=lambda kv: -abs(kv[1]))
    zs = ", ".join(f"{p} {_shown(p, check['deviation'][p])} ({z:+.1f}σ)" for p, z in far)
    verdict = ("inside the population" if check["inside"] else
               f"outside the population ({far[0][0]} at {far[0][1]:+.1f}σ): refit this unit")
    gain = 1.0 - check["mae_refit"] / check["mae_type_set"]
    return [f"  this unit is {verdict}; its deviations: {zs}",
            f"  a refit of its deviations: MAE {check['mae_type_set']:.3e} -> "
            f"{check['mae_refit']:.3e} rad ({gain:.0%} lower)"]


def _shown(p: str, delta: float) -> str:
    """A deviation as a user reads it: a percentage, or an amount in the parameter's unit."""
    if p in ADDITIVE:
        return f"{delta:+.3g} {P.PLAUSIBLE[p][0]}"
    return f"{math.expm1(delta):+.1%}"
