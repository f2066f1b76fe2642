"""The dcmotor characteristic curves against the stepped kernel and closed forms."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor import curves as C
from bam_sim.models.dcmotor import model as D
from bam_sim.models.dcmotor.model import DCMotor

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

LUGRE = 'lugre="400 0.6 0.03 0.06 0.2"'  # σ0, σ1, τ_c, τ_s, ω_s
MOTOR = ('resistance="1.5" motorconst="0.1" inductance="0.003" saturation="0.25" '
         'damping="0.001 0.0002 0.00001" input="voltage" ctrlrange="-12 12" ' + LUGRE)


def motor(tmp_path: Path, attrs: str = MOTOR) -> DCMotor:
    xml = f"""<mujoco><worldbody><body><joint name="j" type="hinge"/>
      <geom type="sphere" size="0.05" mass="0.2"/></body></worldbody>
      <actuator><dcmotor name="m" joint="j" {attrs}/></actuator></mujoco>"""
    path = tmp_path / "m.xml"
    path.write_text(xml)
    return DCMotor.from_mjcf(path, "m")


def steady_torque(m: DCMotor, ctrl: float, omega: float, dt: float = 1e-3,
                  steps: int = 4000) -> float:
    """Output torque (actuator force + drag) after running at constant speed ω."""
    m.reset()
    theta = 0.0
    force = 0.0
    for _ in range(steps):
        force = m.step(ctrl, theta, omega, dt)
        theta += omega * dt
    return force + m.damping(omega)


SPEEDS = (-90.0, -20.0, -0.3, -0.05, 0.05, 0.3, 20.0, 90.0, 150.0)


@pytest.mark.parametrize("omega", SPEEDS)
def test_envelope_is_the_steady_state_of_the_stepped_motor(tmp_path: Path, omega: float) -> None:
    m = motor(tmp_path)
    low, high = C.torque_speed_envelope(m.params, np.array([omega]))
    assert steady_torque(m, 12.0, omega) == pytest.approx(high[0], rel=1e-9, abs=1e-12)
    assert steady_torque(m, -12.0, omega) == pytest.approx(low[0], rel=1e-9, abs=1e-12)


def test_envelope_is_clipped_then_shifted_by_the_losses(tmp_path: Path) -> None:
    p = motor(tmp_path).params
    v, k, r = 12.0, 0.1, 1.5
    omega = np.array([1e-6, 50.0])
    _, high = C.torque_speed_envelope(p, omega)
    stall = min(k * v / r, 0.25)  # K v / R, clipped to τ_max (3)
    assert high[0] == pytest.approx(stall - 0.06, rel=1e-6)  # minus τ_s at rest
    assert high[1] == pytest.approx(min(k / r * (v - k * 50.0), 0.25) - C.drag(p, omega)[1]
                                    - (0.03 + 0.03 * math.exp(-(50.0 / 0.2) ** 2)))
    assert C.max_voltage(p) == 12.0


def test_resistance_rises_with_temperature(tmp_path: Path) -> None:
    p = motor(tmp_path, MOTOR + ' thermal="3 0.2 0 0.0039 25 25"').params
    assert C.resistance(p, 10.0) == pytest.approx(1.5 * (1.0 + 0.0039 * 10.0))
    cold = C.electrical_torque(p, 3.0, np.array([0.0]))[0]  # below the clip
    hot = C.electrical_torque(p, 3.0, np.array([0.0]), rise=10.0)[0]
    assert hot == pytest.approx(cold / (1.0 + 0.0039 * 10.0))


@pytest.mark.parametrize("omega", (-1.0, -0.2, -0.02, 0.01, 0.1, 0.4, 3.0))
def test_stribeck_curve_is_the_steady_friction(tmp_path: Path, omega: float) -> None:
    m = motor(tmp_path, 'resistance="1" motorconst="0.1" input="none" damping="0.002" ' + LUGRE)
    p = C.friction_only(m.params)
    state = np.zeros(D.N_STATES)
    force = 0.0
    for k in range(20000):
        force = D.dcmotor_step(p, state, 0.0, omega * k * 1e-3, omega, 1e-3)
    expected = C.stribeck_curve(m.params, np.array([omega]))[0]
    assert force + m.damping(omega) == pytest.approx(expected, rel=1e-9)


def test_stribeck_curve_limits(tmp_path: Path) -> None:
    p = motor(tmp_path).params
    near_zero, fast = C.stribeck_curve(p, np.array([1e-9, 40.0]))
    assert near_zero == pytest.approx(-0.06, rel=1e-6)  # τ_s
    assert fast == pytest.approx(-0.03 - C.drag(p, np.array([40.0]))[0])  # τ_c + drag


def test_dahl_loading_branch_matches_its_closed_form(tmp_path: Path) -> None:
    # Dahl (τ_s = τ_c, σ1 = 0): along a monotone stroke from z = 0,
    # τ(θ) = −τ_c (1 − exp(−σ0 θ / τ_c)).
    m = motor(tmp_path, 'resistance="1" motorconst="0.1" lugre="400 0 0.03 0.03 0.2"')
    theta, tau = C.hysteresis_loop(m.params, amplitude=5e-4, period=4.0, cycles=0.25, dt=1e-4)
    expected = -0.03 * (1.0 - np.exp(-400.0 * theta / 0.03))
    np.testing.assert_allclose(tau, expected, rtol=0.0, atol=1e-4 * 0.03)


def test_small_strokes_are_a_spring_and_large_ones_dissipate(tmp_path: Path) -> None:
    p = motor(tmp_path).params
    theta, tau = C.hysteresis_loop(p, amplitude=1e-6, period=2.0, cycles=1.0)
    np.testing.assert_allclose(tau, -400.0 * theta, rtol=0.0, atol=0.02 * 400e-6)
    theta, tau = C.hysteresis_loop(p, amplitude=1e-3, period=2.0, cycles=2.0)
    half = len(theta) // 2  # second cycle: the loop is closed
    work = np.sum(tau[half:-1] * np.diff(theta[half:]))
    assert work < 0.0  # friction takes energy out every cycle
    assert np.max(np.abs(tau)) <= 0.06 + 1e-12  # never beyond stiction τ_s
    assert np.max(np.abs(tau[half:])) > 0.03  # it slides: reaches the Coulomb level


def test_errors_name_what_is_missing(tmp_path: Path) -> None:
    bare = motor(tmp_path, 'resistance="1" motorconst="0.1"').params
    with pytest.raises(BamError, match="no voltage limit"):
        C.max_voltage(bare)
    with pytest.raises(BamError, match="no LuGre friction"):
        C.hysteresis_loop(bare, 1e-3)
    with pytest.raises(BamError, match="amplitude > 0"):
        C.hysteresis_loop(motor(tmp_path).params, -1.0)


def test_curves_are_drawn(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    C.plot_curves(motor(tmp_path).params, axes, label="motor")
    assert all(ax.has_data() for ax in axes)
    fig.savefig(tmp_path / "curves.png")
    plt.close(fig)
    assert (tmp_path / "curves.png").stat().st_size > 0
