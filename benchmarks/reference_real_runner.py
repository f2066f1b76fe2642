#!/usr/bin/env python3
"""Roll the reference's own published parameter files out on recorded BAM JSON logs.

Executed with the reference venv (see benchmarks/setup_reference.sh)::

    .venv-ref/bin/python benchmarks/reference_real_runner.py \
        --actuator xl330 --models m1 m6 --output OUT.json LOG.json [LOG.json ...]

The logs are the reference's processed-log format already (the BAM authors recorded
them with it), so they are read as they are; a log without ``arm_mass`` gets 0 (the
reference's bench default). Every parameter file is the one the installed package
ships (``bam/params/<actuator>/<model>.json``), loaded with ``bam.model.load_model``
and rolled out per log with the control recomputed from the simulated state
(``Simulator.rollout_log(log, simulate_control=True)``), the path of the reference's
``bam.mae``. Output: per model the parameter file, its values, and per log the
simulated positions and the MAE against the recorded positions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reference_runner import environment, fail, import_reference, rollout_per_log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actuator", required=True)
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("logs", nargs="+", help="BAM JSON logs")
    args = parser.parse_args(argv)

    simulate, _, _, _, ref_version = import_reference()
    import bam
    import numpy as np
    from bam.model import load_model

    logs = []
    for path in args.logs:
        try:
            log = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            fail(f"cannot read log {path}: {e}")
        log.setdefault("arm_mass", 0.0)
        logs.append(log)

    params_dir = Path(bam.__file__).parent / "params" / args.actuator
    out = {**environment(np, ref_version),
           "method": "bam.model.load_model(<package>/params/<actuator>/<model>.json); "
                     "Simulator.rollout_log(log, simulate_control=True) per log",
           "logs": args.logs, "models": {}}
    for name in args.models:
        path = params_dir / f"{name}.json"
        if not path.exists():
            fail(f"the reference ships no {path}")
        model = load_model(str(path))
        positions, maes = rollout_per_log(simulate, np, model, logs)
        out["models"][name] = {
            "file": str(path.relative_to(Path(bam.__file__).parent.parent)),
            "params": {n: p.value for n, p in model.get_parameters().items()},
            "positions": positions, "mae": maes,
        }
    Path(args.output).write_text(json.dumps(out))
    print(f"reference rolled out {len(args.models)} sets x {len(logs)} logs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
