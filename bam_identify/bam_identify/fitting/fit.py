"""Identification of a model's parameters by CMA-ES (paper section V-B).

The objective is the mean absolute error between the simulated and recorded
positions over the training logs, the simulation recomputing the servo's
control law from the simulated state (Algorithm 1 with the servo model). The
search runs CMA-ES (the ``cmaes`` package, optuna's own backend, driven
directly: :mod:`bam_identify.fitting.cma_run`): a whole generation of
candidates is asked, simulated in ONE batched, parallel numba call
(:func:`bam_sim.bench.rollouts.batch_mae`) and told back, so the cost of a
candidate is its simulation and nothing per trial. With a storage, the study
is recorded in optuna per lease of generations
(:mod:`bam_identify.fitting.study_record`), resumed from there, or shared
between workers. Once CMA-ES has found the basin, Levenberg–Marquardt on the
position residuals finishes the fit (:mod:`bam_identify.fitting.polish`,
scheduled by :mod:`bam_identify.fitting.search`).

Identified: the actuator's motor parameters (k_t, R, J_m where they are not
fixed constants), the bench offset q_offset and the friction parameters of
the model, each within the registry's bounds; any of them can be held fixed.
The optional groups of MuJoCo's DC-motor model asked for
(``SearchSpace.build(groups=...)``, ``fit --groups``) add their identified
parameters (:mod:`bam_sim.models.dcmotor.groups`): inductance L, saturation
current, the thermal R_T, C and α, cogging amplitude and phase, the dcmotor
controller's k_i and k_d. The thermal parameters are identified from the
recorded winding temperature: the objective adds its MAE, weighted by
``temperature_weight`` (rad/K, default :data:`DEFAULT_TEMPERATURE_WEIGHT`), to
the position MAE.

LuGre (``lugre``) is searched like the elasto-plastic models below: a
candidate whose bristle spring-damper is unstable on the joint at the logs'
step (:func:`bam_sim.models.elastoplastic.validity.lugre_violation`) is not simulated and
gets the graded ``INFEASIBLE`` score.

Elasto-plastic models (``ep_*``, Cisneros et al.): F_C, F_S − F_C, v_S, D,
K, B (and K_l, K_l^s for ``ep_load``) are searched in the registry's box, but
a candidate is simulated only if condition (14), K·T + B ≥ (F_S − F_C)/v_S − D,
and the coupling limit T·(K·T + 2B) < 4J hold at the logs' step T, for the
smallest J and the largest load of the training logs
(:func:`bam_sim.bench.rollouts.batch_violation`). The constraint couples B to
four other searched parameters (and J to the searched armature), so no fixed
box or simple bound on B keeps it; a candidate outside is not simulated and
scores ``INFEASIBLE``·(1 + its relative violation) instead: worse than any
simulated one, and the less it violates the better, which CMA-ES (rank-based)
follows back into the valid region. Every set the fit reports therefore
satisfies both conditions at the step of the logs it was fitted on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bam_identify.fitting.cma_run import CmaRun, default_popsize, random_start
from bam_identify.fitting.search import DIVERGED_MAE, Search
from bam_identify.fitting.study_record import open_record
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.rollouts import batch_errors, batch_mae, batch_rollout, batch_violation
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.groups import (
    DEFAULT_TEMPERATURE_WEIGHT,
    DEFAULT_VOLTAGE_WEIGHT,
    get_group,
)
from bam_sim.models.model_registry import FrictionModel, resolve_model
from bam_sim.models.parameter_set import (
    ParameterSet,
    allowed_names,
    identification_bounds,
)
from bam_sim.models.servo.actuators import FAMILY_NAMES, Actuator, resolve_actuator

Q_OFFSET_BOUNDS = (-0.2, 0.2)  # rad: a bench mounting error, not a free rotation
# Score of an elasto-plastic candidate that violates (14) or the coupling limit
# (times 1 + its violation): above any simulated MAE, which the ±100 rad/s
# velocity clip bounds by 100 rad/s times the log's duration.
INFEASIBLE = 1.0e6  # also above the score of a diverged rollout (DIVERGED_SCORE)


class UnitBox:
    """The unit-box coordinates of a search over ``self.bounds`` ({name: (low, high)}):
    what CMA-ES searches, shared by the bench's and the robot's search spaces."""

    bounds: dict[str, tuple[float, float]]

    @property
    def names(self) -> list[str]:
        return list(self.bounds)

    def unit_box(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower bounds, ranges): values = lower + u·range for u in the unit box."""
        lower, upper = np.array(list(self.bounds.values()), dtype=float).reshape(-1, 2).T
        return lower, upper - lower

    def to_unit(self, values: dict[str, float]) -> np.ndarray:
        lower, span = self.unit_box()
        return (np.array([values[name] for name in self.names]) - lower) / span

    def values_of(self, x: np.ndarray) -> dict[str, float]:
        """The free values of one candidate by name (what a fit reports)."""
        return dict(zip(self.bounds, map(float, x), strict=True))


@dataclass(frozen=True)
class SearchSpace(UnitBox):
    """The free parameters of one (actuator, model) pair and their bounds.

    A candidate is a row of free values in the order of :attr:`names`; a
    population of them maps onto the kernels' parameter vectors in one step
    (:meth:`population`).
    """

    actuator: Actuator
    model: FrictionModel
    bounds: dict[str, tuple[float, float]]
    fixed: dict[str, float]

    @classmethod
    def build(cls, actuator: Actuator | str, model: FrictionModel | str,
              fixed: dict[str, float] | None = None, identify_offset: bool = True,
              groups: tuple[str, ...] = ()) -> SearchSpace:
        """``groups``: optional groups of the DC-motor model whose parameters are
        identified too (:data:`bam_sim.models.dcmotor.groups.GROUPS`; their other
        parameters are held at ``fixed``, where the group needs them).

        ``actuator`` and ``model`` are the registry's objects, or names given on
        the command line or in a file (resolved here, once)."""
        act, mdl = resolve_actuator(actuator), resolve_model(model)
        bounds = dict(identification_bounds(act, mdl))
        for name in groups:
            group = get_group(name)
            if group.family is not None and group.family != act.family:
                raise BamError(f"--groups {group.name}: the group belongs to the "
                               f"{FAMILY_NAMES[group.family]} family, not to {act.name}")
            bounds.update(group.bounds(act.scales))
        if identify_offset:
            bounds["q_offset"] = Q_OFFSET_BOUNDS
        allowed = allowed_names(act, mdl)
        fixed = dict(fixed or {})
        for name, value in fixed.items():
            if name not in allowed:
                raise BamError(f"--set {name}: '{name}' is not a parameter of model {mdl.name} on "
                               f"{act.name}; its parameters are {', '.join(sorted(allowed))}")
            P.check_value(name, value, "--set")
            bounds.pop(name, None)
        space = cls(act, mdl, bounds, fixed)
        # A set of the space must be valid as a whole (a group missing what it needs, a
        # held value outside a group's rules): say so now, not after the fit.
        middle = {name: 0.5 * (lo + hi) for name, (lo, hi) in bounds.items()}
        space.parameter_set(middle, {})
        return space

    @property
    def index(self) -> np.ndarray:
        """Where each free parameter sits in the kernels' parameter vector."""
        return np.array([P.INDEX[name] for name in self.bounds], dtype=np.intp)

    def base_vector(self) -> np.ndarray:
        """The vector of fixed values (actuator constants, --set values, q_offset 0)."""
        return P.to_vector({"q_offset": 0.0, **self.actuator.fixed, **self.fixed})

    def population(self, x: np.ndarray) -> np.ndarray:
        """The kernels' parameter vectors (m, N_PARAMS) of candidates ``x`` (m, n): the
        fixed values with each row's free values put in place."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        pop = np.tile(self.base_vector(), (x.shape[0], 1))
        pop[:, self.index] = x
        return pop

    def population_of(self, sets: list[dict[str, float]]) -> np.ndarray:
        """The kernels' parameter vectors of sets given by name (a file's, a report's,
        a test's): the fixed values with each set's values put in place."""
        pop = np.tile(self.base_vector(), (len(sets), 1))
        for i, values in enumerate(sets):
            for name, value in values.items():
                pop[i, P.INDEX[name]] = value
        return pop

    def parameter_set(self, values: dict[str, float], provenance: dict) -> ParameterSet:
        merged = {**self.actuator.fixed, "q_offset": 0.0, **self.fixed, **values}
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
    """Training error of a population: one batched simulation of every log.

    The score is the step-weighted position MAE (rad) plus, for sets with the
    thermal group, ``temperature_weight`` (rad/K) times the step-weighted MAE
    of the winding temperature over the logs that recorded it (K), and, when the
    supply's series resistance is identified, ``voltage_weight`` (rad/V) times
    the MAE of the input voltage over the logs whose bus reported it (V).
    """

    def __init__(self, space: SearchSpace, logs: list[BenchLog], replay: bool = False,
                 check_logs: list[BenchLog] | None = None,
                 temperature_weight: float = DEFAULT_TEMPERATURE_WEIGHT,
                 voltage_weight: float = DEFAULT_VOLTAGE_WEIGHT):
        """``check_logs``: more logs (e.g. the validation logs) on which an ``ep_*``
        candidate must be valid too, though they are not scored."""
        if not logs:
            raise BamError("no training logs to identify from")
        if not (math.isfinite(temperature_weight) and temperature_weight >= 0.0):
            raise BamError(f"the temperature weight must be a finite number >= 0 (rad/K), got "
                           f"{temperature_weight}")
        self.space = space
        self.batch = LogBatch.pack(logs, space.actuator)
        self.check_batch = (LogBatch.pack([*logs, *check_logs], self.batch.actuator)
                            if check_logs else self.batch)
        self.weights = self.batch.lengths / self.batch.lengths.sum()
        self.replay = replay
        self.temperature_weight = float(temperature_weight)
        # The bus's input voltage counts where the supply sag is searched.
        self.voltage_weight = (float(voltage_weight) if "supply.resistance" in space.bounds
                               and self.batch.has_input_voltage else 0.0)
        self.evaluations = 0

    def __call__(self, population: np.ndarray) -> np.ndarray:
        """Score of each parameter vector of ``population`` (see :meth:`score`)."""
        return self.score(population)[0]

    def score(self, population: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(score, violation) of each parameter vector of ``population`` (m, N_PARAMS;
        :meth:`SearchSpace.population`): position MAE + weight·temperature MAE (rad),
        and the constraint violation, computed once here (0: simulated).

        An ``ep_*`` or LuGre candidate that may not be simulated at the logs'
        step scores ``INFEASIBLE``·(1 + violation) (see the module docstring).
        """
        population = np.atleast_2d(np.asarray(population, dtype=np.float64))
        violation = self.violation(population)
        valid = violation == 0.0
        scores = INFEASIBLE * (1.0 + violation)
        if valid.any():
            # The valid sets hold on check_batch, a superset of the scored logs: no
            # second check in the rollout.
            errors, errors_t, errors_v = batch_errors(self.space.model, population[valid],
                                                      self.batch, self.replay,
                                                      self.voltage_weight > 0.0, checked=True)
            simulated = (errors @ self.weights + self.temperature_weight * self._mean(errors_t)
                         + self.voltage_weight * self._mean(errors_v))
            scores[valid] = np.where(np.isfinite(simulated), simulated, np.inf)
        self.evaluations += len(violation)
        return scores, violation

    @property
    def scores_temperature(self) -> bool:
        """Whether the score holds a temperature term: a set with a thermal state (R_T
        searched or held > 0) on logs that recorded a temperature. Logs that carry one
        (every legacy Dynamixel log) are scored on positions alone by other sets."""
        thermal = ("thermal.resistance" in self.space.bounds
                   or self.space.fixed.get("thermal.resistance", 0.0) > 0.0)
        return thermal and self.batch.has_temperature and self.temperature_weight > 0.0

    def _mean(self, errors_t: np.ndarray) -> np.ndarray:
        """Step-weighted mean over the logs scored on a reading (0 where none is)."""
        scored = np.isfinite(errors_t[0]) if errors_t.size else np.zeros(0, bool)
        if not scored.any():
            return np.zeros(errors_t.shape[0])
        weights = self.batch.lengths[scored] / self.batch.lengths[scored].sum()
        return errors_t[:, scored] @ weights

    def errors(self, values: dict[str, float]) -> tuple[float, float | None]:
        """(position MAE in rad, temperature MAE in K or None) of one set over the logs,
        step-weighted; a one-line BamError if the set may not run on them."""
        errors, errors_t, _ = batch_errors(self.space.model, self.space.population_of([values]),
                                           self.batch, self.replay)
        temperature = (float(self._mean(errors_t)[0]) if np.isfinite(errors_t).any()
                       else None)
        return float(errors[0] @ self.weights), temperature

    def voltage_error(self, values: dict[str, float]) -> float | None:
        """Input-voltage MAE (V) of one set over the logs whose bus reported it (None: none)."""
        if not self.batch.has_input_voltage:
            return None
        _, _, errors_v = batch_errors(self.space.model, self.space.population_of([values]),
                                      self.batch, self.replay, True)
        return float(self._mean(errors_v)[0]) if np.isfinite(errors_v).any() else None

    def violation(self, population: np.ndarray) -> np.ndarray:
        """0 for each parameter vector that may be simulated, else its relative violation
        of (14) or the coupling limit (``ep_*``), or of LuGre's stick limits (always 0
        for M1..M6)."""
        return batch_violation(self.space.model, population, self.check_batch)

    def residuals(self, population: np.ndarray) -> np.ndarray:
        """Simulated minus recorded position of every entry of every log, one row per
        parameter vector (rad; padding 0); a row of NaN for an ``ep_*`` candidate that
        may not be simulated. The position MAE of a row is
        ``|row|.sum() / batch.lengths.sum()``."""
        population = np.atleast_2d(np.asarray(population, dtype=np.float64))
        valid = self.violation(population) == 0.0
        rows = np.full((len(valid), self.batch.position.size), np.nan)
        if valid.any():
            q = batch_rollout(self.space.model, population[valid], self.batch, self.replay,
                              checked=True)
            rows[valid] = (q - self.batch.position).reshape(int(valid.sum()), -1)
        self.evaluations += len(valid)
        return rows

    def per_log(self, values: dict[str, float]) -> np.ndarray:
        """MAE of each log for one set; a one-line BamError if an ep_* set may not run."""
        return batch_mae(self.space.model, self.space.population_of([values]), self.batch,
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


# Each model's nearest simpler models: M1 ⊂ M2, M3 ⊂ M4 ⊂ M5 ⊂ M6 (section III);
# elasto-plastic: ep_load with K_l = K_l^s = 0 is ep_stribeck (the same K, B carry
# over). ep_cv ⊂ ep_stribeck too (F_S = F_C), but that start sits on the edge
# F_S − F_C = 0 of the box, a local optimum the search rarely leaves: without
# stiction is not a good guess of stiction, so ep_stribeck and ep_rational start cold.
NESTED_IN = {"m2": ("m1",), "m3": ("m1",), "m4": ("m2", "m3", "m1"),
             "m5": ("m4", "m3", "m2", "m1"), "m6": ("m5", "m4", "m3", "m2", "m1"),
             "ep_load": ("ep_stribeck",)}


def nested_start(space: SearchSpace, fitted: dict[str, float]) -> dict[str, float]:
    """A starting point for ``space`` that reproduces a fitted simpler model.

    Terms the simpler model lacks are (nearly) zero, so the richer model starts
    from the simpler model's friction budget: K_m = K_e = K_l and
    K_m^s = K_e^s = K_l^s turn M4 into M5 (equation 9 with equal coefficients
    is equation 8); the Stribeck shape keeps the simpler model's v_s and α or
    the registry's defaults. Values are only clipped into the bounds, so the
    start reproduces the simpler model exactly: evaluated first, it guarantees
    the richer fit ends no worse than the simpler one. ep_stribeck → ep_load
    is exact too (K_l = K_l^s = 0), and so is ep_cv → ep_stribeck
    (F_S − F_C = 0 turns Φ_Z (30) into (20)).
    """
    defaults = space.model.defaults(space.actuator.scales)
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
