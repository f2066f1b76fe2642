"""Timing of the serial servo drivers on the emulated bus: loop rate, jitter, bytes per cycle.

For 1 and 4 servos (``--servos``) of each bus (``--buses``: protocol1 =
MX-64 protocol 1.0, bulk read; protocol2 = XM430-W350 protocol 2.0, sync
read; feetech = STS3215 on Feetech's SCS protocol, sync read, on
feetech-servo-sdk's port), the emulator (``bam_drivers.emulators.serial_servo_emulator``,
another process: servos behind a pseudo-terminal, bam_sim physics at 1 kHz)
and the driver node (``SerialServoNode`` or ``FeetechNode``) in this process,
torque on, holding; a subscriber in another process counts ``/joint_states``
(the one of benchmarks/pendulum_node.py):

(a) the bus alone: the time of one cycle (sync/bulk read of the state block +
    sync write of the goals) in a tight loop of the bus class, no node —
    the fastest the bus allows;
(b) the node at each rate of a ladder (``--rates-1``, ``--rates-4``), for
    ``--seconds`` (10) each: achieved loop rate, period error measured inside
    the node (interval between two cycle starts, ``time.perf_counter_ns``
    after the deadline wait, minus the period; p50/p99/max of its absolute
    value), lateness to the absolute deadlines, cycles that read every servo,
    bytes on the wire per cycle (tx/rx, counted by the bus), messages the
    subscriber received. The highest rate it *sustains* is the highest whose
    achieved rate is >= 99 % of the target with every servo read in >= 99 %
    of the cycles and no deadline slip;
(c) the sim node (``bam_sim.nodes.pendulum_node``) at 1 kHz for ``--sim-seconds``,
    with the measurement of benchmarks/pendulum_node.py, for comparison.

Targets: >= 500 Hz with 1 servo and >= 250 Hz with 4 servos (sustained), p99
period error <= 1 ms there.

Run: ``tools/workspace.sh exec python benchmarks/dynamixel_bus.py`` (``--seconds 3
--sim-seconds 3`` for a quick check); writes ``benchmarks/results/dynamixel_bus.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from loop_timing import loop_timing
from pendulum_node import Counter, run_real_time, wait_matched
from provenance import environment, write_result
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from bam_sim.common.errors import BamError
from bam_testing.ros_context import ros_domain

HERE = Path(__file__).resolve().parent
# bus -> (protocol, servo model, physics of the emulator)
BUSES = {"protocol1": (1, "mx64_p1", "mx64:m4"), "protocol2": (2, "xm430_w350", "mx64:m4"),
         "feetech": (1, "sts3215", "sts3215:m1")}
SUSTAINED = 0.99  # achieved / target rate, and cycles reading every servo


def emulator_process(name: str, ids: list[int]):
    from bam_drivers.emulators.client import EmulatorProcess

    protocol, model, physics = BUSES[name]
    return EmulatorProcess(protocol=protocol, servo_model=model, ids=ids, physics=physics)


def node_class(name: str) -> type:
    from bam_drivers.nodes.feetech_node import FeetechNode
    from bam_drivers.nodes.serial_servo_node import SerialServoNode

    return FeetechNode if name == "feetech" else SerialServoNode


def bus_cycle(name: str, n: int, cycles: int = 2000) -> dict:
    """(a) One bus cycle (read + goal write) in a tight loop, no node."""
    ids = list(range(1, n + 1))
    with emulator_process(name, ids) as emulator:
        # 10 ms for a status: the set-up's pings survive a busy moment of the machine;
        # the cycle's replies come far sooner.
        bus = node_class(name).BUS(emulator.port, BUSES[name][1], ids, latency_timer_ms=10.0)
        bus.open()
        for attempt in range(3):  # a first ping may be lost while the machine is busy
            try:
                bus.check_models()
                break
            except BamError as exc:
                print(f"  set-up attempt {attempt + 1}: {exc}")
                time.sleep(0.2)
        else:
            raise RuntimeError(f"the {name} emulator never answered")
        bus.write_torque(dict.fromkeys(ids, True))
        durations = np.zeros(cycles, dtype=np.int64)
        failed = 0
        for i in range(cycles):
            t0 = time.perf_counter_ns()
            failed += not bus.read_state().ok
            bus.write_goals(dict.fromkeys(ids, 0.0))
            durations[i] = time.perf_counter_ns() - t0
        bus.torque_off()
        bus.close()
    us = durations / 1e3
    return {"cycles": cycles, "failed_reads": failed,
            "cycle_us": {"p50": round(float(np.percentile(us, 50)), 1),
                         "p99": round(float(np.percentile(us, 99)), 1),
                         "mean": round(float(us.mean()), 1)},
            "max_rate_hz": round(1e6 / float(us.mean()))}


def run_node(name: str, n: int, rate: float, seconds: float, priority: int) -> dict:
    """(b) The driver node at ``rate`` for ``seconds``."""
    protocol, model, _ = BUSES[name]
    ids = list(range(1, n + 1))
    with emulator_process(name, ids) as emulator:
        counter = Counter()
        node = node_class(name)(parameter_overrides=[
            Parameter("port", value=emulator.port),
            Parameter("servo_model", value=model), Parameter("ids", value=ids),
            Parameter("rate", value=float(rate)), Parameter("command_timeout", value=0.0),
            Parameter("torque_enable_on_start", value=True),
            Parameter("thread_priority", value=priority)])
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        thread = threading.Thread(target=executor.spin, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 20.0
            while not node.connected:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the driver did not connect: {node.port_state}")
                time.sleep(0.05)
            wait_matched(node)
            time.sleep(1.0)  # warm-up
            ticks = int(round(seconds * rate))
            stamp0 = node.get_clock().now().nanoseconds
            stats0, bytes0 = dict(node.stats), node.bus.bytes()
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            node.record_timing(ticks)
            time.sleep(seconds + 0.3)
            timing = node.timing()
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
            stats1, bytes1 = dict(node.stats), node.bus.bytes()
            stamp1 = node.get_clock().now().nanoseconds
            slips = node.slips
            time.sleep(0.5)  # the last messages arrive
        finally:
            executor.shutdown()
            thread.join(timeout=10)
            node.destroy_node()
        got = counter.stop()
    starts = timing["start_ns"]
    cycles = stats1["cycles"] - stats0["cycles"]
    full = stats1["full_reads"] - stats0["full_reads"]
    published = full + stats1["partial_reads"] - stats0["partial_reads"]
    elapsed = (starts[-1] - starts[0]) / 1e9
    achieved = (starts.size - 1) / elapsed
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    result = {
        "bus": name, "protocol": protocol, "servo_model": model, "servos": n,
        "rate_hz": rate, "seconds": seconds, "achieved_rate_hz": round(achieved, 1),
        **loop_timing(timing, 1e9 / rate),
        "deadline_slips": slips, "cycles": cycles,
        "full_read_fraction": round(full / max(cycles, 1), 4),
        "tx_bytes_per_cycle": round((bytes1[0] - bytes0[0]) / max(cycles, 1), 2),
        "rx_bytes_per_cycle": round((bytes1[1] - bytes0[1]) / max(cycles, 1), 2),
        "published": published,
        "received_by_subscriber": int(((got["stamps"] > stamp0) & (got["stamps"] < stamp1)).sum()),
        "node_process_cpu_percent": round(100.0 * cpu / elapsed, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    result["sustained"] = bool(achieved >= SUSTAINED * rate
                               and result["full_read_fraction"] >= SUSTAINED and slips == 0)
    return result


def run_sim(seconds: float, priority: int) -> dict:
    """(c) The pendulum sim node at 1 kHz, measured by benchmarks/pendulum_node.py."""
    run = run_real_time(seconds, warmup=1.0, priority=priority)
    run.pop("receive_interval_error_ms", None)
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each node run, s")
    parser.add_argument("--sim-seconds", type=float, default=10.0, help="sim node run, s")
    parser.add_argument("--buses", nargs="+", default=list(BUSES), choices=list(BUSES))
    parser.add_argument("--servos", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rates-1", type=float, nargs="+",
                        default=[500, 1000, 2000, 3000, 4000],
                        help="rate ladder (Hz) with 1 servo")
    parser.add_argument("--rates-4", type=float, nargs="+",
                        default=[250, 500, 1000, 1500, 2000],
                        help="rate ladder (Hz) with more servos")
    parser.add_argument("--priority", type=int, default=0,
                        help="thread_priority of the loops (0 = normal scheduling)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "dynamixel_bus.json")
    args = parser.parse_args()

    from rclpy.utilities import get_rmw_implementation_identifier

    os.environ.setdefault("ROS_DOMAIN_ID", str(ros_domain(1)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    rclpy.init()
    configs = {}
    try:
        for name in args.buses:
            for n in args.servos:
                key = f"{name}_{n}servo{'s' if n > 1 else ''}"
                alone = bus_cycle(name, n)
                print(f"{key}: bus cycle alone p50 {alone['cycle_us']['p50']} us, p99 "
                      f"{alone['cycle_us']['p99']} us (up to {alone['max_rate_hz']} Hz)")
                runs = []
                for rate in (args.rates_1 if n == 1 else args.rates_4):
                    run = run_node(name, n, rate, args.seconds, args.priority)
                    runs.append(run)
                    print(f"  {rate:g} Hz: achieved {run['achieved_rate_hz']} Hz, period "
                          f"error p50/p99/max {run['period_error_ms']['p50']}/"
                          f"{run['period_error_ms']['p99']}/{run['period_error_ms']['max']} ms, "
                          f"full reads {run['full_read_fraction']:.2%}, bytes/cycle tx "
                          f"{run['tx_bytes_per_cycle']} rx {run['rx_bytes_per_cycle']}, "
                          f"CPU {run['node_process_cpu_percent']} %, sustained "
                          f"{run['sustained']}")
                best = max((r for r in runs if r["sustained"]), key=lambda r: r["rate_hz"],
                           default=None)
                configs[key] = {"bus_alone": alone, "runs": runs,
                                "highest_sustained_hz": best["rate_hz"] if best else None}
        sim = run_sim(args.sim_seconds, args.priority)
        print(f"sim node (pendulum, 1 kHz): published {sim['published']} / expected "
              f"{sim['expected']}, period error p50/p99/max {sim['period_error_ms']['p50']}/"
              f"{sim['period_error_ms']['p99']}/{sim['period_error_ms']['max']} ms")
        rmw = get_rmw_implementation_identifier()
    finally:
        rclpy.try_shutdown()
    targets = {}
    for key, config in configs.items():
        n = config["runs"][0]["servos"]
        goal = 500.0 if n == 1 else 250.0
        at = next((r for r in config["runs"] if r["rate_hz"] == goal), None)
        best = config["highest_sustained_hz"]
        targets[f"{key}_sustains_{goal:g}hz"] = best is not None and best >= goal
        targets[f"{key}_p99_period_error_le_1ms_at_{goal:g}hz"] = \
            at is not None and at["period_error_ms"]["p99"] <= 1.0
    print("targets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in targets.items()))
    result = {
        "benchmark": "dynamixel_bus", "environment": {**environment(), "rmw": rmw},
        "workload": {
            "emulator": "bam_drivers.emulators.serial_servo_emulator on a pseudo-terminal, "
                        "physics at 1 kHz per servo (mx64:m4; sts3215:m1 on the feetech "
                        "bus), another process",
            "node": "SerialServoNode (FeetechNode on the feetech bus), torque on holding, "
                    "command_timeout 0, latency timer detected (1 ms on a pseudo-terminal)",
            "subscriber": "another process, /joint_states (benchmarks/pendulum_node.py)",
            "period_error": "in the node: interval between cycle starts (perf_counter_ns "
                            "after the deadline wait) minus the period",
            "sustained": f"achieved >= {SUSTAINED:.0%} of the rate, every servo read in >= "
                         f"{SUSTAINED:.0%} of the cycles, no deadline slip"},
        "driver": configs, "sim_node_1khz": sim, "targets": targets,
    }
    write_result(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
