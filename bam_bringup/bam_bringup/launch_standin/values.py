"""Launch argument values: the strings of ``name:=value``, typed as the runner reads them.

A launch argument's kind is that of its declared default, read as YAML
(``true`` a bool, ``1.0`` a float, ``[1]`` a list of ints, ``mx64`` or "" a
string); a launch file may type a value where it uses it (``ParameterValue``
with ``value_type=float``). Lists are written ``a,b`` or ``[a, b]``. Values are
parsed, never evaluated, and a bad one is a one-line BamError naming the
argument. No ROS import here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List

import yaml

from bam_sim.common.errors import BamError

_SCALARS = {bool: "bool", int: "int", float: "float", str: "string"}
# launch_ros's value_type spelling of the lists
_LISTS = {List[str]: "strings", List[int]: "ints", List[float]: "floats", List[bool]: "bools"}
# A ROS namespace: tokens of letters, digits and underscores, not starting with a digit.
_NAMESPACE = re.compile(r"/?([A-Za-z_][A-Za-z0-9_]*)(/[A-Za-z_][A-Za-z0-9_]*)*/?")


@dataclass(frozen=True)
class Argument:
    """A declared launch argument: its default as declared (a launch string) and kind."""

    name: str
    default: str
    description: str
    kind: str

    def like(self, kind: str | None = None) -> object:
        """What "" stands for, as ``kind`` (default: its own): the typed default, or None
        (not given) when the default is "" too."""
        if not self.default.strip():
            return None
        return typed(self.default, None, self.name, kind or self.kind)


def kind_of(value_type: object) -> str:
    """The kind of a launch_ros ``value_type`` (float, List[int], ...)."""
    kind = _SCALARS.get(value_type) or _LISTS.get(value_type)
    if kind is None:
        raise TypeError(f"value_type {value_type!r}: use bool, int, float, str or List[T]")
    return kind


def default_kind(default: str) -> str:
    """The kind an argument's declared default shows: its YAML type ("" is a string)."""
    try:
        parsed = yaml.safe_load(default) if default.strip() else ""
    except yaml.YAMLError:
        return "string"
    if isinstance(parsed, list):
        kinds = {default_kind(str(item).lower() if isinstance(item, bool) else str(item))
                 for item in parsed}
        return f"{kinds.pop()}s" if len(kinds) == 1 else "strings"
    return _SCALARS.get(type(parsed), "string")


def typed(value: object, like: object, name: str, kind: str) -> object:
    """A launch argument's value (a string, or already typed) as its ``kind``, parsed.

    ``like`` is what "" stands for (the typed default, or None: not given)."""
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


def launch_text(value: object) -> str:
    """A typed value as launch writes it, to be read back the same: true/false, numbers,
    lists as [a, b], "" for None or an empty list."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return f"[{', '.join(launch_text(v) for v in value)}]" if value else ""
    if isinstance(value, float):  # as YAML reads it back: 1.0e+300, .inf
        return yaml.safe_dump(value).splitlines()[0]
    return str(value)


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


def namespace(text: str) -> str:
    """A ``namespace:=`` value as an absolute namespace ("/bench1"), or "" for none."""
    text = text.strip()
    if text in ("", "/"):
        return ""
    if not _NAMESPACE.fullmatch(text):
        raise BamError(f"namespace:={text} is not a ROS namespace; use letters, digits and "
                       "underscores, e.g. bench1 or lab/bench1")
    return "/" + text.strip("/")
