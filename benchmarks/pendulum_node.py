"""Timing of the pendulum sim node: real-time jitter and the fastest real-time factor.

Two runs of ``bam_sim.nodes.pendulum_node.PendulumNode`` in this process, each with
a subscriber in ANOTHER process counting ``/joint_states`` (reliable, keep
last 100, the QoS of ``bam_sim.common.contract``):

(a) real time at 1 kHz for ``--seconds`` (60), once with normal scheduling
    and once with the loop thread at SCHED_FIFO priority 50 (``--priorities
    0 50``; the node's ``thread_priority``): the period error of the loop,
    measured INSIDE the node (``time.perf_counter_ns`` when each tick starts,
    after waiting for its deadline: period error = interval between two tick
    starts − 1 ms; lateness = start − absolute deadline), and from the
    subscriber's receive times (CLOCK_MONOTONIC, the same clock); messages
    published vs expected vs received (by stamp, so lost and duplicated ones
    are told apart), delivery latency, CPU used by the node's process;
(b) real_time_factor 0 (as fast as possible) for ``--fast-seconds`` (10),
    publishing on: simulated seconds per wall second, and whether the
    subscriber keeps up (received / published); then the same at the
    real-time factors ``--factors`` (2 5 10), to find what a Python
    subscriber in another process keeps up with.

Plus the cost of the pieces of one tick, measured in a loop without the
node's thread (``tick`` = BenchStepper.tick; ``publish`` = the three
publications of a tick).

Targets: p99 period error <= 1 ms, no lost message, real-time factor >= 20.

Run: ``tools/workspace.sh exec python benchmarks/pendulum_node.py`` (``--seconds 5
--fast-seconds 2`` for a quick check); writes ``benchmarks/results/pendulum_node.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from loop_timing import loop_timing, percentiles
from provenance import environment, write_result
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from bam_sim.common.contract import JOINT_STATES
from bam_testing.ros_context import ros_domain

HERE = Path(__file__).resolve().parent
RATE = 1000.0
PERIOD_NS = 1_000_000


def subscriber(path: str) -> None:
    """Child process: count /joint_states until SIGINT, then save stamps and receive times."""
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import JointState

    from bam_sim.common.qos import profile

    rclpy.init()
    node = rclpy.create_node(f"pendulum_benchmark_counter_{os.getpid()}")
    stamps: list[int] = []
    received: list[int] = []
    clock = time.perf_counter_ns

    def on_state(msg: JointState) -> None:
        received.append(clock())
        stamps.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)

    node.create_subscription(JointState, JOINT_STATES.name, on_state, profile(JOINT_STATES.qos))
    print("ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        np.savez(path, stamps=np.array(stamps, dtype=np.int64),
                 received=np.array(received, dtype=np.int64))
        node.destroy_node()
        rclpy.try_shutdown()


class Counter:
    """The subscriber process, started before the node and stopped after it."""

    def __init__(self) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="pendulum_bench_")
        self.path = os.path.join(self.folder.name, "received.npz")
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--subscriber", self.path],
            stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"subscriber failed to start ({line!r})")

    def stop(self) -> dict[str, np.ndarray]:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        with np.load(self.path) as data:
            result = {key: data[key] for key in data.files}
        self.folder.cleanup()
        return result


def make_node(rtf: float, start_executor: bool = True, priority: int = 0):
    from bam_sim.nodes.pendulum_node import PendulumNode

    node = PendulumNode(parameter_overrides=[
        Parameter("rate", value=RATE), Parameter("real_time_factor", value=rtf),
        Parameter("thread_priority", value=priority)])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    if start_executor:
        thread.start()

    def close() -> None:
        executor.shutdown()
        if thread.is_alive():
            thread.join(timeout=10)
        node.destroy_node()

    return node, close


def wait_matched(node, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while node.count_subscribers(JOINT_STATES.name) == 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the subscriber process was not discovered")
        time.sleep(0.01)


def received_in(counter: dict, first_tick: int, ticks: int, start_ns: int = 0) -> dict:
    """Messages of ticks [first_tick, first_tick + ticks) the subscriber got."""
    index = (counter["stamps"] - start_ns) // PERIOD_NS - first_tick
    inside = (index >= 0) & (index < ticks)
    unique = np.unique(index[inside])
    return {"received": int(inside.sum()), "unique": int(unique.size),
            "duplicates": int(inside.sum() - unique.size), "lost": int(ticks - unique.size),
            "index": index, "inside": inside}


def run_real_time(seconds: float, warmup: float, priority: int) -> dict:
    counter = Counter()
    node, close = make_node(1.0, priority=priority)
    try:
        wait_matched(node)
        time.sleep(warmup)
        ticks = int(round(seconds * RATE))
        node.record_timing(ticks)
        cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        time.sleep(seconds + 0.2)
        cpu1, wall1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        timing = node.timing()
        slips = node.slips
        time.sleep(0.5)  # let the last messages arrive
    finally:
        close()
    got = counter.stop()
    starts, first = timing["start_ns"], timing["first_tick"]
    published = int(starts.size)
    seen = received_in(got, first, published)
    # Receive times of the window's messages, one per tick (first copy).
    index, inside = seen["index"], seen["inside"]
    rx = np.full(published, -1, dtype=np.int64)
    rx[index[inside][::-1]] = got["received"][inside][::-1]
    have = rx >= 0
    rx_sorted = rx[have]
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {
        "thread_priority": priority, "load_average": [round(x, 2) for x in os.getloadavg()],
        "rate_hz": RATE, "seconds": seconds, "expected": int(round(seconds * RATE)),
        "published": published, "received": seen["received"], "lost": seen["lost"],
        "duplicates": seen["duplicates"], "deadline_slips": slips,
        **loop_timing(timing, PERIOD_NS),
        "receive_interval_error_ms": percentiles(
            np.diff(rx_sorted)[np.diff(np.flatnonzero(have)) == 1] - PERIOD_NS),
        "delivery_latency_ms": percentiles(rx[have] - starts[have]),
        "node_process_cpu_percent": round(100.0 * cpu / (wall1 - wall0), 1),
    }


def run_factor(rtf: float, seconds: float) -> dict:
    """The node at real-time factor ``rtf`` (0: as fast as possible) for ``seconds`` (wall)."""
    counter = Counter()
    node, close = make_node(1.0)
    try:
        wait_matched(node)
        time.sleep(0.5)
        first = node.simulator.tick_count
        wall0 = time.perf_counter()
        node.set_parameters([Parameter("real_time_factor", value=rtf)])
        time.sleep(seconds)
        node.set_parameters([Parameter("real_time_factor", value=1.0)])
        wall = time.perf_counter() - wall0
        last = node.simulator.tick_count
        time.sleep(1.0)
    finally:
        close()
    got = counter.stop()
    ticks = last - first
    seen = received_in(got, first, ticks)
    return {
        "requested_factor": rtf, "wall_seconds": round(wall, 3),
        "sim_seconds": round(ticks / RATE, 3),
        "real_time_factor": round(ticks / RATE / wall, 2),
        "ticks_per_second": round(ticks / wall), "published": ticks,
        "received": seen["received"], "lost": seen["lost"],
        "subscriber_kept_up": seen["lost"] == 0,
        "received_fraction": round(seen["unique"] / max(ticks, 1), 4),
    }


def tick_costs(n: int = 20000) -> dict:
    """Microseconds per tick of the pieces, the node's loop thread stopped."""
    node, close = make_node(1.0, start_executor=False)
    costs = {}
    try:
        node.stop()
        sim = node.simulator
        for _ in range(1000):
            sample = sim.tick()
        t0 = time.perf_counter()
        for _ in range(n):
            sample = sim.tick()
        costs["tick_us"] = round((time.perf_counter() - t0) / n * 1e6, 2)
        t0 = time.perf_counter()
        for _ in range(n):
            node._publish(sample)
        costs["publish_us_no_subscriber"] = round((time.perf_counter() - t0) / n * 1e6, 2)
        counter = Counter()
        try:
            wait_matched(node)
            time.sleep(0.5)
            t0 = time.perf_counter()
            for _ in range(n):
                node._publish(sample)
            costs["publish_us_subscriber"] = round((time.perf_counter() - t0) / n * 1e6, 2)
        finally:
            counter.stop()
    finally:
        close()
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="real-time run, s")
    parser.add_argument("--fast-seconds", type=float, default=10.0,
                        help="as-fast-as-possible run, wall s")
    parser.add_argument("--priorities", type=int, nargs="*", default=[0, 50],
                        help="thread_priority of the real-time runs (0 = normal scheduling, "
                             "else SCHED_FIFO)")
    parser.add_argument("--factors", type=float, nargs="*", default=[2.0, 5.0, 10.0],
                        help="real-time factors at which to check the subscriber keeps up")
    parser.add_argument("--factor-seconds", type=float, default=4.0,
                        help="wall seconds of each of those runs")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "pendulum_node.json")
    parser.add_argument("--subscriber", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.subscriber:
        subscriber(args.subscriber)
        return 0

    from rclpy.utilities import get_rmw_implementation_identifier

    os.environ.setdefault("ROS_DOMAIN_ID", str(ros_domain(1)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    rclpy.init()
    try:
        costs = tick_costs()
        print(f"per tick: simulator {costs['tick_us']} us, publishing "
              f"{costs['publish_us_no_subscriber']} us (no subscriber), "
              f"{costs['publish_us_subscriber']} us (a subscriber in another process)")
        real = {}
        for priority in args.priorities:
            run = run_real_time(args.seconds, warmup=1.0, priority=priority)
            real["normal" if priority == 0 else f"fifo_{priority}"] = run
            mode = "normal scheduling" if priority == 0 else f"SCHED_FIFO {priority}"
            print(f"(a) real time, {RATE:g} Hz for {args.seconds:g} s, {mode}: published "
                  f"{run['published']} / expected {run['expected']}, received {run['received']} "
                  f"(lost {run['lost']}, duplicates {run['duplicates']})")
            print(f"    period error (in the node) p50/p99/max = "
                  f"{run['period_error_ms']['p50']}/{run['period_error_ms']['p99']}/"
                  f"{run['period_error_ms']['max']} ms; lateness to deadline "
                  f"p99 {run['deadline_lateness_ms']['p99']} ms; receive interval error "
                  f"p99 {run['receive_interval_error_ms']['p99']} ms; delivery latency p50 "
                  f"{run['delivery_latency_ms']['p50']} ms; node process CPU "
                  f"{run['node_process_cpu_percent']} %; load average {run['load_average']}")
        fast = run_factor(0.0, args.fast_seconds)
        print(f"(b) as fast as possible: {fast['sim_seconds']} sim s in {fast['wall_seconds']} "
              f"wall s = real-time factor {fast['real_time_factor']} "
              f"({fast['ticks_per_second']} ticks/s); subscriber received "
              f"{fast['received']} of {fast['published']} (kept up: "
              f"{fast['subscriber_kept_up']})")
        sweep = []
        for factor in args.factors:
            run = run_factor(factor, args.factor_seconds)
            sweep.append(run)
            print(f"    x{factor:g}: reached x{run['real_time_factor']}, subscriber received "
                  f"{run['received']} of {run['published']} (lost {run['lost']})")
        rmw = get_rmw_implementation_identifier()
    finally:
        rclpy.try_shutdown()
    targets = {
        f"p99_period_error_le_1ms_{mode}": run["period_error_ms"]["p99"] <= 1.0
        for mode, run in real.items()
    }
    targets.update({
        f"no_lost_message_{mode}": run["lost"] == 0 for mode, run in real.items()})
    targets["real_time_factor_ge_20"] = fast["real_time_factor"] >= 20.0
    print("targets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in targets.items()))
    result = {
        "benchmark": "pendulum_node", "environment": {**environment(), "rmw": rmw},
        "workload": {"actuator": "mx64", "model": "m4", "rate_hz": RATE,
                     "topics_per_tick": ["/clock", "/joint_states", "/bam/actuator_states"],
                     "subscriber": "another process, /joint_states, reliable keep-last 100",
                     "period_error": "measured in the node: interval between tick starts "
                                     "(perf_counter_ns after the deadline wait) minus 1 ms"},
        "per_tick_cost": costs, "real_time": real, "fastest": fast,
        "subscriber_keep_up": sweep, "targets": targets,
    }
    write_result(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
