"""Cases shared by the bam_sim tests (a plain module: test files import it)."""

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
