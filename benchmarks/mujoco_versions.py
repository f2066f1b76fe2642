"""The same identified set in both dcmotor conventions: MuJoCo 3.11 against MuJoCo 4.

Workload (issue 25, item 2): each set is exported twice on its actuator's
middle pendulum bench (as ``export --format dcmotor-mjcf`` does), with
``--mujoco 3.11`` (``input="position"``, voltage-space gains) and ``--mujoco 4``
(``input="pos"``, torque-space gains). The 3.11 file runs in MuJoCo 3.11,
pip-installed by this script into its own virtual environment
(``benchmarks/.venv-mujoco311``, git-ignored; reused when present); the 4 file
in the workspace's MuJoCo. Both replay the same goals from rest: a step of
1 rad held 1.5 s, and the protocol's ``accelerated_oscillations`` trajectory
(6 s), at the bench MJCF's 1 ms step. The largest |Δq| over every step is
compared with the issue's bound, 1e-6 rad.

Sets: the three servo laws (Dynamixel MX-64 voltage law, eRob current law,
Feetech STS3215 with its gain ratio and target slew) as M1; the MX-64 with a
command latency of 12.5 ticks (the native ``delay``, interpolated); and a
DC-motor family set with every dcmotor state (slew, integral with anti-windup,
temperature, LuGre bristle, current) plus cogging.

Run: ``tools/workspace.sh exec python benchmarks/mujoco_versions.py``;
writes ``benchmarks/results/mujoco_versions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mujoco
import numpy as np
from mujoco_goal_runner import replay
from provenance import environment, write_result

from bam_sim.bench.geometry import Bench
from bam_sim.bench.trajectory import get_trajectory
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.dcmotor_export import CURRENT, PRE_312, ExportJoint, export_dcmotor
from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-mujoco311"
REQUIREMENT = "mujoco~=3.11.0"
DT = 0.001  # pendulum_mjcf's step
BOUND = 1e-6  # rad, the issue's
JOINT = "pendulum"
FAMILY = {
    "resistance": 2.0, "motorconst": 0.4, "armature": 0.01,
    "lugre.stiffness": 400.0, "lugre.damping": 0.8, "lugre.coulomb": 0.05,
    "lugre.static": 0.09, "lugre.stribeck": 0.2, "lugre.viscous": 0.03,
    "inductance.timeconst": 0.002, "saturation.torque": 3.0,
    "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
    "thermal.reftemp": 25.0, "thermal.ambient": 25.0,
    "cogging.amplitude": 0.01, "cogging.poles": 12.0, "cogging.phase": 0.3,
    "controller.kd": 0.2, "controller.ki": 2.0, "controller.Imax": 0.3,
    "controller.slewmax": 6.0, "controller.Vmax": 14.0,
}


def parameter_sets() -> dict[str, tuple[ParameterSet, float | None]]:
    """Each set the benchmark exports, with its servo gain (None: the default)."""
    return {
        "mx64_m1": (published_named("mx64", "m1"), 32.0),
        "erob80_50_m1": (published_named("erob80_50", "m1"), None),
        "sts3215_m1": (published_named("sts3215", "m1"), None),
        "mx64_m1_latency_12.5_ticks": (
            published_named("mx64", "m1").replace(**{"latency.command": 12.5 * DT}), 32.0),
        "dcmotor_lugre_all_states": (ParameterSet.from_names("dcmotor", "lugre", FAMILY), 6.0),
    }


def goal_paths() -> dict[str, np.ndarray]:
    step = np.full(1501, 1.0)
    step[0] = 0.0
    protocol, _ = get_trajectory("accelerated_oscillations").sample(DT, None)
    return {"step": step, "accelerated_oscillations": np.asarray(protocol, dtype=float)}


def mujoco311_python() -> Path:
    """The MuJoCo 3.11 environment's interpreter, made on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    probe = [str(python), "-c", "import mujoco; print(mujoco.__version__)"]
    found = subprocess.run(probe, env=_bare_env(), capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.startswith("3.11."):
        subprocess.run([str(python), "-m", "pip", "install", "-q", REQUIREMENT, "numpy"],
                       env=_bare_env(), check=True)
    return python


def _bare_env() -> dict[str, str]:
    """The environment without the workspace's Python paths (its MuJoCo is 4)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def export_cases() -> tuple[dict[str, list[dict]], dict[str, dict]]:
    """Per version, the runner's cases (every set × goal path); per set, what it is."""
    cases: dict[str, list[dict]] = {PRE_312: [], CURRENT: []}
    about = {}
    for name, (params, gain) in parameter_sets().items():
        act = params.actuator
        bench = Bench(act.masses[len(act.masses) // 2], act.lengths[len(act.lengths) // 2])
        mjcf = pendulum_mjcf(bench, timestep=DT, joint=JOINT)
        joint = ExportJoint(JOINT, params, gain)
        exports = {v: export_dcmotor(mjcf, [joint], mujoco_version=v) for v in cases}
        settings = exports[CURRENT].settings[0]
        about[name] = {"actuator": params.actuator.name, "model": params.model.name,
                       "kp_torque": settings.kp, "kd_torque": settings.kd,
                       "delay_s": settings.delay}
        for path, goals in goal_paths().items():
            for version, export in exports.items():
                cases[version].append({"name": f"{name}/{path}", "xml": export.xml,
                                       "goals": goals.tolist(), "q0": 0.0,
                                       "slew": settings.slewmax > 0.0})
    return cases, about


def run_311(python: Path, cases: list[dict], folder: Path) -> tuple[str, dict[str, np.ndarray]]:
    job, out = folder / "job.json", folder / "out.npz"
    job.write_text(json.dumps(cases), encoding="utf-8")
    subprocess.run([str(python), str(HERE / "mujoco_goal_runner.py"), str(job), str(out)],
                   env=_bare_env(), check=True)
    with np.load(out) as found:
        return str(found["version"]), {c["name"]: found[c["name"]] for c in cases}


def run_4(cases: list[dict]) -> dict[str, np.ndarray]:
    return {c["name"]: replay(c["xml"], np.asarray(c["goals"]), c["q0"], c["slew"])
            for c in cases}


def compare(old: dict[str, np.ndarray], new: dict[str, np.ndarray]) -> dict[str, dict]:
    return {name: {"max_abs_dq_rad": float(np.abs(old[name] - new[name]).max()),
                   "range_rad": float(np.ptp(new[name])), "steps": int(new[name].size)}
            for name in new}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=HERE / "results" / "mujoco_versions.json")
    args = parser.parse_args()
    python = mujoco311_python()
    cases, about = export_cases()
    with tempfile.TemporaryDirectory() as folder:
        old_version, old = run_311(python, cases[PRE_312], Path(folder))
    rows = compare(old, run_4(cases[CURRENT]))
    worst = max(row["max_abs_dq_rad"] for row in rows.values())
    for name, row in rows.items():
        print(f"{name:55s} max |Δq| = {row['max_abs_dq_rad']:.3e} rad "
              f"(range {row['range_rad']:.3f} rad)")
    print(f"worst {worst:.3e} rad, bound {BOUND:g}: {'holds' if worst <= BOUND else 'FAILS'}")
    write_result(args.output, {
        "benchmark": "mujoco_versions", "issue": 25,
        "mujoco": {"3.11 file": old_version, "4 file": mujoco.__version__},
        "dt_s": DT, "bound_rad": BOUND, "worst_max_abs_dq_rad": worst,
        "holds": worst <= BOUND, "sets": about, "cases": rows,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
