"""Averaged drive/coast H-bridge (bam_sim.models.dcmotor.hbridge) against a brute-force circuit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor import hbridge as hb

V = 12.0
R = 2.0
RTOL = 1e-3
# (inductance H, PWM period s): τ_e/T_pwm = 1, 10, 50, 0.05
CIRCUITS = [(1e-4, 5e-5), (1e-3, 5e-5), (5e-3, 5e-5), (1e-4, 1e-3)]
DUTIES = [0.05, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95, 1.0]
EMFS = [0.0, 2.0, 6.0, 10.0, 11.8]


def close(a: float, b: float, rtol: float = RTOL) -> bool:
    return abs(a - b) <= rtol * abs(b) + 1e-12 * V / R


@pytest.mark.parametrize("inductance, period", CIRCUITS)
def test_average_matches_brute_force(inductance: float, period: float) -> None:
    for duty, emf in itertools.product(DUTIES, EMFS):
        avg = hb.average_current(duty, V, emf, R, inductance, period)
        brute = hb.brute_force_average(duty, V, emf, R, inductance, period)
        assert close(avg, brute), (duty, emf, avg, brute)


def test_grid_covers_both_conduction_modes() -> None:
    modes = {hb.continuous(d, V, e, R, ind, t)
             for (ind, t), d, e in itertools.product(CIRCUITS, DUTIES, EMFS)}
    assert modes == {True, False}
    per_circuit = [{hb.continuous(d, V, e, R, ind, t) for d, e in itertools.product(DUTIES, EMFS)}
                   for ind, t in CIRCUITS[:3]]
    assert all(m == {True, False} for m in per_circuit)


@pytest.mark.parametrize("duty, emf", [(-0.3, 2.0), (-0.7, -4.0), (0.6, -5.0), (0.05, -11.0),
                                       (0.4, 14.0), (0.0, 13.0), (0.3, -13.0), (-0.5, 13.0)])
def test_negative_duty_emf_and_overrunning_motor(duty: float, emf: float) -> None:
    """Reverse drive, a motor driven backwards, and |e| > V (diodes conduct regardless)."""
    for inductance, period in CIRCUITS[:2]:
        avg = hb.average_current(duty, V, emf, R, inductance, period)
        assert close(avg, hb.brute_force_average(duty, V, emf, R, inductance, period))


def test_reverse_duty_is_symmetric() -> None:
    for (ind, t), d, e in itertools.product(CIRCUITS, DUTIES, EMFS):
        assert hb.average_current(-d, V, -e, R, ind, t) == -hb.average_current(d, V, e, R, ind, t)


def test_full_duty_is_the_resistive_law() -> None:
    for (ind, t), e in itertools.product(CIRCUITS, EMFS):
        assert hb.average_current(1.0, V, e, R, ind, t) == pytest.approx((V - e) / R, rel=1e-12)
        assert hb.average_current(1.0, V, e, R, ind, t) == hb.drive_brake_current(1.0, V, e, R)


def test_continuous_conduction_is_the_bipolar_average() -> None:
    """CCM: ī = ((2d−1)V − e)/R whatever L and T: drive/brake at duty 2d − 1."""
    seen = 0
    for (ind, t), d, e in itertools.product(CIRCUITS, DUTIES, EMFS):
        if not hb.continuous(d, V, e, R, ind, t):
            continue
        seen += 1
        i = hb.average_current(d, V, e, R, ind, t)
        assert i == pytest.approx(hb.drive_brake_current(2 * d - 1, V, e, R), rel=1e-12)
        assert i == pytest.approx(hb.drive_brake_current(d, V, e, R) - (1 - d) * V / R,
                                  rel=1e-12, abs=1e-12)
        assert i > 0.0
    assert seen > 10


def test_fast_electrics_limit() -> None:
    """τ_e ≪ T_pwm: current only while driven, d(V − e)/R; drive/brake's value at e = 0."""
    ind, period = 1e-9, 1e-3  # τ_e/T = 5e-7
    for d, e in itertools.product(DUTIES, EMFS):
        i = hb.average_current(d, V, e, R, ind, period)
        assert close(i, d * (V - e) / R)
        assert hb.average_current(d, V, e, R, 0.0, period) == pytest.approx(d * (V - e) / R)
    for d in DUTIES:
        assert close(hb.average_current(d, V, 0.0, R, ind, period),
                     hb.drive_brake_current(d, V, 0.0, R))


def test_slow_electrics_limit() -> None:
    """τ_e ≫ T_pwm: ī → max(0, (2d − 1)V − e)/R, a dead zone below d = (1 + e/V)/2."""
    ind, period = 1.0, 5e-5  # τ_e/T = 1e4
    for d, e in itertools.product(DUTIES, EMFS):
        limit = max(0.0, (2 * d - 1) * V - e) / R
        assert abs(hb.average_current(d, V, e, R, ind, period) - limit) < 1e-3 * V / R


def test_modes_join_continuously() -> None:
    for (ind, t), e in itertools.product(CIRCUITS, EMFS[:-1]):
        lo, hi = 0.0, 1.0  # bisect the duty at the conduction boundary
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if hb.continuous(mid, V, e, R, ind, t) else (mid, hi)
        a = hb.average_current(lo, V, e, R, ind, t)
        b = hb.average_current(hi, V, e, R, ind, t)
        assert abs(a - b) < 1e-9 * V / R


def test_monotone_in_duty_and_zero_at_zero_duty() -> None:
    duties = np.linspace(0.0, 1.0, 201)
    for (ind, t), e in itertools.product(CIRCUITS, EMFS):
        i = np.array([hb.average_current(d, V, e, R, ind, t) for d in duties])
        assert i[0] == 0.0
        assert np.all(np.diff(i) >= -1e-12)


def test_torque_and_checked_wrapper() -> None:
    k = 0.05
    out = hb.coast_average(0.6, V, 3.0, R, 1e-3, k, 5e-5)
    assert out.torque == pytest.approx(k * out.current)
    assert out.torque == hb.average_torque(0.6, V, 3.0, R, 1e-3, k, 5e-5)
    assert out.continuous == hb.continuous(0.6, V, 3.0, R, 1e-3, 5e-5)
    # drive/brake at back-EMF K·ω is the paper's (13): τ = K/R·dV − K²/R·ω
    omega = 40.0
    assert k * hb.drive_brake_current(0.6, V, k * omega, R) == pytest.approx(
        k / R * 0.6 * V - k * k / R * omega)


@pytest.mark.parametrize("args, fragment", [
    ((1.5, V, 0.0, R, 1e-3, 0.05, 5e-5), "duty"),
    ((0.5, -1.0, 0.0, R, 1e-3, 0.05, 5e-5), "supply"),
    ((0.5, V, 0.0, 0.0, 1e-3, 0.05, 5e-5), "resistance"),
    ((0.5, V, 0.0, R, -1e-3, 0.05, 5e-5), "inductance"),
    ((0.5, V, 0.0, R, 1e-3, 0.05, 0.0), "period"),
])
def test_invalid_inputs(args: tuple, fragment: str) -> None:
    with pytest.raises(BamError, match=fragment):
        hb.coast_average(*args)
    with pytest.raises(BamError, match="inductance > 0"):
        hb.brute_force_average(0.5, V, 0.0, R, 0.0, 5e-5)
