"""The drive/coast H-bridge as an option of the voltage law (the ``hbridge`` group)."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.hbridge import average_current, brute_force_average
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import C_SUPPLY, VOLTAGE
from bam_sim.models.servo.laws import bridge_voltage, torque_from_control

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

PERIOD = 5.0e-5  # s, a 20 kHz PWM


def coast_set(**groups: float) -> ParameterSet:
    values = {**published_named("mx64", "m1").values, "hbridge.pwm_period": PERIOD, **groups}
    return ParameterSet.from_names("mx64", "m1", values)


@pytest.mark.parametrize(("duty", "dq"), [(0.2, 0.0), (0.5, 2.0), (0.9, -3.0), (-0.4, 1.0),
                                          (0.05, 5.0)])
def test_voltage_law_torque_is_the_brute_force_bridge_average(duty: float, dq: float) -> None:
    params = coast_set(**{"inductance.L": 2.0e-4})
    p, c = params.vector(), params.actuator.consts()
    kt, r, supply = p[P.KT], p[P.R], c[C_SUPPLY]
    tau = torque_from_control(VOLTAGE, p, c, duty * supply, dq, True)
    # the circuit itself, integrated far below the PWM period (independent of the average)
    current = brute_force_average(duty, supply, kt * dq, r, 2.0e-4, PERIOD)
    assert tau == pytest.approx(kt * current, rel=2e-6, abs=1e-9)


def test_without_the_group_the_law_is_drive_brake_equation_13() -> None:
    params = published_named("mx64", "m1")
    p, c = params.vector(), params.actuator.consts()
    assert bridge_voltage(p, c, 3.0, 1.5) == 3.0
    kt, r = p[P.KT], p[P.R]
    assert torque_from_control(VOLTAGE, p, c, 3.0, 1.5, True) == \
        kt / r * 3.0 - kt * kt / r * 1.5


def test_bench_rollout_applies_the_coast_average() -> None:
    # Without inductance the current flows only while driven: ī = d (V − k_t q̇)/R.
    params = coast_set()
    log = command_log("steps", Bench(1.0, 0.15), 32.0)
    run = rollout(params, log)
    p, supply = params.vector(), params.actuator.supply_voltage
    kt, r = p[P.KT], p[P.R]
    duty = run.control / supply
    on = log.enabled & (duty > 0.0) & (np.abs(kt * run.velocity) < supply)  # |e| < V
    expected = kt * duty[on] * (supply - kt * run.velocity[on]) / r
    np.testing.assert_allclose(run.motor_torque[on], expected, rtol=1e-12, atol=1e-12)
    brake = rollout(published_named("mx64", "m1"), log)
    assert np.abs(run.position - brake.position).max() > 1e-3  # coasting changes the motion


def test_dc_motor_model_path_relaxes_to_the_coast_average() -> None:
    # With the inductance group the current is a state of the motor model; with
    # t_e = L/R far below the step it reaches the bridge's mean current every step.
    params = coast_set(**{"inductance.L": 1.0e-4})
    log = command_log("steps", Bench(1.0, 0.15), 32.0)
    run = rollout(params, log)
    p, supply = params.vector(), params.actuator.supply_voltage
    kt, r = p[P.KT], p[P.R]
    on = np.flatnonzero(log.enabled)[1:]
    mean = np.array([average_current(run.control[k] / supply, supply, kt * run.velocity[k],
                                     r, 1.0e-4, PERIOD) for k in on])
    np.testing.assert_allclose(run.current[on], mean, rtol=1e-9, atol=1e-9)


def test_group_belongs_to_the_voltage_family() -> None:
    values = {**published_named("erob80_50", "m1").values, "hbridge.pwm_period": PERIOD}
    with pytest.raises(BamError, match="group hbridge .* belongs to the voltage family"):
        ParameterSet.from_names("erob80_50", "m1", values)


def test_dcmotor_export_names_the_coast_bridge_as_lost() -> None:
    from bam_sim.mujoco_arm.dcmotor_export import losses

    assert any(line.startswith("hbridge.pwm_period") for line in losses(coast_set()))
