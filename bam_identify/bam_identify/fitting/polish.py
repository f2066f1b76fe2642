"""Levenberg–Marquardt on the position residuals, to finish a fit CMA-ES has located.

CMA-ES finds the basin of the optimum at a rate independent of the problem's
smoothness, but then closes in at a linear rate; the residual vector (the
simulated minus recorded position of every entry of every training log) is a
smooth function of the parameters near the optimum, where Gauss–Newton steps
converge quadratically on data the model reproduces. This module minimises
½‖r(u)‖² over the unit box u ∈ [0, 1]^n with the damped Gauss–Newton method
of Levenberg and Marquardt:

* the step solves (JᵀJ + μ·D) δ = −Jᵀr, D the largest diag(JᵀJ) met so far
  in this run (Moré's scaling in MINPACK's lmder: Moré, "The Levenberg–
  Marquardt algorithm: implementation and theory", 1978), so each
  parameter is damped by its own curvature and a nearly unidentified one
  does not take a wild step; a parameter the step would carry out of the
  box is fixed on the bound and the others solved again;
* the damping μ starts at τ and follows the gain ratio ρ of the actual to
  the predicted reduction: μ ← μ·max(1/3, 1 − (2ρ − 1)³) on success,
  μ ← μ·ν, ν ← 2ν on failure (Madsen, Nielsen & Tingleff, "Methods for
  non-linear least squares problems", 2nd ed. 2004, section 3.2);
* the Jacobian is a forward difference J[:, j] = (r(u + h·e_j) − r(u)) / h
  (backward at the upper bound), the base point and its n perturbations
  evaluated in ONE batched simulation (n + 1 parameter sets); after an
  accepted step only the n perturbations are new.

The method stops at the target, at the budget, when the step or the relative
reduction falls below resolution (converged), or when the score has not
halved over the last ``STALL_STEPS`` iterations: LM has reached a local
minimum, or a noise floor, and the caller returns to CMA-ES.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

STEP = 1e-6  # finite-difference step in the unit box (a millionth of each range)
TAU = 1e-3  # initial damping relative to the largest curvature
STALL_STEPS = 8  # iterations without the score halving: stalled
XTOL = 1e-12  # steps shorter than this (unit box) have converged


@dataclass
class Polished:
    """The outcome of one LM run."""

    u: np.ndarray  # best point of the unit box
    score: float  # its score (the fit's MAE)
    evaluations: int
    reason: str  # "target", "budget", "converged" or "stalled"


class _Budget(Exception):
    pass


class LevenbergMarquardt:
    """One bounded LM run from ``u0``.

    ``residuals(U)`` gives the residual vectors of the points U (m, n) as
    rows (m, N), a row of NaN for a point that may not be simulated;
    ``score(R)`` the fit's score of each row (the MAE, NaN rows ∞);
    ``evaluated(U, scores)`` is told every evaluated batch (the record, the
    best so far, the budget).
    """

    def __init__(self, residuals: Callable[[np.ndarray], np.ndarray],
                 score: Callable[[np.ndarray], np.ndarray],
                 evaluated: Callable[[np.ndarray, np.ndarray], None], budget: int,
                 target: float | None = None):
        self.residuals, self.score, self.evaluated = residuals, score, evaluated
        self.budget, self.target = budget, target
        self.used = 0
        self.best_u: np.ndarray | None = None
        self.best = np.inf

    def _evaluate(self, U: np.ndarray) -> np.ndarray:
        if self.used + len(U) > self.budget:
            raise _Budget
        R = self.residuals(U)
        scores = self.score(R)
        self.used += len(U)
        i = int(np.argmin(scores))
        if scores[i] < self.best:
            self.best, self.best_u = float(scores[i]), U[i].copy()
        self.evaluated(U, scores)
        return R

    def _normal_equations(self, u: np.ndarray, r: np.ndarray | None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(r(u), JᵀJ, Jᵀr) at u: one batched call of the n perturbations, with u itself
        if r is not known yet. J is never formed: its transpose, one row per parameter
        (contiguous), gives both products. A perturbation that may not be simulated
        leaves its parameter out of this step (zero row)."""
        steps = np.where(u + STEP <= 1.0, STEP, -STEP)
        points = u + np.diag(steps)
        if r is None:
            R = self._evaluate(np.vstack([u, points]))
            r, R = R[0], R[1:]
        else:
            R = self._evaluate(points)
        Jt = (R - r) / steps[:, None]
        Jt[~np.isfinite(Jt).all(axis=1)] = 0.0
        return r, Jt @ Jt.T, Jt @ r

    def run(self, u0: np.ndarray) -> Polished:
        try:
            reason = self._iterate(np.clip(u0, 0.0, 1.0))
        except _Budget:
            reason = "budget"
        return Polished(self.best_u if self.best_u is not None else u0, self.best,
                        self.used, reason)

    def _reached(self) -> bool:
        return self.target is not None and self.best <= self.target

    def _iterate(self, u: np.ndarray) -> str:
        r, A, g = self._normal_equations(u, None)
        if not np.all(np.isfinite(r)):
            return "stalled"  # the start itself may not be simulated
        cost = 0.5 * float(r @ r)
        mu, nu = TAU, 2.0  # relative: the damping matrix is diag(JᵀJ) itself
        scores = [self.best]
        scale = np.full(u.size, 1e-12 * max(float(np.max(np.diag(A))), 1e-300))
        while not self._reached():
            scale = np.maximum(scale, np.diag(A))
            step = _step(u, A, g, mu, scale)
            if np.linalg.norm(step) <= XTOL * (1.0 + np.linalg.norm(u)):
                return "converged"
            predicted = -(float(step @ g) + 0.5 * float(step @ A @ step))
            r_new = self._evaluate((u + step)[None, :])[0]
            new_cost = 0.5 * float(r_new @ r_new) if np.all(np.isfinite(r_new)) else np.inf
            rho = (cost - new_cost) / predicted if predicted > 0.0 else -1.0
            if rho > 0.0:
                u, r, cost = u + step, r_new, new_cost
                if self._reached():
                    break
                r, A, g = self._normal_equations(u, r)
                mu *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
                nu = 2.0
            else:
                mu, nu = mu * nu, nu * 2.0
            scores.append(self.best)
            if len(scores) > STALL_STEPS and scores[-1] > 0.5 * scores[-1 - STALL_STEPS]:
                return "stalled"
        return "target"


def _step(u: np.ndarray, A: np.ndarray, g: np.ndarray, mu: float,
          scale: np.ndarray) -> np.ndarray:
    """The damped Gauss–Newton step, kept in the box by fixing parameters at their bounds.

    A parameter on a bound whose gradient pushes it out stays there; the
    others solve the damped system. A parameter the step would carry out of
    the box is set on the bound it crosses and the rest solved again with it
    fixed (at most n times): the step minimises the damped model on the face
    of the box it ends on, so it stays a descent step (a clipped step may not).
    """
    fixed = ((u <= 0.0) & (g > 0.0)) | ((u >= 1.0) & (g < 0.0))
    step = np.zeros_like(u)
    damped = A + mu * np.diag(scale)
    for _ in range(u.size):
        free = ~fixed
        if not free.any():
            break
        rhs = -(g[free] + damped[np.ix_(free, fixed)] @ step[fixed])
        step[free] = np.linalg.solve(damped[np.ix_(free, free)], rhs)
        out = free & ((u + step < 0.0) | (u + step > 1.0))
        if not out.any():
            break
        step[out] = np.clip(u[out] + step[out], 0.0, 1.0) - u[out]
        fixed |= out
    return np.clip(u + step, 0.0, 1.0) - u
