"""A fitted parameter file configures the simulation nodes, by ``--params-file`` or ``params_file``.

Observed through behaviour: a set whose Coulomb friction far exceeds the
servo's torque keeps the joint still under a goal that moves the published set.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.nodes.arm_node import ArmNode
from bam_sim.nodes.pendulum_node import PendulumNode
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import SimProbe

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, discovery included
DOMAIN, DOMAIN_ARM = ros_domain(3), ros_domain(4)
STUCK = 20.0  # N·m of Coulomb friction: several times the MX-64's stall torque


def stiff_file(folder: Path, actuator: str = "mx64") -> Path:
    params = published_named(actuator, "m1").replace(friction_base=STUCK)
    return save(params, folder / f"{actuator}_stuck.yaml")


def travel(context, node_class, name: str, goals: dict[str, float], **params) -> dict:
    """How far each joint moves in 1 s of simulated time under ``goals``, from before they
    were sent."""
    probe = SimProbe(context, node_class, name, TIMEOUT, real_time_factor=4.0, **params)
    try:
        probe.wait_ready()
        joints = list(probe.joint_states[-1].name)
        start = dict(zip(joints, probe.joint_states[-1].position))
        probe.send_goals(goals)
        probe.wait_sim(1.0)
        end = dict(zip(joints, probe.joint_states[-1].position))
        return {j: abs(end[j] - start[j]) for j in joints}
    finally:
        probe.close()
        probe.node.destroy_node()


@pytest.mark.parametrize("how", ["--params-file", "params_file"])
def test_pendulum_takes_a_fitted_file(tmp_path, how):
    path = stiff_file(tmp_path)
    with private_context(DOMAIN) as ctx:
        free = travel(ctx, PendulumNode, "pendulum", {"pendulum": 0.8}, model="m1")
    assert free["pendulum"] > 0.3  # the published m1 set follows the goal
    args = ["--ros-args", "--params-file", str(path)] if how == "--params-file" else None
    params = {"params_file": str(path)} if how == "params_file" else {}
    with private_context(DOMAIN, args=args) as ctx:
        held = travel(ctx, PendulumNode, "pendulum", {"pendulum": 0.8}, **params)
    assert held["pendulum"] < 1e-3


def test_pendulum_takes_an_elasto_plastic_file(tmp_path):
    """An ep_stribeck file whose static friction far exceeds the servo's torque holds the
    joint, within the pre-sliding deflection τ/K (K = 2e4 N·m/rad: < 0.5 mrad)."""
    m1 = published_named("mx64", "m1").values
    params = ParameterSet.from_names("mx64", "ep_stribeck", {
        **{k: m1[k] for k in ("kt", "R", "armature")}, "friction_base": STUCK,
        "friction_stribeck": 5.0, "dtheta_stribeck": 0.5, "friction_viscous": 0.02,
        "contact_stiffness": 2.0e4, "contact_damping": 0.6})
    path = save(params, tmp_path / "mx64_ep.yaml")
    with private_context(DOMAIN, args=["--ros-args", "--params-file", str(path)]) as ctx:
        held = travel(ctx, PendulumNode, "pendulum", {"pendulum": 0.8})
    assert held["pendulum"] < 1e-3


def test_values_without_their_actuator_are_refused_by_the_arm(tmp_path):
    with private_context(DOMAIN, args=["--ros-args", "-p", "kt:=1.5"]) as ctx:
        with pytest.raises(BamError, match="without 'actuator' and 'model'"):
            ArmNode(context=ctx)


def test_arm_takes_a_fitted_file_for_the_joints_of_its_actuator(tmp_path):
    # The Dynamixel arm: an MX-106 shoulder and an MX-64 elbow; the file is the MX-64's.
    path = stiff_file(tmp_path)
    goals = {"shoulder": 0.4, "elbow": 0.8}
    with private_context(DOMAIN_ARM, args=["--ros-args", "--params-file", str(path)]) as ctx:
        moved = travel(ctx, ArmNode, "arm", goals)
    assert moved["elbow"] < 1e-3 and moved["shoulder"] > 0.1
    with private_context(DOMAIN_ARM) as ctx:
        moved = travel(ctx, ArmNode, "arm", goals, params_files=["", str(path)])
    assert moved["elbow"] < 1e-3 and moved["shoulder"] > 0.1
