"""ProcessBench's shutdown order: every spin thread stopped and joined before its executor
is shut down (rclpy then destroys the guard condition a spinning thread waits on: the
thread died with an AttributeError traceback) and before its node is destroyed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from rclpy.node import Node

from bam_bringup.process_bench import ProcessBench
from bam_testing.ros_context import private_context

pytestmark = pytest.mark.live  # DDS and threads: rerun under load

ROUNDS = 5


@contextmanager
def thread_failures() -> Iterator[list[str]]:
    """The exceptions that end a thread inside the block, as "thread: ExceptionType"."""
    failures: list[str] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: failures.append(f"{args.thread.name}: "
                                                        f"{args.exc_type.__name__}")
    try:
        yield failures
    finally:
        threading.excepthook = hook


def busy_node(context, name: str) -> Node:
    """A node whose executor always has work: a 1 kHz timer."""
    node = Node(name, context=context)
    node.create_timer(0.001, lambda: None)
    return node


def test_spin_threads_end_before_their_executor_and_node_go():
    order: list[str] = []
    with thread_failures() as failures, private_context() as context:
        for round_ in range(ROUNDS):
            bench = ProcessBench([], context=context)
            for i in range(3):
                bench.add(busy_node(context, f"busy{round_}_{i}"))
            for name, (executor, thread, _) in bench.spinners.items():
                executor.shutdown = _noting(executor.shutdown, thread, f"{name} executor",
                                            order)
                node = bench.nodes[name]
                node.destroy_node = _noting(node.destroy_node, thread, f"{name} node",
                                            order)
            bench.shutdown()
            assert bench.nodes == {} and bench.spinners == {}
    assert failures == []
    assert len(order) == ROUNDS * 3 * 2 and all(o.endswith("after its thread")
                                                for o in order), order


def _noting(method, thread: threading.Thread, what: str, order: list[str]):
    def call(*args, **kwargs):
        state = "while its thread spins" if thread.is_alive() else "after its thread"
        order.append(f"{what} {state}")
        return method(*args, **kwargs)
    return call


def test_a_closed_nodes_action_client_goes_after_its_thread():
    """The session's action client: destroyed while its node's thread still spun, the
    executor added the dead handle to its wait set and the thread died with an RCLError
    traceback (a bench session stopped by SIGINT, seen once in CI)."""
    from rclpy.action import ActionClient

    from bam_msgs.action import RunTrajectory

    order: list[str] = []
    with thread_failures() as failures, private_context() as context:
        for round_ in range(ROUNDS):
            bench = ProcessBench([], context=context)
            node = busy_node(context, f"client{round_}")
            bench.add(node)
            client = ActionClient(node, RunTrajectory, "run_trajectory")
            thread = bench.spinners[node.get_name()][1]
            client.destroy = _noting(client.destroy, thread, "client", order)
            bench.close(node.get_name(), waitables=(client,))
            bench.shutdown()
    assert failures == []
    assert order == ["client after its thread"] * ROUNDS, order
