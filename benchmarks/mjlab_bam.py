"""Our BAM JSON export in mjlab: BAM's ``BamActuatorCfg`` steps the exported sets in
MuJoCo Warp, beside our simulator, on a step command.

Workload (issue 25, item 5): published sets are written with ``bam_identify export
--format bam-json``'s writer (:func:`bam_sim.models.files.bam_json.parameters_to_json`)
and given to mjlab 1.6 through BAM's mjlab integration (``bam/mjlab.py`` of
``better-actuator-models`` 1.0.2, PyPI's latest: ``BamActuatorCfg``, ``BamActuator``
and the ``Simulator`` that builds one mjlab pendulum scene per log on BAM's MuJoCo
pendulum and steps it with ``mjlab.sim.Simulation``). Each set is driven from rest by
a step of a seeded amplitude (0.5 to 1.5 rad, either sign) held for 2 s at 5 ms, on
its actuator's three bench masses at the middle length, with the file's ``kp`` and
``vin`` (passed as ``kp_fw``/``vin``: BAM 1.0.2's ``load_model`` reads neither from the
file, see ``read_back`` in the result). The same file and logs are also rolled out by
BAM's own CPU simulator (``bam.simulate``), and by ours (:func:`bam_sim.bench.rollouts.
rollout`). Reported per set: the largest |Δq| of mjlab against ours and against BAM's
CPU simulator, BAM's CPU simulator against ours, the final tracking error of each,
and the seconds mjlab took; or, where mjlab did not run, the error that stopped it
(type, message, file:line).

mjlab differs from the two CPU simulators by design: it runs in float32 on MuJoCo Warp,
and BAM's actuator puts the friction budget into MuJoCo's ``dof_frictionloss``/
``dof_damping`` (a soft constraint, stiffened, since MuJoCo Warp has no noslip solver)
instead of Algorithm 1's exact stiction; so the figures are agreements, not identities.
BAM's actuator only runs voltage-law servos (it raises NotImplementedError for
others): the eRob set is there to record that refusal.

The stack lives in its own virtual environment (``benchmarks/.venv-mjlab``,
git-ignored, made with this interpreter on first use and reused when its versions
match): ``mjlab==1.6.0`` from PyPI with what it pins (MuJoCo 3.11, MuJoCo Warp, Warp,
torch), then ``better-actuator-models==1.0.2`` with ``--no-deps
--ignore-requires-python`` as setup_reference.sh installs it (it declares Python 3.12;
it runs on 3.11). ``--device`` is Warp's and torch's device: ``cpu`` (default) or
``cuda:0`` on a machine with a GPU. The mjlab side runs in
benchmarks/mjlab_bam_runner.py.

Run: ``tools/workspace.sh exec python benchmarks/mjlab_bam.py``; writes
``benchmarks/results/mjlab_bam.json``. The first run downloads the stack (torch's CUDA
wheels included, a few GB) and compiles Warp's CPU kernels (about a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.models.files.bam_json import parameters_to_json
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-mjlab"
MJLAB = "mjlab==1.6.0"
BAM = "better-actuator-models==1.0.2"
EXTRA = ("colorama==0.4.6",)  # BAM's one runtime dependency mjlab does not bring
SETS = (("mx64", "m1"), ("mx64", "m6"), ("xl330", "m6"), ("sts3215", "m1"),
        ("erob80_50", "m1"))
DT = 0.005
STEPS = 400  # 2 s
SEED = 25


def clean_env() -> dict[str, str]:
    """The environment without the workspace's Python paths."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def mjlab_python() -> tuple[Path, str]:
    """The mjlab environment's interpreter, made on first use, and how it was made."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    want = {"mjlab": MJLAB.split("==")[1], "better-actuator-models": BAM.split("==")[1]}
    probe = ("import json; from importlib.metadata import version as v; "
             f"print(json.dumps({{n: v(n) for n in {sorted(want)!r}}}))")
    found = subprocess.run([str(python), "-c", probe], env=clean_env(), capture_output=True,
                           text=True)
    if found.returncode == 0 and json.loads(found.stdout) == want:
        return python, "reused"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, MJLAB, *EXTRA], env=clean_env(), check=True)
    subprocess.run([*pip, "--no-deps", "--ignore-requires-python", BAM], env=clean_env(),
                   check=True)
    return python, "installed"


def step_logs(params: ParameterSet, rng: np.random.Generator) -> list[BenchLog]:
    """From rest at 0, a step to ±(0.5..1.5) rad at the second tick, per bench mass."""
    act = params.actuator
    kp = json.loads(parameters_to_json(params))["kp"]
    logs = []
    for mass in act.masses:
        amplitude = float(rng.uniform(0.5, 1.5) * rng.choice((-1.0, 1.0)))
        goal = np.full(STEPS, amplitude)
        goal[0] = 0.0
        logs.append(BenchLog(bench=Bench(mass, act.lengths[len(act.lengths) // 2]), kp=kp,
                             dt=DT, goal=goal, enabled=np.ones(STEPS, dtype=bool),
                             name=f"step {amplitude:+.3f} rad, {mass} kg"))
    return logs


def reference_log(log: BenchLog, vin: float) -> dict:
    """A log as BAM's processed log dict (what both of BAM's simulators read)."""
    entries = [{"timestamp": k * log.dt, "position": 0.0, "speed": 0.0,
                "goal_position": float(g), "torque_enable": True}
               for k, g in enumerate(log.goal)]
    return {"mass": log.bench.mass, "arm_mass": log.bench.arm_mass,
            "length": log.bench.length, "kp": float(log.kp), "vin": vin, "dt": log.dt,
            "entries": entries}


def run_mjlab(python: Path, cases: list[dict], device: str, folder: Path) -> dict:
    job, out = folder / "job.json", folder / "out.json"
    job.write_text(json.dumps({"device": device, "cases": cases}), encoding="utf-8")
    subprocess.run([str(python), str(HERE / "mjlab_bam_runner.py"), str(job), str(out)],
                   env=clean_env(), check=True)
    return json.loads(out.read_text())


def largest_gap(a: list, b: list) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b,
                                                                                    strict=True))


def final_error(positions: list, logs: list[BenchLog]) -> float:
    return max(abs(float(q[-1]) - float(log.goal[-1])) for q, log in zip(positions, logs,
                                                                         strict=True))


def summarise(got: dict, ours: list, logs: list[BenchLog]) -> dict:
    row: dict = {"read_back": got["read_back"],
                 "final_error_ours_rad": final_error(ours, logs)}
    cpu, mj = got["bam_cpu"], got["mjlab"]
    if "error" in cpu:
        row["bam_cpu_error"] = cpu["error"]
    else:
        row["max_abs_dq_bam_cpu_vs_ours_rad"] = largest_gap(cpu["positions"], ours)
        row["final_error_bam_cpu_rad"] = final_error(cpu["positions"], logs)
    if "error" in mj:
        row["mjlab_ran"] = False
        row["mjlab_error"] = {k: v for k, v in mj["error"].items() if k != "traceback_tail"}
        row["mjlab_traceback_tail"] = mj["error"]["traceback_tail"]
        return row
    row["mjlab_ran"] = True
    row["max_abs_dq_mjlab_vs_ours_rad"] = largest_gap(mj["positions"], ours)
    if "error" not in cpu:
        row["max_abs_dq_mjlab_vs_bam_cpu_rad"] = largest_gap(mj["positions"], cpu["positions"])
    row["final_error_mjlab_rad"] = final_error(mj["positions"], logs)
    row["mjlab_seconds"] = mj["seconds"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="Warp/torch device (cpu, cuda:0)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "mjlab_bam.json")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    result: dict = {"benchmark": "mjlab_bam", "issue": 25, "device_asked": args.device,
                    "requirements": [MJLAB, BAM, *EXTRA], "seed": SEED, "dt_s": DT,
                    "steps": STEPS}
    try:
        python, made = mjlab_python()
    except subprocess.CalledProcessError as exc:
        result |= {"attempted": True, "ran": False,
                   "error": f"the mjlab environment could not be made: {exc}",
                   "environment": environment()}
        write_result(args.output, result)
        return
    with tempfile.TemporaryDirectory() as folder:
        cases, about, ours = [], {}, {}
        for actuator, model in SETS:
            params = published_named(actuator, model)
            name = f"{actuator}_{model}"
            path = Path(folder) / f"{name}.json"
            path.write_text(parameters_to_json(params), encoding="utf-8")
            written = json.loads(path.read_text())
            logs = step_logs(params, rng)
            ours[name] = (logs, [rollout(params, log).position for log in logs])
            cases.append({"name": name, "file": str(path),
                          "logs": [reference_log(log, written["vin"]) for log in logs]})
            about[name] = {"actuator": actuator, "model": model, "kp": written["kp"],
                           "vin": written["vin"], "logs": [log.name for log in logs],
                           "length_m": logs[0].bench.length}
        got = run_mjlab(python, cases, args.device, Path(folder))
    rows = {}
    for name, (logs, positions) in ours.items():
        rows[name] = about[name] | summarise(got["cases"][name], positions, logs)
        row = rows[name]
        if row["mjlab_ran"]:
            nan = float("nan")
            print(f"{name:14s} max |q_mjlab - q_ours| = {row['max_abs_dq_mjlab_vs_ours_rad']:.2e}"
                  f" rad, vs BAM CPU {row.get('max_abs_dq_mjlab_vs_bam_cpu_rad', nan):.2e} rad;"
                  f" BAM CPU vs ours {row.get('max_abs_dq_bam_cpu_vs_ours_rad', nan):.1e} rad;"
                  f" final error mjlab {row['final_error_mjlab_rad']:.4f}, ours "
                  f"{row['final_error_ours_rad']:.4f} rad; {row['mjlab_seconds']:.1f} s")
        else:
            error = row["mjlab_error"]
            print(f"{name:14s} mjlab did not run: {error['type']}: "
                  f"{error['message'].splitlines()[0] if error['message'] else ''} "
                  f"({error['where']})")
    ran = [r for r in rows.values() if r["mjlab_ran"]]
    result |= {
        "attempted": True, "ran": bool(ran), "venv": made,
        "stack": {"versions": got["versions"], "python": got["python"],
                  "machine": got["machine"], "platform": got["platform"],
                  "devices": got["devices"], "bam_mjlab_import": got["bam_mjlab_import"]},
        "worst_max_abs_dq_mjlab_vs_ours_rad":
            max((r["max_abs_dq_mjlab_vs_ours_rad"] for r in ran), default=None),
        "sets": rows,
        "environment": environment(),
    }
    write_result(args.output, result)


if __name__ == "__main__":
    main()
