"""A stand-in for the substitutions and conditions of ROS 2 launch, where it is absent.

The runner (``bench serve``) reads the launch files of launch/ itself: they
import ``launch`` and ``launch_ros``, which are not installed without ROS, so
bam_bringup.launch_standin.launch_file binds these names to this stand-in while it loads one.
Only what the shipped launch files use is here, with the meaning launch gives
it: a substitution performs to a string in a :class:`LaunchContext`, a
condition decides whether an action runs, a ``ParameterValue`` is a typed
parameter. Values are typed as the runner types launch arguments
(bam_bringup.launch_standin.values); a bad value is a one-line BamError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from bam_bringup.launch_standin.values import Argument, kind_of, typed
from bam_sim.common.errors import BamError
from bam_sim.common.share import share_file

# Where a package's share folder is in the source tree (used without an install).
SOURCE_ROOTS = {"bam_bringup": Path(__file__).resolve().parents[2]}


class LaunchContext:
    """The argument values (``launch_configurations``) and the global parameters that
    SetParameter gave (scoped by GroupAction), as evaluation goes along."""

    def __init__(self, values: Mapping[str, str], arguments: Mapping[str, Argument],
                 include: Callable[[Path], tuple[dict[str, Argument], list]] | None = None
                 ) -> None:
        self.launch_configurations: dict[str, str] = dict(values)
        self.global_parameters: dict[str, object] = {}
        self.arguments = dict(arguments)  # the declared ones: their kinds and defaults
        # The reader of an included launch file (its arguments and entities), given by
        # the one that reads this file: the actions do not import it.
        self.include = include

    def typed(self, name: str, kind: str | None = None) -> object:
        """Argument ``name`` as ``kind`` (default: the argument's); "" stands for the
        typed default, or for nothing when the default is "" too."""
        argument = self.arguments.get(name) or Argument(name, "", "", "string")
        kind = kind or argument.kind
        return typed(self.launch_configurations[name], argument.like(kind), name, kind)


class Substitution:
    """Something that performs to a string in a context."""

    def perform(self, context: LaunchContext) -> str:
        raise NotImplementedError


def perform(value: object, context: LaunchContext) -> str:
    """A string, a substitution, or a list of them (concatenated), performed."""
    if isinstance(value, Substitution):
        return value.perform(context)
    if isinstance(value, (list, tuple)):
        return "".join(perform(item, context) for item in value)
    return str(value)


def truth(text: str) -> bool:
    """A condition's string as launch reads it: true/1 or false/0, any case."""
    lowered = text.strip().lower()
    if lowered not in ("true", "1", "false", "0"):
        raise BamError(f"{text!r} is not a condition: give true or false")
    return lowered in ("true", "1")


class LaunchConfiguration(Substitution):
    """The value of a launch argument."""

    def __init__(self, variable_name: str) -> None:
        self.variable_name = variable_name

    def perform(self, context: LaunchContext) -> str:
        try:
            return context.launch_configurations[self.variable_name]
        except KeyError:
            raise BamError(f"launch argument {self.variable_name} is not declared") from None


class EqualsSubstitution(Substitution):
    """"true" when both sides perform to the same string."""

    def __init__(self, left: object, right: object) -> None:
        self.left, self.right = left, right

    def perform(self, context: LaunchContext) -> str:
        return str(perform(self.left, context) == perform(self.right, context)).lower()


class NotEqualsSubstitution(EqualsSubstitution):
    """"true" when the sides perform to different strings."""

    def perform(self, context: LaunchContext) -> str:
        return str(not truth(super().perform(context))).lower()


class NotSubstitution(Substitution):
    """The negation of a condition string."""

    def __init__(self, value: object) -> None:
        self.value = value

    def perform(self, context: LaunchContext) -> str:
        return str(not truth(perform(self.value, context))).lower()


class AndSubstitution(Substitution):
    """Both condition strings true."""

    def __init__(self, left: object, right: object) -> None:
        self.left, self.right = left, right

    def perform(self, context: LaunchContext) -> str:
        both = truth(perform(self.left, context)) and truth(perform(self.right, context))
        return str(both).lower()


class OrSubstitution(AndSubstitution):
    """Either condition string true."""

    def perform(self, context: LaunchContext) -> str:
        either = truth(perform(self.left, context)) or truth(perform(self.right, context))
        return str(either).lower()


class PythonExpression(Substitution):
    """A Python expression (its parts performed, then joined), evaluated without builtins:
    the launch files use it for literals and ``or`` only."""

    def __init__(self, expression: list) -> None:
        self.expression = expression

    def perform(self, context: LaunchContext) -> str:
        text = perform(self.expression, context)
        try:
            return str(eval(text, {"__builtins__": {}}, {}))  # noqa: S307 - as launch does
        except Exception as exc:  # a value that breaks the expression: one line
            raise BamError(f"cannot evaluate {text!r} ({type(exc).__name__}); an argument "
                           "value holds a quote?") from None


class ExecutableInPackage(Substitution):
    """An executable of a package, as ``ros2 run`` finds it; the runner starts it by name."""

    def __init__(self, executable: str, package: str) -> None:
        self.executable, self.package = executable, package

    def perform(self, context: LaunchContext) -> str:
        return self.executable


class FindPackageShare(Substitution):
    """The share folder of a package (installed, else bam_bringup's source folder)."""

    def __init__(self, package: str) -> None:
        self.package = package

    def perform(self, context: LaunchContext) -> str:
        return str(share_file(self.package, source_root=SOURCE_ROOTS.get(self.package)))


class FileContent(Substitution):
    """The text of a file (its path performed)."""

    def __init__(self, path: object) -> None:
        self.path = path

    def perform(self, context: LaunchContext) -> str:
        path = Path(perform(self.path, context))
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BamError(f"cannot read {path}: {exc.strerror}") from None


class IfCondition:
    """Run the action when the predicate is true."""

    def __init__(self, predicate_expression: object) -> None:
        self.predicate = predicate_expression

    def evaluate(self, context: LaunchContext) -> bool:
        return truth(perform(self.predicate, context))


class UnlessCondition(IfCondition):
    """Run the action when the predicate is false."""

    def evaluate(self, context: LaunchContext) -> bool:
        return not super().evaluate(context)


class ParameterValue:
    """A parameter's value with its type (``value_type``: float, List[int], ...)."""

    def __init__(self, value: object, *, value_type: object = None) -> None:
        self.value, self.value_type = value, value_type

    def evaluate(self, context: LaunchContext) -> object:
        kind = kind_of(self.value_type) if self.value_type is not None else None
        if isinstance(self.value, LaunchConfiguration):
            return context.typed(self.value.variable_name, kind)
        text = perform(self.value, context)
        return typed(text, None, _named(self.value), kind) if kind else text


class ParameterFile:
    """A ROS parameter file given to a node (``param_file``, its path performed). The
    runner applies none: only launch files it does not serve give one."""

    def __init__(self, param_file: object, *, allow_substs: bool = False) -> None:
        self.param_file, self.allow_substs = param_file, allow_substs

    def evaluate(self, context: LaunchContext) -> str:
        return perform(self.param_file, context)


def _named(value: object) -> str:
    """The argument a value is made of, to name it in an error ("" if none)."""
    if isinstance(value, LaunchConfiguration):
        return value.variable_name
    parts = value if isinstance(value, (list, tuple)) else getattr(value, "expression", [])
    return next((found for found in map(_named, parts) if found), "")


def parameter(value: object, context: LaunchContext) -> object:
    """A node parameter's value as launch_ros gives it: a literal as it is, an argument as
    its kind, a substitution (or a list of them) performed, a list of lists as strings."""
    if isinstance(value, ParameterValue):
        return value.evaluate(context)
    if isinstance(value, LaunchConfiguration):
        return context.typed(value.variable_name)
    if isinstance(value, Substitution):
        return value.perform(context)
    if isinstance(value, (list, tuple)):
        if any(isinstance(item, Substitution) for item in value):
            return perform(value, context)  # substitutions concatenated: one string
        return [perform(item, context) if isinstance(item, (list, tuple)) else item
                for item in value]
    return value
