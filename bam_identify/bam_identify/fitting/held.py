"""Parameters held fixed in a fit: ``--set`` values and the groups' defaults.

Each rule lives here once. :func:`held_item` is the rule of one ``--set``
item (a known parameter, a plausible value), applied by the command line as
it parses; :func:`held_per_model` resolves the parsed values against the
models of the plan (a name no model has, a value outside the range the fit
would search); :func:`group_defaults` holds what a group needs and ``--set``
did not give, and refuses a group scored on a reading no training log recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.dcmotor.groups import get_group
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.parameter_set import allowed_names, identification_bounds
from bam_sim.models.servo.actuator import Actuator

if TYPE_CHECKING:  # the command line imports this module: no simulation code for a type
    from bam_sim.bench.bench_log import BenchLog


def held_item(text: str) -> str:
    """``--set NAME=VALUE``: a known parameter and a plausible finite value."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise BamError(f"'{text}' is not NAME=VALUE; write it as e.g. --set kt=1.6")
    P.check_value(name.strip(), value)
    return f"{name.strip()}={value.strip()}"


def held_per_model(fixed: dict[str, float], act: Actuator, models: list[FrictionModel],
                   groups: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """--set values each model has; a name no model has is an error, and so is a value
    outside the range the fit would search for that parameter on this actuator (a held
    value replaces the identified one, so it must be as plausible)."""
    per_model = {}
    for model in models:
        names = allowed_names(act, model)
        per_model[model.name] = {k: v for k, v in fixed.items() if k in names}
        _check_range(per_model[model.name], act, model, groups)
    for name in fixed:
        if not any(name in values for values in per_model.values()):
            raise BamError(f"--set {name}: '{name}' is not a parameter of "
                           f"{', '.join(m.name for m in models)} on {act.name}")
    return per_model


def _check_range(held: dict[str, float], act: Actuator, model: FrictionModel,
                 groups: tuple[str, ...]) -> None:
    """Each held value inside the bounds the fit searches (the model's, the groups')."""
    bounds = dict(identification_bounds(act, model))
    for name in groups:
        group = get_group(name)
        if group.carried_by(act):
            bounds.update(group.bounds(act.scales))
    for name, value in held.items():
        low, high = bounds.get(name, (-np.inf, np.inf))
        if not low <= value <= high:
            raise BamError(f"--set {name}={value:g} is outside [{low:g}, {high:g}], the "
                           f"range the fit searches for {name} on {act.name}; hold a value "
                           "inside it")


# The groups scored on a reading of the servo: its BenchLog series, its name, and where a
# recording has it. Without it the fit would run with nothing to score the group on.
GROUP_READINGS = {
    "thermal": ("temperature", "temperature",
                "bam/actuator_states temperature, a legacy log's 'temp'"),
    "supply": ("input_voltage", "input voltage",
               "bam/actuator_states input_voltage, a legacy log's 'input_volts'"),
}


def group_defaults(groups: tuple[str, ...], logs: list[BenchLog]) -> dict[str, float]:
    """Values held for the groups fitted, unless --set: the thermal group's ambient and
    reference temperatures are the coolest first temperature of the training logs (a
    motor at rest is at ambient, and R is identified at that temperature). A group of
    :data:`GROUP_READINGS` that no training log has the reading of is refused."""
    for name in (g for g in groups if g in GROUP_READINGS):
        series, reading, where = GROUP_READINGS[name]
        if all(getattr(log, series) is None for log in logs):
            raise BamError(f"--groups {name} needs a recorded {reading}, but no training log "
                           f"recorded one ({where}); record it, or leave {name} out")
    if "thermal" not in groups:
        return {}
    first = [float(log.temperature[0]) for log in logs if log.temperature is not None]
    return {"thermal.ambient": min(first), "thermal.reftemp": min(first)}
