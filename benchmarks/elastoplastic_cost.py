"""Cost of the elasto-plastic Φ_Z: Stribeck (Lambert W) vs rational, ns per call.

Workload: one million x drawn with a fixed seed, each Φ_Z summed in a numba
loop (so the call cannot be optimised away), the paper's Section V set
(Z = 1/55, F_S = 2.5, F_C = 0.2, v_S = 0.04, D = 4.5). Three draws of x:

* ``near``:  uniform on ±4·Z·F_S — a quarter sticking, the rest sliding close
  to the threshold, where W0 is evaluated near its branch point;
* ``mixed``: uniform on ±10·Z·F_S (±0.45 rad/s) — the headline figure;
* ``wide``:  uniform on ±1 rad/s — mostly far sliding, where W0(ψ) is a short
  series.

Reported per draw: ns per call (minimum over interleaved repetitions, minus
the empty loop), and the Stribeck/rational ratio. For scale, the same loop
around one ``math.exp`` is timed too: the Stribeck form needs one exponential
(e^(−s) in ψ₊, eq. (25)), so that is its floor.

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

from bam_sim.models.elastoplastic import phi_z_rational, phi_z_stribeck

HERE = Path(__file__).resolve().parent
SEED = 11
N = 1_000_000
TARGET = 2.0
Z, F_S, F_C, V_S, D = 1.0 / 55.0, 2.5, 0.2, 0.04, 4.5
DRAWS = {"near": 4.0 * Z * F_S, "mixed": 10.0 * Z * F_S, "wide": 1.0}


@nb.njit(cache=True)
def _loop_stribeck(xs: np.ndarray) -> float:
    acc = 0.0
    for x in xs:
        acc += phi_z_stribeck(x, Z, F_S, F_C, V_S, D)
    return acc


@nb.njit(cache=True)
def _loop_rational(xs: np.ndarray) -> float:
    acc = 0.0
    for x in xs:
        acc += phi_z_rational(x, Z, F_S, F_C, V_S, D)
    return acc


@nb.njit(cache=True)
def _loop_exp(xs: np.ndarray) -> float:
    acc = 0.0
    for x in xs:
        acc += math.exp(-abs(x))
    return acc


@nb.njit(cache=True)
def _loop_empty(xs: np.ndarray) -> float:
    acc = 0.0
    for x in xs:
        acc += x
    return acc


LOOPS = {"stribeck": _loop_stribeck, "rational": _loop_rational, "exp": _loop_exp,
         "empty": _loop_empty}


def measure(xs: np.ndarray, repeats: int) -> dict:
    """ns per call of each loop body (minimum over interleaved repeats, empty loop removed)."""
    for loop in LOOPS.values():
        loop(xs[:16])  # compile / load from cache
    best = {name: math.inf for name in LOOPS}
    for _ in range(repeats):
        for name, loop in LOOPS.items():
            start = time.perf_counter()
            loop(xs)
            best[name] = min(best[name], (time.perf_counter() - start) / len(xs) * 1e9)
    ns = {name: best[name] - best["empty"] for name in ("stribeck", "rational", "exp")}
    return {"ns_per_call": ns, "empty_loop_ns": best["empty"],
            "ratio_stribeck_vs_rational": ns["stribeck"] / ns["rational"],
            "sticking_fraction": float(np.mean(np.abs(xs) <= Z * F_S))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--output", type=Path,
                        default=HERE / "results" / "elastoplastic_cost.json")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    draws = {name: measure(rng.uniform(-half, half, N), args.repeats)
             for name, half in DRAWS.items()}
    print(f"{'draw':6s} {'|x| <=':>8s} {'stribeck':>9s} {'rational':>9s} {'exp':>6s} "
          f"{'ratio':>6s}  (ns per call, min of {args.repeats})")
    for name, r in draws.items():
        ns = r["ns_per_call"]
        print(f"{name:6s} {DRAWS[name]:8.3f} {ns['stribeck']:9.2f} {ns['rational']:9.2f} "
              f"{ns['exp']:6.2f} {r['ratio_stribeck_vs_rational']:6.2f}")
    headline = draws["mixed"]["ratio_stribeck_vs_rational"]
    print(f"Stribeck/rational (mixed draw): {headline:.2f} (target <= {TARGET:g})")
    write_result(args.output, {
        "benchmark": "elastoplastic_cost",
        "description": __doc__.splitlines()[0],
        "workload": {"calls": N, "seed": SEED, "repeats": args.repeats,
                     "half_width": DRAWS, "Z": Z, "F_S": F_S, "F_C": F_C, "v_S": V_S, "D": D},
        "target_ratio": TARGET,
        "ratio": headline,
        "target_met": headline <= TARGET,
        "draws": draws,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
