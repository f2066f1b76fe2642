#!/usr/bin/env python3
"""Roll out BAM JSON files in mjlab through BAM's ``BamActuatorCfg``: the mjlab side of
benchmarks/mjlab_bam.py.

Executed with the mjlab venv that mjlab_bam.py makes (mjlab, MuJoCo Warp, Warp, torch
and the reference's ``bam`` package, whose ``bam/mjlab.py`` holds ``BamActuatorCfg``)::

    .venv-mjlab/bin/python benchmarks/mjlab_bam_runner.py JOB.json OUT.json

JOB: ``{"device": "cpu", "cases": [{"name", "file", "logs": [reference log dicts]}]}``.
Each case is rolled out twice on the same logs:

* in mjlab by ``bam.mjlab.Simulator(file, device=...)``: one mjlab ``Scene`` of one
  pendulum entity per log (BAM's MuJoCo pendulum), its hinge driven by a
  ``BamActuator`` built from ``BamActuatorCfg(json_path=file, kp_fw=log kp,
  vin=log vin)``, stepped by ``mjlab.sim.Simulation`` (MuJoCo Warp) at the log's dt;
* by the reference's own CPU simulator (``bam.simulate.Simulator(load_model(file))``,
  ``rollout_log(log, simulate_control=True)``), the same file and logs.

OUT: per case the positions of both (or the error that stopped one: its type, message
and the innermost frame), what ``load_model`` read of the file's ``kp`` and ``vin``, and
the versions and devices of the stack. Nothing here stops at the first failure.
"""

from __future__ import annotations

import json
import platform
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version

PACKAGES = ("mjlab", "mujoco", "mujoco-warp", "warp-lang", "torch",
            "better-actuator-models", "numpy")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def failure(exc: BaseException) -> dict:
    """An exception as data: type, message, and where it was raised (file:line)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:  # the file as its package names it (bam/mjlab.py), not this venv's path
        file = frames[-1].filename.split("site-packages/")[-1]
        where = f"{file}:{frames[-1].lineno} in {frames[-1].name}"
    return {"type": type(exc).__name__, "message": str(exc).strip()[:2000], "where": where,
            "traceback_tail": "".join(traceback.format_exception(exc))[-3000:]}


def devices() -> dict:
    out: dict = {}
    try:
        import warp as wp

        wp.config.quiet = True
        wp.init()
        out["warp_devices"] = [str(d) for d in wp.get_devices()]
        out["warp_cuda_devices"] = wp.get_cuda_device_count()
    except Exception as exc:  # noqa: BLE001 (recorded, not raised)
        out["warp_error"] = failure(exc)
    try:
        import torch

        out["torch_cuda_available"] = bool(torch.cuda.is_available())
    except Exception as exc:  # noqa: BLE001
        out["torch_error"] = failure(exc)
    return out


def rollout_mjlab(file: str, logs: list[dict], device: str) -> dict:
    from bam.mjlab import Simulator

    start = time.perf_counter()
    sim = Simulator(file, device=device)
    positions, _, _ = sim.rollout_logs(logs)
    return {"positions": [[float(q) for q in p] for p in positions],
            "seconds": time.perf_counter() - start}


def rollout_bam_cpu(file: str, logs: list[dict]) -> dict:
    import bam.simulate
    from bam.model import load_model

    start = time.perf_counter()
    positions = []
    for log in logs:
        simulator = bam.simulate.Simulator(load_model(file))
        q, _, _ = simulator.rollout_log(log, simulate_control=True)
        positions.append([float(x) for x in q])
    return {"positions": positions, "seconds": time.perf_counter() - start}


def read_back(file: str) -> dict:
    """What the reference's load_model keeps of the file's kp and vin (its actuator's)."""
    from bam.model import load_model

    with open(file) as f:
        written = json.load(f)
    actuator = load_model(file).actuator
    return {key: {"file": written.get(key), "load_model": getattr(actuator, key, None)}
            for key in ("kp", "vin")}


def attempt(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (the benchmark records why a consumer failed)
        return {"error": failure(exc)}


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    with open(job_path) as f:
        job = json.load(f)
    device = job.get("device", "cpu")
    out: dict = {"versions": versions(), "python": platform.python_version(),
                 "machine": platform.machine(), "platform": platform.platform(),
                 "device": device, "devices": devices(), "cases": {}}
    try:
        import bam.mjlab  # noqa: F401  (BamActuatorCfg, BamActuator, Simulator)

        out["bam_mjlab_import"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["bam_mjlab_import"] = failure(exc)
    for case in job["cases"]:
        name, file, logs = case["name"], case["file"], case["logs"]
        print(f"mjlab_bam_runner: {name}", file=sys.stderr, flush=True)
        out["cases"][name] = {"read_back": attempt(read_back, file),
                              "bam_cpu": attempt(rollout_bam_cpu, file, logs),
                              "mjlab": attempt(rollout_mjlab, file, logs, device)}
    with open(out_path, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
