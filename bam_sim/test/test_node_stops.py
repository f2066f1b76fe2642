"""Stops always stop: the shutdown order of a node, and signals during and after it (#23).

The order (:func:`bam_sim.common.runner.shut_down`, ``ActuatorNode.destroy_node``):
stop the threads and join them, destroy the entities they use, destroy the node, shut
rclpy down; every signal from the node's construction to the process's exit only sets
a flag, so the exit code is 128 + the first signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Float64MultiArray

from bam_sim.common import tick_loop
from bam_sim.common.contract import POSITION_COMMANDS
from bam_sim.common.qos import profile
from bam_sim.nodes.pendulum_node import PendulumNode
from bam_testing import stop_stress as ss
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import wait_for, wait_matched

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, only reached when something is wrong
DOMAIN = ros_domain(1)
ROUNDS = 8  # nodes destroyed while commands flow


class HeldPendulum(PendulumNode):
    """A pendulum whose loop thread can be held inside a tick (a bus call that hangs)."""

    def __init__(self, **kwargs) -> None:
        self.hold, self.held, self.let_go = (threading.Event() for _ in range(3))
        super().__init__(**kwargs)

    def _tick(self) -> None:
        if self.hold.is_set():
            self.held.set()
            self.let_go.wait(TIMEOUT)
        super()._tick()


def test_entities_are_not_destroyed_while_the_loop_thread_lives(monkeypatch):
    monkeypatch.setattr(tick_loop, "STOP_TIMEOUT", 0.2)
    with private_context(DOMAIN) as ctx:
        node = HeldPendulum(context=ctx)
        try:
            node.hold.set()
            assert node.held.wait(TIMEOUT)
            node.destroy_node()  # the loop is stuck in a tick: nothing may be destroyed
            assert node._loop.alive and len(list(node.publishers)) >= 3
            node.let_go.set()
            node.destroy_node()  # the loop ends now: everything goes
            assert not node._loop.alive and not list(node.publishers)
            assert not list(node.subscriptions)
        finally:
            node.let_go.set()
            node.destroy_node()


def _flood(publisher, stop: threading.Event) -> None:
    """Position commands as fast as this thread can send them, until ``stop``."""
    k = 0
    while not stop.is_set():
        k += 1
        publisher.publish(Float64MultiArray(data=[0.5 * (k // 50 % 2)]))


def test_a_node_receiving_commands_is_destroyed_cleanly_every_time():
    """The hang's conditions, ROUNDS times: commands flowing from another participant on a
    second thread while the node's spin ends and the node is destroyed."""
    with private_context(DOMAIN) as ctx, private_context(DOMAIN) as other:
        commander = rclpy.create_node("bam_test_commander", context=other)
        publisher = commander.create_publisher(
            Float64MultiArray, POSITION_COMMANDS.name, profile(POSITION_COMMANDS.qos))
        try:
            for _ in range(ROUNDS):
                _destroy_while_commanded(ctx, publisher)
        finally:
            commander.destroy_node()


def _destroy_while_commanded(ctx, publisher) -> None:
    node = PendulumNode(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    stop = threading.Event()
    flood = threading.Thread(target=_flood, args=(publisher, stop), daemon=True)
    try:
        wait_matched(publisher, "the pendulum's subscription", TIMEOUT,
                     [node.topics.command_subscriptions[POSITION_COMMANDS.name]],
                     lambda: executor.spin_once(0.01))
        flood.start()
        wait_for(lambda: node.simulator.command.goal != 0.0, "a command taken", TIMEOUT,
                 lambda: executor.spin_once(0.01))
        executor.spin_once(0.01)
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()  # while the commands still flow
        stop.set()
        if flood.is_alive():
            flood.join(TIMEOUT)
    assert not node._loop.alive and not list(node.publishers)
    assert not list(node.subscriptions)


STOPPER = textwrap.dedent("""
    import os, signal, sys
    from rclpy.node import Node
    from bam_sim.common.runner import run_node

    class Stopping(Node):
        # A signal while it is built, two during its shutdown, one after run_node.
        def __init__(self):
            super().__init__("bam_test_stopping")
            os.kill(os.getpid(), signal.{first})

        def destroy_node(self):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            print("shutdown went on", flush=True)
            super().destroy_node()

    code = run_node("stopping", Stopping, "help", ["stopping"])
    os.kill(os.getpid(), signal.SIGTERM)
    print("exited by code", code, flush=True)
    sys.exit(code)
""")


def _stopper(first: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN)}
    return subprocess.run([sys.executable, "-c", STOPPER.format(first=first)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_signals_during_and_after_the_shutdown_are_absorbed():
    for first, code in (("SIGTERM", 143), ("SIGINT", 130)):
        done = _stopper(first)
        assert done.returncode == code, (first, done.returncode, done.stderr)
        assert "shutdown went on" in done.stdout and f"exited by code {code}" in done.stdout
        assert "Traceback" not in done.stderr, done.stderr


TEARDOWN = textwrap.dedent("""
    import ctypes
    from bam_sim.common.runner import shut_down

    class Stuck:
        # Released (torque off, files closed), then a teardown that never ends: the
        # middleware spinning inside destroy_node, holding the GIL as Fast DDS's
        # participant deletion does (bam_sim.common.exit_timer): no Python thread runs.
        def release(self):
            print("released", flush=True)

        def destroy_node(self):
            ctypes.PyDLL(None).sleep(3600)  # a native call that keeps the GIL

    shut_down(Stuck(), exit_code=143)
    print("not reached", flush=True)
""")


def test_a_teardown_that_never_ends_is_cut_after_the_node_is_released():
    from bam_sim.common.runner import TEARDOWN_LIMIT

    done = subprocess.run([sys.executable, "-c", TEARDOWN], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert done.stdout.split() == ["released"], done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"within {TEARDOWN_LIMIT:g} s" in lines[0], done.stderr


CANCELLED = textwrap.dedent("""
    import ctypes
    from bam_sim.common.exit_timer import ExitTimer

    timer = ExitTimer(0.2, 143, "should not be said")
    timer.cancel()
    ctypes.PyDLL(None).usleep(600_000)  # past the deadline, GIL held
    print("went on", flush=True)
""")


def test_a_cancelled_exit_timer_leaves_the_process_alone():
    done = subprocess.run([sys.executable, "-c", CANCELLED], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert (done.returncode, done.stdout, done.stderr) == (0, "went on\n", "")


# The pendulum as installed, with a numba listener that says when its first compilation
# starts: the stop is sent while the stepper's kernel compiles in an empty cache.
PENDULUM_COMPILING = """
import sys
from numba.core import event

class Said(event.Listener):
    said = False
    def on_start(self, ev):
        if not self.said:
            self.said = True
            print("numba compiling", flush=True)
    def on_end(self, ev):
        pass

event.register("numba:compile", Said())
from bam_sim.nodes.pendulum_node import main
sys.exit(main(sys.argv[1:]))
"""


COMPILE_TIMEOUT = 600.0  # s: a cold compile on a loaded machine; only a hang reaches it


def test_a_simulator_stopped_while_it_compiles_exits_cleanly_once_built(tmp_path):
    """A stop never raises inside numba's compiler (an exception there left llvmlite's
    objects half made: tracebacks, a double free, a segmentation fault): the node is built,
    then ends at once, with 128 + the signal and nothing left behind. SIGINT: the signal
    Python's own handler turned into an exception."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "NUMBA_CACHE_DIR": str(tmp_path / "nb"),
           "PYTHONUNBUFFERED": "1"}
    started = ss.start("pendulum", [sys.executable, "-c", PENDULUM_COMPILING, "--ros-args",
                                    "-r", "__ns:=/compiling"], tmp_path / "pendulum.log",
                       (signal.SIGINT,), env=env)
    try:
        started.wait_output("numba compiling", timeout=TIMEOUT)
        (stop,) = ss.stop_all([started], bound=COMPILE_TIMEOUT)
    finally:
        ss.kill_leftovers([started])
    # Late by design: the compile (seconds, tens of them cold on a loaded machine) ends first.
    problems = [p for p in stop.problems if not p.startswith("exited more than")]
    assert problems == [], stop.describe()
    assert stop.returncode == 128 + signal.SIGINT
    assert "[compiling.pendulum]: " in stop.output  # built, then stopped
