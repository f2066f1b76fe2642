"""The free parameters of a robot fit: each servo type's set, and each joint's offset.

Joints of one servo type (the joint map's ``type``, the actuator by default) share one
parameter set of their model, searched in that type's
:class:`~bam_identify.fitting.space.SearchSpace` (the bench fit's bounds, held values and
groups); ``per_joint`` makes every joint its own type. The models are the joint map's
(:meth:`~bam_sim.robot.joint_map.JointMap.with_model` puts one model on every joint).
Each joint's offset (its reading at q = 0, the encoder's zero error) is
searched within ``OFFSET_BOUNDS`` of the map's own, unless held there. A candidate's
free values are named ``type/parameter`` and ``joint/offset``; its kernel form is one
parameter vector per joint, the offset in the ``q_offset`` slot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bam_identify.fitting.space import Q_OFFSET_BOUNDS, SearchSpace, UnitBox, nested_start
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.robot.joint_map import JointMap

SEPARATOR = "/"
OFFSET = "offset"
OFFSET_BOUNDS = Q_OFFSET_BOUNDS  # rad: a mounting or calibration error, not a free turn


@dataclass(frozen=True)
class RobotSpace(UnitBox):
    """A robot fit's search space; the same interface as the bench's SearchSpace."""

    joints: JointMap
    types: dict[str, SearchSpace]  # servo type -> its space (no offset)
    bounds: dict[str, tuple[float, float]]

    @classmethod
    def build(cls, joints: JointMap, fixed: dict[str, float], groups: tuple[str, ...] = (),
              identify_offsets: bool = True) -> RobotSpace:
        """The space of ``joints``, each of which names its model."""
        types = {}
        for name, members in joints.types().items():
            first = joints.joints[members[0]]
            if first.model is None:
                raise BamError(f"{joints.source}: joint '{first.joint}' has no friction model; "
                               "give its 'model' in the joint map, or --models")
            types[name] = SearchSpace.build(first.actuator, first.model, fixed, False, groups)
        bounds = {f"{t}{SEPARATOR}{p}": b for t, s in types.items() for p, b in s.bounds.items()}
        if identify_offsets:  # around the map's offset: a correction of it
            bounds.update({f"{j.joint}{SEPARATOR}{OFFSET}": (j.offset + OFFSET_BOUNDS[0],
                                                            j.offset + OFFSET_BOUNDS[1])
                           for j in joints.joints})
        return cls(joints, types, bounds)

    @property
    def label(self) -> str:
        """The models of the space, e.g. ``m4`` or ``m1+m4`` (in the map's order)."""
        return "+".join(dict.fromkeys(s.model.name for s in self.types.values()))

    def population(self, x: np.ndarray) -> np.ndarray:
        """The kernels' parameter vectors (m, n_joints, N_PARAMS) of candidates x (m, n)."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        column = {name: i for i, name in enumerate(self.names)}
        pop = np.empty((x.shape[0], len(self.joints.joints), P.N_PARAMS))
        for name, members in self.joints.types().items():
            space = self.types[name]
            own = [column[f"{name}{SEPARATOR}{p}"] for p in space.names]
            pop[:, members] = space.population(x[:, own])[:, None, :]
        for i, joint in enumerate(self.joints.joints):
            key = f"{joint.joint}{SEPARATOR}{OFFSET}"
            pop[:, i, P.Q_OFFSET] = x[:, column[key]] if key in column else joint.offset
        return pop

    def population_of(self, sets: list[dict[str, float]]) -> np.ndarray:
        """The parameter vectors of sets given by name (free values only)."""
        return self.population(np.array([[s[n] for n in self.names] for s in sets]))

    def nested_start(self, fitted: dict[str, float]) -> dict[str, float]:
        """A start that reproduces a fitted simpler model of the same robot: each type's
        :func:`~bam_identify.fitting.space.nested_start`, the offsets found kept."""
        start = {f"{name}{SEPARATOR}{k}": v for name, space in self.types.items()
                 for k, v in nested_start(space, _own(fitted, name)).items()}
        return {**start, **{k: fitted[k] for k in self.bounds if k not in start and k in fitted}}

    def parameter_sets(self, values: dict[str, float], provenance: dict) -> dict[str, ParameterSet]:
        """Each servo type's identified set (offsets apart: see :meth:`offsets`)."""
        return {name: space.parameter_set(_own(values, name), provenance)
                for name, space in self.types.items()}

    @staticmethod
    def of_type(values: dict, name: str) -> dict:
        """The entries of ``values`` (keyed ``type/parameter``) of servo type ``name``, by
        parameter name (a joint's offset apart)."""
        return _own(values, name)

    def offsets(self, values: dict[str, float]) -> dict[str, float]:
        """Each joint's identified offset (the map's where not searched), rad."""
        return {j.joint: values.get(f"{j.joint}{SEPARATOR}{OFFSET}", j.offset)
                for j in self.joints.joints}


def _own(values: dict, prefix: str) -> dict:
    """The values of servo type ``prefix``; a joint's offset is not one of them where a
    type takes its joint's name (``--per-joint``)."""
    head = f"{prefix}{SEPARATOR}"
    return {k[len(head):]: v for k, v in values.items()
            if k.startswith(head) and k[len(head):] != OFFSET}
