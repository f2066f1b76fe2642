"""Compile every numba kernel the executables call, into numba's on-disk cache.

The workspace's build runs this once (``python3 -m bam_sim.precompile``, also after a
``colcon build`` of a ROS install), so that no command compiles in its main path: a fit, a
node or a simulation on a fresh build loads its kernels from the cache in a second,
compiled for this machine's CPU, instead of compiling them for minutes.

numba compiles a kernel once per tuple of argument types, and the kernels' types do not
depend on the model, the actuator or the data: models and families are ints, parameters
and logs float64 C arrays, flags bools. So one call of each entry point that Python code
calls compiles it for every use: the single and batched rollouts on each of their paths
(SIMD lanes, lanes with latency, the elasto-plastic lanes and their validity check, the
DC-motor lanes, the general kernel), the bench stepper of the pendulum node, the monitor
and the emulators (with and without the DC-motor model), the MuJoCo arm's servo update and
its steps (one, and a robot recording's rollout), the drive/backdrive diagram and the fit
report's elasto-plastic joint. Kernels a call compiles inside another (``_pair``,
``_last_entry``, the models' functions) are cached with it. A test runs fits on the
build (M1..M6, latency, elasto-plastic) and asserts that nothing compiles.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from multiprocessing import get_context

import numpy as np

from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_errors, rollout
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import command_log
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet

# A set through the DC-motor model: the thermal group on a published M1 (MX-64, 25 °C).
THERMAL = {"thermal.resistance": 5.0, "thermal.capacitance": 1.0, "thermal.tempcoef": 0.0039,
           "thermal.reftemp": 25.0, "thermal.ambient": 25.0}
LATENCY = {"latency.command": 0.01, "latency.reading": 0.005}


def _m1() -> ParameterSet:
    return published_named("mx64", "m1")


def _logs(n: int = 2) -> list[BenchLog]:
    """``n`` short MX-64 bench logs with every recording a kernel reads (made up: only the
    arrays' types matter to the compiler, and no kernel is needed to make them)."""
    act = _m1().actuator
    bench = Bench(mass=act.masses[0], length=act.lengths[0])
    logs = []
    for kp in act.gains[:n]:
        log = command_log("lift_drop", bench, float(kp), duration=0.2)
        zeros = np.zeros(len(log))
        logs.append(replace(log, position=log.goal.copy(), velocity=zeros, control=zeros,
                            temperature=zeros + 25.0, input_voltage=zeros + 12.0))
    return logs


def _batch(params: ParameterSet, voltage: bool = False) -> None:
    """One batched call: the rollouts and the scores run the same kernel with the same
    types, so one compiles both. With ``voltage`` the general kernel (the lanes score no
    input voltage), else the lanes the set selects: one kernel per job, none twice."""
    logs = _logs()
    batch = LogBatch.pack(logs, params.actuator)
    population = np.stack([params.vector(), params.vector()])
    batch_errors(params.model, population, batch, voltage=voltage)


def _elastoplastic() -> ParameterSet:
    """An ``ep_stribeck`` set: the published M2's motor, the registry's friction defaults
    (only the types matter; the set passes the validity check its kernel runs first)."""
    m2 = published_named("mx64", "m2")
    model = get_model("ep_stribeck")
    values = {**model.defaults(m2.actuator.scales),
              **{name: m2.values[name] for name in m2.actuator.motor_bounds}}
    return ParameterSet.build(m2.actuator, model, values, {"source": "bam_sim.precompile"})


def _elastoplastic_joint() -> None:
    """The fit report's pre-sliding curve: the 1-DOF elasto-plastic joint."""
    from bam_sim.models.elastoplastic.model import ElastoPlasticParams, simulate_joint
    from bam_sim.models.elastoplastic.validity import ep_form

    params = _elastoplastic()
    ep = ElastoPlasticParams.from_vector(ep_form(params.model), params.vector(), 0.0)
    simulate_joint(ep, 0.005, 0.05, np.zeros(3))


def _single() -> None:
    log = _logs(1)[0]
    rollout(_m1(), log)
    rollout(_m1(), log, replay=True)


def _steppers() -> None:
    m1 = _m1()
    bench = Bench(mass=m1.actuator.masses[0], length=m1.actuator.lengths[0])
    for params in (m1, m1.replace(**THERMAL)):  # step_any, step_motor
        BenchStepper(params, bench, 0.001).tick()


def _arm() -> None:
    from bam_sim.mujoco_arm import mujoco_warnings  # its C hook, compiled at import
    from bam_sim.mujoco_arm.shipped_arms import load_arm

    arm = load_arm("dynamixel")
    arm.step(1)
    arm.state()
    n = arm.n_joints  # a robot fit's rollout: one kernel call per recording
    with mujoco_warnings.silenced():
        arm.follow(np.zeros((1, n)), np.ones((1, n), dtype=bool), np.ones(1, dtype=np.int64))


def _diagram() -> None:
    from bam_sim.models.diagram import drive_backdrive

    drive_backdrive(published_named("mx64", "m4"), np.linspace(-1.0, 1.0, 3))


# Each entry compiles one kernel (and what it calls), in a process of its own: they compile
# side by side, one per core, the longest first.
WORK: dict[str, Callable[[], None]] = {
    # one process: both call the per-log loop, compiled once for the two
    "general kernel and single rollout": lambda: (_batch(_m1(), voltage=True), _single()),
    # measured: 43 s of a first ep_* fit's compiling, when it was missing here
    "elasto-plastic lanes and joint": lambda: (_batch(_elastoplastic()),
                                               _elastoplastic_joint()),
    "SIMD lanes": lambda: _batch(_m1()),
    "lanes with latency": lambda: _batch(published_named("mx64", "m6").replace(**LATENCY)),
    "DC-motor lanes": lambda: _batch(_m1().replace(**THERMAL)),
    "bench stepper": _steppers,
    "MuJoCo arm": _arm,
    "drive/backdrive diagram": _diagram,
}


def _run(name: str) -> tuple[str, float]:
    start = time.monotonic()
    WORK[name]()
    return name, time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    processes = max(1, len(os.sched_getaffinity(0)))
    # spawn: a worker starts from nothing, not from a fork of numba's threads
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        for done in as_completed([pool.submit(_run, name) for name in WORK]):
            name, seconds = done.result()
            print(f"precompile: {name} ready ({seconds:.1f} s)", flush=True)
    print(f"precompile: every kernel in numba's cache ({time.monotonic() - began:.0f} s on "
          f"{processes} cores)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
