"""Synthetic bench logs for the bam_identify tests (simulated with the published sets)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from bam_identify.data.bag_writer import BagSession, BagTrial
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.servo.actuators import get_actuator

MX64_BENCH = Bench(mass=1.0, length=0.15, arm_mass=0.1)
EROB_BENCH = Bench(mass=3.1, length=0.5, arm_mass=0.5)


def simulated(actuator: str, trajectory: str, bench: Bench, kp: float, dt: float = 0.005,
              duration: float = 1.5, model: str = "m4", **conditions) -> tuple[BenchLog,
                                                                                 np.ndarray]:
    """(log with the simulated position, velocity and control; motor torque)."""
    commands = replace(command_log(trajectory, bench, kp, dt, duration), **conditions)
    run = rollout(published_named(actuator, model), commands)
    log = replace(commands, position=run.position, velocity=run.velocity, control=run.control,
                  name=f"{actuator}-{trajectory}-{kp:g}")
    return log, run.motor_torque


def mx64_session(supply_voltage: float = 14.8, dt: float = 0.005, duration: float = 1.5,
                 first_id: int = 1) -> BagSession:
    """Two MX-64 runs (lift_drop kp 8, steps kp 16) on one bench, with a measured supply."""
    trials = []
    for i, (trajectory, kp) in enumerate((("lift_drop", 8.0), ("steps", 16.0))):
        log, torque = simulated("mx64", trajectory, MX64_BENCH, kp, dt, duration,
                                supply_voltage=supply_voltage)
        trials.append(BagTrial(log, trajectory, kp, first_id + i, 0, motor_torque=torque))
    return BagSession(get_actuator("mx64"), trials, joint_name="pendulum", source="sim", model="m4")


def erob_session(damping: float = 1.5, duration: float = 1.5, first_id: int = 10) -> BagSession:
    """One eRob80:100 run with a host damping factor other than the default."""
    log, torque = simulated("erob80_100", "raise_lower", EROB_BENCH, 25.0, duration=duration,
                            damping=damping)
    return BagSession(get_actuator("erob80_100"), [BagTrial(log, "raise_lower", 25.0, first_id, 2,
                                              motor_torque=torque)],
                      joint_name="erob", source="hardware")


def write_m1_logs(folder: Path) -> Path:
    """Four short MX-64 runs of the published M1 set as JSON logs in ``folder`` (a quick
    fit's data, for the tests that stop or resume one)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, log in enumerate(paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, seed=8)):
        write_legacy_log(folder / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    return folder


def run(main, args, capsys) -> tuple[int, str, str]:
    """An executable's ``main`` on ``args`` (str() each): its exit code, stdout and stderr
    (argparse's own refusals exit through SystemExit: its code)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
