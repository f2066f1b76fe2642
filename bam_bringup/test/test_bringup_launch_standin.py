"""The launch files as the runner reads them: the stand-in's evaluation of each.

``bench serve`` has no twin of the launch files: it evaluates them with the
stand-in of ``launch``/``launch_ros`` (bam_bringup.launch_standin.launch_file). Here: each
launch file stays a plain launch file; every argument it declares is
documented; representative argument sets give exactly the expected nodes
(package, executable, name, namespace, parameters, remappings, a process's
command line); each refusal of a launch file is reached, in one line; and the
stand-in keeps launch's meaning where the files rely on it (group scope,
the last SetParameter wins, a node's own parameters over global ones).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from bam_bringup.launch_standin.launch_file import LaunchFile, standin_modules
from bam_bringup.runner import LAUNCH_FILES, build_parser
from bam_sim.common.errors import BamError

LAUNCH = Path(__file__).resolve().parents[1] / "launch"
CLOCK = (("/clock", "clock"),)
BENCH = {"mass": 1.0, "length": 0.15, "arm_mass": 0.0}
TRAJECTORY = {"joint_name": "pendulum", "command_rate": 200.0}


def started(config: str, values: dict) -> list[tuple]:
    """(name, package, executable, parameters or a process's arguments), in order."""
    specs = LAUNCH_FILES[config].compose(values)
    return [(s.name, s.package, s.executable, s.arguments if s.process else s.parameters)
            for s in specs]


CASES = [
    ("bench", {}, [
        ("pendulum", "bam_sim", "pendulum", {
            "joint_name": "pendulum", "rate": 1000.0, "publish_clock": True,
            "actuator": "mx64", "model": "m4", "real_time_factor": 1.0, **BENCH}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": True})]),
    ("bench", {"record": "true", "bag": "b", "protocol": "p.yaml", "params": "p.yaml",
               "real_time_factor": "0", "mass": "2"}, [
        ("pendulum", "bam_sim", "pendulum", {
            "joint_name": "pendulum", "rate": 1000.0, "publish_clock": True,
            "actuator": "mx64", "model": "m4", "params_file": "p.yaml",
            "real_time_factor": 0.0, **BENCH, "mass": 2.0}),
        ("trajectory", "bam_identify", "trajectory", {
            **TRAJECTORY, "use_sim_time": True, "protocol_file": "p.yaml"}),
        ("recorder", "bam_identify", "recorder", {
            "storage": "mcap", "use_sim_time": True, "output": "b"})]),
    ("bench", {"sim": "false", "port": "/dev/ttyUSB1", "ids": "1,2", "rate": "500",
               "servo_model": "mx106_p1", "actuator": "mx106"}, [
        ("dynamixel", "bam_drivers", "dynamixel", {
            "actuator": "mx106", "port": "/dev/ttyUSB1", "ids": [1, 2], "rate": 500.0,
            "servo_model": "mx106_p1", **BENCH}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": False})]),
    ("bench", {"sim": "false", "hardware": "emulated", "port": "/tmp/ttyDXL"}, [
        ("serial_servo_emulator", "bam_drivers", "serial_servo_emulator", (
            "--port", "/tmp/ttyDXL", "--ids", "1", "--servo-model", "mx64_p1",
            "--params-file", "", "--mass", "1.0", "--length", "0.15", "--arm-mass", "0.0",
            "--exit-with-parent")),
        ("dynamixel", "bam_drivers", "dynamixel", {
            "actuator": "mx64", "port": "/tmp/ttyDXL", "ids": [1], **BENCH}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": False})]),
    ("bench", {"sim": "false", "driver": "feetech", "actuator": "sts3215_12v",
               "hardware": "emulated", "port": "/tmp/ttySTS", "ids": "[3]"}, [
        ("serial_servo_emulator", "bam_drivers", "serial_servo_emulator", (
            "--port", "/tmp/ttySTS", "--ids", "3", "--servo-model", "sts3215_12v",
            "--params-file", "", "--mass", "1.0", "--length", "0.15", "--arm-mass", "0.0",
            "--exit-with-parent")),
        ("feetech", "bam_drivers", "feetech", {
            "actuator": "sts3215_12v", "port": "/tmp/ttySTS", "ids": [3],
            "servo_model": "sts3215_12v", **BENCH}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": False})]),
    ("bench", {"sim": "false", "driver": "feetech", "actuator": "sts3215",
               "servo_model": "sts3215_12v"}, [  # the later SetParameter wins
        ("feetech", "bam_drivers", "feetech", {
            "actuator": "sts3215", "ids": [1], "servo_model": "sts3215_12v", **BENCH}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": False})]),
    ("bench", {"sim": "false", "driver": "erob", "actuator": "erob80_100",
               "hardware": "emulated", "interface": "bamec0", "mass": "3.1",
               "length": "0.5", "params": "e.yaml"}, [
        ("ethercat_emulator", "bam_drivers", "ethercat_emulator", (
            "--interface", "bamec0", "--drives", "erob80_100", "--params-file", "e.yaml",
            "--mass", "3.1", "--length", "0.5", "--arm-mass", "0.0", "--exit-with-parent")),
        ("erob", "bam_drivers", "erob", {
            "interface": "bamec0", "actuator": "erob80_100", "drive_models": ["erob80_100"],
            "mass": 3.1, "length": 0.5, "arm_mass": 0.0}),
        ("trajectory", "bam_identify", "trajectory", {**TRAJECTORY, "use_sim_time": False})]),
    ("arm", {}, [
        ("arm", "bam_sim", "arm", {"publish_clock": True, "arm": "dynamixel",
                                   "real_time_factor": 1.0, "viewer": False})]),
    ("arm", {"arm": "erob", "params": ",p.yaml", "models": "[m1, m6]", "gains": "32,16.5",
             "actuators": "mx106", "joint_names": "a,b", "mjcf": "r.xml", "viewer": "true"}, [
        ("arm", "bam_sim", "arm", {
            "publish_clock": True, "arm": "erob", "mjcf": "r.xml", "real_time_factor": 1.0,
            "viewer": True, "params_files": ["", "p.yaml"], "models": ["m1", "m6"],
            "gains": [32.0, 16.5], "actuators": ["mx106"], "joints": ["a", "b"]})]),
    ("arm", {"sim": "false"}, [
        ("dynamixel", "bam_drivers", "dynamixel", {
            "port": "/dev/ttyUSB0", "ids": [1, 2], "servo_model": "mx106_p1", "protocol": 1,
            "joint_names": ["shoulder", "elbow"]})]),
    ("arm", {"sim": "false", "arm": "feetech", "port": "/dev/ttyACM0", "ids": "5,6",
             "joint_names": "[a, b]"}, [
        ("feetech", "bam_drivers", "feetech", {
            "port": "/dev/ttyACM0", "ids": [5, 6], "joint_names": ["a", "b"]})]),
    ("arm", {"sim": "false", "arm": "erob", "interface": "eth1"}, [
        ("erob", "bam_drivers", "erob", {
            "interface": "eth1", "drive_models": ["erob80_100", "erob80_50"],
            "joint_names": ["shoulder", "elbow"]})]),
]


@pytest.mark.parametrize(("config", "values", "expected"), CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_each_argument_set_starts_the_expected_nodes(config, values, expected):
    assert started(config, values) == expected


@pytest.mark.parametrize(("config", "values", "expected"), CASES,
                         ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_every_node_runs_in_the_namespace_with_its_clock(config, values, expected):
    for spec in LAUNCH_FILES[config].compose({**values, "namespace": "lab/b1"}):
        if spec.process:  # a plain process: no namespace, its emulator's own options
            assert (spec.ready, spec.namespace, spec.remappings) == ("READY", "", ())
        else:
            assert (spec.namespace, spec.remappings) == ("/lab/b1", CLOCK), spec.name


def test_every_launch_file_is_read_by_the_runner():
    # but control.launch.py: it starts ros2_control, which does not install here (the
    # stand-in's evaluation of it is tested in test_bringup_ros2_control.py)
    assert sorted(p.name.removesuffix(".launch.py") for p in LAUNCH.glob("*.launch.py")) == \
        sorted([*LAUNCH_FILES, "control"])


@pytest.mark.parametrize("config", sorted(LAUNCH_FILES))
def test_launch_files_are_plain_launch_files(config):
    tree = ast.parse((LAUNCH / f"{config}.launch.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    # ROS 2 launch and the registries it takes its lists from, nothing of the stand-in
    assert {name.split(".")[0] for name in imported} <= {
        "launch", "launch_ros", "typing", "bam_sim", "bam_drivers"}
    assert "generate_launch_description" in {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("config", sorted(LAUNCH_FILES))
def test_every_argument_is_documented(config, capsys):
    """A description of its own for each argument, shown with its default by `bench serve
    --help` (the launch file's words, not a copy)."""
    arguments = LAUNCH_FILES[config].arguments()
    assert arguments
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for argument in arguments.values():
        assert len(argument.description.split()) >= 3, argument.name
        default = argument.default or '""'
        assert " ".join(f"{argument.name}:={default} {argument.description}".split()) \
            in help_text, argument.name
    descriptions = [a.description for a in arguments.values()]
    assert len(set(descriptions)) == len(descriptions)


def refusals(config: str) -> list[str]:
    """The messages the launch file's ``refuse`` raises, in order, as written up to their
    first computed part (adjacent string literals joined; an f-string or a sum up to its
    first value)."""
    def written(node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            head = []
            for part in node.values:
                if not isinstance(part, ast.Constant):
                    break
                head.append(part.value)
            return "".join(head)
        if isinstance(node, ast.BinOp):
            return written(node.left)
        return ""

    tree = ast.parse((LAUNCH / f"{config}.launch.py").read_text(encoding="utf-8"))
    (refuse,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "refuse"]
    raises = sorted((n for n in ast.walk(refuse) if isinstance(n, ast.Raise)),
                    key=lambda n: n.lineno)
    return [written(n.exc.args[0]) for n in raises]


REFUSED = {
    "bench": [{"driver": "ethercat"}, {"hardware": "virtual"},
              {"hardware": "emulated", "port": "/tmp/x"},
              {"sim": "false", "actuator": "sts3215"},  # each driver's: test_bringup_launch
              {"sim": "false", "hardware": "emulated"},
              {"sim": "false", "driver": "erob", "actuator": "erob80_50",
               "hardware": "emulated"}],
    "arm": [{"sim": "false", "arm": "scara"}, {"sim": "false", "gains": "8"}],
}


@pytest.mark.parametrize("config", sorted(REFUSED))
def test_each_refusal_of_the_launch_file_is_one_line(config):
    messages = []
    for values in REFUSED[config]:
        with pytest.raises(BamError) as refused:
            LAUNCH_FILES[config].compose(values)
        messages.append(str(refused.value))
    # each raise of the file reached once, its words passed on as written
    written = refusals(config)
    assert len(messages) == len(written) == len(REFUSED[config])
    assert all(m.startswith(w) and w for m, w in zip(messages, written, strict=True)), \
        list(zip(messages, written, strict=True))
    assert all("\n" not in m for m in messages)


@pytest.mark.parametrize(("values", "message"), [
    ({"gains": "32,high"}, "entry 'high' of argument gains must be a number"),
    ({"gains": "[1, inf]"}, "entry 'inf' of argument gains must be a number"),
    ({"models": "[m1, m2"}, r"argument models:=\[m1, m2 is not a list"),
    ({"sim": "false", "joint_names": "[a"}, r"argument joint_names:=\[a is not a list"),
    ({"sim": "false", "joint_names": "a'b"}, "cannot evaluate"),
])
def test_per_joint_values_of_the_arm_are_checked_in_one_line(values, message):
    with pytest.raises(BamError, match=message):
        LAUNCH_FILES["arm"].compose(values)


def test_values_are_checked_against_the_kind_of_their_default_first():
    """Even an argument no node takes (ids with sim:=true) and before any refusal."""
    bench = LAUNCH_FILES["bench"]
    with pytest.raises(BamError, match="entry 'x' of argument ids must be a number"):
        bench.compose({"ids": "1,x", "driver": "ethercat"})
    # rate's default is "": its kind is the value_type the launch file gives it (a float)
    with pytest.raises(BamError, match="argument rate:=fast must be a number"):
        bench.compose({"rate": "fast"})  # sim:=true: no driver takes it
    with pytest.raises(BamError, match=r"argument models:=\[m1 is not a list"):
        LAUNCH_FILES["arm"].compose({"sim": "false", "models": "[m1"})  # the real arm
    assert bench.checked({"sim": "yes", "mass": "1", "ids": "1,2", "port": "x",
                          "length": ".inf", "rate": ""}) == {
        "sim": "true", "mass": "1.0", "ids": "[1, 2]", "port": "x", "length": ".inf",
        "rate": ""}
    assert bench.checked({"sim": False, "mass": 0.5}) == {"sim": "false", "mass": "0.5"}


GROUPS = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, SetParameter


def generate_launch_description():
    flag = LaunchConfiguration("flag")
    return LaunchDescription([
        DeclareLaunchArgument("flag", default_value="false", description="a flag to test"),
        DeclareLaunchArgument("gain", default_value="1.5", description="a number to test"),
        SetParameter("everywhere", 1),
        GroupAction([SetParameter("scoped", LaunchConfiguration("gain")),
                     SetParameter("scoped", "later"),
                     Node(package="p", executable="a", name="a",
                          parameters=[{"everywhere": 2}])]),
        Node(package="p", executable="b", name="b", condition=IfCondition(flag)),
        Node(package="p", executable="c", name="c", condition=UnlessCondition(flag)),
    ])
'''


def test_the_standin_keeps_launchs_scopes_and_conditions(tmp_path):
    path = tmp_path / "groups.launch.py"
    path.write_text(GROUPS, encoding="utf-8")
    groups = LaunchFile("groups", path)
    assert [(s.name, s.parameters) for s in groups.compose({})] == [
        ("a", {"everywhere": 2, "scoped": "later"}),  # its own over the global one
        ("c", {"everywhere": 1})]  # the group's parameter stays in the group
    assert [s.name for s in groups.compose({"flag": "true"})] == ["a", "b"]


def test_the_standin_is_bound_only_while_a_launch_file_loads():
    before = {name: sys.modules.get(name) for name in ("launch", "launch_ros")}
    with standin_modules():
        import launch

        assert launch.LaunchDescription.__module__ == "bam_bringup.launch_standin.actions"
    assert {name: sys.modules.get(name) for name in before} == before
