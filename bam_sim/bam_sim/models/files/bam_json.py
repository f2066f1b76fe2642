"""BAM JSON: the parameter files of the reference implementation, read and written.

Parameter files there are one flat JSON object: each parameter by the names of
``reference/identified-parameters.md`` plus ``"model"`` and ``"actuator"``.
They are read with ``json.loads`` and validated exactly like our YAML files.

The same layout is what RL stacks load an identified servo from: the reference's
``bam.model.load_model`` (better-actuator-models 1.0.2), which Isaac Lab's
``BamActuatorCfg`` and mjlab's BAM actuator call. ``load_model_from_dict`` there
builds ``models[data["model"]]`` on ``actuators[data["actuator"]]`` and copies
every key that names one of the model's ``Parameter`` attributes (motor: kt, R,
armature, and on the STS3215 error_gain_ratio and max_velocity; q_offset; the
friction parameters of M1..M6); other keys are ignored silently, so
:func:`parameters_to_json` refuses what would be lost instead. Their registry
has the STS3215 at 7.4 V only: a 12 V set exports as ``sts3215`` with a
``"vin": 12.0`` key, which tells it apart on import here; the reference ignores it,
so its readers must be given the 12 V supply themselves.
"""

from __future__ import annotations

import json

from bam_sim.common.errors import BamError
from bam_sim.models.model_registry import BAM_MODELS
from bam_sim.models.parameter_set import ParameterSet, required_names
from bam_sim.models.servo.actuators import get_actuator

# The actuator names of the reference's registry (bam/actuators.py of
# better-actuator-models 1.0.2); only these load there.
REFERENCE_ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "xl330i", "erob80_100",
                       "erob80_50", "sts3215", "unitree_go1")
# Actuator names of the authors' files that are another name here: the 12 V STS3215 set of
# their branch add_sts3215_12v_params names an actuator their registry does not have.
_ACTUATOR_NAMES = {"sts321512v": "sts3215_12v"}
# The same law at another supply: the reference's actuator of the same servo, and the
# supply ("vin", which the reference's loader ignores) that tells them apart here.
_EXPORT_NAMES = {"sts3215_12v": "sts3215"}
_SUPPLIES = {("sts3215", 7.4): "sts3215", ("sts3215", 12.0): "sts3215_12v"}
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
    values = {k: v for k, v in doc.items() if k not in ("actuator", "model", "vin")}
    actuator = _actuator_of(doc, where)
    # What a file identified before a parameter existed leaves at the reference's start.
    for name, value in get_actuator(actuator).legacy_defaults.items():
        values.setdefault(name, value)
    provenance = {"source": "legacy BAM JSON", "imported_from": where}
    return ParameterSet.build(actuator, doc["model"], values, provenance, where)


def _actuator_of(doc: dict, where: str) -> str:
    """Our actuator name for a file's "actuator" (and "vin", where a supply tells it)."""
    actuator = _ACTUATOR_NAMES.get(doc["actuator"], doc["actuator"])
    if "vin" not in doc:
        return actuator
    supplies = {v: name for (a, v), name in _SUPPLIES.items() if a == actuator}
    vin = doc["vin"]
    if vin not in supplies:
        known = " and ".join(f"{v:g} V" for v in supplies) or "none"
        raise BamError(f"{where}: no {actuator} at vin = {vin!r} V here (known: {known}); "
                       "remove \"vin\" or fix it")
    return supplies[vin]


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
    doc["actuator"] = _EXPORT_NAMES.get(params.actuator, params.actuator)
    if params.actuator in _EXPORT_NAMES:
        doc["vin"] = params.actuator_def.supply_voltage
    return json.dumps(doc, indent=4) + "\n"


def _check_exportable(params: ParameterSet) -> None:
    act, mdl = params.actuator_def, params.model_def
    what = f"{act.name} {mdl.name}"
    if _EXPORT_NAMES.get(act.name, act.name) not in REFERENCE_ACTUATORS:
        raise BamError(f"actuator {act.name} has no BAM JSON counterpart (its readers know "
                       f"{', '.join(REFERENCE_ACTUATORS)}); export it as a MuJoCo dcmotor "
                       "MJCF instead")
    if mdl.name not in BAM_MODELS:
        raise BamError(f"model {mdl.name} ({what}) has no BAM JSON counterpart (its readers "
                       f"know {', '.join(BAM_MODELS)}); fit one of those to export it")
    if params.groups:
        raise BamError(f"the optional group{'s' if len(params.groups) > 1 else ''} "
                       f"{', '.join(params.groups)} of this {what} set have no BAM JSON "
                       "counterpart; fit without --groups, or export as a MuJoCo dcmotor MJCF")
    for name, value in act.fixed.items():
        # constants the reference hard-codes (the eRob's 12 A) rather than reads
        if name not in _REFERENCE_COMMON and params.values[name] != value:
            raise BamError(f"{name} = {params.values[name]:g} in this {what} set, but BAM "
                           f"JSON readers fix it at {value:g}; set it back to export")
