"""One CMA-ES run in the unit box of a search space, driven through ``cmaes`` directly.

The search runs in u ∈ [0, 1]^n (each parameter scaled by its bounds, as
optuna's CmaEsSampler does): the initial mean is the box's centre and the
initial step σ = 1/6 of every range, or a warm start's point with a smaller
spread. A generation is asked as a whole (λ candidates) and told as a whole,
so a fit pays CMA-ES's own update once per generation and nothing per trial.

IPOP restarts (Auger & Hansen, 2005, "A restart CMA evolution strategy with
increasing population size"): run k has the population λ₀·2^k and, from
k = 1 on, a seeded random starting point. Every random draw depends only on
(seed, k), and the state after generation g only on the scores told so far,
so two processes given the same seed and scores ask the same candidates:
this is what lets a stored study be replayed on resume and several workers
share one generation.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
import types

import numpy as np


def _cma_class() -> type:
    """``cmaes.CMA`` (optuna's own CMA-ES backend), loaded without ``cmaes/__init__.py``.

    That file imports every optimizer of the package, two of which import
    scipy.stats: about a second, the whole start-up budget of a fit, for a
    class CMA-ES does not use. ``cmaes._cma`` alone needs only numpy. The
    package is stood in for while its module loads, then removed, so a later
    ``import cmaes`` (optuna's sampler) runs the real one and reuses the
    module loaded here.
    """
    if "cmaes" in sys.modules:
        return sys.modules["cmaes"].CMA
    if "cmaes._cma" not in sys.modules:
        spec = importlib.util.find_spec("cmaes")
        if spec is None or spec.submodule_search_locations is None:
            raise ModuleNotFoundError("the cmaes package is not installed (requirements.lock)")
        stand_in = types.ModuleType("cmaes")
        stand_in.__path__ = list(spec.submodule_search_locations)
        sys.modules["cmaes"] = stand_in
        try:
            importlib.import_module("cmaes._cma")
        finally:
            del sys.modules["cmaes"]
    return sys.modules["cmaes._cma"].CMA


def default_popsize(dims: int) -> int:
    """CMA-ES's 4 + 3 ln n, rounded up to an even batch.

    A generation is one parallel call, so a slightly larger population costs
    nothing extra.
    """
    size = 4 + int(3 * math.log(max(dims, 1)))
    return size + size % 2


def run_seed(seed: int, k: int) -> int:
    """The seed of restart k's sampler, a function of the fit's seed only."""
    return int(np.random.SeedSequence([seed, k]).generate_state(1)[0])


def random_start(dims: int, seed: int, k: int) -> np.ndarray:
    """Restart k's seeded random starting point in the unit box."""
    return np.random.default_rng([seed, k]).uniform(0.0, 1.0, dims)


class CmaRun:
    """Restart k of a fit: CMA-ES with population λ₀·2^k in [0, 1]^dims.

    ``start`` (a point of the unit box) starts the search there with step
    ``spread`` instead of the centre with 1/6; on run 0 it is also the first
    candidate of the first generation, so a warm start is always evaluated.
    """

    def __init__(self, dims: int, k: int, popsize0: int, seed: int,
                 start: np.ndarray | None = None, spread: float = 0.05,
                 inject_start: bool = False):
        CMA = _cma_class()  # noqa: N806 - the class, loaded when a fit starts

        self.dims, self.k = dims, k
        self.popsize = popsize0 * 2**k
        mean = np.full(dims, 0.5) if start is None else np.clip(start, 0.0, 1.0)
        sigma = 1.0 / 6.0 if start is None else spread
        self.cma = CMA(mean=mean, sigma=sigma, bounds=np.tile([0.0, 1.0], (dims, 1)),
                       seed=run_seed(seed, k), population_size=self.popsize,
                       n_max_resampling=10 * dims)
        self.injected = mean.copy() if inject_start else None
        self.generation = 0
        self.bests: list[float] = []  # this run's best after each generation

    def ask(self) -> np.ndarray:
        """The next generation, shape (λ, dims): the same for the same seed and history."""
        u = np.array([self.cma.ask() for _ in range(self.popsize)])
        if self.generation == 0 and self.injected is not None:
            u[0] = self.injected
        return u

    def tell(self, u: np.ndarray, scores: np.ndarray) -> None:
        self.cma.tell(list(zip(u, (float(s) for s in scores), strict=True)))
        self.generation += 1
        self.bests.append(min(self.bests[-1:] + [float(np.min(scores))]))

    def stagnated(self) -> bool:
        """No 0.1 % improvement over the last 10 + 30·n/λ generations, or CMA-ES's own
        stopping rules (its step or spread of scores below resolution)."""
        if self.cma.should_stop():
            return True
        horizon = 10 + math.ceil(30 * self.dims / self.popsize)
        if len(self.bests) <= horizon:
            return False
        return not self.bests[-1] < self.bests[-horizon - 1] * (1.0 - 1e-3)
