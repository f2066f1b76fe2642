"""Servo control laws (paper section IV) against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models import servo
from bam_sim.models.actuators import CURRENT, VOLTAGE, get_actuator
from bam_sim.models.parameters import to_vector

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
