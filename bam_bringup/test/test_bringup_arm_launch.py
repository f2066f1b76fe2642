"""The arm: the nodes `bench serve --config arm` starts, read from arm.launch.py.

Every node the arm can start names an executable of its package and only
parameters that node declares; launch arguments are typed (lists included)
and reach the node as the values it expects; bad arguments are one-line
errors. (How the stand-in reads a launch file is in
test_bringup_launch_standin.py.)
"""

from __future__ import annotations

import itertools

import pytest

from bam_bringup.launch_standin.values import launch_text, typed
from bam_bringup.process_bench import build_nodes, node_class
from bam_bringup.runner import LAUNCH_FILES, build_parser, launch_file
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named, save
from bam_testing.ros_context import private_context

# Every optional argument given (values each node accepts, as the arm's own defaults).
FULL = {"params": ",", "models": "m4", "gains": "8.0", "actuators": "mx106,mx64",
        "joint_names": "shoulder,elbow", "mjcf": "", "namespace": "arm1"}
ARM, BENCH = LAUNCH_FILES["arm"], LAUNCH_FILES["bench"]


def compose(values: dict) -> list:
    return ARM.compose(values)


def every_composition(sim: str):
    """The arm for every combination of the boolean arguments, sim fixed, every optional
    argument given (the real arm takes no gains), on both shipped arms."""
    flags = [a.name for a in ARM.arguments().values() if a.kind == "bool" and a.name != "sim"]
    full = FULL if sim == "true" else {k: v for k, v in FULL.items() if k != "gains"}
    for arm, combo in itertools.product(("dynamixel", "erob"),
                                        itertools.product(["true", "false"], repeat=len(flags))):
        yield compose({**full, "arm": arm, "sim": sim, **dict(zip(flags, combo, strict=True))})


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


def test_sim_starts_the_arm_node_and_hardware_the_dynamixel_driver():
    assert [s.name for s in compose({})] == ["arm"]
    (driver,) = compose({"sim": "false", "port": "/dev/ttyUSB3", "ids": "3,4"})
    assert (driver.package, driver.executable) == ("bam_drivers", "dynamixel")
    assert driver.parameters["port"] == "/dev/ttyUSB3"
    assert driver.parameters["ids"] == [3, 4]
    assert driver.parameters["joint_names"] == ["shoulder", "elbow"]
    (driver,) = compose({"sim": "false", "joint_names": "[a, b]"})
    assert driver.parameters["joint_names"] == ["a", "b"]


def test_the_real_erob_arm_starts_the_erob_driver_with_the_shipped_arms_drives():
    from bam_sim.mujoco_arm.shipped_arms import ARMS

    (driver,) = compose({"sim": "false", "arm": "erob", "interface": "enp2s0"})
    assert (driver.package, driver.executable) == ("bam_drivers", "erob")
    # The drives of the simulated eRob arm, joint by joint, in line order.
    drives = [j.actuator for j in ARMS["erob"].joints]
    assert driver.parameters == {"interface": "enp2s0", "drive_models": drives,
                                 "joint_names": [j.joint for j in ARMS["erob"].joints]}


@pytest.mark.parametrize("sim", ["true", "false"])
def test_every_node_names_an_executable_with_a_node_class(sim):
    for specs in every_composition(sim):
        for spec in specs:
            assert node_class(spec.package, spec.executable).__name__, spec


def test_the_arm_node_takes_every_composed_parameter_with_its_type(context, tmp_path):
    mine = save(published_named("mx64", "m6"), tmp_path / "mx64_m6.yaml")
    specs = compose({"params": f",{mine}", "models": "m2,", "gains": "32,16",
                     "real_time_factor": "0", "viewer": "false"})
    node = build_nodes(specs, context)["arm"]  # what `bench serve --config arm` builds
    try:
        for name, value in specs[0].parameters.items():
            assert node.get_parameter(name).value == value, name
        assert [j.params.model.name for j in node.arm.joints] == ["m2", "m6"]
        assert node.arm.state().gain.tolist() == [32.0, 16.0]
    finally:
        node.destroy_node()


def test_every_arm_parameter_is_declared(context):
    seen: set[str] = set()
    for specs in every_composition("true"):
        for spec in specs:
            seen.update(spec.parameters)
    node = build_nodes(compose({}), context)["arm"]
    try:
        missing = sorted(p for p in seen if not node.has_parameter(p))
        assert not missing, f"arm does not declare {missing}"
    finally:
        node.destroy_node()


@pytest.mark.parametrize(("arm", "hardware"), [("dynamixel", {"port": "/nonexistent/ttyDXL",
                                                               "ids": "3,4"}),
                                             ("feetech", {"port": "/nonexistent/ttyACM0",
                                                          "ids": "5,6"}),
                                             ("erob", {"interface": "nonexistent0"})])
def test_the_driver_node_takes_every_composed_parameter_with_its_type(context, arm, hardware):
    specs = compose({"sim": "false", "arm": arm, "joint_names": "shoulder,elbow", **hardware})
    # It starts without its port or interface (and retries).
    node = build_nodes(specs, context)[specs[0].name]
    try:
        for name, value in specs[0].parameters.items():
            assert node.get_parameter(name).value == value, name
    finally:
        node.destroy_node()


def test_arguments_are_typed():
    specs = {s.name: s for s in compose({"arm": "erob", "params": "a.yaml,", "models": "[m1, m6]",
                                         "gains": "[32, 16.5]", "real_time_factor": "2",
                                         "viewer": "true", "mjcf": "robot.xml"})}
    arm = specs["arm"].parameters
    assert arm["arm"] == "erob" and arm["mjcf"] == "robot.xml"
    assert arm["params_files"] == ["a.yaml", ""]
    assert arm["models"] == ["m1", "m6"]
    assert arm["gains"] == [32.0, 16.5] and all(isinstance(g, float) for g in arm["gains"])
    assert arm["real_time_factor"] == 2.0 and isinstance(arm["real_time_factor"], float)
    assert arm["viewer"] is True
    defaults = compose({})[0].parameters
    for unset in ("params_files", "models", "gains", "mjcf", "joints", "actuators"):
        assert unset not in defaults  # "" keeps the node's own default


def test_launch_defaults_type_back_to_the_defaults():
    """Every declared default is of its own kind, written as the runner writes values."""
    for config in (ARM, BENCH):
        for argument in config.arguments().values():
            value = typed(argument.default, None, argument.name, argument.kind)
            assert launch_text(value) == argument.default, (config.name, argument.name)


@pytest.mark.parametrize(("values", "message"), [
    ({"colour": "red"}, "unknown arm argument colour"),
    ({"actuator": "mx64"}, "unknown arm argument actuator"),  # a bench argument
    ({"viewer": "maybe"}, "viewer:=maybe must be true or false"),
    ({"real_time_factor": "fast"}, "real_time_factor:=fast must be a number"),
    ({"gains": "32,high"}, "entry 'high' of argument gains must be a number"),
    ({"ids": "1,2.5"}, "ids must be a whole number"),
    ({"models": "[m1, m2"}, "models:=\\[m1, m2 is not a list"),
    ({"sim": "false", "arm": "scara"}, "arm:=dynamixel .* or arm:=erob"),
    ({"sim": "false", "gains": "8"}, "send gains on /bam/commands"),
])
def test_bad_arguments(values, message):
    with pytest.raises(BamError, match=message):
        compose(values)


def test_unknown_configuration_names_the_known_ones():
    with pytest.raises(BamError, match="known names: .*arm.*bench"):
        launch_file("scara")


def test_the_runner_serves_either_configuration():
    args = build_parser().parse_args(["serve", "--config", "arm", "arm:=erob", "sim:=true"])
    assert (args.command, args.config, args.arguments) == ("serve", "arm",
                                                           ["arm:=erob", "sim:=true"])
    assert build_parser().parse_args(["serve"]).config == "bench"
