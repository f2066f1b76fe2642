"""A one-joint MuJoCo pendulum driven by ServoArm against the numba pendulum.

Same bench (point mass + rod), same published parameter set, same command
log at Δt = 1 ms for 6 s, M1..M6, every identification trajectory, on a
Dynamixel (MX-64, voltage control) and an eRob (eRob80:100, current control).

* ``identification_integrator=True`` (MuJoCo + the ½q̈Δt² position term of
  the published Algorithm 1): MAE ≤ 2 mrad against
  :func:`bam_sim.bench.rollouts.rollout`. Measured at most 0.62 mrad; the
  residual is the viscous friction, which MuJoCo integrates implicitly and
  outside the friction clip (Algorithm 1: explicitly, inside the budget),
  and τ_e delayed by one step in the budget (paper IV-E).
* default (MuJoCo's semi-implicit Euler): the difference to the published
  integrator reaches ~4 mrad on fast free swings (lift_drop on the MX-64), so
  the arm is compared with Algorithm 1 restated with MuJoCo's update
  (q_k+1 = q_k + q̇_k+1·Δt, damping implicit, τ_e of the current state).
  Measured: ≤ 0.2 µrad for M1 and M2, whose budget ignores τ_e (what is left
  is the soft friction constraint, R/A = 1e-4): asserted ≤ 1 µrad; up to
  0.2 mrad for the load-dependent M3..M6 on lift_drop, where τ_e changes
  fastest (free swing) and the budget sees it one step late: asserted
  ≤ 0.5 mrad. So the default-mode residual is the position update, and the
  one-step delay of τ_e is the only other visible approximation.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import TRAJECTORIES, command_log
from bam_sim.models import parameter_vector as P
from bam_sim.models.bam.friction import applied_friction, friction_budget
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import BAM_MODELS
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.laws import servo_torque
from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

DT = 0.001
MAX_MAE = 2e-3  # rad, the bound
BENCHES = {
    # actuator: (bench, kp) — Table I mid-range configurations, with a light rod.
    "mx64": (Bench(1.0, 0.15, arm_mass=0.05), 8.0),
    "erob80_100": (Bench(8.2, 0.5, arm_mass=1.0), 25.0),
}


def mujoco_positions(params: ParameterSet, log: BenchLog, identification: bool) -> np.ndarray:
    """q_k of the MuJoCo pendulum, command k driving the step k -> k+1 (as rollout)."""
    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(log.bench, timestep=log.dt))
    arm = ServoArm(model, [ArmJoint("pendulum", "pendulum", params)], gains=[log.kp],
                   identification_integrator=identification)
    arm.reset([log.goal[0]])
    q = np.empty(len(log))
    for k in range(len(log)):
        q[k] = arm.data.qpos[0]
        arm.set_command(goals=log.goal[k], torque_enables=log.enabled[k])
        arm.step()
    return q


def semi_implicit_reference(params: ParameterSet, log: BenchLog) -> np.ndarray:
    """Algorithm 1 with MuJoCo's Euler update: friction clip on the static part,
    implicit viscous damping, q_k+1 = q_k + q̇_k+1·Δt (an independent restatement)."""
    p, act = params.vector(), params.actuator
    consts = act.consts()
    inertia = log.bench.inertia(p[P.ARMATURE])
    kv, dt = p[P.KV], log.dt
    q, dq = log.initial_state
    out = np.empty(len(log))
    for k in range(len(log)):
        out[k] = q
        tau_m, _ = servo_torque(act.family, p, consts, log.kp, q, dq, log.goal[k],
                                bool(log.enabled[k]))
        tau_e = -log.bench.gravity_torque * math.sin(q)
        static = friction_budget(params.model_id, p, tau_m, tau_e, dq) - kv * abs(dq)
        smooth = tau_m + tau_e - kv * dq
        tau_f = applied_friction(-(inertia / dt * dq + smooth), static)
        ddq = (smooth + tau_f) / (inertia + dt * kv)
        dq += ddq * dt
        q += dq * dt
    return out


@pytest.mark.parametrize("model", BAM_MODELS)
@pytest.mark.parametrize("actuator", list(BENCHES))
def test_arm_pendulum_matches_numba_pendulum(actuator: str, model: str) -> None:
    bench, kp = BENCHES[actuator]
    params = published_named(actuator, model)
    for name in TRAJECTORIES:
        log = command_log(name, bench, kp, dt=DT)
        assert log.time[-1] == pytest.approx(6.0)
        reference = rollout(params, log).position
        assert np.ptp(reference) > 0.3  # the trajectory really moves the pendulum
        ours = mujoco_positions(params, log, identification=True)
        mae = float(np.mean(np.abs(ours - reference)))
        assert mae <= MAX_MAE, f"{actuator} {model} {name}: MAE {mae * 1e3:.3f} mrad"


@pytest.mark.parametrize("model", BAM_MODELS)
@pytest.mark.parametrize("actuator", list(BENCHES))
def test_arm_pendulum_default_integrator_is_algorithm1_with_euler(actuator: str,
                                                                    model: str) -> None:
    bench, kp = BENCHES[actuator]
    params = published_named(actuator, model)
    bound = 1e-6 if model in ("m1", "m2") else 0.5e-3  # rad; see the module docstring
    for name in TRAJECTORIES:
        log = command_log(name, bench, kp, dt=DT)
        ours = mujoco_positions(params, log, identification=False)
        mae = float(np.mean(np.abs(ours - semi_implicit_reference(params, log))))
        assert mae <= bound, f"{actuator} {model} {name}: MAE {mae * 1e6:.3f} µrad"
