"""Elasto-plastic friction with stiction (Cisneros et al.) against the paper's equations.

Equation numbers refer to reference/chattering-free-stiction.md. The friction
functions Φ below are transcribed from the paper independently of
bam_sim.models.elastoplastic.model, as is the literal quadratic (43)-(48).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.elastoplastic.model import (
    EP_CV,
    EP_LOAD,
    EP_RATIONAL,
    EP_STRIBECK,
    NEAR_SLIDE,
    PAPER_GOAL,
    PAPER_INERTIA,
    ElastoPlasticParams,
    compliance,
    coupling_step_limit,
    ep_step,
    phi,
    phi_z_coulomb_viscous,
    phi_z_rational,
    phi_z_stribeck,
    plot_integral_compensation,
    simulate_joint,
)
from bam_sim.models.elastoplastic.model import phi_z_stribeck_near as phi_z_stribeck_near

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

T_PAPER = 1.0e-3
Z_PAPER = 1.0 / 55.0  # (12): 1/(5000·0.001 + 50)
F_S, F_C, V_S, D = 2.5, 0.2, 0.04, 4.5

# (F_S, F_C, v_S, D, Z): the paper's set; a milder one; one at the edge of (14),
# where 1/Z exceeds r = (F_S − F_C)/v_S − D by one part in 1e6.
SETS = {
    "paper": (F_S, F_C, V_S, D, Z_PAPER),
    "mild": (1.0, 0.5, 0.1, 0.3, 0.05),
    "edge": (2.5, 0.2, 0.04, 4.5, 1.0 / (53.0 * (1.0 + 1e-6))),
}


# -- Φ transcribed from the paper (x ≥ 0 side) ------------------------------

def stribeck_pos(xi: float, fs: float, fc: float, vs: float, d: float) -> float:
    """(21) with α = 1, for ξ ≥ 0."""
    return (fs - fc) * math.exp(-xi / vs) + fc + d * xi


def rational_pos(xi: float, fs: float, fc: float, vs: float, d: float) -> float:
    """(33) for ξ ≥ 0, coefficients (38)-(42)."""
    r = (fs - fc) / vs - d
    delta = (fs - fc) / (r + d)
    alpha = d * delta + fc
    beta = fs * delta
    return (d * xi * xi + alpha * xi + beta) / (xi + delta)


def cv_pos(xi: float, fs: float, fc: float, vs: float, d: float) -> float:
    """(19) for ξ ≥ 0, F = F_C."""
    return fc + d * xi


FORMS = {
    "coulomb_viscous": (lambda x, z, fs, fc, vs, d: phi_z_coulomb_viscous(x, z, fc, d), cv_pos),
    "stribeck": (phi_z_stribeck, stribeck_pos),
    "rational": (phi_z_rational, rational_pos),
}


def threshold(form: str, fs: float, fc: float) -> float:
    return fc if form == "coulomb_viscous" else fs


def x_grid(z: float, level: float) -> np.ndarray:
    """Dense around ±Z·F_S (the threshold itself and its neighbouring doubles) and wide."""
    t = z * level
    near = [t, math.nextafter(t, 0.0), math.nextafter(t, math.inf)]
    near += [t * (1.0 + s * d) for s in (-1.0, 1.0) for d in (1e-15, 1e-12, 1e-9, 1e-6, 1e-3)]
    xs = np.concatenate([near, np.linspace(0.0, 20.0 * t, 4001), np.logspace(-12, 4, 400)])
    xs = np.unique(xs)
    return np.concatenate([-xs[::-1], xs])


# -- Φ_Z: implicit equation (15)-(16), continuity, oddness --------------------

@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("set_name", SETS)
def test_phi_z_solves_implicit_equation(form: str, set_name: str) -> None:
    fs, fc, vs, d, z = SETS[set_name]
    phi_z, phi_pos = FORMS[form]
    level = threshold(form, fs, fc)
    for x in x_grid(z, level):
        y = phi_z(x, z, fs, fc, vs, d)
        if abs(x) <= z * level:
            assert y == x / z  # sticking: (16), second case
            continue
        assert math.copysign(1.0, y) == math.copysign(1.0, x)
        xi = abs(x) - z * abs(y)  # x − Z·y on the x > 0 side; it is ≥ 0 when sliding
        assert xi >= -1e-15 * abs(x)
        assert abs(y) == pytest.approx(phi_pos(max(xi, 0.0), fs, fc, vs, d), rel=1e-12)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("set_name", SETS)
def test_phi_z_continuous_at_threshold(form: str, set_name: str) -> None:
    fs, fc, vs, d, z = SETS[set_name]
    phi_z = FORMS[form][0]
    level = threshold(form, fs, fc)
    for sign in (1.0, -1.0):
        t = sign * z * level
        inside = phi_z(t, z, fs, fc, vs, d)
        outside = phi_z(math.nextafter(t, sign * math.inf), z, fs, fc, vs, d)
        assert inside == pytest.approx(sign * level, abs=1e-12 * level)
        assert outside == pytest.approx(inside, abs=1e-9 * level)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("set_name", SETS)
def test_phi_z_odd(form: str, set_name: str) -> None:
    fs, fc, vs, d, z = SETS[set_name]
    phi_z = FORMS[form][0]
    for x in x_grid(z, threshold(form, fs, fc)):
        assert phi_z(-x, z, fs, fc, vs, d) == -phi_z(x, z, fs, fc, vs, d)


@pytest.mark.parametrize("form, pos", [(EP_CV, cv_pos), (EP_STRIBECK, stribeck_pos),
                                       (EP_RATIONAL, rational_pos)])
def test_friction_function(form: int, pos) -> None:
    """phi() is (19), (21) with α = 1 and (33), odd, with Φ(±0) = ±F_S."""
    fs = F_C if form == EP_CV else F_S
    for x in np.linspace(0.0, 2.0, 401):
        y = phi(form, x, fs, F_C, V_S, D)
        assert y == pytest.approx(pos(x, fs, F_C, V_S, D), rel=1e-14)
        assert phi(form, -x, fs, F_C, V_S, D) == -y


def test_rational_matches_paper_quadratic() -> None:
    """The stable root equals the literal (44) with a, b₊, c₊ of (46)-(48)."""
    fs, fc, vs, d, z = SETS["paper"]
    r = (fs - fc) / vs - d
    delta = (fs - fc) / (r + d)
    alpha, beta = d * delta + fc, fs * delta
    a = d * z * z + z
    for x in np.linspace(z * fs * 1.001, 2.0, 500):
        b = -(x + delta + 2.0 * d * z * x + alpha * z)
        c = d * x * x + alpha * x + beta
        y_paper = (-b - math.sqrt(b * b - 4.0 * a * c)) / (2.0 * a)
        assert phi_z_rational(x, z, fs, fc, vs, d) == pytest.approx(y_paper, rel=1e-11)


def test_violating_14_breaks_continuity() -> None:
    """Why (14) matters: with 1/Z below r, Φ_Z jumps at Z·F_S."""
    z = 1.0 / 40.0  # r = 53 > 40
    t = z * F_S
    jump = phi_z_stribeck(math.nextafter(t, 1.0), z, F_S, F_C, V_S, D) - F_S
    assert abs(jump) > 0.1


@pytest.mark.parametrize("set_name", SETS)
def test_stribeck_table_path_agrees_with_the_libm_path(set_name: str) -> None:
    """Beyond |x| = Z·F_S + NEAR_SLIDE·v_S(1 + Z·D) Φ_Z uses the table exponential and
    the table of W0(ψ)/ψ; the threshold-side evaluation (libm exp/expm1, (27) as
    written) holds everywhere. They agree to rounding, and do not jump at the switch."""
    fs, fc, vs, d, z = SETS[set_name]
    edge = z * fs + NEAR_SLIDE * vs * (1.0 + z * d)
    xs = np.concatenate([edge * np.linspace(1.0, 40.0, 4001), np.logspace(-12, 4, 400) + edge])
    for x in xs:
        y = phi_z_stribeck(x, z, fs, fc, vs, d)
        assert y == pytest.approx(phi_z_stribeck_near(x, z, fs, fc, vs, d), rel=2e-15)
    below = phi_z_stribeck(math.nextafter(edge, 0.0), z, fs, fc, vs, d)
    above = phi_z_stribeck(math.nextafter(edge, 1.0), z, fs, fc, vs, d)
    assert abs(above - below) <= 1e-15 * abs(below) + 2.0 * math.ulp(edge) / z


def test_stribeck_far_sliding_is_viscous() -> None:
    """Far out e^(−x/v_S) vanishes: y = (F_C + D·x)/(1 + Z·D), no overflow, inf stays inf."""
    for x in (1e3, 1e6, 1e300):
        ref = (F_C + D * x) / (1.0 + Z_PAPER * D)
        assert phi_z_stribeck(x, Z_PAPER, F_S, F_C, V_S, D) == pytest.approx(ref, rel=1e-15)
        assert phi_z_stribeck(-x, Z_PAPER, F_S, F_C, V_S, D) == pytest.approx(-ref, rel=1e-15)
    assert phi_z_stribeck(math.inf, Z_PAPER, F_S, F_C, V_S, D) == math.inf
    assert math.isnan(phi_z_stribeck(math.nan, Z_PAPER, F_S, F_C, V_S, D))


# -- Reductions ---------------------------------------------------------------

def test_no_stiction_reduces_to_coulomb_viscous() -> None:
    """F_S = F_C: (21) and (33) become (19), so (30) becomes (20)."""
    for z in (Z_PAPER, 0.05):
        for x in x_grid(z, 1.0):
            ref = phi_z_coulomb_viscous(x, z, 1.0, D)
            assert phi_z_stribeck(x, z, 1.0, 1.0, V_S, D) == pytest.approx(ref, rel=1e-12)
            assert phi_z_rational(x, z, 1.0, 1.0, V_S, D) == pytest.approx(ref, rel=1e-12)


def test_load_form_without_load_terms_is_stribeck() -> None:
    rng = np.random.default_rng(7)
    p = ElastoPlasticParams.paper(EP_STRIBECK).vector()
    for _ in range(2000):
        u, e = rng.normal(0.0, 0.05), rng.normal(0.0, 5e-4)
        tau_m, tau_e = rng.normal(0.0, 3.0, 2)
        assert (ep_step(EP_LOAD, p, T_PAPER, u, e, tau_m, tau_e)
                == ep_step(EP_STRIBECK, p, T_PAPER, u, e, tau_m, tau_e))


def test_load_form_uses_m4_levels() -> None:
    """F_C = K_c + K_l|τ_m − τ_e|, F_S = F_C + K_c^s + K_l^s|τ_m − τ_e| (BAM's M4 budget)."""
    params = ElastoPlasticParams(EP_LOAD, F_S, F_C, V_S, D, 5000.0, 50.0,
                                 K_l=0.05, K_ls=0.02, max_load=3.0)
    p = params.vector()
    rng = np.random.default_rng(3)
    for _ in range(500):
        u, e = rng.normal(0.0, 0.2), rng.normal(0.0, 5e-4)
        tau_m, tau_e = rng.uniform(-1.5, 1.5, 2)
        load = abs(tau_m - tau_e)
        fc = F_C + 0.05 * load
        fs = fc + (F_S - F_C) + 0.02 * load
        x = u + Z_PAPER * 5000.0 * e  # (13)
        f, e_new = ep_step(EP_LOAD, p, T_PAPER, u, e, tau_m, tau_e)
        assert f == pytest.approx(phi_z_stribeck(x, Z_PAPER, fs, fc, V_S, D), rel=1e-13)
        assert e_new == pytest.approx(Z_PAPER * (50.0 * e + f * T_PAPER), rel=1e-13)  # (18)


def test_sticking_step_is_the_spring_damper() -> None:
    """While |v*| ≤ Z·F_S, (17)-(18) give e_k = e_{k−1} + T·u_k and f = K·e_k + B·ė (4)."""
    p = ElastoPlasticParams.paper().vector()
    rng = np.random.default_rng(5)
    for _ in range(500):
        u, e = rng.normal(0.0, 0.005), rng.normal(0.0, 1e-4)
        f, e_new = ep_step(EP_STRIBECK, p, T_PAPER, u, e, 0.0, 0.0)
        assert abs(f) <= F_S
        assert e_new == pytest.approx(e + T_PAPER * u, rel=1e-12, abs=1e-18)
        assert f == pytest.approx(5000.0 * e_new + 50.0 * (e_new - e) / T_PAPER,
                                  rel=1e-9, abs=1e-12)


# -- Static holding, breakaway, steady sliding --------------------------------

def holding_params(form: int, B: float) -> ElastoPlasticParams:
    base = ElastoPlasticParams.paper(form)
    load = {"K_l": 0.05, "K_ls": 0.02, "max_load": 3.0} if form == EP_LOAD else {}
    return ElastoPlasticParams(form, base.F_S, base.F_C, base.v_S, base.D, 5000.0, B, **load)


@pytest.mark.parametrize("form", [EP_CV, EP_STRIBECK, EP_RATIONAL, EP_LOAD])
@pytest.mark.parametrize("T, B, ramp", [(1e-3, 50.0, 0), (5e-3, 30.0, 200)])
def test_static_holding(form: int, T: float, B: float, ramp: int) -> None:
    """A joint loaded at 70 % of its static friction holds for 1e5 steps: no sliding,
    no drift, the displacement stays within the elastic F_S/K, the friction keeps its sign.

    At 5 ms, B = 30 keeps K·T + B = 55 (the Z of the 1 ms set, so (14) holds) and
    T·(K·T + 2B) < 4J. The load is ramped on over 1 s there: Algorithm 1 reads the
    current velocity, so a step load first gives the free joint T·τ/J, which the
    damper turns into (K·T + B)·T·τ/J > F_S — a breakaway, not a drift.
    """
    params = holding_params(form, B)
    n = 100_000 + ramp
    tau = np.full(n, 0.7 * params.F_S)
    tau[:ramp] *= np.arange(ramp) / max(ramp, 1)
    run = simulate_joint(params, T, PAPER_INERTIA, np.zeros(n), tau_ext=tau)
    settled = ramp + 2000
    level = params.F_S + (params.K_l + params.K_ls) * tau[-1]  # F_S at the held load
    assert not run.sliding.any()
    assert np.abs(run.q).max() <= level / params.K * (1.0 + 1e-9)
    signs = np.sign(run.f[settled:])
    assert np.count_nonzero(signs[1:] != signs[:-1]) == 0
    assert abs(run.q[-1] - run.q[settled]) <= 1e-12


def stribeck_steady(form: int, v: float, fs: float, fc: float) -> float:
    pos = rational_pos if form == EP_RATIONAL else stribeck_pos
    return pos(v, fs, fc, V_S, D)


@pytest.mark.parametrize("form", [EP_STRIBECK, EP_RATIONAL, EP_LOAD])
def test_breakaway_then_steady_sliding(form: int) -> None:
    """A torque ramped at ρ breaks the joint away when it reaches F_S (within ρT); held
    there, the joint slides at the velocity where Φ(v) equals it, and f = Φ(v)."""
    params = holding_params(form, 50.0)
    rho, T = 0.5, T_PAPER
    tau = rho * T * np.arange(8000)
    run = simulate_joint(params, T, PAPER_INERTIA, tau)
    kb = int(np.argmax(run.sliding))
    assert run.sliding[kb] and not run.sliding[:kb].any()
    load = tau[kb]
    fc = F_C + params.K_l * load
    fs = fc + (F_S - F_C) + params.K_ls * load
    assert fs - 1e-9 <= tau[kb] <= fs + rho * T + 1e-9
    assert tau[kb - 1] <= fs + 1e-9

    held = np.concatenate([tau[:kb + 1], np.full(3000, tau[kb])])
    run = simulate_joint(params, T, PAPER_INERTIA, held)
    v, f = run.u[-1], run.f[-1]
    assert run.sliding[-1] and v > 0.0
    assert f == pytest.approx(stribeck_steady(form, v, fs, fc), rel=1e-6)
    assert f == pytest.approx(tau[kb], rel=1e-6)  # force balance: no acceleration
    if form != EP_RATIONAL:  # the velocity itself: Φ(v) = τ on the sliding branch
        lo, hi = 0.2, 2.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if stribeck_pos(mid, fs, fc, V_S, D) < tau[kb] else (lo, mid)
        assert v == pytest.approx(lo, rel=1e-6)


# -- Section V-B: integral compensation, Fig. 13 -------------------------------

def slips(sliding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices where sliding starts and where it stops."""
    starts = np.flatnonzero(sliding[1:] & ~sliding[:-1]) + 1
    stops = np.flatnonzero(~sliding[1:] & sliding[:-1]) + 1
    return starts, stops


def test_integral_compensation_sawtooth(tmp_path) -> None:
    """The integral term (51) ramps τ_r until it reaches F_S, the joint slips past the goal
    and stops, repeatedly (stick-slip), as in Fig. 13.

    Tolerance on the sawtooth peaks: while sticking, the elasto-plastic element transmits
    f = K·e + B·u, which equals τ_r up to J·Δu/T, and that vanishes on a steady
    pre-sliding ramp; so the joint breaks away on the first step where τ_r exceeds
    F_S, and the peak exceeds F_S by at most that step's increment of τ_r.
    """
    path = tmp_path / "fig13.png"
    runs = plot_integral_compensation(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    for name in ("Stribeck", "rational"):
        run = runs[name]
        starts, stops = slips(run.sliding)
        starts = starts[starts > 10]  # the first slip is the step command itself
        assert len(starts) >= 3
        assert len(stops[stops > starts[0]]) >= 3
        for k in starts:
            peak, before = abs(run.tau_r[k]), abs(run.tau_r[k - 1])
            assert F_S - 1e-6 <= peak <= F_S + abs(run.tau_r[k] - run.tau_r[k - 1]) + 1e-6
            assert before <= F_S + 1e-6
        stuck = ~run.sliding[starts[0]:]
        assert np.abs(run.q[starts[0]:][stuck] - PAPER_GOAL).max() > math.radians(1.0)

    # Without stiction the integral term removes the static error (the paper's remark).
    cv = runs["Coulomb-viscous"]
    assert abs(cv.q[-1] - PAPER_GOAL) < math.radians(0.1)


# -- Validation: condition (14) ------------------------------------------------

@pytest.mark.parametrize("form", [EP_STRIBECK, EP_RATIONAL, EP_LOAD, EP_CV])
def test_paper_set_accepted(form: int) -> None:
    params = ElastoPlasticParams.paper(form)
    assert params.validate(T_PAPER) is params
    assert compliance(params.K, params.B, T_PAPER) == pytest.approx(Z_PAPER, rel=1e-15)


def test_paper_set_violates_only_the_sufficient_condition() -> None:
    """Z = 1/55 > v_S/F_S = 1/62.5 breaks (32), yet inf Φ' = −53 > −1/Z = −55: (14) holds."""
    params = ElastoPlasticParams.paper()
    assert Z_PAPER > V_S / F_S
    assert params.steepest_slope() == pytest.approx(-53.0, rel=1e-14)


@pytest.mark.parametrize("form", [EP_STRIBECK, EP_RATIONAL])
def test_steepest_slope_is_the_infimum(form: int) -> None:
    """The analytic inf Φ' (limit at 0⁺) against finite differences of the transcribed Φ."""
    pos = stribeck_pos if form == EP_STRIBECK else rational_pos
    xs = np.logspace(-7, 1, 3000)
    h = 1e-8 + 1e-6 * xs  # central differences: truncation and rounding both below 1e-7
    slopes = [(pos(x + s, F_S, F_C, V_S, D) - pos(x - s, F_S, F_C, V_S, D)) / (2 * s)
              for x, s in zip(xs, h) if x > s]
    inf = ElastoPlasticParams.paper(form).steepest_slope()
    assert min(slopes) >= inf - 1e-6
    assert min(slopes) == pytest.approx(inf, rel=1e-5)


@pytest.mark.parametrize("form", [EP_STRIBECK, EP_RATIONAL])
def test_violation_names_14_and_the_admissible_step(form: int) -> None:
    """B = 40 at T = 1 ms: K·T + B = 45 < r = 53. (14) bounds T from below (1/Z = K·T + B
    grows with T), so the message gives the smallest admissible step."""
    params = ElastoPlasticParams(form, F_S, F_C, V_S, D, 5000.0, 40.0)
    with pytest.raises(BamError) as err:
        params.validate(T_PAPER)
    message = str(err.value)
    assert "(14)" in message and "\n" not in message
    t_min = float(re.search(r"T ≥ (\S+) s", message).group(1))
    assert t_min == params.min_step() == pytest.approx((53.0 - 40.0) / 5000.0, rel=1e-12)
    assert params.validate(t_min) is params
    with pytest.raises(BamError, match=r"\(14\)"):
        params.validate(t_min * (1.0 - 1e-9))
    with pytest.raises(BamError):
        params.validate(math.nextafter(t_min, 0.0))  # smallest to the last double
    k_min = float(re.search(r"K ≥ (\S+) N", message).group(1))
    b_min = float(re.search(r"B ≥ (\S+) N", message).group(1))
    ElastoPlasticParams(form, F_S, F_C, V_S, D, k_min, 40.0).validate(T_PAPER)
    ElastoPlasticParams(form, F_S, F_C, V_S, D, 5000.0, b_min).validate(T_PAPER)


def test_load_range_is_checked_at_its_worst() -> None:
    """The load-dependent gap F_S − F_C grows with |τ_m − τ_e|: (14) is checked at max_load."""
    kw = {"K_l": 0.05, "K_ls": 0.1}
    assert ElastoPlasticParams(EP_LOAD, F_S, F_C, V_S, D, 5000.0, 50.0, max_load=0.5,
                               **kw).validate(T_PAPER)
    params = ElastoPlasticParams(EP_LOAD, F_S, F_C, V_S, D, 5000.0, 50.0, max_load=5.0, **kw)
    assert params.steepest_slope() == pytest.approx(D - (F_S - F_C + 0.5) / V_S, rel=1e-14)
    with pytest.raises(BamError, match=r"\(14\)"):
        params.validate(T_PAPER)
    params.validate(params.min_step())


@pytest.mark.parametrize("kwargs", [
    {"v_S": 0.0}, {"K": -1.0}, {"B": math.nan}, {"F_C": 3.0}, {"D": -0.1}, {"form": 9},
])
def test_bad_parameters_refused(kwargs: dict) -> None:
    base = {"form": EP_STRIBECK, "F_S": F_S, "F_C": F_C, "v_S": V_S, "D": D,
            "K": 5000.0, "B": 50.0}
    with pytest.raises(BamError):
        ElastoPlasticParams(**{**base, **kwargs})


def test_coupling_step_limit_is_jury_bound() -> None:
    """Sticking with the explicit coupling: spectral radius of the (u, e) update < 1 iff
    T < coupling_step_limit; simulate_joint refuses a step beyond it."""
    K, B, J = 5000.0, 50.0, PAPER_INERTIA
    limit = coupling_step_limit(K, B, J)

    def radius(T: float) -> float:
        a = T / J
        m = np.array([[1.0 - a * (K * T + B), -a * K], [T, 1.0]])
        return max(abs(np.linalg.eigvals(m)))

    assert radius(0.999 * limit) < 1.0 < radius(1.001 * limit)
    with pytest.raises(BamError):
        simulate_joint(ElastoPlasticParams.paper(), 1.001 * limit, J, np.zeros(10))
