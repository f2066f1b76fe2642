"""What the runner starts: a ROS node, or a plain process with its command line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NodeSpec:
    """A node to start (as ros2 launch would), or (``process``) a plain executable.

    A node takes ``parameters``, ``namespace`` (absolute, "/bench1", or "" for
    none) and ``remappings``, and may take ``parameter_files`` (paths, as ros2
    launch passes them) and ``arguments`` (its command line before the ROS
    arguments); a process takes ``arguments``, its command line after the
    executable, and may print a ``ready`` line once it serves.
    """

    name: str
    package: str
    executable: str
    parameters: dict = field(default_factory=dict)
    namespace: str = ""
    remappings: tuple[tuple[str, str], ...] = ()
    process: bool = False
    arguments: tuple[str, ...] = ()
    parameter_files: tuple[str, ...] = ()  # a node's; the runner applies none
    ready: str = ""  # process: the stdout line prefix that says it serves ("" = do not wait)
