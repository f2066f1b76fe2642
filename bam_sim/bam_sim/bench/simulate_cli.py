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
from bam_sim.common.arguments import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_writable
from bam_sim.models.actuators import ACTUATORS, get_actuator
from bam_sim.models.model_registry import MODELS
from bam_sim.models.parameter_file import load, published
from bam_sim.models.parameter_set import ParameterSet


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="simulate", description="Simulate the pendulum bench with M1 and a chosen model.")
    parser.add_argument("--actuator", default="mx64", choices=sorted(ACTUATORS))
    parser.add_argument("--model", default="m4", choices=sorted(MODELS),
                        help="model compared to M1 (published set unless --params; the "
                        "dcmotor actuator and the ep_*/lugre models need --params)")
    parser.add_argument("--params", type=Path, help="parameter file (YAML or legacy JSON)")
    parser.add_argument("--trajectory", default="lift_drop", choices=sorted(TRAJECTORIES))
    parser.add_argument("--kp", type=float, help="servo gain (default: a Table I gain)")
    parser.add_argument("--mass", type=float, help="point mass, kg (default: a Table I mass)")
    parser.add_argument("--length", type=float, help="pendulum length, m (default: Table I)")
    parser.add_argument("--arm-mass", type=float, default=0.0, help="rod mass, kg")
    parser.add_argument("--dt", type=float, default=0.005, help="time step, s")
    parser.add_argument("--output", type=Path, help="PNG path (default: out/simulate_*.png)")
    parser.add_argument("--diagram", type=Path, help="also draw the drive/backdrive diagram")
    parser.add_argument("--force", action="store_true", help="overwrite existing figures")
    return parser


def _check_writable(paths: list[Path | None], force: bool) -> None:
    for path in paths:
        if path is not None and path.exists() and not force:
            raise BamError(f"{path} already exists; pass --force to overwrite it")
        if path is not None:
            check_writable(path, "the figure")


def run(args: argparse.Namespace) -> str:
    actuator = get_actuator(args.actuator)
    chosen = load(args.params) if args.params else published(actuator.name, args.model)
    if chosen.actuator != actuator.name:
        raise BamError(f"{args.params} is for actuator {chosen.actuator}, not {actuator.name}; "
                       f"pass --actuator {chosen.actuator}")
    baseline = _baseline(actuator.name)
    bench = Bench(mass=args.mass if args.mass is not None else actuator.masses[1],
                  length=args.length if args.length is not None else actuator.lengths[-1],
                  arm_mass=args.arm_mass)
    kp = args.kp if args.kp is not None else actuator.gains[1]
    output = args.output or Path(
        f"out/simulate_{actuator.name}_{chosen.model}_{args.trajectory}.png")
    _check_writable([output, args.diagram], args.force)

    log = command_log(args.trajectory, bench, kp, args.dt)
    label = _label(chosen)
    runs = {} if baseline is None else {"m1": rollout(baseline, log)}
    runs[label] = rollout(chosen, log)
    _plot(output, log, runs, f"{actuator.title}, {args.trajectory}, kp={kp:g}, "
          f"m={bench.mass:g} kg, l={bench.length:g} m")
    lines = [f"wrote {output}"]
    if args.diagram:
        from bam_sim.models.diagram import plot_diagram

        sets = [chosen] if baseline is None else [baseline, chosen]
        plot_diagram(sets, args.diagram, title=f"{actuator.title}: drive/backdrive")
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


def _baseline(actuator: str) -> ParameterSet | None:
    """The published M1 set drawn beside the chosen one (None: the actuator has none)."""
    try:
        return published(actuator, "m1")
    except BamError:
        return None


def _label(params: ParameterSet) -> str:
    """The model's name, with the DC-motor groups the set carries."""
    return "+".join((params.model, *params.groups))


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
    args = build_parser().parse_args(argv)
    try:
        print(run(args))
    except BamError as exc:
        print(f"simulate: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
