"""Batched rollouts of the pendulum with MuJoCo's DC-motor model, against ``mujoco.rollout``.

Workload (issue 12): the pendulum bench driven by the ``dcmotor`` actuator
family (MuJoCo 4's on-board position controller) with every state enabled —
setpoint slew, PID integral, winding temperature, LuGre bristle, winding
current — and the saturation and cogging groups; 64 logs × 1200 steps at 5 ms
(the actuator's masses, lengths and gains × the torque-on protocol
trajectories, seeded) × 16 parameter sets (a base set with every entry
scattered by seeded ±10 %, each with a stable LuGre stick at the step).

Measured in the same process, in turns:

* ours: one ``batch_rollout`` call (positions of every set × log);
* MuJoCo: one ``mujoco.rollout.rollout`` call over the 1024 (set, log) models,
  each compiled from the same MJCF the tests use (hinge, point mass, Euler
  integrator, the native ``<dcmotor>``), the goals as open-loop controls, one
  MjData per thread;
* M6: our batched rollouts of the MX-64's published M6 (scattered the same
  way) on the same benches and goals: the cost of the full-feature step is
  given relative to it.

Both sides run on all cores (numba threads = MuJoCo threads). The speed-up and
the cost ratio are medians of back-to-back pairs (the machine is shared); the
cost ratio is measured on one thread too. The positions of both are compared
(largest |Δq| over every set, log and step). Log-steps are counted as sets ×
logs × steps on both sides.

Run: ``tools/workspace.sh exec python benchmarks/dcmotor_rollouts.py``;
writes ``benchmarks/results/dcmotor_rollouts.json``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

import mujoco
import mujoco.rollout
import numba
import numpy as np
from provenance import environment, write_result

from bam_sim.bench.bench_log import LogBatch
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.bench.rollouts import batch_rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.models import parameter_vector as P
from bam_sim.models.elastoplastic.validity import lugre_violation
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
SEED = 12
DT = 0.005
COM_INERTIA = 1e-6  # the MuJoCo body's own inertia, counted in our armature
TRAJECTORIES = ("accelerated_oscillations", "slow_oscillations", "raise_lower", "steps")
BASE = {
    "resistance": 2.0, "motorconst": 0.5, "armature": 0.01,
    "inductance.L": 0.004, "saturation.torque": 2.5, "saturation.current_rate": 2000.0,
    "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
    "thermal.reftemp": 20.0, "thermal.ambient": 25.0,
    "cogging.amplitude": 0.02, "cogging.poles": 12.0, "cogging.phase": 0.3,
    "lugre.stiffness": 150.0, "lugre.damping": 1.5, "lugre.coulomb": 0.05,
    "lugre.static": 0.1, "lugre.stribeck": 0.2, "lugre.viscous": 0.05,
    "controller.ki": 5.0, "controller.kd": 0.3, "controller.slewmax": 4.0,
    "controller.Imax": 0.5, "controller.Vmax": 20.0,
}


def make_logs(n_logs: int, n_steps: int, seed: int):
    act = get_actuator("dcmotor")
    configs = list(itertools.product(act.masses, act.lengths, act.gains, TRAJECTORIES))
    np.random.default_rng(seed).shuffle(configs)
    return [command_log(name, Bench(mass, length), kp, DT, duration=(n_steps - 1) * DT)
            for mass, length, kp, name in configs[:n_logs]]


def make_population(base: dict, size: int, seed: int, stream: int) -> np.ndarray:
    rng = np.random.default_rng([seed, stream])
    pop = np.tile(P.to_vector(base), (size, 1))
    for name in base:
        if name not in ("cogging.poles", "thermal.reftemp", "thermal.ambient"):
            pop[:, P.INDEX[name]] *= rng.uniform(0.9, 1.1, size)
    return pop


def mjcf(p: np.ndarray, mass: float, length: float, kp: float) -> str:
    """The pendulum of the tests with the native dcmotor of parameter vector ``p``."""
    def v(name: str) -> float:
        return float(p[P.INDEX[name]])

    motor = (f'resistance="{v("resistance")!r}" motorconst="{v("motorconst")!r}" '
             f'armature="{v("armature") - COM_INERTIA!r}" inductance="{v("inductance.L")!r}" '
             f'thermal="{v("thermal.resistance")!r} {v("thermal.capacitance")!r} 0 '
             f'{v("thermal.tempcoef")!r} {v("thermal.reftemp")!r} {v("thermal.ambient")!r}" '
             f'saturation="{v("saturation.torque")!r} 0 {v("saturation.current_rate")!r}" '
             f'cogging="{v("cogging.amplitude")!r} {v("cogging.poles")!r} '
             f'{v("cogging.phase")!r}" lugre="{v("lugre.stiffness")!r} {v("lugre.damping")!r} '
             f'{v("lugre.coulomb")!r} {v("lugre.static")!r} {v("lugre.stribeck")!r}" '
             f'input="pos" controller="{kp!r} {v("controller.ki")!r} {v("controller.kd")!r} '
             f'{v("controller.slewmax")!r} {v("controller.Imax")!r} {v("controller.Vmax")!r}"')
    return f"""<mujoco>
  <option timestep="{DT}" integrator="Euler" gravity="0 0 -{GRAVITY!r}"/>
  <worldbody><body name="arm">
    <joint name="j" type="hinge" axis="0 1 0" damping="{v("lugre.viscous")!r}"/>
    <inertial pos="0 0 -{length!r}" mass="{mass!r}"
      diaginertia="{COM_INERTIA} {COM_INERTIA} {COM_INERTIA}"/>
  </body></worldbody>
  <actuator><dcmotor name="m" joint="j" {motor}/></actuator>
</mujoco>"""


def mujoco_workload(population: np.ndarray, logs) -> tuple[list, np.ndarray, np.ndarray]:
    """Models (set-major, as our output), initial states and controls of every pair."""
    models = [mujoco.MjModel.from_xml_string(mjcf(p, log.bench.mass, log.bench.length, log.kp))
              for p in population for log in logs]
    data = mujoco.MjData(models[0])
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros(mujoco.mj_stateSize(models[0], spec))
    mujoco.mj_getState(models[0], data, state0, spec)
    controls = np.stack([log.goal[:-1, None] for _ in population for log in logs])
    return models, np.tile(state0, (len(models), 1)), controls


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "dcmotor_rollouts.json")
    args = parser.parse_args()
    threads = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(threads)

    logs = make_logs(args.logs, args.steps, SEED)
    params = ParameterSet.from_names("dcmotor", "lugre", BASE)
    full = make_population(BASE, args.population, SEED, 0)
    batch = LogBatch.pack(logs, params.actuator)
    inertia = batch.load_inertia.min() + full[:, P.ARMATURE]
    assert np.all(lugre_violation(full, DT, inertia) == 0.0)
    m6_set = published_named("mx64", "m6")
    m6 = make_population(m6_set.values, args.population, SEED, 1)
    m6_batch = LogBatch.pack(logs, m6_set.actuator)
    steps = args.population * args.logs * (args.steps - 1)
    print(f"workload: pendulum + dcmotor (every state), {args.logs} logs x {args.steps} steps "
          f"x {args.population} sets = {steps:,} log-steps; {threads} threads each side")

    t0 = time.perf_counter()
    models, state0, controls = mujoco_workload(full, logs)
    compile_s = time.perf_counter() - t0
    datas = [mujoco.MjData(models[0]) for _ in range(threads)]

    def ours():
        return batch_rollout(get_model("lugre"), full, batch)

    def theirs():
        return mujoco.rollout.rollout(models, datas, state0, controls)[0]

    def ours_m6():
        return batch_rollout(get_model("m6"), m6, m6_batch)

    q_ours, state, _ = ours(), theirs(), ours_m6()  # compiled, memory touched
    q_mujoco = state[:, :, 1].reshape(args.population, args.logs, -1)
    gap = float(np.max(np.abs(q_ours[:, :, 1:] - q_mujoco)))
    times = {"ours": [], "mujoco": [], "ours_m6": []}
    for _ in range(args.repeats):  # in turns: the same machine state for all three
        times["ours"] += timed(ours, 1)
        times["mujoco"] += timed(theirs, 1)
        times["ours_m6"] += timed(ours_m6, 1)
    rate = {k: steps / min(v) for k, v in times.items()}
    median = {k: steps / statistics.median(v) for k, v in times.items()}
    # Ratios of back-to-back measurements (the machine is shared): their median.
    speedup = statistics.median(m / o for o, m in zip(times["ours"], times["mujoco"]))
    cost = statistics.median(o / m for o, m in zip(times["ours"], times["ours_m6"]))
    numba.set_num_threads(1)  # the step cost again on one thread, free of core sharing
    single = [timed(ours, 1)[0] / timed(ours_m6, 1)[0] for _ in range(args.repeats)]
    cost_one = statistics.median(single)
    numba.set_num_threads(threads)
    print(f"ours (dcmotor, every state): {rate['ours'] / 1e6:8.2f} M log-steps/s "
          f"({1e9 / rate['ours']:.1f} ns per log-step)")
    print(f"mujoco.rollout (native):     {rate['mujoco'] / 1e6:8.2f} M log-steps/s "
          f"({1e9 / rate['mujoco']:.1f} ns per log-step)")
    print(f"ours, M6 (MX-64):            {rate['ours_m6'] / 1e6:8.2f} M log-steps/s "
          f"({1e9 / rate['ours_m6']:.1f} ns per log-step)")
    print(f"speed-up over mujoco.rollout (median of paired runs): {speedup:.1f}x (target >= "
          f"5x); full-feature step cost / M6 step: {cost:.2f} on {threads} threads, "
          f"{cost_one:.2f} on 1 (target <= 2); max |q_ours - q_mujoco| = {gap:.2e} rad")
    write_result(args.output, {
        "benchmark": "dcmotor_rollouts",
        "description": __doc__.splitlines()[0],
        "workload": {"logs": args.logs, "steps": args.steps, "population": args.population,
                     "log_steps": steps, "dt": DT, "seed": SEED, "repeats": args.repeats,
                     "threads": threads, "trajectories": list(TRAJECTORIES),
                     "states": ["slew", "integral", "temperature", "bristle", "current"],
                     "base_set": BASE},
        "log_steps_per_s": rate,
        "log_steps_per_s_median": median,
        "ns_per_log_step": {k: 1e9 / v for k, v in rate.items()},
        "speedup_vs_mujoco_rollout": speedup,
        "full_feature_cost_vs_m6": cost,
        "full_feature_cost_vs_m6_one_thread": cost_one,
        "max_position_difference_rad": gap,
        "mujoco_model_compile_s": compile_s,
        "mujoco_version": mujoco.__version__,
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
