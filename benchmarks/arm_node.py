"""Arm node speed: how fast ``bam_sim.nodes.arm_node.ArmNode`` runs and holds real time.

In this process, the Dynamixel 2R arm (1 ms physics), no subscriber:

(a) as fast as possible (real_time_factor 0): physics steps per second of the
    node for several ``publish_every``, next to ``ServoArm.step`` alone (the
    numerical core without ROS) on the same model;
(b) real time (real_time_factor 1, states every step = 1 kHz): the period
    error of the loop ticks (interval between tick starts minus 1 ms, measured
    in the node after the deadline wait) and the deadline slips.

Run: ``tools/workspace.sh exec python benchmarks/arm_node.py`` (``--seconds 3
--fast-seconds 1`` for a quick check); writes ``benchmarks/results/arm_node.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import rclpy
from rclpy.parameter import Parameter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from loop_timing import loop_timing  # noqa: E402
from provenance import environment, write_result  # noqa: E402

from bam_testing.ros_context import ros_domain  # noqa: E402


def make_node(**params):
    from bam_sim.nodes.arm_node import ArmNode

    return ArmNode(parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])


def bare_steps_per_second(seconds: float) -> float:
    from bam_sim.mujoco_arm.shipped_arms import load_arm

    arm = load_arm("dynamixel")
    arm.set_command(goals=[0.5, -0.3])
    arm.step(100)
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        arm.step(100)
        steps += 100
    return steps / (time.perf_counter() - t0)


def node_steps_per_second(every: int, seconds: float) -> float:
    node = make_node(real_time_factor=0.0, publish_every=every)
    try:
        time.sleep(0.3)  # warm-up (numba kernels already compiled by then)
        s0, t0 = node.step_count, time.perf_counter()
        time.sleep(seconds)
        s1, t1 = node.step_count, time.perf_counter()
    finally:
        node.destroy_node()
    return (s1 - s0) / (t1 - t0)


def real_time(seconds: float) -> dict:
    node = make_node(real_time_factor=1.0, publish_every=1)
    try:
        time.sleep(1.0)
        ticks = int(round(seconds * 1000))
        node.record_timing(ticks)
        time.sleep(seconds + 0.3)
        timing, slips = node.timing(), node.slips
    finally:
        node.destroy_node()
    return {"ticks": int(timing["start_ns"].size), "expected": ticks, "deadline_slips": slips,
            **loop_timing(timing, 1_000_000),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="real-time run, s")
    parser.add_argument("--fast-seconds", type=float, default=3.0,
                        help="wall s of each as-fast-as-possible run")
    parser.add_argument("--every", type=int, nargs="*", default=[1, 10, 100])
    parser.add_argument("--output", type=Path, default=HERE / "results" / "arm_node.json")
    args = parser.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", str(ros_domain(1)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    rclpy.init()
    try:
        bare = bare_steps_per_second(args.fast_seconds)
        print(f"(a) ServoArm.step alone: {bare:,.0f} steps/s")
        fast = {}
        for every in args.every:
            rate = node_steps_per_second(every, args.fast_seconds)
            fast[str(every)] = {"steps_per_second": round(rate), "real_time_factor":
                                round(rate / 1000.0, 2), "fraction_of_bare": round(rate / bare, 3)}
            print(f"    node, states every {every} step(s): {rate:,.0f} steps/s "
                  f"(x{rate / 1000:.1f} real time, {100 * rate / bare:.0f} % of ServoArm.step)")
        run = real_time(args.seconds)
        print(f"(b) real time, 1 kHz for {args.seconds:g} s: {run['ticks']} / {run['expected']} "
              f"ticks, {run['deadline_slips']} slip(s); period error p50/p99/max = "
              f"{run['period_error_ms']['p50']}/{run['period_error_ms']['p99']}/"
              f"{run['period_error_ms']['max']} ms; load average {run['load_average']}")
    finally:
        rclpy.try_shutdown()
    result = {
        "benchmark": "arm_node", "environment": environment(),
        "workload": {"arm": "dynamixel", "models": "m4, m4 (published)", "physics_hz": 1000,
                     "topics_per_publication": ["/clock", "/joint_states",
                                                "/bam/actuator_states"],
                     "subscriber": "none"},
        "servo_arm_step_per_second": round(bare), "fastest": fast, "real_time": run,
    }
    write_result(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
