"""Timing of the eRob driver's EtherCAT cycle against the emulator: round trip, loop rate, losses.

For 1 and 2 drives (``--drives``), the emulator (another process, a veth
pair in its own network namespace; needs root) and, in this process:

(a) the bus alone: :meth:`EthercatBus.exchange` (one LRW) in a loop paced at
    ``--rate``: round-trip time p50/p99/max, frames lost;
(b) the supervisor: :meth:`ErobSupervisor.cycle` (exchange, CiA 402, the CST
    current law holding a goal) paced at ``--rate`` for ``--seconds``:
    achieved rate, cycle time p50/p99/max, lost frames and working-counter
    errors, and whether the joint reached its goal.

Run: ``tools/workspace.sh exec python bam_drivers/benchmarks/ethercat_cycle.py``
(``--seconds 2`` for a quick check); prints one JSON object, also written to
``--output`` when given.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_drivers.emulators.ethercat_client import EthercatEmulatorProcess, NamespaceUnavailable
from bam_drivers.ethercat.drive_models import get_model
from bam_drivers.ethercat.master import EthercatBus, JointSpec
from bam_drivers.ethercat.supervisor import ErobSupervisor, JointFrame
from bam_sim.common.commands import JointCommand

MODELS = ("erob80_100", "erob80_50")


def percentiles(seconds: list[float]) -> dict:
    us = np.asarray(seconds) * 1e6
    return {"p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99)),
            "max_us": float(us.max())}


def paced(rate: float, seconds: float, step) -> list[float]:
    """Call ``step()`` at absolute deadlines of ``rate`` Hz; the duration of each call."""
    period, durations = 1.0 / rate, []
    start = time.perf_counter()
    k = 0
    while time.perf_counter() - start < seconds:
        deadline = start + k * period
        while time.perf_counter() < deadline:
            pass
        t = time.perf_counter()
        step()
        durations.append(time.perf_counter() - t)
        k += 1
    return durations


def bus_alone(interface: str, models: tuple[str, ...], rate: float, seconds: float) -> dict:
    bus = EthercatBus(interface, [JointSpec(f"j{i}", get_model(m))
                                  for i, m in enumerate(models)], watchdog=0.0)
    bus.open()
    lost = [0]

    def step() -> None:
        lost[0] += bus.exchange().wkc < 0

    try:
        durations = paced(rate, seconds, step)
    finally:
        bus.close()
    return {"cycles": len(durations), "lost_frames": lost[0], **percentiles(durations)}


def supervised(interface: str, models: tuple[str, ...], rate: float, seconds: float) -> dict:
    specs = [JointSpec(f"j{i}", get_model(m)) for i, m in enumerate(models)]
    frames = [JointFrame(0.0, 1, 2.0 if m == "erob80_100" else 1.0, 12.0) for m in models]
    sup = ErobSupervisor(EthercatBus(interface, specs), frames, gain=50.0, enabled=True,
                         command_timeout=0.0, log=lambda level, text: None,
                         now=time.monotonic())
    while sup.cycle(time.monotonic()) is None:
        time.sleep(0.01)
    n = len(models)
    sup.apply(JointCommand(tuple(range(n)), (0.3,) * n), time.monotonic())
    t0 = time.perf_counter()
    durations = paced(rate, seconds, lambda: sup.cycle(time.monotonic()))
    elapsed = time.perf_counter() - t0
    last = sup.last
    result = {"cycles": len(durations), "rate_hz": len(durations) / elapsed,
              "good_cycles": sup.counters.good_cycles, "lost_frames": sup.counters.lost_frames,
              "wkc_errors": sup.counters.wkc_errors, **percentiles(durations),
              "final_positions": [r.position for r in last.readings] if last else []}
    sup.shutdown()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drives", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--output", default=str(Path(__file__).parent / "results"
                                                   / "ethercat_cycle.json"))
    a = parser.parse_args(argv)
    results = {"benchmark": "ethercat_cycle", "environment": environment(),
               "rate_target_hz": a.rate, "seconds": a.seconds, "runs": []}
    for n in a.drives:
        models = tuple(MODELS[i % 2] for i in range(n))
        try:
            with EthercatEmulatorProcess(drives=models, mass=3.1) as emu:
                results["runs"].append({
                    "drives": list(models),
                    "bus": bus_alone(emu.interface, models, a.rate, a.seconds),
                    "supervisor": supervised(emu.interface, models, a.rate, a.seconds)})
        except NamespaceUnavailable as exc:
            print(f"ethercat_cycle: {exc}", file=sys.stderr)
            return 3
    print(json.dumps(results, indent=2))
    write_result(Path(a.output), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
