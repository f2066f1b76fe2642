"""A parameter set given as ROS parameters: what ``--ros-args --params-file FILE`` sets.

A parameter file written by the fit is a ROS 2 parameter file (``actuator``,
``model``, ``kt``, ``R``, ...). Given to a simulation node with
``--params-file`` (or as ``-p`` values), its entries arrive as parameter
overrides. They are one parameter set, validated by the same loader as a file
(:func:`bam_sim.models.files.parameter_file.parse_mapping`): complete or refused, NaN
refused, an unknown or misspelt name refused with the closest valid one. The
node declares one parameter per name of the model registry (NaN: none given)
so that ``ros2 param set`` can change a value of the running set, and the
set's metadata (``provenance.*``, ``input``) as read-only parameters.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping

from rclpy.node import Node

from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import Param, declare, refuse_unknown
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import parse_mapping, published
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import DCMOTOR, Actuator

SOURCE = "ROS parameters"
WHERE = "the ROS parameters (--params-file, -p)"  # where an error in the set lies
METADATA_PREFIX = "provenance."
INPUT = "input"  # the dcmotor family's input mode, an entry of its files
_HEADS = frozenset(name.partition(".")[0] for name in P.NAMES)  # motorconst, thermal, ...

VALUE_PARAMETERS: tuple[Param, ...] = tuple(
    Param(name, math.nan, f"identified value of '{name}' (SI units, see the parameter file "
          "format); NaN = none given as a ROS parameter", dynamic=True)
    for name in P.NAMES)


HELP = ("\n  " + ", ".join(P.NAMES) + ":\n    identified values (SI), as a parameter file "
        "of the fit holds them; given with --params-file FILE (or -p, with actuator and "
        "model), they form one complete parameter set, which replaces the published one; "
        "ros2 param set changes a value of the running set")


def declare_values(node: Node) -> ParameterSet | None:
    """Declare the value parameters; the set the overrides give, if any (then its other
    entries, metadata included, are declared read-only).

    Call it after the node's own parameters are declared: an override that is
    none of them is an entry of the set when its name is one a file may hold
    (a value, ``provenance.*``, ``input``, a group's sub-attribute such as
    ``motorconst.Kt``) or is close to a value name (``frction_base``, which the
    set's validation then refuses with the closest valid name). Any other
    unknown parameter is refused too, before the node starts.
    """
    declare(node, VALUE_PARAMETERS)
    declared = set(node._parameters)  # rclpy keeps the declared parameters here
    overrides = {name: p.value for name, p in node._parameter_overrides.items()}
    entries = {name: value for name, value in overrides.items()
               if name in P.INDEX or (name not in declared and _is_entry(name))}
    if not any(name in P.INDEX for name in entries):
        refuse_unknown(node)
        return None
    if "actuator" not in overrides or "model" not in overrides:
        raise BamError("parameter values (kt, R, ...) were given without 'actuator' and "
                       "'model'; give a complete parameter file with --params-file")
    given = parse_mapping({"actuator": overrides["actuator"], "model": overrides["model"],
                           **entries}, WHERE)
    declare(node, [Param(name, value, "entry of the parameter set given", read_only=True,
                         dynamic=True) for name, value in entries.items()
                   if name not in P.INDEX])
    refuse_unknown(node)
    return given


def _is_entry(name: str) -> bool:
    """Whether an undeclared override is an entry of a parameter set (or a typo of one)."""
    head, dot, _ = name.partition(".")
    return (name.startswith(METADATA_PREFIX) or name == INPUT or bool(dot and head in _HEADS)
            or bool(difflib.get_close_matches(name, P.NAMES, n=1, cutoff=0.8)))


def base_set(actuator: Actuator, model: FrictionModel,
             values: Mapping[str, float]) -> ParameterSet:
    """What ``values`` complete: the published set, or for a model or an actuator without
    one (``ep_*``, ``lugre``, ``dcmotor``) the set of ``values`` alone, which must then be
    complete."""
    unpublished = model.elastoplastic or model.lugre or actuator.family == DCMOTOR
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
