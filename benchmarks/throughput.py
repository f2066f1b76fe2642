"""Throughput of the batched numba simulator, side by side with the reference.

Workload (issue 2): M1..M6, simulated-control mode, 64 logs × 1200 steps of
the MX-64 bench (paper Table I masses, lengths and gains; every trajectory of
the protocol) × a population of 16 parameter sets (the published set of each
model with seeded ±10 % noise). Since issue 28 the same run also measures, on
the same MX-64 logs, the elasto-plastic ``ep_*`` models (the populations of
``elastoplastic_rollouts.py``), and the dcmotor family on its own benches (the
full-feature LuGre set with every state and group, the workload of
``dcmotor_rollouts.py``, scored by storing positions: those logs have none).
Measured:

* our log-steps per second on 1 core and on all cores (median of repeats),
  and ns per log-step;
* the kernel's floating-point operations per log-step, counted from the code
  (:data:`FLOPS`, derivation below), and the fraction of the machine's peak
  that this throughput is, against the scalar-lane and the vector-lane peak
  (:func:`machine_peak`, read from the machine: cores × float64 lanes × 2 for
  FMA × clock);
* numba's first-call time in a fresh process, with an empty disk cache
  (compilation) and with the cache filled (loading);
* the reference implementation (``better-actuator-models``, in its own venv,
  set up by ``setup_reference.sh``) on the very same M1..M6 workload, batched
  over logs as its identification does, and the ratio (it has no ep_* or
  dcmotor models);
* the largest position difference between our rollouts and the reference's
  for the first parameter set of every model (the same conventions, so it
  should be at rounding level).

Run: ``tools/workspace.sh exec python benchmarks/throughput.py`` (or
``make benchmark``); writes ``benchmarks/results/throughput.json``.

Log-steps are counted as sets × logs × entries for both implementations.

Floating-point operations per log-step (:data:`FLOPS`). Counted by reading the
path one step of a moving, torque-enabled joint takes through ``_simulate``
(bench/rollouts.py), ``step_any``/``step_motor`` and the joint updates
(bench/pendulum.py), the servo law (models/servo/laws.py), the friction
budget (models/bam/friction.py), ``ep_step`` and Φ_Z
(models/elastoplastic/model.py, fast_exp.py, lambert_w.py), and the motor step
(models/dcmotor/motor_model.py, model.py). Conventions: an add, sub, mul, div
or sqrt is 1 flop, an FMA 2; negation, abs and copysign (sign-bit operations),
integer work, loads and stores are 0; float comparisons (the clips, the
branches on data and on parameter flags) are listed apart and not counted as
flops. M1..M6 call no libm function: sin, exp and x^α are the polynomials of
models/vector_math.py, counted from that code with both sides of a select (a
vector lane computes both), as:
  sin        reduction, degree-19/18 sin and cos polynomials, quadrant
             23 add 24 mul 2 cmp
  exp        clamp, reduction, degree-13 Horner, 2^k                17 add 17 mul 2 cmp
  ln         mantissa fold, atanh series to degree 21, e·ln2          14 add 16 mul 1 div 1 cmp
  x^α        exp(α·ln max(x, tiny)), 0 at x = 0: ln and exp, and 1 mul 2 cmp
The ep_* and dcmotor kernels call libm's sin and exp, each counted as
``LIBM_FLOPS`` = 20 flops (a range reduction and a polynomial of about that
size); the count without them is given too. Terms are
counted as written: LLVM may hoist the loop-invariant ones out of the step
loop (``invariant`` names them) and fuse nothing (no fastmath). The path is
the longest regular one (for M6 the opposite-sign branch of Q; for Φ_Z
sliding; for Stribeck-type Φ_Z the table path beyond NEAR_SLIDE).

Common to M1..M6 (MX-64, voltage law, ``batch_mae``), per step:
  score       |q − q_rec| summed                                 2 add
  servo (12)  duty = kp·k_d·(q_d − q), clip ±duty_max; U = duty·V_s;
              τ_m = k_t/R·U − k_t²/R·q̇ (13)                     2 add 6 mul 2 div 2 cmp
              flags: delay, target rate, STS gain, current limit, supply R,
              PWM period                                          6 cmp
  joint       τ_e = −g·sin(q + q_off); τ_stop = −(J/Δt·q̇ + τ_m + τ_e);
              clip (5); q̈ = (τ_m + τ_e + τ_f)/J; q̇ ← clip(q̇ + q̈Δt);
              q ← q + q̇Δt + ½q̈Δt²                                8 add 7 mul 2 div 1 sin 4 cmp
  total                                                          12 add 13 mul 4 div 1 sin 12 cmp
                                          with sin's polynomial: 35 add 37 mul 4 div 14 cmp
  invariant: kp·k_d, k_t·k_t/R, k_t/R, J/Δt (2 mul 3 div)
Budgets τ_f^m: M1 K_v|q̇| + K_c (1 add 1 mul); M2 + s(q̇)·K_c^s with
s = exp(−|q̇/v_s|^α) (2 add 2 mul 1 div 1 pow 1 exp 1 cmp); M3 + K_l|τ_m − τ_e|
(3 add 2 mul); M4 (5 add 4 mul 1 div 1 pow 1 exp 1 cmp); M5 (6 add 6 mul 1 div
1 pow 1 exp 1 cmp); M6 = M5 + Q: τ_mτ_e sign, |τ_m| > |τ_e|, K·τ² and the sum
(7 add 9 mul 1 div 1 pow 1 exp 3 cmp).

ep_* (MX-64, ``batch_mae``): score, servo and flags as above (4 add 6 mul 2
div 8 cmp); τ_e (1 add 1 mul 1 sin); Z = 1/(KT + B) (1 add 1 mul 1 div);
v* = u + Z·K·e (1 add 2 mul); e_k = Z(B·e + f·T) (1 add 3 mul); semi-implicit
joint q̇ ← clip(q̇ + Δt(τ_m + τ_e − f)/J), q ← q + Δt·q̇ (4 add 2 mul 1 div
2 cmp): 12 add 15 mul 4 div 1 sin 10 cmp, plus the levels and Φ_Z:
  ep_cv        F_S = F_C = K_c; (20) sliding: Z·F, (F + D|x|)/(1 + Z·D)   2 add 3 mul 1 div 1 cmp
  ep_stribeck  F_S = K_c + K_c^s (1 add); (27) on the table path: table exp
               (exp_split: 5 fma 2 add 2 mul 1 cmp), W0/ψ from the degree-6
               table piece (Estrin: 6 fma 3 add 3 mul), the rest
                                                         7 add 16 mul 16 fma 1 div 4 cmp
  ep_rational  F_S (1 add); (43)-(48): A, excess, b, √(b² + 4Aδ·excess),
               ξ, y = Dξ + F_C + δF_SC/(ξ + δ)     10 add 12 mul 2 div 1 sqrt 2 cmp
  ep_load      levels of M4's budget (4 add 2 mul) and the Stribeck Φ_Z as ep_stribeck
  (sticking, every form: Z·F_S, x/Z: 1 mul 1 div 1 cmp.)

m6_latency (the MX-64 logs and M6 sets, each set's commands L = L_c + L_r late,
``batch_mae``): M6 plus each lane's delayed command (bench/latency.py):
x = k − L/Δt, f = x − ⌊x⌋, goal and control interpolated (6 add 2 mul 3 cmp).

dcmotor family, LuGre with every state and group (``batch_rollout``), per
step: the winding temperature read (1 add); flags (2 cmp); the motor step:
slew clip and rate (3 add 1 mul 1 div 3 cmp), integral with anti-windup
(1 add 4 cmp), the controller's drive voltage v = R/K·τ* + Kq̇ clipped
(7 add 5 mul 1 div 3 cmp), R(T) and the thermal ODE (4 add 4 mul 2 div 2 cmp),
the bristle rate with g(q̇) = τ_c + (τ_s − τ_c)exp(−(q̇/ω_s)²) (3 add 4 mul
2 div 1 exp 3 cmp), the current ODE with its exact step, rate limit and K·i (4 add
4 mul 4 div 1 exp 5 cmp), the force clip (3 cmp), cogging A·sin(N_p q + φ)
(2 add 2 mul 1 sin 1 cmp), LuGre (9b) (2 add 2 mul 1 cmp), the state advance
(slew, integral + clip, temperature, bristle by (11) with exp(aΔt):
5 add 6 mul 1 div 1 exp 9 cmp), current = τ_e/K (1 div 1 cmp), force − τ_LuGre
and τ_m + τ_LuGre (2 add); MuJoCo's Euler joint with σ2 implicit (6 add 5 mul 1 div 1 sin 2 cmp):
40 add 33 mul 13 div 3 exp 2 sin 39 cmp (the states' clips written as branches).

Neutral workload format (read by reference_runner.py)::

    {"actuator": "mx64", "dt": 0.005,
     "logs": [{"kp", "mass", "arm_mass", "length", "time", "goal_position",
               "torque_enable", "position", "velocity"}, ...],
     "models": ["m1", ...], "population": {"m1": [{name: value}, ...], ...}}
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import dcmotor_rollouts as dc
import elastoplastic_rollouts as ep
import numba
import numpy as np
from provenance import environment
from workload import MODELS, make_logs

from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.rollouts import batch_mae, batch_rollout, batch_violation
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import EP_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.parameter_vector import INDEX
from bam_sim.models.servo.actuator import VOLTAGE
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DCMOTOR = "dcmotor_lugre"  # the dcmotor family: LuGre, every state and group
LATENCY = "m6_latency"  # M6 with the latency group: each set's commands late
LATENCY_TICKS = (0.5, 2.5)  # the sets' L/Δt, drawn in this range (the STS3215's ~1.1)
SEED = 2
LIBM_FLOPS = 20  # one libm sin or exp; pow is a log and an exp (module docstring)


@dataclass(frozen=True)
class Flops:
    """Operations of one log-step along the path of the module docstring."""

    add: int
    mul: int
    div: int
    cmp: int
    fma: int = 0
    sqrt: int = 0
    sin: int = 0
    exp: int = 0
    pow: int = 0

    @property
    def arithmetic(self) -> int:
        """Flops without the libm calls: add, mul, div, sqrt 1 each, FMA 2."""
        return self.add + self.mul + self.div + self.sqrt + 2 * self.fma

    @property
    def total(self) -> int:
        """Flops with each libm sin or exp as LIBM_FLOPS and pow as twice that."""
        return self.arithmetic + LIBM_FLOPS * (self.sin + self.exp + 2 * self.pow)


# vector_math's polynomials (module docstring): (add, mul, div, cmp)
SIN_OPS = (23, 24, 0, 2)
EXP_OPS = (17, 17, 0, 2)
LOG_OPS = (14, 16, 1, 1)
POW_OPS = tuple(a + b + c for a, b, c in zip(LOG_OPS, EXP_OPS, (0, 1, 0, 2), strict=True))
STRIBECK_OPS = tuple(a + b for a, b in zip(POW_OPS, EXP_OPS, strict=True))  # exp(−x^α)


def _bam(add: int, mul: int, div: int = 0, cmp: int = 0, stribeck: bool = False) -> Flops:
    """M1..M6: the common part (12 add 13 mul 4 div 12 cmp and sin's polynomial) plus
    the budget, with the Stribeck factor's polynomials where the model has one."""
    s = int(stribeck)
    poly = [a + s * b for a, b in zip(SIN_OPS, STRIBECK_OPS, strict=True)]
    return Flops(add=12 + add + poly[0], mul=13 + mul + poly[1], div=4 + div + s + poly[2],
                 cmp=12 + cmp + s + poly[3])


def _ep(add: int, mul: int, div: int, cmp: int, fma: int = 0, sqrt: int = 0) -> Flops:
    """ep_*: the common part (12 add 15 mul 4 div 1 sin 10 cmp) plus levels and Φ_Z."""
    return Flops(add=12 + add, mul=15 + mul, div=4 + div, cmp=10 + cmp, fma=fma, sqrt=sqrt,
                 sin=1)


FLOPS = {
    "m1": _bam(1, 1), "m2": _bam(2, 2, stribeck=True), "m3": _bam(3, 2),
    "m4": _bam(5, 4, stribeck=True), "m5": _bam(6, 6, stribeck=True),
    "m6": _bam(7, 9, cmp=2, stribeck=True),
    "ep_cv": _ep(2, 3, 1, 1),
    "ep_stribeck": _ep(1 + 7, 16, 1, 4, fma=16),
    "ep_rational": _ep(1 + 10, 12, 2, 2, sqrt=1),
    "ep_load": _ep(4 + 7, 2 + 16, 1, 4, fma=16),
    DCMOTOR: Flops(add=40, mul=33, div=13, cmp=39, exp=3, sin=2),
    LATENCY: _bam(7 + 6, 9 + 2, cmp=2 + 3, stribeck=True),
}


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo."""
    info: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if not line.strip():
            if info:
                break
            continue
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    return info


# float64 lanes of the code numba generates for a NUMBA_CPU_NAME
BUILD_LANES = {"generic": 2, "x86-64": 2, "haswell": 4, "znver3": 4, "skylake-avx512": 8,
               "znver4": 8}


def machine_peak(threads: int) -> dict:
    """Peak float64 flop rates read from the machine: cores × lanes × FMA × clock.

    Cores: os.sched_getaffinity (the all-cores peak uses the threads measured);
    float64 lanes from /proc/cpuinfo's flags (avx512f 8, avx2 4, else 2 for SSE2), or
    from the CPU numba compiles for where NUMBA_CPU_NAME names one of
    :data:`BUILD_LANES` (``haswell``: the AVX2 code an AVX2-only x86-64 runs);
    × 2 with the fma flag; clock: lscpu's CPU max MHz where it gives one, else
    /proc/cpuinfo's cpu MHz. The number of FMA pipes per core is not in the formula
    (issue 28's), so a core with two pipes peaks at twice the figure.
    """
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    lanes = 8 if "avx512f" in flags else 4 if "avx2" in flags else 2
    build = os.environ.get("NUMBA_CPU_NAME", "")
    lanes_source = "/proc/cpuinfo flags"
    if build in BUILD_LANES:
        lanes, lanes_source = min(lanes, BUILD_LANES[build]), f"NUMBA_CPU_NAME={build}"
    fma = 2 if "fma" in flags else 1
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        found = re.search(r"^CPU max MHz:\s*([0-9.]+)", lscpu, re.MULTILINE)
    except (OSError, subprocess.CalledProcessError):
        found = None
    if found:
        mhz, source = float(found.group(1)), "lscpu: CPU max MHz"
    else:
        mhz, source = float(info["cpu MHz"]), "/proc/cpuinfo: cpu MHz (lscpu gives no max MHz)"
    ghz = mhz / 1000.0

    def gflops(cores: int, width: int) -> float:
        return cores * width * fma * ghz

    return {"cpu": info.get("model name", "unknown"),
            "affinity_cores": len(os.sched_getaffinity(0)),
            "threads_all_cores": threads, "float64_lanes": lanes,
            "float64_lanes_source": lanes_source, "fma_factor": fma,
            "clock_mhz": mhz, "clock_source": source,
            "peak_gflops": {"scalar_1_core": gflops(1, 1), "vector_1_core": gflops(1, lanes),
                            "scalar_all_cores": gflops(threads, 1),
                            "vector_all_cores": gflops(threads, lanes)}}


def make_population(actuator: str, model: str, size: int, seed: int) -> np.ndarray:
    base = published_named(actuator, model)
    rng = np.random.default_rng([seed, MODELS.index(model)])
    population = np.tile(base.vector(), (size, 1))
    for name in base.values:
        population[:, INDEX[name]] *= rng.uniform(0.9, 1.1, size)
    return population


def latency_population(population: np.ndarray, dt: float, seed: int) -> np.ndarray:
    """``population`` with the latency group: L_c of each set drawn (seeded) so that
    L/Δt lies in LATENCY_TICKS, L_r 0 (as the fit holds it)."""
    rng = np.random.default_rng([seed, len(MODELS)])
    late = population.copy()
    late[:, INDEX["latency.command"]] = rng.uniform(*LATENCY_TICKS, len(late)) * dt
    return late


def workload_json(actuator: str, logs: list[BenchLog], populations: dict) -> dict:
    act = get_actuator(actuator)

    def entry(log: BenchLog) -> dict:
        # The supply of a voltage-law servo (the reference reads "vin" from a log).
        vin = {"vin": act.supply_voltage} if act.family == VOLTAGE else {}
        return {**vin, "kp": log.kp, "mass": log.bench.mass, "arm_mass": log.bench.arm_mass,
                "length": log.bench.length, "time": log.time.tolist(),
                "goal_position": log.goal.tolist(), "torque_enable": log.enabled.tolist(),
                "position": log.position.tolist(), "velocity": log.velocity.tolist()}

    names = {m: list(published_named(actuator, m).values) for m in populations}
    return {
        "actuator": actuator, "dt": logs[0].dt, "logs": [entry(log) for log in logs],
        "models": list(populations),
        "population": {m: [{n: float(row[INDEX[n]]) for n in names[m] if n != "current_limit"}
                           for row in pop] for m, pop in populations.items()},
    }


def measure(run, threads: int, repeats: int) -> float:
    """Median seconds of one batched evaluation ``run()`` on ``threads`` threads."""
    numba.set_num_threads(threads)
    run()  # warm-up (compiled already; touches memory)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workloads(args: argparse.Namespace, batch: LogBatch,
              populations: dict) -> dict[str, tuple[object, int]]:
    """Per model, (a call evaluating its population, log-steps of one call).

    M1..M6 and ep_* score the MX-64 logs (batch_mae); the dcmotor family rolls out
    the logs of dcmotor_rollouts.py (command logs, no recorded positions).
    """
    steps = args.population * args.logs * args.steps
    out = {m: (lambda m=m: batch_mae(get_model(m), populations[m], batch), steps)
           for m in MODELS}
    late = latency_population(populations["m6"], batch.dt, SEED)
    out[LATENCY] = (lambda: batch_mae(get_model("m6"), late, batch), steps)
    for model in EP_MODELS:
        pop = ep.population(model, args.population, ep.SEED)
        if np.any(batch_violation(get_model(model), pop, batch) > 0.0):
            raise SystemExit(f"{model}: a set violates condition (14) or the coupling limit")
        out[model] = (lambda m=model, pop=pop: batch_mae(get_model(m), pop, batch), steps)
    dc_logs = dc.make_logs(args.logs, args.steps, dc.SEED)
    dc_batch = LogBatch.pack(dc_logs, ParameterSet.from_names("dcmotor", "lugre", dc.BASE).actuator)
    dc_pop = dc.make_population(dc.BASE, args.population, dc.SEED, 0)
    out[DCMOTOR] = (lambda: batch_rollout(get_model("lugre"), dc_pop, dc_batch), steps)
    return out


_FIRST_CALL = """
import time, numpy as np
start = time.perf_counter()
from bam_sim.models.files.parameter_file import published_named
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae
imported = time.perf_counter()
p = published_named("mx64", "m6")
log = BenchLog(bench=Bench(1.0, 0.1), kp=8.0, dt=0.005, goal=np.zeros(50),
               enabled=np.ones(50), position=np.zeros(50))
batch_mae(p.model, p.vector(), LogBatch.pack([log], p.actuator))
print(imported - start, time.perf_counter() - imported)
"""


def first_call_seconds() -> dict:
    """Import and first batched call in fresh processes: cold cache, then warm cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        result = {}
        for label in ("cold_cache", "warm_cache"):
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            result[label] = {"import_s": float(out[0]), "first_call_s": float(out[1])}
        return result


def run_reference(workload: Path, repeats: int, out_dir: Path) -> tuple[dict, dict] | None:
    python = ROOT / ".venv-ref" / "bin" / "python"
    setup = subprocess.run(["bash", str(HERE / "setup_reference.sh")], capture_output=True,
                           text=True)
    if setup.returncode != 0 or not python.exists():
        print(f"reference unavailable, skipped: {setup.stderr.strip()[-300:]}")
        return None
    runner = str(HERE / "reference_runner.py")
    throughput, rollouts = out_dir / "ref_throughput.json", out_dir / "ref_rollout.json"
    subprocess.run([str(python), runner, "--workload", str(workload), "--mode", "throughput",
                    "--output", str(throughput), "--repeat", str(repeats)], check=True)
    subprocess.run([str(python), runner, "--workload", str(workload), "--mode", "rollout",
                    "--output", str(rollouts), "--max-sets", "1"], check=True)
    return json.loads(throughput.read_text()), json.loads(rollouts.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actuator", default="mx64")
    parser.add_argument("--logs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "throughput.json")
    args = parser.parse_args()

    logs = make_logs(args.actuator, args.logs, args.steps, 0.005, SEED)
    batch = LogBatch.pack(logs, published_named(args.actuator, "m1").actuator)
    populations = {m: make_population(args.actuator, m, args.population, SEED) for m in MODELS}
    steps = args.population * args.logs * args.steps
    cores = numba.config.NUMBA_NUM_THREADS
    peak = machine_peak(cores)
    print(f"workload: {args.actuator}, {args.logs} logs x {args.steps} steps x "
          f"{args.population} sets = {steps:,} log-steps per model; {cores} cores")
    print(f"peak: {peak['float64_lanes']} float64 lanes x {peak['fma_factor']} (FMA) x "
          f"{peak['clock_mhz']:.0f} MHz ({peak['clock_source']}): "
          f"{peak['peak_gflops']['vector_1_core']:.1f} GFLOP/s per core (vector), "
          f"{peak['peak_gflops']['scalar_1_core']:.1f} (one lane)")

    ours = {}
    for model, (run, n) in workloads(args, batch, populations).items():
        one = measure(run, 1, args.repeats)
        full = measure(run, cores, args.repeats)
        ours[model] = _rates(model, n, one, full, cores, peak)
        r = ours[model]
        print(f"  ours {model:13s}: {n / one / 1e6:6.1f} M/s on 1 core "
              f"({r['ns_per_log_step_1_core']:5.1f} ns), {n / full / 1e6:6.1f} M/s on {cores}; "
              f"{r['flops_per_log_step']:3d} flops/step -> "
              f"{100 * r['fraction_of_peak']['vector_1_core']:4.1f} % of the vector peak, "
              f"{100 * r['fraction_of_peak']['scalar_1_core']:4.1f} % of one lane's")
    compile_times = first_call_seconds()
    print(f"  first call: {compile_times['cold_cache']['first_call_s']:.1f} s compiling, "
          f"{compile_times['warm_cache']['first_call_s']:.2f} s from the disk cache")

    result = {
        "workload": {"actuator": args.actuator, "logs": args.logs, "steps": args.steps,
                     "population": args.population, "log_steps_per_model": steps,
                     "mode": "simulated control", "seed": SEED},
        "families": {"bam": list(MODELS), "elastoplastic": list(EP_MODELS),
                     "dcmotor": [DCMOTOR], "latency": [LATENCY]},
        "workload_notes": {
            "ep_*": "the MX-64 logs above; populations of elastoplastic_rollouts.py "
                    "(synthetic example set, seeded +-10 %); batch_mae",
            DCMOTOR: "dcmotor family, LuGre with every state and group: benches, base set "
                     "and populations of dcmotor_rollouts.py, the same sizes; batch_rollout "
                     "(command logs have no recorded positions)",
            LATENCY: f"the MX-64 logs and the M6 population above, each set's latency.command "
                     f"drawn (seeded) for L/dt in {list(LATENCY_TICKS)}; batch_mae"},
        "flop_convention": {"m1_m6": "no libm call: vector_math's polynomials counted",
                            "libm_call_flops": LIBM_FLOPS, "pow_flops": 2 * LIBM_FLOPS,
                            "fma_flops": 2, "comparisons": "listed, not counted as flops",
                            "derivation": "module docstring of benchmarks/throughput.py"},
        "machine": peak,
        "ours": ours, "first_call": compile_times,
        "environment": environment(),
    }
    if not args.no_reference:
        with tempfile.TemporaryDirectory() as tmp:
            workload = Path(tmp) / "workload.json"
            workload.write_text(json.dumps(workload_json(args.actuator, logs, populations)))
            reference = run_reference(workload, args.repeats, Path(tmp))
        if reference is not None:
            result["reference"] = _compare(reference, ours, populations, batch)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


def _compare(reference: tuple[dict, dict], ours: dict, populations: dict,
             batch: LogBatch) -> dict:
    throughput, rollouts = reference
    summary = {"environment": {k: v for k, v in throughput.items()
                               if k not in ("models", "total", "workload")},
               "method": throughput.get("method"), "models": {}}
    for model in MODELS:
        ref_rate = throughput["models"][model]["log_steps_per_s"]
        ours_q = batch_rollout(get_model(model), populations[model][:1], batch)[0]
        ref_q = np.array(rollouts["models"][model]["sets"][0]["positions"])
        gap = float(np.max(np.abs(ours_q - ref_q)))
        ratio = ours[model]["log_steps_per_s_all_cores"] / ref_rate
        ratio_one = ours[model]["log_steps_per_s_1_core"] / ref_rate
        summary["models"][model] = {"log_steps_per_s": ref_rate, "speedup_all_cores": ratio,
                                    "speedup_1_core": ratio_one,
                                    "ns_per_log_step": 1e9 / ref_rate,
                                    "max_position_difference_rad": gap}
        print(f"  reference {model}: {ref_rate / 1e6:5.2f} M/s -> ours x{ratio:5.1f} "
              f"(x{ratio_one:5.1f} on 1 core); max |q_ours - q_ref| = {gap:.1e} rad")
    return summary


def _rates(model: str, steps: int, one: float, full: float, cores: int, peak: dict) -> dict:
    """Rates, ns per log-step and the fractions of the peaks (module docstring)."""
    flops = FLOPS[model]
    rate = {"1_core": steps / one, "all_cores": steps / full}
    gflops = {k: v * flops.total / 1e9 for k, v in rate.items()}
    fraction = {f"{width}_{where}": gflops[where] / peak["peak_gflops"][f"{width}_{where}"]
                for width in ("scalar", "vector") for where in ("1_core", "all_cores")}
    return {"seconds_1_core": one, "seconds_all_cores": full,
            "log_steps_per_s_1_core": rate["1_core"],
            "log_steps_per_s_all_cores": rate["all_cores"],
            "ns_per_log_step_1_core": one / steps * 1e9,
            "ns_per_log_step_all_cores": full / steps * 1e9,
            "cycles_per_log_step_1_core": one / steps * peak["clock_mhz"] * 1e6,
            "flops_counted": asdict(flops),
            "flops_per_log_step": flops.total,
            "flops_per_log_step_without_libm": flops.arithmetic,
            "gflops": gflops, "fraction_of_peak": fraction,
            "fraction_of_peak_without_libm": {
                k: v * flops.arithmetic / flops.total for k, v in fraction.items()}}


if __name__ == "__main__":
    main()
