"""Bench composition: the launch file and the in-process runner start the same nodes.

Every node the launch file can start names an existing executable and only
parameters that node declares (checked on the real node classes).
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from bam_bringup.composition import arguments, command_line, compose
from bam_bringup.runner import NODE_CLASSES, node_class
from bam_sim.common.errors import BamError
from bam_sim.testing.ros_context import private_context

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / "bam_bringup" / "launch").glob("*.launch.py"))


def console_scripts(package: str) -> set[str]:
    text = (ROOT / package / "setup.py").read_text()
    return set(re.findall(r"'(\w+) = [\w.]+:\w+'", text))


def every_composition():
    """compose() for every combination of the boolean arguments (sim stays true), and the
    hardware benches (real and emulated)."""
    flags = [a.name for a in arguments().values()
             if isinstance(a.default, bool) and a.name != "sim"]
    for combo in itertools.product(["true", "false"], repeat=len(flags)):
        yield compose(dict(zip(flags, combo, strict=True)))
    yield compose({"sim": "false", "record": "true"})
    yield compose({"sim": "false", "hardware": "emulated", "port": "/nonexistent/ttyDXL"})


def test_launch_files_are_thin_and_use_the_composition():
    assert LAUNCH_FILES, "no launch file"
    for path in LAUNCH_FILES:
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module == "bam_bringup.composition" for alias in node.names}
        assert {"arguments", "compose"} <= imported, path.name
        functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert "generate_launch_description" in functions


def test_every_node_names_an_existing_executable():
    for specs in every_composition():
        for spec in specs:
            assert spec.executable in console_scripts(spec.package), spec
            assert spec.process or (spec.package, spec.executable) in NODE_CLASSES


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


def test_every_parameter_is_declared_by_its_node(context, tmp_path):
    seen = {}
    for specs in every_composition():
        for spec in specs:
            if not spec.process:  # processes take options, checked below
                seen.setdefault(spec.name, (spec, set()))[1].update(spec.parameters)
    for name, (spec, parameters) in seen.items():
        kwargs = {"context": context}
        if name == "recorder":  # would create its bag: point it somewhere harmless
            from rclpy.parameter import Parameter

            kwargs["parameter_overrides"] = [Parameter("output", value=str(tmp_path / "b"))]
        node = node_class(spec)(**kwargs)
        try:
            missing = sorted(p for p in parameters if not node.has_parameter(p))
            assert not missing, f"{name} does not declare {missing}"
        finally:
            node.destroy_node()


def test_arguments_set_parameters_with_their_types():
    specs = {s.name: s for s in compose({"real_time_factor": "2", "mass": "0.5",
                                         "record": "true", "protocol": "p.yaml"})}
    assert specs["pendulum"].parameters["real_time_factor"] == 2.0
    assert isinstance(specs["pendulum"].parameters["real_time_factor"], float)
    assert specs["pendulum"].parameters["mass"] == 0.5
    assert specs["trajectory"].parameters["protocol_file"] == "p.yaml"
    assert specs["trajectory"].parameters["use_sim_time"] is True
    assert "recorder" in specs
    assert "recorder" not in {s.name for s in compose({})}
    assert "params_file" not in specs["pendulum"].parameters  # "" keeps the node's default


@pytest.mark.parametrize(("values", "message"), [
    ({"colour": "red"}, "unknown bench argument colour"),
    ({"record": "maybe"}, "record:=maybe must be true or false"),
    ({"mass": "heavy"}, "mass:=heavy must be a number"),
    ({"sim": "false", "driver": "erob"}, "through driver:=dynamixel"),
    ({"sim": "false", "hardware": "emulated"}, "hardware:=emulated needs port:=PATH"),
    ({"hardware": "emulated", "port": "/tmp/ttyDXL"}, "give sim:=false"),
    ({"sim": "false", "hardware": "virtual"}, "hardware:= must be real"),
])
def test_bad_arguments(values, message):
    with pytest.raises(BamError, match=message):
        compose(values)


def test_hardware_composes_the_driver_and_its_emulator():
    from bam_drivers.emulators.dynamixel_emulator import parse_args

    specs = {s.name: s for s in compose({"sim": "false", "port": "/dev/ttyUSB1", "ids": "3",
                                         "mass": "0.5", "length": "0.2", "actuator": "mx106",
                                         "servo_model": "mx106_p1"})}
    assert set(specs) == {"dynamixel", "trajectory"}
    driver = specs["dynamixel"]
    assert (driver.package, driver.executable) == ("bam_drivers", "dynamixel")
    assert {k: driver.parameters[k] for k in ("port", "ids", "mass", "length", "actuator",
                                              "servo_model")} == {
        "port": "/dev/ttyUSB1", "ids": [3], "mass": 0.5, "length": 0.2, "actuator": "mx106",
        "servo_model": "mx106_p1"}
    assert specs["trajectory"].parameters["use_sim_time"] is False
    assert "port" not in compose({"sim": "false"})[0].parameters  # the driver's default
    specs = {s.name: s for s in compose({"sim": "false", "hardware": "emulated",
                                         "port": "/tmp/ttyDXL", "ids": "1,2", "mass": "1.5"})}
    emulator = specs["dynamixel_emulator"]
    assert emulator.process and not specs["dynamixel"].process
    config = parse_args(command_line(emulator))  # the emulator's own parser takes them
    assert (config.ids, config.mass, config.servo_model) == ((1, 2), 1.5, "mx64_p1")
    assert specs["dynamixel"].parameters["port"] == "/tmp/ttyDXL"
