"""Cases shared by the bam_sim tests (a plain module: test files import it)."""

from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_set import ParameterSet

ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "erob80_50", "erob80_100")
MODELS = ("m1", "m2", "m3", "m4", "m5", "m6")
SEED = 20261121
# A one-joint MJCF with a plain motor on joint "j" (1 ms step), which the dcmotor export
# replaces; its comment must survive the export.
PENDULUM = """<mujoco model="pendulum">
  <!-- a documented pendulum -->
  <option timestep="0.001"/>
  <worldbody>
    <body name="link">
      <joint name="j" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02" mass="0.5"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="m" joint="j"/>
  </actuator>
</mujoco>"""


# F_C, F_S − F_C, D, K, B in units of the actuator's scales; v_S in rad/s.
FRICTION = {"friction_base": 0.12, "friction_stribeck": 0.16, "friction_viscous": 0.1,
            "contact_stiffness": 0.3, "contact_damping": 0.2, "dtheta_stribeck": 0.2,
            "load_friction_base": 0.02, "load_friction_stribeck": 0.03}
SCALE = {"friction_base": "friction", "friction_stribeck": "friction",
         "friction_viscous": "viscous", "contact_stiffness": "stiffness",
         "contact_damping": "damping"}


def ep_set(actuator: str, model: str, **values: float) -> ParameterSet:
    """A made-up ep_* set: motor of the published M2, friction scaled to the actuator."""
    m2 = published_named(actuator, "m2")
    scales = m2.actuator.scales
    base = {name: m2.values[name] for name in m2.actuator.motor_bounds}
    for name in get_model(model).params:
        base[name] = FRICTION[name] * scales.get(SCALE.get(name), 1.0)
    return ParameterSet.from_names(actuator, model, {**base, **values})


# Every group of the DC-motor model, all five states of the dcmotor family enabled (slew,
# integral, temperature, bristle, current) with MOTOR_CONTROLLER.
MOTOR_GROUPS = {
    "inductance.L": 0.004,
    "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
    "thermal.reftemp": 20.0, "thermal.ambient": 25.0,
    "saturation.torque": 2.5, "saturation.current_rate": 2000.0,
    "cogging.amplitude": 0.02, "cogging.poles": 12.0, "cogging.phase": 0.3,
}
MOTOR_CONTROLLER = {"controller.ki": 5.0, "controller.kd": 0.3, "controller.slewmax": 4.0,
                    "controller.Imax": 0.5, "controller.Vmax": 20.0}
