"""Algorithm 1 on the pendulum bench: statics, energy, and hand-computed traces."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bam_sim_cases import MODELS

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.common.errors import BamError
from bam_sim.models.bam.friction import friction_budget
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.laws import servo_torque

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


def constant_log(bench, kp, dt, n, goal, enabled, q0, dq0=0.0):
    return BenchLog(bench=bench, kp=kp, dt=dt, goal=np.full(n, goal), enabled=np.full(n, enabled),
                    position=np.full(n, q0), velocity=np.full(n, dq0))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("actuator", ["mx64", "erob80_100"])
def test_static_holding_is_exact_for_1e5_steps(actuator, model):
    """From rest, inside the budget, the joint never moves: no drift, no chattering."""
    params = published_named(actuator, model)
    act = params.actuator
    bench = Bench(mass=1.0, length=0.15) if actuator == "mx64" else Bench(mass=8.2, length=0.5)
    # Torque on, goal slightly above: τ_m and τ_e oppose; pick q0 where friction holds.
    q0, goal, kp = 0.4, 0.45, act.gains[0]
    p = params.vector()
    tau_m, _ = servo_torque(act.family, p, act.consts(), kp, q0, 0.0, goal, True)
    tau_e = -bench.gravity_torque * math.sin(q0)
    budget = friction_budget(params.model_id, p, tau_m, tau_e, 0.0)
    if abs(tau_m + tau_e) > budget:  # move the goal until friction holds the joint
        goal = q0 + (goal - q0) * (-tau_e) / tau_m
        tau_m, _ = servo_torque(act.family, p, act.consts(), kp, q0, 0.0, goal, True)
    assert abs(tau_m + tau_e) <= budget
    run = rollout(params, constant_log(bench, kp, 0.005, 100_001, goal, True, q0))
    assert np.all(run.velocity == 0.0)
    assert np.all(run.position == q0)


def test_outside_the_budget_the_joint_moves():
    """The converse, so the holding test can fail: just beyond K_c the joint slides."""
    params = published_named("mx64", "m1")
    bench = Bench(mass=1.0, length=0.15)
    k_c = params.values["friction_base"]
    q_hold = math.asin(0.99 * k_c / bench.gravity_torque)
    q_slip = math.asin(1.01 * k_c / bench.gravity_torque)
    still = rollout(params, constant_log(bench, 0.0, 0.005, 200, 0.0, False, q_hold))
    slips = rollout(params, constant_log(bench, 0.0, 0.005, 200, 0.0, False, q_slip))
    assert np.all(still.position == q_hold)
    assert slips.position[-1] < q_slip - 1e-4


def free_swing(q0: float, dt: float, duration: float, friction: dict | None = None):
    values = {"kt": 1.6, "R": 3.9, "armature": 0.012, "friction_base": 0.0,
              "friction_viscous": 0.0, **(friction or {})}
    params = ParameterSet.from_names("mx64", "m1", values)
    bench = Bench(mass=1.0, length=0.15)
    n = int(round(duration / dt)) + 1
    run = rollout(params, constant_log(bench, 0.0, dt, n, 0.0, False, q0))
    energy = bench.energy(run.position, run.velocity, values["armature"])
    omega2 = bench.gravity_torque / bench.inertia(values["armature"])
    return energy, omega2, n


@pytest.mark.parametrize("dt", [0.005, 0.0025, 0.001])
def test_friction_free_energy_follows_integrator_bound(dt):
    """The published integrator scales small-oscillation energy by 1 − ω²Δt²/2 per step.

    (The map q' = q + Δt·q̇' + ½Δt²q̈, q̇' = q̇ + Δt·q̈ of a linear oscillator has
    determinant 1 − ω²Δt²/2.) The physical energy oscillates around that decay
    by at most about ω²Δt² of itself within a step, and never exceeds E_0.
    """
    energy, omega2, n = free_swing(0.05, dt, 5.0)
    predicted = (1.0 - 0.5 * omega2 * dt * dt) ** (n - 1)
    assert energy[-1] / energy[0] == pytest.approx(predicted, rel=0.03)
    assert energy.max() <= energy[0] * (1.0 + 1e-12)
    assert np.diff(energy).max() <= 1.5 * omega2 * dt * dt * energy[0]


def test_friction_free_energy_loss_is_first_order_in_dt():
    losses = [-math.log(free_swing(0.05, dt, 5.0)[0][-1] / free_swing(0.05, dt, 5.0)[0][0])
              for dt in (0.002, 0.001)]
    assert losses[0] / losses[1] == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize("q0", [0.3, 1.5, 2.8])
def test_energy_never_increases_with_m1_friction(q0):
    published_m1 = published_named("mx64", "m1").values
    friction = {k: published_m1[k] for k in ("friction_base", "friction_viscous")}
    energy, _, _ = free_swing(q0, 0.005, 10.0, friction)
    assert np.all(np.diff(energy) <= 1e-12 * energy[0])
    assert energy[-1] < 0.05 * energy[0]  # and it does dissipate


def test_hand_computed_trace_voltage_controlled():
    """Three steps of Algorithm 1 for an MX-like servo, M1, worked out by hand."""
    params = ParameterSet.from_names("mx64", "m1", {"kt": 1.5, "R": 3.0, "armature": 0.01,
                                               "friction_base": 0.1, "friction_viscous": 0.02})
    bench = Bench(mass=1.0, length=0.1)  # J = 0.01 + 0.01 = 0.02, mgl = 0.980665
    dt, kp, goal = 0.01, 10.0, 0.5
    run = rollout(params, constant_log(bench, kp, dt, 4, goal, True, 0.0))
    # Step 1 (q = q̇ = 0): duty = 10·0.158·0.5 = 0.79, U = 11.85 V, τ_m = 0.5·11.85 = 5.925;
    # τ_e = 0; budget = 0.1; τ_stop = −5.925 -> τ_f = −0.1; q̈ = 5.825/0.02 = 291.25;
    # q̇1 = 2.9125; q1 = 2.9125·0.01 + ½·291.25·1e-4 = 0.0436875.
    assert run.motor_torque[0] == pytest.approx(5.925, abs=1e-12)
    assert run.velocity[1] == pytest.approx(2.9125, abs=1e-12)
    assert run.position[1] == pytest.approx(0.0436875, abs=1e-12)
    # Steps 2 and 3 by the same rules, written out longhand.
    q, dq = 0.0436875, 2.9125
    for k in (1, 2):
        volts = min(max(kp * 0.158 * (goal - q), -0.9625), 0.9625) * 15.0
        tau_m = 1.5 / 3.0 * volts - 1.5**2 / 3.0 * dq
        tau_e = -1.0 * GRAVITY * 0.1 * math.sin(q)
        budget = 0.02 * abs(dq) + 0.1
        tau_f = min(max(-(0.02 / dt * dq + tau_m + tau_e), -budget), budget)
        ddq = (tau_m + tau_e + tau_f) / 0.02
        dq = dq + ddq * dt
        q = q + dq * dt + 0.5 * ddq * dt * dt
        assert run.motor_torque[k] == pytest.approx(tau_m, abs=1e-12)
        assert run.velocity[k + 1] == pytest.approx(dq, abs=1e-12)
        assert run.position[k + 1] == pytest.approx(q, abs=1e-12)
    # Sanity of the longhand numbers: step 2 has τ_m = 5.4073... − 2.184375.
    assert run.motor_torque[1] == pytest.approx(0.5 * 0.79 * (1 - 0.0436875 / 0.5) * 15.0
                                                - 0.75 * 2.9125, abs=1e-12)


def test_hand_computed_trace_current_controlled():
    """Three steps for an eRob-like servo (PD current law, I_heat and back-EMF), M1."""
    params = ParameterSet.from_names("erob80_50", "m1", {"kt": 5.0, "R": 2.0, "armature": 0.3,
                                                    "friction_base": 2.0,
                                                    "friction_viscous": 1.0})
    bench = Bench(mass=5.0, length=0.5)  # J = 1.25 + 0.3 = 1.55, mgl = 24.516625
    dt, kp, goal, q0 = 0.01, 20.0, 1.0, 0.2
    run = rollout(params, constant_log(bench, kp, dt, 4, goal, True, q0))
    # Step 1: I = 20·0.8 = 16 A -> clipped to I_heat = 12 A; τ_m = 5·12 = 60 N·m
    # (inside the back-EMF limit 5/2·48 = 120); τ_e = −24.516625·sin 0.2 = −4.870...;
    # budget = 2; τ_stop = −(60 − 4.870...) -> τ_f = −2.
    tau_e = -24.516625 * math.sin(0.2)
    ddq = (60.0 + tau_e - 2.0) / 1.55
    assert run.control[0] == 12.0
    assert run.motor_torque[0] == 60.0
    assert run.velocity[1] == pytest.approx(ddq * dt, abs=1e-12)
    assert run.position[1] == pytest.approx(q0 + 1.5 * ddq * dt * dt, abs=1e-12)
    q, dq = q0 + 1.5 * ddq * dt * dt, ddq * dt
    for k in (1, 2):
        amps = min(max(kp * (goal - q) - 1.0 * math.sqrt(kp) * dq, -12.0), 12.0)
        limit = 5.0 / 2.0 * 48.0
        tau_m = min(max(5.0 * amps, -limit - 12.5 * dq), limit - 12.5 * dq)
        tau_e = -24.516625 * math.sin(q)
        budget = 1.0 * abs(dq) + 2.0
        tau_f = min(max(-(1.55 / dt * dq + tau_m + tau_e), -budget), budget)
        ddq = (tau_m + tau_e + tau_f) / 1.55
        dq = dq + ddq * dt
        q = q + dq * dt + 0.5 * ddq * dt * dt
        assert run.control[k] == pytest.approx(amps, abs=1e-12)
        assert run.position[k + 1] == pytest.approx(q, abs=1e-12)


def test_bench_inertia_and_gravity_with_rod():
    bench = Bench(mass=1.0, length=0.2, arm_mass=0.3)
    assert bench.inertia(0.01) == pytest.approx(1.0 * 0.04 + 0.3 * 0.04 / 3 + 0.01)
    assert bench.gravity_torque == pytest.approx(1.15 * GRAVITY * 0.2)
    assert bench.external_torque(math.pi / 2) == pytest.approx(-1.15 * GRAVITY * 0.2)


@pytest.mark.parametrize(("field", "kwargs"), [
    ("mass", {"mass": -1.0, "length": 0.1}),
    ("length", {"mass": 1.0, "length": 0.0}),
    ("arm_mass", {"mass": 1.0, "length": 0.1, "arm_mass": float("nan")}),
])
def test_bad_bench_is_a_clear_error(field, kwargs):
    with pytest.raises(BamError, match=f"bench {field}"):
        Bench(**kwargs)


def test_step_called_from_python_equals_the_rollout():
    """The node-facing single step is the very step of the compiled rollouts."""
    from bam_sim.bench.pendulum import step

    params = published_named("mx106", "m5")
    act = params.actuator
    bench = Bench(mass=1.5, length=0.2)
    run = rollout(params, constant_log(bench, 16.0, 0.005, 3, 0.7, True, 0.1, 0.3))
    q, dq, tau_m, control = step(params.model_id, act.family, params.vector(), act.consts(), 16.0,
                                 bench.inertia(params.values["armature"]), bench.gravity_torque,
                                 0.1, 0.3, 0.7, True, False, 0.0, 0.005)
    assert (q, dq, tau_m, control) == (run.position[1], run.velocity[1], run.motor_torque[0],
                                       run.control[0])
