"""The search space of a bench fit: what is identified, in which bounds (paper section V-B).

Identified: the actuator's motor parameters (k_t, R, J_m where they are not
fixed constants), the bench offset q_offset and the friction parameters of
the model, each within the registry's bounds; any of them can be held fixed
(``--set name=value``, :func:`parse_assignments`). The optional groups of
MuJoCo's DC-motor model asked for (``SearchSpace.build(groups=...)``, ``fit
--groups``) add their identified parameters (:mod:`bam_sim.models.dcmotor.groups`):
inductance L, saturation current, the thermal R_T, C and α, cogging amplitude
and phase, the dcmotor controller's k_i and k_d.

CMA-ES searches the unit box of the bounds (:class:`UnitBox`, shared with the
robot's space); a richer model starts from the simpler one it nests
(:func:`nested_start`), so its fit ends no worse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.groups import (
    get_group,
)
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.parameter_set import (
    ParameterSet,
    allowed_names,
    identification_bounds,
)
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator

Q_OFFSET_BOUNDS = (-0.2, 0.2)  # rad: a bench mounting error, not a free rotation


class UnitBox:
    """The unit-box coordinates of a search over ``self.bounds`` ({name: (low, high)}):
    what CMA-ES searches, shared by the bench's and the robot's search spaces."""

    bounds: dict[str, tuple[float, float]]

    @property
    def names(self) -> list[str]:
        return list(self.bounds)

    def unit_box(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower bounds, ranges): values = lower + u·range for u in the unit box."""
        lower, upper = np.array(list(self.bounds.values()), dtype=float).reshape(-1, 2).T
        return lower, upper - lower

    def to_unit(self, values: dict[str, float]) -> np.ndarray:
        lower, span = self.unit_box()
        return (np.array([values[name] for name in self.names]) - lower) / span

    def values_of(self, x: np.ndarray) -> dict[str, float]:
        """The free values of one candidate by name (what a fit reports)."""
        return dict(zip(self.bounds, map(float, x), strict=True))


@dataclass(frozen=True)
class SearchSpace(UnitBox):
    """The free parameters of one (actuator, model) pair and their bounds.

    A candidate is a row of free values in the order of :attr:`names`; a
    population of them maps onto the kernels' parameter vectors in one step
    (:meth:`population`).
    """

    actuator: Actuator
    model: FrictionModel
    bounds: dict[str, tuple[float, float]]
    fixed: dict[str, float]

    @classmethod
    def build(cls, actuator: Actuator, model: FrictionModel,
              fixed: dict[str, float] | None = None, identify_offset: bool = True,
              groups: tuple[str, ...] = ()) -> SearchSpace:
        """``groups``: optional groups of the DC-motor model whose parameters are
        identified too (:data:`bam_sim.models.dcmotor.groups.GROUPS`; their other
        parameters are held at ``fixed``, where the group needs them)."""
        bounds = dict(identification_bounds(actuator, model))
        for name in groups:
            group = get_group(name)
            if not group.carried_by(actuator):
                raise BamError(f"--groups {group.name}: the group belongs to the "
                               f"{group.family_text} family, not to {actuator.name}")
            bounds.update(group.bounds(actuator.scales))
        if identify_offset:
            bounds["q_offset"] = Q_OFFSET_BOUNDS
        allowed = allowed_names(actuator, model)
        fixed = dict(fixed or {})
        for name, value in fixed.items():
            if name not in allowed:
                raise BamError(f"--set {name}: '{name}' is not a parameter of model "
                               f"{model.name} on {actuator.name}; its parameters are "
                               f"{', '.join(sorted(allowed))}")
            P.check_value(name, value, "--set")
            bounds.pop(name, None)
        space = cls(actuator, model, bounds, fixed)
        # A set of the space must be valid as a whole (a group missing what it needs, a
        # held value outside a group's rules): say so now, not after the fit.
        middle = {name: 0.5 * (lo + hi) for name, (lo, hi) in bounds.items()}
        space.parameter_set(middle, {})
        return space

    @classmethod
    def from_names(cls, actuator: str, model: str, fixed: dict[str, float] | None = None,
                   identify_offset: bool = True, groups: tuple[str, ...] = ()) -> SearchSpace:
        """:meth:`build` where a command line or a file names the actuator and the model."""
        return cls.build(get_actuator(actuator), get_model(model), fixed, identify_offset,
                         groups)

    @property
    def index(self) -> np.ndarray:
        """Where each free parameter sits in the kernels' parameter vector."""
        return np.array([P.INDEX[name] for name in self.bounds], dtype=np.intp)

    def base_vector(self) -> np.ndarray:
        """The vector of fixed values (actuator constants, --set values, q_offset 0)."""
        return P.to_vector({"q_offset": 0.0, **self.actuator.fixed, **self.fixed})

    def population(self, x: np.ndarray) -> np.ndarray:
        """The kernels' parameter vectors (m, N_PARAMS) of candidates ``x`` (m, n): the
        fixed values with each row's free values put in place."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        pop = np.tile(self.base_vector(), (x.shape[0], 1))
        pop[:, self.index] = x
        return pop

    def population_of(self, sets: list[dict[str, float]]) -> np.ndarray:
        """The kernels' parameter vectors of sets given by name (a file's, a report's,
        a test's): the fixed values with each set's values put in place."""
        pop = np.tile(self.base_vector(), (len(sets), 1))
        for i, values in enumerate(sets):
            for name, value in values.items():
                pop[i, P.INDEX[name]] = value
        return pop

    def parameter_set(self, values: dict[str, float], provenance: dict) -> ParameterSet:
        merged = {**self.actuator.fixed, "q_offset": 0.0, **self.fixed, **values}
        return ParameterSet.build(self.actuator, self.model, merged, provenance)


def parse_assignments(items: list[str] | None) -> dict[str, float]:
    """["kt=1.6", "R=3.9"] -> {"kt": 1.6, "R": 3.9}: floats parsed, never evaluated."""
    fixed: dict[str, float] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BamError(f"--set '{item}': write it as name=value, e.g. --set kt=1.6")
        try:
            value = float(text)
        except ValueError:
            raise BamError(f"--set {name}: '{text.strip()}' is not a number") from None
        if not math.isfinite(value):
            raise BamError(f"--set {name}: give a finite number, not '{text.strip()}'")
        fixed[name] = value
    return fixed


# Each model's nearest simpler models: M1 ⊂ M2, M3 ⊂ M4 ⊂ M5 ⊂ M6 (section III);
# elasto-plastic: ep_load with K_l = K_l^s = 0 is ep_stribeck (the same K, B carry
# over). ep_cv ⊂ ep_stribeck too (F_S = F_C), but that start sits on the edge
# F_S − F_C = 0 of the box, a local optimum the search rarely leaves: without
# stiction is not a good guess of stiction, so ep_stribeck and ep_rational start cold.
NESTED_IN = {"m2": ("m1",), "m3": ("m1",), "m4": ("m2", "m3", "m1"),
             "m5": ("m4", "m3", "m2", "m1"), "m6": ("m5", "m4", "m3", "m2", "m1"),
             "ep_load": ("ep_stribeck",)}


def best_nested(model: str, train_mae: dict[str, float]) -> str | None:
    """Of the models fitted (their training MAE by name), the best one nested in ``model``:
    a warm start for it (None when none was fitted)."""
    simpler = [m for m in train_mae if m in NESTED_IN.get(model, ())]
    return min(simpler, key=train_mae.__getitem__) if simpler else None


def nested_start(space: SearchSpace, fitted: dict[str, float]) -> dict[str, float]:
    """A starting point for ``space`` that reproduces a fitted simpler model.

    Terms the simpler model lacks are (nearly) zero, so the richer model starts
    from the simpler model's friction budget: K_m = K_e = K_l and
    K_m^s = K_e^s = K_l^s turn M4 into M5 (equation 9 with equal coefficients
    is equation 8); the Stribeck shape keeps the simpler model's v_s and α or
    the registry's defaults. Values are only clipped into the bounds, so the
    start reproduces the simpler model exactly: evaluated first, it guarantees
    the richer fit ends no worse than the simpler one. ep_stribeck → ep_load
    is exact too (K_l = K_l^s = 0), and so is ep_cv → ep_stribeck
    (F_S − F_C = 0 turns Φ_Z (30) into (20)).
    """
    defaults = space.model.defaults(space.actuator.scales)
    load, load_static = (fitted.get("load_friction_base", 0.0),
                         fitted.get("load_friction_stribeck", 0.0))
    derived = {"load_friction_motor": load, "load_friction_external": load,
               "load_friction_motor_stribeck": load_static,
               "load_friction_external_stribeck": load_static}
    start = {}
    for name, (lo, hi) in space.bounds.items():
        if name in fitted:
            value = fitted[name]
        elif name in derived:
            value = derived[name]
        elif name in ("dtheta_stribeck", "alpha"):
            value = defaults[name]
        else:
            value = 0.0
        start[name] = min(max(value, lo), hi)
    return start
