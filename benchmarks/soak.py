"""Soak: every long-running executable stopped many times after real traffic, under load.

The scenarios are the gate's (``bam_bringup/test/stop_scenarios.py``): each executable as
installed, several instances at once in namespaces of one DDS domain, brought to real work
(traffic exchanged, a fit in its search or polish, a campaign job), then stopped by SIGTERM,
SIGINT, SIGTERM+SIGTERM and SIGINT+SIGTERM in turn, while a busy loop holds the last core.
The gate stops each executable once per pattern and only asks that it ends; here each is
stopped ``--stops`` times and judged against the 5 s target (``EXIT_BOUND``): how often a
stop is clean, how long the exit takes (p50, worst), and for every unclean stop what it did
and its threads' dump at the bound (py-spy), so a rare fault says where it was.

Run: ``make soak`` (``tools/workspace.sh exec python benchmarks/soak.py``); ``--stops 8
--only feetech erob`` for a quick look. Writes ``benchmarks/results/soak.json``; exits 1
when a stop was unclean, so a soak run before resolving an issue reads as pass or fail.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_testing import stop_stress as ss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bam_bringup" / "test"))  # the scenarios, beside the gate
import stop_scenarios as sc  # noqa: E402

OUTPUT = HERE / "results" / "soak.json"


def tally(stops: list[ss.Stop], seconds: float) -> dict:
    """One executable's figures: stops, clean ones, exit times, what went wrong."""
    times = np.array([stop.seconds for stop in stops])
    return {
        "stops": len(stops),
        "clean": sum(stop.clean for stop in stops),
        "exit_p50_s": round(float(np.median(times)), 3) if times.size else None,
        "exit_worst_s": round(float(times.max()), 3) if times.size else None,
        "wall_s": round(seconds, 1),
        "unclean": [{"signals": ss.pattern_name(stop.signals), "exit_code": stop.returncode,
                     "seconds": round(stop.seconds, 3), "problems": stop.problems,
                     "output_tail": ss.tail(stop.output)}
                    for stop in stops if not stop.clean],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stops", type=int, default=20, help="stops per executable (20)")
    parser.add_argument("--only", nargs="+", choices=sc.SCENARIO_NAMES, metavar="NAME",
                        help=f"these scenarios only ({', '.join(sc.SCENARIO_NAMES)})")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    names = args.only or sc.SCENARIO_NAMES
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bam_soak_") as scratch:
        tmp = Path(scratch)
        logs = sc.write_logs(tmp / "logs")
        with sc.probing() as probe, ss.busy_core():
            for name in names:
                (scenario,) = [s for s in sc.scenarios(logs) if s.name == name]
                folder = tmp / name.replace(" ", "_").replace("(", "").replace(")", "")
                folder.mkdir()
                began = time.monotonic()
                try:
                    stops = sc.run_scenario(scenario, args.stops, folder, probe, ss.EXIT_BOUND)
                except sc.Unavailable as exc:
                    results[name] = {"skipped": str(exc)}
                    print(f"{name}: skipped ({exc})", flush=True)
                    continue
                results[name] = tally(stops, time.monotonic() - began)
                print(ss.summary(stops), flush=True)
    clean = all(r.get("clean") == r.get("stops") for r in results.values() if "stops" in r)
    write_result(args.output, {
        "benchmark": "soak", "environment": environment(),
        "settings": {"stops_per_executable": args.stops, "exit_target_s": ss.EXIT_BOUND,
                     "patterns": [ss.pattern_name(p) for p in ss.PATTERNS],
                     "load": "a busy loop pinned on the last core"},
        "all_clean": clean, "executables": results})
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
