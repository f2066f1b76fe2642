"""``bench``: the bench's nodes in one process, where the ros2 CLI is absent.

    bench serve actuator:=mx64 sim:=true record:=true   # like ros2 launch bench.launch.py
    bench serve --config arm arm:=erob viewer:=true     # like ros2 launch arm.launch.py
    bench serve sim:=false hardware:=emulated port:=/tmp/ttyDXL  # driver + emulator
    bench session                                       # the README's main job
    bench session --config my_session.yaml --output-dir out/bench

``serve`` composes the nodes of ``config/bench.yaml`` (``--config arm``:
``config/arm.yaml``) exactly as ``launch/bench.launch.py`` (``arm.launch.py``)
does (both through bam_bringup.composition) and
spins them, one executor thread per node, until Ctrl-C. ``session`` runs an
identification session on the simulated bench: for each bench setup it plays
the protocol through the ``/bam/run_trajectory`` action, records everything
into one rosbag2 bag, then fits the models and writes the report.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from bam_bringup.composition import NodeSpec, command_line, compose
from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line

# The node class behind each executable, to build it in this process.
NODE_CLASSES = {
    ("bam_sim", "pendulum"): "bam_sim.nodes.pendulum_node:PendulumNode",
    ("bam_sim", "arm"): "bam_sim.nodes.arm_node:ArmNode",
    ("bam_drivers", "dynamixel"): "bam_drivers.nodes.dynamixel_node:DynamixelNode",
    ("bam_identify", "trajectory"): "bam_identify.nodes.trajectory_node:TrajectoryNode",
    ("bam_identify", "recorder"): "bam_identify.nodes.recorder_node:RecorderNode",
}
SESSION_CONFIG = Path(__file__).resolve().parent.parent / "config" / "session.yaml"


def node_class(spec: NodeSpec):
    target = NODE_CLASSES.get((spec.package, spec.executable))
    if target is None:
        raise BamError(f"no in-process class for {spec.package}/{spec.executable}; add it to "
                       "bam_bringup.runner.NODE_CLASSES")
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def build_nodes(specs: list[NodeSpec], context) -> dict:
    """The nodes of ``specs``, created in ``context`` with their parameters."""
    from rclpy.parameter import Parameter

    nodes = {}
    for spec in specs:
        if spec.process:  # not a node: ProcessBench starts it as a process
            continue
        overrides = [Parameter(k, value=v) for k, v in spec.parameters.items()]
        nodes[spec.name] = node_class(spec)(context=context, parameter_overrides=overrides)
    return nodes


class ProcessBench:
    """Nodes of one process, each spun by its own single-threaded executor thread.

    One executor per node, not one multi-threaded executor for all: under sim
    time rclpy's MultiThreadedExecutor handles a fraction of the /clock
    messages a SingleThreadedExecutor does, which starves the trajectory node.
    """

    def __init__(self, specs: list[NodeSpec]):
        import rclpy

        self.context = rclpy.Context()
        # args=[]: the command line holds launch arguments (arm:=erob), not ROS remap rules.
        rclpy.init(context=self.context, args=[])
        self.nodes: dict = {}
        self.spinners: dict = {}
        # Processes first (a hardware emulator), stopped last (after the driver's torque off).
        self.processes = [start_process(spec) for spec in specs if spec.process]
        try:
            built = build_nodes(specs, self.context)
        except BaseException:
            self.shutdown()
            raise
        for name, node in built.items():
            self.add(node, name)

    def add(self, node, name: str | None = None) -> None:
        from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(node)

        def spin() -> None:
            try:
                executor.spin()
            except ExternalShutdownException:
                pass

        thread = threading.Thread(target=spin, daemon=True, name=name or node.get_name())
        thread.start()
        name = name or node.get_name()
        self.nodes[name] = node
        self.spinners[name] = (executor, thread)

    @property
    def running(self) -> bool:
        return all(thread.is_alive() for _, thread in self.spinners.values()) and \
            all(process.poll() is None for process in self.processes)

    def close(self, name: str) -> None:
        """Stop and destroy one node (a recorder closes its bag)."""
        node = self.nodes.pop(name)
        executor, thread = self.spinners.pop(name)
        executor.shutdown()
        thread.join(timeout=5.0)
        node.destroy_node()

    def shutdown(self) -> None:
        import rclpy

        try:
            for name in list(self.nodes):
                self.close(name)
            rclpy.try_shutdown(context=self.context)
        finally:
            for process in self.processes:
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
    process = subprocess.Popen([str(path), *command_line(spec)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE if spec.ready else None, text=True,
                               start_new_session=True)
    if spec.ready:
        _await_ready(process, spec)
    return process


def _await_ready(process: subprocess.Popen, spec: NodeSpec, timeout: float = 15.0) -> None:
    """Wait for the process's ready line (nodes that use it start after), then echo its output."""
    try:
        line = await_ready_line(process, spec.ready, timeout,
                                echo=lambda text: print(text, file=sys.stderr))
    except NotReady as exc:
        process.terminate()
        raise BamError(f"{spec.executable} {exc}; see its messages above") from None
    print(line, file=sys.stderr)

    def pump() -> None:  # the rest of its stdout to our stderr, as ros2 launch shows it
        for text in process.stdout:
            print(text, end="", file=sys.stderr)

    threading.Thread(target=pump, name=f"{spec.name}-stdout", daemon=True).start()


def serve(values: dict[str, str], config: str = "bench") -> str:
    bench = ProcessBench(compose(values, config))
    print(f"bench: running {', '.join(bench.nodes)}; Ctrl-C to stop", file=sys.stderr)
    try:
        while bench.running:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        bench.shutdown()
    return "bench: stopped"


def load_session(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BamError(f"cannot read session {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("session"), dict):
        raise BamError(f"{path} must hold a 'session' mapping")
    return doc["session"]


def _wait(future, timeout: float):
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        raise BamError(f"no answer from the bench within {timeout:.0f} s")
    return future.result()


def _play(client, trajectory: str, gain: float, repetition: int, timeout: float) -> None:
    from bam_msgs.action import RunTrajectory

    goal = RunTrajectory.Goal(trajectory=trajectory, gain=gain, repetition=repetition)
    handle = _wait(client.send_goal_async(goal), timeout)
    if not handle.accepted:
        raise BamError(f"the bench refused to play {trajectory} at kp={gain:g}")
    result = _wait(handle.get_result_async(), timeout).result
    if not result.success:
        raise BamError(f"{trajectory} at kp={gain:g} failed: {result.message}")


def run_session(config: dict, output_dir: Path, quiet: bool = False) -> str:
    """Record the simulated bench over the session's setups, then fit and report."""
    from rclpy.action import ActionClient
    from rclpy.parameter import Parameter
    from tqdm import tqdm

    from bam_msgs.action import RunTrajectory
    from bam_sim.common.contract import RUN_TRAJECTORY_ACTION

    folder = output_dir / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    if folder.exists():
        raise BamError(f"{folder} already exists; wait a second or choose --output-dir")
    from bam_identify.protocol import parse_protocol

    protocol = parse_protocol(config.get("protocol", {}), "session protocol")
    duration = protocol.duration or 6.0
    setups = config.get("setups") or [{"mass": 1.0, "length": 0.15}]
    first = setups[0]
    bag = folder / "bag"
    folder.mkdir(parents=True)
    specs = compose({"actuator": config.get("actuator", "mx64"),
                     "model": config.get("truth_model", "m4"), "sim": True, "record": True,
                     "bag": str(bag), "real_time_factor": float(config.get("real_time_factor", 1)),
                     "mass": float(first["mass"]), "length": float(first["length"]),
                     "arm_mass": float(config.get("arm_mass", 0.0))})
    for spec in specs:
        if spec.name == "pendulum":
            spec.parameters["rate"] = float(config.get("rate", 1000.0))
        if spec.name == "trajectory":
            spec.parameters["duration"] = duration
            spec.parameters["settle"] = protocol.settle if protocol.settle is not None else 1.0
    bench = ProcessBench(specs)
    start = time.monotonic()
    try:
        import rclpy

        client_node = rclpy.create_node("session", context=bench.context)
        bench.add(client_node)
        client = ActionClient(client_node, RunTrajectory, RUN_TRAJECTORY_ACTION)
        if not client.wait_for_server(timeout_sec=20.0):
            raise BamError("the trajectory action server did not come up")
        pendulum = bench.nodes["pendulum"]
        timeout = 60.0 + 20.0 * duration
        with tqdm(total=len(setups) * len(protocol), desc="bench session", unit="run",
                  disable=quiet, file=sys.stderr) as bar:
            for setup in setups:
                # Atomically: one bench description for the whole new setup.
                result = pendulum.set_parameters_atomically([
                    Parameter("mass", value=float(setup["mass"])),
                    Parameter("length", value=float(setup["length"]))])
                if not result.successful:
                    raise BamError(f"bench setup {setup} refused: {result.reason}")
                for run in protocol:
                    bar.set_postfix_str(f"m={setup['mass']} kg l={setup['length']} m "
                                        f"{run.trajectory} kp={run.gain:g}", refresh=False)
                    _play(client, run.trajectory, run.gain, run.repetition, timeout)
                    bar.update(1)
        recorded = getattr(bench.nodes["recorder"], "counts", {})
        bench.close("recorder")
    finally:
        bench.shutdown()
    seconds = time.monotonic() - start
    fit_text = _fit(config, bag, folder, quiet)
    counts = ", ".join(f"{k} {v}" for k, v in recorded.items()) if recorded else "?"
    return (f"recorded {len(setups) * len(protocol)} runs in {seconds:.0f} s: {bag}\n"
            f"  messages: {counts}\n{fit_text}")


def _fit(config: dict, bag: Path, folder: Path, quiet: bool) -> str:
    from bam_identify.cli import fit_parser, run_fit

    fit = config.get("fit", {})
    argv = ["--bags", str(bag), "--models", *fit.get("models", ["m1", "m4", "m6"]),
            "--trials", str(int(fit.get("trials", 1500))), "--seed", str(int(fit.get("seed", 0))),
            "--validation-fraction", str(float(fit.get("validation_fraction", 0.25))),
            "--output", str(folder / "params" / "{actuator}_{model}.yaml"),
            "--report", str(folder / "report")]
    return run_fit(fit_parser().parse_args(argv + (["--quiet"] if quiet else [])))


def _launch_values(items: list[str]) -> dict[str, str]:
    values = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise BamError(f"'{item}': write launch arguments as name:=value")
        values[name] = value
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    serve_parser = sub.add_parser("serve", help="compose the bench like bench.launch.py "
                                  "(--config arm: the arm, like arm.launch.py)")
    serve_parser.add_argument("--config", default="bench",
                              help="configuration: bench, arm (config/NAME.yaml) or a file")
    serve_parser.add_argument("arguments", nargs="*", metavar="name:=value")
    session_parser = sub.add_parser("session", help="record, fit and report (main job)")
    session_parser.add_argument("--config", type=Path, default=SESSION_CONFIG)
    session_parser.add_argument("--output-dir", type=Path, default=Path("out/bench"))
    session_parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            print(serve(_launch_values(args.arguments), args.config))
        else:  # the default: the session of the README's main job
            config = getattr(args, "config", SESSION_CONFIG)
            output = getattr(args, "output_dir", Path("out/bench"))
            print(run_session(load_session(config), output, getattr(args, "quiet", False)))
    except BamError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
