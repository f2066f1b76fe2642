"""ROS arguments and node parameters: one line and exit 2 for every mistake, never a traceback.

The ``--ros-args`` sections are checked by our code before rcl reads them;
rcl itself is the independent reference (it must refuse what we refuse, and
accept what we accept). A parameter set given as ROS parameters goes through
the parameter-file loader; unknown parameters are refused by every node.
Most cases run in-process; a few start the executables.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import rclpy
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter

from bam_sim.common import ros_arguments
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import declare, refuse_unknown
from bam_sim.common.runner import error_line
from bam_sim.models.files.parameter_file import load, parse_mapping, published_named, save
from bam_sim.nodes import ros_parameter_set
from bam_sim.nodes.arm_node import ArmNode
from bam_sim.nodes.pendulum_node import PARAMETERS, PendulumNode
from bam_testing.processes import read_until
from bam_testing.ros_context import private_context, ros_domain

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s: a process's start, or its exit after a signal
DOMAIN = ros_domain(2)
PENDULUM_DEFAULTS = {"gain": 5.0, "supply_voltage": 12.0}  # computed by the node itself


# -- files -------------------------------------------------------------------------------

def _fitted(folder: Path, edit=None, name: str = "fitted.yaml") -> Path:
    """The published MX-64 m4 set as a fitted file, each line passed through ``edit``."""
    good = folder / "good.yaml"
    if not good.exists():
        save(published_named("mx64", "m4"), good)
    lines = [edit(line) if edit else line for line in good.read_text().splitlines()]
    path = folder / name
    path.write_text("\n".join(line for line in lines if line is not None) + "\n")
    return path


def _replace(key: str, new: str | None):
    """An edit of a fitted file: the line of ``key`` becomes ``new`` (None: dropped)."""
    def edit(line: str) -> str | None:
        if line.strip().startswith(f"{key}:"):
            return None if new is None else line.replace(f"{key}:", new, 1)
        return line
    return edit


BAD_FILES = {  # name: (text, what our message says)
    "tabs.yaml": ("/**:\n  ros__parameters:\n\tmass: 1.0\n", "tab"),
    "broken.yaml": ("/**:\n  ros__parameters: {mass: [}\n", "not valid YAML"),
    "no_block.yaml": ("/**:\n  mass: 1.0\n", "ros__parameters"),
    "flat.yaml": ("mass: 1.0\n", "ros__parameters"),
    "no_value.yaml": ("/**:\n  ros__parameters:\n    mass:\n", "has no value"),
    "mixed.yaml": ("/**:\n  ros__parameters: {offsets: [1, 2.5]}\n", "one type"),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, (text, _) in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _rcl_refuses(argv: list[str]) -> bool:
    try:
        rclpy.utilities.remove_ros_args(argv)
    except ros_arguments.RCL_ERRORS:
        return True
    return False


# -- the --ros-args check, against rcl -----------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["-p", "port:="], "-p port:= has no value"),
    (["-p", "joint_name:="], "-p joint_name:= has no value"),
    (["-p", "foo"], "write parameters as -p NAME:=VALUE"),
    (["-p", ":=1.0"], "is not a parameter name"),
    (["-p", "x:=[1, 2.5]"], "one type"),
    (["-p", "x:={a: 1}"], "not a mapping"),
    (["-p", "x:=[1,"], "not valid YAML"),
    (["--params-file"], "--params-file needs a value"),
    (["--params-file", "{folder}/none.yaml"], "does not exist"),
    (["--bogus"], "unknown ROS argument '--bogus'"),
    *[(["--params-file", f"{{folder}}/{name}"], text) for name, (_, text) in BAD_FILES.items()],
])
def test_bad_ros_arguments_are_one_line_before_rcl_refuses_them(folder, args, message):
    argv = ["pendulum", "--ros-args", *[a.replace("{folder}", str(folder)) for a in args]]
    with pytest.raises(BamError) as info:
        ros_arguments.check(argv)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert _rcl_refuses(argv)  # the reference agrees: a ROS argument error


@pytest.mark.parametrize("args", [
    ["-p", "mass:=2.0"], ["-p", "joint_name:=''"], ["-p", "x:=~"], ["-p", "ids:=[]"],
    ["-p", "recorder:output:=x"], ["-r", "a:=b", "--log-level", "warn"],
    ["--params-file", "{folder}/good.yaml"], ["--params-file", "{folder}/empty.yaml"],
    ["--params-file", "{folder}/nested.yaml"], ["--enable-stdout-logs", "--", "extra"],
])
def test_good_ros_arguments_pass_our_check_and_rcl(folder, args):
    save(published_named("mx64", "m4"), folder / "good.yaml")
    (folder / "empty.yaml").write_text("")
    (folder / "nested.yaml").write_text("bench1:\n  pendulum:\n    ros__parameters: {a: 1}\n")
    argv = ["pendulum", "--ros-args", *[a.replace("{folder}", str(folder)) for a in args]]
    ros_arguments.check(argv)
    assert not _rcl_refuses(argv)


def test_what_only_rcl_refuses_is_one_line_too():
    """The last resort: rcl's own refusal, past our check, as one BamError line."""
    argv = ["pendulum", "--ros-args", "-p", "/ns/pendulum:x:=1"]
    given_ = ros_arguments.check(argv)  # a node prefix rcl does not take: let through
    for call in (lambda: ros_arguments.without_ros_args(argv),
                 lambda: ros_arguments.init(argv, given_, context=rclpy.Context(),
                                            domain_id=DOMAIN)):
        with pytest.raises(BamError, match="bad ROS arguments: .*/ns/pendulum:x:=1") as info:
            call()
        assert "\n" not in str(info.value) and ".c:" not in str(info.value)


def test_names_of_wildcard_blocks_are_shared_the_others_addressed(folder):
    (folder / "shared.yaml").write_text("/**:\n  ros__parameters: {storage: mcap, mass: 2.0}\n"
                                        "/bench1/*:\n  ros__parameters: {output: x}\n"
                                        "/**/pendulum:\n  ros__parameters: {lenght: 1.0}\n")
    given_ = ros_arguments.check(["p", "--ros-args", "--params-file", str(folder / "shared.yaml"),
                                  "-p", "mass:=1.0", "-p", "recorder:quality:=1"])
    assert given_.shared_only("/pendulum") == {"storage"}
    assert given_.shared_only("/bench1/pendulum") == {"storage", "output"}
    # -p mass:= is this process's node's, whatever its name; recorder:quality:= the recorder's
    assert given_.shared_only("/bench1/recorder") == {"storage", "output"}


# -- unknown node parameters ----------------------------------------------------------------

def _declared_pendulum(ctx: rclpy.Context) -> Node:
    """A node with the pendulum's parameters, as the pendulum declares them."""
    node = Node("pendulum", context=ctx, start_parameter_services=False, enable_rosout=False)
    declare(node, PARAMETERS, PENDULUM_DEFAULTS)
    return node


def _started(argv: list[str]):
    """A context started as the runner starts it (our check, then rclpy.init)."""
    ctx = rclpy.Context()
    ros_arguments.init(argv, ros_arguments.check(argv), context=ctx, domain_id=DOMAIN)
    return ctx


@pytest.mark.parametrize(("args", "refused"), [
    (["-p", "masss:=2.0"], "unknown parameter 'masss' for node pendulum; did you mean 'mass'?"),
    (["--params-file", "{folder}/mine.yaml"], "unknown parameter 'storage' for node pendulum"),
    (["-p", "pendulum:storage:=x"], "unknown parameter 'storage'"),
    (["--params-file", "{folder}/shared.yaml"], None),  # another node's, in a /** block
    (["-p", "use_sim_time:=true", "-p", "recorder:storage:=x"], None),
])
def test_unknown_parameters_of_this_node_are_refused_those_of_others_left(folder, args, refused):
    (folder / "mine.yaml").write_text("pendulum:\n  ros__parameters: {storage: mcap}\n")
    (folder / "shared.yaml").write_text("/**:\n  ros__parameters: {storage: mcap, mass: 2.0}\n")
    ctx = _started(["pendulum", "--ros-args", *[a.replace("{folder}", str(folder)) for a in args]])
    try:
        node = _declared_pendulum(ctx)
        if refused is None:
            refuse_unknown(node)
        else:
            with pytest.raises(BamError, match=refused.replace("?", r"\?")):
                refuse_unknown(node)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize(("node_class", "typo", "meant"), [
    (PendulumNode, "lenght", "length"), (ArmNode, "viewr", "viewer")])
def test_the_sim_nodes_refuse_a_misspelt_parameter_before_they_start(node_class, typo, meant):
    with private_context(DOMAIN) as ctx:
        with pytest.raises(BamError, match=f"unknown parameter '{typo}' for node .*; did you "
                           f"mean '{meant}'"):
            node_class(context=ctx, parameter_overrides=[
                Parameter(typo, value=1.0)])


# -- a parameter set given as ROS parameters --------------------------------------------------

FAULTS = [  # (edit of the fitted file, what both loaders say)
    (_replace("kt", "kt: .nan #"), "must be a finite number"),
    (_replace("kt", None), "missing parameter kt"),
    (_replace("dtheta_stribeck", None), "missing parameter dtheta_stribeck"),
    (_replace("friction_base", "frction_base:"), "did you mean 'friction_base'?"),
    (_replace("alpha", "alpah:"), "did you mean 'alpha'?"),
]


@pytest.mark.parametrize(("edit", "message"), FAULTS)
def test_a_faulty_fitted_file_is_refused_alike_by_params_file_and_by_ros_args(
        folder, edit, message):
    path = _fitted(folder, edit)
    with private_context(DOMAIN, args=["--ros-args", "--params-file", str(path)]) as ctx:
        for node_class in (PendulumNode, ArmNode):
            with pytest.raises(BamError) as info:
                node_class(context=ctx)
            assert message in str(info.value) and "ROS parameters" in str(info.value)
    with pytest.raises(BamError) as info:
        load(path)
    assert message in str(info.value)


def test_the_set_rcl_hands_a_node_is_the_file_read_back(folder):
    """rcl flattens a file (provenance.source, ...): the loader gets the same set back."""
    path = save(published_named("mx106", "m6"), folder / "mx106.yaml")
    with private_context(DOMAIN, args=["--ros-args", "--params-file", str(path)]) as ctx:
        node = Node("pendulum", context=ctx, start_parameter_services=False,
                    enable_rosout=False)
        entries = {n: p.value for n, p in node._parameter_overrides.items()}
        node.destroy_node()
    assert "provenance.citation" in entries
    read = parse_mapping(entries, "overrides")
    assert (read.actuator.name, read.model.name, read.values) == ("mx106", "m6",
                                                                   load(path).values)
    assert read.provenance == load(path).provenance


DCMOTOR = """/**:
  ros__parameters:
    actuator: dcmotor
    model: lugre
    input: position
    resistance: 2.0
    motorconst: {Kt: 0.4, Ke: 0.9}
    armature: 0.01
    thermal: {resistance: 4.0, timeconst: 100.0, tempcoef: 0.0039, reftemp: 25, ambient: 22}
    lugre: {stiffness: 200, damping: 3.0, coulomb: 0.05, static: 0.1, stribeck: 0.2,
            viscous: 0.05}
    controller: {ki: 5.0, kd: 0.3, slewmax: 10.0, Imax: 0.5, Vmax: 24.0}
    provenance: {source: hand-written}
"""


@pytest.mark.parametrize("text", [None, DCMOTOR])
def test_a_set_given_as_ros_parameters_is_the_file_and_its_entries_are_declared(folder, text):
    """The node's set equals the loader's reading of the file, the document's alternative
    forms (motorconst: {Kt, Ke}, thermal.timeconst) and metadata included."""
    path = folder / "set.yaml"
    if text is None:
        save(published_named("mx64", "m6"), path)
    else:
        path.write_text(text)
    ctx = _started(["pendulum", "--ros-args", "--params-file", str(path)])
    try:
        node = _declared_pendulum(ctx)
        read = ros_parameter_set.declare_values(node)
        refuse_unknown(node)  # nothing of the file is left unknown
        source = node.get_parameter("provenance.source").value
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
    assert (read.actuator, read.model, read.values) == (load(path).actuator, load(path).model,
                                                        load(path).values)
    assert source == load(path).provenance["source"]


def test_a_set_and_params_file_together_are_refused(folder):
    path = _fitted(folder)
    with private_context(DOMAIN, args=["--ros-args", "--params-file", str(path)]) as ctx:
        with pytest.raises(BamError, match="given twice"):
            PendulumNode(context=ctx, parameter_overrides=[
                Parameter("params_file", value=str(path))])


# -- generated arguments for the pendulum's parameters ---------------------------------------

NAMES = [p.name for p in PARAMETERS] + ["kt", "friction_base", "masss", "lenght",
                                        "use_sim_time", "actuator"]
TEXTS = ["", "1.5", "-2.0", "3", "0", "0.5", "true", "abc", "mx64", "m1", "[1.0, 2.0]",
         "[1, 2.5]", "{a: 1}", ".nan", "''", "[", "1e-3"]


def _valid_text(param) -> st.SearchStrategy[str]:
    """Texts of values ``param`` takes: its type, within its range."""
    if isinstance(param.default, bool):
        return st.sampled_from(["true", "false"])
    if isinstance(param.default, int):
        return st.integers(int(param.low), int(param.high)).map(str)
    if param.low is not None:
        return st.floats(param.low, param.high).map(repr)
    return st.sampled_from(["m4", "pendulum", "''"])


valid_pair = st.sampled_from(PARAMETERS).flatmap(
    lambda p: st.tuples(st.just(p.name), _valid_text(p)))
any_pair = st.tuples(st.sampled_from(NAMES), st.one_of(
    st.sampled_from(TEXTS), st.floats(-5.0, 2000.0, allow_nan=False).map(repr)))
arguments = st.lists(st.one_of(valid_pair, valid_pair, valid_pair, any_pair),
                     min_size=1, max_size=3)


def _expected(text: str) -> object:
    """The value rcl gives ``-p NAME:=text``: YAML, except that rcl reads a number without a
    decimal point (``1e-05``) as a double where YAML 1.1 keeps a string."""
    value = yaml.safe_load(text)
    if isinstance(value, str) and text == value:
        try:
            return float(text)
        except ValueError:
            pass
    return value


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@settings(max_examples=100, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments)
def test_generated_parameters_are_one_line_errors_or_applied(pairs):
    argv = ["pendulum", "--ros-args", *[a for n, t in pairs for a in ("-p", f"{n}:={t}")]]
    try:
        ros_arguments.check(argv)
    except BamError as exc:
        assert "\n" not in str(exc)
        assert _rcl_refuses(argv)  # refused by us only where rcl refuses too
        event("refused: ROS arguments")
        return
    ctx = _started(argv)
    node = None
    try:
        try:  # what the runner does: a BamError or a ParameterException is one line
            node = Node("pendulum", context=ctx, start_parameter_services=False,
                        enable_rosout=False)
            declare(node, PARAMETERS, PENDULUM_DEFAULTS)
            ros_parameter_set.declare_values(node)
            refuse_unknown(node)
        except (BamError, ParameterException) as exc:
            assert "\n" not in error_line("pendulum", exc)
            event("refused: parameters")
            return
        last = dict(pairs)  # the last -p of a name wins
        for name, text in last.items():
            assert _same(node.get_parameter(name).value, _expected(text)), (name, text)
        event("applied")
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)


# -- the executables ----------------------------------------------------------------------------

def _env() -> dict:
    return {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "ROS_AUTOMATIC_DISCOVERY_RANGE":
            "LOCALHOST", "PYTHONUNBUFFERED": "1"}


def _run(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, "--ros-args", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


@pytest.mark.parametrize(("module", "args", "message"), [
    ("bam_sim.nodes.pendulum_node", ["-p", "port:="], "pendulum: error: -p port:= has no"),
    ("bam_sim.nodes.pendulum_node", ["--params-file", "fitted.yaml"],
     "pendulum: error: unknown parameter 'frction_base'"),
])
def test_executables_say_one_line_and_exit_2(folder, module, args, message):
    _fitted(folder, _replace("friction_base", "frction_base:"))
    before = set(os.listdir(folder))
    done = _run(module, args, folder)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith(message) and "Traceback" not in done.stderr
    assert set(os.listdir(folder)) == before  # nothing written


def test_the_pendulum_takes_a_shared_file_and_stops_on_sigterm(folder):
    path = folder / "launch.yaml"
    path.write_text("/**:\n  ros__parameters: {storage: mcap, mass: 0.5}\n")
    proc = subprocess.Popen([sys.executable, "-m", "bam_sim.nodes.pendulum_node", "--ros-args",
                             "--params-file", str(path)], env=_env(), cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        seen = read_until(proc, "m=0.5 kg", TIMEOUT)  # its start line: mass applied
        assert "storage" in seen and "left to the other nodes" in seen
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
