"""Typed compositions: launch arguments in, the nodes to start (with parameters) out.

A composition is a frozen dataclass of its launch arguments (each field a
default and a description, see :func:`argument`), a function from an instance
to the :class:`NodeSpec` list, and the :class:`Refusal` list of argument
combinations that cannot work. The in-process runner (``bench serve``) starts
what :meth:`Composition.compose` returns; the launch files declare the same
arguments and nodes in plain ROS 2 launch vocabulary, and
test_bringup_launch_agreement.py parses them to keep the two in agreement.

Launch arguments arrive as strings and are typed here by the field's
annotation (parsed, never evaluated): ``bool``, ``int``, ``float``, ``str`` or
a tuple of those, a list written ``a,b`` or ``[a, b]``; ``float | None`` (and
int) with the default None is a number that may be left out: "" keeps the
node's own default. No ROS import here.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from bam_sim.common.errors import BamError

_SCALARS = {bool: "bool", int: "int", float: "float", str: "string"}
# A ROS namespace: tokens of letters, digits and underscores, not starting with a digit.
_NAMESPACE = re.compile(r"/?([A-Za-z_][A-Za-z0-9_]*)(/[A-Za-z_][A-Za-z0-9_]*)*/?")


def argument(default: object, description: str) -> Any:
    """A launch argument as a dataclass field: its default and its description."""
    return field(default=default, metadata={"description": description})


@dataclass(frozen=True)
class Argument:
    """A launch argument: ``type`` is bool, int, float, string, or a list (ints, ...)."""

    name: str
    default: object
    description: str
    type: str = "string"


@dataclass(frozen=True)
class NodeSpec:
    """A node to start: a ROS node, or (``process``) a plain executable taking options."""

    name: str
    package: str
    executable: str
    parameters: dict = field(default_factory=dict)
    namespace: str = ""  # absolute ("/bench1") or "" for none
    process: bool = False  # parameters become command-line options (command_line)
    ready: str = ""  # process: the stdout line prefix that says it serves ("" = do not wait)


@dataclass(frozen=True)
class Refusal:
    """Argument values that are an error: the test, and the one-line message naming the fix."""

    applies: Callable[[Any], bool]
    message: str


@dataclass(frozen=True)
class Composition:
    """The arguments (a dataclass type), nodes and refusals of one launch file."""

    name: str  # the launch file is launch/<name>.launch.py
    arguments_type: type
    nodes: Callable[[Any], list[NodeSpec]]
    refusals: tuple[Refusal, ...] = ()

    def arguments(self) -> dict[str, Argument]:
        hints = typing.get_type_hints(self.arguments_type)
        return {f.name: Argument(f.name, _plain(f.default), f.metadata["description"],
                                 _kind(hints[f.name], f.name))
                for f in dataclasses.fields(self.arguments_type)}

    def parse(self, values: Mapping[str, object] | None = None) -> Any:
        """The typed arguments: ``values`` (launch strings or typed values) over defaults."""
        known = self.arguments()
        unknown = sorted(set(values or {}) - set(known))
        if unknown:
            raise BamError(f"unknown {self.name} argument {unknown[0]}; known: "
                           f"{', '.join(known)}")
        typed_values = {name: typed(value, known[name].default, name, known[name].type)
                        for name, value in (values or {}).items()}
        return self.arguments_type(**{name: tuple(v) if isinstance(v, list) else v
                                      for name, v in typed_values.items()})

    def check(self, args: Any) -> None:
        """Raise the first refusal that applies to ``args`` (a BamError of one line)."""
        for refusal in self.refusals:
            if refusal.applies(args):
                raise BamError(refusal.message)

    def compose(self, values: Mapping[str, object] | None = None) -> list[NodeSpec]:
        """The nodes started for these argument values (the others take their defaults)."""
        args = self.parse(values)
        self.check(args)
        return self.nodes(args)


def _kind(hint: object, name: str) -> str:
    options = typing.get_args(hint)
    if len(options) == 2 and type(None) in options and typing.get_origin(hint) in (
            typing.Union, types.UnionType):  # T | None: a scalar that may be left out
        hint = next(option for option in options if option is not type(None))
    if hint in _SCALARS:
        return _SCALARS[hint]
    item = typing.get_args(hint)[:1]
    if typing.get_origin(hint) is tuple and item and item[0] in _SCALARS and item[0] is not bool:
        return {"string": "strings", "int": "ints", "float": "floats"}[_SCALARS[item[0]]]
    raise TypeError(f"argument {name}: annotate with bool, int, float, str or tuple[T, ...]")


def _plain(default: object) -> object:
    """A field default as arguments show it: tuples (immutable defaults) as lists."""
    return list(default) if isinstance(default, tuple) else default


def typed(value: object, like: object, name: str, kind: str) -> object:
    """A launch argument's value (a string, or already typed) as its ``kind``, parsed."""
    if kind.endswith("s") and kind != "string":  # a list
        return _typed_list(value, kind[:-1], name)
    if not isinstance(value, str) or kind == "string":
        if value is None and like is None:
            return None
        return _scalar(value, kind, f"argument {name}:={value}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else like
    except yaml.YAMLError:
        parsed = value
    if parsed is None and like is None:  # "" for an argument that may be left out
        return None
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
    """``a,b`` or ``[a, b]`` (or a sequence) as a list of ``kind``; "" is the empty list."""
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
    else:
        items = [] if value is None else [value]
    if not isinstance(items, list):
        raise BamError(f"argument {name}:={value} is not a list; write a,b or [a, b]")
    return [_scalar(_item(item, kind), kind, f"entry {item!r} of argument {name}")
            for item in items]


def _item(item: object, kind: str) -> object:
    if not isinstance(item, str) or kind == "string" or not item:
        return item
    try:
        return yaml.safe_load(item)
    except yaml.YAMLError:
        return item


def launch_default(argument: Argument) -> str:
    """The default of ``argument`` as the launch file declares it (types back to it).

    Lists are YAML (``[1, 2]``), as launch_ros reads list parameters; an empty
    list or None is "" (not given: the node keeps its own default).
    """
    value = argument.default
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return f"[{', '.join(str(v) for v in value)}]" if value else ""
    return str(value)


def namespace(text: str) -> str:
    """A ``namespace:=`` value as an absolute namespace ("/bench1"), or "" for none."""
    text = text.strip()
    if text in ("", "/"):
        return ""
    if not _NAMESPACE.fullmatch(text):
        raise BamError(f"namespace:={text} is not a ROS namespace; use letters, digits and "
                       "underscores, e.g. bench1 or lab/bench1")
    return "/" + text.strip("/")


def given(**parameters: object) -> dict:
    """Parameters without the empty ones: "", None or an empty list keeps the node's own
    default."""
    return {name: list(value) if isinstance(value, tuple) else value
            for name, value in parameters.items()
            if value is not None and value not in ("", (), [])}


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
