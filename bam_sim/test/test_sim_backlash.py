"""The backlash group on the bench: a dead band against its closed form, the group off
giving today's bits, the stepper and the rollout alike, and the sets refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bam_sim_cases import ep_set
from test_bench_sim import DT, as_log, drive

from bam_sim.bench.backlash import step_backlash
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import command_log
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import published_named

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

WIDTH = 0.02  # rad, about 1.1°
BENCH = Bench(mass=1.0, length=0.15, arm_mass=0.05)


def test_the_output_crosses_the_gap_as_a_free_load_and_stops_at_its_far_side():
    """Torque off, the motor held by its friction: the load, let go at the side of the gap
    gravity pulls it away from, falls freely across it under τ_e ≈ m·g·l (horizontal arm),
    in t = √(2b/a) with a = m·g·l/J_l, while the motor does not move; at the far side
    a plastic impact gives both bodies J_l·q̇/J, and the train's friction stops them."""
    params = published_named("mx64", "m1").replace(
        **{"backlash.width": WIDTH, "friction_base": 20.0})  # the motor cannot slip
    p = params.vector()
    inertia = BENCH.inertia(p[P.ARMATURE])
    load = inertia - p[P.ARMATURE]
    q0 = -math.pi / 2  # τ_e = +m·g·l: the load falls towards +q
    h = WIDTH / 2
    q, dq, s, ds = q0, 0.0, h, 0.0  # s = +h: the load at the gap's side it leaves
    path = [(q, dq, s, ds)]
    for _ in range(200):
        q, dq, s, ds, tau_m, _ = step_backlash(
            params.model_id, params.actuator.family, p, params.actuator.consts(), 0.0,
            inertia, BENCH.gravity_torque, q, dq, s, ds, q0, False, False, 0.0, DT)
        assert tau_m == 0.0
        path.append((q, dq, s, ds))
    path = np.array(path)
    apart = np.flatnonzero(np.abs(path[:, 2]) < h)
    motor = path[apart, 0] + path[apart, 2]  # θ_m = q + s while apart
    np.testing.assert_allclose(motor, q0 + h, rtol=0, atol=1e-15)  # held by its friction
    # the gap closes within the step the constant-acceleration fall says it does
    a = BENCH.gravity_torque / load  # sin(q) varies by 2e-4 over the gap: constant
    crossing = math.sqrt(2 * WIDTH / a)
    closed = apart[-1] + 1  # first state at the far side
    assert path[closed, 2] == -h and path[closed, 3] == 0.0
    assert (closed - 1) * DT <= crossing * (1 + 1e-3) and crossing <= closed * DT * (1 + 1e-3)
    # the plastic impact: the velocity the load had falls by J_l/J
    last_free = path[closed - 1, 1] + a * DT
    assert path[closed, 1] == pytest.approx(load / inertia * last_free, rel=1e-3)
    # then the friction stops the pair: the output has moved by the width, to within its
    # last free step past the side and the step in which it stopped
    assert abs(path[-1, 1]) < 1e-12
    assert abs(path[-1, 0] - (q0 + WIDTH)) < (last_free + path[closed, 1]) * DT


def test_a_set_without_backlash_keeps_its_bits():
    """Width 0 is the group off: the same positions to the bit as the set without it
    (the kernels branch on b > 0), and a width makes a difference."""
    params = published_named("mx64", "m4")
    commands = command_log("lift_drop", BENCH, params.actuator.gains[2], DT, duration=3.0)
    log = as_log(drive(BenchStepper(params, BENCH, DT, gain=params.actuator.gains[2]),
                       commands.goal, commands.enabled), BENCH)
    plain = rollout(params, log).position
    zero = rollout(params.replace(**{"backlash.width": 0.0}), log).position
    np.testing.assert_array_equal(zero, plain)
    wide = rollout(params.replace(**{"backlash.width": WIDTH}), log).position
    assert np.abs(wide - plain).max() > WIDTH / 4


@pytest.mark.parametrize("model", ["m1", "m6"])
def test_the_stepper_and_the_rollout_step_backlash_alike(model):
    params = published_named("mx64", model).replace(**{"backlash.width": WIDTH})
    kp = params.actuator.gains[2]
    commands = command_log("lift_drop", BENCH, kp, DT, duration=3.0)
    sim = BenchStepper(params, BENCH, DT, position=0.1, gain=kp, goal=float(commands.goal[0]))
    samples = drive(sim, commands.goal, commands.enabled)
    run = rollout(params, as_log(samples, BENCH))
    np.testing.assert_array_equal([s.position for s in samples], run.position)
    np.testing.assert_array_equal([s.motor_torque for s in samples], run.motor_torque)
    assert not np.all(commands.enabled)  # a torque-off phase: the load swings in the gap


@pytest.mark.parametrize(("make", "message"), [
    (lambda: ep_set("mx64", "ep_load"), "M1..M6"),
    (lambda: published_named("mx64", "m1").replace(
        **{"thermal.resistance": 5.0, "thermal.capacitance": 1.0}), "DC-motor"),
    (lambda: published_named("mx64", "m1").replace(armature=0.0), "armature > 0"),
])
def test_backlash_is_refused_where_it_cannot_run(make, message):
    with pytest.raises(BamError, match=message):
        make().replace(**{"backlash.width": WIDTH})
