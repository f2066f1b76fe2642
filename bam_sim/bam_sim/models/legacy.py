"""Import and export of the reference implementation's (legacy BAM) parameter files.

Parameter files there are one flat JSON object: each parameter by the names of
``reference/identified-parameters.md`` plus ``"model"`` and ``"actuator"``.
They are read with ``json.loads`` and validated exactly like our YAML files.

The same layout is what RL stacks load an identified servo from: the reference's
``bam.model.load_model`` (better-actuator-models 1.0.2), which Isaac Lab's
``BamActuatorCfg`` and mjlab's BAM actuator call. ``load_model_from_dict`` there
builds ``models[data["model"]]`` on ``actuators[data["actuator"]]`` and copies
every key that names one of the model's ``Parameter`` attributes (motor: kt, R,
armature; q_offset; the friction parameters of M1..M6); other keys are ignored
silently, so :func:`parameters_to_json` refuses what would be lost instead.
"""

from __future__ import annotations

import json

from bam_sim.common.errors import BamError
from bam_sim.models.model_registry import BAM_MODELS
from bam_sim.models.parameter_set import ParameterSet, required_names

# The actuator names of the reference's registry (bam/actuators.py of
# better-actuator-models 1.0.2); only these load there.
REFERENCE_ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "xl330i", "erob80_100",
                       "erob80_50", "sts3215", "unitree_go1")
# Parameter attributes every reference model has besides its friction ones
# (Model.set_actuator and the actuators' initialize()).
_REFERENCE_COMMON = ("kt", "R", "armature", "q_offset")


def parameters_from_json(text: str, where: str = "<string>") -> ParameterSet:
    """Parse a legacy BAM JSON parameter file into a ParameterSet."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BamError(f"{where} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise BamError(f"{where} must hold a JSON object of parameter names to values")
    for key in ("actuator", "model"):
        if not isinstance(doc.get(key), str):
            raise BamError(f"{where} has no \"{key}\" entry; add it (e.g. \"{key}\": "
                           f"\"{'mx64' if key == 'actuator' else 'm4'}\")")
    values = {k: v for k, v in doc.items() if k not in ("actuator", "model")}
    provenance = {"source": "legacy BAM JSON", "imported_from": where}
    return ParameterSet.build(doc["actuator"], doc["model"], values, provenance, where)


def parameters_to_json(params: ParameterSet) -> str:
    """A legacy BAM JSON parameter file of ``params``, as ``bam.model.load_model`` reads it.

    Raises a one-line BamError for a set the reference cannot hold (another actuator or
    model family, DC-motor groups, a fixed constant it hard-codes at another value).
    """
    _check_exportable(params)
    act, mdl = params.actuator_def, params.model_def
    names = [n for n in _REFERENCE_COMMON if n in params.values]
    names += [n for n in required_names(act, mdl) if n not in names]
    doc: dict[str, object] = {n: float(params.values[n]) for n in names}
    doc["model"] = params.model
    doc["actuator"] = params.actuator
    return json.dumps(doc, indent=4) + "\n"


def _check_exportable(params: ParameterSet) -> None:
    act, mdl = params.actuator_def, params.model_def
    what = f"{act.name} {mdl.name}"
    if act.name not in REFERENCE_ACTUATORS:
        raise BamError(f"actuator {act.name} has no BAM JSON counterpart (its readers know "
                       f"{', '.join(REFERENCE_ACTUATORS)}); export it as a MuJoCo dcmotor "
                       "MJCF instead")
    if mdl.name not in BAM_MODELS:
        raise BamError(f"model {mdl.name} ({what}) has no BAM JSON counterpart (its readers "
                       f"know {', '.join(BAM_MODELS)}); fit one of those to export it")
    if params.groups:
        raise BamError(f"the DC-motor group{'s' if len(params.groups) > 1 else ''} "
                       f"{', '.join(params.groups)} of this {what} set have no BAM JSON "
                       "counterpart; fit without --groups, or export as a MuJoCo dcmotor MJCF")
    for name, value in act.fixed.items():
        # constants the reference hard-codes (the eRob's 12 A) rather than reads
        if name not in _REFERENCE_COMMON and params.values[name] != value:
            raise BamError(f"{name} = {params.values[name]:g} in this {what} set, but BAM "
                           f"JSON readers fix it at {value:g}; set it back to export")
