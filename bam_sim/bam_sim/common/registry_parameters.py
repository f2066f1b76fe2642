"""The actuator and friction model a node's parameters name, as the registry's objects.

A ROS parameter names an actuator (``actuator``, ``actuators``) or a friction
model (``model``, ``models``); every node turns that name into the registry's
record here, once, where the parameter is read, and passes the object on.
An unknown name is a BamError of one line naming the valid choices. The
registry is plain data: nothing numerical is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from rclpy.node import Node

from bam_sim.common.node_parameters import Param, declare
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuators import Actuator, get_actuator


def actuator_parameter(value: object) -> Actuator:
    """The actuator a parameter's value names."""
    return get_actuator(str(value))


def model_parameter(value: object) -> FrictionModel:
    """The friction model a parameter's value names."""
    return get_model(str(value))


def declare_actuator(node: Node, params: Sequence[Param],
                     defaults: dict | None = None) -> tuple[dict, Actuator]:
    """Declare ``params`` (:func:`~bam_sim.common.node_parameters.declare`), ``actuator``
    among them; their values and the actuator it names."""
    values = declare(node, params, defaults)
    return values, actuator_parameter(values["actuator"])
