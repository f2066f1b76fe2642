"""rclpy QoS profiles for the plain :class:`bam_sim.common.contract.Qos` descriptions.

The only module of the interface layer that imports ROS; the nodes use it.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from bam_sim.common.contract import Qos


def profile(qos: Qos) -> QoSProfile:
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=qos.depth,
        reliability=ReliabilityPolicy.RELIABLE if qos.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=(DurabilityPolicy.TRANSIENT_LOCAL if qos.transient_local
                    else DurabilityPolicy.VOLATILE),
    )
