"""BAM JSON export checked by its reader: the reference implementation simulates every
exported set like we do.

For each published parameter set (M1..M6 of the MX, XL, eRob and STS3215 (7.4 V)
servos, M1 of the STS3215 at 12 V, M4 and M6 of the Waveshare ST3025), plus the
richest set of each actuator with a bench offset q_offset = 0.02 rad (the published
MX and eRob sets have 0), the set is exported with ``bam_identify export``'s writer
(:func:`bam_sim.models.files.bam_json.parameters_to_json`), loaded in the reference
implementation (``better-actuator-models``, ``bam.model.load_model(path)``, in its own
venv set up by ``setup_reference.sh``, see reference_json_runner.py) and rolled out on
the same logs as ours (:func:`bam_sim.bench.rollouts.rollout` of the original set),
control recomputed from the simulated state in both. Reported: whether the reference
read back every parameter value bit for bit, the largest position difference per
set (target ≤ 1e-9 rad), every key the files carry (``keys_written``: the parameters,
the law's constants error_gain, max_pwm, max_current and vin, kp, command_delay), and
which of a file's constants differ from those the reference's actuator holds in code
(``constants_unlike_reference_code``; the reference reads none of them from the file:
the 12 V STS3215's ``vin`` is the one that differs, so its readers must be given it).

The reference must be the version a set came from (``SOURCE``): the STS3215's M2..M6
(with their command_delay) come from Rhoban/bam 31e5b97 and the ST3025 (its actuator
``waveshare_st3025``) from pull request #12 at 27f3fa5, which the pinned
``better-actuator-models`` 1.0.2 of setup_reference.sh predates (it has no
``command_delay`` and no ``waveshare_st3025``; PyPI has no later release). With that
venv those sets (``LATER``) are not rolled out but listed under ``not_checked`` with
the commit they need; point ``.venv-ref`` at an install of those commits to check them.

Logs: Table I benches × protocol trajectories of each actuator, recorded with its
published M4 set (benchmarks/workload.make_logs); only the initial states and the
commands matter here.

Run: ``tools/workspace.sh exec python benchmarks/bam_json_export.py``; writes
``benchmarks/results/bam_json_export.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from provenance import environment, write_result
from throughput import workload_json
from workload import make_logs, published_models

from bam_sim.bench.rollouts import rollout
from bam_sim.models.files.bam_json import parameters_to_json
from bam_sim.models.files.parameter_file import published_named

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "sts3215", "sts3215_12v", "erob80_50",
             "erob80_100", "st3025")
# Upstream commits later than the pinned release that a set of these actuators needs.
SOURCE = {"sts3215": "31e5b97b3cabfe2b909850d483c4e84afa9781c4 (m2..m6)",
          "st3025": "27f3fa5ba7e3b14371d1bcb7ee9fd26a89caa1d0"}
# The sets of SOURCE that the pinned release cannot load as written (the release it
# pins, setup_reference.sh's, has no command_delay and no waveshare_st3025).
PINNED = "1.0.2"
LATER = {"sts3215": ("m2", "m3", "m4", "m5", "m6"), "st3025": ("m4", "m6")}
MISSING = {"sts3215": "command_delay (Model.command_delay)",
           "st3025": "the actuator waveshare_st3025"}
TARGET = 1.0e-9  # rad (issue 16)
SEED = 5
PYTHON = ROOT / ".venv-ref" / "bin" / "python"


def cases(actuator: str, version: str = "") -> dict:
    """The published sets of ``actuator`` that reference ``version`` holds, and the
    richest of them with q_offset = 0.02 rad."""
    skip = LATER.get(actuator, ()) if version == PINNED else ()
    sets = {m: published_named(actuator, m) for m in published_models(actuator) if m not in skip}
    if sets:
        richest = list(sets)[-1]
        sets[f"{richest}+q_offset"] = sets[richest].replace(q_offset=0.02)
    return sets


def reference_version() -> str:
    """The reference's version in .venv-ref, set up first (setup_reference.sh)."""
    setup = subprocess.run(["bash", str(HERE / "setup_reference.sh")], capture_output=True,
                           text=True)
    if setup.returncode != 0 or not PYTHON.exists():
        sys.exit(f"bam_json_export: reference unavailable: {setup.stderr.strip()[-300:]}")
    probe = ("from importlib.metadata import version; "
             "print(version('better-actuator-models'))")
    return subprocess.run([str(PYTHON), "-c", probe], check=True, capture_output=True,
                          text=True).stdout.strip()


def reference_rollouts(workload: dict, files: list[Path], tmp: Path) -> dict:
    path, out = tmp / "workload.json", tmp / "reference.json"
    path.write_text(json.dumps(workload))
    subprocess.run([str(PYTHON), str(HERE / "reference_json_runner.py"), "--workload",
                    str(path), "--output", str(out), *map(str, files)], check=True)
    return json.loads(out.read_text())


def compare(actuator: str, logs: list, tmp: Path, version: str) -> tuple[dict, dict]:
    sets = cases(actuator, version)
    files = []
    for name, params in sets.items():
        files.append(tmp / f"{actuator}_{name}.json")
        files[-1].write_text(parameters_to_json(params))
    ref = reference_rollouts(workload_json(actuator, logs, {}), files, tmp)
    rows = {}
    for (name, params), path in zip(sets.items(), files, strict=True):
        got = ref["files"][str(path)]
        written = json.loads(path.read_text())
        expected = {n: v for n, v in params.values.items() if n != "current_limit"}
        gap = max(float(np.max(np.abs(rollout(params, log).position - np.array(q))))
                  for log, q in zip(logs, got["positions"], strict=True))
        other = sorted(k for k, v in got["constants"].items()
                       if k in written and not same_constant(written[k], v))
        built = (got["model"], got["actuator"]) == (params.model.name, written["actuator"])
        rows[name] = {"max_position_difference_rad": gap,
                      "parameters_read_back_exactly": got["params"] == expected and built,
                      "constants_unlike_reference_code": other}
        print(f"  {actuator:<10} {name:<12} max |q_ours - q_ref| = {gap:.1e} rad, "
              f"parameters exact: {rows[name]['parameters_read_back_exactly']}, "
              f"constants unlike the reference's code: {other or 'none'}")
    env = {k: v for k, v in ref.items() if k not in ("files", "method")}
    return rows, {"method": ref["method"], **env}


def same_constant(written: float | None, held: float | None) -> bool:
    """A file's law constant equal to the reference's own (None: no limit)."""
    if written is None or held is None:
        return written is held
    return abs(written - held) <= 1e-12 * max(abs(held), 1.0)


def keys_written(actuators: list[str], version: str) -> dict[str, list[str]]:
    """Per actuator, every key its exported files carry (parameters, law constants, kp,
    command_delay, model and actuator)."""
    out = {}
    for actuator in actuators:
        keys: set[str] = set()
        for params in cases(actuator, version).values():
            keys |= set(json.loads(parameters_to_json(params)))
        out[actuator] = sorted(keys)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=12)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--actuators", nargs="+", default=list(ACTUATORS), choices=ACTUATORS)
    parser.add_argument("--output", type=Path,
                        default=HERE / "results" / "bam_json_export.json")
    args = parser.parse_args()

    results, reference = {}, {}
    version = reference_version()
    not_checked = {a: {m: f"needs Rhoban/bam {SOURCE[a]}; better-actuator-models "
                          f"{version} has no {MISSING[a]}"
                       for m in LATER[a]}
                   for a in args.actuators if a in LATER and version == PINNED}
    with tempfile.TemporaryDirectory() as tmp:
        for actuator in args.actuators:
            if not cases(actuator, version):
                continue
            logs = make_logs(actuator, args.logs, args.steps, 0.005, SEED)
            results[actuator], reference = compare(actuator, logs, Path(tmp), version)
    worst = max(r["max_position_difference_rad"] for a in results.values() for r in a.values())
    exact = all(r["parameters_read_back_exactly"] for a in results.values() for r in a.values())
    print(f"worst max |q_ours - q_ref| = {worst:.1e} rad (target {TARGET:g}); "
          f"every parameter read back exactly: {exact}")
    for actuator, sets in not_checked.items():
        print(f"  not checked: {actuator} {', '.join(sets)} (reference {version})")
    write_result(args.output, {
        "workload": {"actuators": args.actuators,
                     "sets": {a: list(cases(a, version)) for a in results},
                     "logs_per_actuator": args.logs, "steps": args.steps, "dt": 0.005,
                     "mode": "simulated control", "seed": SEED},
        "target_rad": TARGET, "max_position_difference_rad": worst,
        "within_target": worst <= TARGET, "parameters_read_back_exactly": exact,
        "keys_written": keys_written(args.actuators, version),
        "sets": results, "not_checked": not_checked, "reference": reference,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
