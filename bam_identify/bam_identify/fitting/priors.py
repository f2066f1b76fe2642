"""Parameters the training logs cannot fix, held at a documented prior: no overfitting by
construction.

One mass/length setup still shows the load-dependent friction of M3 and M4 (paper
equations 7, 8): the gearbox torque |τ_m − τ_e| it scales moves with the angle (gravity)
and with the duty (the motor), and the joint sticks wherever K_l·|τ_m − τ_e| holds it,
so K_l and K_l^s are searched. Measured: a simulated MX-64 with the published M4 set, one
setup, trained at two gains, recovers K_l^s (0.2343 fitted as 0.2342) and validates at the
third gain at the noise floor (0.0008 rad; 0.0038 rad with the load terms held at 0, as
this module did before); the real XL330, trained at kp 100 and 200 on its one bench, M3
validates at kp 400 at 0.045 rad where M1 does 0.069 rad (its plateaus: the joint holds
still while the duty swings, gravity loading the gears).

How M5 and M6 split that friction between the motor's torque and the load's (K_m against
K_e, K_m^s against K_e^s, equation 9; at one load the two torques differ only by this one
inertia's J·q̈ and the friction) and M6's quadratic terms (10) are fixed at one setup only
where the model is exact: a simulated MX-64 with the published M6 set gives its split
back (validation 0.0010 rad, 0.0030 rad tied), but on the real XL330 above the free split
took up what the model misses and M6 validated at 0.091 rad at kp 400, worse than M1.

So, without a second setup, K_e is tied to K_m and K_e^s to K_m^s (equation 9 with equal
coefficients is equation 8: M5 becomes M4 on the search) and the quadratic terms are held
at 0 (M6 becomes M5) (:func:`load_priors`). Each nests the model below it and starts from
its fit, so it cannot end worse for want of a second load. Not the published set's
values: those are another unit's, on another bench, and a bias they brought in is one no
validation on these logs could see; give them with ``--set`` where they are wanted.

``fit --free-load-terms`` searches every term anyway; a value given with ``--set`` wins.

Without a free swing (no torque-off segment in any training log), the viscous friction
and the motor's back-EMF damp the joint together and only their sum is fixed: searched,
the viscous friction runs wherever k_t²/R takes up the rest, and a free swing (or the
torque off of a fall) is then mispredicted (on another servo's logs, a fit without one
scored 0.12 rad for M1 and 0.48 rad for M4 on the one free-swing run). It is held at the
published M1 set's value for the actuator, the type's own, measured on free swings
(:func:`swing_priors`); an actuator without a published set keeps it free, with the
warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.servo.actuators import Actuator

if TYPE_CHECKING:
    from bam_sim.bench.bench_log import BenchLog


@dataclass(frozen=True)
class Prior:
    """Values held, or tied to another parameter's, because the training logs cannot fix
    them: per name, its source ("nested": the model nested in this one; "published M1")
    and the reason."""

    values: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    tied: dict[str, str] = field(default_factory=dict)  # {tied: the parameter it follows}

    @classmethod
    def of(cls, values: dict[str, float], source: str, reason: str,
           tied: dict[str, str] | None = None) -> Prior:
        tied = dict(tied or {})
        return cls(dict(values), dict.fromkeys([*values, *tied], source),
                   dict.fromkeys([*values, *tied], reason), tied)

    def __add__(self, other: Prior) -> Prior:
        return Prior({**self.values, **other.values}, {**self.sources, **other.sources},
                     {**self.why, **other.why}, {**self.tied, **other.tied})

    def without(self, names) -> Prior:
        """This prior but ``names`` (the values --set gives: those win)."""
        keep = [k for k in self.why if k not in names]
        return Prior({k: v for k, v in self.values.items() if k in keep},
                     {k: self.sources[k] for k in keep}, {k: self.why[k] for k in keep},
                     {k: v for k, v in self.tied.items() if k in keep})

    def __bool__(self) -> bool:
        return bool(self.why)

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.why.values()))

    def provenance(self) -> dict:
        return {"values": dict(self.values), "tied": dict(self.tied),
                "sources": dict(self.sources), "reasons": list(self.reasons)}


LOAD_REASON = ("one mass/length setup in the training logs: the split of the load friction "
               "between the motor's torque and the load's, and its quadratic terms, are not "
               "fixed at one load")
# K_e and K_e^s follow K_m and K_m^s (M5 searched as M4); the quadratic terms held at 0.
LOAD_TIES = {"load_friction_external": "load_friction_motor",
             "load_friction_external_stribeck": "load_friction_motor_stribeck"}
LOAD_HELD = ("load_friction_motor_quad", "load_friction_external_quad")
SWING_REASON = ("no torque-off segment in the training logs: the viscous friction and the "
                "back-EMF cannot be separated")


def setups(logs: list[BenchLog]) -> set[tuple[float, float, float]]:
    """The distinct (mass, length, arm mass) of ``logs``."""
    return {(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in logs}


def load_priors(logs: list[BenchLog], model: FrictionModel, free: bool = False) -> Prior:
    """For a fit on ``logs`` of one setup, ``model``'s split load terms tied (K_e = K_m,
    K_e^s = K_m^s) and its quadratic ones held at 0; none with two setups or more, or
    ``free`` (the module docstring)."""
    if free or len(setups(logs)) != 1:
        return Prior()
    held = [name for name in LOAD_HELD if name in model.params]
    tied = {name: free_name for name, free_name in LOAD_TIES.items() if name in model.params}
    if not held and not tied:
        return Prior()
    return Prior.of(dict.fromkeys(held, 0.0), "nested", LOAD_REASON, tied)


def swing_priors(logs: list[BenchLog], actuator: Actuator, model: FrictionModel) -> Prior:
    """friction_viscous held at the published M1 set's value when no training log has a
    torque-off segment (none when one has, or no M1 set is published for ``actuator``)."""
    if "friction_viscous" not in model.params or any(not log.enabled.all() for log in logs):
        return Prior()
    try:
        value = published(actuator, "m1").values["friction_viscous"]
    except BamError:
        return Prior()
    return Prior.of({"friction_viscous": float(value)}, "published M1", SWING_REASON)
