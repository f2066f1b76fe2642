"""Node parameters declared from one table: ROS descriptors and ``--help`` from the same rows.

Every node of the project (simulation, drivers, trajectory, recorder) lists its
parameters as :class:`Param` rows and declares them with :func:`declare`, so
the descriptor (description, read-only flag, range) a ROS user sees with
``ros2 param describe`` and the executable's ``--help`` cannot disagree.

A parameter that names an actuator (``actuator``, ``actuators``) or a friction model
(``model``, ``models``) becomes the registry's record here, once, where it is read
(:func:`actuator_parameter`, :func:`model_parameter`); the node passes the object on. An
unknown name is a BamError of one line naming the valid choices. The registry is plain
data: nothing numerical is loaded.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.node import Node

from bam_sim.common import ros_arguments
from bam_sim.common.errors import BamError, one_line
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import declare_file, get_actuator


@dataclass(frozen=True)
class Param:
    """A node parameter: default (None: computed by the node), descriptor fields."""

    name: str
    default: object
    description: str
    read_only: bool = False
    low: float | None = None
    high: float | None = None
    dynamic: bool = False  # any type accepted (e.g. an int where a double is meant)


def descriptor(param: Param) -> ParameterDescriptor:
    """The ROS descriptor of ``param``: description, read-only flag and range."""
    result = ParameterDescriptor(description=param.description, read_only=param.read_only,
                                 dynamic_typing=param.dynamic)
    if param.low is not None:
        if isinstance(param.default, int) and not isinstance(param.default, bool):
            result.integer_range = [IntegerRange(from_value=int(param.low),
                                                 to_value=int(param.high), step=1)]
        else:
            result.floating_point_range = [FloatingPointRange(
                from_value=float(param.low), to_value=float(param.high), step=0.0)]
    return result


def declare(node: Node, params: Sequence[Param], defaults: dict | None = None) -> dict:
    """Declare ``params`` on ``node`` in order; their values (``defaults`` override defaults).

    A value of the wrong type or out of range (from ``-p`` or a parameter file)
    is a BamError of one line naming the parameter.
    """
    defaults = defaults or {}
    return {p.name: _declare_one(node, p, defaults.get(p.name, p.default)) for p in params}


def _declare_one(node: Node, param: Param, default: object) -> object:
    given = getattr(node, "_parameter_overrides", {}).get(param.name)
    if isinstance(default, (list, tuple)) and given is not None \
            and given.value in (None, [], (), b""):
        # An empty array has no element type (rclpy calls it a byte array, or not set):
        # the node gets [] and refuses it or falls back to its default itself.
        node.declare_parameter(param.name, default, descriptor(param), ignore_override=True)
        return []
    try:
        value = node.declare_parameter(param.name, default, descriptor(param)).value
    except InvalidParameterTypeException as exc:
        raise BamError(f"parameter {param.name}: {one_line(exc)} (write doubles with a "
                       "decimal point, e.g. mass:=1.0, and lists as [a, b])") from None
    except ParameterException as exc:
        value = given.value if given is not None else default
        if param.low is not None and isinstance(value, (int, float)):
            raise BamError(f"parameter {param.name} must be in [{param.low:g}, "
                           f"{param.high:g}], got {value!r}") from None
        raise BamError(f"parameter {param.name}: {one_line(exc)}") from None
    return value


def refuse_unknown(node: Node) -> None:
    """Refuse the parameters given to ``node`` that it does not declare.

    Called on every node once it is built (:func:`bam_sim.common.runner.run_node`),
    and by a node that would rather refuse before it starts work, once its
    parameters are declared; the first call decides. A name given with ``-p`` or
    in a params-file block named after this node is meant for it: unknown, it
    is a typo, and the BamError names the closest declared parameter. A name
    that came only through a wildcard block (``/**``, ``/*``) is normal in a ROS
    launch, where one file configures several nodes: it is left to the other
    nodes, logged once. ``use_sim_time`` and the other parameters rclpy
    declares itself are declared, hence known. A node whose context the runner
    did not start (a test's) takes every name as its own.
    """
    if getattr(node, "_bam_overrides_checked", False):
        return
    node._bam_overrides_checked = True
    declared = set(node._parameters)  # rclpy keeps the declared parameters here
    unknown = sorted(name for name in node._parameter_overrides if name not in declared)
    shared = ros_arguments.shared_only(node)
    refused = [name for name in unknown if name not in shared]
    if refused:
        close = difflib.get_close_matches(refused[0], sorted(declared), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise BamError(f"unknown parameter '{refused[0]}'{more} for node {node.get_name()}; "
                       f"{hint}see --help for its parameters")
    if unknown:
        node.get_logger().info(f"parameter(s) {', '.join(unknown)} of a shared params-file "
                               "block (/**) are not this node's: left to the other nodes")


def usage(program: str, title: str, params: Sequence[Param], computed: str = "computed") -> str:
    """The ``--help`` text of an executable: its parameters with defaults.

    ``computed`` names the default of parameters whose default is None.
    """
    lines = [f"usage: {program} [--ros-args [-p NAME:=VALUE ...] [--params-file FILE]]", "",
             f"{title}. Parameters:"]
    for p in params:
        default = computed if p.default is None else repr(p.default)
        flag = ", read-only" if p.read_only else ""
        lines.append(f"  {p.name:<17} {p.description} (default {default}{flag})")
    return "\n".join(lines)


# Parameters every simulation node declares alike: its loop's pace (or lock-step), /clock,
# its watchdog.
REAL_TIME_FACTOR = Param("real_time_factor", 1.0, "simulated seconds per wall second; 0 = as "
                         "fast as possible", low=0.0, high=100000.0)
LOCKSTEP = Param("lockstep", False, "advance one tick per command received, whatever the "
                 "wall clock (real_time_factor then unused): a controller sending one "
                 "command per state runs in step with the simulation; the first tick waits "
                 "for the first command", read_only=True)
PUBLISH_CLOCK = Param("publish_clock", True, "publish the simulated time on /clock",
                      read_only=True)
COMMAND_TIMEOUT = Param("command_timeout", 0.0, "torque off when no command arrived for this "
                        "long in simulated time, s (0 = off)", low=0.0, high=1.0e6)



ACTUATOR_FILE = Param("actuator_file", "", "a servo the project does not ship: the path of "
                      "its actuator file (YAML), declared before 'actuator' is read, which "
                      "then names it ('' = none)", read_only=True)


def actuator_parameter(value: object) -> Actuator:
    """The actuator a parameter's value names."""
    return get_actuator(str(value))


def model_parameter(value: object) -> FrictionModel:
    """The friction model a parameter's value names."""
    return get_model(str(value))


def declare_actuator(node: Node, params: Sequence[Param],
                     defaults: dict | None = None) -> tuple[dict, Actuator]:
    """Declare ``params`` (:func:`declare`), ``actuator`` among them (and
    :data:`ACTUATOR_FILE`, whose file is declared first); their values and the actuator
    ``actuator`` names."""
    values = declare(node, params, defaults)
    if values.get("actuator_file"):
        declare_file(values["actuator_file"])
    return values, actuator_parameter(values["actuator"])
