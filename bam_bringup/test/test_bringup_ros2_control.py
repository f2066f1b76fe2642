"""The ros2_control descriptions: URDFs, controllers files and control.launch.py.

ros2_control, its controllers and xacro do not install here, so what holds without
them is checked: each robot (the pendulum bench, each shipped arm) has a URDF
(plain URDF, no xacro: read with xml.etree) whose <ros2_control> block loads
TopicBasedSystem on the node's relative topics, and a controllers file
(yaml.safe_load) with the three controllers, typed as ros2_controllers names
them. The joints both name are the ones the actuator node publishes, read from
the nodes themselves (built from the launch files as `bench serve` builds them,
simulated and on each driver), so a renamed joint on either side fails here.
control.launch.py, evaluated by the launch stand-in, takes only arguments the
bench's or arm's launch file takes, and starts that file's nodes unchanged plus
robot_state_publisher, controller_manager and the spawners, with these files.
"""

from __future__ import annotations

import ast
import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from bam_bringup.launch_standin.launch_file import LaunchFile
from bam_bringup.process_bench import build_nodes
from bam_bringup.runner import LAUNCH_FILES
from bam_sim.common.contract import JOINT_COMMANDS, JOINT_STATES
from bam_sim.mujoco_arm.shipped_arms import ARMS
from bam_testing.ros_context import private_context

PACKAGE = Path(__file__).resolve().parents[1]
CONTROL = LaunchFile("control")
PLUGIN = "topic_based_ros2_control/TopicBasedSystem"
# ros2_controllers' plugin names (control.ros.org, Jazzy).
CONTROLLERS = {
    "joint_state_broadcaster": "joint_state_broadcaster/JointStateBroadcaster",
    "forward_position_controller": "forward_command_controller/ForwardCommandController",
    "joint_trajectory_controller": "joint_trajectory_controller/JointTrajectoryController",
}
ROBOTS = ["pendulum", *ARMS]  # urdf/<robot>.urdf, config/<robot>_controllers.yaml
NO_PORT = "/nonexistent/tty"  # a driver starts without its bus (and retries)


def config_of(robot: str) -> tuple[str, dict[str, str]]:
    """The launch file (of LAUNCH_FILES) serving the robot, and the arguments naming it."""
    return ("bench", {}) if robot == "pendulum" else ("arm", {"arm": robot})


def setups(robot: str) -> list[dict[str, str]]:
    """Argument sets of every actuator node the robot runs on: simulated, and each driver."""
    if robot == "pendulum":
        return [{}, {"sim": "false", "port": NO_PORT},
                {"sim": "false", "driver": "feetech", "actuator": "sts3215", "port": NO_PORT},
                {"sim": "false", "driver": "erob", "actuator": "erob80_100",
                 "interface": "nonexistent0"}]
    hardware = {"interface": "nonexistent0"} if robot == "erob" else {"port": NO_PORT}
    return [{"arm": robot}, {"arm": robot, "sim": "false", **hardware}]


@pytest.fixture(scope="module")
def published() -> dict[str, list[tuple[str, ...]]]:
    """Per robot, the joint names each of its actuator nodes publishes (one per setup)."""
    names: dict[str, list[tuple[str, ...]]] = {}
    with private_context() as context:
        for robot in ROBOTS:
            config, _ = config_of(robot)
            names[robot] = []
            for values in setups(robot):
                (spec,) = [s for s in LAUNCH_FILES[config].compose(values)
                           if not s.process and s.package in ("bam_sim", "bam_drivers")]
                node = build_nodes([spec], context)[spec.name]
                try:
                    names[robot].append(tuple(node.joint_names))
                finally:
                    node.destroy_node()
    return names


@pytest.fixture(scope="module")
def joints(published) -> dict[str, list[str]]:
    """Per robot, the joints its nodes publish, all setups alike."""
    return {robot: list(found[0]) for robot, found in published.items()}


# ---- the checks, as functions: a drifted file must fail them (tested below) ----

def urdf_problems(text: str, joints: list[str]) -> list[str]:
    """What is wrong with a URDF for ros2_control over an actuator node publishing
    ``joints`` (empty when nothing is)."""
    robot = ET.fromstring(text)
    problems = []
    moving = [j.get("name") for j in robot.findall("joint") if j.get("type") != "fixed"]
    if moving != joints:
        problems.append(f"URDF joints {moving}, the node publishes {joints}")
    blocks = robot.findall("ros2_control")
    if len(blocks) != 1:
        return [*problems, f"{len(blocks)} <ros2_control> blocks, not 1"]
    (block,) = blocks
    if block.get("type") != "system":
        problems.append(f"<ros2_control type={block.get('type')!r}>, not system")
    hardware = block.find("hardware")
    plugin = hardware.findtext("plugin", "").strip() if hardware is not None else ""
    if plugin != PLUGIN:
        problems.append(f"plugin {plugin!r}, not {PLUGIN}")
    params = {p.get("name"): (p.text or "").strip()
              for p in (hardware.findall("param") if hardware is not None else [])}
    expected = {"joint_commands_topic": JOINT_COMMANDS.name,
                "joint_states_topic": JOINT_STATES.name}
    for name, topic in expected.items():
        if params.get(name) != topic:
            problems.append(f"{name} {params.get(name)!r}, not the node's {topic!r}")
    controlled = [j.get("name") for j in block.findall("joint")]
    if controlled != joints:
        problems.append(f"<ros2_control> joints {controlled}, the node publishes {joints}")
    for joint in block.findall("joint"):
        commands = [c.get("name") for c in joint.findall("command_interface")]
        states = [s.get("name") for s in joint.findall("state_interface")]
        if commands != ["position"]:
            problems.append(f"{joint.get('name')}: command interfaces {commands}")
        if states != ["position", "velocity", "effort"]:
            problems.append(f"{joint.get('name')}: state interfaces {states}")
    return problems


def controllers_problems(data: dict, joints: list[str]) -> list[str]:
    """What is wrong with a controllers file for an actuator node publishing ``joints``."""
    problems = []

    def section(node: str) -> dict:
        found = data.get(f"/**/{node}", {}).get("ros__parameters")
        if found is None:
            problems.append(f"no /**/{node}: ros__parameters")
        return found or {}

    manager = section("controller_manager")
    if not isinstance(manager.get("update_rate"), int) or manager.get("update_rate") <= 0:
        problems.append(f"update_rate {manager.get('update_rate')!r}")
    types = {name: manager.get(name, {}).get("type") for name in CONTROLLERS}
    if types != CONTROLLERS:
        problems.append(f"controller types {types}")
    if section("joint_state_broadcaster").get("use_local_topics") is not True:
        problems.append("joint_state_broadcaster would publish on the node's joint_states")
    forward = section("forward_position_controller")
    if (forward.get("joints"), forward.get("interface_name")) != (joints, "position"):
        problems.append(f"forward_position_controller {forward}")
    trajectory = section("joint_trajectory_controller")
    if trajectory.get("joints") != joints:
        problems.append(f"joint_trajectory_controller joints {trajectory.get('joints')}")
    if trajectory.get("command_interfaces") != ["position"] or \
            not set(trajectory.get("state_interfaces", [])) <= {"position", "velocity"}:
        problems.append(f"joint_trajectory_controller interfaces {trajectory}")
    constraints = trajectory.get("constraints", {})
    per_joint = sorted(k for k, v in constraints.items() if isinstance(v, dict))
    if per_joint != sorted(joints):
        problems.append(f"constraints name joints {per_joint}, the node publishes {joints}")
    return problems


def urdf_text(robot: str) -> str:
    return (PACKAGE / "urdf" / f"{robot}.urdf").read_text(encoding="utf-8")


def controllers(robot: str) -> dict:
    path = PACKAGE / "config" / f"{robot}_controllers.yaml"
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ---- the files ----

def test_every_robot_has_a_urdf_and_a_controllers_file_and_no_other():
    assert sorted(p.stem for p in (PACKAGE / "urdf").iterdir()) == sorted(ROBOTS)
    assert sorted(p.name.removesuffix("_controllers.yaml")
                  for p in (PACKAGE / "config").glob("*_controllers.yaml")) == sorted(ROBOTS)


def test_the_files_are_installed():
    """setup.py installs them: the launch file finds them in share/bam_bringup."""
    setup = (PACKAGE / "setup.py").read_text(encoding="utf-8")
    assert "data('urdf/*.urdf')" in setup and "data('config/*.yaml')" in setup
    assert "data('launch/*.launch.py')" in setup


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_actuator_node_of_a_robot_publishes_the_same_joints(published, robot):
    """Simulated and on each driver: one URDF fits them all."""
    assert len(set(published[robot])) == 1, published[robot]
    assert published[robot][0]


@pytest.mark.parametrize("robot", ROBOTS)
def test_the_urdf_controls_the_nodes_joints_through_their_topics(joints, robot):
    assert urdf_problems(urdf_text(robot), joints[robot]) == []


@pytest.mark.parametrize("arm", sorted(ARMS))
def test_the_arm_urdf_has_the_shipped_arms_kinematics(arm):
    spec = ARMS[arm]
    origins = {j.get("name"): [float(v) for v in j.find("origin").get("xyz").split()]
               for j in ET.fromstring(urdf_text(arm)).findall("joint")}
    assert [j.joint for j in spec.joints] == ["shoulder", "elbow"]
    assert origins == {"shoulder": [0.0, 0.0, spec.shoulder_height],
                       "elbow": [0.0, 0.0, -spec.link_lengths[0]],
                       "tip": [0.0, 0.0, -spec.link_lengths[1]]}


@pytest.mark.parametrize("robot", ROBOTS)
def test_the_controllers_file_names_the_nodes_joints_and_the_three_controllers(joints, robot):
    assert controllers_problems(controllers(robot), joints[robot]) == []


@pytest.mark.parametrize("robot", ROBOTS)
def test_a_drifted_joint_name_fails_the_checks(joints, robot):
    names = joints[robot]
    renamed = urdf_text(robot).replace(f'"{names[-1]}"', f'"{names[-1]}_joint"')
    assert urdf_problems(renamed, names)
    assert urdf_problems(urdf_text(robot), [*names[:-1], "other"])
    drifted = yaml.safe_load(yaml.safe_dump(controllers(robot)).replace(
        f"{names[-1]}", f"{names[-1]}_joint"))
    assert controllers_problems(drifted, names)
    assert controllers_problems(controllers(robot), list(reversed(names)) + ["extra"])


# ---- control.launch.py ----

def test_control_launch_is_a_plain_launch_file():
    tree = ast.parse(CONTROL.path.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} <= {"launch", "launch_ros"}


def test_control_launch_declares_only_arguments_of_the_bench_or_arm():
    """Every other argument reaches the included file as ros2 launch gives it; sim and
    namespace keep the defaults both files give them."""
    own = CONTROL.arguments()
    bench, arm = LAUNCH_FILES["bench"].arguments(), LAUNCH_FILES["arm"].arguments()
    assert set(own) <= set(bench) | set(arm)
    for name in set(own) & set(bench) & set(arm):
        assert own[name].default == bench[name].default == arm[name].default, name
    assert own["arm"].default == ""  # the bench: arm.launch.py's arms are not defaults here
    descriptions = [a.description for a in own.values()]
    assert all(len(d.split()) >= 3 for d in descriptions)
    assert len(set(descriptions)) == len(descriptions)


@pytest.mark.parametrize(("robot", "sim"), list(itertools.product(ROBOTS, ["true", "false"])))
def test_control_launch_starts_the_bench_or_arm_with_ros2_control(robot, sim):
    config, naming = config_of(robot)
    values = {**naming, "sim": sim, "namespace": "lab/b1"}
    started = CONTROL.compose(values)
    included = LAUNCH_FILES[config].compose({k: v for k, v in values.items()
                                             if k in LAUNCH_FILES[config].arguments()})
    assert started[:len(included)] == included  # the bench's or arm's nodes, unchanged
    state, manager, active, inactive = started[len(included):]
    assert [(s.package, s.executable) for s in (state, manager, active, inactive)] == [
        ("robot_state_publisher", "robot_state_publisher"),
        ("controller_manager", "ros2_control_node"),
        ("controller_manager", "spawner"), ("controller_manager", "spawner")]
    for spec in (state, manager, active, inactive):
        assert spec.namespace == "/lab/b1", spec.executable  # the node's relative topics
    assert state.parameters == {"robot_description": urdf_text(robot),
                                "use_sim_time": sim == "true"}
    assert manager.parameters == {"use_sim_time": sim == "true"}
    (path,) = manager.parameter_files
    assert Path(path).name == f"{robot}_controllers.yaml"
    assert yaml.safe_load(Path(path).read_text(encoding="utf-8")) == controllers(robot)
    assert ("~/robot_description", "robot_description") in manager.remappings
    for spec in (state, manager):
        assert ("/clock", "clock") in spec.remappings
    assert active.arguments == ("joint_state_broadcaster", "joint_trajectory_controller")
    assert inactive.arguments == ("forward_position_controller", "--inactive")
