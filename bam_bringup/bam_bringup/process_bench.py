"""A launch file's nodes in one process: each built from its package's entry point.

Where the ros2 CLI is absent, the runner (``bench serve``, ``bench session``)
builds the nodes a launch file would start (bam_bringup.launch_standin.launch_file) as
objects of this process: the node class comes from the package's
console-script entry point, and each node gets the name, namespace,
parameters and ROS arguments (its remappings: /clock into the namespace) that
ros2 launch would give it. Plain executables (a hardware
emulator) run as child processes. The bench never handles signals itself: its
caller (``bench``, under :func:`bam_sim.common.entry_point.run_command`) stops it,
so it always shuts down in order.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from bam_bringup.node_spec import NodeSpec
from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line
from bam_sim.common.shm_ports import before_participant


def _distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.lru_cache(maxsize=None)
def node_class(package: str, executable: str) -> type:
    """The node class behind ``package``'s console script ``executable``.

    The entry point names the module whose ``main`` runs the node; that module
    defines exactly one rclpy Node subclass, which the runner builds in-process.
    """
    from rclpy.node import Node

    for entry in importlib.metadata.entry_points(group="console_scripts", name=executable):
        if entry.dist is None or _distribution(entry.dist.name) != package:
            continue
        # The console script's callable names the module that runs (startup.Deferred).
        main = getattr(importlib.import_module(entry.module), entry.attr)
        module = importlib.import_module(getattr(main, "module", entry.module))
        classes = [c for c in vars(module).values() if isinstance(c, type)
                   and issubclass(c, Node) and c.__module__ == module.__name__]
        if len(classes) != 1:
            raise BamError(f"{package}/{executable}: {entry.value} defines {len(classes)} node "
                           "classes; the runner needs exactly one")
        return classes[0]
    raise BamError(f"no executable {executable} in package {package}; build the workspace "
                   "(tools/workspace.sh build)")


def ros_arguments(spec: NodeSpec) -> list[str]:
    """The node's ROS arguments, as ros2 launch gives them: its name and its remappings."""
    rules = [f"{source}:={target}" for source, target in spec.remappings]
    return ["--ros-args", "-r", f"__node:={spec.name}",
            *(token for rule in rules for token in ("-r", rule))]


def build_nodes(specs: list[NodeSpec], context) -> dict:
    """The nodes of ``specs``, created in ``context`` with their parameters and namespace."""
    from rclpy.parameter import Parameter

    nodes = {}
    for spec in specs:
        if spec.process:  # not a node: ProcessBench starts it as a process
            continue
        overrides = [Parameter(k, value=v) for k, v in spec.parameters.items()]
        nodes[spec.name] = node_class(spec.package, spec.executable)(
            context=context, parameter_overrides=overrides, namespace=spec.namespace or None,
            cli_args=ros_arguments(spec))
    return nodes


class ProcessBench:
    """Nodes of one process, each spun by its own single-threaded executor thread.

    One executor per node, not one multi-threaded executor for all: under sim
    time rclpy's MultiThreadedExecutor handles a fraction of the /clock
    messages a SingleThreadedExecutor does, which starves the trajectory node.
    ``context``: an initialized rclpy context to share (kept open on shutdown);
    by default the bench makes its own.
    """

    def __init__(self, specs: list[NodeSpec], context=None):
        import rclpy
        from rclpy.signals import SignalHandlerOptions

        self._owns_context = context is None
        if context is None:
            before_participant()
            context = rclpy.Context()
            # args=[]: the command line holds launch arguments (arm:=erob), not ROS rules;
            # no rclpy signal handlers: the runner stops the bench itself.
            rclpy.init(context=context, args=[],
                       signal_handler_options=SignalHandlerOptions.NO)
        self.context = context
        self.nodes: dict = {}
        self.spinners: dict = {}
        # Processes first (a hardware emulator), stopped last (after the driver's torque off).
        self.processes: list[subprocess.Popen] = []
        built: dict = {}
        try:  # an error or an interrupt half way leaves nothing running
            for spec in specs:
                if spec.process:
                    self.processes.append(start_process(spec))
            built = build_nodes(specs, self.context)
            for name, node in built.items():
                self.add(node, name)
        except BaseException:
            for name, node in built.items():
                if name not in self.nodes:  # built, not spinning yet
                    node.destroy_node()
            self.shutdown()
            raise

    def add(self, node, name: str | None = None) -> None:
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)
        stopping = threading.Event()
        name = name or node.get_name()
        thread = threading.Thread(target=_spin, args=(executor, stopping), daemon=True,
                                  name=name)
        self.nodes[name] = node
        self.spinners[name] = (executor, thread, stopping)
        thread.start()

    @property
    def running(self) -> bool:
        return all(thread.is_alive() for _, thread, _ in self.spinners.values()) and \
            all(process.poll() is None for process in self.processes)

    def close(self, name: str, waitables: tuple = ()) -> None:
        """Stop and destroy one node (a recorder closes its bag), and the ``waitables``
        it holds (an action client): destroyed only once its thread no longer spins them,
        since rclpy's executor would add a destroyed handle to its wait set and raise."""
        self._halt([name])
        for waitable in waitables:
            waitable.destroy()
        self._destroy(name)

    def shutdown(self) -> None:
        """Every node stopped and destroyed, the context shut down, the processes ended.

        In that order: every spin thread is stopped and joined first (all at once: one
        wake-up each), since rclpy's ``Executor.shutdown`` destroys the guard condition
        a spinning thread waits on; then each node's entities and the node go
        (``destroy_node``); the context last."""
        import rclpy

        try:
            self._halt(list(self.nodes))
            for name in list(self.nodes):
                self._destroy(name)
            if self._owns_context:
                rclpy.try_shutdown(context=self.context)
        finally:
            for process in self.processes:
                _stop(process)

    def _halt(self, names: list[str]) -> None:
        """Stop the spin threads of ``names`` and join them (a callback under way ends
        first: a recorder's write, a driver's torque off)."""
        for name in names:
            executor, _, stopping = self.spinners[name]
            stopping.set()
            executor.wake()
        for name in names:
            self.spinners[name][1].join(timeout=JOIN_SECONDS)

    def _destroy(self, name: str) -> None:
        node = self.nodes.pop(name)
        executor, _, _ = self.spinners.pop(name)
        executor.shutdown(timeout_sec=0.0)
        node.destroy_node()


JOIN_SECONDS = 3.0  # a callback longer than this is cut short by the node's destruction


def _spin(executor, stopping: threading.Event) -> None:
    """Run ``executor``'s callbacks until ``stopping`` is set (and the executor woken)."""
    from rclpy.executors import ExternalShutdownException

    try:
        while not stopping.is_set():
            executor.spin_once(timeout_sec=SPIN_SECONDS)
    except ExternalShutdownException:
        pass


SPIN_SECONDS = 0.5  # a lost wake-up delays the stop by at most this


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_process(spec: NodeSpec) -> subprocess.Popen:
    """A process spec's executable (as ``ros2 run`` finds it) with its options."""
    try:
        from ament_index_python.packages import get_package_prefix

        path = Path(get_package_prefix(spec.package)) / "lib" / spec.package / spec.executable
    except (ImportError, LookupError, ValueError):
        path = None
    if path is None or not path.is_file():
        raise BamError(f"no executable {spec.executable} of package {spec.package}; build the "
                       "workspace (tools/workspace.sh build)")
    # A session of its own: Ctrl-C stops the nodes first (the driver turns the torque off on
    # the emulator), then shutdown() stops the process.
    command = [str(path), *_with_parent(spec.arguments)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE if spec.ready else None, text=True,
                               start_new_session=True)
    if spec.ready:
        try:
            _await_ready(process, spec)
        except BaseException:  # an interrupt while waiting leaves no process behind
            _stop(process)
            raise
    return process


EXIT_WITH_PARENT = "--exit-with-parent"


def _with_parent(arguments: tuple[str, ...]) -> list[str]:
    """The process's arguments ending in ``--exit-with-parent PID``, this process.

    Every process a launch file starts (an emulator of bam_drivers) takes it: it ends by
    itself when this process dies without a shutdown (kill -9), rather than holding its
    port or veth pair. The launch files give the flag bare (the parent at start: the
    same process); the PID written out names the bench it belongs to.
    """
    return [*(a for a in arguments if a != EXIT_WITH_PARENT), EXIT_WITH_PARENT,
            str(os.getpid())]


def _await_ready(process: subprocess.Popen, spec: NodeSpec, timeout: float = 15.0) -> None:
    """Wait for the process's ready line (nodes that use it start after), then echo its output."""
    try:
        line = await_ready_line(process, spec.ready, timeout,
                                echo=lambda text: print(text, file=sys.stderr))
    except NotReady as exc:
        raise BamError(f"{spec.executable} {exc}; see its messages above") from None
    print(line, file=sys.stderr)

    def pump() -> None:  # the rest of its stdout to our stderr, as ros2 launch shows it
        for text in process.stdout:
            print(text, end="", file=sys.stderr)

    threading.Thread(target=pump, name=f"{spec.name}-stdout", daemon=True).start()
