"""The bench topics of a rosbag2 recording: names, types, QoS and namespaces.

A recording of the pendulum bench holds four topics (:mod:`bam_sim.common.contract`):

* ``bam/bench_info`` (``bam_msgs/msg/BenchInfo``, transient-local): the
  actuator and the bench, published once per session;
* ``bam/trial`` (``bam_msgs/msg/Trial``, transient-local): START and END
  markers of each trajectory run, sharing a ``trial_id``;
* ``joint_states`` (``sensor_msgs/msg/JointState``): position, velocity
  (and effort = motor torque where known) at the control rate;
* ``bam/actuator_states`` (``bam_msgs/msg/ActuatorStateArray``): goal
  position, torque enable, gain and low-level control at the control rate.

A bag stores them under their resolved names: ``/joint_states`` for a bench in
the root namespace, ``/bench1/joint_states`` for one launched with
``namespace:=bench1``. :func:`bench_topics` finds them under any namespace.
"""

from __future__ import annotations

from collections.abc import Iterable

from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import StoragePlugin

from bam_sim.common import contract
from bam_sim.common.errors import BamError

# Names, types and QoS of the recorded topics come from bam_sim.common.contract.
TOPIC_JOINT_STATES = contract.JOINT_STATES.absolute()
TOPIC_ACTUATOR_STATES = contract.ACTUATOR_STATES.absolute()
TOPIC_BENCH_INFO = contract.BENCH_INFO.absolute()
TOPIC_TRIAL = contract.TRIAL.absolute()
TOPICS = {topic.absolute(): topic.type for topic in contract.RECORDED}  # topic -> message type
START, END = 0, 1  # bam_msgs/msg/Trial event values
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
BAG_SUFFIXES = (".mcap", ".db3")
ROSBAG2_VERSION = 9  # metadata version written by rosbag2 in ROS 2 Jazzy

_NO_TIME = QosTime(0, 0)  # rosbag2's "default" duration (no deadline, no lifespan)


def bag_qos(qos: contract.Qos) -> Qos:
    """The rosbags offered-QoS profile of an interface QoS (as stored in bag metadata)."""
    return Qos(QosHistory.KEEP_LAST, qos.depth,
               QosReliability.RELIABLE if qos.reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if qos.transient_local else QosDurability.VOLATILE,
               _NO_TIME, _NO_TIME, QosLiveliness.AUTOMATIC, _NO_TIME, False)


QOS_STATE = bag_qos(contract.STATE_QOS)
QOS_LATCHED = bag_qos(contract.LATCHED_QOS)  # /bam/bench_info
TOPIC_QOS = {topic.absolute(): bag_qos(topic.qos) for topic in contract.RECORDED}


def bench_topics(names: Iterable[str], label: str, namespace: str | None = None) -> dict[str, str]:
    """The bench topics among the topic ``names`` of a bag: bag name -> canonical name.

    Canonical names are those of the root namespace (:data:`TOPICS`). With
    ``namespace`` None the bag must hold the joint states of exactly one
    namespace; several benches recorded in one bag need ``namespace``.
    """
    names = set(names)
    found: dict[str, dict[str, str]] = {}  # namespace -> bag name -> canonical
    for canonical in TOPICS:
        for name in names:
            if name.endswith(canonical):
                found.setdefault(name[: -len(canonical)], {})[name] = canonical
    if namespace is not None:
        ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
        if ns not in found:
            spaces = ", ".join(sorted(n or "/" for n in found)) or "none"
            raise BamError(f"bag {label} holds no bench topics in namespace '{namespace}' "
                           f"(namespaces with bench topics: {spaces}); give one of those")
        return found[ns]
    benches = sorted(ns for ns, topics in found.items() if TOPIC_JOINT_STATES in topics.values())
    if len(benches) > 1:
        raise BamError(f"bag {label} holds the benches of several namespaces "
                       f"({', '.join(n or '/' for n in benches)}); choose one with namespace")
    return found[benches[0]] if benches else found.get("", {})
