"""The bench protocol played on a driver into a rosbag2 bag, then scored, for end-to-end tests.

The trajectory node plays a protocol on a driver node while the recorder
writes the bag: each node spun by its own executor thread on one private
context, as the bench runner spins them. The MAE helper scores a parameter
set on logs the way ``fit`` does (bam_identify.fitting.fit.Objective).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from bam_identify.fitting.fit import Objective, SearchSpace
from bam_identify.nodes.recorder_node import RecorderNode
from bam_identify.nodes.trajectory_node import TrajectoryNode


def record_protocol(driver, context, protocol: str, folder: Path, timeout: float) -> Path:
    """Play ``protocol`` (YAML text) on ``driver`` (a node on ``context``), recorded; the bag.

    Every node is destroyed on return (a driver turns its torque off).
    """
    protocol_file = folder / "protocol.yaml"
    protocol_file.write_text(protocol)
    bag = folder / "bag"
    nodes = [
        driver,
        RecorderNode(context=context, parameter_overrides=[Parameter("output", value=str(bag))]),
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
        assert nodes[2].protocol_done.wait(timeout=timeout), "the protocol did not finish"
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
