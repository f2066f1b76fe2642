"""Parsing the three command topics of a node's joints, with one validation.

``/bam/commands`` (ActuatorCommand), ``/position_commands`` (Float64MultiArray)
and ``/joint_commands`` (JointState, as ros2_control's TopicBasedSystem writes
it) each become one :class:`JointCommand`, refused alike:

* names select this node's joints, in any order, any subset; names of other
  nodes' joints are ignored, so nodes sharing a namespace share one command; a
  command naming none of ours, or a joint twice, is refused (``<topic>/joint``);
* every array is empty (keep) or holds one entry per name (``<topic>/length``);
  ``/bam/commands`` without names holds one entry per joint in joint order, as
  ``/position_commands`` always does;
* the values (goal outside the actuator's range, NaN, inf, gains):
  :func:`check_command`, which the node runs before anything moves
  (``<topic>/value``), simulations and drivers alike.

``<topic>`` is the topic's last name (``commands``, ``position_commands``,
``joint_commands``). Rejected commands are logged once per kind and counted,
never raised, so one bad publisher cannot stop a bench.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bam_sim.common import contract
from bam_sim.common.errors import BamError

if TYPE_CHECKING:  # messages are read by attribute: the parsing itself needs no ROS
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from bam_msgs.msg import ActuatorCommand


def refusal_kind(topic: contract.Topic, what: str) -> str:
    """The counted kind of a refusal: the topic's last name, then what was wrong."""
    return f"{topic.name.rsplit('/', 1)[-1]}/{what}"


@dataclass(frozen=True)
class JointCommand:
    """A command for some joints of a node (joint indices); None: keep that quantity."""

    indices: tuple[int, ...]
    goals: tuple[float, ...] | None = None
    torque_enables: tuple[bool, ...] | None = None
    gains: tuple[float, ...] | None = None


@dataclass(frozen=True)
class CommandLimits:
    """What the actuators of a node accept: goal range (rad) per joint, largest gain kp.

    The one command check of simulation nodes and drivers alike
    (:func:`check_command`), so swapping a simulation for hardware refuses the
    same commands.
    """

    goal_low: tuple[float, ...]
    goal_high: tuple[float, ...]
    gain_high: tuple[float, ...]

    @classmethod
    def per_joint(cls, limits: Sequence[tuple[tuple[float, float], float]]) -> CommandLimits:
        """From ((goal_low, goal_high), gain_high) of each joint."""
        return cls(tuple(g[0] for g, _ in limits), tuple(g[1] for g, _ in limits),
                   tuple(k for _, k in limits))


def check_command(command: JointCommand, limits: CommandLimits, joints: Sequence[str]) -> None:
    """Every value of ``command`` within ``limits`` (BamError naming the first bad one)."""
    for k, i in enumerate(command.indices):
        if command.goals is not None:
            goal, lo, hi = command.goals[k], limits.goal_low[i], limits.goal_high[i]
            if not lo <= goal <= hi:  # NaN fails too
                raise BamError(f"goal position {goal} of joint '{joints[i]}' is outside the "
                               f"actuator's range [{lo:.4f}, {hi:.4f}] rad")
        if command.gains is not None:
            gain, high = command.gains[k], limits.gain_high[i]
            if not 0.0 <= gain <= high:
                raise BamError(f"gain {gain} of joint '{joints[i]}' is outside [0, {high:g}]")


class CommandError(Exception):
    """A rejected command: its kind (counted) and a one-line reason."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _refused(topic: contract.Topic, what: str, reason: str) -> CommandError:
    """The refusal of a ``topic`` message: kind ``<topic>/<what>``, reason after its name."""
    return CommandError(refusal_kind(topic, what), f"/{topic.name} {reason}")


def _check_lengths(topic: contract.Topic, size: int, arrays: dict[str, Sequence],
                   expected: str) -> None:
    """Each of ``arrays`` empty or ``size`` long (CommandError ``<topic>/length``)."""
    wrong = [f"{key} has {len(v)}" for key, v in arrays.items() if len(v) not in (0, size)]
    if wrong:
        raise _refused(topic, "length", f"arrays must be empty or hold {expected} entries, "
                       f"but {', '.join(wrong)}")


def _select(topic: contract.Topic, names: Sequence[str],
            joints: Sequence[str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The joints ``names`` select: (joint indices, rows of the arrays); other nodes'
    names are skipped (CommandError ``<topic>/joint``: a name twice, none of ours)."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _refused(topic, "joint", f"names joint(s) {twice} more than once; give each "
                       "joint once")
    pairs = [(joints.index(n), i) for i, n in enumerate(names) if n in joints]
    if not pairs:
        what = f"this bench's joint '{joints[0]}'" if len(joints) == 1 else \
            f"any of this node's joints ({', '.join(joints)})"
        raise _refused(topic, "joint", f"names {list(names)} do not include {what}")
    indices, rows = zip(*pairs, strict=True)
    return tuple(indices), tuple(rows)


def _pick(values: Sequence, rows: Sequence[int], convert) -> tuple | None:
    """``values`` at ``rows``, converted; None (keep) when ``values`` is empty."""
    return tuple(convert(values[i]) for i in rows) if len(values) else None


def parse_command(msg: ActuatorCommand, joints: Sequence[str]) -> JointCommand:
    """The part of a ``/bam/commands`` message for ``joints`` (raises CommandError)."""
    topic, names = contract.COMMANDS, list(msg.names)
    size = len(names) if names else len(joints)
    if names:
        expected = f"{size} (as names)"
    elif len(joints) == 1:
        expected = "1 (no names: a single entry)"
    else:
        expected = f"{size} (no names: one per joint, in order {', '.join(joints)})"
    _check_lengths(topic, size, {"goal_positions": msg.goal_positions,
                                 "torque_enables": msg.torque_enables, "gains": msg.gains},
                   expected)
    if names:
        indices, rows = _select(topic, names, joints)
    else:
        indices = rows = tuple(range(len(joints)))
    return JointCommand(indices, _pick(msg.goal_positions, rows, float),
                        _pick(msg.torque_enables, rows, bool), _pick(msg.gains, rows, float))


def parse_position_command(msg: Float64MultiArray, joints: Sequence[str]) -> JointCommand:
    """Goals of a ``/position_commands`` message, one per joint in order (CommandError).

    Values past the node's joints are ignored (the node warns once): a forward
    command controller may drive more joints than this node has.
    """
    n = len(joints)
    if len(msg.data) < n:
        if n == 1:
            reason = "holds no value; data[0] is the goal position"
        else:
            reason = (f"holds {len(msg.data)} values; give one goal per joint, in order "
                      f"{', '.join(joints)}")
        raise _refused(contract.POSITION_COMMANDS, "length", reason)
    return JointCommand(tuple(range(n)), tuple(float(v) for v in msg.data[:n]))


# What ros2_control's topic-based system writes on this topic, read in
# ros-controls/topic_based_hardware_interfaces at d115f23614d7180e54027e8cb7f2df5a9d719d2d,
# joint_state_topic_hardware_interface/src/joint_state_topic_hardware_interface.cpp
# (JointStateTopicSystem::write; PickNik's topic_based_ros2_control, src/topic_based_system.cpp
# at 6bd8d55e1c4ad3188770fe5c8b93b942bcede4a2, TopicBasedSystem::write, does the same):
# once per controller-manager update, a sensor_msgs/JointState stamped with the node's
# now(), ``name`` = every joint of the <ros2_control> block in URDF order, ``position``,
# ``velocity``, ``effort`` = the commands of the joints that have that command interface
# (a joint without one leaves that array shorter than ``name``: refused here as a length
# mismatch), on a reliable, volatile, keep-last-1 publisher. It skips the message while
# the sum over joints of |state - command| stays within trigger_joint_command_threshold
# (1e-5 by default): set it to -1 so commands keep feeding a node's command watchdog.
# Command interfaces start at NaN (ros2_control's Handle, hardware_interface/handle.hpp)
# and NaN passes that test: until a controller writes them, the NaN goals are refused.
def parse_joint_command(msg: JointState, joints: Sequence[str]) -> JointCommand:
    """The goals of a ``/joint_commands`` message for ``joints`` (raises CommandError).

    Every actuator here is a position-controlled servo, so of TopicBasedSystem's
    command interfaces:

    * ``position`` is the goal, one per name (an empty one is refused,
      ``joint_commands/interface``: there is nothing this node could apply);
    * ``velocity`` is checked for its length, then ignored (the node warns once):
      no servo law here takes a velocity feed-forward, and the joint still goes
      to its position goal; its values are not checked, as an unclaimed
      velocity interface holds NaN;
    * a non-empty ``effort`` is refused (``joint_commands/interface``): no
      actuator here takes a torque command, and applying the position alone
      would silently drop it.

    ``header.stamp`` is not used (a goal is taken when it arrives, as on the
    other topics); torque enables and gains are kept.
    """
    topic, names = contract.JOINT_COMMANDS, list(msg.name)
    _check_lengths(topic, len(names), {"position": msg.position, "velocity": msg.velocity,
                                       "effort": msg.effort}, f"{len(names)} (as name)")
    if len(msg.effort) or not len(msg.position):
        held = "effort" if len(msg.effort) else "no position"
        raise _refused(topic, "interface", f"holds {held}; this node takes position "
                       "commands only: give its joints a 'position' command interface "
                       "(velocity is ignored, effort refused)")
    indices, rows = _select(topic, names, joints)
    return JointCommand(indices, _pick(msg.position, rows, float))


class Rejections:
    """Rejected commands: the first of each kind logged as an error, every one counted."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self.counts: Counter[str] = Counter()  # rejected commands per kind
        self.logged: list[str] = []  # kinds logged (once each)
        self._warned: set[str] = set()

    def reject(self, kind: str, message: str) -> None:
        self.counts[kind] += 1
        if kind in self.logged:
            self._node.get_logger().debug(f"command ignored: {message}")
            return
        self.logged.append(kind)
        self._node.get_logger().error(f"command ignored: {message} (further '{kind}' errors "
                                      "are counted, not logged)")

    def warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            self._node.get_logger().warning(f"{message} (logged once)")
