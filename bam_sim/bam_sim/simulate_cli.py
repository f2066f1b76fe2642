"""``simulate``: run one bench trajectory with M1 and a chosen model, plot both.

Example::

    ros2 run bam_sim simulate --actuator mx64 --model m4 --trajectory lift_drop

writes a PNG of position versus time for the Coulomb-viscous model M1 and the
chosen model (published parameters, or ``--params FILE``), with the motor
torque below, and optionally the drive/backdrive diagram of both models. A set
through MuJoCo's DC-motor model (the dcmotor actuator, LuGre, the thermal and
other groups) also gets its winding temperature drawn and reported; the
dcmotor actuator has no published M1 to compare with, so it is drawn alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import Rollout, rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.command_line import ArgumentParser, add_actuator_files
from bam_sim.common.entry_point import run_command
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import option
from bam_sim.common.output_paths import check_output, claimed_outputs, output_file
from bam_sim.models.files.parameter_file import load, published
from bam_sim.models.model_registry import FRICTION_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuator_file import load_actuator_file
from bam_sim.models.servo.actuators import ACTUATORS, get_actuator

# Physically plausible benches (Table I spans 0.05..19.6 kg, 0.05..0.5 m) and steps: the
# explicit step of the servo loop is unstable far above a few ms, and below 0.1 ms a
# 6 s trajectory would need memory for nothing (at most 60 001 steps here).
KP = option(low=0.0, high=1.0e4, low_open=True)  # each actuator's gain_limit applies too
MASS = option(low=0.0, high=100.0, low_open=True)
LENGTH = option(low=0.0, high=5.0, low_open=True)
ARM_MASS = option(low=0.0, high=100.0)
DT = option(low=1.0e-4, high=0.05)
FIGURES = (".png", ".pdf", ".svg")  # what the figures are written as (matplotlib)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="simulate", description="Simulate the pendulum bench with M1 and a chosen model.")
    parser.add_argument("--actuator", help=f"the servo: {', '.join(ACTUATORS)}, or one of "
                        "--actuator-file (default: the file's, else mx64)")
    add_actuator_files(parser)
    parser.add_argument("--model", default="m4", choices=sorted(FRICTION_MODELS),
                        help="model compared to M1 (published set unless --params; the "
                        "dcmotor actuator and the ep_*/lugre models need --params)")
    parser.add_argument("--params", type=Path, help="parameter file (YAML or legacy JSON)")
    parser.add_argument("--trajectory", default="lift_drop", choices=sorted(TRAJECTORIES))
    parser.add_argument("--kp", type=KP, help="servo gain (default: a Table I gain)")
    parser.add_argument("--mass", type=MASS, help="point mass, kg (default: a Table I mass)")
    parser.add_argument("--length", type=LENGTH, help="pendulum length, m (default: Table I)")
    parser.add_argument("--arm-mass", type=ARM_MASS, default=0.0, help="rod mass, kg")
    parser.add_argument("--dt", type=DT, default=0.005, help="time step, s (0.0001..0.05)")
    parser.add_argument("--output", type=Path, help="PNG path (default: out/simulate_*.png)")
    parser.add_argument("--diagram", type=Path, help="also draw the drive/backdrive diagram")
    parser.add_argument("--force", action="store_true", help="overwrite existing figures")
    return parser


def _check_outputs(args: argparse.Namespace, output: Path) -> None:
    """Both figures writable, neither the parameter file read, nor the same file twice."""
    inputs = [("--params", args.params)] if args.params else []
    check_output(output, "--output", force=args.force, inputs=inputs, suffixes=FIGURES)
    if args.diagram is not None:
        check_output(args.diagram, "--diagram", force=args.force,
                     inputs=[*inputs, ("--output", output)], suffixes=FIGURES)


def _declared_name(files: list[Path]) -> str | None:
    """The actuator of the only --actuator-file (already declared as it was parsed)."""
    if len(files) != 1:
        return None
    return load_actuator_file(files[0]).name


def _check_gain(kp: float, actuator) -> None:
    if actuator.gain_limit > 0.0 and kp > actuator.gain_limit:
        raise BamError(f"--kp {kp:g} is above the largest gain {actuator.gain_limit:g} the "
                       f"{actuator.name} accepts; give a gain in (0, {actuator.gain_limit:g}]")


def _check_rollout(name: str, run: Rollout, log, kp: float, dt: float) -> None:
    """A rollout that blew up is no model to compare: non-finite, or turned further from
    every goal than a full revolution (a dropped pendulum swings, it does not spin)."""
    position = np.asarray(run.position)
    reach = float(np.max(np.abs(log.goal))) + 2.0 * np.pi
    if not np.all(np.isfinite(position)) or not np.all(np.isfinite(run.motor_torque)) \
            or float(np.max(np.abs(position))) > reach:
        worst = float(np.nanmax(np.abs(np.where(np.isfinite(position), position, np.inf))))
        raise BamError(f"the {name} rollout diverged (|q| up to {worst:.3g} rad) at kp={kp:g}, "
                       f"dt={dt:g} s: the step is unstable there; use a smaller --dt or a "
                       "lower --kp")


def run(args: argparse.Namespace, cancel: Cancellation | None = None) -> str:
    """The figures of ``args``; ``cancel`` is checked before each rollout and figure."""
    cancel = cancel or Cancellation()
    named = args.actuator or (_declared_name(args.actuator_files) or "mx64")
    actuator = get_actuator(named)
    chosen = load(args.params) if args.params else published(actuator, get_model(args.model))
    if chosen.actuator.name != actuator.name:
        raise BamError(f"{args.params} is for actuator {chosen.actuator.name}, not "
                       f"{actuator.name}; pass --actuator {chosen.actuator.name}")
    baseline = _baseline(actuator)
    bench = Bench(mass=args.mass if args.mass is not None else actuator.masses[1],
                  length=args.length if args.length is not None else actuator.lengths[-1],
                  arm_mass=args.arm_mass)
    kp = args.kp if args.kp is not None else actuator.gains[1]
    _check_gain(kp, actuator)
    output = args.output or Path(
        f"out/simulate_{actuator.name}_{chosen.model.name}_{args.trajectory}.png")
    _check_outputs(args, output)

    log = command_log(args.trajectory, bench, kp, args.dt)
    label = _label(chosen)
    runs = {}
    for name, params in ([] if baseline is None else [("m1", baseline)]) + [(label, chosen)]:
        cancel.check()
        runs[name] = rollout(params, log)
        _check_rollout(name, runs[name], log, kp, args.dt)
    cancel.check()
    with output_file(output, "--output", args.force) as tmp:  # no-replace (output_paths)
        _plot(tmp, log, runs, f"{actuator.title}, {args.trajectory}, kp={kp:g}, "
              f"m={bench.mass:g} kg, l={bench.length:g} m")
    lines = [f"wrote {output}"]
    if args.diagram:
        from bam_sim.models.diagram import plot_diagram

        if cancel.is_set():
            raise Cancelled(written=[output])
        sets = [chosen] if baseline is None else [baseline, chosen]
        try:
            with output_file(args.diagram, "--diagram", args.force) as tmp:
                plot_diagram(sets, tmp, title=f"{actuator.title}: drive/backdrive")
        except BamError as exc:  # a full disk: the figure written is named
            raise BamError(f"{one_line(exc)}; {output} is written") from None
        lines.append(f"wrote {args.diagram}")
    if baseline is not None:
        gap = np.abs(runs["m1"].position - runs[label].position)
        lines.append(f"{label} vs m1: mean |Δq| = {gap.mean():.4f} rad, "
                     f"max |Δq| = {gap.max():.4f} rad over {log.time[-1]:.2f} s")
    run = runs[label]
    if np.isfinite(run.temperature).any():
        lines.append(f"{label}: winding temperature {run.temperature[0]:.2f} → "
                     f"{run.temperature[-1]:.2f} °C, peak |current| "
                     f"{np.nanmax(np.abs(run.current)):.3f} A")
    elif np.isfinite(run.current).any():
        lines.append(f"{label}: peak |current| {np.nanmax(np.abs(run.current)):.3f} A")
    return "\n".join(lines)


def _baseline(actuator: Actuator) -> ParameterSet | None:
    """The published M1 set drawn beside the chosen one (None: the actuator has none)."""
    try:
        return published(actuator, get_model("m1"))
    except BamError:
        return None


def _label(params: ParameterSet) -> str:
    """The model's name, with the DC-motor groups the set carries."""
    return "+".join((params.model.name, *params.groups))


def _plot(path: Path, log, runs: dict[str, Rollout], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heated = {n: r for n, r in runs.items() if np.isfinite(r.temperature).any()}
    ratios = [2, 1, 1] if heated else [2, 1]
    fig, axes = plt.subplots(len(ratios), 1, figsize=(9, 6 + 2 * bool(heated)), sharex=True,
                             gridspec_kw={"height_ratios": ratios})
    top, bottom = axes[0], axes[1]
    t = log.time
    off = ~log.enabled
    for ax in axes:
        if off.any():
            ax.fill_between(t, 0, 1, where=off, transform=ax.get_xaxis_transform(),
                            color="0.85", lw=0, label="torque off" if ax is top else None)
    top.plot(t, log.goal, "k--", lw=1, label="goal")
    for name, run in runs.items():
        top.plot(t, run.position, lw=1.5, label=name.upper())
        bottom.plot(t, run.motor_torque, lw=1, label=name.upper())
    for name, run in heated.items():
        axes[2].plot(t, run.temperature, lw=1, label=name.upper())
    if heated:
        axes[2].set_ylabel("winding temperature [°C]")
    top.set_ylabel("position q [rad]")
    bottom.set_ylabel(r"motor torque $\tau_m$ [N·m]")
    axes[-1].set_xlabel("time [s]")
    top.set_title(title, fontsize=10)
    top.legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """0, 2 with one line for bad input, 128 + signal on Ctrl-C or SIGTERM."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: --help (0) or one line on a bad option (2)
        return int(exit_.code or 0)

    def claimed(cancel: Cancellation) -> str:
        with claimed_outputs():  # its outputs are its own until it ends (output_paths)
            return run(args, cancel)

    return run_command("simulate", claimed)


if __name__ == "__main__":
    sys.exit(main())
