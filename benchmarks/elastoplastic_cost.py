"""Cost of the elasto-plastic Φ_Z: Stribeck (Lambert W) vs rational, ns per call.

Workload: one million x drawn with a fixed seed and the paper's Section V set
(Z = 1/55, F_S = 2.5, F_C = 0.2, v_S = 0.04, D = 4.5). Each call reads its
parameters from its own row of an array, as a rollout step reads its set
(``ep_load`` changes the levels every step): with the set as compile-time
constants, LLVM would fold and hoist the parameter-only work out of the loop
for whichever function it inlines (the small rational one) and not for the
other, which is not what either costs in use.

Both functions are called as compiled, from two numba loops each:

* ``chained``: each call's x carries a zero-valued dependence on the previous
  result, so calls run one after another, as the steps of a simulation do (the
  friction of step k feeds the state of step k + 1). This is the cost a rollout
  step pays, and the headline;
* ``independent``: the results are summed, so the processor overlaps
  consecutive calls (throughput of a batch of unrelated evaluations).

Three draws of x: ``near`` uniform on ±4·Z·F_S (a quarter sticking, the rest
sliding close to the threshold, where W0 is evaluated near its branch point),
``mixed`` on ±10·Z·F_S (±0.45 rad/s), ``wide`` on ±1 rad/s (mostly far
sliding). Reported per draw and loop: ns per call (minimum over interleaved
repetitions, minus the same loop around no call) and the Stribeck/rational
ratio. For scale, the loops around one libm ``math.exp`` are timed too.

Run: ``tools/workspace.sh exec python benchmarks/elastoplastic_cost.py``;
writes ``benchmarks/results/elastoplastic_cost.json``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numba as nb
import numpy as np
from provenance import environment, write_result

from bam_sim.models.elastoplastic.model import phi_z_rational, phi_z_stribeck

HERE = Path(__file__).resolve().parent
SEED = 11
N = 1_000_000
TARGET = 2.0
HEADLINE = ("mixed", "chained")
Z, F_S, F_C, V_S, D = 1.0 / 55.0, 2.5, 0.2, 0.04, 4.5
DRAWS = {"near": 4.0 * Z * F_S, "mixed": 10.0 * Z * F_S, "wide": 1.0}


@nb.njit(cache=True)
def _libm_exp(x: float, z: float, f_s: float, f_c: float, v_s: float, d: float) -> float:
    return math.exp((f_c - abs(x)) / v_s)


@nb.njit(cache=True)
def _no_call(x: float, z: float, f_s: float, f_c: float, v_s: float, d: float) -> float:
    return x + z + f_s + f_c + v_s + d


def _loops(f):
    """The chained and the independent loop around ``f`` (parameters from row i)."""

    @nb.njit(cache=False)
    def chained(xs: np.ndarray, p: np.ndarray) -> float:
        carry = 0.0
        for i in range(xs.size):
            y = f(xs[i] + carry, p[i, 0], p[i, 1], p[i, 2], p[i, 3], p[i, 4])
            carry = y * p[i, 0] * 0.0  # zero, but the next call waits for y
        return carry

    @nb.njit(cache=False)
    def independent(xs: np.ndarray, p: np.ndarray) -> float:
        acc = 0.0
        for i in range(xs.size):
            acc += f(xs[i], p[i, 0], p[i, 1], p[i, 2], p[i, 3], p[i, 4])
        return acc

    return {"chained": chained, "independent": independent}


FUNCTIONS = {"stribeck": phi_z_stribeck, "rational": phi_z_rational, "exp": _libm_exp,
             "none": _no_call}


def measure(xs: np.ndarray, params: np.ndarray, repeats: int) -> dict:
    """ns per call of each function in each loop (min over interleaved repeats, minus 'none')."""
    loops = {(name, kind): loop for name, f in FUNCTIONS.items()
             for kind, loop in _loops(f).items()}
    for loop in loops.values():
        loop(xs[:16], params[:16])  # compile
    best = dict.fromkeys(loops, math.inf)
    for _ in range(repeats):
        for key, loop in loops.items():
            start = time.perf_counter()
            loop(xs, params)
            best[key] = min(best[key], (time.perf_counter() - start) / len(xs) * 1e9)
    result = {"sticking_fraction": float(np.mean(np.abs(xs) <= Z * F_S))}
    for kind in ("chained", "independent"):
        ns = {name: best[(name, kind)] - best[("none", kind)] for name in FUNCTIONS
              if name != "none"}
        result[kind] = {"ns_per_call": ns, "empty_loop_ns": best[("none", kind)],
                        "ratio_stribeck_vs_rational": ns["stribeck"] / ns["rational"]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--output", type=Path,
                        default=HERE / "results" / "elastoplastic_cost.json")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    params = np.tile(np.array([Z, F_S, F_C, V_S, D]), (N, 1))
    draws = {name: measure(rng.uniform(-half, half, N), params, args.repeats)
             for name, half in DRAWS.items()}
    print(f"{'draw':6s} {'loop':12s} {'stribeck':>9s} {'rational':>9s} {'exp':>6s} {'ratio':>6s}"
          f"  (ns per call, min of {args.repeats})")
    for name, r in draws.items():
        for kind in ("chained", "independent"):
            ns = r[kind]["ns_per_call"]
            print(f"{name:6s} {kind:12s} {ns['stribeck']:9.2f} {ns['rational']:9.2f} "
                  f"{ns['exp']:6.2f} {r[kind]['ratio_stribeck_vs_rational']:6.2f}")
    ratios = {f"{name}/{kind}": r[kind]["ratio_stribeck_vs_rational"]
              for name, r in draws.items() for kind in ("chained", "independent")}
    headline = ratios["/".join(HEADLINE)]
    verdict = "met" if headline <= TARGET else "NOT met"
    print(f"Stribeck/rational ({'/'.join(HEADLINE)}): {headline:.2f}, target <= {TARGET:g} "
          f"{verdict}; worst of all draws and loops: {max(ratios.values()):.2f}")
    write_result(args.output, {
        "benchmark": "elastoplastic_cost",
        "description": __doc__.splitlines()[0],
        "workload": {"calls": N, "seed": SEED, "repeats": args.repeats,
                     "half_width": DRAWS, "Z": Z, "F_S": F_S, "F_C": F_C, "v_S": V_S, "D": D,
                     "parameters": "one row per call (not compile-time constants)"},
        "target_ratio": TARGET,
        "headline": "/".join(HEADLINE),
        "ratio": headline,
        "target_met": headline <= TARGET,
        "ratios": ratios,
        "all_within_target": max(ratios.values()) <= TARGET,
        "draws": draws,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
