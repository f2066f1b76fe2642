"""A complete, validated parameter set: actuator + friction model + values.

This is the one object every consumer (simulator, nodes, identification,
reports) receives; files are turned into it by :mod:`bam_sim.models.files.parameter_file`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.groups import (
    GROUPS,
    allowed_group_names,
    carried,
    check_groups,
    group_error,
)
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator


def required_names(actuator: Actuator, model: FrictionModel) -> tuple[str, ...]:
    """Parameters a set must give: the actuator's identified motor ones and the model's."""
    return tuple(actuator.motor_bounds) + model.params


def allowed_names(actuator: Actuator, model: FrictionModel) -> frozenset[str]:
    """Every parameter a set of (actuator, model) may hold: required, fixed, q_offset and
    the optional groups of the DC-motor model (:mod:`bam_sim.models.dcmotor.groups`).

    The one definition used by files, nodes, ``--set`` and the fit.
    """
    return (frozenset(required_names(actuator, model)) | frozenset(actuator.fixed)
            | {"q_offset"} | allowed_group_names(actuator))


def identification_bounds(actuator: Actuator,
                          model: FrictionModel) -> dict[str, tuple[float, float]]:
    """Bounds of every identifiable parameter (motor + friction) for this pair."""
    friction = model.bounds(actuator.scales)
    friction.update({k: v for k, v in actuator.friction_bounds.items() if k in friction})
    return {**actuator.motor_bounds, **friction}


@dataclass(frozen=True)
class ParameterSet:
    """Values of one model for one actuator, with the provenance of the numbers.

    It holds the registry's objects; their names (``.actuator.name``,
    ``.model.name``) are for the files and messages it is written to.
    """

    actuator: Actuator
    model: FrictionModel
    values: dict[str, float]
    provenance: dict[str, object] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        actuator: Actuator,
        model: FrictionModel,
        values: Mapping[str, object],
        provenance: Mapping[str, object] | None = None,
        where: str = "",
    ) -> ParameterSet:
        """Validate ``values`` for (actuator, model) and complete the fixed ones.

        Raises :class:`BamError` naming the offending field: a parameter the model
        does not have, a missing one, a non-finite or negative value.
        """
        origin = f" in {where}" if where else ""
        allowed = allowed_names(actuator, model)
        clean: dict[str, float] = {}
        for name, value in values.items():
            if name not in allowed:
                raise BamError(_not_allowed(name, actuator, model, allowed) + origin)
            clean[name] = P.check_value(name, value, where)
        missing = [n for n in required_names(actuator, model) if n not in clean]
        if missing:
            raise BamError(
                f"missing parameter{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                f"for {actuator.name} {model.name}{origin}"
            )
        check_groups(clean, where)
        for name, value in actuator.fixed.items():
            clean.setdefault(name, value)
        clean.setdefault("q_offset", 0.0)
        _check_backlash(clean, actuator, model, origin)
        return cls(actuator, model, clean, dict(provenance or {}))

    @classmethod
    def from_names(cls, actuator: str, model: str, values: Mapping[str, object],
                   provenance: Mapping[str, object] | None = None,
                   where: str = "") -> ParameterSet:
        """:meth:`build` where a file, a message or a command line names the actuator and
        the model: an unknown or misspelt name is a one-line BamError."""
        return cls.build(get_actuator(actuator), get_model(model), values, provenance, where)

    @property
    def model_id(self) -> int:
        return self.model.model_id

    @property
    def groups(self) -> tuple[str, ...]:
        """The optional groups this set carries; not a group whose parameters are the
        actuator's own motor parameters (the STS law's gain ratio)."""
        own = set(self.actuator.motor_bounds)
        return tuple(g for g in carried(self.values) if not set(GROUPS[g].names) <= own)

    def vector(self) -> np.ndarray:
        """The flat parameter vector of the numba kernels."""
        return P.to_vector(self.values)

    def replace(self, **values: float) -> ParameterSet:
        """A copy with some values changed (validated again)."""
        merged = {**self.values, **values}
        return ParameterSet.build(self.actuator, self.model, merged, self.provenance)

    def on_actuator(self, actuator: Actuator, **values: float) -> ParameterSet:
        """The same motor and friction under another firmware law (the servo in another
        operating mode): the values ``actuator``'s sets may hold but this actuator's fixed
        constants, then ``values``."""
        allowed = allowed_names(actuator, self.model)
        kept = {k: v for k, v in self.values.items()
                if k in allowed and k not in self.actuator.fixed}
        return ParameterSet.build(actuator, self.model, {**kept, **values}, self.provenance)


def _check_backlash(values: dict[str, float], act: Actuator, mdl: FrictionModel,
                    origin: str) -> None:
    """The dead band runs on the servo laws with M1..M6 (bam_sim.bench.backlash), between
    the motor's armature and the load."""
    if not values.get("backlash.width", 0.0) > 0.0:
        return
    # numba's, so imported here: a driver that never builds such a set loads no numerics
    from bam_sim.models.dcmotor.motor_model import uses_motor

    if uses_motor(act.family, mdl.model_id, P.to_vector(values)) or mdl.elastoplastic:
        raise BamError(f"group backlash{origin} runs with M1..M6 and the servo laws, not "
                       f"with {mdl.name} or the DC-motor model's groups; drop one of them")
    if not values.get("armature", 0.0) > 0.0:
        raise BamError(f"group backlash{origin} needs an armature > 0 (the motor's side of "
                       "the gap); give armature")


def _not_allowed(name: str, act: Actuator, mdl: FrictionModel, allowed: set[str]) -> str:
    about_groups = group_error(name, act, mdl)
    if about_groups:
        return about_groups
    twin = {**P.ALIASES, **{v: k for k, v in P.ALIASES.items()}}.get(name)
    if twin in allowed:
        return f"{act.name} names parameter '{name}' '{twin}'"
    if name in P.INDEX:
        return f"parameter '{name}' is not a parameter of model {mdl.name} on {act.name}"
    close = difflib.get_close_matches(name, sorted(allowed), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown parameter '{name}'{hint}"
