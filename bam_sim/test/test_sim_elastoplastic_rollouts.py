"""The elasto-plastic models ep_* on the bench: rollouts, batches, stepper, validity, files.

Equation numbers refer to reference/chattering-free-stiction.md. The core
(Φ_Z, Algorithm 1, simulate_joint) is tested in test_sim_elastoplastic.py;
here it is the integration: the pendulum kernel must be that core, batched
must be single, and a set outside condition (14) or the coupling limit must
never be simulated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from bam_sim_cases import SEED, ep_set

from bam_sim.bench import lanes
from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_mae, batch_rollout, batch_violation, rollout
from bam_sim.bench.stepper import BenchStepper
from bam_sim.bench.trajectory import PROTOCOL_TRAJECTORIES, command_log
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.diagram import drive_backdrive
from bam_sim.models.elastoplastic.model import (
    EP_B,
    EP_CV,
    EP_K,
    EP_KC,
    EP_KCS,
    EP_KV,
    EP_LOAD,
    EP_RATIONAL,
    EP_STRIBECK,
    EP_VS,
    ElastoPlasticParams,
    simulate_joint,
)
from bam_sim.models.elastoplastic.validity import check_step, ep_form, max_load, violation
from bam_sim.models.files.parameter_file import dump_yaml, load, parse_yaml, published_named, save
from bam_sim.models.model_registry import EP_MODELS, FRICTION_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo import actuators

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DT = 0.005
def bench_of(actuator: str) -> Bench:
    return Bench(1.0, 0.15, 0.05) if actuator.startswith("mx") else Bench(8.2, 0.5)


# -- registry ----------------------------------------------------------------------------

def test_registry_ids_are_the_core_forms():
    forms = {"ep_cv": EP_CV, "ep_stribeck": EP_STRIBECK, "ep_rational": EP_RATIONAL,
             "ep_load": EP_LOAD}
    assert EP_MODELS == tuple(forms)
    for name, form in forms.items():
        assert ep_form(FRICTION_MODELS[name]) == form and FRICTION_MODELS[name].elastoplastic
    assert not any(m.elastoplastic for m in FRICTION_MODELS.values() if m.name.startswith("m"))
    assert "alpha" not in FRICTION_MODELS["ep_stribeck"].params  # (21) with α = 1


def test_core_indices_are_the_bam_vector():
    """ep_step reads BAM's parameter vector: K_c = F_C, K_c^s = F_S − F_C, K_v = D, v_s."""
    assert (EP_KC, EP_KCS, EP_KV, EP_VS) == (P.KC, P.KCS, P.KV, P.VS)
    assert (EP_K, EP_B) == (P.INDEX["contact_stiffness"], P.INDEX["contact_damping"])
    params = ep_set("mx64", "ep_stribeck")
    core = ElastoPlasticParams.from_vector(EP_STRIBECK, params.vector())
    v = params.values
    assert core.F_C == v["friction_base"]
    assert core.F_S == v["friction_base"] + v["friction_stribeck"]
    assert (core.v_S, core.D, core.K, core.B) == (
        v["dtheta_stribeck"], v["friction_viscous"], v["contact_stiffness"],
        v["contact_damping"])


# -- the pendulum kernel is the core's simulate_joint ------------------------------------

def core_of(params: ParameterSet, bench: Bench) -> tuple[ParameterSet, ElastoPlasticParams]:
    """The core's set of ``params``, with K_c^s taken back from it.

    The core holds F_S, so its vector() gives K_c^s as (K_c + K_c^s) − K_c, which
    may differ from K_c^s in the last bit; that value is used on both sides.
    """
    form = ep_form(params.model)
    load = max_load(params.model, params.actuator, params.vector(),
                    bench.gravity_torque, params.actuator.supply_voltage)
    core = ElastoPlasticParams.from_vector(form, params.vector(), float(load))
    if form != EP_CV:
        params = params.replace(friction_stribeck=float(core.vector()[EP_KCS]))
        core = ElastoPlasticParams.from_vector(form, params.vector(), float(load))
    np.testing.assert_array_equal(core.vector()[[EP_KC, EP_KCS, EP_K, EP_B, EP_KV]],
                                  params.vector()[[EP_KC, EP_KCS, EP_K, EP_B, EP_KV]])
    return params, core


@pytest.mark.parametrize("model", EP_MODELS)
@pytest.mark.parametrize("actuator", ["mx64", "erob80_50"])
def test_pendulum_rollout_equals_simulate_joint(actuator, model):
    """Same J, gravity, motor torques and step: the same trajectory, to the last bit."""
    bench = Bench(1.0, 0.15) if actuator == "mx64" else Bench(8.2, 0.5)  # no arm mass
    params, core = core_of(ep_set(actuator, model), bench)
    kp = params.actuator.gains[1]
    for name in PROTOCOL_TRAJECTORIES:
        log = command_log(name, bench, kp, DT, duration=4.0)
        run = rollout(params, log)
        assert np.ptp(run.position) > 0.3
        inertia = bench.inertia(params.values["armature"])
        q0, dq0 = log.initial_state
        joint = simulate_joint(core, DT, inertia, run.motor_torque,
                               mgl=bench.gravity_torque, q0=q0, u0=dq0)
        np.testing.assert_array_equal(joint.q, run.position)
        np.testing.assert_array_equal(joint.u, run.velocity)
        assert joint.sliding.any() and not joint.sliding.all()  # sticks and slips


# -- batched = single ---------------------------------------------------------------------

def population_of(params: ParameterSet, size: int, seed: int) -> np.ndarray:
    """Sets scattered ±20 % around ``params`` (all valid at DT on the benches below)."""
    rng = np.random.default_rng(seed)
    pop = np.tile(params.vector(), (size, 1))
    for name in params.model.params:
        pop[:, P.INDEX[name]] *= rng.uniform(0.8, 1.2, size)
    pop[:, P.Q_OFFSET] = rng.uniform(-0.05, 0.05, size)
    return pop


@pytest.mark.parametrize("replay", [False, True])
@pytest.mark.parametrize("model", EP_MODELS)
def test_batched_rollout_equals_single_bit_for_bit(model, replay):
    params = ep_set("mx64", model)
    act = params.actuator
    benches = [Bench(0.5, 0.1), Bench(1.5, 0.2, 0.1), Bench(1.0, 0.15)]
    logs = []
    for i, name in enumerate(PROTOCOL_TRAJECTORIES):
        cmd = command_log(name, benches[i % 3], act.gains[i % 4], DT, duration=2.0 + 0.7 * i)
        recorded = rollout(params, cmd)
        logs.append(BenchLog(cmd.bench, cmd.kp, DT, cmd.goal, cmd.enabled,
                             position=recorded.position, velocity=recorded.velocity,
                             control=recorded.control, supply_voltage=14.0 + 0.5 * i))
    batch = LogBatch.pack(logs, act)
    pop = population_of(params, lanes.BLOCK + 5, SEED)  # a full block of lanes, a partial
    assert np.all(batch_violation(get_model(model), pop, batch) == 0.0)
    q = batch_rollout(get_model(model), pop, batch, replay)
    mae = batch_mae(get_model(model), pop, batch, replay)
    for i, row in enumerate(pop):
        values = {name: float(row[P.INDEX[name]]) for name in params.values}
        one = ParameterSet.from_names("mx64", model, values)
        for j, log in enumerate(logs):
            single = rollout(one, log, replay).position
            np.testing.assert_array_equal(q[i, j, :len(log)], single)
            # The kernel sums left to right, as sum() does (numpy sums pairwise).
            assert mae[i, j] == sum(np.abs(single - log.position).tolist()) / len(log)


# -- static holding through the rollout kernel --------------------------------------------

@pytest.mark.parametrize("model", ["ep_stribeck", "ep_rational", "ep_load", "ep_cv"])
def test_static_holding_on_the_pendulum(model):
    """Torque off, gravity at 60 % of the static friction: the pendulum sags by the elastic
    deflection (< F_S/K) and then stays, without drift or chatter, for 500 s.

    B is chosen so the sticking spring-damper is well damped (ζ ≈ 0.9) and so that the
    first step's damper response (K·T + B)·T·τ_e/J stays below F_S (Algorithm 1 reads
    the current velocity: a sudden load is first felt through the damper).
    """
    bench = Bench(1.0, 0.15)
    f_s = 0.6
    q0 = math.asin(0.6 * f_s / bench.gravity_torque)
    extra = {"friction_base": 0.1, "friction_stribeck": f_s - 0.1,
             "contact_stiffness": 100.0, "contact_damping": 3.5}
    if model == "ep_cv":
        extra.update(friction_base=f_s)
        del extra["friction_stribeck"]
    if model == "ep_load":  # torque off: the load is |τ_e| itself
        extra.update(load_friction_base=0.01, load_friction_stribeck=0.02)
    params = ep_set("mx64", model, **extra)
    n = 100_000
    log = BenchLog(bench, 8.0, DT, np.full(n, q0), np.zeros(n, dtype=bool),
                   position=np.full(n, q0), velocity=np.zeros(n))
    run = rollout(params, log)
    settled = 2000  # 10 s: the spring-damper has settled long before
    sag = q0 - run.position
    assert np.all(sag >= -1e-15) and sag.max() <= f_s / params.values["contact_stiffness"]
    assert abs(run.position[-1] - run.position[settled]) <= 1e-12
    assert np.abs(run.velocity[settled:]).max() <= 1e-12
    # The same bench with M1 and F_C = 0.1 (< τ_e) lets the pendulum fall.
    m1 = ParameterSet.from_names("mx64", "m1", {**{k: params.values[k] for k in ("kt", "R",
                            "armature")}, "friction_base": 0.1, "friction_viscous": 0.02})
    assert rollout(m1, log).position[-1] < 0.3 * q0


def test_holding_with_the_servo_on():
    """Torque on, the goal 10 mrad from the pendulum: the servo's pull (below F_S) adds to
    gravity's, and the joint still stays put."""
    params = ep_set("mx64", "ep_stribeck", friction_base=0.3, friction_stribeck=0.2,
                    contact_stiffness=100.0, contact_damping=3.5)
    bench = Bench(0.5, 0.1)
    n = 40_000
    log = BenchLog(bench, 4.0, DT, np.full(n, 0.31), np.ones(n, dtype=bool),
                   position=np.full(n, 0.3), velocity=np.zeros(n))
    run = rollout(params, log)
    assert abs(run.position[-1] - 0.3) < 0.5 / 100.0
    assert abs(run.position[-1] - run.position[4000]) <= 1e-12


# -- the stepper (pendulum node, emulators) -------------------------------------------------

@pytest.mark.parametrize("model", ["ep_stribeck", "ep_load"])
def test_stepper_ticks_equal_rollout_bit_for_bit(model):
    params = ep_set("mx64", model)
    bench = bench_of("mx64")
    kp = params.actuator.gains[2]
    commands = command_log("lift_drop", bench, kp, DT, duration=3.0)
    sim = BenchStepper(params, bench, DT, position=0.1, velocity=-0.2, gain=kp)
    samples = []
    for goal, enabled in zip(commands.goal, commands.enabled, strict=True):
        sim.set_command(goal=float(goal), torque_enable=bool(enabled))
        samples.append(sim.tick())
    log = BenchLog(bench, kp, DT, commands.goal, commands.enabled,
                   position=np.array([s.position for s in samples]),
                   velocity=np.array([s.velocity for s in samples]))
    run = rollout(params, log)
    np.testing.assert_array_equal([s.position for s in samples], run.position)
    np.testing.assert_array_equal([s.velocity for s in samples], run.velocity)
    np.testing.assert_array_equal([s.motor_torque for s in samples], run.motor_torque)
    assert sim.deflection != 0.0


def test_stepper_keeps_the_deflection_for_new_values_and_resets_it_for_a_new_model():
    params = ep_set("mx64", "ep_stribeck")
    sim = BenchStepper(params, bench_of("mx64"), DT, position=0.4, torque_enable=False)
    for _ in range(50):
        sim.tick()
    e = sim.deflection
    assert e != 0.0
    sim.set_parameters(params.replace(friction_viscous=0.03))
    assert sim.deflection == e
    sim.set_parameters(published_named("mx64", "m4"))
    assert sim.deflection == 0.0
    sim.tick()
    assert sim.deflection == 0.0  # M1..M6 carry no deflection


def test_stepper_refuses_an_invalid_set_and_keeps_the_old_one():
    params = ep_set("mx64", "ep_stribeck")
    sim = BenchStepper(params, bench_of("mx64"), DT)
    stiff = params.replace(contact_stiffness=5.0e4)  # T·(K·T + 2B) ≫ 4J
    with pytest.raises(BamError, match="sticking is unstable"):
        sim.set_parameters(stiff)
    assert sim.params is params
    with pytest.raises(BamError, match=r"condition \(14\)"):
        BenchStepper(params.replace(dtheta_stribeck=0.001), bench_of("mx64"), DT)
    # Stable on this bench (J = 0.035 kg·m²), not on a light one (J = 0.012 kg·m²).
    sim = BenchStepper(params.replace(contact_stiffness=2000.0), bench_of("mx64"), DT)
    with pytest.raises(BamError, match="sticking is unstable"):
        sim.set_bench(mass=0.01, length=0.01)
    assert sim.bench == bench_of("mx64")


# -- condition (14) and the coupling limit ---------------------------------------------------

def test_invalid_sets_are_refused_before_any_simulation():
    params = ep_set("mx64", "ep_stribeck")
    log = command_log("lift_drop", Bench(1.0, 0.15), 8.0, DT, duration=1.0)
    # r = (F_S − F_C)/v_S − D = 0.08/0.001 − 0.02 ≫ K·T + B: (14) fails.
    bad = params.replace(dtheta_stribeck=0.001)
    with pytest.raises(BamError) as err:
        rollout(bad, log)
    message = str(err.value)
    assert "\n" not in message and "(14)" in message and "ep_stribeck" in message
    assert "0.005 s" in message
    batch = LogBatch.pack([log], params.actuator)
    with pytest.raises(BamError, match=r"\(14\)"):
        batch_mae(get_model("ep_stribeck"), np.stack([params.vector(), bad.vector()]),
                  LogBatch.pack([BenchLog(log.bench, 8.0, DT, log.goal, log.enabled,
                                          position=log.goal)], params.actuator))
    with pytest.raises(BamError, match="sticking is unstable"):
        batch_rollout(params.model, params.replace(contact_damping=50.0).vector(), batch)
    # (14) bounds T from below: r ≈ 1.98 lies between K·T + B at 1 ms (1.05) and 5 ms (2.85).
    coarse = params.replace(dtheta_stribeck=0.04)
    with pytest.raises(BamError, match=r"\(14\)"):
        rollout(coarse, command_log("lift_drop", Bench(1.0, 0.15), 8.0, 0.001, duration=0.1))
    rollout(coarse, log)


@pytest.mark.parametrize("model", EP_MODELS)
def test_violation_agrees_with_the_core_checks(model):
    """The vectorized score is 0 exactly for the sets the core's validate and
    check_coupling accept, near both boundaries too."""
    act = actuators.get_actuator("mx64")
    base = ep_set("mx64", model)
    rng = np.random.default_rng(SEED)
    pop = np.tile(base.vector(), (400, 1))
    pop[:, P.CONTACT_K] = rng.uniform(5.0, 3000.0, 400)
    pop[:, P.CONTACT_B] = rng.uniform(0.001, 6.0, 400)
    pop[:, P.VS] = rng.uniform(0.005, 0.5, 400)
    inertia = 0.02 + pop[:, P.ARMATURE]
    v = violation(FRICTION_MODELS[model], act, pop, DT, inertia, 1.5, 15.0)
    for row, score, j in zip(pop, v, inertia, strict=True):
        try:
            check_step(FRICTION_MODELS[model], act, row, DT, j, 1.5, 15.0)
            ok = True
        except BamError:
            ok = False
        assert ok == (score == 0.0)
    assert 0 < np.count_nonzero(v) < len(v)
    assert np.all(v >= 0.0)


def test_m_models_are_never_checked():
    m6 = published_named("mx64", "m6")
    log = command_log("lift_drop", Bench(1.0, 0.15), 8.0, DT, duration=1.0)
    assert batch_violation(m6.model, m6.vector(), LogBatch.pack([log], m6.actuator)) == 0.0


# -- diagrams and parameter files -------------------------------------------------------------

def test_drive_backdrive_of_an_ep_model_is_the_static_friction():
    """At rest an ep model holds |τ_m + τ_e| ≤ F_S (at its load for ep_load)."""
    params = ep_set("mx64", "ep_stribeck")
    tau_m = np.linspace(-1.0, 1.0, 9)
    drive, backdrive = drive_backdrive(params, tau_m)
    f_s = params.values["friction_base"] + params.values["friction_stribeck"]
    np.testing.assert_allclose(np.maximum(drive, backdrive), -tau_m + f_s, atol=1e-9)
    np.testing.assert_allclose(np.minimum(drive, backdrive), -tau_m - f_s, atol=1e-9)
    moving, _ = drive_backdrive(params, np.array([0.5]), velocity=1.0)
    assert moving[0] < -0.5 + f_s  # sliding friction Φ(1 rad/s) < F_S


@pytest.mark.parametrize("model", EP_MODELS)
def test_parameter_files_of_ep_models_round_trip(model, tmp_path):
    params = ep_set("erob80_100", model)
    path = save(params, tmp_path / f"{model}.yaml")
    again = load(path)
    assert again.model.name == model and again.values == params.values
    text = dump_yaml(params)
    assert "Cisneros et al." in text.splitlines()[0]
    assert "contact_stiffness" in text and "alpha" not in text


def test_parameter_file_errors_for_ep_models():
    with pytest.raises(BamError, match="no published ep_stribeck set"):
        published_named("mx64", "ep_stribeck")
    text = dump_yaml(ep_set("mx64", "ep_stribeck"))
    with pytest.raises(BamError, match="missing parameter contact_damping"):
        parse_yaml("\n".join(line for line in text.splitlines()
                             if "contact_damping" not in line))
    with pytest.raises(BamError, match="'contact_stiffness'.*plausible range"):
        parse_yaml(text.replace("contact_stiffness: 450.0", "contact_stiffness: 0.0"))
    with pytest.raises(BamError, match="'alpha' is not a parameter of model ep_stribeck"):
        parse_yaml(text.replace("contact_damping:", "alpha: 1.0\n    contact_damping:"))


# -- the simulate executable ------------------------------------------------------------------

def test_simulate_an_ep_parameter_file(tmp_path, capsys):
    from bam_sim.simulate_cli import main

    good = save(ep_set("mx64", "ep_stribeck"), tmp_path / "ep.yaml")
    figure = tmp_path / "sim.png"
    assert main(["--params", str(good), "--output", str(figure), "--diagram",
                 str(tmp_path / "diagram.png")]) == 0
    assert "ep_stribeck vs m1" in capsys.readouterr().out
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = save(ep_set("mx64", "ep_stribeck", dtheta_stribeck=0.001), tmp_path / "bad.yaml")
    assert main(["--params", str(bad), "--output", str(tmp_path / "bad.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "condition (14)" in err
    assert main(["--model", "ep_rational", "--output", str(tmp_path / "none.png")]) == 2
    assert "no published ep_rational set" in capsys.readouterr().err


# -- the MuJoCo arm ---------------------------------------------------------------------------

def arm_positions(params: ParameterSet, log: BenchLog) -> np.ndarray:
    """q_k of a one-joint MuJoCo pendulum driven by ServoArm (command k: step k -> k+1)."""
    import mujoco

    from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
    from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(log.bench, timestep=log.dt))
    arm = ServoArm(model, [ArmJoint("pendulum", "pendulum", params)], gains=[log.kp])
    arm.reset([log.goal[0]])
    q = np.empty(len(log))
    for k in range(len(log)):
        q[k] = arm.data.qpos[0]
        arm.set_command(goals=log.goal[k], torque_enables=log.enabled[k])
        arm.step()
    return q


@pytest.mark.parametrize("model", EP_MODELS)
@pytest.mark.parametrize("actuator", ["mx64", "erob80_100"])
def test_mujoco_arm_pendulum_equals_the_numba_pendulum(actuator, model):
    """MuJoCo's semi-implicit Euler is the ep integration: the friction force through the
    motor gives the numba pendulum back to rounding. ep_load reads τ_e of the previous
    step (MuJoCo computes it in the step), hence a small residual there."""
    bench, kp = (Bench(1.0, 0.15, 0.05), 8.0) if actuator == "mx64" else \
        (Bench(8.2, 0.5, 1.0), 25.0)
    params = ep_set(actuator, model)
    if model == "ep_load":  # (14) at 1 ms with the stall torque as load bound
        params = params.replace(contact_damping=2.0 * params.values["contact_damping"] + 1.0)
    for name in ("lift_drop", "steps"):
        log = command_log(name, bench, kp, dt=0.001, duration=3.0)
        reference = rollout(params, log).position
        gap = np.abs(arm_positions(params, log) - reference)
        assert np.ptp(reference) > 0.3
        assert gap.max() <= (2e-4 if model == "ep_load" else 1e-14), name


def test_mujoco_arm_refuses_an_invalid_ep_joint():
    import mujoco

    from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
    from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf

    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(Bench(1.0, 0.15), timestep=0.001))
    bad = ep_set("mx64", "ep_stribeck", dtheta_stribeck=0.001)
    with pytest.raises(BamError, match=r"joint 'pendulum': ep_stribeck .*condition \(14\)"):
        ServoArm(model, [ArmJoint("pendulum", "pendulum", bad)])
