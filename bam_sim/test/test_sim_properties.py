"""Property tests: random parameter files and random commands never end in a traceback
nor in a non-finite state.

Hypothesis draws the inputs from a fixed seed (``derandomize``), so a run is
reproducible; every draw must either be accepted (then its values are finite
and plausible) or be refused with a BamError / CommandError, whose message is
one line.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bam_msgs.msg import ActuatorCommand
from bam_sim.bench.geometry import Bench
from bam_sim.bench.stepper import BenchStepper
from bam_sim.common.commands import CommandError, CommandLimits, check_command, parse_command
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.parameter_vector import PARAM_NAMES, PLAUSIBLE
from bam_sim.models.servo.actuators import get_actuator

SETTINGS = settings(max_examples=300, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.integers(min_value=-10**30, max_value=10**30))
ANY_VALUE = st.one_of(ANY_NUMBER, st.text(max_size=8), st.booleans(), st.none(),
                      st.lists(ANY_NUMBER, max_size=3))
ACTUATOR = st.one_of(st.sampled_from(["mx64", "mx106", "erob80_50", "erob80_100"]), ANY_VALUE)
MODEL = st.one_of(st.sampled_from(["m1", "m2", "m3", "m4", "m5", "m6"]), ANY_VALUE)
VALUES = st.dictionaries(st.one_of(st.sampled_from(PARAM_NAMES), st.text(max_size=6)),
                         st.one_of(ANY_NUMBER, ANY_VALUE), max_size=len(PARAM_NAMES))


def _plausible(params) -> None:
    for name, value in params.values.items():
        assert math.isfinite(value), (name, value)
        if name in PLAUSIBLE:
            low, high = PLAUSIBLE[name]
            assert low <= value <= high, (name, value)


def _loads_or_refuses(path: Path) -> None:
    try:
        params = load(path)
    except BamError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    _plausible(params)


@SETTINGS
@given(actuator=ACTUATOR, model=MODEL, values=VALUES,
       base=st.sampled_from([None, ("mx64", "m6"), ("erob80_100", "m4")]))
def test_random_parameter_files_load_or_are_refused(actuator, model, values, base):
    params = dict(published_named(*base).values) if base else {}
    params.update(values)
    doc = {"/**": {"ros__parameters": {"actuator": actuator, "model": model, **params}}}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.yaml"
        try:
            path.write_text(yaml.safe_dump(doc))
        except yaml.YAMLError:
            return  # not representable as YAML: nothing a user could write
        _loads_or_refuses(path)
        legacy = Path(folder) / "p.json"
        legacy.write_text(json.dumps({"actuator": actuator, "model": model, **params},
                                     default=str))
        _loads_or_refuses(legacy)


NAMES = st.lists(st.sampled_from(["pendulum", "elbow", ""]), max_size=3)
NUMBERS = st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                             st.floats(min_value=-4.0, max_value=40.0)), max_size=3)
BOOLS = st.lists(st.booleans(), max_size=3)


@SETTINGS
@given(commands=st.lists(st.tuples(NAMES, NUMBERS, BOOLS, NUMBERS), min_size=1, max_size=4))
def test_random_commands_never_break_the_simulated_pendulum(commands):
    """What the pendulum node does with a command: parse, check, apply, step."""
    act = get_actuator("mx64")
    stepper = BenchStepper(published_named("mx64", "m4"), Bench(1.0, 0.15), 0.005)
    limits = CommandLimits.per_joint([(act.goal_range, act.gain_limit)])
    for names, goals, enables, gains in commands:
        msg = ActuatorCommand(names=names, goal_positions=goals, torque_enables=enables,
                              gains=gains)
        try:
            command = parse_command(msg, ("pendulum",))
            check_command(command, limits, ("pendulum",))
        except (CommandError, BamError) as exc:
            assert "\n" not in str(exc)
            continue

        def first(values):
            return None if values is None else values[0]

        stepper.set_command(goal=first(command.goals), torque_enable=first(command.torque_enables),
                            gain=first(command.gains))
        for _ in range(40):
            sample = stepper.tick()
        q, dq = stepper.state
        assert math.isfinite(q) and math.isfinite(dq), (q, dq, msg)
        # current and temperature are NaN by design for a set without the DC-motor model
        measured = sample._replace(current=0.0, temperature=0.0)
        assert all(math.isfinite(v) for v in measured if isinstance(v, float)), sample
