"""Our own check of the ``--ros-args`` sections, before rcl parses them.

rcl refuses a bad ROS argument (``-p port:=``, a ``--params-file`` that does
not exist, is not YAML or has no ``ros__parameters``) with an
``RCLInvalidROSArgsError`` traceback and an extra ``[rcl]`` log line. Here the
same arguments are read first, with ``yaml.safe_load``, and a problem is one
:class:`BamError` line naming the argument and the fix. :func:`check` also
tells where each parameter came from, which the node layer needs to tell a
parameter addressed to this node (``-p``, a block named after it) from one of a
``/**`` block shared by several nodes (see
:func:`bam_sim.common.node_parameters.refuse_unknown`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
import yaml
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node

from bam_sim.common.errors import BamError, one_line
from bam_sim.common.input_files import read_text
from bam_sim.common.shm_ports import before_participant

# What rclpy raises on ROS arguments our check let through: the last resort of run_node.
RCL_ERRORS: tuple[type[Exception], ...] = (_rclpy.RCLError, _rclpy.UnknownROSArgsError)

_WITH_VALUE = frozenset(("-p", "--param", "-r", "--remap", "--params-file", "-e", "--enclave",
                         "--log-level", "--log-config-file", "--log-file-name"))
_FLAGS = frozenset(f"--{state}-{what}-logs" for state in ("enable", "disable")
                   for what in ("rosout", "stdout", "external-lib"))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_PARAMS_KEY = "ros__parameters"


@dataclass(frozen=True)
class Given:
    """One parameter given on the command line: its name, and whom it is for.

    ``target`` is None for ``-p NAME:=VALUE`` (this process's node), else the
    node name or pattern (``/**``, ``/ns/node``) of ``-p node:NAME:=VALUE`` or
    of the params-file block that holds it.
    """

    name: str
    target: str | None
    origin: str


@dataclass(frozen=True)
class RosArguments:
    """The parameters the ``--ros-args`` sections give, in order."""

    given: tuple[Given, ...] = field(default_factory=tuple)

    def shared_only(self, fully_qualified_name: str) -> frozenset[str]:
        """Names this node receives only through wildcard blocks (``/**``, ``/*``):
        those may be meant for other nodes; every other name is addressed to it."""
        shared, addressed = set(), set()
        for item in self.given:
            if item.target is not None and _is_wildcard(item.target):
                if _matches(item.target, fully_qualified_name):
                    shared.add(item.name)
            elif item.target is None or _matches(item.target, fully_qualified_name):
                addressed.add(item.name)
        return frozenset(shared - addressed)


def check(argv: list[str]) -> RosArguments:
    """Check the ``--ros-args`` sections of ``argv``; what they give, or a BamError."""
    given: list[Given] = []
    for flag, value in _ros_options(argv):
        if flag in ("-p", "--param"):
            given.append(_override(value))
        elif flag == "--params-file":
            given.extend(_params_file(value))
    return RosArguments(tuple(given))


def _ros_options(argv: list[str]) -> Iterator[tuple[str, str | None]]:
    """(flag, value) of each ROS argument, as rcl splits them: from ``--ros-args`` to
    ``--`` or the end."""
    inside, i = False, 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--ros-args":
            inside = True
        elif not inside:
            continue
        elif arg == "--":
            inside = False
        elif arg in _FLAGS:
            yield arg, None
        elif arg in _WITH_VALUE:
            if i == len(argv) or argv[i] in ("--", "--ros-args"):
                raise BamError(f"{arg} needs a value after it (e.g. {_example(arg)})")
            yield arg, argv[i]
            i += 1
        else:
            raise BamError(f"unknown ROS argument {arg!r}; set parameters with -p NAME:=VALUE "
                           "or --params-file FILE")


def _example(flag: str) -> str:
    return {"-p": "-p mass:=1.0", "--param": "--param mass:=1.0",
            "--params-file": "--params-file params.yaml"}.get(flag, f"{flag} VALUE")


def _override(rule: str) -> Given:
    """``-p [node:]NAME:=VALUE``: a name and a value rcl can read."""
    head, sep, text = rule.partition(":=")
    if not sep:
        raise BamError(f"-p {rule}: write parameters as -p NAME:=VALUE (e.g. -p mass:=1.0)")
    node, _, name = head.rpartition(":")
    if not _NAME.match(name):
        raise BamError(f"-p {rule}: {name!r} is not a parameter name (letters, digits, '_' "
                       "and '.'); write -p NAME:=VALUE")
    if not text.strip():
        raise BamError(f"-p {rule} has no value; give one after ':=' (an empty string is "
                       f"written -p {name}:=\"''\")")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BamError(f"-p {rule}: the value is not valid YAML ({_problem(exc)}); quote a "
                       f"string (-p {name}:=\"'...'\") or write a list as [a, b]") from None
    if value is not None:  # rcl reads -p x:=~ as the string '~'
        _check_value(value, f"-p {rule}")
    return Given(name, node or None, "-p")


def _params_file(path_text: str) -> list[Given]:
    """The parameters of a ``--params-file``: a mapping of node names to
    ``ros__parameters`` blocks, as rcl reads it."""
    path = Path(path_text)
    text = read_text(path, "--params-file")
    where = f"--params-file {path}"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        tab = " (a tab: YAML indents with spaces, replace the tabs)" if "\t" in text else ""
        raise BamError(f"{where} is not valid YAML: {_problem(exc)}{tab}; fix the "
                       "syntax") from None
    if doc is None:
        return []  # an empty file sets nothing, for rcl too
    if not isinstance(doc, dict) or not doc:
        raise BamError(f"{where} must map node names to parameters, e.g. "
                       "'/**: {ros__parameters: {mass: 1.0}}'")
    given: list[Given] = []
    for node, block in doc.items():
        given.extend(_node_block(str(node), block, where))
    return given


def _node_block(node: str, block: object, where: str) -> list[Given]:
    """A node name's block: its ``ros__parameters``, or nested namespaces (``ns: node:``)."""
    if not isinstance(block, dict) or not block:
        raise BamError(f"{where}: '{node}' has no '{_PARAMS_KEY}' block; write "
                       f"'{node}: {{{_PARAMS_KEY}: {{NAME: VALUE, ...}}}}'")
    if _PARAMS_KEY not in block:  # nested namespaces: 'ns: node: ros__parameters: ...'
        stray = [str(k) for k, inner in block.items() if not isinstance(inner, dict)]
        if stray:
            raise BamError(f"{where}: '{stray[0]}' under '{node}' is outside a "
                           f"'{_PARAMS_KEY}' block; write '{node}: {{{_PARAMS_KEY}: "
                           "{NAME: VALUE, ...}}'")
        return [g for sub, inner in block.items()
                for g in _node_block(f"{node.rstrip('/')}/{sub}", inner, where)]
    params = block[_PARAMS_KEY]
    others = sorted(str(k) for k in block if k != _PARAMS_KEY)
    if others:
        raise BamError(f"{where}: '{node}' holds {others[0]!r} beside '{_PARAMS_KEY}'; move "
                       f"it inside '{_PARAMS_KEY}'")
    if not isinstance(params, dict):
        raise BamError(f"{where}: '{node}.{_PARAMS_KEY}' must be a mapping NAME: VALUE")
    return [Given(name, node, where) for name in _flat_names(params, "", f"{where}: '{node}'")]


def _flat_names(params: dict, prefix: str, where: str) -> list[str]:
    """Parameter names of a block, nested mappings joined with dots as rcl does."""
    names = []
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            names.extend(_flat_names(value, f"{name}.", where))
            continue
        _check_value(value, f"{where}, parameter {name}")
        names.append(name)
    return names


def _check_value(value: object, where: str) -> None:
    """A value rcl holds: a scalar, or a list of scalars of one type."""
    if value is None:
        raise BamError(f"{where} has no value; give one (an empty string is written '')")
    if isinstance(value, dict):
        raise BamError(f"{where}: a value is a number, a string, a boolean or a list of them, "
                       "not a mapping")
    if isinstance(value, list):
        kinds = {type(v) for v in value}
        if any(isinstance(v, (dict, list)) or v is None for v in value):
            raise BamError(f"{where}: a list holds numbers, strings or booleans, not "
                           "lists, mappings or empty entries")
        if len(kinds) > 1:
            raise BamError(f"{where}: the entries of a list must all have one type "
                           "(write doubles with a decimal point, e.g. [1.0, 2.5])")


def _problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    line = f" at line {mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or one_line(exc)
    return f"{problem}{line}"


def _is_wildcard(pattern: str) -> bool:
    """A block for any node name (``/**``, ``/ns/*``); ``/**/pendulum`` names its node."""
    return pattern.rstrip("/").rsplit("/", 1)[-1] in ("*", "**")


def _matches(pattern: str, fully_qualified_name: str) -> bool:
    """Whether a params-file node key (``/**``, ``/*``, ``node``, ``/ns/node``,
    ``/**/node``) applies to the node ``fully_qualified_name`` (``/ns/node``)."""
    keys = [t for t in pattern.split("/") if t]
    names = [t for t in fully_qualified_name.split("/") if t]
    if not pattern.startswith("/") and keys and "*" not in pattern:
        return names[-len(keys):] == keys  # a relative name: the node's own name
    return _match_tokens(keys, names)


def _match_tokens(keys: list[str], names: list[str]) -> bool:
    if not keys:
        return not names
    if keys[0] == "**":
        return any(_match_tokens(keys[1:], names[i:]) for i in range(len(names) + 1))
    if not names:
        return False
    return keys[0] in ("*", names[0]) and _match_tokens(keys[1:], names[1:])


# The arguments each context was initialised with (by init): where a node's parameters
# came from, for node_parameters.refuse_unknown. Weak: a context gone is forgotten.
_BY_CONTEXT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def shared_only(node: Node) -> frozenset[str]:
    """The names ``node`` received only through wildcard params-file blocks; empty for a
    node whose context :func:`init` did not start (every name is then its own)."""
    given = _BY_CONTEXT.get(node.context)
    return given.shared_only(node.get_fully_qualified_name()) if given else frozenset()


def without_ros_args(argv: list[str]) -> list[str]:
    """The arguments after the program name that are not ROS arguments."""
    try:
        return rclpy.utilities.remove_ros_args(argv)[1:]
    except RCL_ERRORS as exc:
        raise BamError(f"bad ROS arguments: {rcl_message(exc)}") from None


def init(argv: list[str], given: RosArguments, context: rclpy.Context | None = None,
         **kwargs) -> None:
    """``rclpy.init`` of ``context`` (default: the default context), remembering what
    ``given`` (from :func:`check`) says of the parameters; rcl refusing an argument that
    :func:`check` let through (the last resort) is a one-line BamError, not a traceback."""
    before_participant()
    try:
        rclpy.init(args=argv, context=context, **kwargs)
    except RCL_ERRORS as exc:
        raise BamError(f"bad ROS arguments: {rcl_message(exc)}") from None
    _BY_CONTEXT[context or rclpy.utilities.get_default_context()] = given


def rcl_message(exc: BaseException) -> str:
    """rcl's message on one line, without its source locations (``, at .../file.c:352``)."""
    text = re.sub(r",? at /\S+:\d+", "", one_line(exc))
    return text.removeprefix("failed to initialize rcl: ").replace("Error: error not set", "")
