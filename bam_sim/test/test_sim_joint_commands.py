"""ros2_control through topics: what TopicBasedSystem publishes drives the sim nodes.

ros2_control's topic-based hardware interface (PickNik's TopicBasedSystem, now
ros-controls' JointStateTopicSystem; the source read is cited above
``parse_joint_command`` in bam_sim.common.commands) writes a
``sensor_msgs/JointState`` on its ``joint_commands_topic`` once per controller
update: the joints' names, their position commands (velocity or effort where
those interfaces are configured), stamped now, reliable, volatile, keep last 1.
The probe (bam_testing.ros_graph.ActuatorProbe) publishes exactly that on
``joint_commands``, at 100 Hz, to the pendulum and the arm.

The parser is checked first without ROS: the three command topics share one
validation, so the same defect is refused with the same kind on each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from bam_msgs.msg import ActuatorCommand
from bam_sim.common.commands import (
    CommandError,
    CommandLimits,
    check_command,
    parse_command,
    parse_joint_command,
    parse_position_command,
)
from bam_sim.common.errors import BamError
from bam_sim.nodes.arm_node import ArmNode
from bam_sim.nodes.pendulum_node import PendulumNode
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import SimProbe, closing

TIMEOUT = 30.0  # s, discovery included
JOINTS = ("shoulder", "elbow")
LIMITS = CommandLimits.per_joint([((-3.0, 3.0), 100.0)] * 2)


# -- the parser: one validation for the three command topics ----------------------------

def test_joint_commands_name_any_subset_in_any_order():
    command = parse_joint_command(JointState(name=["elbow", "shoulder"],
                                             position=[0.2, -0.1]), JOINTS)
    assert (command.indices, command.goals) == ((1, 0), (0.2, -0.1))
    assert command.torque_enables is None and command.gains is None  # kept as they are
    # Another node's joint in the same message (one ros2_control system, several nodes).
    command = parse_joint_command(JointState(name=["gripper", "elbow"], position=[0.9, 0.3],
                                             velocity=[math.nan, 0.0]), JOINTS)
    assert (command.indices, command.goals) == ((1,), (0.3,))


# The same defect given to /bam/commands and /joint_commands: both refused, same kind.
DEFECTS = {
    "unknown names": (dict(names=["wrist"], goal_positions=[0.1]),
                      dict(name=["wrist"], position=[0.1]), "joint"),
    "a joint twice": (dict(names=["elbow", "elbow"], goal_positions=[0.1, 0.2]),
                      dict(name=["elbow", "elbow"], position=[0.1, 0.2]), "joint"),
    "lengths": (dict(names=["elbow"], goal_positions=[0.1, 0.2]),
                dict(name=["elbow"], position=[0.1, 0.2]), "length"),
}


@pytest.mark.parametrize("defect", DEFECTS)
def test_the_command_topics_refuse_the_same_defects(defect):
    bam, joint, what = DEFECTS[defect]
    with pytest.raises(CommandError) as on_bam:
        parse_command(ActuatorCommand(**bam), JOINTS)
    with pytest.raises(CommandError) as on_joint:
        parse_joint_command(JointState(**joint), JOINTS)
    assert (on_bam.value.kind, on_joint.value.kind) == \
        (f"commands/{what}", f"joint_commands/{what}")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 7.0])
def test_bad_goals_fail_the_one_value_check_whatever_the_topic(bad):
    commands = [parse_command(ActuatorCommand(names=["elbow"], goal_positions=[bad]), JOINTS),
                parse_position_command(Float64MultiArray(data=[0.0, bad]), JOINTS),
                parse_joint_command(JointState(name=["elbow"], position=[bad]), JOINTS)]
    for command in commands:
        with pytest.raises(BamError, match="joint 'elbow' is outside"):
            check_command(command, LIMITS, JOINTS)


@pytest.mark.parametrize("fields", [
    dict(name=["elbow"], position=[0.1], effort=[0.5]),  # an effort interface
    dict(name=["elbow"], velocity=[0.5]),  # velocity only: nothing to apply
    dict(name=["elbow"]),
], ids=["effort", "velocity only", "names only"])
def test_what_a_position_servo_cannot_apply_is_refused(fields):
    with pytest.raises(CommandError, match="position commands only") as refused:
        parse_joint_command(JointState(**fields), JOINTS)
    assert refused.value.kind == "joint_commands/interface"


def test_a_joint_without_a_position_interface_is_a_length_mismatch():
    # TopicBasedSystem leaves `position` shorter than `name` when one joint of its block
    # has no position command interface: the rows cannot be matched to names.
    with pytest.raises(CommandError) as refused:
        parse_joint_command(JointState(name=["shoulder", "elbow"], position=[0.1]), JOINTS)
    assert refused.value.kind == "joint_commands/length"


# -- the nodes, over DDS -----------------------------------------------------------------

@pytest.fixture(scope="module")
def context():
    with private_context(ros_domain(1)) as ctx:
        yield ctx


@pytest.fixture
def sim(context):
    """A simulation node (class, parameters) and a probe on its topics."""
    with closing(lambda node, **params: SimProbe(context, node, "joint_commands", TIMEOUT,
                                                 **params)) as make:
        yield make


def goals(b) -> list[float]:
    return [s.goal_position for s in b.last_state()]


@pytest.mark.live
def test_the_pendulum_follows_topic_based_system_commands(sim):
    b = sim(PendulumNode, rate=200.0, real_time_factor=4.0, gain=16.0, mass=0.5, length=0.2)
    b.wait_ready()
    b.stream_joint_commands(["pendulum"], [0.5])
    b.wait_for(lambda: goals(b) == [0.5], "the goal taken")
    b.wait_sim(1.5)
    assert b.joint_states[-1].position[0] == pytest.approx(0.5, abs=0.05)
    # Position and velocity interfaces configured: the velocity is ignored (warned once).
    b.stream_joint_commands(["pendulum"], [-0.3], velocity=[0.0])
    b.wait_for(lambda: goals(b) == [-0.3], "the second goal taken")
    b.wait_sim(1.5)
    assert b.joint_states[-1].position[0] == pytest.approx(-0.3, abs=0.05)
    assert not b.node.rejected_commands and b.last_state()[0].torque_enable


@pytest.mark.live
def test_the_arm_follows_topic_based_system_commands(sim):
    a = sim(ArmNode, publish_every=10, real_time_factor=4.0)
    a.wait_ready()
    a.stream_joint_commands(list(JOINTS), [0.25, -0.15])
    a.wait_for(lambda: goals(a) == [0.25, -0.15], "both goals taken")
    # A subset, named with a joint of another node (one ros2_control system, two nodes).
    a.stream_joint_commands(["gripper", "elbow"], [0.9, 0.1])
    a.wait_for(lambda: goals(a) == [0.25, 0.1], "the elbow's goal taken")
    a.wait_sim(1.5)
    position = np.array(a.joint_states[-1].position)
    assert np.all(np.abs(position - [0.25, 0.1]) < 0.05), position
    assert not a.node.rejected_commands


# Bad /joint_commands and the kind each is counted as, for a node with these joints.
def bad_joint_commands(b, joints: list[str]) -> dict[str, JointState]:
    n = len(joints)
    return {
        "joint_commands/joint": b.joint_command(["wrist"], [0.3]),
        "joint_commands/value": b.joint_command(joints, [math.nan] * n),
        "joint_commands/length": b.joint_command(joints, [0.3] * (n + 1)),
    }


@pytest.mark.live
@pytest.mark.parametrize("node, params", [(PendulumNode, dict(rate=200.0)),
                                           (ArmNode, dict(publish_every=10))],
                         ids=["pendulum", "arm"])
def test_bad_joint_commands_are_refused_and_nothing_moves(sim, node, params):
    # States at 200 Hz of simulated time: the probe keeps up on a loaded machine.
    b = sim(node, real_time_factor=2.0, **params)
    b.wait_ready()
    joints = list(b.node.joint_names)
    before = goals(b)
    bad = bad_joint_commands(b, joints)
    bad["joint_commands/length (velocity)"] = b.joint_command(joints, [0.3] * len(joints),
                                                              velocity=[0.0] * (len(joints) + 1))
    bad["joint_commands/value (inf)"] = b.joint_command(joints[-1:], [math.inf])
    bad["joint_commands/joint (twice)"] = b.joint_command(joints[:1] * 2, [0.3, 0.3])
    bad["joint_commands/interface"] = b.joint_command(joints, [0.3] * len(joints),
                                                      effort=[0.0] * len(joints))
    b.send_rejected(list(bad.values()), rounds=2)
    assert b.node.rejected_commands == {"joint_commands/joint": 4, "joint_commands/value": 4,
                                        "joint_commands/length": 4,
                                        "joint_commands/interface": 2}
    # Logged once per kind, as the other topics' bad commands are.
    assert sorted(b.node.logged_command_errors) == sorted(b.node.rejected_commands)
    count = len(b.joint_states)
    b.wait_for(lambda: len(b.joint_states) > count + 20, "states after the bad commands")
    assert goals(b) == before
    assert all(np.isfinite(m.position).all() for m in list(b.joint_states))
    b.stream_joint_commands(joints, [0.2] * len(joints), count=5)
    b.wait_for(lambda: goals(b) == [0.2] * len(joints), "a good command after them")
