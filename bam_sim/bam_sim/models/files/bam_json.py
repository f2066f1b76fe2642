"""BAM JSON: the parameter files of the reference implementation, read and written.

Parameter files there are one flat JSON object: each parameter by the names of
``reference/identified-parameters.md`` plus ``"model"`` and ``"actuator"``.
They are read with ``json.loads`` and validated exactly like our YAML files.

Two readers load an identified servo from this layout, and the file is written for both:

* BAM itself: ``bam.model.load_model`` (Rhoban/bam ``bam/model.py``, read at commit
  17d9addc7825539b7ef224228e0d51ab81b64bc0), which BAM's mjlab actuator calls.
  ``load_model_from_dict`` builds ``models[data["model"]]`` on
  ``actuators[data["actuator"]]`` and copies every key that names one of the model's
  ``Parameter`` attributes: kt, R, armature, q_offset, ``command_delay`` (s, the delay
  of the goal positions: our ``latency.command``), the STS3215's ``error_gain_ratio``
  and ``max_velocity``, the friction parameters of M1..M6. Other keys are ignored
  silently. PyPI's ``better-actuator-models`` 1.0.2 is older: no ``command_delay``, no
  ``waveshare_st3025``.
* Isaac Lab's ``BamActuatorCfg`` (Newton ``DriveBam``): ``BamMotorParams.from_json``
  (isaac-sim/IsaacLab ``source/isaaclab/isaaclab/actuators/bam_model.py``, read at
  commit 82c9059eacf0daf4429f12a6e783b409b55b6b02) also requires the constants BAM
  keeps in code: ``error_gain``, ``max_pwm``, ``max_current`` (null: no limit), ``kp``
  and ``vin`` (:func:`law_constants`), and knows m1, m2, m5 and m6 only. Its law is
  the voltage law without the STS firmware's ratio and target slew. ``target=
  "isaaclab"`` writes an M3 or M4 set as its exact M5
  (:mod:`bam_sim.models.bam.equivalence`) and refuses what that law cannot run. A servo
  with a fitted ``error_gain_ratio`` and no slew (the ST3025) is written with
  ``error_gain`` = duty gain × ratio, the same duty; reading such a file back here
  recovers the ratio.

Every file carries the law's constants and ``kp``, the gain the set is meant for; a
set read from a file keeps that gain in its provenance (``provenance.kp``), so a round
trip writes it again. BAM's registry has the STS3215 at 7.4 V only: a 12 V set
exports as ``sts3215`` with ``"vin": 12.0``, which tells it apart on import here; the
reference ignores it, so its readers must be given the 12 V supply themselves.

The supply group travels under its own names (``supply.resistance``,
``supply.min_voltage``), which our importer reads back and no reader applies: the RL
stacks take a sag as an option of their actuator config (``export --randomization``
writes its range). What each reader will not apply of a file is one table,
:data:`READERS` (:func:`not_applied`); the file says it under ``"not_applied"``, a key
every reader skips (each keeps the keys it knows).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models.bam.equivalence import EQUIVALENT, as_directional
from bam_sim.models.model_registry import BAM_MODELS, get_model
from bam_sim.models.parameter_set import ParameterSet, required_names
from bam_sim.models.servo.actuator import VOLTAGE, Actuator
from bam_sim.models.servo.actuators import ACTUATORS, get_actuator

# The actuator names of the reference's registry (bam/actuators.py of
# better-actuator-models 1.0.2); only these load there.
REFERENCE_ACTUATORS = ("mx64", "mx106", "xl320", "xl330", "xl330i", "erob80_100",
                       "erob80_50", "sts3215", "unitree_go1")
# Actuators upstream's registry gained later, with where: they load on its main only.
# Actuators here whose name BAM knows under another law: not exported under it.
OTHER_LAWS = {"xl330_current": "BAM's xl330i runs another current law: an error gain of "
                               "0.01 A and the bus current's torque"}
LATER_ACTUATORS = {"waveshare_st3025": "Rhoban/bam pull request #12 (commit 27f3fa5)"}
# Actuator names of the authors' files that are another name here: the 12 V STS3215 set of
# their branch add_sts3215_12v_params names an actuator their registry does not have; the
# Waveshare ST3025 is waveshare_st3025 there.
_ACTUATOR_NAMES = {"sts321512v": "sts3215_12v", "waveshare_st3025": "st3025"}
# The name a set of ours is written under: the same law at another supply is the
# reference's actuator of the same servo ("vin" then tells them apart here).
_EXPORT_NAMES = {"sts3215_12v": "sts3215", "st3025": "waveshare_st3025"}
# Parameter attributes every reference model has besides its friction ones
# (Model.set_actuator and the actuators' initialize()).
_REFERENCE_COMMON = ("kt", "R", "armature", "q_offset")
# The latency group's parameter that BAM calls command_delay (Model.set_actuator).
COMMAND_DELAY = "command_delay"
_DELAY = "latency.command"
# Keys of a file that are no parameter of the set: what it is, the law's constants, and
# what each reader does not apply.
_LAW_KEYS = ("error_gain", "max_pwm", "max_current", "vin")
NOT_APPLIED = "not_applied"
_NOT_VALUES = ("actuator", "model", "kp", COMMAND_DELAY, NOT_APPLIED) + _LAW_KEYS
# The optional groups a file carries: the latency's command delay as BAM's command_delay,
# the supply and the backlash under our names (for our importer; no reader applies them).
_GROUPS_CARRIED = ("latency", "supply", "backlash")
_OUR_NAMES = ("supply.", "backlash.")
# Who a file is written for: BAM (every model) or Isaac Lab's BamMotorParams.
BAM, ISAACLAB = "bam", "isaaclab"
TARGETS = (BAM, ISAACLAB)
ISAACLAB_MODELS = ("m1", "m2", "m5", "m6")  # bam_model.py's _BAM_MODEL_FLAGS


# -- the readers, and what each does not apply of a file ----------------------------------

ALWAYS = None  # the reader drops the key, whatever its value
IN_CODE = "in code"  # the reader uses its own actuator's constant, not the file's


@dataclass(frozen=True)
class Reader:
    """A program that loads BAM JSON and what of a file it does not apply.

    ``ignores``: key -> (what the reader applies instead, what to do about it): a
    value, :data:`ALWAYS` or :data:`IN_CODE`; the key is lost where the file's value is
    another. ``models``, ``actuators`` (None: any) and ``requires`` (keys it fails
    without): what it can load at all."""

    title: str
    ignores: dict[str, tuple[object, str]]
    models: tuple[str, ...]
    actuators: tuple[str, ...] | None
    requires: tuple[str, ...]
    fix: str  # what to do when it has not the file's model or actuator


_OUR_GROUPS = {
    "supply.resistance": (0.0, "the supply's sag is an option of the reader's actuator "
                               "config: export --randomization writes its range"),
    "supply.min_voltage": (0.0, "the sag's floor is vin_min of the reader's actuator config "
                                "(export --randomization)"),
    "backlash.width": (0.0, "its joint has no dead band between the motor and the output: "
                            "bam_sim's bench and arm simulate it")}
_BAM_CODE = {"kp": (ALWAYS, "give the gain to the actuator config (BamActuatorCfg)"),
             "vin": (IN_CODE, "give the supply to the actuator config"),
             **{key: (IN_CODE, "BAM keeps the firmware's constants in code: the file is "
                               "Isaac Lab's (--for isaaclab), export --for bam for BAM")
                for key in ("error_gain", "max_pwm", "max_current")},
             **_OUR_GROUPS}
# The readers of the consumers table (DESIGN.md), as read at the commits named in the
# module docstring; BAM 1.0.2 as benchmarks/bam_json_export.py runs it.
READERS = (
    Reader("BAM load_model (Rhoban/bam 17d9addc) and its mjlab BamActuatorCfg", _BAM_CODE,
           BAM_MODELS, REFERENCE_ACTUATORS + tuple(LATER_ACTUATORS), (),
           "export it as dcmotor-mjcf"),
    Reader("BAM 1.0.2 (PyPI) load_model and its mjlab BamActuatorCfg", _BAM_CODE | {
        COMMAND_DELAY: (0.0, "1.0.2 predates it (Rhoban/bam 31e5b97): install BAM from "
                             "its repository")},
           BAM_MODELS, REFERENCE_ACTUATORS, (), "install BAM from its repository"),
    Reader("Isaac Lab BamActuatorCfg (BamMotorParams.from_json, IsaacLab 82c9059)", {
        "q_offset": (0.0, "a bench's mounting offset: the robot's joint has its own zero"),
        COMMAND_DELAY: (0.0, "give it as min_delay/max_delay in physics steps (export "
                             "--randomization)"),
        "error_gain_ratio": (1.0, "its law has no ratio: export --for isaaclab folds it into "
                                  "error_gain"),
        "max_velocity": (math.inf, "its law has no firmware target slew: use BAM's mjlab "
                                   "actuator or dcmotor-mjcf"),
        **_OUR_GROUPS},
           ISAACLAB_MODELS, None, _LAW_KEYS + ("kp",),
           "export --for isaaclab, or as dcmotor-mjcf"),
)


def not_applied(doc: dict) -> dict[str, list[str]]:
    """Per reader of :data:`READERS` (its title), what it will not apply of the BAM JSON
    ``doc``: one line per key, or the one reason it cannot load the file at all."""
    return {reader.title: _cannot_load(reader, doc) or _lost(reader, doc)
            for reader in READERS}


def _cannot_load(reader: Reader, doc: dict) -> list[str]:
    missing = [key for key in reader.requires if key not in doc]
    if doc["model"] not in reader.models:
        problem = f"model {doc['model']} is not one of its {', '.join(reader.models)}"
    elif reader.actuators is not None and doc["actuator"] not in reader.actuators:
        problem = f"it has no actuator {doc['actuator']}"
    elif missing:
        return [f"cannot load it: the file has no {', '.join(missing)}, which its law needs "
                f"and the {doc['actuator']}'s has not; export it as dcmotor-mjcf"]
    else:
        return []
    return [f"cannot load it: {problem}; {reader.fix}"]


def _lost(reader: Reader, doc: dict) -> list[str]:
    code = law_constants(get_actuator(_ACTUATOR_NAMES.get(doc["actuator"], doc["actuator"])))
    lost = []
    for key, (instead, remedy) in reader.ignores.items():
        if key not in doc:
            continue
        value = doc[key]
        applied = code.get(key) if instead == IN_CODE else instead
        if instead is ALWAYS or not _same_constant(value, applied, key):
            shown = f"{value:.6g}" if isinstance(value, float) else json.dumps(value)
            lost.append(f"{key} = {shown}: {remedy}")
    return lost


def law_constants(actuator: Actuator) -> dict[str, float | None]:
    """The constants of ``actuator``'s control law under BAM's key names.

    ``vin`` is the supply; the voltage law adds its duty gain (``error_gain``), PWM
    limit (``max_pwm``) and firmware current limit (``max_current``, None: none).
    """
    constants: dict[str, float | None] = {"vin": actuator.supply_voltage}
    if actuator.family == VOLTAGE:
        constants |= {"error_gain": actuator.duty_gain, "max_pwm": actuator.max_duty,
                      "max_current": actuator.firmware_current_limit or None}
    return constants


def parameters_from_json(text: str, where: str = "<string>") -> ParameterSet:
    """Parse a BAM JSON parameter file into a ParameterSet."""
    doc = _document(text, where)
    actuator = get_actuator(_actuator_of(doc, where))
    _check_law(doc, actuator, where)
    values = {k: v for k, v in doc.items() if k not in _NOT_VALUES}
    values |= _delay_of(doc, where) | _ratio_of(doc, actuator, where)
    # What a file identified before a parameter existed leaves at the reference's start.
    for name, value in actuator.legacy_defaults.items():
        values.setdefault(name, value)
    provenance: dict[str, object] = {"source": "legacy BAM JSON", "imported_from": where}
    if "kp" in doc:
        provenance["kp"] = _gain(doc["kp"], f"\"kp\" in {where}")
    return ParameterSet.build(actuator, get_model(doc["model"]), values, provenance, where)


def _document(text: str, where: str) -> dict:
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
    return doc


def _actuator_of(doc: dict, where: str) -> str:
    """Our actuator name for a file's "actuator" (and "vin", where a supply tells it)."""
    raw = doc["actuator"]
    actuator = _ACTUATOR_NAMES.get(raw, raw)
    if "vin" not in doc:
        return actuator
    supplies = {a.supply_voltage: a.name for a in ACTUATORS.values()
                if actuator == a.name or _EXPORT_NAMES.get(a.name, a.name) == raw}
    vin = number(doc["vin"], f"\"vin\" in {where}")
    if vin not in supplies:
        known = " and ".join(f"{v:g} V" for v in supplies) or "none"
        raise BamError(f"{where}: no {actuator} at vin = {vin!r} V here (known: {known}); "
                       "remove \"vin\" or fix it")
    return supplies[vin]


def _check_law(doc: dict, actuator: Actuator, where: str) -> None:
    """A file's firmware constants must be the law's here: they are the servo's, not fitted.

    The one exception is Isaac Lab's file of a servo with a fitted ``error_gain_ratio``:
    there ``error_gain`` is the product (:func:`_fold_gain_ratio`), read back as the ratio.
    """
    constants = law_constants(actuator)
    if _folded_ratio(doc, actuator):
        constants["error_gain"] = number(doc["error_gain"], f"\"error_gain\" in {where}")
    for key in (k for k in _LAW_KEYS if k in doc and k != "vin"):
        if key not in constants:
            raise BamError(f"{where}: \"{key}\" is no constant of the {actuator.name}'s "
                           "current law here; remove it")
        if not _same_constant(doc[key], constants[key], f"\"{key}\" in {where}"):
            raise BamError(f"{where}: \"{key}\" = {doc[key]!r}, but the {actuator.name}'s "
                           f"firmware here has {json.dumps(constants[key])}; fix the file or "
                           "its \"actuator\"")


def _same_constant(given: object, own: float | None, name: str) -> bool:
    """The same constant, to the digits a file may round it to (None: no limit)."""
    if given is None or own is None:
        return given is own
    return math.isclose(number(given, name), own, rel_tol=1e-9)


def _folded_ratio(doc: dict, actuator: Actuator) -> bool:
    """A file whose error_gain carries the servo's fitted ratio (Isaac Lab's, written here)."""
    return ("error_gain_ratio" in actuator.motor_bounds and "error_gain_ratio" not in doc
            and "error_gain" in doc and "max_velocity" not in actuator.motor_bounds)


def _ratio_of(doc: dict, actuator: Actuator, where: str) -> dict[str, float]:
    if not _folded_ratio(doc, actuator):
        return {}
    gain = number(doc["error_gain"], f"\"error_gain\" in {where}", low=0.0, low_open=True)
    return {"error_gain_ratio": gain / actuator.duty_gain}


def _delay_of(doc: dict, where: str) -> dict[str, float]:
    """BAM's command_delay as our latency group (none where it is 0)."""
    if COMMAND_DELAY not in doc:
        return {}
    delay = number(doc[COMMAND_DELAY], f"\"{COMMAND_DELAY}\" in {where}", low=0.0)
    return {_DELAY: delay} if delay > 0.0 else {}


def _gain(value: object, name: str) -> float:
    return number(value, name, low=0.0, low_open=True)


def parameters_to_json(params: ParameterSet, kp: float | None = None,
                       target: str = BAM) -> str:
    """A BAM JSON parameter file of ``params`` for ``target`` (module docstring).

    ``kp`` is the gain the set is meant for: by default the one the set was read with,
    else the actuator's default gain (its second Table I gain, as every tool here).
    Raises a one-line BamError for a set the target cannot hold (another actuator or
    model family, DC-motor groups but the latency and supply, a fixed constant it hard-codes
    at another value). The file names, per reader, what that reader will not apply.
    """
    _check_exportable(params)
    if target == ISAACLAB:
        params = _for_isaaclab(params)
    act, mdl = params.actuator, params.model
    names = [n for n in _REFERENCE_COMMON if n in params.values]
    names += [n for n in required_names(act, mdl) if n not in names]
    doc: dict[str, object] = {n: float(params.values[n]) for n in names}
    doc[COMMAND_DELAY] = float(params.values.get(_DELAY, 0.0))
    doc |= {n: float(v) for n, v in params.values.items() if n.startswith(_OUR_NAMES)}
    doc |= law_constants(act)
    if target == ISAACLAB:
        _fold_gain_ratio(doc)
    doc["kp"] = _gain(kp, "kp") if kp is not None else _default_gain(params)
    doc["model"] = mdl.name
    doc["actuator"] = _EXPORT_NAMES.get(act.name, act.name)
    lost = {title: lines for title, lines in not_applied(doc).items() if lines}
    if lost:
        doc[NOT_APPLIED] = lost
    return json.dumps(doc, indent=4) + "\n"


def _fold_gain_ratio(doc: dict[str, object]) -> None:
    """Isaac Lab's law has no error_gain_ratio: its duty kp·error_gain·e carries it exactly."""
    ratio = doc.pop("error_gain_ratio", None)
    if ratio is not None:
        doc["error_gain"] = float(doc["error_gain"]) * float(ratio)


def _default_gain(params: ParameterSet) -> float:
    """The gain of the file the set was read from, else the actuator's default gain."""
    if "kp" in params.provenance:
        return _gain(params.provenance["kp"], "provenance.kp of the set")
    return float(params.actuator.gains[1])


def has_counterpart(actuator: Actuator) -> bool:
    """Whether BAM's readers know ``actuator`` (and run its law)."""
    return (actuator.name not in OTHER_LAWS and _EXPORT_NAMES.get(actuator.name, actuator.name)
            in REFERENCE_ACTUATORS + tuple(LATER_ACTUATORS))


def _check_exportable(params: ParameterSet) -> None:
    act, mdl = params.actuator, params.model
    what = f"{act.name} {mdl.name}"
    if not has_counterpart(act):
        known = REFERENCE_ACTUATORS + tuple(LATER_ACTUATORS)
        why = OTHER_LAWS.get(act.name, f"its readers know {', '.join(known)}")
        raise BamError(f"actuator {act.name} has no BAM JSON counterpart ({why}); export it "
                       "as a MuJoCo dcmotor MJCF instead")
    if mdl.name not in BAM_MODELS:
        raise BamError(f"model {mdl.name} ({what}) has no BAM JSON counterpart (its readers "
                       f"know {', '.join(BAM_MODELS)}); fit one of those to export it")
    _check_groups(params, what)
    for name, value in act.fixed.items():
        # constants the reference hard-codes (the eRob's 12 A) rather than reads
        if name not in _REFERENCE_COMMON and params.values[name] != value:
            raise BamError(f"{name} = {params.values[name]:g} in this {what} set, but BAM "
                           f"JSON readers fix it at {value:g}; set it back to export")


def _check_groups(params: ParameterSet, what: str) -> None:
    """The latency group travels as command_delay (its reading delay cannot), the supply
    under its own names (:data:`_GROUPS_CARRIED`)."""
    groups = [g for g in params.groups if g not in _GROUPS_CARRIED]
    if groups:
        raise BamError(f"the optional group{'s' if len(groups) > 1 else ''} "
                       f"{', '.join(groups)} of this {what} set have no BAM JSON "
                       f"counterpart (it carries {' and '.join(_GROUPS_CARRIED)}); fit "
                       f"without --groups {' '.join(groups)}, or export as a MuJoCo dcmotor "
                       "MJCF")
    reading = params.values.get("latency.reading", 0.0)
    if reading != 0.0:
        raise BamError(f"latency.reading = {reading:g} s in this {what} set, but BAM JSON has "
                       "only the commands' delay (command_delay); on a bench only the sum "
                       "shows: add it to latency.command and set latency.reading to 0")


def _for_isaaclab(params: ParameterSet) -> ParameterSet:
    """``params`` as Isaac Lab's BamMotorParams reads it, or a one-line refusal."""
    act = params.actuator
    if act.family != VOLTAGE:
        raise BamError(f"Isaac Lab's BAM actuator runs the PWM voltage law only, not the "
                       f"{act.name}'s current law; export it --for {BAM} or as dcmotor-mjcf")
    if "max_velocity" in params.values:
        raise BamError(f"Isaac Lab's BAM actuator has no firmware target slew (max_velocity) "
                       f"nor error_gain_ratio, which the {act.name}'s law has; export it "
                       f"--for {BAM} (BAM and its mjlab actuator read them) or as dcmotor-mjcf")
    if params.model.name in ISAACLAB_MODELS:
        return params
    if params.model not in EQUIVALENT:
        raise BamError(f"Isaac Lab's BAM actuator has no model {params.model.name}: it supports "
                       f"{', '.join(ISAACLAB_MODELS)}; fit one of those or export --for {BAM}")
    return as_directional(params)
