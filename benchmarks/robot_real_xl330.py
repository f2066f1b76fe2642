"""Real XL330 logs through the robot path: the bench read as a one-joint robot.

Data: the BAM authors' XL330 logs (``../shared/data/real/xl330/``, one 0.49 kg, 0.1 m
pendulum, 6 s at 200 Hz). Trained on the kp 100 logs, validated on the kp 200 logs, with
the same recipe (model, trials, seed, no optional group, a richer model started from
the best nested one as ``fit`` does) two ways:

* **bench**: ``identify`` on the bench logs (numba pendulum, Algorithm 1);
* **robot**: the robot fit (:mod:`bam_identify.robot`) on the same logs read as the
  one-joint robot (:func:`bam_identify.robot.bench.bench_robot`: the bench's MJCF,
  MuJoCo's Euler step, the servo law every step), its offset the joint's.

Each set is scored by its own path on the held-out logs (pooled position MAE). Target
(issue 37): the robot path's validation MAE within 5 % of the bench fit's.

Run: ``tools/workspace.sh exec python benchmarks/robot_real_xl330.py [--trials N]``;
writes ``benchmarks/results/robot_real_xl330.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from provenance import environment, write_result

from bam_identify.data.legacy_logs import legacy_log_files, read_legacy_log
from bam_identify.fitting.fit import FitSettings, identify, run_search
from bam_identify.fitting.objective import Objective
from bam_identify.fitting.space import SearchSpace, best_nested, nested_start
from bam_identify.robot.bench import bench_robot
from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import RobotSpace
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "real" / "xl330"
TARGET = 1.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=["m1", "m4"])
    args = parser.parse_args()
    logs = [read_legacy_log(p) for p in legacy_log_files(DATA)]
    train = [log for log in logs if log.kp == 100.0]
    validation = [log for log in logs if log.kp == 200.0]
    actuator = get_actuator("xl330")
    model, joints, train_recs = bench_robot(train, actuator)
    _, _, val_recs = bench_robot(validation, actuator)
    rows: dict[str, dict] = {}
    for name in args.models:
        mdl = get_model(name)
        # The fit's recipe on both paths: a richer model starts from the best nested one.
        base = best_nested(name, {m: r["bench"]["train_mae"] for m, r in rows.items()})
        robot_base = best_nested(name, {m: r["robot"]["train_mae"] for m, r in rows.items()})
        started = time.perf_counter()
        space = SearchSpace.build(actuator, mdl)
        start = None if base is None else nested_start(space, rows[base]["bench"]["values"])
        bench = identify(space, train, FitSettings(trials=args.trials, seed=args.seed,
                                                   start=start), check_logs=validation)
        bench_val = Objective(space, validation).errors(bench.values)[0]
        bench_s = time.perf_counter() - started
        started = time.perf_counter()
        robot_space = RobotSpace.build(joints.with_model(mdl), {})
        objective = RobotObjective(robot_space, model, train_recs)
        start = None if robot_base is None else robot_space.nested_start(
            rows[robot_base]["robot"]["values"])
        robot = run_search(robot_space, objective, FitSettings(trials=args.trials,
                                                               seed=args.seed, start=start),
                           {"data": objective.fingerprint()}, True)
        vectors = robot_space.population_of([robot.values])[0]
        robot_val = float(RobotObjective(robot_space, model, val_recs).per_joint(vectors).mean())
        robot_s = time.perf_counter() - started
        rows[name] = {"bench": {"train_mae": bench.train_mae, "validation_mae": bench_val,
                                "seconds": bench_s, "values": bench.values,
                                "started_from": base},
                      "robot": {"train_mae": robot.train_mae, "validation_mae": robot_val,
                                "seconds": robot_s, "values": robot.values,
                                "started_from": robot_base},
                      "ratio": robot_val / bench_val, "met": robot_val <= TARGET * bench_val}
        print(f"{name}: bench {bench_val:.4g} rad ({bench_s:.0f} s), robot {robot_val:.4g} rad "
              f"({robot_s:.0f} s), ratio {robot_val / bench_val:.3f}")
    doc = {"benchmark": "robot_real_xl330", "target_ratio": TARGET, "train_kp": 100,
           "validation_kp": 200, "train_logs": [log.name for log in train],
           "validation_logs": [log.name for log in validation], "settings": vars(args),
           "results": rows, "environment": environment()}
    write_result(HERE / "results" / "robot_real_xl330.json", doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
