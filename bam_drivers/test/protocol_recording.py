"""The bench protocol played on a driver into a rosbag2 bag, then scored, for end-to-end tests.

The trajectory node plays a protocol on a driver node while the recorder
writes the bag: each node spun by its own executor thread on one private
context, as the bench runner spins them. The MAE helper scores a parameter
set on logs the way ``fit`` does (bam_identify.fitting.objective.Objective).

:func:`clean_stretches` cuts the logs where the driver published nothing for a
while: a loaded host stalled it, the servo meanwhile kept the last goal it was
sent, and the resampled log ramps the goal (and the position) across the gap,
which no model of the servo follows.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rosbags.rosbag2 import Reader

from bam_identify.data.typestore import typestore
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace
from bam_identify.nodes.recorder_node import RecorderNode
from bam_identify.nodes.trajectory_node import TrajectoryNode
from bam_sim.bench.bench_log import BenchLog

GAP_PERIODS = 2.0  # a step between two joint states longer than this many periods: a gap
MIN_STRETCH = 0.5  # s, the shortest stretch between gaps kept
SERIES = ("goal", "enabled", "position", "velocity", "control", "temperature",
          "input_voltage", "load")


def record_protocol(driver, context, protocol: str, folder: Path, timeout: float,
                    record: bool = True) -> Path:
    """Play ``protocol`` (YAML text) on ``driver`` (a node on ``context``, or None for a
    driver in another process on its domain), recorded (here, or with ``record`` False by
    a recorder of the caller's, into the same path); the bag, ``folder``/bag.

    Every node is destroyed on return (a driver turns its torque off).
    """
    protocol_file = folder / "protocol.yaml"
    protocol_file.write_text(protocol)
    bag = folder / "bag"
    nodes = [
        *([driver] if driver is not None else []),
        *([RecorderNode(context=context, parameter_overrides=[
            Parameter("output", value=str(bag))])] if record else []),
        TrajectoryNode(context=context, parameter_overrides=[
            Parameter("protocol_file", value=str(protocol_file)),
            Parameter("command_rate", value=200.0)]),
    ]
    executors = [SingleThreadedExecutor(context=context) for _ in nodes]
    threads = []
    for executor, node in zip(executors, nodes, strict=True):
        executor.add_node(node)
        threads.append(threading.Thread(target=executor.spin, daemon=True))
        threads[-1].start()
    try:
        assert nodes[-1].protocol_done.wait(timeout=timeout), "the protocol did not finish"
    finally:
        for executor, thread in zip(executors, threads, strict=True):
            executor.shutdown()
            thread.join(timeout=10.0)
        for node in nodes:
            node.destroy_node()
    return bag


def mae(space: SearchSpace, logs, values: dict) -> float:
    """Position MAE (rad) of ``values`` simulated on ``logs``, weighted by log length."""
    per_log = Objective(space, logs).per_log(values)
    return float(np.average(per_log, weights=[len(log) for log in logs]))


def joint_stamps(bag: Path) -> np.ndarray:
    """Header stamps (s) of the ``/joint_states`` messages of ``bag``, in order."""
    store, stamps = typestore(), []
    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic == "/joint_states"]
        for connection, _, raw in reader.messages(connections=connections):
            stamp = store.deserialize_cdr(raw, connection.msgtype).header.stamp
            stamps.append(stamp.sec + stamp.nanosec * 1e-9)
    return np.sort(np.asarray(stamps))


def clean_stretches(logs: list[BenchLog], stamps: np.ndarray, period: float) -> list[BenchLog]:
    """The stretches of ``logs`` (at least MIN_STRETCH long) between the gaps of the joint
    states' ``stamps`` (s) longer than GAP_PERIODS driver ``period`` s; the last period
    before a gap goes too (a sample read late before the loop stalled)."""
    stretches = []
    for log in logs:
        t = log.meta["start_time"] + log.time
        s = stamps[(stamps >= t[0]) & (stamps <= t[-1] + period)]
        bad = np.zeros(len(log), dtype=bool)
        for k in np.flatnonzero(np.diff(s) > GAP_PERIODS * period):
            bad |= (t > s[k] - period) & (t < s[k + 1])
        edges = np.flatnonzero(np.diff(np.r_[0, (~bad).astype(int), 0]))
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            if (b - a) * log.dt >= MIN_STRETCH:
                stretches.append(replace(
                    log, name=f"{log.name}[{a}:{b}]",
                    meta={**log.meta, "start_time": float(t[a])},
                    **{n: getattr(log, n)[a:b] for n in SERIES if getattr(log, n) is not None}))
    return stretches
