"""Every kernel family's batched rollouts, host build against a generic x86-64 build.

The gate compares the friction lanes and the elasto-plastic lanes
(``bam_sim/test/test_sim_rollouts_threads.py``); this run compares every family
(``bam_testing.cpu_builds.FAMILIES``, the DC-motor lanes too), each in a child compiled
cold for ``NUMBA_CPU_NAME=generic``, and writes the largest |q_generic - q_host| per model
and the child's compile-and-run seconds to ``results/generic_cpu.json``.

Usage: ``tools/workspace.sh exec python benchmarks/generic_cpu.py``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_testing.cpu_builds import FAMILIES, generic_positions, positions

OUT = Path(__file__).resolve().parent / "results" / "generic_cpu.json"


def main() -> int:
    families = {}
    for family, models in FAMILIES.items():
        print(f"{family}: compiling for a generic x86-64 ...", flush=True)
        start = time.monotonic()
        generic = generic_positions(models)
        seconds = time.monotonic() - start
        host = positions(models, threads=1)
        families[family] = {
            "child_seconds": round(seconds, 1),
            "max_abs_difference_rad": {m: float(np.max(np.abs(generic[m] - host[m])))
                                       for m in models},
        }
        print(f"  {families[family]}", flush=True)
    write_result(OUT, {"environment": environment(), "families": families})
    equal = all(d == 0.0 for f in families.values() for d in f["max_abs_difference_rad"].values())
    print("every family equal to the last bit" if equal else "some positions differ")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
