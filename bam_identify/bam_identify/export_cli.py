"""The ``export`` executable (``ros2 run bam_identify export``): an identified set in the
format an RL stack reads.

Example::

    ros2 run bam_identify export fitted.yaml --format bam-json --output model.json

``bam-json`` is the legacy BAM JSON parameter file that ``bam.model.load_model``
reads, and through it Isaac Lab's ``BamActuatorCfg`` and mjlab's BAM actuator
(:func:`bam_sim.models.legacy.parameters_to_json`). Bad input (a missing or invalid
file, a set the format cannot hold, an existing output without ``--force``) ends the
command with one line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bam_identify.cli import _main
from bam_sim.common.arguments import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_writable
from bam_sim.models.legacy import parameters_to_json
from bam_sim.models.parameter_file import load, write_atomic

FORMATS = {"bam-json": parameters_to_json}


def export_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="export", description="Write an identified parameter set (YAML, or legacy "
        "JSON) in a format RL stacks read: bam-json is the BAM JSON parameter file of "
        "bam.model.load_model, Isaac Lab's BamActuatorCfg and mjlab's BAM actuator.")
    parser.add_argument("params", type=Path, help="the parameter file, e.g. written by fit")
    parser.add_argument("--format", choices=tuple(FORMATS), default="bam-json",
                        help="output format (default: bam-json)")
    parser.add_argument("--output", type=Path, required=True, help="the file to write")
    parser.add_argument("--force", action="store_true", help="overwrite --output")
    return parser


def run_export(args: argparse.Namespace) -> str:
    if args.output.exists() and not args.force:
        raise BamError(f"{args.output} already exists; choose another --output or pass --force")
    if args.output.resolve() == args.params.resolve():
        raise BamError(f"--output {args.output} is the input file; choose another path")
    check_writable(args.output, "--output")
    params = load(args.params)
    text = FORMATS[args.format](params)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.output, text)
    return f"wrote {args.output} ({params.actuator} {params.model}, {args.format})"


def export_main(argv: list[str] | None = None) -> int:
    return _main(export_parser(), run_export, argv)
