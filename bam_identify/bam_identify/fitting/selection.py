"""The model a fit recommends, chosen on the logs it did not train on (``fit --select``).

Every model fitted is scored on each validation log (its position MAE per log). The
best is the lowest mean; the one selected is the simplest whose mean is within one
standard error of the best's, the standard error of the paired per-log differences
(the one-standard-error rule, Hastie, Tibshirani and Friedman, *The Elements of
Statistical Learning*, section 7.10): a richer model is recommended only where the
held-out logs show it better beyond what their own spread can tell. Models are
ordered simpler first, as the registry lists them (M1 before M6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Candidate:
    """One model's validation errors, per log (rad)."""

    model: str
    per_log: np.ndarray

    @property
    def mae(self) -> float:
        return float(self.per_log.mean())


@dataclass(frozen=True)
class Selection:
    """The model recommended, and each candidate's mean validation MAE (rad), standard
    error against the best (rad) and verdict."""

    winner: str
    best: str
    rows: tuple[tuple[str, float, float, str], ...]

    def lines(self) -> list[str]:
        """The selection as the command prints it and the report holds it."""
        out = [f"selected {self.winner} on validation (the simplest within one standard "
               f"error of the best, {self.best}):"]
        out += [f"  {model}: {mae:.4e} rad (±{se:.1e} against {self.best}) {verdict}"
                for model, mae, se, verdict in self.rows]
        return out


def select(candidates: list[Candidate]) -> Selection:
    """The selection among ``candidates`` (simpler first, each scored on the same
    validation logs); the module docstring gives the rule."""
    if not candidates:
        raise ValueError("no candidate to select from")
    best = min(candidates, key=lambda c: c.mae)
    rows, winner = [], None
    for c in candidates:
        se = _paired_se(c.per_log, best.per_log)
        close = c.mae - best.mae <= se
        if close and winner is None:
            winner = c.model
            verdict = "selected" + ("" if c is best else f": within {se:.1e} rad of the best")
        elif c is best:
            verdict = "best, but not beyond one standard error of a simpler model"
        else:
            verdict = f"{c.mae / best.mae:.2f}x the best" if not close else "as good, richer"
        rows.append((c.model, c.mae, se, verdict))
    return Selection(winner or best.model, best.model, tuple(rows))


def _paired_se(a: np.ndarray, b: np.ndarray) -> float:
    """Standard error of the mean of the per-log differences a − b (0 with one log)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    return float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0


def append_selection(report: Path, lines: list[str]) -> None:
    """The selection's section at the end of the report's Markdown (``report``)."""
    with open(report, "a", encoding="utf-8") as out:
        out.write("\n## Model selection\n\n```\n" + "\n".join(lines) + "\n```\n")
