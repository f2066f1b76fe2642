"""Real XL330: what changes from kp 100 to kp 400, read off the logs gain by gain.

Data: the BAM authors' twelve XL330 logs (``../shared/data/real/xl330/``, one 0.49 kg,
0.1 m pendulum, four trajectories at each of kp 100, 200 and 400). The candidates of the
fidelity issue, each tested on the recordings, not assumed:

* **The firmware's law.** The duty the servo applied (``load``, Present PWM, a signed
  fraction of the PWM limit) against the law's kp·duty_gain·(goal − q), clipped at full
  duty: its 99th percentile of |difference| over the torque-on samples, at rest and
  moving (|q̇| < 1 rad/s or not: moving, one sample of skew between the position read and
  the duty applied shows as a difference), and how often the law asks for more than full
  duty (the PWM limit binds).
* **The current limit in position mode.** The current the motor draws, estimated from the
  applied duty, the bus voltage and the speed with the published M1 k_t and R
  ((duty·V_in − k_t·q̇)/R): its largest value and the share of samples above the 1.75 A
  the model applies. Then the validation MAE at kp 400 of the sets fitted on kp 100 and 200
  (``benchmarks/results/real_xl330.json``) with and without that limit.
* **The supply.** The bus voltage's drop below the nominal 7.4 V against the estimated
  current: mean, 95th percentile, their correlation (a series resistance R_s shows as
  drop = R_s·|I|), and the largest R_s the mean drop allows. Then the input voltage the
  fitted ``supply`` group simulates against the recorded one.
* **The load.** The correlation of the fitted set's position error with sin q (the
  gravity torque's shape), per gain.
* **The holds.** Where the servo rests with its torque on (|q̇| < 0.05 rad/s), the
  motor's torque balances gravity within the static friction: the voltage it applies
  (the applied duty times the bus voltage) spans a band around the gravity torque over
  k_t/R. Per gain and per 0.1 N·m bin of the gravity torque m·g·l·|sin q|: that voltage's
  5th, 50th and 95th percentiles and the band's width (p95 − p5). A constant (Coulomb)
  static friction gives one width at every load and gain, 2·F_s·R/k_t (the published M1's
  is given); a friction that grows with the torque the gears carry widens it.

Run: ``tools/workspace.sh exec python benchmarks/xl330_gains.py`` (after
``benchmarks/real_xl330.py``, whose fitted sets it reads); writes
``benchmarks/results/xl330_gains.json``. Seconds: rollouts only, no fit.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from provenance import environment, write_result

from bam_identify.data.legacy_logs import legacy_log_files, read_legacy_log
from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.rollouts import rollout
from bam_sim.models.files.parameter_file import published
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "real" / "xl330"
FITS = HERE / "results" / "real_xl330.json"
SPLIT = "kp100+200_to_400"
RECIPES = ("m1+supply", "m1+supply+latency")
MOVING = 1.0  # rad/s: above it, one sample of skew between q and the duty is visible
RESTING = 0.05  # rad/s: below it, a hold
BINS = (0.1, 0.2, 0.3, 0.4, 0.5)  # N·m: the gravity-torque bins of the holds


def law_duty(log: BenchLog, actuator: Actuator, clip: bool = True) -> np.ndarray:
    """The firmware's P law on the recorded position: kp·duty_gain·(goal − q)."""
    duty = log.kp * actuator.duty_gain * (log.goal - log.position)
    return np.clip(duty, -actuator.max_duty, actuator.max_duty) if clip else duty


def firmware_law(logs: list[BenchLog], actuator: Actuator) -> dict:
    on = [log.enabled.astype(bool) & np.isfinite(log.load) for log in logs]
    diff = np.concatenate([np.abs(log.load - law_duty(log, actuator))[m]
                           for log, m in zip(logs, on)])
    speed = np.concatenate([np.abs(log.velocity)[m] for log, m in zip(logs, on)])
    asked = np.concatenate([np.abs(law_duty(log, actuator, clip=False))[m]
                            for log, m in zip(logs, on)])
    return {"law_vs_recorded_duty_p99_at_rest": float(np.percentile(diff[speed < MOVING], 99)),
            "law_vs_recorded_duty_p99_moving": float(np.percentile(diff[speed >= MOVING], 99)),
            "largest_duty_asked": float(asked.max()),
            "share_above_full_duty": float(np.mean(asked > actuator.max_duty))}


def current_and_supply(logs: list[BenchLog], actuator: Actuator) -> dict:
    m1 = published(actuator, get_model("m1")).values
    kt, resistance = m1["kt"], m1["R"]
    current, drop = [], []
    for log in logs:
        on = log.enabled.astype(bool) & np.isfinite(log.load) & np.isfinite(log.input_voltage)
        i = (log.load * log.input_voltage - kt * log.velocity) / resistance
        current.append(np.abs(i[on]))
        drop.append(actuator.supply_voltage - log.input_voltage[on])
    current, drop = np.concatenate(current), np.concatenate(drop)
    return {"current_max_a": float(current.max()),
            "current_mean_a": float(current.mean()),
            "share_above_current_limit": float(np.mean(current > actuator.firmware_current_limit)),
            "bus_drop_mean_v": float(drop.mean()), "bus_drop_p95_v": float(np.percentile(drop, 95)),
            "bus_drop_max_v": float(drop.max()),
            # The largest series resistance the mean drop allows (all of it put on R_s).
            "series_resistance_bound_ohm": float(drop.mean() / current.mean()),
            "bus_drop_current_correlation": float(np.corrcoef(drop, current)[0, 1])}


def holds(logs: list[BenchLog], actuator: Actuator) -> dict:
    """The voltage applied at rest per gravity-torque bin (module docstring); bins with
    fewer than 20 samples are left out."""
    torque, volts = [], []
    for log in logs:
        rest = (log.enabled.astype(bool) & (np.abs(log.velocity) < RESTING)
                & np.isfinite(log.load) & np.isfinite(log.input_voltage))
        gravity = log.bench.mass * 9.81 * log.bench.length * np.sin(log.position)
        torque.append(np.abs(gravity[rest]))
        volts.append((np.sign(gravity) * log.load * log.input_voltage)[rest])
    torque, volts = np.concatenate(torque), np.concatenate(volts)
    out = {}
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = volts[(torque >= low) & (torque < high)]
        if inside.size >= 20:
            p5, p50, p95 = np.percentile(inside, [5, 50, 95])
            out[f"{low:.1f}-{high:.1f}"] = {"samples": int(inside.size), "p5_v": float(p5),
                                           "p50_v": float(p50), "p95_v": float(p95),
                                           "width_v": float(p95 - p5)}
    return out


def coulomb_band(actuator: Actuator) -> float:
    """2·F_s·R/k_t of the published M1 (its Coulomb friction is its static friction), V."""
    m1 = published(actuator, get_model("m1")).values
    return 2.0 * m1["friction_base"] * m1["R"] / m1["kt"]


def fitted(recipe: dict, actuator: Actuator) -> ParameterSet:
    return ParameterSet.build(actuator, get_model(recipe["model"]), recipe["parameters"])


def mae(params: ParameterSet, logs: list[BenchLog]) -> float:
    return float(np.concatenate([np.abs(rollout(params, log).position - log.position)
                                 for log in logs]).mean())


def fitted_by_gain(params: ParameterSet, logs: list[BenchLog]) -> dict:
    """The fitted set's position MAE, its error's correlation with sin q, and its input
    voltage against the recorded one."""
    errors, shapes, volts = [], [], []
    for log in logs:
        run = rollout(params, log)
        on = log.enabled.astype(bool)
        errors.append((log.position - run.position)[on])
        shapes.append(np.sin(log.position[on]))
        if run.input_voltage is not None:
            volts.append(np.abs(run.input_voltage - log.input_voltage)[on])
    error = np.concatenate(errors)
    out = {"position_mae_rad": float(np.abs(error).mean()),
           "error_sin_q_correlation": float(np.corrcoef(error, np.concatenate(shapes))[0, 1])}
    if volts:
        out["simulated_input_voltage_mae_v"] = float(np.nanmean(np.concatenate(volts)))
    return out


def main() -> int:
    if not FITS.is_file():
        print(f"error: no {FITS}: run benchmarks/real_xl330.py first", file=sys.stderr)
        return 1
    actuator = get_actuator("xl330")
    logs = [read_legacy_log(f) for f in legacy_log_files(DATA)]
    recipes = json.loads(FITS.read_text(encoding="utf-8"))["splits"][SPLIT]["recipes"]
    unlimited = dataclasses.replace(actuator, firmware_current_limit=0.0)
    gains: dict[str, dict] = {}
    for kp in sorted({log.kp for log in logs}):
        at = [log for log in logs if log.kp == kp]
        gains[f"{kp:g}"] = {"kp": kp, "logs": len(at), **firmware_law(at, actuator),
                            **current_and_supply(at, actuator), "holds": holds(at, actuator),
                            "fitted": {name: fitted_by_gain(fitted(recipes[name], actuator), at)
                                       for name in RECIPES}}
    held_out = [log for log in logs if log.kp == 400.0]
    limit = {name: {"with_limit_rad": mae(fitted(recipes[name], actuator), held_out),
                    "without_limit_rad": mae(fitted(recipes[name], unlimited), held_out)}
             for name in RECIPES}
    result = {"workload": {"data": "shared/data/real/xl330", "fits": f"real_xl330.json "
                           f"splits/{SPLIT}", "recipes": list(RECIPES),
                           "current_estimate": "published M1 kt, R"},
              "gains": gains, "current_limit_at_kp400": limit,
              "published_m1_hold_band_v": coulomb_band(actuator), "environment": environment()}
    write_result(HERE / "results" / "xl330_gains.json", result)
    for kp, row in gains.items():
        fit = row["fitted"]["m1+supply"]
        print(f"kp {kp}: law p99 {row['law_vs_recorded_duty_p99_at_rest']:.4f} (rest) "
              f"{row['law_vs_recorded_duty_p99_moving']:.4f} (moving), above full duty "
              f"{row['share_above_full_duty']:.1%}, I max {row['current_max_a']:.2f} A "
              f"({row['share_above_current_limit']:.1%} above the limit), bus drop "
              f"{row['bus_drop_mean_v']:.2f} V mean, corr with |I| "
              f"{row['bus_drop_current_correlation']:+.2f}; m1+supply MAE "
              f"{fit['position_mae_rad']:.4f}, V_in error "
              f"{fit.get('simulated_input_voltage_mae_v', float('nan')):.2f} V, "
              f"error~sin q {fit['error_sin_q_correlation']:+.2f}")
        print("  holds: " + ", ".join(f"|tau_g| {b} N·m: {h['p5_v']:.2f}..{h['p95_v']:.2f} V"
                                       for b, h in row["holds"].items()))
    for name, row in limit.items():
        print(f"{name} at kp 400: {row['with_limit_rad']:.4f} with the current limit, "
              f"{row['without_limit_rad']:.4f} without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
