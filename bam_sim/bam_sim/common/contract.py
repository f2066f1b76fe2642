"""The bench's ROS interfaces, in one place: names, types and QoS of every topic.

Simulation nodes and hardware drivers publish exactly these, so a ROS stack
swaps one for the other without noticing; the recorder records them and the
identification reads them. Plain data (no ROS import): nodes turn a
:class:`Qos` into an rclpy ``QoSProfile`` with ``bam_sim.common.qos``.

QoS choices:

* states (``/joint_states``, ``/bam/actuator_states``): reliable, keep last
  100 — a recorder must not lose samples at 1 kHz, and best-effort
  subscribers (plotting tools) still connect to a reliable publisher;
* bench description (``/bam/bench_info``): reliable, transient local, depth
  1 — published once, received by whoever joins later (a recorder started
  after the bench);
* commands (``/bam/commands``, ``/position_commands``, ``/joint_commands``):
  reliable, keep last 10 — a dropped goal or torque-off must not go unnoticed;
  ros2_control's TopicBasedSystem publishes ``joint_commands`` reliable,
  volatile, keep last 1, which matches;
* trial markers (``/bam/trial``): reliable, transient local, depth 100 —
  markers published before a recorder joined are still delivered;
* ``/clock``: best effort, keep last 1, as rclpy's time source subscribes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Qos:
    reliable: bool
    transient_local: bool
    depth: int


STATE_QOS = Qos(reliable=True, transient_local=False, depth=100)
LATCHED_QOS = Qos(reliable=True, transient_local=True, depth=1)
COMMAND_QOS = Qos(reliable=True, transient_local=False, depth=10)
MARKER_QOS = Qos(reliable=True, transient_local=True, depth=100)
CLOCK_QOS = Qos(reliable=False, transient_local=False, depth=1)


@dataclass(frozen=True)
class Topic:
    """A topic of the contract; ``name`` is relative (resolved in the node's namespace)."""

    name: str
    type: str  # ROS 2 interface name, e.g. "sensor_msgs/msg/JointState"
    qos: Qos

    def absolute(self, namespace: str = "/") -> str:
        """The fully qualified name in ``namespace`` (a bag's topic, a graph query)."""
        if self.name.startswith("/"):
            return self.name
        return f"{namespace.rstrip('/')}/{self.name}"


# Relative names, so several benches run side by side in namespaces; /clock stays
# absolute, as rclpy's time source subscribes to it (remap it per namespace).
JOINT_STATES = Topic("joint_states", "sensor_msgs/msg/JointState", STATE_QOS)
ACTUATOR_STATES = Topic("bam/actuator_states", "bam_msgs/msg/ActuatorStateArray", STATE_QOS)
BENCH_INFO = Topic("bam/bench_info", "bam_msgs/msg/BenchInfo", LATCHED_QOS)
COMMANDS = Topic("bam/commands", "bam_msgs/msg/ActuatorCommand", COMMAND_QOS)
POSITION_COMMANDS = Topic("position_commands", "std_msgs/msg/Float64MultiArray", COMMAND_QOS)
# What ros2_control's topic-based hardware interface (TopicBasedSystem, now
# joint_state_topic_hardware_interface/JointStateTopicSystem) writes on its
# ``joint_commands_topic``: joint names with position commands (parsed in commands.py).
JOINT_COMMANDS = Topic("joint_commands", "sensor_msgs/msg/JointState", COMMAND_QOS)
TRIAL = Topic("bam/trial", "bam_msgs/msg/Trial", MARKER_QOS)
CLOCK = Topic("/clock", "rosgraph_msgs/msg/Clock", CLOCK_QOS)
RUN_TRAJECTORY_ACTION = "bam/run_trajectory"

# The health monitor (bam_sim.nodes.monitor_node), in the actuator's namespace. Per joint,
# stamped with the measured sample's stamp: position/velocity hold predicted − measured
# (rad, rad/s) on residuals and the running MAE of each on mae. A JointState, not a
# Float64MultiArray: it carries the stamp and the joint names, and every ROS plotting
# and recording tool reads it; no custom message for two numbers per joint.
MONITOR_RESIDUALS = Topic("monitor/residuals", "sensor_msgs/msg/JointState", STATE_QOS)
MONITOR_MAE = Topic("monitor/mae", "sensor_msgs/msg/JointState", STATE_QOS)
# ROS's aggregated diagnostics topic, absolute as every diagnostic_aggregator expects it.
DIAGNOSTICS = Topic("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", COMMAND_QOS)

# What an actuator node (simulated or hardware) publishes and subscribes to:
# the sim/real swap contract.
ACTUATOR_PUBLISHES = (JOINT_STATES, ACTUATOR_STATES, BENCH_INFO)
ACTUATOR_SUBSCRIBES = (COMMANDS, POSITION_COMMANDS, JOINT_COMMANDS)
# What a bench recording holds (identification reads these).
RECORDED = (JOINT_STATES, ACTUATOR_STATES, BENCH_INFO, TRIAL)
