"""bam_sim.models.dcmotor.model against MuJoCo's own <dcmotor> (MuJoCo 4.0).

Each model is a pendulum on a hinge (gravity and a joint spring keep the
motion bounded) driven by one dcmotor. MuJoCo is stepped with a
deterministic control signal; the actuator length and velocity it used, the
force it produced and its activation states are recorded, and the
re-implementation is fed the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor import model as dc
from bam_sim.models.dcmotor.model import DCMotor

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

DT = 0.001
STEPS = 1500
FORCE_ATOL = 1e-9   # N·m
FORCE_RTOL = 1e-7
ACT_RTOL = 1e-10
ACT_ATOL = 1e-12

BASE = 'resistance="1.5" motorconst="0.1"'
THERMAL = 'thermal="3 0.2 0 0.0039 25 30"'
ALL = ('resistance="1.5" motorconst="0.09 0.11" inductance="0.003" ' + THERMAL +
       ' saturation="0.35 0 400" cogging="0.02 6 0.4" lugre="300 0.8 0.02 0.05 0.1" '
       'damping="0.001 0.0003 0.0001" armature="0.0002" gear="2" input="pos ff" '
       'controller="0.8 3 0.03 2 0.05 5" ctrlrange="-1 1"')

# name: (dcmotor attributes, what to check was exercised)
CASES = {
    "stateless": (BASE, None),
    "kt_ke": ('resistance="1.5" motorconst="0.08 0.12"', None),
    "nominal": ('nominal="6 0.4 55" damping="0.0002"', None),
    "inductance": (BASE + ' inductance="0.004"', None),
    "timeconst_below_dt": (BASE + ' inductance="0 0.0004"', None),
    "current_rate": (BASE + ' inductance="0.004" saturation="0 0 300"', "current_rate"),
    "thermal": (BASE + " " + THERMAL, "thermal"),
    "thermal_inductance": (BASE + " " + THERMAL + ' inductance="0.004"', "thermal"),
    "saturation_torque": (BASE + ' saturation="0.15"', "saturation"),
    "saturation_current": (BASE + ' saturation="0 1.2"', "saturation"),
    "cogging": (BASE + ' cogging="0.03 6 0.4"', None),
    "lugre": (BASE + ' lugre="300 0.8 0.02 0.05 0.1"', None),
    "damping": (BASE + ' damping="0.002 0.0005 0.0001"', None),
    "armature": (BASE + ' armature="0.0005"', None),
    "gear": (BASE + ' gear="3" armature="0.0001" damping="0.001 0.0002 0.00005"', None),
    "ctrlrange": (BASE + ' ctrlrange="-4 4"', "ctrlrange"),
    "input_voltage": (BASE + ' input="voltage"', None),
    "input_pos": (BASE + ' input="pos" controller="0.8 0 0.03"', None),
    "input_vel": (BASE + ' input="vel" controller="0.2 0 0.05"', None),
    "input_ff": (BASE + ' input="ff"', None),
    "input_none": (BASE + ' input="none" lugre="300 0.8 0.02 0.05 0.1"', None),
    "input_all": (BASE + ' input="pos vel ff voltage" controller="0.8 0.5 0.03 2 0.1 5"', None),
    "vmax": (BASE + ' input="pos" controller="2 0 0.05 0 0 3"', None),
    "slew": (BASE + ' input="pos" controller="0.8 0 0.03 1.5"', "slew"),
    "slew_vel": (BASE + ' input="vel ff" controller="0 0 0.05 20"', "slew"),
    "integral": (BASE + ' input="pos" controller="0.8 3 0.03"', None),
    "integral_antiwindup": (BASE + ' input="pos" controller="0.8 3 0.03 0 0.05"', "antiwindup"),
    "all": (ALL, "all"),
}

# amplitude of the test signal per input kind: volts, rad, rad/s, N·m
AMPLITUDE = {"voltage": 6.0, "pos": 0.8, "vel": 5.0, "ff": 0.1}


def model_xml(attrs: str, integrator: str = "Euler", defaults: str = "") -> str:
    return f"""<mujoco>
  <option timestep="{DT}" integrator="{integrator}"/>
  <default>{defaults}</default>
  <worldbody>
    <body name="link">
      <joint name="j" type="hinge" axis="0 1 0" stiffness="0.5"/>
      <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02" mass="0.3"/>
    </body>
  </worldbody>
  <actuator>
    <dcmotor name="m" joint="j" {attrs}/>
  </actuator>
</mujoco>"""


def signal(inputs: tuple[str, ...], steps: int, seed: int = 7) -> np.ndarray:
    """Deterministic controls: two sines plus random steps held 0.1 s, per input."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps) * DT
    out = np.zeros((steps, len(inputs)))
    hold = int(round(0.1 / DT))
    for j, name in enumerate(inputs):
        a = AMPLITUDE[name]
        levels = rng.uniform(-a, a, size=steps // hold + 1)
        out[:, j] = (0.6 * a * np.sin(2 * np.pi * (1.3 + j) * t)
                     + 0.3 * a * np.sin(2 * np.pi * 7.1 * t + j) + np.repeat(levels, hold)[:steps])
    return out


def run_mujoco(xml: str, ctrl: np.ndarray) -> dict[str, np.ndarray]:
    """Step MuJoCo; per step: what the actuator used (length, velocity) and produced."""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    rec = {k: [] for k in ("length", "velocity", "force", "act", "damper", "qvel")}
    for u in ctrl:
        data.ctrl[:] = u
        rec["qvel"].append(data.qvel[0])
        mujoco.mj_step(model, data)
        # mj_step does not recompute the kinematics after integrating: these
        # are the values its actuator model used during the step
        rec["length"].append(data.actuator_length[0])
        rec["velocity"].append(data.actuator_velocity[0])
        rec["force"].append(data.actuator_force[0])
        rec["act"].append(data.act.copy())
        rec["damper"].append(data.qfrc_damper[0])
    assert np.all(np.isfinite(rec["force"])), "the MuJoCo run diverged"
    return {k: np.array(v) for k, v in rec.items()}


def replay(motor: DCMotor, ctrl: np.ndarray, rec: dict[str, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    forces, acts = [], []
    for u, length, velocity in zip(ctrl, rec["length"], rec["velocity"]):
        forces.append(motor.step(u if len(u) != 1 else u[0], length, velocity, DT))
        acts.append(motor.act)
    return np.array(forces), np.array(acts).reshape(len(forces), -1)


def assert_force(ours: np.ndarray, ref: np.ndarray) -> None:
    err = np.abs(ours - ref)
    bad = err > FORCE_ATOL + FORCE_RTOL * np.abs(ref)
    assert not bad.any(), (f"force differs at step {np.argmax(bad)}: max error {err.max():.3g} "
                           "N·m")


def write(tmp_path: Path, xml: str) -> Path:
    path = tmp_path / "motor.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def exercised(kind: str | None, motor: DCMotor, ctrl: np.ndarray,
              rec: dict[str, np.ndarray]) -> None:
    """The feature under test did act during the run (no vacuous comparison)."""
    p = motor.params
    act = rec["act"]
    if kind == "saturation":
        assert np.any(np.isclose(np.abs(rec["force"]), p[dc.P_FMAX], rtol=0, atol=1e-12))
    elif kind == "current_rate":
        rate = np.abs(np.diff(act[:, -1])) / DT
        assert rate.max() > 0.5 * p[dc.P_DIMAX]
    elif kind == "thermal":
        assert act[:, motor.enabled.index("temperature")].max() > 10.0
    elif kind == "ctrlrange":
        assert np.abs(ctrl).max() > p[dc.P_CMAX]
    elif kind == "slew":
        assert np.abs(ctrl[:, 0] - act[:, 0]).max() > 0.1
    elif kind in ("antiwindup", "all"):
        x_i = act[:, motor.enabled.index("integral")]
        assert np.isclose(np.abs(x_i).max(), p[dc.P_IMAX], rtol=0, atol=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_mujoco(case: str, tmp_path: Path) -> None:
    attrs, kind = CASES[case]
    path = write(tmp_path, model_xml(attrs))
    motor = DCMotor.from_mjcf(path, "m")
    ctrl = signal(motor.inputs, STEPS)
    rec = run_mujoco(path.read_text(), ctrl)
    forces, acts = replay(motor, ctrl, rec)
    assert_force(forces, rec["force"])
    np.testing.assert_allclose(acts, rec["act"], rtol=ACT_RTOL, atol=ACT_ATOL)
    # the joint-side drag MuJoCo adds (section 1.2), on the velocity at the step start
    damper = [motor.damping(q) for q in rec["qvel"]]
    np.testing.assert_allclose(damper, rec["damper"], rtol=1e-12, atol=1e-15)
    exercised(kind, motor, ctrl, rec)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "implicit"])
def test_all_features_every_integrator(integrator: str, tmp_path: Path) -> None:
    path = write(tmp_path, model_xml(ALL, integrator))
    motor = DCMotor.from_mjcf(path, "m")
    assert motor.enabled == dc.STATE_NAMES
    ctrl = signal(motor.inputs, STEPS, seed=3)
    rec = run_mujoco(path.read_text(), ctrl)
    forces, acts = replay(motor, ctrl, rec)
    assert_force(forces, rec["force"])
    np.testing.assert_allclose(acts, rec["act"], rtol=ACT_RTOL, atol=ACT_ATOL)


def test_bad_control_zeroes_the_inputs(tmp_path: Path) -> None:
    path = write(tmp_path, model_xml(BASE + ' input="pos vel" controller="0.8 0 0.03"'))
    motor = DCMotor.from_mjcf(path, "m")
    ctrl = signal(motor.inputs, 300)
    ctrl[100, 1] = np.nan
    ctrl[200, 0] = 2e10
    rec = run_mujoco(path.read_text(), ctrl)
    forces, _ = replay(motor, ctrl, rec)
    assert_force(forces, rec["force"])


def test_kernel_batched_matches_class(tmp_path: Path) -> None:
    """The njit kernel on a fixed-slot state array, as a rollout loop calls it."""
    path = write(tmp_path, model_xml(ALL))
    motor = DCMotor.from_mjcf(path, "m")
    ctrl = signal(motor.inputs, 400)
    rec = run_mujoco(path.read_text(), ctrl)
    state = np.zeros(dc.N_STATES)
    for k in range(len(ctrl)):
        f = dc.dcmotor_step_inputs(motor.params, state, ctrl[k], rec["length"][k],
                                   rec["velocity"][k], DT)
        assert_force(np.array([f]), rec["force"][k:k + 1])
    np.testing.assert_allclose(state, _slots(motor, rec["act"][-1]), rtol=ACT_RTOL,
                               atol=ACT_ATOL)


def _slots(motor: DCMotor, act: np.ndarray) -> np.ndarray:
    out = np.zeros(dc.N_STATES)
    for name, x in zip(motor.enabled, act):
        out[dc.STATE_NAMES.index(name)] = x
    return out


def test_armature_is_reflected_by_gear_squared(tmp_path: Path) -> None:
    attrs = BASE + ' gear="3" armature="0.002"'
    inertia = [_joint_inertia(model_xml(a)) for a in (attrs, BASE + ' gear="3"')]
    motor = DCMotor.from_mjcf(write(tmp_path, model_xml(attrs)), "m")
    assert motor.reflected_armature == pytest.approx(inertia[0] - inertia[1], rel=1e-12)
    assert motor.reflected_armature == pytest.approx(0.002 * 9)


def _joint_inertia(xml: str) -> float:
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    out = np.zeros(1)
    mujoco.mj_mulM(model, data, out, np.ones(1))
    return float(out[0])


# ---- MJCF reading -----------------------------------------------------------
def compiled(model: mujoco.MjModel) -> np.ndarray:
    """The parameter vector, from what MuJoCo compiled."""
    g, dyn, bias = model.actuator_gainprm[0], model.actuator_dynprm[0], model.actuator_biasprm[0]
    p = np.zeros(dc.N_PARAMS)
    p[[dc.P_R, dc.P_K, dc.P_ALPHA, dc.P_T0, dc.P_KP, dc.P_KI, dc.P_KD, dc.P_VMAX]] = g[:8]
    p[[dc.P_TE, dc.P_DIMAX, dc.P_RT, dc.P_C, dc.P_TA, dc.P_SIGMA0, dc.P_SIGMA1, dc.P_SLEW,
       dc.P_IMAX]] = dyn[:9]
    p[[dc.P_COG_A, dc.P_COG_N, dc.P_COG_PHASE, dc.P_FC, dc.P_FS, dc.P_VS]] = bias[:6]
    p[dc.P_FORCELIMITED] = model.actuator_forcelimited[0]
    p[[dc.P_FMIN, dc.P_FMAX]] = model.actuator_forcerange[0]
    p[dc.P_SPEC] = model.actuator_ctrlspec[0]
    if model.nu:
        p[dc.P_CTRLLIMITED] = model.actuator_ctrllimited[0]
        p[[dc.P_CMIN, dc.P_CMAX]] = model.actuator_ctrlrange[0]
    p[dc.P_GEAR] = model.actuator_gear[0, 0]
    p[[dc.P_B1, dc.P_B2, dc.P_B3]] = [model.actuator_damping[0], *model.actuator_dampingpoly[0]]
    p[dc.P_ARMATURE] = model.actuator_armature[0]
    return p


DEFAULT_ALL = ('<dcmotor resistance="2" motorconst="0.1" inductance="0.01" saturation="1 0 30" '
               'thermal="3 4 0 0.004 25 21" controller="1 0 0.5 2 0 10" input="pos" '
               'lugre="100 1 0.1 0.2 0.3" cogging="0.1 4 0.2" damping="0.01 0.02"/>')
# (defaults, actuator attributes): how attributes and default classes combine
PARSE_CASES = [
    ("", 'nominal="12 1 100"'),
    ("", 'nominal="12 1 100" damping="0.001"'),
    ("", 'resistance="2" nominal="12 1 100" damping="0.001"'),
    ("", 'motorconst="0.1" nominal="12 1 100" damping="0.001"'),
    ("", 'motorconst="0 0.1" nominal="12 1 100" damping="0.001"'),
    ("", 'resistance="3" motorconst="0.1 0" nominal="12 1 100"'),
    ("", BASE + ' thermal="2 3 10 0.004 25 20"'),
    ("", BASE + ' thermal="3 0.1 0.3"'),
    ("", BASE + ' thermal="0.3 0.1 0.03"'),
    ("", BASE + ' thermal="2 0 10"'),
    ("", BASE + ' thermal="0 3 10"'),
    ("", BASE + ' inductance="0.002 0.5"'),
    ("", BASE + ' saturation="0.2 3"'),
    ("", BASE + ' saturation="-1 0 -3"'),
    ("", BASE + ' input="pos" controller="1 0 0 0 0 -3"'),
    ("", BASE + ' ctrlrange="-1 1" ctrllimited="false"'),
    ("", 'resistance="2" motorconst="0" input="none"'),
    ("", BASE + ' lugre="10 -1 0.1 0.2 0.3" cogging="-0.1 3 0"'),
    (DEFAULT_ALL, ""),
    (DEFAULT_ALL, 'resistance="4"'),
    (DEFAULT_ALL, 'inductance="0"'),
    (DEFAULT_ALL, 'inductance="0 0.02"'),
    (DEFAULT_ALL, 'saturation="0"'),
    (DEFAULT_ALL, 'saturation="0 2"'),
    (DEFAULT_ALL, 'saturation="0 0 0"'),
    (DEFAULT_ALL, 'thermal="5"'),
    (DEFAULT_ALL, 'thermal="0 0 0 0.1"'),
    (DEFAULT_ALL, 'lugre="0"'),
    (DEFAULT_ALL, 'lugre="50"'),
    (DEFAULT_ALL, 'cogging="0.5"'),
    (DEFAULT_ALL, 'controller="5"'),
    (DEFAULT_ALL, 'input="voltage" controller="0 0 0 0 0 0"'),
    (DEFAULT_ALL, 'motorconst="0 0.3"'),
    (DEFAULT_ALL, 'motorconst="0.2 0.3"'),
    (DEFAULT_ALL, 'nominal="12 1 100"'),
    (DEFAULT_ALL, 'damping="0.5 0 0.1" armature="0.01" gear="2"'),
    ('<dcmotor nominal="12 1 100"/>', 'resistance="2" nominal="12 1 0"'),
    ('<general damping="0.001"/>', 'nominal="12 1 100" damping="0"'),
    ('<general forcerange="-2 2" damping="0.3" armature="0.2"/>', BASE),
    ('<general forcerange="-2 2"/>', BASE + ' saturation="1"'),
    ('<general forcerange="-3 3"/>', BASE + ' saturation="0 0 5"'),
    ('<motor gear="3" ctrlrange="-5 5"/>', BASE),
    (DEFAULT_ALL + '<default class="b"><dcmotor resistance="5" inductance="0 0.5"/></default>',
     'class="b"'),
    (DEFAULT_ALL + '<default class="b"><motor gear="3"/></default>', 'class="b"'),
    (DEFAULT_ALL + '<default class="b"><default class="c"><dcmotor thermal="7"/></default>'
     '</default>', 'class="c" input="pos vel"'),
]


@pytest.mark.parametrize("defaults, attrs", PARSE_CASES)
def test_parameters_match_the_compiler(defaults: str, attrs: str) -> None:
    xml = model_xml(attrs, defaults=defaults)
    params, timestep = dc.read_mjcf(xml, "m")
    np.testing.assert_array_equal(params, compiled(mujoco.MjModel.from_xml_string(xml)))
    assert timestep == DT


def test_default_class_run_matches_mujoco(tmp_path: Path) -> None:
    xml = model_xml('class="b" lugre="200" ctrlrange="-1 1"',
                    defaults=DEFAULT_ALL + '<default class="b"><dcmotor thermal="7"/></default>')
    motor = DCMotor.from_mjcf(write(tmp_path, xml), "m")
    ctrl = signal(motor.inputs, 800)
    rec = run_mujoco(xml, ctrl)
    forces, acts = replay(motor, ctrl, rec)
    assert_force(forces, rec["force"])
    np.testing.assert_allclose(acts, rec["act"], rtol=ACT_RTOL, atol=ACT_ATOL)


# invalid for MuJoCo too: the same model must fail in both
REJECTED = [
    'resistance="2"',
    'motorconst="0.1"',
    BASE + ' thermal="0 0 10"',
    'resistance="2" motorconst="-0.1 0.2"',
    BASE + ' inductance="-0.1"',
    BASE + ' input="vel" controller="1 1"',
    BASE + ' input="voltage" controller="0 0 0 1"',
    BASE + ' controller="1"',
    BASE + ' input="vel pos"',
    BASE + ' input="position"',
    BASE + ' saturation="1 2 3 4"',
]


@pytest.mark.parametrize("attrs", REJECTED)
def test_invalid_dcmotor_is_one_line_error(attrs: str) -> None:
    xml = model_xml(attrs)
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(BamError) as info:
        dc.read_mjcf(xml, "m")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text, name, fragment", [
    (model_xml(BASE), "x", "no actuator 'x'"),
    (model_xml("").replace("<dcmotor", "<motor"), "m", "is a <motor>"),
    ("<mujoco><actuator>", "m", "not valid XML"),
    ("<robot/>", "m", "not an MJCF file"),
    (model_xml(BASE + ' class="nope"'), "m", "class 'nope'"),
    (model_xml(BASE + ' delay="0.01" nsample="5"'), "m", "delay"),
    (model_xml(BASE + ' ctrlrange="1 -1" ctrllimited="true"'), "m", "ctrlrange"),
])
def test_bad_mjcf_errors(text: str, name: str, fragment: str) -> None:
    with pytest.raises(BamError, match=fragment) as info:
        DCMotor.from_mjcf(text, name)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BamError, match="cannot read MJCF"):
        DCMotor.from_mjcf(tmp_path / "none.xml", "m")


def test_state_api(tmp_path: Path) -> None:
    motor = DCMotor.from_mjcf(write(tmp_path, model_xml(
        BASE + ' input="pos" controller="1 2 0" inductance="0.003"')), "m")
    assert motor.enabled == ("integral", "current")
    assert motor.inputs == ("pos",) and motor.ctrlnum == 1
    motor.step(0.5, 0.0, 0.0, DT)
    state = motor.state
    assert set(state) == {"integral", "current"}
    assert state["integral"] == pytest.approx(0.5 * DT)
    np.testing.assert_array_equal(motor.act, [state["integral"], state["current"]])
    motor.act = [0.1, 0.2]
    assert motor.state == {"integral": 0.1, "current": 0.2}
    motor.reset()
    assert motor.state == {"integral": 0.0, "current": 0.0}
    with pytest.raises(BamError, match="2 states"):
        motor.act = [1.0]


def test_single_input_kernel_rejects_a_block(tmp_path: Path) -> None:
    motor = DCMotor.from_mjcf(write(tmp_path, model_xml(BASE + ' input="pos vel"')), "m")
    with pytest.raises(ValueError, match="one control"):
        dc.dcmotor_step(motor.params, np.zeros(dc.N_STATES), 0.0, 0.0, 0.0, DT)
