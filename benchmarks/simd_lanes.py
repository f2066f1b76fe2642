"""Prototype for issue 28 item 1: the M6 simulated-control step with the population in SIMD lanes.

Not production code: a self-contained kernel that measures what the vector
unit can do for Algorithm 1 with M6 on the MX-64 (voltage law, no optional
group, no latency) before the production kernels are rewritten. The
population's parameters are held as structure-of-arrays (one contiguous array
per parameter, a lane per set); a thread takes one log, and each step advances
every set of the population in one inner loop over the lanes, so that LLVM may
vectorize it. The friction clip (5), the duty clip (12), the velocity clip and
M6's quadratic term are branch-free (min/max and selects); the operations are
those of ``bench/pendulum.py`` in the same order, so the positions may stay
equal to production's to the last bit. Variants:

* ``fused``: sin, exp and pow (libm) inside the lane loop;
* ``split``: the libm calls in a first loop over the lanes (scalar), the rest
  of the step in a second, branch-free loop;
* ``poly``: no libm call at all: sin(q + q_off) by a Cody-Waite reduction by
  π/2 and Taylor polynomials to x¹⁹ / x¹⁸ on |r| ≤ π/4, eᶻ by 2^k and a
  degree-13 Taylor polynomial on |r| ≤ ln2/2, ln by the exponent bits and the
  atanh series of (m − 1)/(m + 1) to degree 21, so x^α = e^(α·ln x) vectorizes
  with the rest (one loop, no call). About 1 ulp on each, not libm's result.

Workload: ``throughput.py``'s (its logs and M6 population), on 1 core; one
call rolls out every (set, log) pair and scores it (MAE), as ``batch_mae``.
Measured against the production ``batch_mae`` in turns: log-steps/s, ns per
log-step; the largest |q_prototype − q_production| over every set, log and
entry (``batch_rollout``), and of the MAE.

Findings (figures in ``results/simd_lanes.json``; AMD EPYC with AVX-512, no
SVML for numba). Where the time goes, in three parts. (1) About half of the
production step is the generality of the production kernel, not arithmetic:
the branches on model, family and parameter flags, the parameters reloaded
from each set's vector, one (set, log) job at a time. The ``fused`` and
``split`` variants, the same operations in the same order with libm's sin,
pow and exp, specialised to M6 on the voltage law and in SoA lanes, run about
twice as fast and give production's positions to the last bit. (2) The
transcendentals: numba cannot vectorize a libm call, so those variants still
run the three calls per set one lane at a time; with branch-free polynomials
(``poly``) the whole step vectorizes (packed AVX-512 arithmetic and divisions
in the loop) and runs about four times production's rate, its positions a few
1e-15 rad from production's (one ulp of sin, exp, ln, grown over 1200 steps):
not bit-equal, well within 1e-12 rad. (3) What remains to the vector peak:
five divisions per step (not pipelined like a multiply; three are invariant
per set and could be hoisted), the clips' selects, no FMA contraction (numba
without fastmath), and the polynomials' own operations that the flop count of
``throughput.py`` charges as 20 per libm call.

The production kernel that came of it is :mod:`bam_sim.bench.lanes` (its polynomials
are :mod:`bam_sim.models.vector_math`, moved from here); ``throughput.py`` measures it.

Run: ``tools/workspace.sh exec python benchmarks/simd_lanes.py``; writes
``benchmarks/results/simd_lanes.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numba as nb
import numpy as np
from provenance import environment, write_result
from throughput import SEED, make_population, measure
from workload import make_logs

from bam_sim.bench.bench_log import LogBatch
from bam_sim.bench.rollouts import batch_mae, batch_rollout
from bam_sim.models import parameter_vector as P
from bam_sim.models import vector_math
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuator import (
    C_DUTY_GAIN,
    C_FIRMWARE_CURRENT,
    C_MAX_DUTY,
    C_SUPPLY,
    VOLTAGE,
)

HERE = Path(__file__).resolve().parent
ACTUATOR = "mx64"
MAX_VELOCITY = 100.0
VARIANTS = ("fused", "split", "poly")
# The parameters of M6 on a voltage-law servo, in lane order (rows of the SoA block).
LANES = (P.KT, P.R, P.ARMATURE, P.Q_OFFSET, P.KV, P.KC, P.KCS, P.KM, P.KE, P.KMS, P.KES,
         P.KMQ, P.KEQ, P.VS, P.ALPHA)
KT, R, ARM, QOFF, KV, KC, KCS, KM, KE, KMS, KES, KMQ, KEQ, VS, ALPHA = range(len(LANES))

# The branch-free polynomial sin, exp, ln (the "poly" variant) are production's now.
_poly_sin, _poly_exp, _poly_log = vector_math.sin, vector_math.exp, vector_math.log


# ---- the M6 step over the lanes ----------------------------------------------------------
@nb.njit(cache=True, inline="always")
def _clip(x: float, lo: float, hi: float) -> float:
    """Branch-free clip; the same value as laws._clip for lo ≤ hi and x not NaN."""
    return min(max(x, lo), hi)


@nb.njit(cache=True, inline="always")
def _lane_step(lp: np.ndarray, i: int, q: float, dq: float, sin_q: float, s: float,
               goal: float, enabled: bool, kp_duty: float, max_duty: float, supply: float,
               load_inertia: float, gravity_torque: float, dt: float) -> tuple[float, float]:
    """Algorithm 1 with M6 for lane i (pendulum.step on the voltage law), without branches."""
    kt, res = lp[KT, i], lp[R, i]
    duty = _clip(kp_duty * (goal - q), -max_duty, max_duty)
    control = duty * supply
    back_emf = kt * kt / res * dq
    tau_m = kt / res * control - back_emf if enabled else 0.0
    tau_e = -gravity_torque * sin_q
    base = lp[KV, i] * abs(dq) + lp[KC, i]
    directional = abs(lp[KM, i] * tau_m - lp[KE, i] * tau_e)
    static = lp[KCS, i] + abs(lp[KMS, i] * tau_m - lp[KES, i] * tau_e)
    quad = (lp[KEQ, i] * tau_e * tau_e if abs(tau_m) > abs(tau_e)
            else lp[KMQ, i] * tau_m * tau_m)
    static += quad if tau_m * tau_e < 0.0 else 0.0
    budget = base + directional + s * static
    inertia = load_inertia + lp[ARM, i]
    tau_f = _clip(-(inertia / dt * dq + tau_m + tau_e), -budget, budget)
    ddq = (tau_m + tau_e + tau_f) / inertia
    dq_next = _clip(dq + ddq * dt, -MAX_VELOCITY, MAX_VELOCITY)
    return q + dq_next * dt + 0.5 * ddq * dt * dt, dq_next


@nb.njit(cache=True, inline="always")
def _stribeck(x: float, alpha: float, poly: bool) -> float:
    """exp(−x^α), 1 at x = 0 (friction.stribeck)."""
    if poly:
        power = _poly_exp(alpha * _poly_log(max(x, 1e-300)))
        return 1.0 if x == 0.0 else _poly_exp(-power)
    return 1.0 if x == 0.0 else np.exp(-(x ** alpha))


@nb.njit(cache=True, parallel=True)
def lanes_kernel(variant: int, lp: np.ndarray, kp_duty: np.ndarray, max_duty: float,
                 supply: np.ndarray, load_inertia: np.ndarray, gravity_torque: np.ndarray,
                 q0: np.ndarray, dq0: np.ndarray, goal: np.ndarray, enabled: np.ndarray,
                 lengths: np.ndarray, dt: float, recorded: np.ndarray, out_q: np.ndarray,
                 errors: np.ndarray) -> None:
    """Every set of ``lp`` (SoA, a lane per set) on every log; MAE in errors[set, log]."""
    sets = lp.shape[1]
    store = out_q.size > 0
    for j in nb.prange(lengths.size):
        n = lengths[j]
        q = np.full(sets, q0[j])
        dq = np.full(sets, dq0[j])
        err = np.zeros(sets)
        sin_q = np.empty(sets)
        s = np.empty(sets)
        for k in range(n):
            rec, g, on = recorded[j, k], goal[j, k], enabled[j, k]
            for i in range(sets):
                err[i] += abs(q[i] - rec)
            if store:
                for i in range(sets):
                    out_q[i, j, k] = q[i]
            if k == n - 1:
                break
            if variant == 1:  # split: the libm calls first, scalar
                for i in range(sets):
                    sin_q[i] = np.sin(q[i] + lp[QOFF, i])
                    s[i] = _stribeck(abs(dq[i] / lp[VS, i]), lp[ALPHA, i], False)
                for i in range(sets):
                    q[i], dq[i] = _lane_step(lp, i, q[i], dq[i], sin_q[i], s[i], g, on,
                                             kp_duty[j], max_duty, supply[j], load_inertia[j],
                                             gravity_torque[j], dt)
            elif variant == 2:  # poly: one loop, no call
                for i in range(sets):
                    q[i], dq[i] = _lane_step(
                        lp, i, q[i], dq[i], _poly_sin(q[i] + lp[QOFF, i]),
                        _stribeck(abs(dq[i] / lp[VS, i]), lp[ALPHA, i], True), g, on,
                        kp_duty[j], max_duty, supply[j], load_inertia[j], gravity_torque[j], dt)
            else:  # fused: libm inside the lane loop
                for i in range(sets):
                    q[i], dq[i] = _lane_step(
                        lp, i, q[i], dq[i], np.sin(q[i] + lp[QOFF, i]),
                        _stribeck(abs(dq[i] / lp[VS, i]), lp[ALPHA, i], False), g, on,
                        kp_duty[j], max_duty, supply[j], load_inertia[j], gravity_torque[j], dt)
        for i in range(sets):
            errors[i, j] = err[i] / n


def soa(population: np.ndarray) -> np.ndarray:
    """The M6 parameters of a population as rows, one lane (column) per set."""
    zero = (P.GAIN_RATIO, P.SUPPLY_R, P.TARGET_RATE, P.HB_PERIOD, P.LATENCY_COMMAND,
            P.LATENCY_READING, P.IND_L, P.IND_TE, P.SAT_TORQUE, P.SAT_CURRENT, P.TH_R,
            P.COG_A)
    assert not population[:, list(zero)].any(), "the prototype has no optional group"
    return np.ascontiguousarray(population[:, list(LANES)].T)


def run(variant: str, population: np.ndarray, batch: LogBatch, positions: bool = False):
    """(MAE[set, log], q[set, log, entry] or None) of the prototype."""
    c = batch.consts
    assert not c[:, C_FIRMWARE_CURRENT].any() and batch.actuator.family == VOLTAGE
    lp = soa(population)
    errors = np.zeros((population.shape[0], len(batch)))
    out = (np.zeros((population.shape[0], len(batch), batch.goal.shape[1])) if positions
           else np.empty((0, 0, 0)))
    lanes_kernel(VARIANTS.index(variant), lp, batch.kp * c[:, C_DUTY_GAIN],
                 float(c[0, C_MAX_DUTY]), np.ascontiguousarray(c[:, C_SUPPLY]),
                 batch.load_inertia, batch.gravity_torque, batch.q0, batch.dq0, batch.goal,
                 batch.enabled, batch.lengths, batch.dt, batch.position, out, errors)
    return errors, (out if positions else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--population", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "simd_lanes.json")
    args = parser.parse_args()

    logs = make_logs(ACTUATOR, args.logs, args.steps, 0.005, SEED)
    batch = LogBatch.pack(logs, published_named(ACTUATOR, "m1").actuator)
    pop = make_population(ACTUATOR, "m6", args.population, SEED)
    assert np.unique(batch.consts[:, C_MAX_DUTY]).size == 1
    steps = args.population * args.logs * args.steps
    q_prod = batch_rollout(get_model("m6"), pop, batch)
    mae_prod = batch_mae(get_model("m6"), pop, batch)
    timed = {"production": lambda: batch_mae(get_model("m6"), pop, batch)}
    agreement = {}
    for variant in VARIANTS:
        mae, q = run(variant, pop, batch, positions=True)
        diff = np.abs(q - q_prod)
        agreement[variant] = {"max_position_difference_rad": float(diff.max()),
                              "positions_bit_equal": bool(np.array_equal(q, q_prod)),
                              "max_mae_difference_rad": float(np.abs(mae - mae_prod).max())}
        timed[variant] = lambda v=variant: run(v, pop, batch)
    seconds = {name: [] for name in timed}
    for _ in range(args.repeats):  # in turns: the same machine state for each
        for name, fn in timed.items():
            seconds[name].append(measure(fn, 1, 1))
    rates = {name: steps / min(s) for name, s in seconds.items()}
    result = {}
    for name, rate in rates.items():
        result[name] = {"log_steps_per_s_1_core": rate, "ns_per_log_step_1_core": 1e9 / rate,
                        "speedup_vs_production": rate / rates["production"],
                        **agreement.get(name, {})}
        extra = (f"; max |dq| = {agreement[name]['max_position_difference_rad']:.1e} rad, "
                 f"bit-equal {agreement[name]['positions_bit_equal']}" if name in agreement
                 else "")
        print(f"{name:10s}: {rate / 1e6:6.1f} M log-steps/s on 1 core ({1e9 / rate:5.1f} ns), "
              f"x{rate / rates['production']:4.2f}{extra}")
    write_result(args.output, {
        "benchmark": "simd_lanes",
        "description": __doc__.splitlines()[0],
        "workload": {"actuator": ACTUATOR, "model": "m6", "logs": args.logs,
                     "steps": args.steps, "population": args.population,
                     "log_steps": steps, "mode": "simulated control", "seed": SEED,
                     "threads": 1, "repeats": args.repeats,
                     "timing": "fastest of repeats taken in turns, batch_mae vs prototype"},
        "variants": result,
        "svml": bool(nb.config.USING_SVML),
        "environment": environment(),
    })


if __name__ == "__main__":
    main()
