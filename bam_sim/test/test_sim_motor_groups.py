"""MuJoCo's DC-motor model on the bench: the dcmotor family, LuGre and the optional groups.

The reference is MuJoCo 4's own ``dcmotor`` on the same pendulum: a hinge with
the point mass at ``length`` below it, gravity 9.80665, the Euler integrator,
LuGre's σ2 as the joint damping (implicit, as the DC-motor document puts it).
The MJCF is written here from the test's numbers, and MuJoCo is stepped with
the control each family's law computes from MuJoCo's own state. Our batched
rollout of the same parameter set must follow it over the whole trajectory.
"""

from __future__ import annotations

import math

import mujoco
import numba
import numpy as np
import pytest
from bam_sim_cases import MOTOR_CONTROLLER, MOTOR_GROUPS

from bam_sim.bench.bench_log import BenchLog, LogBatch
from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.bench.rollouts import batch_errors, batch_rollout, rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.elastoplastic.validity import lugre_violation
from bam_sim.models.files.parameter_file import dump_yaml, parse_yaml, published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuators import get_actuator

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DT = 0.005
MASS, LENGTH = 1.0, 0.15
COM_INERTIA = 1e-6  # the body's own inertia about its centre, counted in our armature
STEPS = 1200
POSITION_ATOL = 1e-9  # rad

LUGRE = {"lugre.stiffness": 200.0, "lugre.damping": 3.0, "lugre.coulomb": 0.05,
         "lugre.static": 0.1, "lugre.stribeck": 0.2, "lugre.viscous": 0.05}
MOTOR_XML = ('resistance="{R}" motorconst="{K}" armature="{J}" inductance="0.004" '
             'thermal="4 2 0 0.0039 20 25" saturation="2.5 0 2000" cogging="0.02 12 0.3" '
             'lugre="200 3 0.05 0.1 0.2"')


def pendulum_xml(motor: str, mass: float = MASS, length: float = LENGTH) -> str:
    return f"""<mujoco>
  <option timestep="{DT}" integrator="Euler" gravity="0 0 -{GRAVITY!r}"/>
  <worldbody>
    <body name="arm">
      <joint name="j" type="hinge" axis="0 1 0" damping="{LUGRE['lugre.viscous']}"/>
      <inertial pos="0 0 -{length}" mass="{mass}" diaginertia="{COM_INERTIA} {COM_INERTIA}
        {COM_INERTIA}"/>
    </body>
  </worldbody>
  <actuator>
    <dcmotor name="m" joint="j" {motor}/>
  </actuator>
</mujoco>"""


def goals(seed: int = 0) -> np.ndarray:
    """Steps of random height every 0.5 s plus a slow sine, from 0 at rest."""
    rng = np.random.default_rng(seed)
    t = np.arange(STEPS) * DT
    goal = np.repeat(rng.uniform(-1.5, 1.5, STEPS // 100 + 1), 100)[:STEPS]
    goal[:100] = 0.0
    return goal + 0.3 * np.sin(2 * np.pi * 0.7 * t) * (t > 0.5)


def run_mujoco(xml: str, control) -> dict[str, np.ndarray]:
    """Positions, act and actuator force of MuJoCo, ``control(k, qpos, qvel)`` as ctrl."""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    out = {"q": [], "act": [], "force": []}
    for k in range(STEPS):
        out["q"].append(data.qpos[0])
        out["act"].append(data.act.copy())
        data.ctrl[0] = control(k, data.qpos[0], data.qvel[0])
        mujoco.mj_step(model, data)
        out["force"].append(data.actuator_force[0])
    return {k: np.array(v) for k, v in out.items()}


def motor_set(actuator: str, motor: dict[str, float]) -> ParameterSet:
    values = {**motor, **MOTOR_GROUPS, **LUGRE,
              "armature": motor["armature"] + COM_INERTIA}  # our J holds the body's own
    return ParameterSet.from_names(actuator, "lugre", values)


def check_against(ours, ref, thermal_slot: int) -> None:
    np.testing.assert_allclose(ours.position, ref["q"], rtol=0, atol=POSITION_ATOL)
    np.testing.assert_allclose(ours.temperature, MOTOR_GROUPS["thermal.ambient"]
                               + ref["act"][:, thermal_slot], rtol=1e-12, atol=1e-9)
    assert np.ptp(ref["q"]) > 1.0, "the trajectory hardly moved"
    rise = ref["act"][-1, thermal_slot]
    assert rise > 1.0, "the motor did not heat: the thermal state was not exercised"


def test_dcmotor_family_equals_mujocos_dcmotor_pendulum_with_every_state():
    kp = 20.0
    motor = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01}
    params = ParameterSet.from_names("dcmotor", "lugre", {**motor_set("dcmotor", motor).values,
                                                     **MOTOR_CONTROLLER})
    xml = pendulum_xml(MOTOR_XML.format(R=2.0, K=0.5, J=0.01)
                       + f' input="pos" controller="{kp} 5 0.3 4 0.5 20"')
    goal = goals()
    ref = run_mujoco(xml, lambda k, q, dq: goal[k])
    ours = rollout(params, BenchLog(Bench(MASS, LENGTH), kp, DT, goal, np.ones(STEPS, bool)))
    check_against(ours, ref, thermal_slot=2)
    assert ref["act"].shape[1] == 5 and np.all(np.abs(ref["act"]).max(axis=0) > 0.0)
    assert np.any(np.abs(ref["force"]) > 2.5 - 1e-9 - 0.2), "saturation not reached"
    # the current of the model is MuJoCo's current state wherever the clip is not active
    free = np.abs(0.5 * ref["act"][1:, 4]) < 2.5
    np.testing.assert_allclose(ours.current[:-1][free], ref["act"][1:, 4][free], rtol=1e-9,
                               atol=1e-9)


def test_voltage_law_through_the_motor_model_equals_mujoco_with_voltage_input():
    kp = 16.0
    act = get_actuator("mx64")
    mx = published_named("mx64", "m1").values
    motor = {"kt": mx["kt"], "R": mx["R"], "armature": mx["armature"]}
    params = motor_set("mx64", motor)
    xml = pendulum_xml(MOTOR_XML.format(R=mx["R"], K=mx["kt"], J=mx["armature"])
                       + ' input="voltage"')
    goal = goals(1)

    def duty_law(k, q, dq):  # equation (12), from MuJoCo's state
        duty = min(max(kp * act.duty_gain * (goal[k] - q), -act.max_duty), act.max_duty)
        return duty * act.supply_voltage

    ref = run_mujoco(xml, duty_law)
    ours = rollout(params, BenchLog(Bench(MASS, LENGTH), kp, DT, goal, np.ones(STEPS, bool)))
    check_against(ours, ref, thermal_slot=0)


def test_current_law_through_the_motor_model_equals_mujoco_with_ff_input():
    kp, mass, length = 100.0, 3.1, 0.5
    act = get_actuator("erob80_50")
    er = published_named("erob80_50", "m1").values
    lugre = {"lugre.stiffness": 2.0e4, "lugre.damping": 200.0}
    groups = {**MOTOR_GROUPS, "saturation.torque": 40.0, "cogging.amplitude": 0.5,
              "thermal.capacitance": 0.5}
    values = {"kt": er["kt"], "R": er["R"], "armature": er["armature"] + COM_INERTIA,
              **groups, **LUGRE, **lugre}
    params = ParameterSet.from_names("erob80_50", "lugre", values)
    motor = (f'resistance="{er["R"]}" motorconst="{er["kt"]}" armature="{er["armature"]}" '
             'inductance="0.004" thermal="4 0.5 0 0.0039 20 25" saturation="40 0 2000" '
             'cogging="0.5 12 0.3" lugre="20000 200 0.05 0.1 0.2" input="ff" '
             f'controller="0 0 0 0 0 {act.max_voltage}"')
    goal = goals(2)
    i_heat = params.values["current_limit"]

    def current_law(k, q, dq):  # equation (14): the host's PD current, as a torque request
        current = kp * (goal[k] - q) - act.damping * math.sqrt(kp) * dq
        return er["kt"] * min(max(current, -i_heat), i_heat)

    ref = run_mujoco(pendulum_xml(motor, mass, length), current_law)
    ours = rollout(params, BenchLog(Bench(mass, length), kp, DT, goal, np.ones(STEPS, bool)))
    check_against(ours, ref, thermal_slot=0)


def test_a_neutral_group_changes_nothing_but_rounding():
    # thermal with α = 0 leaves R(T) = R0: the motor model's torque is BAM's (13), by
    # another code path (the DC-motor kernel instead of servo.py).
    base = published_named("mx64", "m4")
    heated = base.replace(**{"thermal.resistance": 3.0, "thermal.capacitance": 20.0})
    log = command_log("raise_lower", Bench(1.0, 0.15), 16.0)
    a, b = rollout(base, log), rollout(heated, log)
    np.testing.assert_allclose(b.position, a.position, rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.motor_torque, a.motor_torque, rtol=0, atol=1e-9)
    assert np.all(np.isnan(a.temperature)) and np.all(np.isnan(a.current))
    assert b.temperature[-1] > b.temperature[0]  # it heats, with no effect on R


def test_torque_off_leaves_cogging_alone_and_no_current():
    params = ParameterSet.from_names("dcmotor", "m1", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "friction_base": 0.05,
        "friction_viscous": 0.02, "cogging.amplitude": 0.03, "cogging.poles": 8.0,
        "cogging.phase": 0.2, "inductance.timeconst": 0.01})
    log = command_log("lift_drop", Bench(1.0, 0.15), 20.0)
    run = rollout(params, log)
    off = ~log.enabled
    expected = 0.03 * np.sin(8.0 * run.position[off] + 0.2)  # equation (6)
    np.testing.assert_allclose(run.motor_torque[off], expected, rtol=0, atol=1e-15)
    assert np.all(run.current[off] == 0.0) and np.all(run.control[off] == 0.0)
    assert np.abs(run.current[~off]).max() > 0.1


def test_batched_rollouts_equal_single_rollouts_and_do_not_depend_on_threads():
    params = ParameterSet.from_names("dcmotor", "lugre", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, **MOTOR_GROUPS, **LUGRE,
        **MOTOR_CONTROLLER})
    logs = [command_log(name, Bench(m, 0.15), kp) for name, m, kp in
            (("lift_drop", 1.0, 20.0), ("steps", 0.5, 10.0), ("slow_oscillations", 1.5, 40.0))]
    population = np.stack([params.vector(), params.replace(**{"thermal.tempcoef": 0.0}).vector()])
    batch = LogBatch.pack(logs, params.actuator)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = batch_rollout(get_model("lugre"), population, batch)
        numba.set_num_threads(before)
        many = batch_rollout(get_model("lugre"), population, batch)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, many)
    for j, log in enumerate(logs):
        single = rollout(params, log)
        np.testing.assert_array_equal(many[0, j, :len(log)], single.position)
    assert not np.array_equal(many[0], many[1])  # α matters once the motor heats


def test_temperature_error_is_scored_against_the_recorded_temperature():
    params = ParameterSet.from_names("dcmotor", "m1", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "friction_base": 0.05,
        "friction_viscous": 0.02, "thermal.resistance": 4.0, "thermal.capacitance": 2.0,
        "thermal.ambient": 25.0})
    cmd = command_log("raise_lower", Bench(1.0, 0.15), 20.0)
    sim = rollout(params, cmd)
    offset = 0.7  # K: the recording reads that much above the model, from the start on
    log = BenchLog(cmd.bench, cmd.kp, cmd.dt, cmd.goal, cmd.enabled, position=sim.position,
                   temperature=sim.temperature + offset)
    mae, mae_t, _ = batch_errors(params.model, params.vector(),
                                 LogBatch.pack([log], params.actuator))
    # the rollout starts from the recorded (offset) temperature: the error decays from
    # `offset` as the rise converges; it stays within (0, offset]
    assert 0.0 < mae_t[0, 0] <= offset and mae[0, 0] < 1e-3
    exact = BenchLog(cmd.bench, cmd.kp, cmd.dt, cmd.goal, cmd.enabled, position=sim.position,
                     temperature=sim.temperature)
    _, zero, _ = batch_errors(params.model, params.vector(),
                              LogBatch.pack([exact], params.actuator))
    assert zero[0, 0] == 0.0
    no_thermal = published_named("mx64", "m1")
    _, none, _ = batch_errors(get_model("m1"), no_thermal.vector(),
                              LogBatch.pack([exact], no_thermal.actuator))
    assert np.isnan(none[0, 0])


def free_swing(params: ParameterSet, velocity: float, steps: int = 1200) -> np.ndarray:
    """Velocities of the pendulum released (torque off) from rest at the bottom with
    ``velocity``: only gravity and LuGre act. Through the kernel, past the step check."""
    from bam_sim.bench.rollouts import _rollout_kernel

    log = BenchLog(Bench(MASS, LENGTH), 20.0, DT, np.zeros(steps), np.zeros(steps, bool))
    q, dq, tau, ctrl, current, temperature, voltage = (np.empty(steps) for _ in range(7))
    _rollout_kernel(params.model_id, params.actuator.family, params.vector(),
                    log.consts(params.actuator), 20.0,
                    log.bench.inertia(params.values["armature"]), log.bench.gravity_torque,
                    0.0, velocity, log.goal, log.enabled, np.zeros(steps), DT, False,
                    np.empty(0), q, dq, tau, ctrl, current, temperature, voltage)
    return dq


@pytest.mark.parametrize("sigma0, sigma1, velocity, stable", [
    # sticking: T·σ0 = 1.0, stable iff σ1 + σ2 > 1.0 (ep_validity.lugre_violation)
    (200.0, 1.2, 0.05, True), (200.0, 0.8, 0.05, False),
    # sliding with reversals: stable iff T·(2σ1 − σ2) < 2J, σ1 < 6.5 on this bench
    (50.0, 6.0, 20.0, True), (50.0, 7.0, 20.0, False)])
def test_lugre_limits_separate_stable_from_diverging_sets(sigma0, sigma1, velocity, stable):
    values = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01, **LUGRE,
              "lugre.stiffness": sigma0, "lugre.damping": sigma1, "lugre.viscous": 0.0}
    params = ParameterSet.from_names("dcmotor", "lugre", values)
    inertia = Bench(MASS, LENGTH).inertia(0.01)
    assert (lugre_violation(params.vector()[None, :], DT, np.array([inertia]))[0]
            == 0.0) == stable
    settled = np.abs(free_swing(params, velocity)[-200:]).max()
    log = command_log("steps", Bench(MASS, LENGTH), 20.0)
    if stable:
        assert settled < 1e-6, "a stable set should come to rest"
        assert np.isfinite(rollout(params, log).position).all()
        return
    assert settled > 1e-3, "an unstable set should not come to rest"
    with pytest.raises(BamError, match="lugre parameters at the step 0.005 s") as err:
        rollout(params, log)
    assert "\n" not in str(err.value)


FULL = """
/**:
  ros__parameters:
    actuator: dcmotor
    model: lugre
    input: position
    resistance: 2.0
    motorconst: {Kt: 0.4, Ke: 0.9}
    armature: 0.01
    inductance: {L: 0.002}
    thermal: {resistance: 4.0, timeconst: 100.0, tempcoef: 0.0039, reftemp: 25, ambient: 22}
    saturation: {current: 6.0, current_rate: 5000.0}
    cogging: {amplitude: 0.02, poles: 12, phase: 0.3}
    lugre: {stiffness: 200, damping: 3.0, coulomb: 0.05, static: 0.1, stribeck: 0.2,
            viscous: 0.05}
    controller: {ki: 5.0, kd: 0.3, slewmax: 10.0, Imax: 0.5, Vmax: 24.0}
"""


def test_a_parameter_file_with_every_group_round_trips(tmp_path):
    params = parse_yaml(FULL)
    assert params.values["motorconst"] == pytest.approx(math.sqrt(0.4 * 0.9), rel=1e-15)
    assert params.values["thermal.capacitance"] == 25.0  # t_T / R_T
    assert params.groups == ("inductance", "saturation", "thermal", "cogging", "controller")
    text = dump_yaml(params)
    assert "    thermal:\n      resistance: 4.0\n" in text and "input: position" in text
    again = parse_yaml(text)
    assert again == params
    path = tmp_path / "motor.yaml"
    path.write_text(text, encoding="utf-8")
    from bam_sim.models.files.parameter_file import load
    assert load(path) == params


GOOD = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "friction_base": 0.05,
        "friction_viscous": 0.02}


def _file(actuator: str, model: str, body: str) -> str:
    return f"/**:\n  ros__parameters:\n    actuator: {actuator}\n    model: {model}\n{body}"


MX = ("    kt: 1.6\n    R: 3.2\n    armature: 0.01\n    friction_base: 0.05\n"
      "    friction_viscous: 0.02\n")
DC = ("    resistance: 2.0\n    motorconst: 0.5\n    armature: 0.01\n"
      "    friction_base: 0.05\n    friction_viscous: 0.02\n")


@pytest.mark.parametrize("text, message", [
    (_file("mx64", "m1", MX + "    thermal: {resistence: 3.0, capacitance: 2.0}\n"),
     "'thermal.resistence' is not a sub-attribute of group thermal; did you mean "
     "'thermal.resistance'"),
    (_file("mx64", "m1", MX + "    thermal: 3.0\n"),
     "group thermal must be a mapping of its sub-attributes (resistance, capacitance"),
    (_file("mx64", "m1", MX + "    thermal: {resistance: 3.0}\n"),
     "group thermal in <string> needs resistance and capacitance"),
    (_file("mx64", "m1", MX + "    controller: {kd: 0.3}\n"),
     "section 2.5) belongs to the dcmotor family; mx64 runs its own voltage law"),
    (_file("mx64", "m1", MX + "    lugre: {stiffness: 200}\n"),
     "'lugre.stiffness' belongs to the LuGre friction model; set model: lugre"),
    (_file("dcmotor", "m1", DC + "    input: voltage\n"),
     "input 'voltage' in <string> is not supported"),
    (_file("mx64", "m1", MX + "    input: position\n"), "'input' in <string> is the input mode"),
    (_file("dcmotor", "m1", DC + "    controller: {kp: 3.0}\n"),
     "k_p is the command's gain"),
    (_file("mx64", "m1", MX + "    motorconst: 1.6\n"), "mx64 names parameter 'motorconst' 'kt'"),
    (_file("dcmotor", "m1", DC.replace("motorconst", "kt")), "dcmotor names parameter 'kt' "
     "'motorconst'"),
    (_file("mx64", "m1", MX + "    cogging: {amplitude: 0.1}\n"), "has an amplitude but no poles"),
    (_file("mx64", "m1", MX + "    cogging: {poles: {a: 1}}\n"), "'cogging.poles' in <string> "
     "must be a number"),
    (_file("mx64", "m1", MX + "    thermal: {resistance: -3.0, capacitance: 2.0}\n"),
     "'thermal.resistance' in <string> = -3 is outside its plausible range"),
    (_file("dcmotor", "m1", DC.replace("motorconst: 0.5", "motorconst: {Kt: 0, Ke: 0}")),
     "motorconst needs Kt or Ke > 0"),
])
def test_bad_groups_are_refused_in_one_line(text, message):
    with pytest.raises(BamError) as err:
        parse_yaml(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_dcmotor_set_has_no_published_defaults():
    with pytest.raises(BamError, match="there is no published m1 set of dcmotor"):
        published_named("dcmotor", "m1")
    with pytest.raises(BamError, match="there is no published lugre set"):
        published_named("mx64", "lugre")
    assert ParameterSet.from_names("dcmotor", "m1", GOOD).values["motorconst"] == 0.5


def test_group_bounds_lie_inside_the_plausible_ranges():
    from bam_sim.models.dcmotor.groups import GROUPS
    from bam_sim.models.servo.actuators import ACTUATORS

    for actuator in ACTUATORS.values():
        for group in GROUPS.values():
            bounds = group.bounds(actuator.scales)
            assert set(bounds) == set(group.identified)
            defaults = group.defaults(actuator.scales)
            for name, (low, high) in bounds.items():
                assert low < high and low <= defaults[name] <= high, name
                for value in (low, high):
                    P.check_value(name, value, f"bounds of {actuator.name} {group.name}")
