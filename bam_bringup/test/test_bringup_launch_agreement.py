"""The launch files and the runner's compositions declare the same bench.

Each launch/<name>.launch.py is parsed with ast (launch and launch_ros are not
imported: they may be absent) and compared with the composition of that name
that `bench serve` starts: the declared arguments (names, defaults,
descriptions, in order), the nodes (package, executable, name), each node's
parameter names, the emulator's options, the namespace and clock remapping of
every node, and the messages of the refused argument combinations.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from bam_bringup.composition import Composition, NodeSpec, command_line, launch_default
from bam_bringup.process_bench import CLOCK_REMAP
from bam_bringup.runner import COMPOSITIONS

LAUNCH = Path(__file__).resolve().parents[1] / "launch"
# Argument values that start every node a composition has, every optional argument given.
CASES = {
    "bench": [
        {"record": "true", "params": "p.yaml", "bag": "b", "protocol": "p.yaml"},
        {"sim": "false", "record": "true", "port": "/tmp/ttyDXL", "bag": "b", "protocol": "p",
         "rate": "500"},
        {"sim": "false", "hardware": "emulated", "port": "/tmp/ttyDXL", "params": "p.yaml",
         "servo_model": "mx106_p1"},
        {"sim": "false", "driver": "feetech", "actuator": "sts3215", "port": "/dev/ttyACM0",
         "rate": "300"},
        {"sim": "false", "driver": "feetech", "actuator": "sts3215_12v", "hardware": "emulated",
         "port": "/tmp/ttySTS", "params": "p.yaml"},
        {"sim": "false", "driver": "erob", "actuator": "erob80_100", "interface": "eth1",
         "rate": "1000"},
        {"sim": "false", "driver": "erob", "actuator": "erob80_50", "hardware": "emulated",
         "interface": "bamec0", "params": "p.yaml"},
    ],
    "arm": [
        {"params": "a.yaml", "models": "m1", "gains": "8.0", "actuators": "mx64",
         "joint_names": "a", "mjcf": "robot.xml"},
        {"sim": "false", "joint_names": "a,b"},
        {"sim": "false", "arm": "erob", "joint_names": "a,b", "interface": "eth1"},
        {"sim": "false", "arm": "feetech", "joint_names": "a,b", "port": "/dev/ttyACM0"},
    ],
}


@dataclass
class LaunchNode:
    """A Node or ExecuteProcess of a launch file, as written."""

    package: str
    executable: str
    name: str
    parameters: set[str] = field(default_factory=set)
    keywords: dict[str, ast.expr] = field(default_factory=dict)
    process: bool = False


class LaunchFile:
    """The arguments, nodes and refusals a launch file declares, read from its syntax tree."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.assigned = {n.targets[0].id: n.value for n in ast.walk(self.tree)
                         if isinstance(n, ast.Assign) and len(n.targets) == 1
                         and isinstance(n.targets[0], ast.Name)}

    def calls(self, name: str) -> list[ast.Call]:
        return [n for n in ast.walk(self.tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]

    def arguments(self) -> list[tuple[str, str, str]]:
        return [(_text(c.args[0]), _text(_keyword(c, "default_value")),
                 _text(_keyword(c, "description"))) for c in self.calls("DeclareLaunchArgument")]

    def nodes(self) -> dict[str, LaunchNode]:
        nodes = {}
        for call in self.calls("Node"):
            node = LaunchNode(_text(_keyword(call, "package")), _text(_keyword(call, "executable")),
                              _text(_keyword(call, "name")), keywords={
                                  k.arg: k.value for k in call.keywords})
            for item in _keyword(call, "parameters").elts:
                node.parameters |= self.keys(item)
            nodes[node.name] = node
        self._add_set_parameters(nodes)
        for call in self.calls("ExecuteProcess"):
            cmd = _keyword(call, "cmd").elts
            executable, package = (_text(a) for a in cmd[0].args)
            options = {_text(e)[2:].replace("-", "_") for e in cmd
                       if isinstance(e, ast.Constant) and str(e.value).startswith("--")}
            nodes[_text(_keyword(call, "name"))] = LaunchNode(
                package, executable, _text(_keyword(call, "name")), options, process=True)
        return nodes

    def _add_set_parameters(self, nodes: dict[str, LaunchNode]) -> None:
        """SetParameter applies to the Nodes of its own action list (a GroupAction's)."""
        for group in (n for n in ast.walk(self.tree) if isinstance(n, ast.List)):
            calls = [e for e in group.elts if isinstance(e, ast.Call)]
            names = {_text(c.args[0]) for c in calls if getattr(c.func, "id", "") == "SetParameter"}
            for call in calls:
                if getattr(call.func, "id", "") == "Node":
                    nodes[_text(_keyword(call, "name"))].parameters |= names

    def keys(self, node: ast.expr) -> set[str]:
        """The parameter names of a dict: literal keys, **expansions of named dicts, and
        comprehensions over a named dict's items()."""
        if isinstance(node, ast.Name):
            return self.keys(self.assigned[node.id])
        if isinstance(node, ast.Dict):
            return set().union(*(self.keys(v) if k is None else {_text(k)}
                                 for k, v in zip(node.keys, node.values, strict=True)))
        if isinstance(node, ast.DictComp):  # {parameter: ... for parameter, _ in NAME.items()}
            return self.keys(node.generators[0].iter.func.value)
        raise AssertionError(f"{self.path.name}:{node.lineno}: parameters not written as a dict")

    def refusals(self) -> list[str]:
        return [_text(n.exc.args[0]) for n in ast.walk(self.tree)
                if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)]

    def imports(self) -> set[str]:
        names = set()
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Import):
                names |= {a.name for a in n.names}
            elif isinstance(n, ast.ImportFrom):
                names.add(n.module or "")
        return names


def _keyword(call: ast.Call, name: str) -> ast.expr:
    found = [k.value for k in call.keywords if k.arg == name]
    assert found, f"line {call.lineno}: {name}= missing"
    return found[0]


def _text(node: ast.expr) -> str:
    assert isinstance(node, ast.Constant) and isinstance(node.value, str), \
        f"line {node.lineno}: expected a string literal"
    return node.value


def composed(comp: Composition) -> dict[str, NodeSpec]:
    """Every node of the composition over its CASES, parameters merged by node."""
    merged: dict[str, NodeSpec] = {}
    for values in CASES[comp.name]:
        for spec in comp.compose(values):
            before = merged.get(spec.name, spec).parameters
            merged[spec.name] = replace(spec, parameters={**before, **spec.parameters})
    return merged


@pytest.fixture(params=sorted(COMPOSITIONS), scope="module")
def pair(request) -> tuple[Composition, LaunchFile]:
    return COMPOSITIONS[request.param], LaunchFile(LAUNCH / f"{request.param}.launch.py")


def test_every_launch_file_has_its_composition():
    assert sorted(p.name.removesuffix(".launch.py") for p in LAUNCH.glob("*.launch.py")) == \
        sorted(COMPOSITIONS)


def test_launch_files_are_plain_launch_files(pair):
    _, launch = pair
    imported = {name.split(".")[0] for name in launch.imports()}
    assert imported <= {"launch", "launch_ros"}, imported  # not the runner's composition
    assert launch.calls("generate_launch_description") == []
    assert "generate_launch_description" in {
        n.name for n in ast.walk(launch.tree) if isinstance(n, ast.FunctionDef)}


def test_the_same_arguments_with_the_same_defaults(pair):
    comp, launch = pair
    expected = [(a.name, launch_default(a), a.description) for a in comp.arguments().values()]
    assert launch.arguments() == expected


def test_the_same_nodes(pair):
    comp, launch = pair
    nodes = launch.nodes()
    runner = composed(comp)
    assert {(n.package, n.executable, n.name, n.process) for n in nodes.values()} == \
        {(s.package, s.executable, s.name, s.process) for s in runner.values()}


def test_every_node_takes_the_same_parameters(pair):
    comp, launch = pair
    nodes = launch.nodes()
    for name, spec in composed(comp).items():
        expected = set(spec.parameters)
        if spec.process:  # options on the command line, as the runner writes them
            expected = {flag[2:].replace("-", "_") for flag in command_line(spec)
                        if flag.startswith("--")}
            # ...and --exit-with-parent, which the runner adds as it starts the process
            expected.add("exit_with_parent")
        assert nodes[name].parameters == expected, name


def test_every_node_runs_in_the_namespace_with_its_clock(pair):
    _, launch = pair
    rule = tuple(CLOCK_REMAP.split(":="))
    for node in launch.nodes().values():
        if node.process:
            continue
        assert {"namespace", "remappings"} <= set(node.keywords), node.name
        namespace = node.keywords["namespace"]
        if isinstance(namespace, ast.Name):
            namespace = launch.assigned[namespace.id]
        assert ast.unparse(namespace) == "LaunchConfiguration('namespace')", node.name
        remappings = node.keywords["remappings"]
        remappings = launch.assigned.get(getattr(remappings, "id", ""), remappings)
        assert ast.literal_eval(remappings) == [rule], node.name


def test_the_same_refusals(pair):
    comp, launch = pair
    assert launch.refusals() == [r.message for r in comp.refusals]
