"""End to end: the bench protocol through the driver and the emulator, recorded, fitted.

On each serial bus: the Dynamixel driver on an emulated MX-64 whose joint is
the published M4 set on a 1 kg, 0.15 m pendulum, and the Feetech driver on an
emulated STS3215 (Feetech's protocol) whose joint is the published M1 set,
with the firmware's target slew, on a 0.35 kg, 0.15 m pendulum. The
trajectory node plays a short protocol (two trajectories × two gains, 4 s
each) on the driver in real time, the recorder writes the bag, the bag is read
back as a dataset (bam_identify.data.dataset), one run of each trajectory is
held out, and the emulator's model is fitted (bam_identify.fitting.fit, 1500
trials) on the two others.

Threshold. The MAE is the error of a model simulated from the recorded
commands against the recorded positions. The emulator's own parameters do not
reach 0 on these logs: positions are quantized (1.5 mrad), sampled by the bus
while the emulator's physics steps at 1 ms and the fit's at 5 ms. That floor,
measured on each run, was about 0.009 rad (MX-64) and 0.0035 rad (STS3215).
The fitted model reproduces the emulator's motion when its validation MAE is
within 3 encoder counts (0.0046 rad) of that floor, i.e. indistinguishable at
the sensor's resolution (measured: 0.004-0.006 rad for the MX-64, 0.0023 rad
for the STS3215, below the floor, as the fit absorbs part of the sampling
effects); the error of assuming the arm follows its goal is about 0.5 rad
(0.4 rad for the STS3215). The MX-64's motor constants k_t and R come back within 10 % (measured
within 3 %). The STS3215's firmware gain ratio r multiplies the duty, so a
position recording fixes only k_t·r/R (the holding torque per radian of error)
and k_t²/R (the back-EMF damping), not k_t, R and r apart: those two come back
within 10 % (measured 5 % and 1 %); its target slew rate, faster than these
trajectories' goals, is not seen. The friction terms trade off against each
other on two training runs and are not checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from drivers_rig import SERIAL_BUSES, emulator_of
from protocol_recording import mae, record_protocol
from rclpy.parameter import Parameter

from bam_identify.data.dataset import load_dataset, split
from bam_identify.fitting.fit import FitSettings, SearchSpace, identify
from bam_sim.models.files.parameter_file import published
from bam_sim.testing.ros_context import private_context

# Not in the loaded pass (marker live): with a core taken, the real-time recording's
# sampling jitter lets k_t·r/R trade off past its 10 % band (measured 24 % once) while
# the MAE checks still hold; the driver's behaviour under load is the live tests' part.

PROTOCOL = """\
protocol:
  trajectories: [lift_drop, raise_lower]
  gains: [{gains}]
  repetitions: 1
  duration: 4.0
  settle: 0.5
"""


def identifiable(actuator: str, values: dict) -> dict[str, float]:
    """The motor constants the recordings determine (see the module docstring)."""
    kt, resistance = values["kt"], values["R"]
    if actuator.startswith("sts"):
        return {"kt·r/R": kt * values["error_gain_ratio"] / resistance,
                "kt²/R": kt * kt / resistance}
    return {"kt": kt, "R": resistance}


# bus (drivers_rig.SERIAL_BUSES), actuator, model, gains, mass (kg)
CASES = [("protocol1", "mx64", "m4", (8.0, 16.0), 1.0),
         ("feetech", "sts3215", "m1", (16.0, 32.0), 0.35)]
FLOOR_MARGIN = 3 * 2 * np.pi / 4096  # rad above the truth's MAE: 3 encoder counts


def record(tmp_path, bus: str, actuator: str, model: str, gains, mass: float):
    node = SERIAL_BUSES[bus][1]
    protocol = PROTOCOL.format(gains=", ".join(f"{g:g}" for g in gains))
    with emulator_of(bus, physics=f"{actuator}:{model}", mass=mass, length=0.15) as emulator, \
            private_context() as ctx:
        driver = node(context=ctx, parameter_overrides=[
            Parameter("port", value=emulator.port), Parameter("rate", value=200.0),
            Parameter("actuator", value=actuator), Parameter("mass", value=mass),
            Parameter("length", value=0.15), Parameter("command_timeout", value=1.0)])
        return record_protocol(driver, ctx, protocol, tmp_path, timeout=90.0)


@pytest.mark.parametrize(("bus", "actuator", "model", "gains", "mass"), CASES,
                         ids=[case[0] for case in CASES])
def test_a_recording_through_the_driver_identifies_the_emulator(tmp_path, bus, actuator,
                                                                model, gains, mass):
    dataset = load_dataset(record(tmp_path, bus, actuator, model, gains, mass),
                           actuator=actuator)
    assert len(dataset) == 4 and dataset.gains == list(gains)
    assert {log.meta["bench_source"] for log in dataset} == {"hardware"}
    assert dataset.benches[0].mass == mass and dataset.benches[0].length == 0.15
    train, validation = split(dataset, validation_fraction=0.5, seed=0)
    assert len(train) == 2 and len(validation) == 2

    space = SearchSpace.build(actuator, model)
    fitted = identify(space, train.logs, FitSettings(trials=1500, seed=0))
    fitted_mae = mae(space, validation.logs, fitted.values)

    truth = published(actuator, model).values
    floor = mae(space, validation.logs, {k: truth[k] for k in space.names if k in truth})
    follow = float(np.average([np.mean(np.abs(log.goal - log.position))
                               for log in validation.logs],
                              weights=[len(log) for log in validation.logs]))
    report = (f"validation MAE: fitted {model} {fitted_mae:.4f} rad, the emulator's "
              f"{floor:.4f} rad, following the goal {follow:.4f} rad")
    assert floor < 0.03, report  # the recording itself is sound
    assert fitted_mae <= floor + FLOOR_MARGIN, report
    assert follow > 10 * (floor + FLOOR_MARGIN), report  # the runs do move the arm
    for name, value in identifiable(actuator, fitted.values).items():
        assert value == pytest.approx(identifiable(actuator, truth)[name], rel=0.1), name
