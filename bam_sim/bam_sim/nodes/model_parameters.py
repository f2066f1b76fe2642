"""A parameter set given as ROS parameters: what ``--ros-args --params-file FILE`` sets.

A parameter file written by the fit is a ROS 2 parameter file (``actuator``,
``model``, ``kt``, ``R``, ...). Given to a simulation node with
``--params-file``, its values arrive as parameter overrides; the node declares
one parameter per name of the model registry (NaN: not given) so that they
are not silently dropped, and builds the set from them, on top of
``params_file`` or the published set. ``provenance.*`` entries are metadata
and accepted without effect; any other undeclared override is warned about.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from rclpy.node import Node

from bam_sim.common.node_parameters import Param, declare
from bam_sim.common.numbers import number
from bam_sim.models import parameters as P
from bam_sim.models.actuators import DCMOTOR, get_actuator
from bam_sim.models.model_registry import get_model
from bam_sim.models.parameter_file import published
from bam_sim.models.parameter_set import ParameterSet

SOURCE = "ROS parameters"
METADATA_PREFIX = "provenance."

VALUE_PARAMETERS: tuple[Param, ...] = tuple(
    Param(name, math.nan, f"identified value of '{name}' (SI units, see the parameter file "
          "format); NaN = take it from params_file or the published set", dynamic=True)
    for name in P.NAMES)


HELP = ("\n  " + ", ".join(P.NAMES) + ":\n    identified values (SI), as a parameter file "
        "of the fit holds them; given with --params-file FILE or -p, they replace those of "
        "params_file or of the published set")


def declare_values(node: Node) -> dict[str, float]:
    """Declare the value parameters; those given (not NaN), checked as numbers."""
    values = declare(node, VALUE_PARAMETERS)
    given = {}
    for name, value in values.items():
        if isinstance(value, float) and math.isnan(value):
            continue
        given[name] = number(value, f"parameter {name}")
    return given


def base_set(actuator: str, model: str, values: Mapping[str, float]) -> ParameterSet:
    """What ``values`` complete: the published set, or for a model or an actuator without
    one (``ep_*``, ``lugre``, ``dcmotor``) the set of ``values`` alone, which must then be
    complete."""
    mdl = get_model(model)
    unpublished = mdl.elastoplastic or mdl.lugre or get_actuator(actuator).family == DCMOTOR
    if unpublished and values:
        return ParameterSet.build(actuator, model, values, {"source": SOURCE}, SOURCE)
    return published(actuator, model)


def with_values(base: ParameterSet, values: Mapping[str, float]) -> ParameterSet:
    """``base`` with ``values`` replacing its own (validated as one set)."""
    if not values:
        return base
    return ParameterSet.build(base.actuator, base.model, {**base.values, **values},
                              {"source": SOURCE, "base": base.provenance.get("source", "")},
                              SOURCE)


def value_names(params) -> set[str]:
    """The names among ``params`` (rclpy Parameters) that are value parameters."""
    return {p.name for p in params if p.name in P.INDEX}


def warn_unused_overrides(node: Node) -> None:
    """Log once the overrides (``-p``, ``--params-file``) this node does not use."""
    declared = set(node._parameters)  # rclpy keeps declared parameters here
    unused = sorted(name for name in node._parameter_overrides
                    if name not in declared and not name.startswith(METADATA_PREFIX)
                    and name not in ("use_sim_time", "input"))
    if unused:
        node.get_logger().warning(
            f"ignoring unknown parameter(s) {', '.join(unused)}: not parameters of this node "
            "(see --help)")
