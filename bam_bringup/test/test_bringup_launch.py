"""The bench: the nodes `bench serve` starts, read from bench.launch.py.

Every node the bench can start names an executable of its package (a console
script, whose module holds the node class) and only parameters that node
declares (checked on the real node classes). Launch arguments are typed and
bad values are one-line errors. (How the stand-in reads a launch file, and the
expected nodes per argument set, are in test_bringup_launch_standin.py.)
"""

from __future__ import annotations

import itertools

import pytest

from bam_bringup.process_bench import build_nodes, node_class
from bam_bringup.runner import LAUNCH_FILES
from bam_sim.common.errors import BamError
from bam_testing.ros_context import private_context

FULL = {"params": "p.yaml", "bag": "/nonexistent/bag", "protocol": "p.yaml",
        "port": "/nonexistent/ttyDXL", "interface": "nonexistent0",
        "rate": "100"}  # every optional argument given
EROB = {"driver": "erob", "actuator": "erob80_100"}
FEETECH = {"driver": "feetech", "actuator": "sts3215"}
BENCH = LAUNCH_FILES["bench"]


def every_composition():
    """The bench for every combination of the boolean arguments (sim stays true), and the
    hardware benches (real and emulated), with every optional argument given."""
    flags = [a.name for a in BENCH.arguments().values() if a.kind == "bool" and a.name != "sim"]
    for combo in itertools.product(["true", "false"], repeat=len(flags)):
        yield BENCH.compose(dict(zip(flags, combo, strict=True)))
    yield BENCH.compose({**FULL, "sim": "false", "record": "true"})
    yield BENCH.compose({**FULL, "sim": "false", "hardware": "emulated", "ids": "1,2"})
    yield BENCH.compose({**FULL, **EROB, "sim": "false", "record": "true"})
    yield BENCH.compose({**FULL, **EROB, "sim": "false", "hardware": "emulated"})
    yield BENCH.compose({**FULL, **FEETECH, "sim": "false", "hardware": "emulated"})
    yield BENCH.compose({**FULL, "record": "true", "namespace": "bench1"})


def test_every_node_names_an_executable_with_a_node_class():
    for specs in every_composition():
        for spec in specs:
            if not spec.process:  # processes are plain executables (found like ros2 run)
                assert node_class(spec.package, spec.executable).__name__, spec


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
        node = node_class(spec.package, spec.executable)(**kwargs)
        try:
            missing = sorted(p for p in parameters if not node.has_parameter(p))
            assert not missing, f"{name} does not declare {missing}"
        finally:
            node.destroy_node()


def test_the_runner_builds_each_node_with_its_name_namespace_and_parameters(context):
    specs = [s for s in BENCH.compose({"namespace": "bench7", "mass": "0.5"})]
    nodes = build_nodes(specs, context)
    try:
        for spec in specs:
            node = nodes[spec.name]
            assert (node.get_name(), node.get_namespace()) == (spec.name, "/bench7")
            for parameter, value in spec.parameters.items():
                assert node.get_parameter(parameter).value == value, (spec.name, parameter)
    finally:
        for node in nodes.values():
            node.destroy_node()


def test_arguments_set_parameters_with_their_types():
    specs = {s.name: s for s in BENCH.compose({"real_time_factor": "2", "mass": "0.5",
                                               "record": "true", "protocol": "p.yaml"})}
    assert specs["pendulum"].parameters["real_time_factor"] == 2.0
    assert isinstance(specs["pendulum"].parameters["real_time_factor"], float)
    assert specs["pendulum"].parameters["mass"] == 0.5
    assert specs["trajectory"].parameters["protocol_file"] == "p.yaml"
    assert specs["trajectory"].parameters["use_sim_time"] is True
    assert "recorder" in specs
    assert "recorder" not in {s.name for s in BENCH.compose({})}
    assert "params_file" not in specs["pendulum"].parameters  # "" keeps the node's default


def test_namespace_puts_every_node_in_it():
    assert {s.namespace for s in BENCH.compose({"namespace": "bench1", "record": "true"})} == \
        {"/bench1"}
    assert {s.namespace for s in BENCH.compose({"namespace": "/lab/bench2/"})} == {"/lab/bench2"}
    assert {s.namespace for s in BENCH.compose({})} == {""}


@pytest.mark.parametrize(("values", "message"), [
    ({"colour": "red"}, "unknown bench argument colour"),
    ({"record": "maybe"}, "record:=maybe must be true or false"),
    ({"mass": "heavy"}, "mass:=heavy must be a number"),
    ({"ids": "1,x"}, "entry 'x' of argument ids must be a number"),
    ({"namespace": "1bench"}, "namespace:=1bench is not a ROS namespace"),
    ({"namespace": "bench-1"}, "namespace:=bench-1 is not a ROS namespace"),
    ({"driver": "ethercat"}, r"driver:= must be dynamixel \(Dynamixel servos on port\), "),
    ({"sim": "false", "driver": "erob"}, "driver:=erob drives eRob drives over EtherCAT: "
                                         "give actuator:=erob80_50 or erob80_100"),
    ({"sim": "false", "actuator": "erob80_100"},
     "driver:=dynamixel drives Dynamixel servos: .*, or driver:=erob for the eRob80:100"),
    ({"sim": "false", "actuator": "xl316"}, "driver:=dynamixel drives Dynamixel servos: "
                                            "give actuator:=mx64, mx106, xl320, xl330 or "
                                            "xl330_current"),
    ({"sim": "false", "actuator": "sts3215"},
     r"driver:=feetech for the Feetech STS3215 \(7.4 V\)"),
    ({"sim": "false", "driver": "feetech"}, "driver:=feetech drives Feetech STS servos: give "
                                            "actuator:=sts3215 or sts3215_12v"),
    ({**FEETECH, "sim": "false", "hardware": "emulated"}, "hardware:=emulated needs port:=PATH"),
    ({"sim": "false", "hardware": "emulated"}, "hardware:=emulated needs port:=PATH"),
    ({**EROB, "sim": "false", "hardware": "emulated"},
     "hardware:=emulated with driver:=erob needs interface:=NAME"),
    ({"sim": "false", "rate": "fast"}, "rate:=fast must be a number"),
    ({"hardware": "emulated", "port": "/tmp/ttyDXL"}, "give sim:=false"),
    ({"sim": "false", "hardware": "virtual"}, "hardware:= must be real"),
])
def test_bad_arguments(values, message):
    with pytest.raises(BamError, match=message):
        BENCH.compose(values)


def test_hardware_composes_the_driver_and_its_emulator():
    from bam_drivers.emulators.serial_servo_emulator import parse_args

    specs = {s.name: s for s in BENCH.compose({"sim": "false", "port": "/dev/ttyUSB1",
                                               "ids": "3", "mass": "0.5", "length": "0.2",
                                               "actuator": "mx106",
                                               "servo_model": "mx106_p1"})}
    assert set(specs) == {"dynamixel", "trajectory"}
    driver = specs["dynamixel"]
    assert (driver.package, driver.executable) == ("bam_drivers", "dynamixel")
    assert {k: driver.parameters[k] for k in ("port", "ids", "mass", "length", "actuator",
                                              "servo_model")} == {
        "port": "/dev/ttyUSB1", "ids": [3], "mass": 0.5, "length": 0.2, "actuator": "mx106",
        "servo_model": "mx106_p1"}
    assert specs["trajectory"].parameters["use_sim_time"] is False
    assert "port" not in BENCH.compose({"sim": "false"})[0].parameters  # the driver's default
    specs = {s.name: s for s in BENCH.compose({"sim": "false", "hardware": "emulated",
                                               "port": "/tmp/ttyDXL", "ids": "[1, 2]",
                                               "mass": "1.5"})}
    emulator = specs["serial_servo_emulator"]
    assert emulator.process and not specs["dynamixel"].process
    config = parse_args(list(emulator.arguments))  # the emulator's own parser takes them
    assert (config.ids, config.mass, config.servo_model) == ((1, 2), 1.5, "mx64_p1")
    assert specs["dynamixel"].parameters["port"] == "/tmp/ttyDXL"


def test_driver_erob_composes_the_erob_driver_and_its_emulator():
    """driver:=erob: the eRob driver with the actuator as its one drive model; with
    hardware:=emulated the EtherCAT emulator first, whose own parser takes the options."""
    from bam_drivers.emulators.ethercat_emulator import parse_args

    specs = {s.name: s for s in BENCH.compose({**EROB, "sim": "false", "interface": "enp3s0",
                                               "mass": "3.1", "length": "0.5"})}
    assert set(specs) == {"erob", "trajectory"}
    driver = specs["erob"]
    assert (driver.package, driver.executable, driver.process) == ("bam_drivers", "erob", False)
    assert driver.parameters == {"actuator": "erob80_100", "drive_models": ["erob80_100"],
                                 "interface": "enp3s0", "mass": 3.1, "length": 0.5,
                                 "arm_mass": 0.0}  # rate "": the driver's own 1 kHz
    specs = {s.name: s for s in BENCH.compose({**EROB, "sim": "false", "hardware": "emulated",
                                               "interface": "bamec7", "actuator": "erob80_50",
                                               "mass": "1.5", "rate": "500"})}
    assert list(specs) == ["ethercat_emulator", "erob", "trajectory"]  # the emulator first
    emulator = specs["ethercat_emulator"]
    assert emulator.process and emulator.ready == "READY"
    config = parse_args(list(emulator.arguments))
    assert (config.interface, config.drives, config.mass) == ("bamec7", ("erob80_50",), 1.5)
    assert specs["erob"].parameters["interface"] == "bamec7"
    assert specs["erob"].parameters["rate"] == 500.0


def test_driver_feetech_composes_the_feetech_driver_and_the_servo_emulator():
    """driver:=feetech: the Feetech driver, its servo model the actuator's unless given;
    with hardware:=emulated the servo emulator first, speaking Feetech's protocol."""
    from bam_drivers.emulators.serial_servo_emulator import build_bus, parse_args

    (driver, _) = BENCH.compose({**FEETECH, "sim": "false", "port": "/dev/ttyACM1",
                                 "ids": "[4]", "mass": "0.3"})
    assert (driver.package, driver.executable, driver.name) == ("bam_drivers", "feetech",
                                                                "feetech")
    assert driver.parameters == {"actuator": "sts3215", "port": "/dev/ttyACM1", "ids": [4],
                                 "servo_model": "sts3215", "mass": 0.3, "length": 0.15,
                                 "arm_mass": 0.0}
    specs = BENCH.compose({"driver": "feetech", "actuator": "sts3215_12v", "sim": "false",
                           "hardware": "emulated", "port": "/tmp/ttySTS", "ids": "1,2"})
    assert [s.name for s in specs] == ["serial_servo_emulator", "feetech", "trajectory"]
    config = parse_args(list(specs[0].arguments))
    assert (config.servo_model, config.ids, config.port) == ("sts3215_12v", (1, 2),
                                                             "/tmp/ttySTS")
    bus = build_bus(config)  # physics: the 12 V set, the servos speak Feetech's protocol
    assert bus.feetech and {s.sim.params.actuator.name for s in bus.servos.values()} == {
        "sts3215_12v"}
    assert specs[1].parameters["servo_model"] == "sts3215_12v"


def test_rate_left_out_keeps_each_drivers_own_default():
    """rate:="" gives no rate parameter: each driver keeps its own, as the argument says."""
    from bam_drivers.nodes import erob_node, feetech_node, serial_servo_node

    for values, node in (({"sim": "false"}, serial_servo_node), ({**EROB, "sim": "false"},
                                                              erob_node),
                         ({**FEETECH, "sim": "false"}, feetech_node)):
        (driver,) = [s for s in BENCH.compose(values) if s.package == "bam_drivers"]
        assert "rate" not in driver.parameters, driver.name
        (default,) = [p.default for p in node.PARAMETERS if p.name == "rate"]
        assert f"{default:g} Hz" in BENCH.arguments()["rate"].description, driver.name
