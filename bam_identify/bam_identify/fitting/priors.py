"""Parameters the training logs cannot fix, held at a documented prior: no overfitting by
construction.

With one mass/length setup in the training logs, the load-dependent friction of M3..M6
and ``ep_load`` (paper equations 7 to 10: K_l, K_l^s; K_m, K_e and their Stribeck terms;
the quadratic K_m^q, K_e^q) is fixed only where the model is exact. On a simulated MX-64
with the published M4 set, one setup, two gains, a search gives K_l^s back (0.2343 as
0.2342) and validates at the third gain at the noise floor (0.0008 rad; 0.0038 rad held
at 0, what this prior costs where the model is exact). On the real XL330 at kp 100 and
200 it does not: what the terms take up moves with which logs are trained, and what they
carry to kp 400 with it (M3 0.045 rad trained on six of the eight logs, 0.108 rad on all
eight, where M1 did 0.069 and 0.068; M6 with its split free 0.091 rad): they absorb what
the model misses at this one load. A second setup is what tells a load term from a
mismatch that only looks like one here.

So, without a second setup, each load term is held at 0 (:func:`load_priors`): the
model becomes its nested load-free one (M3 becomes M1; M4, M5 and M6 become M2; ep_load
becomes ep_stribeck), and since it still nests M1 and starts from the M1 fit, it cannot
end worse than M1 for want of load data. Not the published set's values: those are
another unit's, on another bench, and a bias they brought in is one no validation on
these logs could see; give them with ``--set`` where they are wanted.

``fit --free-load-terms`` searches the terms anyway; a value given with ``--set`` wins.

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
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator

if TYPE_CHECKING:
    from bam_sim.bench.bench_log import BenchLog

LOAD_TERMS = (
    "load_friction_base", "load_friction_stribeck",
    "load_friction_motor", "load_friction_external",
    "load_friction_motor_stribeck", "load_friction_external_stribeck",
    "load_friction_motor_quad", "load_friction_external_quad",
)


@dataclass(frozen=True)
class Prior:
    """Values held because the training logs cannot fix them: per value, its source
    ("nested": the load-free model nested in the model; "published M1") and the reason."""

    values: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, values: dict[str, float], source: str, reason: str) -> Prior:
        return cls(dict(values), dict.fromkeys(values, source), dict.fromkeys(values, reason))

    def __add__(self, other: Prior) -> Prior:
        return Prior({**self.values, **other.values}, {**self.sources, **other.sources},
                     {**self.why, **other.why})

    def without(self, names) -> Prior:
        """This prior but ``names`` (the values --set gives: those win)."""
        keep = [k for k in self.values if k not in names]
        return Prior({k: self.values[k] for k in keep}, {k: self.sources[k] for k in keep},
                     {k: self.why[k] for k in keep})

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.why.values()))

    def provenance(self) -> dict:
        return {"values": dict(self.values), "sources": dict(self.sources),
                "reasons": list(self.reasons)}


LOAD_REASON = ("one mass/length setup in the training logs: the load-dependent friction "
               "terms are not told apart from what the model misses at this one load")
SWING_REASON = ("no torque-off segment in the training logs: the viscous friction and the "
                "back-EMF cannot be separated")


def setups(logs: list[BenchLog]) -> set[tuple[float, float, float]]:
    """The distinct (mass, length, arm mass) of ``logs``."""
    return {(log.bench.mass, log.bench.length, log.bench.arm_mass) for log in logs}


def load_priors(logs: list[BenchLog], model: FrictionModel, free: bool = False) -> Prior:
    """The load terms of ``model`` held at 0 for a fit on ``logs``; none with two setups
    or more, or ``free`` (the module docstring)."""
    names = [name for name in model.params if name in LOAD_TERMS]
    if free or not names or len(setups(logs)) != 1:
        return Prior()
    return Prior.of(dict.fromkeys(names, 0.0), "nested", LOAD_REASON)


def swing_priors(logs: list[BenchLog], actuator: Actuator, model: FrictionModel) -> Prior:
    """friction_viscous held at the published M1 set's value when no training log has a
    torque-off segment (none when one has, or no M1 set is published for ``actuator``)."""
    if "friction_viscous" not in model.params or any(not log.enabled.all() for log in logs):
        return Prior()
    try:
        value = published(actuator, get_model("m1")).values["friction_viscous"]
    except BamError:
        return Prior()
    return Prior.of({"friction_viscous": float(value)}, "published M1", SWING_REASON)
