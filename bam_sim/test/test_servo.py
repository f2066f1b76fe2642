"""Servo control laws (paper section IV) against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.parameter_vector import to_vector
from bam_sim.models.servo import laws as servo
from bam_sim.models.servo.actuator import CURRENT, VOLTAGE
from bam_sim.models.servo.actuators import get_actuator

MX = get_actuator("mx64")
EROB = get_actuator("erob80_50")
P_MX = to_vector({"kt": 1.5, "R": 3.0})
P_EROB = to_vector({"kt": 5.0, "R": 2.0, "current_limit": 12.0})


def test_voltage_law_is_clipped_p_controller_and_dc_motor():
    # duty = 10·0.158·0.3 = 0.474 -> U = 7.11 V; τ = 0.5·7.11 − 0.75·2 = 2.055
    tau, volts = servo.servo_torque(VOLTAGE, P_MX, MX.consts(), 10.0, 0.2, 2.0, 0.5, True)
    assert volts == pytest.approx(0.474 * 15.0)
    assert tau == pytest.approx(1.5 / 3.0 * 7.11 - 1.5**2 / 3.0 * 2.0)


def test_voltage_law_saturates_at_max_duty():
    _, volts = servo.servo_torque(VOLTAGE, P_MX, MX.consts(), 32.0, 0.0, 0.0, 3.0, True)
    assert volts == pytest.approx(0.9625 * 15.0)
    _, volts = servo.servo_torque(VOLTAGE, P_MX, MX.consts(), 32.0, 0.0, 0.0, -3.0, True)
    assert volts == pytest.approx(-0.9625 * 15.0)


XL330 = get_actuator("xl330")
P_XL = to_vector({"kt": 0.4, "R": 2.8})


def test_xl330_duty_gain_from_its_registers():
    # 4096 counts per turn, P gain divisor 256, PWM limit 885 (full duty).
    assert XL330.duty_gain * 2.0 * np.pi * 256.0 * 885.0 == pytest.approx(4096.0)


@pytest.mark.parametrize("dq", [0.0, 3.0, -5.0])
def test_xl330_current_limit_holds_the_drive_current(dq):
    """A large error would ask for full duty; the firmware holds (U − k_t q̇)/R at the
    1.75 A limit instead, in either direction, at rest and moving."""
    for goal, sign in ((2.0, 1.0), (-2.0, -1.0)):
        tau, volts = servo.servo_torque(VOLTAGE, P_XL, XL330.consts(), 800.0, 0.0, dq, goal,
                                        True)
        current = (volts - 0.4 * dq) / 2.8
        assert abs(volts) < 7.5  # within the PWM range: the limit is what binds
        assert current == pytest.approx(sign * 1.75)
        assert tau == pytest.approx(0.4 * current)


def test_xl330_small_error_is_the_plain_p_law():
    _, volts = servo.servo_torque(VOLTAGE, P_XL, XL330.consts(), 400.0, 0.0, 0.0, 0.01, True)
    assert volts == pytest.approx(400.0 * XL330.duty_gain * 0.01 * 7.5)


def test_xl330_back_emf_beyond_the_supply_leaves_the_pwm_limit():
    # At 25 rad/s the back-EMF is 10 V > 7.5 V: the window lies above full duty, so the
    # duty is full and the current (7.5 − 10)/2.8 A is not the limit's.
    _, volts = servo.servo_torque(VOLTAGE, P_XL, XL330.consts(), 800.0, 0.0, 25.0, 2.0, True)
    assert volts == pytest.approx(7.5)


def test_current_law_pd_with_heat_limit():
    # I = 20·0.1 − 1·√20·0.5 = 2 − 2.2360679... (within ±12 A); τ = 5·I
    tau, amps = servo.servo_torque(CURRENT, P_EROB, EROB.consts(), 20.0, 0.9, 0.5, 1.0, True)
    expected = 20.0 * 0.1 - np.sqrt(20.0) * 0.5
    assert amps == pytest.approx(expected)
    assert tau == pytest.approx(5.0 * expected)
    _, amps = servo.servo_torque(CURRENT, P_EROB, EROB.consts(), 100.0, 0.0, 0.0, 1.0, True)
    assert amps == 12.0  # I_heat


def test_current_law_back_emf_limit():
    # At q̇ = 20 rad/s the supply can only drive (48 − 5·20)/2 = −26 A: τ ≤ 5·(−26) = −130 N·m.
    tau = servo.torque_from_control(CURRENT, P_EROB, EROB.consts(), 12.0, 20.0, True)
    assert tau == pytest.approx(5.0 / 2.0 * (48.0 - 5.0 * 20.0))
    tau = servo.torque_from_control(CURRENT, P_EROB, EROB.consts(), -12.0, -20.0, True)
    assert tau == pytest.approx(5.0 / 2.0 * (-48.0 + 5.0 * 20.0))


@pytest.mark.parametrize("family", [VOLTAGE, CURRENT])
def test_torque_disabled_means_no_motor_torque(family):
    p, c = (P_MX, MX.consts()) if family == VOLTAGE else (P_EROB, EROB.consts())
    # Even at speeds where the back-EMF would brake a powered motor.
    for dq in (0.0, 3.0, -30.0):
        assert servo.servo_torque(family, p, c, 10.0, 0.0, dq, 1.0, False) == (0.0, 0.0)
        assert servo.torque_from_control(family, p, c, 5.0, dq, False) == 0.0


def test_unknown_actuator_is_a_clear_error():
    with pytest.raises(BamError, match="unknown actuator 'xl999'.*mx64"):
        get_actuator("xl999")


STS = get_actuator("sts3215")
P_STS = to_vector({"kt": 1.2, "R": 2.7, "error_gain_ratio": 1.25, "max_velocity": 4.0})


def test_sts_duty_carries_the_gain_ratio_and_its_pwm_limit():
    # duty = 32·0.166·1.25·0.1 = 0.664 -> U = 0.664·7.4; τ = k_t/R·U − k_t²/R·q̇
    tau, volts = servo.servo_torque(VOLTAGE, P_STS, STS.consts(), 32.0, 0.1, 0.5, 0.2, True)
    assert volts == pytest.approx(0.664 * 7.4)
    assert tau == pytest.approx(1.2 / 2.7 * 0.664 * 7.4 - 1.2**2 / 2.7 * 0.5)
    _, volts = servo.servo_torque(VOLTAGE, P_STS, STS.consts(), 32.0, 0.0, 0.0, -1.0, True)
    assert volts == pytest.approx(-0.97 * 7.4)


def test_sts_firmware_target_ramps_to_the_goal_at_its_rate():
    """q_f,k = clip(q_d, q_f,k−1 ± v_f·Δt): a ramp of slope v_f, then the goal."""
    dt, target, seen = 0.005, 0.0, []
    for _ in range(80):
        target = servo.firmware_target(P_STS, target, 1.0, dt)
        seen.append(target)
    k = np.arange(1, 81)
    assert np.allclose(seen, np.minimum(1.0, 4.0 * k * dt), rtol=0, atol=1e-15)
    # back down the same way; other servos (max_velocity absent) take the goal at once
    assert servo.firmware_target(P_STS, 1.0, -1.0, dt) == pytest.approx(1.0 - 4.0 * dt)
    assert servo.firmware_target(P_MX, 0.0, 1.0, dt) == 1.0


def test_other_servos_ignore_the_absent_sts_parameters():
    # error_gain_ratio 0 (absent) is no factor: the MX law of the first test, unchanged
    _, volts = servo.servo_torque(VOLTAGE, P_MX, MX.consts(), 10.0, 0.2, 2.0, 0.5, True)
    assert volts == pytest.approx(10.0 * 0.158 * 0.3 * 15.0)


P_SAG = to_vector({"kt": 1.5, "R": 3.0, "supply.resistance": 0.8})


@pytest.mark.parametrize(("goal", "dq"), [(0.6, 0.0), (0.6, 2.0), (-0.6, -1.0), (0.05, 0.0)])
def test_supply_sag_solves_the_bus_current_equation(goal, dq):
    """V_in = V_s − R_s·duty·I with I = (duty·V_in − k_t q̇)/R, checked on the result."""
    volts = servo.control_law(VOLTAGE, P_SAG, MX.consts(), 32.0, 0.0, dq, goal)
    duty = float(np.clip(32.0 * 0.158 * goal, -0.9625, 0.9625))
    v_in = volts / duty
    current = (volts - 1.5 * dq) / 3.0
    assert v_in == pytest.approx(15.0 - 0.8 * duty * current, rel=1e-12)
    assert v_in < 15.0  # it draws current, so it sags


def test_supply_never_rises_and_holds_its_floor():
    # Braking against a fast joint the bridge returns current: no sag, no rise.
    volts = servo.control_law(VOLTAGE, P_SAG, MX.consts(), 32.0, 0.0, 30.0, 0.6)
    assert volts == pytest.approx(0.9625 * 15.0)
    floor = to_vector({"kt": 1.5, "R": 3.0, "supply.resistance": 50.0,
                       "supply.min_voltage": 11.0})
    volts = servo.control_law(VOLTAGE, floor, MX.consts(), 32.0, 0.0, 0.0, 0.6)
    assert volts == pytest.approx(0.9625 * 11.0)
