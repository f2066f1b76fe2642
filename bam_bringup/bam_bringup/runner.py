"""``bench``: the bench's nodes in one process, where the ros2 CLI is absent.

    bench serve actuator:=mx64 sim:=true record:=true   # like ros2 launch bench.launch.py
    bench serve namespace:=bench1 real_time_factor:=0   # a bench in namespace /bench1
    bench serve --config arm arm:=erob viewer:=true     # like ros2 launch arm.launch.py
    bench serve sim:=false hardware:=emulated port:=/tmp/ttyDXL  # driver + emulator
    bench session                                       # make run, the main job
    bench session --config my_session.yaml --output-dir out/bench --namespace bench1
    bench session --ideal                               # the noiseless bench (tests)

``serve`` starts the nodes the launch file would start (launch/bench.launch.py
or arm.launch.py, read by bam_bringup.launch_standin.launch_file; in one process:
bam_bringup.process_bench) until Ctrl-C or SIGTERM. ``session`` runs an
identification session on the simulated bench (bam_bringup.session): it
records the protocol over the session's setups into one rosbag2 bag, then fits
the models and writes the report. Its bench models the actuator's sensor
(encoder step, read latency, seeded noise, supply sag: the session's
``sensor``, bam_bringup.bench_sensor); ``--ideal`` turns every effect off.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bam_bringup.bench_sensor import ideal_session
from bam_bringup.launch_standin.launch_file import LaunchFile
from bam_bringup.launch_standin.values import namespace
from bam_bringup.process_bench import ProcessBench
from bam_bringup.session import load_session, run_session, session_config
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.entry_point import run_command
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import claimed_outputs

LAUNCH_FILES = {name: LaunchFile(name) for name in ("bench", "arm")}  # --config NAME


def launch_file(name: str) -> LaunchFile:
    try:
        return LAUNCH_FILES[name]
    except KeyError:
        raise BamError(f"unknown configuration {name} (known names: "
                       f"{', '.join(sorted(LAUNCH_FILES))})") from None


def serve(values: dict[str, str], config: str = "bench",
          cancel: Cancellation | None = None) -> str:
    """Run the launch file's nodes until ``cancel`` is requested (Ctrl-C) or a node or
    process ends."""
    cancel = cancel or Cancellation()
    specs = launch_file(config).compose(values)
    _read_protocols(specs)
    bench = ProcessBench(specs)
    try:
        print(f"bench: running {', '.join(bench.nodes)}; Ctrl-C to stop", file=sys.stderr,
              flush=True)
        while bench.running and not cancel.wait(0.2):
            pass
    finally:
        bench.shutdown()
    return "bench: stopped"


def _read_protocols(specs) -> None:
    """The protocol files the nodes will play, read first: a bad one is refused in one
    line before any node starts (and logs), not by one node among running ones."""
    from bam_identify.nodes.trajectory_node import resolve_protocol_file
    from bam_identify.protocol import load_protocol

    for spec in specs:
        name = str(spec.parameters.get("protocol_file") or "").strip()
        if name:
            load_protocol(resolve_protocol_file(name))


def _launch_values(items: list[str]) -> dict[str, str]:
    values = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise BamError(f"'{item}': write launch arguments as name:=value")
        values[name] = value
    return values


def _arguments_help() -> str:
    lines = []
    for launch in LAUNCH_FILES.values():
        lines.append(f"arguments of --config {launch.name} (launch/{launch.name}.launch.py):")
        for arg in launch.arguments().values():
            default = arg.default or '""'
            lines.append(f"  {arg.name}:={default}  {arg.description}")
    lines.append("Lists are written a,b or [a, b].")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    serve_parser = sub.add_parser(
        "serve", help="start the bench like bench.launch.py (--config arm: the arm, like "
        "arm.launch.py)", epilog=_arguments_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    serve_parser.add_argument("--config", default="bench",
                              help=f"composition: {', '.join(LAUNCH_FILES)} (default bench)")
    serve_parser.add_argument("arguments", nargs="*", metavar="name:=value")
    session_parser = sub.add_parser("session", help="record, fit and report (main job)")
    session_parser.add_argument("--config", type=Path, default=None,
                                help="session YAML (default: config/session.yaml of the "
                                "installed bam_bringup)")
    session_parser.add_argument("--output-dir", type=Path, default=Path("out/bench"))
    session_parser.add_argument("--namespace", default="",
                                help="run the session's bench in this namespace (e.g. bench1)")
    session_parser.add_argument("--ideal", action="store_true",
                                help="the noiseless bench: no encoder step, noise, read "
                                "latency or supply sag (the session's sensor off)")
    session_parser.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    """0, 2 with one line for bad input, or 128 + the signal that stopped it.

    A signal only requests the stop, checked between steps: the bench shuts down in
    order, and the session's fit keeps the best it found.
    """
    args = build_parser().parse_args(argv)

    def claimed(cancel: Cancellation) -> str:
        with claimed_outputs():  # its outputs are its own until it ends (output_paths)
            return _run(args, cancel)

    return run_command("bench", claimed)


def _run(args: argparse.Namespace, cancel: Cancellation) -> str:
    if args.command == "serve":
        return serve(_launch_values(args.arguments), args.config, cancel)
    # the default: the session of make run, the main job
    config = getattr(args, "config", None) or session_config()
    output = getattr(args, "output_dir", Path("out/bench"))
    session = load_session(config)
    if getattr(args, "ideal", False):
        session = ideal_session(session)
    return run_session(session, output, getattr(args, "quiet", False),
                       namespace(getattr(args, "namespace", "")), cancel)


if __name__ == "__main__":
    sys.exit(main())
