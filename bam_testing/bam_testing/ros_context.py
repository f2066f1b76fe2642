"""A private rclpy context on a DDS domain of its own (tests, in-process tools).

Discovery stays on this machine, and the domain id (default: from the process
id) keeps parallel runs, e.g. two test sessions, from seeing each other's nodes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import rclpy

from bam_sim.common.shm_ports import before_participant

SLOTS = 5  # domains per process: test families that must not see each other's nodes
GROUPS = 100 // SLOTS
# The group of domains of this process: from its id, or given (make test runs two live
# passes at once and gives each its own group, so that they never share one).
GROUP_VARIABLE = "BAM_TEST_DOMAIN_GROUP"


def ros_domain(slot: int = 0) -> int:
    """The DDS domain of this process's ``slot`` (0..4), from its process id (or
    :data:`GROUP_VARIABLE`).

    Always in 1..100: the UDP ports of a domain grow by 250 per id, so ids
    above 101 fall into Linux's ephemeral port range and those above 232
    overflow the port numbers (participants then fail to start).
    """
    if not 0 <= slot < SLOTS:
        raise ValueError(f"slot must be in 0..{SLOTS - 1}, got {slot}")
    given = os.environ.get(GROUP_VARIABLE, "")
    group = int(given) % GROUPS if given.isdigit() else os.getpid() % GROUPS
    return 1 + group * SLOTS + slot


@contextmanager
def private_context(domain_id: int | None = None,
                    args: list[str] | None = None) -> Iterator[rclpy.Context]:
    """A context on ``domain_id``; ``args`` are its global ROS arguments (``--ros-args ...``)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    before_participant()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=args,
               domain_id=ros_domain() if domain_id is None else domain_id)
    try:
        yield ctx
    finally:
        rclpy.try_shutdown(context=ctx)
