"""Bench composition: launch arguments -> the nodes to start and their parameters.

The single reader of ``config/bench.yaml``. ``launch/bench.launch.py`` turns
its result into ``launch_ros`` Node actions; the in-process runner builds the
same nodes in one process. No ROS import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bam_sim.errors import BamError

CONFIG = Path(__file__).resolve().parent.parent / "config" / "bench.yaml"


@dataclass(frozen=True)
class Argument:
    name: str
    default: object
    description: str
    sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSpec:
    name: str
    package: str
    executable: str
    parameters: dict = field(default_factory=dict)


def config_path() -> Path:
    """The bench configuration: installed share folder, else the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("bam_bringup")) / "config" / "bench.yaml"
        if installed.is_file():
            return installed
    except (ImportError, LookupError, ValueError):
        pass
    return CONFIG


def load_config(path: Path | None = None) -> dict:
    path = path or config_path()
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BamError(f"cannot read the bench configuration {path}: "
                       f"{str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        raise BamError(f"{path} must hold 'arguments' and 'nodes' mappings")
    return doc


def arguments(config: dict | None = None) -> dict[str, Argument]:
    config = config or load_config()
    return {name: Argument(name, spec.get("default", ""), spec.get("description", ""),
                           tuple(spec.get("sets", ())))
            for name, spec in (config.get("arguments") or {}).items()}


def typed(value: object, like: object, name: str) -> object:
    """A launch argument's string as the type of its default (parsed, never evaluated)."""
    if not isinstance(value, str) or isinstance(like, str):
        return value
    try:
        parsed = yaml.safe_load(value) if value.strip() else like
    except yaml.YAMLError:
        parsed = value
    if isinstance(like, bool):
        if not isinstance(parsed, bool):
            raise BamError(f"argument {name}:={value} must be true or false")
        return parsed
    if isinstance(like, (int, float)):
        if isinstance(parsed, bool) or not isinstance(parsed, (int, float)):
            raise BamError(f"argument {name}:={value} must be a number")
        return float(parsed) if isinstance(like, float) else parsed
    return parsed


def compose(values: dict[str, object] | None = None, config: dict | None = None) -> list[NodeSpec]:
    """The nodes the bench starts for these argument values (others take defaults)."""
    config = config or load_config()
    args = arguments(config)
    unknown = sorted(set(values or {}) - set(args))
    if unknown:
        raise BamError(f"unknown bench argument {unknown[0]}; known: {', '.join(args)}")
    chosen = {name: typed((values or {}).get(name, a.default), a.default, name)
              for name, a in args.items()}
    if chosen.get("sim") is False:
        raise BamError("sim:=false needs the hardware drivers of bam_drivers, not part of this "
                       "version yet; run with sim:=true")
    specs = []
    for name, node in config["nodes"].items():
        if not all(_holds(cond, chosen) for cond in node.get("when", [])):
            continue
        parameters = dict(node.get("parameters") or {})
        for arg, value in chosen.items():
            for target in args[arg].sets:
                node_name, _, parameter = target.partition(".")
                if node_name == name and not (value == "" and isinstance(value, str)):
                    parameters[parameter] = value
        specs.append(NodeSpec(name, node["package"], node["executable"], parameters))
    return specs


def _holds(condition: str, values: dict[str, object]) -> bool:
    negated = condition.startswith("!")
    value = bool(values.get(condition.lstrip("!")))
    return not value if negated else value
