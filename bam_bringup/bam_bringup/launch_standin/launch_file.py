"""A launch file of launch/, read by the runner: its arguments, and the nodes it starts.

``bench serve`` starts what ``ros2 launch bam_bringup <name>.launch.py``
would, from the launch file itself: the file is loaded with the names
``launch`` and ``launch_ros`` bound to the stand-in of
bam_bringup.launch_standin.actions and .substitutions (for the load only), and
its description is evaluated with the given ``name:=value`` arguments into the
:class:`~bam_bringup.node_spec.NodeSpec` list the runner starts. Arguments are
checked first, against what is declared and the kind of each (its default's,
or the value_type the file gives it); a refused combination is the launch
file's own one-line message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path

from bam_bringup.launch_standin import actions, substitutions
from bam_bringup.launch_standin.actions import LaunchDescription, visit
from bam_bringup.launch_standin.substitutions import LaunchContext
from bam_bringup.launch_standin.values import (
    Argument,
    default_kind,
    kind_of,
    launch_text,
    namespace,
    typed,
)
from bam_bringup.node_spec import NodeSpec
from bam_sim.common.errors import BamError
from bam_sim.common.share import share_file

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the package's source folder
READY = "READY"  # the line a process (a driver's emulator) prints once it serves

# The modules a launch file imports, and the stand-in names each holds.
_STANDIN = {
    "launch": (actions, ["LaunchDescription"]),
    "launch.actions": (actions, ["DeclareLaunchArgument", "ExecuteProcess", "GroupAction",
                                 "IncludeLaunchDescription", "OpaqueFunction"]),
    "launch.conditions": (substitutions, ["IfCondition", "UnlessCondition"]),
    "launch.launch_description_sources": (actions, ["PythonLaunchDescriptionSource"]),
    "launch.substitutions": (substitutions, [
        "AndSubstitution", "EqualsSubstitution", "FileContent", "LaunchConfiguration",
        "NotEqualsSubstitution", "NotSubstitution", "OrSubstitution", "PythonExpression"]),
    "launch_ros": (actions, []),
    "launch_ros.actions": (actions, ["Node", "SetParameter"]),
    "launch_ros.parameter_descriptions": (substitutions, ["ParameterFile", "ParameterValue"]),
    "launch_ros.substitutions": (substitutions, ["ExecutableInPackage", "FindPackageShare"]),
}


@contextlib.contextmanager
def standin_modules() -> Iterator[None]:
    """``launch`` and ``launch_ros`` bound to the stand-in while a launch file loads (any
    real ones are put back after: the runner evaluates with the stand-in either way)."""
    saved = {name: sys.modules.get(name) for name in _STANDIN}
    for name, (source, names) in _STANDIN.items():
        module = types.ModuleType(name)
        module.__dict__.update({n: getattr(source, n) for n in names})
        module.__path__ = []  # a package, so its submodules import
        sys.modules[name] = module
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


class LaunchFile:
    """launch/<name>.launch.py of bam_bringup, as the runner reads it."""

    def __init__(self, name: str, path: Path | None = None) -> None:
        self.name = name
        self._path = path

    @property
    def path(self) -> Path:
        return self._path or share_file("bam_bringup", "launch", f"{self.name}.launch.py",
                                        source_root=SOURCE_ROOT)

    @functools.cached_property
    def description(self) -> LaunchDescription:
        spec = importlib.util.spec_from_file_location(f"_bam_launch_{self.name}", self.path)
        module = importlib.util.module_from_spec(spec)
        with standin_modules():
            spec.loader.exec_module(module)
            return module.generate_launch_description()

    def arguments(self) -> dict[str, Argument]:
        """The declared arguments, in order; the kind of each is the value_type the launch
        file gives it, else its default's."""
        types = self.description.typed_arguments()
        return {a.name: Argument(a.name, a.default_value, a.description,
                                 kind_of(types[a.name]) if a.name in types
                                 else default_kind(a.default_value))
                for a in self.description.arguments()}

    def compose(self, values: Mapping[str, object] | None = None) -> list[NodeSpec]:
        """The nodes and processes started for these argument values (launch strings, or
        typed values), in the launch file's order."""
        context = LaunchContext(self.checked(values or {}), self.arguments(), _included)
        return [_runnable(spec) for spec in visit(self.description.entities, context)]

    def checked(self, values: Mapping[str, object]) -> dict[str, str]:
        """The given values as launch strings, each of a declared argument and of its kind,
        written back as read (sim:=yes is true, mass:=1 is 1.0, ids:=1,2 is [1, 2])."""
        known = self.arguments()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise BamError(f"unknown {self.name} argument {unknown[0]}; known: "
                           f"{', '.join(known)}")
        return {name: launch_text(typed(value, known[name].like(), name, known[name].kind))
                for name, value in values.items()}


def _included(path: Path) -> tuple[dict[str, Argument], list]:
    """An included launch file's arguments and entities (IncludeLaunchDescription)."""
    included = LaunchFile(path.name.removesuffix(".launch.py"), path)
    return included.arguments(), included.description.entities


def _runnable(spec: NodeSpec) -> NodeSpec:
    """A started entity as the runner starts it: the namespace absolute, a parameter
    that is "" or an empty list left out (the node keeps its own default), a process
    awaited until it prints READY."""
    if spec.process:
        return dataclasses.replace(spec, ready=READY)
    parameters = {name: value for name, value in spec.parameters.items()
                  if value is not None and value not in ("", [])}
    return dataclasses.replace(spec, parameters=parameters,
                               namespace=namespace(spec.namespace))
