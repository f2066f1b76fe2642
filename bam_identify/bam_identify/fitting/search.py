"""The loop of a fit: CMA-ES generations, Levenberg–Marquardt polishes, budget and record.

A generation is asked whole, scored in one batched simulation (or read from
the record: a resumed study, or shares other workers evaluated) and told
whole (:mod:`cma_run`). Once a run has had ``POLISH_AFTER`` generations,
CMA-ES's mean is handed to Levenberg–Marquardt on the position residuals
(:mod:`polish`); if that stalls (a local minimum, or the noise floor of real
data), CMA-ES goes on, and polishes again every ``POLISH_EVERY`` generations
once its own best has halved since the last polish started (and is within
ten times the fit's best). The CMA-ES state
never depends on a polish, so a polish decided at generation g is the same
on every worker and on replay; its outcome is stored as one record item.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from bam_identify.fitting.cma_run import CmaRun
from bam_identify.fitting.polish import LevenbergMarquardt
from bam_identify.fitting.study_record import (
    POLL_SECONDS,
    RECLAIM_SECONDS,
    Pending,
    shares_of,
)
from bam_sim.common.cancellation import Cancellation, Cancelled

if TYPE_CHECKING:  # fit imports this module
    from bam_identify.fitting.objective import Objective
    from bam_identify.fitting.space import SearchSpace

# A mean position error beyond a turn: the simulation does not follow the bench at all
# (a diverged rollout). Such candidates score a finite penalty (CMA-ES needs numbers) and
# a fit whose best candidate diverged is reported as such.
DIVERGED_MAE = 2.0 * np.pi
DIVERGED_SCORE = 1.0e3 * DIVERGED_MAE
# Generations before a run's first polish, and between polishes. Measured on the paper-like
# MX-64 M4 and eRob80:100 M6 sets (5 seeds each, benchmarks/identification.py): polishing
# after 10 or 15 generations mostly stalls (CMA-ES has not yet found the basin), after 20
# it reaches 1e-4 rad in a median of about 500 (MX-64) and 400 (eRob) evaluations.
POLISH_AFTER = 20
POLISH_EVERY = 10


def penalize_diverged(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=float)
    return np.where(np.isfinite(scores) & (scores <= DIVERGED_MAE), scores, DIVERGED_SCORE)


class Search:
    """The state of one fit: budget, best so far, history, time in the simulation.

    ``space`` is the fit's :class:`~bam_identify.fitting.space.SearchSpace` and
    ``objective`` its :class:`~bam_identify.fitting.objective.Objective`; ``polish``:
    whether to polish with Levenberg–Marquardt (the objective's score must then
    be the position MAE the residuals give). Candidates stay arrays from the
    optimizer to the kernel: unit box u → values x = lower + u·span (m, n) →
    the kernels' parameter vectors (``space.population``, m × N_PARAMS).

    ``cancel`` is checked at every generation, every polish step and every wait for
    another worker: Cancelled leaves the search there, its best so far kept.
    """

    def __init__(self, space: SearchSpace, objective: Objective, trials: int,
                 target: float | None, record, polish: bool,
                 progress: Callable[[int, float], None] | None,
                 cancel: Cancellation | None = None):
        self.space, self.objective, self.record = space, objective, record
        self.cancel = cancel or Cancellation()
        self.names = space.names
        self.trials, self.target, self.polishing = trials, target, polish
        self.progress = progress
        self.lower, self.span = space.unit_box()
        self.best, self.best_values = np.inf, None
        self.done = self.evaluated = 0
        self.simulated = 0.0
        self.history: list[tuple[int, float, float]] = []
        self.polishes: list[tuple[int, str, int]] = []
        self.last_polish: dict[int, tuple[int, float]] = {}  # run -> generation, its best
        self.start = time.perf_counter()

    def reached(self) -> bool:
        return self.target is not None and self.best <= self.target

    def score(self, x: np.ndarray) -> np.ndarray:
        """Scores of candidates x (m, n): one batched simulation, the constraint
        violation computed once (by the objective)."""
        started = time.perf_counter()
        raw, violation = self.objective.score(self.space.population(x))
        # Invalid ep_* candidates keep their graded INFEASIBLE score (not simulated,
        # so not "diverged"): CMA-ES follows it back into the valid region.
        scores = np.where(violation > 0.0, raw, penalize_diverged(raw))
        self.simulated += time.perf_counter() - started
        self.evaluated += len(x)
        return scores

    # -- CMA-ES ----------------------------------------------------------------------------

    def generation(self, run: CmaRun, stored: dict[int, np.ndarray]) -> bool:
        """Ask, score and tell one generation; False if the budget ended inside it.

        Scores already stored (a resumed study, or shares other workers
        evaluated) are read, not simulated again.
        """
        self.cancel.check()
        u = run.ask()
        x = self.lower + u * self.span
        g, size = run.generation, run.popsize
        limit = min(size, self.trials - self.done)
        scores = stored.pop(g, np.full(size, np.nan))
        while np.isnan(scores[:limit]).any():
            # Read what the others wrote first: a share another worker finished is never
            # taken over (a share the budget cut short looks unfinished to a resumed fit).
            if self.record.shares > 1 and not self._merge(run, g, scores, limit):
                break
            worked = False
            for share in self.record.work(run.k, g, size, limit):
                index = shares_of(size, self.record.shares)[share]
                todo = index[(index < limit) & np.isnan(scores[index])]
                if todo.size:
                    scores[todo] = self.score(x[todo])
                    worked = True
                self.record.finish(Pending(run.k, g, share, g * size + index, x[index],
                                           scores[index].copy()))
            if not worked:  # the missing scores are other workers' to write
                self._wait(run, g, scores, limit)
        self._account(len(scores[:limit]), scores[:limit], x[:limit])
        if limit < size:
            return False
        run.tell(u, scores)
        return True

    def _merge(self, run: CmaRun, g: int, scores: np.ndarray, limit: int) -> bool:
        """Copy the stored scores of generation ``g`` into the missing ones of ``scores``;
        whether some of the first ``limit`` are still missing."""
        theirs = self.record.scores(run.k, g, run.popsize)
        np.copyto(scores, theirs, where=np.isnan(scores))
        return bool(np.isnan(scores[:limit]).any())

    def _wait(self, run: CmaRun, g: int, scores: np.ndarray, limit: int) -> None:
        """Other workers hold the missing shares: read theirs once they are written, or
        return after RECLAIM_SECONDS to look for shares to take over."""
        until = time.monotonic() + RECLAIM_SECONDS
        while self._merge(run, g, scores, limit) and time.monotonic() < until:
            self.cancel.check()
            self.cancel.wait(POLL_SECONDS)

    def _account(self, count: int, scores: np.ndarray, x: np.ndarray) -> None:
        """``count`` more candidates evaluated, of which ``x`` with ``scores`` may be best."""
        self.done += count
        i = int(np.argmin(scores))
        if scores[i] < self.best:
            self.best = float(scores[i])
            self.best_values = self.space.values_of(x[i])
        self._note(count, self.best)

    def _note(self, count: int, best: float) -> None:
        """History and progress: ``best`` is the best score met so far, whether the
        objective's or a polish's residual MAE (equal but for rounding)."""
        if self.history:
            best = min(best, self.history[-1][2])
        self.history.append((self.done, time.perf_counter() - self.start, best))
        if self.progress is not None:
            self.progress(count, best)

    # -- Levenberg–Marquardt ---------------------------------------------------------------

    def polish_due(self, run: CmaRun) -> bool:
        if not self.polishing or self.trials - self.done < len(self.names) + 2:
            return False  # not even one Jacobian left in the budget
        last = self.last_polish.get(run.k)
        if last is None:
            return run.generation >= POLISH_AFTER
        generation, best = last
        # Again once CMA-ES has halved its error since, unless a polish already ended an
        # order of magnitude below it (no other basin in sight).
        return (run.generation >= generation + POLISH_EVERY and run.bests[-1] < 0.5 * best
                and run.bests[-1] < 10.0 * self.best)

    def polish(self, run: CmaRun) -> None:
        """Levenberg–Marquardt from CMA-ES's mean after this generation, run by one worker
        (or read from the record)."""
        g = run.generation
        self.last_polish[run.k] = (g, run.bests[-1])
        result = self.record.polish_result(run.k, g)
        while result is None:
            if self.record.claim_polish(run.k, g):
                result = self._levenberg_marquardt(run, g)
                break
            until = time.monotonic() + RECLAIM_SECONDS  # then claim again: its worker may
            while (result := self.record.polish_result(run.k, g)) is None \
                    and time.monotonic() < until:  # have vanished
                self.cancel.check()
                self.cancel.wait(POLL_SECONDS)
        else:  # run before (a resumed study) or by another worker
            x = self.lower + np.array(result["u"]) * self.span
            self._account(result["evaluations"], np.array([result["score"]]), x[None, :])
        self.polishes.append((self.done, result["reason"], result["evaluations"]))

    def _levenberg_marquardt(self, run: CmaRun, g: int) -> dict:
        total = float(self.objective.batch.lengths.sum())
        seen_u, seen_scores = [], []

        def residuals(U: np.ndarray) -> np.ndarray:
            started = time.perf_counter()
            rows = self.objective.residuals(self.space.population(self.lower + U * self.span))
            self.simulated += time.perf_counter() - started
            self.evaluated += len(U)
            return rows

        def mae(R: np.ndarray) -> np.ndarray:
            scores = np.abs(R).sum(axis=1) / total
            return np.where(np.isfinite(scores), scores, np.inf)

        def evaluated(U: np.ndarray, scores: np.ndarray) -> None:
            seen_u.append(U)
            seen_scores.append(scores)
            # Progress as it goes; the best itself is the objective's score at the end.
            self.done += len(U)
            self._note(len(U), lm.best)
            self.cancel.check()  # each LM step evaluates: a stop ends the polish there

        # One evaluation kept back: the objective's own score of the polished point.
        budget = self.trials - self.done - 1
        lm = LevenbergMarquardt(residuals, mae, evaluated, budget, self.target)
        try:
            polished = lm.run(run.cma.mean.copy())
        except Cancelled:  # keep what the polish found (its MAE, unrounded)
            if lm.best_u is not None and lm.best < self.best:
                self.best = lm.best
                self.best_values = self.space.values_of(self.lower + lm.best_u * self.span)
            raise
        x = self.lower + polished.u * self.span
        score = self.score(x[None, :])
        self._account(1, score, x[None, :])
        result = {"u": polished.u.tolist(), "score": float(score[0]),
                  "reason": polished.reason, "evaluations": polished.evaluations + 1}
        U = np.vstack([*seen_u, polished.u[None, :]])
        scores = np.concatenate([*seen_scores, score])
        self.record.finish_polish(run.k, g, result, self.lower + U * self.span, scores)
        return result
