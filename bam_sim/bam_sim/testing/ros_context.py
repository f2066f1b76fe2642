"""A private rclpy context on a DDS domain of its own (tests, in-process tools).

Discovery stays on this machine, and the domain id (default: from the process
id) keeps parallel runs, e.g. two test sessions, from seeing each other's nodes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import rclpy


@contextmanager
def private_context(domain_id: int | None = None,
                    args: list[str] | None = None) -> Iterator[rclpy.Context]:
    """A context on ``domain_id``; ``args`` are its global ROS arguments (``--ros-args ...``)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=args,
               domain_id=os.getpid() % 100 + 1 if domain_id is None else domain_id)
    try:
        yield ctx
    finally:
        rclpy.try_shutdown(context=ctx)
