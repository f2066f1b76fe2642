"""Parameter files: the one loader and writer used everywhere.

The native format is a ROS 2 parameter file, so the same file configures a
simulation node with ``--params-file`` and is read here without ROS::

    /**:
      ros__parameters:
        actuator: mx64
        model: m4
        kt: 1.66316
        ...
        provenance:            # nested: ROS parameters provenance.source, ...
          source: ...

A set of a servo declared in an actuator file (not a shipped one) refers to it with
``actuator_file: my_servo.yaml`` (relative to the parameter file's folder), which is read
with the set.

Legacy BAM JSON parameter files (the reference implementation's format) are
imported by :func:`load` too. Files are parsed with ``yaml.safe_load`` /
``json.load`` only; nothing read is ever evaluated.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import yaml

from bam_sim.common.errors import BamError
from bam_sim.common.input_files import parse_yaml_text, read_text
from bam_sim.common.numbers import number
from bam_sim.models.dcmotor.groups import INPUT_MODES, effective_constant, thermal_pair
from bam_sim.models.model_registry import BAM_PAPER, FrictionModel, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import DCMOTOR, Actuator
from bam_sim.models.servo.actuators import declare_file, get_actuator, law_siblings

PUBLISHED_CITATION = (
    "M. Duclusaud, G. Passault, V. Padois, O. Ly, 'Extended Friction Models for the "
    "Physics Simulation of Servo Actuators', parameter sets of the authors' open-source "
    "release (Apache-2.0)"
)
_META = ("actuator", "actuator_file", "model", "provenance")


def load(path: str | os.PathLike) -> ParameterSet:
    """Read a parameter file (ROS 2 YAML, or legacy BAM JSON) into a ParameterSet."""
    path = Path(path)
    text = read_text(path, "parameter file")
    if path.suffix.lower() == ".json":
        from bam_sim.models.files.bam_json import parameters_from_json

        return parameters_from_json(text, str(path))
    return parse_yaml(text, str(path), path.parent)


def parse_yaml(text: str, where: str = "<string>", folder: Path | None = None) -> ParameterSet:
    """Parse the text of a ROS 2 parameter file holding one parameter set."""
    doc = parse_yaml_text(text, where)
    return parse_mapping(_ros_parameters(doc, where), where, folder)


def parse_mapping(entries: Mapping[str, object], where: str,
                  folder: Path | None = None) -> ParameterSet:
    """One parameter set from the entries of a ``ros__parameters`` block: the one
    validation of a file read here and of a set given to a node as ROS parameters.

    Nested groups may come nested (``thermal: {resistance: ...}``, a file) or
    flattened with dots (``thermal.resistance``, ``provenance.source``: how rcl
    hands a file to a node). The set is complete or refused; a NaN, an unknown
    or misspelt name is refused (with the closest valid name). An ``actuator_file``
    (relative to ``folder``, else to the working directory) is declared first.
    """
    flat = _nest_provenance(dict(entries), where)
    if "actuator_file" in flat:
        _declare_referred(flat["actuator_file"], flat.get("actuator"), folder, where)
    for key in ("actuator", "model"):
        if not isinstance(flat.get(key), str):
            raise BamError(f"{where} has no '{key}' entry (e.g. {key}: "
                           f"{'mx64' if key == 'actuator' else 'm4'}); add it")
    provenance = flat.get("provenance", {})
    if not isinstance(provenance, dict):
        raise BamError(f"'provenance' in {where} must be a mapping")
    has_input, mode = "input" in flat, flat.pop("input", None)
    values = _flatten_groups({k: v for k, v in flat.items() if k not in _META}, where)
    params = ParameterSet.from_names(flat["actuator"], flat["model"], values, provenance, where)
    if has_input:  # checked on the actuator the set resolved
        _check_input(mode, params.actuator, flat["actuator"], where)
    return params


def _declare_referred(value: object, named: object, folder: Path | None, where: str) -> None:
    """Declare the actuator file a set refers to; it must declare the actuator it names."""
    if not isinstance(value, str) or not value.strip():
        raise BamError(f"'actuator_file' in {where} must be the path of an actuator file")
    path = Path(value).expanduser()
    declared = declare_file(path if path.is_absolute() or folder is None else folder / path)
    if declared.name != named:
        raise BamError(f"{where} names actuator '{named}' but its actuator_file {value} "
                       f"declares '{declared.name}'; make them agree")


def _nest_provenance(flat: dict, where: str) -> dict:
    """``provenance.source: x`` (as rcl flattens a file) back into ``provenance: {source: x}``."""
    dotted = sorted(k for k in flat if k.startswith("provenance."))
    if dotted and "provenance" in flat:
        raise BamError(f"{where} gives provenance twice (as a mapping and as "
                       f"{dotted[0]}); keep one")
    if dotted:
        flat["provenance"] = {k.removeprefix("provenance."): flat.pop(k) for k in dotted}
    return flat


def _check_input(value: object, actuator: Actuator, named: str, where: str) -> None:
    """``input`` (the dcmotor family's input mode): only ``position`` on the bench;
    ``named``: the actuator as the file names it."""
    if actuator.family != DCMOTOR:
        raise BamError(f"'input' in {where} is the input mode of the dcmotor family; "
                       f"{named} has its own control law, remove it")
    if value not in INPUT_MODES:
        raise BamError(f"input '{value}' in {where} is not supported: the bench commands goal "
                       "positions, so input is position (replay a recorded voltage with "
                       "--replay)")


def _flatten_groups(values: dict, where: str) -> dict:
    """Nested groups (``thermal: {resistance: ...}``) as ``thermal.resistance``, with the
    document's alternatives turned into what a set holds: ``motorconst: {Kt, Ke}`` into
    K = √(K_t K_e) and ``thermal.timeconst`` into the capacitance or resistance."""
    flat: dict = {}
    for key, value in values.items():
        if not isinstance(value, dict):
            flat[key] = value
            continue
        for sub, item in value.items():
            if isinstance(item, (dict, list)):
                raise BamError(f"'{key}.{sub}' in {where} must be a number")
            flat[f"{key}.{sub}"] = item
    kt_ke = {n: flat.pop(f"motorconst.{n}") for n in ("Kt", "Ke") if f"motorconst.{n}" in flat}
    if kt_ke:
        if "motorconst" in flat:
            raise BamError(f"{where} gives motorconst twice (as K and as Kt/Ke); keep one")
        kt, ke = (number(kt_ke.get(n, 0.0), f"motorconst.{n} in {where}") for n in ("Kt", "Ke"))
        flat["motorconst"] = effective_constant(kt, ke, f"motorconst in {where}")
    if "thermal.timeconst" in flat:
        tth = number(flat.pop("thermal.timeconst"), f"thermal.timeconst in {where}")
        rt, c = (number(flat.get(n, 0.0), f"{n} in {where}")
                 for n in ("thermal.resistance", "thermal.capacitance"))
        flat["thermal.resistance"], flat["thermal.capacitance"] = thermal_pair(
            rt, c, tth, f"group thermal in {where}")
    return flat


def _ros_parameters(doc: object, where: str) -> dict:
    """The ``ros__parameters`` mapping of the single node block of a file."""
    if not isinstance(doc, dict):
        raise BamError(f"{where} must hold a mapping '/**: ros__parameters: {{...}}'")
    blocks = [v["ros__parameters"] for v in doc.values()
              if isinstance(v, dict) and isinstance(v.get("ros__parameters"), dict)]
    if not blocks:
        if "ros__parameters" in doc and isinstance(doc["ros__parameters"], dict):
            return doc["ros__parameters"]
        raise BamError(f"{where} has no 'ros__parameters' block; "
                       "write it as '/**: ros__parameters: {actuator: ..., model: ..., ...}'")
    if len(blocks) == 1:
        return blocks[0]
    with_model = [b for b in blocks if "model" in b]
    if len(with_model) != 1:
        raise BamError(f"{where} must hold exactly one node block with a 'model' entry, "
                       f"found {len(with_model)}")
    return with_model[0]


def dump_yaml(params: ParameterSet, folder: Path | None = None) -> str:
    """Text of the ROS 2 parameter file for ``params``; a declared actuator's file is
    referred to relative to ``folder`` (the file's own), else by its absolute path."""
    body: dict[str, object] = {"actuator": params.actuator.name}
    if params.actuator.source:
        source = params.actuator.source
        body["actuator_file"] = os.path.relpath(source, folder) if folder else source
    body["model"] = params.model.name
    if params.actuator.family == DCMOTOR:
        body["input"] = INPUT_MODES[0]
    grouped: dict[str, dict[str, float]] = {}
    for name, value in params.values.items():
        head, dot, sub = name.partition(".")
        if dot:
            grouped.setdefault(head, {})[sub] = float(value)
        else:
            body[name] = float(value)
    body.update(grouped)  # nested groups after the plain values, as the document's attributes
    if params.provenance:
        body["provenance"] = _ros_safe(params.provenance)
    mdl = params.model
    paper = f" of {mdl.paper}" if mdl.paper != BAM_PAPER else ""
    header = (f"# BAM actuator parameters: {params.actuator.title}, friction model "
              f"{mdl.name} ({mdl.title}, equation {mdl.equation}{paper}).\n"
              "# SI units (REP-103). Load with bam_sim.models.files.parameter_file.load or as a "
              "ROS 2 --params-file.\n")
    return header + yaml.safe_dump({"/**": {"ros__parameters": body}}, sort_keys=False)


def save(params: ParameterSet, path: str | os.PathLike, overwrite: bool = False) -> Path:
    """Write ``params`` as a ROS 2 parameter file, atomically.

    An existing file is never replaced unless ``overwrite`` is true.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise BamError(f"{path} already exists; choose another path or allow overwriting "
                       "(--force)")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump_yaml(params, path.parent.resolve()))
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _ros_safe(value: object) -> object:
    """Provenance as values a ROS parameter can hold (str, int, float, bool, lists)."""
    if isinstance(value, Mapping):
        return {str(k): _ros_safe(v) for k, v in value.items()}
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    ):
        return [float(v) for v in value]
    return str(value)


def published(actuator: Actuator, model: FrictionModel) -> ParameterSet:
    """The published parameter set of ``model`` for ``actuator`` (shipped defaults)."""
    if model.elastoplastic or model.lugre:
        kind = "elasto-plastic models" if model.elastoplastic else "LuGre model"
        raise BamError(f"there is no published {model.name} set (the {kind} are "
                       "not part of the published release); give a parameter file, e.g. "
                       "one written by 'fit --models " + model.name + "'")
    name = f"{actuator.name}_{model.name}.yaml"
    folder = resources.files("bam_sim.models.files").joinpath("published")
    source = folder.joinpath(name)
    sibling = next((a for a in law_siblings(actuator)
                    if folder.joinpath(f"{a.name}_{model.name}.yaml").is_file()), None)
    if not source.is_file() and sibling is not None:
        # The same motor and gear train in another operating mode (the XL330's current-based
        # position mode): its published set under this actuator's law.
        base = published(sibling, model)
        return dataclasses.replace(base.on_actuator(actuator), provenance={
            **base.provenance, "law": f"{actuator.name}'s, on the published {sibling.name} set"})
    if not source.is_file():
        raise BamError(f"there is no published {model.name} set of {actuator.name} (the "
                       "published sets are M1..M6 of the MX, XL, eRob and STS3215 (7.4 V) "
                       "servos, M1 of the STS3215 at 12 V, M4 and M6 of the ST3025); give a "
                       "parameter file, e.g. one written by 'fit'")
    return parse_yaml(source.read_text(encoding="utf-8"), f"published/{name}")


def published_named(actuator: str, model: str) -> ParameterSet:
    """:func:`published` where a command line, a ROS parameter or a table names the actuator
    and the model: an unknown name is a one-line BamError."""
    return published(get_actuator(actuator), get_model(model))
