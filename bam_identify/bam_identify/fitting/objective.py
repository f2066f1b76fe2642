"""The objective of a bench fit: the training error of a whole population at once.

The objective is the mean absolute error between the simulated and recorded
positions over the training logs, the simulation recomputing the servo's
control law from the simulated state (Algorithm 1 with the servo model), every
candidate of a generation simulated in ONE batched, parallel numba call
(:func:`bam_sim.bench.rollouts.batch_mae`). The thermal parameters are
identified from the recorded winding temperature: the score adds its MAE,
weighted by ``temperature_weight`` (rad/K, default
:data:`~bam_sim.models.dcmotor.groups.DEFAULT_TEMPERATURE_WEIGHT`), to the
position MAE.

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

import math

import numpy as np

from bam_identify.fitting.space import SearchSpace
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.rollouts import batch_errors, batch_mae, batch_rollout, batch_violation
from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import (
    DEFAULT_TEMPERATURE_WEIGHT,
    DEFAULT_VOLTAGE_WEIGHT,
)

# Score of an elasto-plastic candidate that violates (14) or the coupling limit
# (times 1 + its violation): above any simulated MAE, which the ±100 rad/s
# velocity clip bounds by 100 rad/s times the log's duration.
INFEASIBLE = 1.0e6  # also above the score of a diverged rollout (DIVERGED_SCORE)


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
