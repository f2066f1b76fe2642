"""Parsing ``/bam/commands`` and ``/position_commands`` for a node's joints.

``/bam/commands`` arrays are empty (keep) or indexed like ``names``, which
select this node's joints (names of other nodes' joints are ignored; a command
naming none of ours is rejected); without names they hold one entry per joint
in joint order. ``/position_commands`` holds one goal per joint in joint order.
Rejected commands are logged once per kind and counted, never raised, so one
bad publisher cannot stop a bench.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bam_sim.common.errors import BamError

if TYPE_CHECKING:  # messages are read by attribute: the parsing itself needs no ROS
    from rclpy.node import Node
    from std_msgs.msg import Float64MultiArray

    from bam_msgs.msg import ActuatorCommand


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


def parse_command(msg: ActuatorCommand, joints: Sequence[str]) -> JointCommand:
    """The part of a ``/bam/commands`` message for ``joints`` (raises CommandError)."""
    names = list(msg.names)
    size = len(names) if names else len(joints)
    fields = {"goal_positions": msg.goal_positions, "torque_enables": msg.torque_enables,
              "gains": msg.gains}
    wrong = [f"{key} has {len(v)}" for key, v in fields.items() if len(v) not in (0, size)]
    if wrong:
        if names:
            expected = f"{size} (as names)"
        elif len(joints) == 1:
            expected = "1 (no names: a single entry)"
        else:
            expected = f"{size} (no names: one per joint, in order {', '.join(joints)})"
        raise CommandError("commands/length", f"/bam/commands arrays must be empty or hold "
                           f"{expected} entries, but {', '.join(wrong)}")
    if names:
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise CommandError("commands/joint", f"/bam/commands names joint(s) {twice} more "
                               "than once; give each joint once")
        pairs = [(joints.index(n), i) for i, n in enumerate(names) if n in joints]
        if not pairs:
            what = f"this bench's joint '{joints[0]}'" if len(joints) == 1 else \
                f"any of this node's joints ({', '.join(joints)})"
            raise CommandError("commands/joint", f"/bam/commands names {names} do not "
                               f"include {what}")
        indices, rows = zip(*pairs, strict=True)
    else:
        indices = rows = tuple(range(len(joints)))

    def pick(values, convert):
        return tuple(convert(values[i]) for i in rows) if len(values) else None

    return JointCommand(tuple(indices), pick(msg.goal_positions, float),
                        pick(msg.torque_enables, bool), pick(msg.gains, float))


def parse_position_command(msg: Float64MultiArray, joints: Sequence[str]) -> JointCommand:
    """Goals of a ``/position_commands`` message, one per joint in order (CommandError)."""
    n = len(joints)
    if len(msg.data) < n:
        if n == 1:
            reason = "holds no value; data[0] is the goal position"
        else:
            reason = (f"holds {len(msg.data)} values; give one goal per joint, in order "
                      f"{', '.join(joints)}")
        raise CommandError("position_commands/length", f"/position_commands {reason}")
    return JointCommand(tuple(range(n)), tuple(float(v) for v in msg.data[:n]))


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
