"""Composition: launch arguments -> the nodes to start and their parameters.

The single reader of the configurations in ``config/`` (``bench.yaml``: the
pendulum bench; ``arm.yaml``: the 2R arm). A launch file
(``launch/bench.launch.py``, ``launch/arm.launch.py``) turns the result into
``launch_ros`` Node actions; the in-process runner (``bench serve --config
NAME``) builds the same nodes in one process. No ROS import here.

A configuration holds:

* ``arguments``: name -> ``default``, ``description``, optional ``type`` and
  ``sets`` (node parameters ``node.parameter`` the argument's value goes to;
  an empty string or list keeps the node's own default). Launch arguments
  arrive as strings and are typed (parsed, never evaluated): like the default,
  or by ``type``: ``bool``, ``int``, ``float``, ``string``, or the lists
  ``strings``, ``floats``, ``ints`` — written ``a,b`` or ``[a, b]``;
* ``nodes``: name -> ``package``, ``executable``, fixed ``parameters`` and
  ``when``, the conditions that select the node; ``process: true`` marks a
  plain executable (not a ROS node, e.g. a hardware emulator) that gets its
  parameters as command-line options (:func:`command_line`);
* ``refuse`` (optional): combinations of values that are errors, each
  ``when`` (conditions) and ``message`` (the one-line error, naming the fix).

A condition is ``name`` (the value is true: a true bool, a non-empty string or
list), ``!name`` (false), ``name=value`` or ``name!=value`` (compared as text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bam_sim.common.errors import BamError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
CONFIG = CONFIG_DIR / "bench.yaml"
TYPES = ("bool", "int", "float", "string", "strings", "floats", "ints")
_SCALARS = {"bool": bool, "int": int, "float": float, "string": str}


@dataclass(frozen=True)
class Argument:
    name: str
    default: object
    description: str
    sets: tuple[str, ...] = ()
    type: str = "string"


@dataclass(frozen=True)
class NodeSpec:
    name: str
    package: str
    executable: str
    parameters: dict = field(default_factory=dict)
    process: bool = False  # a plain executable, parameters as options (command_line)
    ready: str = ""  # process: the stdout line prefix that says it serves ("" = do not wait)


def config_path(name: str | Path = "bench") -> Path:
    """A configuration: a file path, or a name (installed share folder, else source tree)."""
    text = str(name)
    if text.endswith((".yaml", ".yml")) or "/" in text:
        return Path(text)
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("bam_bringup")) / "config" / f"{text}.yaml"
        if installed.is_file():
            return installed
    except (ImportError, LookupError, ValueError):
        pass
    return CONFIG_DIR / f"{text}.yaml"


def load_config(path: str | Path | None = None) -> dict:
    """A configuration by name or path (default: the bench); ``name`` is its file stem."""
    path = config_path(path or "bench")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")
                                 if "\nnodes:" in p.read_text(encoding="utf-8")))
        raise BamError(f"cannot read the configuration {path}: {str(exc).splitlines()[0]} "
                       f"(known names: {known})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise BamError(f"{path} must hold 'arguments' and 'nodes' mappings")
    return {"name": path.stem, **doc}


def _config(config: dict | str | Path | None) -> dict:
    return config if isinstance(config, dict) else load_config(config)


def arguments(config: dict | str | Path | None = None) -> dict[str, Argument]:
    config = _config(config)
    result = {}
    for name, spec in (config.get("arguments") or {}).items():
        default = spec.get("default", "")
        kind = spec.get("type") or _type_of(default)
        if kind not in TYPES:
            raise BamError(f"argument {name} of the {config.get('name')} configuration has "
                           f"type {kind!r}; use one of {', '.join(TYPES)}")
        result[name] = Argument(name, typed(default, None, name, kind), spec.get("description", ""),
                                tuple(spec.get("sets", ())), kind)
    return result


def _type_of(default: object) -> str:
    for kind, cls in (("bool", bool), ("int", int), ("float", float)):
        if isinstance(default, cls):
            return kind
    if isinstance(default, list):
        return "floats" if any(isinstance(v, float) for v in default) else \
            "ints" if default and all(isinstance(v, int) for v in default) else "strings"
    return "string"


def typed(value: object, like: object, name: str, kind: str | None = None) -> object:
    """A launch argument's string as its type (``kind``, else that of ``like``), parsed."""
    kind = kind or _type_of(like)
    if kind.endswith("s") and kind != "string":  # a list
        return _typed_list(value, kind[:-1], name)
    if not isinstance(value, str) or kind == "string":
        return value
    try:
        parsed = yaml.safe_load(value) if value.strip() else like
    except yaml.YAMLError:
        parsed = value
    return _scalar(parsed, kind, f"argument {name}:={value}")


def _scalar(parsed: object, kind: str, where: str) -> object:
    if kind == "string":
        return "" if parsed is None else str(parsed)
    if kind == "bool":
        if not isinstance(parsed, bool):
            raise BamError(f"{where} must be true or false")
        return parsed
    if isinstance(parsed, bool) or not isinstance(parsed, (int, float)):
        raise BamError(f"{where} must be a number")
    if kind == "int":
        if float(parsed) != int(parsed):
            raise BamError(f"{where} must be a whole number")
        return int(parsed)
    return float(parsed)


def _typed_list(value: object, kind: str, name: str) -> list:
    """``a,b`` or ``[a, b]`` (or a list) as a list of ``kind``; "" is the empty list."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                items = yaml.safe_load(text)
            except yaml.YAMLError:
                raise BamError(f"argument {name}:={value} is not a list; write a,b or "
                               "[a, b]") from None
        else:
            items = [item.strip() for item in text.split(",")] if text else []
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif value is None:
        items = []
    else:
        items = [value]
    if not isinstance(items, list):
        raise BamError(f"argument {name}:={value} is not a list; write a,b or [a, b]")
    result = []
    for item in items:
        parsed = item
        if isinstance(item, str) and kind != "string":
            try:
                parsed = yaml.safe_load(item) if item else item
            except yaml.YAMLError:
                parsed = item
        result.append(_scalar(parsed, kind, f"entry {item!r} of argument {name}"))
    return result


def launch_default(argument: Argument) -> str:
    """The default of ``argument`` as a launch argument string that types back to it."""
    value = argument.default
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def compose(values: dict[str, object] | None = None,
            config: dict | str | Path | None = None) -> list[NodeSpec]:
    """The nodes a configuration starts for these argument values (others take defaults)."""
    config = _config(config)
    args = arguments(config)
    unknown = sorted(set(values or {}) - set(args))
    if unknown:
        raise BamError(f"unknown {config.get('name', 'bench')} argument {unknown[0]}; known: "
                       f"{', '.join(args)}")
    chosen = {name: typed((values or {}).get(name, a.default), a.default, name, a.type)
              for name, a in args.items()}
    for refusal in config.get("refuse") or []:
        if all(_holds(cond, chosen) for cond in refusal.get("when", [])):
            raise BamError(str(refusal["message"]))
    specs = []
    for name, node in config["nodes"].items():
        if not all(_holds(cond, chosen) for cond in node.get("when", [])):
            continue
        parameters = dict(node.get("parameters") or {})
        for arg, value in chosen.items():
            for target in args[arg].sets:
                node_name, _, parameter = target.partition(".")
                if node_name == name and value not in ("", []):
                    parameters[parameter] = value
        specs.append(NodeSpec(name, node["package"], node["executable"], parameters,
                              bool(node.get("process", False)), str(node.get("ready", ""))))
    return specs


def command_line(spec: NodeSpec) -> list[str]:
    """The options of a process: ``--name-with-dashes value`` (lists: several values)."""
    options = []
    for name, value in spec.parameters.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            options += [flag] if value else []
        elif isinstance(value, (list, tuple)):
            options += [flag, *(str(v) for v in value)]
        else:
            options += [flag, str(value)]
    return options


def _holds(condition: str, values: dict[str, object]) -> bool:
    for operator, wanted in (("!=", False), ("=", True)):
        name, sep, literal = condition.partition(operator)
        if sep:
            return (_text(values.get(name.strip())) == literal.strip()) == wanted
    negated = condition.startswith("!")
    value = bool(values.get(condition.lstrip("!")))
    return not value if negated else value


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
