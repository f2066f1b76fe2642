#!/usr/bin/env python3
"""Load BAM JSON parameter files with the reference's ``bam.model.load_model`` and roll
them out on logs: the reader side of benchmarks/bam_json_export.py.

Executed with the reference venv (see benchmarks/setup_reference.sh)::

    .venv-ref/bin/python benchmarks/reference_json_runner.py \
        --workload W.json --output OUT.json PARAMS.json [PARAMS.json ...]

The workload holds ``dt`` and ``logs`` in the neutral format of benchmarks/throughput.py
(the ``models``/``population`` keys are not needed: the parameters come from the files).
Each file is loaded exactly as an RL stack loads it (``load_model(path)``) and every log
is rolled out with the control recomputed from the simulated state
(``Simulator.rollout_log(log, simulate_control=True)``). Output: per file, the model and
actuator the reference built, its parameter values, the law's constants its actuator
holds in code (error_gain, max_pwm, max_current, vin) and the positions of every log.
"""

from __future__ import annotations

import argparse
import json
import sys

from reference_runner import environment, fail, import_reference, rollout_per_log, to_reference_log

CONSTANTS = ("error_gain", "max_pwm", "max_current", "vin")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("files", nargs="+", help="BAM JSON parameter files")
    args = parser.parse_args(argv)

    simulate, _, _, _, ref_version = import_reference()
    import numpy as np
    from bam.model import load_model

    try:
        with open(args.workload) as f:
            workload = json.load(f)
        ref_logs = [to_reference_log(log, float(workload["dt"])) for log in workload["logs"]]
    except (OSError, ValueError, KeyError) as e:
        fail(f"cannot read workload {args.workload}: {e}")

    out = {**environment(np, ref_version), "method": "bam.model.load_model(path); "
           "Simulator.rollout_log(log, simulate_control=True) per log", "files": {}}
    for path in args.files:
        model = load_model(path)
        # The law's constants the reference keeps in code (files carry them too), read
        # before a log sets kp and vin.
        constants = {k: getattr(model.actuator, k) for k in CONSTANTS
                     if hasattr(model.actuator, k)}
        positions, _ = rollout_per_log(simulate, np, model, ref_logs)
        out["files"][path] = {
            "model": model.name, "actuator": model.actuator_name,
            "params": {n: p.value for n, p in model.get_parameters().items()},
            "constants": constants,
            "positions": positions,
        }
    with open(args.output, "w") as f:
        json.dump(out, f)
    print(f"reference rolled out {len(args.files)} files x {len(ref_logs)} logs",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
