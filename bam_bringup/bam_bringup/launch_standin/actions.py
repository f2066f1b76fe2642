"""A stand-in for the actions of ROS 2 launch: a description evaluated into what it starts.

The actions the shipped launch files use (see bam_bringup.launch_standin.substitutions
for why a stand-in), with launch's meaning: DeclareLaunchArgument gives an
argument its default, a condition skips its action, GroupAction scopes the
arguments and SetParameter's global parameters to its actions, OpaqueFunction
calls a function of the context (a ``RuntimeError`` it raises, a refusal, is a
one-line BamError), IncludeLaunchDescription evaluates another launch file in
the same context (its arguments declared there too), and Node and
ExecuteProcess are what starts, evaluated in order into
:class:`~bam_bringup.node_spec.NodeSpec`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from bam_bringup.launch_standin.substitutions import (
    ExecutableInPackage,
    LaunchConfiguration,
    LaunchContext,
    ParameterFile,
    ParameterValue,
    parameter,
    perform,
)
from bam_bringup.node_spec import NodeSpec
from bam_sim.common.errors import BamError, one_line


class Action:
    """An entity of a launch description, run only when its condition holds."""

    def __init__(self, *, condition=None, **_: object) -> None:
        self.condition = condition

    def applies(self, context: LaunchContext) -> bool:
        return self.condition is None or self.condition.evaluate(context)

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        """Add what this action starts to ``started``."""
        raise NotImplementedError

    def parameter_values(self) -> Iterator[object]:
        """The parameter values it gives, as written (none but for a Node, SetParameter or
        a group of them): where the launch file types an argument."""
        return iter(())


class LaunchDescription:
    """The entities of a launch file, in order."""

    def __init__(self, initial_entities: Iterable[Action] = ()) -> None:
        self.entities = list(initial_entities)

    def arguments(self) -> list[DeclareLaunchArgument]:
        """The arguments declared at the top level (the launch file's arguments)."""
        return [e for e in self.entities if isinstance(e, DeclareLaunchArgument)]

    def typed_arguments(self) -> dict[str, object]:
        """The ``value_type`` of each argument a ParameterValue types, whether or not its
        action runs (not those typed inside an OpaqueFunction: unknown until it runs)."""
        return {value.value.variable_name: value.value_type
                for entity in self.entities for value in entity.parameter_values()
                if isinstance(value, ParameterValue) and value.value_type is not None
                and isinstance(value.value, LaunchConfiguration)}


def visit(entities: Iterable[Action], context: LaunchContext) -> list[NodeSpec]:
    """What ``entities`` start in ``context``, in order."""
    started: list[NodeSpec] = []
    for entity in entities:
        if entity.applies(context):
            entity.execute(context, started)
    return started


class DeclareLaunchArgument(Action):
    """A launch argument: its default (the value when not given) and its description."""

    def __init__(self, name: str, *, default_value: str = "", description: str = "",
                 **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.name, self.default_value, self.description = name, default_value, description

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        context.launch_configurations.setdefault(self.name, perform(self.default_value,
                                                                    context))


class OpaqueFunction(Action):
    """``function(context)``; the actions it returns run in its place."""

    def __init__(self, *, function: Callable, args: Iterable = (), kwargs: dict | None = None,
                 **rest: object) -> None:
        super().__init__(**rest)
        self.function, self.args, self.kwargs = function, tuple(args), dict(kwargs or {})

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        try:
            actions = self.function(context, *self.args, **self.kwargs)
        except RuntimeError as exc:  # a refusal of the launch file: its one line
            raise BamError(one_line(str(exc))) from None
        started += visit(actions or [], context)


class GroupAction(Action):
    """Its actions, with the arguments and global parameters they set kept to them."""

    def __init__(self, actions: Iterable[Action], **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.actions = list(actions)

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        saved = (dict(context.launch_configurations), copy.copy(context.global_parameters))
        try:
            started += visit(self.actions, context)
        finally:
            context.launch_configurations, context.global_parameters = saved

    def parameter_values(self) -> Iterator[object]:
        for action in self.actions:
            yield from action.parameter_values()


class SetParameter(Action):
    """A parameter of every node that follows in its scope (the last one set wins)."""

    def __init__(self, name: str, value: object, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.name, self.value = name, value

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        context.global_parameters[self.name] = parameter(self.value, context)

    def parameter_values(self) -> Iterator[object]:
        yield self.value


class Node(Action):
    """A ROS node of a package: name (default: the executable's), namespace, parameters
    (dicts, or ParameterFile paths), remappings and command-line arguments."""

    def __init__(self, *, package: str, executable: str, name: str | None = None,
                 namespace: object = "", parameters: Iterable[dict | ParameterFile] = (),
                 remappings: Iterable = (), arguments: Iterable = (),
                 **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.package, self.executable, self.name = package, executable, name or executable
        self.namespace, self.parameters = namespace, list(parameters)
        self.remappings, self.arguments = list(remappings), list(arguments)

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        parameters = dict(context.global_parameters)  # the node's own win over global ones
        files = []
        for group in self.parameters:
            if isinstance(group, ParameterFile):
                files.append(group.evaluate(context))
                continue
            parameters.update({name: parameter(value, context) for name, value in group.items()})
        remappings = tuple((perform(a, context), perform(b, context)) for a, b in self.remappings)
        started.append(NodeSpec(self.name, self.package, self.executable, parameters,
                                perform(self.namespace, context), remappings,
                                arguments=tuple(perform(a, context) for a in self.arguments),
                                parameter_files=tuple(files)))

    def parameter_values(self) -> Iterator[object]:
        for group in self.parameters:
            if isinstance(group, dict):
                yield from group.values()


class ExecuteProcess(Action):
    """A plain process: ``cmd`` is its executable (ExecutableInPackage) and arguments."""

    def __init__(self, *, cmd: list, name: str, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.cmd, self.name = list(cmd), name

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        executable, *arguments = self.cmd
        if not isinstance(executable, ExecutableInPackage):
            raise TypeError(f"{self.name}: the runner starts ExecutableInPackage commands only")
        started.append(NodeSpec(self.name, executable.package, executable.executable,
                                process=True,
                                arguments=tuple(perform(a, context) for a in arguments)))


class PythonLaunchDescriptionSource:
    """A Python launch file, by path (substitutions performed when included)."""

    def __init__(self, launch_file_path: object) -> None:
        self.location = launch_file_path


class IncludeLaunchDescription(Action):
    """Another launch file, evaluated in the same context, as ros2 launch includes one:
    ``launch_arguments`` set first, then its own entities (its DeclareLaunchArgument
    defaults only for arguments not given); its arguments join the context's, so each
    is typed as that file types it."""

    def __init__(self, launch_description_source: PythonLaunchDescriptionSource, *,
                 launch_arguments: Iterable[tuple[object, object]] = (),
                 **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.source, self.launch_arguments = launch_description_source, list(launch_arguments)

    def execute(self, context: LaunchContext, started: list[NodeSpec]) -> None:
        if context.include is None:
            raise TypeError("IncludeLaunchDescription: this context reads no included file")
        arguments, entities = context.include(Path(perform(self.source.location, context)))
        for name, argument in arguments.items():
            context.arguments.setdefault(name, argument)
        for name, value in self.launch_arguments:
            context.launch_configurations[perform(name, context)] = perform(value, context)
        started += visit(entities, context)
