"""Drive/backdrive torques against closed forms (paper Fig. 2-4)."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.models.diagram import drive_backdrive, plot_diagram
from bam_sim.models.files.parameter_file import published_named

TAU_M = np.linspace(-5.0, 5.0, 41)


def test_m1_diagram_matches_closed_form():
    """M1 at rest: τ_e = −τ_m ± K_c, the + side being drive for τ_m > 0."""
    params = published_named("mx64", "m1")
    k_c = params.values["friction_base"]
    drive, backdrive = drive_backdrive(params, TAU_M)
    sign = np.where(TAU_M >= 0, 1.0, -1.0)
    np.testing.assert_allclose(drive, -TAU_M + sign * k_c, atol=1e-9)
    np.testing.assert_allclose(backdrive, -TAU_M - sign * k_c, atol=1e-9)


def test_m1_diagram_at_speed_adds_viscous_term():
    params = published_named("mx64", "m1")
    k_c, k_v = params.values["friction_base"], params.values["friction_viscous"]
    drive, _ = drive_backdrive(params, np.array([2.0]), velocity=1.5)
    assert drive[0] == pytest.approx(-2.0 + k_c + 1.5 * k_v, abs=1e-9)


def test_m3_diagram_matches_closed_form():
    """M3 for τ_m > 0, solving τ_m + τ_e = ±(K_c + K_l(τ_m − τ_e)) for τ_e.

    drive = (K_c − (1 − K_l)τ_m)/(1 + K_l), backdrive = −(K_c + (1 + K_l)τ_m)/(1 − K_l).
    """
    params = published_named("mx106", "m3")
    k_c, k_l = params.values["friction_base"], params.values["load_friction_base"]
    tau_m = np.linspace(0.1, 5.0, 20)
    drive, backdrive = drive_backdrive(params, tau_m)
    np.testing.assert_allclose(drive, (k_c - (1 - k_l) * tau_m) / (1 + k_l), atol=1e-9)
    np.testing.assert_allclose(backdrive, -(k_c + (1 + k_l) * tau_m) / (1 - k_l), atol=1e-9)


def test_self_locking_transmission_has_no_backdrive():
    params = published_named("mx64", "m5").replace(load_friction_external=1.2)
    _, backdrive = drive_backdrive(params, np.array([1.0]))
    assert backdrive[0] == -np.inf


def test_diagram_png_is_written(tmp_path):
    path = plot_diagram([published_named("erob80_100", m) for m in ("m1", "m6")],
                        tmp_path / "d.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000
