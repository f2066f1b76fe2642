"""Friction budgets against the paper's equations and the model hierarchy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bam_sim_cases import ACTUATORS, MODELS, SEED

from bam_sim.common.errors import BamError
from bam_sim.models.bam.friction import applied_friction, friction_budget
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import FRICTION_MODELS as REGISTRY
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_vector import to_vector

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def paper_budget(model: str, v: dict, tau_m: float, tau_e: float, dq: float) -> float:
    """Equations (3), (6)-(10), transcribed independently of bam_sim.models.bam.friction."""
    g = v.get
    base = g("friction_viscous") * abs(dq) + g("friction_base")
    s = math.exp(-abs(dq / g("dtheta_stribeck", 1.0)) ** g("alpha", 1.0))
    load = abs(tau_m - tau_e)
    if model == "m1":
        return base
    if model == "m2":
        return base + s * g("friction_stribeck")
    if model == "m3":
        return base + g("load_friction_base") * load
    if model == "m4":
        return (base + g("load_friction_base") * load
                + s * (g("friction_stribeck") + g("load_friction_stribeck") * load))
    directional = abs(g("load_friction_motor") * tau_m - g("load_friction_external") * tau_e)
    static = g("friction_stribeck") + abs(g("load_friction_motor_stribeck") * tau_m
                                          - g("load_friction_external_stribeck") * tau_e)
    if model == "m6" and tau_m * tau_e < 0:  # published opposite-sign condition
        if abs(tau_m) > abs(tau_e):
            static += g("load_friction_external_quad") * tau_e**2
        else:
            static += g("load_friction_motor_quad") * tau_m**2
    return base + directional + s * static


@pytest.mark.parametrize("actuator", ACTUATORS)
@pytest.mark.parametrize("model", MODELS)
def test_budget_matches_paper_equations(actuator, model, rng):
    params = published_named(actuator, model)
    p = params.vector()
    scale = 3.0 if actuator.startswith("mx") else 60.0
    for tau_m, tau_e, dq in rng.uniform(-1, 1, (300, 3)) * [scale, scale, 4.0]:
        expected = paper_budget(model, params.values, tau_m, tau_e, dq)
        got = friction_budget(params.model_id, p, tau_m, tau_e, dq)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert got >= 0.0


def test_m6_quadratic_only_for_opposite_signs():
    values = {"friction_base": 0.0, "friction_viscous": 0.0, "friction_stribeck": 0.0,
              "dtheta_stribeck": 1.0, "alpha": 1.0, "load_friction_motor_quad": 0.5,
              "load_friction_external_quad": 0.25}
    p = to_vector(values)
    # At rest the Stribeck factor is 1: the budget is Q alone.
    assert friction_budget(6, p, 2.0, 1.0, 0.0) == 0.0          # same signs: no Q
    assert friction_budget(6, p, 2.0, -1.0, 0.0) == 0.25 * 1.0   # |τm| > |τe|: K_e^q τ_e²
    assert friction_budget(6, p, -1.0, 2.0, 0.0) == 0.5 * 1.0    # |τm| < |τe|: K_m^q τ_m²


REDUCTIONS = [
    # (model, zeroed or tied parameters, simpler model)
    ("m2", {"friction_stribeck": 0.0}, "m1"),
    ("m3", {"load_friction_base": 0.0}, "m1"),
    ("m4", {"load_friction_base": 0.0, "load_friction_stribeck": 0.0}, "m2"),
    ("m4", {"friction_stribeck": 0.0, "load_friction_stribeck": 0.0}, "m3"),
    ("m6", {"load_friction_motor_quad": 0.0, "load_friction_external_quad": 0.0}, "m5"),
]


@pytest.mark.parametrize("actuator", ["mx106", "erob80_100"])
@pytest.mark.parametrize(("model", "zeroed", "simpler"), REDUCTIONS)
def test_model_reduces_to_simpler_one(actuator, model, zeroed, simpler, rng):
    full = published_named(actuator, model).replace(**zeroed)
    keep = {k: v for k, v in full.values.items() if k in set(get_model(simpler).params)
            or k not in set(get_model(model).params)}
    reduced = published_named(actuator, simpler).replace(**keep)
    for tau_m, tau_e, dq in rng.uniform(-1, 1, (500, 3)) * [20.0, 20.0, 3.0]:
        a = friction_budget(full.model_id, full.vector(), tau_m, tau_e, dq)
        b = friction_budget(reduced.model_id, reduced.vector(), tau_m, tau_e, dq)
        assert a == pytest.approx(b, rel=1e-14, abs=1e-15)


def test_directional_model_with_equal_coefficients_is_m4(rng):
    """M5 with K_m = K_e = K_l and K_m^s = K_e^s = K_l^s is M4."""
    m4 = published_named("mx64", "m4")
    v = m4.values
    m5 = published_named("mx64", "m5").replace(
        **{k: v[k] for k in ("kt", "R", "armature", "friction_base", "friction_viscous",
                             "friction_stribeck", "dtheta_stribeck", "alpha")},
        load_friction_motor=v["load_friction_base"],
        load_friction_external=v["load_friction_base"],
        load_friction_motor_stribeck=v["load_friction_stribeck"],
        load_friction_external_stribeck=v["load_friction_stribeck"])
    for tau_m, tau_e, dq in rng.uniform(-3, 3, (500, 3)):
        a = friction_budget(4, m4.vector(), tau_m, tau_e, dq)
        b = friction_budget(5, m5.vector(), tau_m, tau_e, dq)
        assert a == pytest.approx(b, rel=1e-12)


def test_applied_friction_is_clipped_stopping_torque():
    assert applied_friction(0.3, 0.5) == 0.3
    assert applied_friction(-0.7, 0.5) == -0.5
    assert applied_friction(2.0, 0.5) == 0.5
    assert applied_friction(0.0, 0.0) == 0.0


def test_registry_names_parameters_and_bounds():
    assert list(REGISTRY) == ["m1", "m2", "m3", "m4", "m5", "m6",
                              "ep_cv", "ep_stribeck", "ep_rational", "ep_load", "lugre"]
    counts = {name: len(m.params) for name, m in REGISTRY.items()}
    # Friction parameters of each model (the paper counts 5, 3, 7, 9, 11 from M2 on);
    # the elasto-plastic ones add K and B to Φ's (19), (21)/(33) with α = 1, and M4's K_l, K_l^s;
    # LuGre: σ0, σ1, τ_c, τ_s, ω_s of Table 12 and σ2 of (9b).
    assert counts == {"m1": 2, "m2": 5, "m3": 3, "m4": 7, "m5": 9, "m6": 11,
                      "ep_cv": 4, "ep_stribeck": 6, "ep_rational": 6, "ep_load": 8, "lugre": 6}
    for m in REGISTRY.values():
        bounds = m.bounds({"friction": 2.0, "viscous": 3.0})
        defaults = m.defaults({"friction": 2.0, "viscous": 3.0})
        for name, (lo, hi) in bounds.items():
            assert lo <= defaults[name] <= hi
        base, viscous = (("lugre.coulomb", "lugre.viscous") if m.lugre
                         else ("friction_base", "friction_viscous"))
        assert bounds[base] == (0.0, 2.0)
        assert bounds[viscous] == (0.0, 3.0)


@pytest.mark.parametrize("actuator", ACTUATORS)
@pytest.mark.parametrize("model", MODELS)
def test_published_sets_lie_within_identification_bounds(actuator, model):
    from bam_sim.models.parameter_set import identification_bounds

    params = published_named(actuator, model)
    for name, (lo, hi) in identification_bounds(params.actuator, params.model).items():
        assert lo <= params.values[name] <= hi, name


def test_unknown_model_is_a_clear_error():
    with pytest.raises(BamError, match="unknown friction model 'm7'.*m1, m2"):
        get_model("m7")
