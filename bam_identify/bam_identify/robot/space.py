"""The free parameters of a robot fit: each servo type's set, and each joint's offset.

Joints of one servo type (the joint map's ``type``, the actuator by default) share one
parameter set of their model, searched in that type's
:class:`~bam_identify.fitting.space.SearchSpace` (the bench fit's bounds, held values and
groups); ``per_joint`` makes every joint its own type. The models are the joint map's
(:meth:`~bam_sim.robot.joint_map.JointMap.with_model` puts one model on every joint).
Each joint's offset (its reading at q = 0, the encoder's zero error) is
searched within ``OFFSET_BOUNDS`` of the map's own, unless held there. On request a
body's mass (a payload: its inertia scales with it, the body's shape kept) and a scale on
its inertia (a link whose MJCF inertia is not trusted) are searched too, within
``MASS_BOUNDS`` and ``INERTIA_BOUNDS`` of the MJCF's. A candidate's free values are
named ``type/parameter``, ``joint/offset``, ``body/mass`` and ``body/inertia``; its
kernel form is one parameter vector per joint, the offset in the ``q_offset`` slot, then
one row per identified body: its mass (kg) in ``BODY_MASS`` and inertia scale in
``BODY_INERTIA``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bam_identify.fitting.space import Q_OFFSET_BOUNDS, SearchSpace, UnitBox, nested_start
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.robot.joint_map import JointMap

SEPARATOR = "/"
OFFSET, MASS, INERTIA = "offset", "mass", "inertia"
ROBOT_KEYS = (OFFSET, MASS, INERTIA)  # what is the robot's, not a servo type's
OFFSET_BOUNDS = Q_OFFSET_BOUNDS  # rad: a mounting or calibration error, not a free turn
MASS_BOUNDS = (0.1, 4.0)  # times the MJCF's mass: a payload is known to a factor
INERTIA_BOUNDS = (0.25, 4.0)  # a scale on the MJCF's inertia
BODY_MASS, BODY_INERTIA = 0, 1  # a body row's columns


@dataclass(frozen=True)
class Body:
    """A body of the robot whose mass or inertia the fit identifies, as its MJCF has it."""

    name: str
    id: int
    mass: float  # kg
    inertia: tuple[float, float, float]  # principal moments, kg·m²
    identify_mass: bool
    identify_inertia: bool


def robot_bodies(model, masses: Sequence[str], inertias: Sequence[str]) -> tuple[Body, ...]:
    """The bodies of ``model`` named by ``--payload`` (mass) and ``--inertia``; a name the
    model does not have, or a body without mass, is refused in one line."""
    import mujoco

    bodies = []
    for name in dict.fromkeys([*masses, *inertias]):
        index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        if index <= 0:  # -1: unknown; 0: the world
            known = [model.body(i).name for i in range(1, model.nbody)]
            raise BamError(f"body '{name}' is not a moving body of the robot's model; its "
                           f"bodies are {', '.join(known)}")
        if not model.body_mass[index] > 0.0:
            raise BamError(f"body '{name}' has no mass in the robot's model; give it its mass "
                           "and inertia there as the search's starting point")
        bodies.append(Body(name, int(index), float(model.body_mass[index]),
                           tuple(float(v) for v in model.body_inertia[index]),
                           name in masses, name in inertias))
    return tuple(bodies)


@dataclass(frozen=True)
class RobotSpace(UnitBox):
    """A robot fit's search space; the same interface as the bench's SearchSpace."""

    joints: JointMap
    types: dict[str, SearchSpace]  # servo type -> its space (no offset)
    bounds: dict[str, tuple[float, float]]
    bodies: tuple[Body, ...] = ()

    @classmethod
    def build(cls, joints: JointMap, fixed: dict[str, float], groups: tuple[str, ...] = (),
              identify_offsets: bool = True, bodies: tuple[Body, ...] = ()) -> RobotSpace:
        """The space of ``joints``, each of which names its model, and of ``bodies``
        (:func:`robot_bodies`)."""
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
        for b in bodies:
            if b.identify_mass:
                bounds[f"{b.name}{SEPARATOR}{MASS}"] = (MASS_BOUNDS[0] * b.mass,
                                                        MASS_BOUNDS[1] * b.mass)
            if b.identify_inertia:
                bounds[f"{b.name}{SEPARATOR}{INERTIA}"] = INERTIA_BOUNDS
        return cls(joints, types, bounds, bodies)

    @property
    def label(self) -> str:
        """The models of the space, e.g. ``m4`` or ``m1+m4`` (in the map's order)."""
        return "+".join(dict.fromkeys(s.model.name for s in self.types.values()))

    def population(self, x: np.ndarray) -> np.ndarray:
        """The kernels' parameter vectors (m, n_joints, N_PARAMS) of candidates x (m, n),
        then each identified body's row (module docstring)."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        column = {name: i for i, name in enumerate(self.names)}
        n = len(self.joints.joints)
        pop = np.zeros((x.shape[0], n + len(self.bodies), P.N_PARAMS))
        for name, members in self.joints.types().items():
            space = self.types[name]
            own = [column[f"{name}{SEPARATOR}{p}"] for p in space.names]
            pop[:, members] = space.population(x[:, own])[:, None, :]
        for i, joint in enumerate(self.joints.joints):
            key = f"{joint.joint}{SEPARATOR}{OFFSET}"
            pop[:, i, P.Q_OFFSET] = x[:, column[key]] if key in column else joint.offset
        for k, b in enumerate(self.bodies):
            mass, scale = f"{b.name}{SEPARATOR}{MASS}", f"{b.name}{SEPARATOR}{INERTIA}"
            pop[:, n + k, BODY_MASS] = x[:, column[mass]] if mass in column else b.mass
            pop[:, n + k, BODY_INERTIA] = x[:, column[scale]] if scale in column else 1.0
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

    def body_values(self, values: dict[str, float]) -> dict[str, dict[str, float]]:
        """Each identified body's mass (kg) and inertia scale (the MJCF's where held)."""
        return {b.name: {MASS: values.get(f"{b.name}{SEPARATOR}{MASS}", b.mass),
                         INERTIA: values.get(f"{b.name}{SEPARATOR}{INERTIA}", 1.0)}
                for b in self.bodies}

    def offsets(self, values: dict[str, float]) -> dict[str, float]:
        """Each joint's identified offset (the map's where not searched), rad."""
        return {j.joint: values.get(f"{j.joint}{SEPARATOR}{OFFSET}", j.offset)
                for j in self.joints.joints}


def apply_bodies(model, bodies: tuple[Body, ...], rows: np.ndarray) -> None:
    """Put each body's row (module docstring) into ``model``: its mass, and its MJCF
    inertia scaled with the mass and by the inertia scale. MuJoCo's constants derived
    from them are recomputed by the caller (``ServoArm.set_parameters``)."""
    for b, row in zip(bodies, rows, strict=True):
        model.body_mass[b.id] = row[BODY_MASS]
        model.body_inertia[b.id] = np.array(b.inertia) * (row[BODY_MASS] / b.mass
                                                          * row[BODY_INERTIA])


def _own(values: dict, prefix: str) -> dict:
    """The values of servo type ``prefix``; a joint's offset or a body's mass is not one of
    them where a type takes the name of a joint or body (``--per-joint``)."""
    head = f"{prefix}{SEPARATOR}"
    return {k[len(head):]: v for k, v in values.items()
            if k.startswith(head) and k[len(head):] not in ROBOT_KEYS}
