"""End to end: the bench protocol through the driver and the emulator, recorded, fitted.

On each serial bus: the Dynamixel driver on an emulated MX-64 whose joint is
the published M4 set on a 1 kg, 0.15 m pendulum, the Feetech driver on an
emulated STS3215 (Feetech's protocol) whose joint is the published M1 set,
with the firmware's target slew, on a 0.35 kg, 0.15 m pendulum, and the
Dynamixel driver on an emulated XL330 in current-based position mode (the
driver writes operating mode 5; the published XL330 M4 set under the current
law) on a 0.2 kg, 0.15 m pendulum. The
trajectory node plays a short protocol (two trajectories × two gains, 4 s
each) on the driver in real time, the recorder writes the bag, the bag is read
back as a dataset (bam_identify.data.dataset), one run of each trajectory is
held out, and the emulator's model is fitted (bam_identify.fitting.fit, 1500
trials) on the two others.

Real time on a busy host. The driver and the recorder run in their own
processes, as a bench runs them, at SCHED_FIFO priority (every thread: one left
behind holds its interpreter's lock while a busy host keeps it waiting), and the
emulated servos above them; the emulator reads its joints as they are when a
request comes (its physics steps run first). Without that, a loaded two-core
host stalled the driver for up to 0.2 s at a time, the bags missed states for
over a second with the recorder in this process, and the recordings' floor
tripled (measured). What a stall still does is cut out: the
runs are scored on their stretches without a gap in the driver's states
(protocol_recording.clean_stretches; during a gap the servo kept its last goal,
which the resampled log ramps across). A recording of which less than CLEAN
(75 %) remains is recorded again, RECORDINGS (3) times at most: a host stalling
the bench that often leaves too little to identify from (STS3215, another
test session running beside two busy loops: of 13 recordings, the 3 keeping a
third or less missed the floor by 6-34 mrad; all those keeping 45 % or more
passed).

Thresholds, all from the recording. The MAE is the error of a model simulated
from the recorded commands against the recorded positions. The emulator's own
parameters do not reach 0 on these logs: positions are quantized (1.5 mrad),
sampled by the bus while the emulator's physics steps at 1 ms and the fit's at
5 ms; that floor is measured on each run (about 0.009 rad for the MX-64, 0.0035
rad for the STS3215, idle or with both cores busy). The fitted model reproduces
the emulator's motion when its validation MAE is within 3 encoder counts
(0.0046 rad) of that floor, i.e. indistinguishable at the sensor's resolution
(measured: 0.003-0.005 rad for the MX-64, 0.002-0.007 rad for the STS3215); the
error of assuming the arm follows its goal is about 0.5 rad (0.4 rad for the
STS3215). What a position recording of a voltage law fixes is k_t/R (the torque per volt of duty:
the holding torque per radian of error) and k_t²/R (the back-EMF damping), k_t and R apart
only through both; the STS3215's firmware gain ratio r multiplies the duty, so there
k_t·r/R takes the place of k_t/R. Under the current law the torque per amp k_t is fixed
directly (R only by the supply's cap on the current at speed): the XL330's k_t came within
0.2 % (fitted M4 0.0020 rad on validation, the emulator's own set 0.0040 rad: a 5 ms
simulation of a 1 ms emulator). On two 4 s training runs even those trade with the
load-dependent friction: an idle CI run fitted the MX-64's k_t/R 10 % high, its set
scoring 0.0077 rad on validation where the emulator's own scores 0.0081, while the
emulator's set with that k_t/R alone missed the 3 counts by 0.6 mrad; an earlier one fitted
R 11.5 % high. How well the fit reproduces held-out runs is the claim; the constants are
checked for what a fault of the driver's units, gains or scaling would do to them, which
the fit would otherwise absorb into them (a factor of 1.5 or more): within CONSTANTS (25 %)
of the emulator's (measured within 12 %). The STS3215's target slew rate, faster than these
trajectories' goals, is not seen, and is held at the emulator's value (UNSEEN): free, the
fit used it as one more knob for what a 5 ms simulation of a 1 ms emulator leaves over
(the emulator's own set scores 0.0027 rad on a recording simulated at 1 ms, 0.0043 rad at
5 ms). Free, of 16 recordings with a busy loop on each core, one validated 4.4 mrad above
the floor plus 3 counts (an idle CI run's, 1.6 mrad) and the next came within 1.1 mrad of
that bound, with a slew rate of 3.0 rad/s for the emulator's 5.2; held, that recording
validates 0.2 mrad above the floor, the three worst at most 0.6 mrad above it.
The friction terms trade off against each other on two training runs and are not checked.
"""

from __future__ import annotations

import math
import signal

import numpy as np
import pytest
import rclpy
from drivers_rig import (
    EMULATOR_PRIORITY,
    PRIORITY,
    SERIAL_BUSES,
    TIMEOUT,
    node_process,
)
from protocol_recording import clean_stretches, joint_stamps, mae, record_protocol

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.nodes.serial_servo_node import SerialServoNode
from bam_identify.data import plausibility
from bam_identify.data.dataset import load_dataset, split
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.common.contract import JOINT_STATES
from bam_sim.models.files.parameter_file import published_named
from bam_testing.ros_context import private_context
from bam_testing.ros_graph import wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

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
    if actuator == "xl330_current":  # the current law: torque per amp; R at its voltage cap
        return {"kt": kt}
    if actuator.startswith("sts"):
        return {"kt·r/R": kt * values["error_gain_ratio"] / resistance,
                "kt²/R": kt * kt / resistance}
    return {"kt/R": kt / resistance, "kt²/R": kt * kt / resistance}


# The serial buses of drivers_rig, and an XL330 bus (its own table, not one of theirs).
BUSES = {**SERIAL_BUSES, "xl330": (dict(protocol=2, servo_model="xl330_m288"),
                                   SerialServoNode, dict(servo_model="xl330_m288"))}
# bus (BUSES), actuator, model, gains, mass (kg)
CASES = [("protocol1", "mx64", "m4", (8.0, 16.0), 1.0),
         ("feetech", "sts3215", "m1", (16.0, 32.0), 0.35),
         ("xl330", "xl330_current", "m4", (200.0, 400.0), 0.2)]
FLOOR_MARGIN = 3 * 2 * np.pi / 4096  # rad above the truth's MAE: 3 encoder counts
RATE = 200.0  # Hz, the driver's cycle
# A recording is identified from when at least CLEAN of it lies between gaps of the driver's
# states (a busy host stalling it), else recorded again, RECORDINGS times at most.
CLEAN = 0.75
RECORDINGS = 3
# What these recordings cannot fix, held at the emulator's value (module docstring).
UNSEEN = ("max_velocity",)
# The motor constants' band: a unit or scaling fault is a factor of 1.5 or more, the trade
# with friction on two training runs up to 12 % (module docstring).
CONSTANTS = 0.25


def record(tmp_path, bus: str, actuator: str, model: str, gains, mass: float):
    """The protocol recorded through the driver: the driver and the recorder each in its own
    process, as a bench runs them, at real-time priority; the trajectory node here."""
    options, node, params = BUSES[bus]
    protocol = PROTOCOL.format(gains=", ".join(f"{g:g}" for g in gains))
    bag = tmp_path / "bag"
    with EmulatorProcess(**{**options, "physics": f"{actuator}:{model}", "mass": mass,
                            "length": 0.15, "priority": EMULATOR_PRIORITY}) as emulator, \
            private_context() as ctx:
        params = {**params, "port": emulator.port, "rate": RATE, "actuator": actuator,
                  "mass": mass, "length": 0.15, "command_timeout": 1.0,
                  "thread_priority": PRIORITY, "latency_timer_ms": 10.0}
        with node_process(node.__module__, params) as driver, \
                node_process("bam_identify.nodes.recorder_node", {"output": bag}) as recorder:
            subscribed(ctx, JOINT_STATES.name)  # the recorder's, before the protocol starts
            record_protocol(None, ctx, protocol, tmp_path, timeout=90.0, record=False)
        assert driver.returncode == 128 + signal.SIGINT, driver.stderr
        assert recorder.returncode == 128 + signal.SIGINT, recorder.stderr
        return bag


def subscribed(context, topic: str) -> None:
    """Return once ``topic`` has a subscriber on ``context``'s domain."""
    probe = rclpy.create_node("identify_probe", context=context)
    try:
        wait_for(lambda: probe.count_subscribers(topic) > 0, f"a subscriber of {topic}",
                 TIMEOUT)
    finally:
        probe.destroy_node()


def clean_recording(tmp_path, bus: str, actuator: str, model: str, gains,
                    mass: float) -> tuple[list, list, list]:
    """The training and validation stretches of a recording of which at least CLEAN is
    clean, recorded again (RECORDINGS times at most) while a busy host leaves less; and
    the validation runs whole."""
    shares = []
    for take in range(RECORDINGS):
        folder = tmp_path / f"take{take}"
        folder.mkdir()
        bag = record(folder, bus, actuator, model, gains, mass)
        dataset = load_dataset(bag, actuator=actuator)
        assert len(dataset) == 4 and dataset.gains == list(gains)
        assert {log.meta["bench_source"] for log in dataset} == {"hardware"}
        assert dataset.benches[0].mass == mass and dataset.benches[0].length == 0.15
        train, validation = split(dataset, validation_fraction=0.5, seed=0)
        assert len(train) == 2 and len(validation) == 2
        stamps = joint_stamps(bag)
        stretches = [clean_stretches(logs, stamps, 1.0 / RATE)
                     for logs in (train.logs, validation.logs)]
        shares.append(sum(len(log) for part in stretches for log in part)
                      / sum(len(log) for log in dataset))
        if shares[-1] >= CLEAN:
            return stretches[0], stretches[1], validation.logs
    raise AssertionError(f"share of the recordings between gaps of the driver's states: "
                         f"{', '.join(f'{x:.0%}' for x in shares)}, below {CLEAN:.0%}")


@pytest.mark.parametrize(("bus", "actuator", "model", "gains", "mass"), CASES,
                         ids=[case[0] for case in CASES])
def test_a_recording_through_the_driver_identifies_the_emulator(tmp_path, monkeypatch, bus,
                                                                actuator, model, gains, mass):
    # The dataset refuses a run with a hole (a recording paused), which a host stalling the
    # driver for a second also makes; the stretches around it are what is scored here.
    monkeypatch.setattr(plausibility, "HOLE_MIN", math.inf)
    train, validation, runs = clean_recording(tmp_path, bus, actuator, model, gains, mass)

    truth = published_named(actuator, model).values
    held = {k: truth[k] for k in UNSEEN if k in truth}
    space = SearchSpace.from_names(actuator, model, fixed=held)
    fitted = identify(space, train, FitSettings(trials=1500, seed=0))
    fitted_mae = mae(space, validation, fitted.values)
    truth = {k: truth[k] for k in space.names if k in truth}
    floor = mae(space, validation, truth)
    # Over the runs whole (0.41-0.49 rad): what the protocol made the arm do, whichever
    # stretches a busy host left clean (those left beside a busy loop per core once
    # followed the goal to 0.069 rad, as holds do).
    follow = float(np.average([np.mean(np.abs(log.goal - log.position)) for log in runs],
                              weights=[len(log) for log in runs]))
    report = (f"validation MAE: fitted {model} {fitted_mae:.4f} rad, the emulator's "
              f"{floor:.4f} rad, following the goal {follow:.4f} rad; training MAE: fitted "
              f"{mae(space, train, fitted.values):.4f} rad, the emulator's "
              f"{mae(space, train, truth):.4f} rad")
    assert floor < 0.03, report  # the recording itself is sound
    assert fitted_mae <= floor + FLOOR_MARGIN, report
    assert follow > 10 * (floor + FLOOR_MARGIN), report  # the runs do move the arm
    expected = identifiable(actuator, truth)
    for name, value in identifiable(actuator, fitted.values).items():
        assert value == pytest.approx(expected[name], rel=CONSTANTS), (
            f"{name} fitted {value:.4g}, the emulator's {expected[name]:.4g}; {report}")
