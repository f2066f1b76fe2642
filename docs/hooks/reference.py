"""MkDocs hook: the reference pages, generated from the code at every build.

A page asks for a generated block with a marker on a line of its own:

    {{ executables PACKAGE }}   every console script of PACKAGE (its setup.py SCRIPTS):
                                argparse options, or the node's parameter table
    {{ launch NAME }}           the arguments of bam_bringup/launch/NAME.launch.py
    {{ topics }}                the topics of bam_sim/common/contract.py
    {{ parameter_keys }}        every key of a parameter file: symbol, unit, plausible
                                range, identification bounds, who uses it
    {{ models }}                the friction models of the registry
    {{ groups }}                the optional parameter groups
    {{ actuators }}             the shipped actuators and their identification bounds
    {{ published }}             the published parameter sets shipped with bam_sim

Nothing here is typed by hand: the tables come from the argparse parsers, the nodes'
``Param`` rows, the launch files' ``DeclareLaunchArgument``s, the topic contract and
the model registry, imported from this checkout's sources. The build needs the
workspace's environment (``make docs`` runs inside it). A missing executable, marker
or module fails the build.
"""

from __future__ import annotations

import argparse
import importlib
import math
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bam_sim", "bam_identify", "bam_drivers", "bam_bringup")
MARKER = re.compile(r"^\{\{\s*(executables|launch|topics|parameter_keys|models|groups|"
                    r"actuators|published)\b\s*([^}]*)\}\}[ \t]*$", re.M)

# How each console script exposes its options: an argparse parser built by a function
# ("parser"), a function that builds and parses at once ("parse": its parser is caught
# as it parses), or a node's table of Param rows ("node").
SOURCES = {
    ("bam_sim", "simulate"): ("parser", "bam_sim.simulate_cli:build_parser"),
    ("bam_sim", "pendulum"): ("node", "bam_sim.nodes.pendulum_node:PARAMETERS"),
    ("bam_sim", "arm"): ("node", "bam_sim.nodes.arm_node:PARAMETERS"),
    ("bam_sim", "monitor"): ("node", "bam_sim.nodes.monitor_node:PARAMETERS"),
    ("bam_identify", "fit"): ("parser", "bam_identify.fit_options:fit_parser"),
    ("bam_identify", "eval"): ("parser", "bam_identify.cli:eval_parser"),
    ("bam_identify", "recover"): ("parser", "bam_identify.cli:recover_parser"),
    ("bam_identify", "campaign"): ("parser", "bam_identify.campaign_cli:campaign_parser"),
    ("bam_identify", "export"): ("parser", "bam_identify.export_cli:export_parser"),
    ("bam_identify", "trajectory"): ("node", "bam_identify.nodes.trajectory_node:PARAMETERS"),
    ("bam_identify", "recorder"): ("node", "bam_identify.nodes.recorder_node:PARAMETERS"),
    ("bam_drivers", "dynamixel"): (
        "node", "bam_drivers.nodes.serial_servo_node:SerialServoNode.PARAMETERS"),
    ("bam_drivers", "feetech"): ("node", "bam_drivers.nodes.feetech_node:FeetechNode.PARAMETERS"),
    ("bam_drivers", "erob"): ("node", "bam_drivers.nodes.erob_node:ErobNode.PARAMETERS"),
    ("bam_drivers", "serial_servo_emulator"): (
        "parse", "bam_drivers.emulators.serial_servo_emulator:parse_args"),
    ("bam_drivers", "ethercat_emulator"): (
        "parse", "bam_drivers.emulators.ethercat_emulator:parse_args"),
    ("bam_bringup", "bench"): ("parser", "bam_bringup.runner:build_parser"),
}
# Nodes that also take the values of a parameter set as ROS parameters.
TAKES_A_SET = {("bam_sim", "pendulum"), ("bam_sim", "arm")}
# What a node's --help says of a default the node computes (the ``computed`` of its usage).
COMPUTED = {("bam_sim", "pendulum"): "the actuator's", ("bam_sim", "arm"): "per joint",
            ("bam_drivers", "dynamixel"): "see the meaning",
            ("bam_drivers", "feetech"): "see the meaning",
            ("bam_drivers", "erob"): "see the meaning"}
# A pointer under an executable's heading, where its options lead elsewhere.
NOTES = {("bam_bringup", "bench"): "`bench serve` takes the arguments of the launch file it "
         "reads, as `name:=value`: see [launch files](launch-files.md)."}

_rendered: set[tuple[str, str]] = set()


def _importable() -> None:
    """This checkout's packages first on the path (the built workspace gives bam_msgs)."""
    for package in reversed(PACKAGES):
        path = str(ROOT / package)
        if path not in sys.path:
            sys.path.insert(0, path)


def _load(target: str) -> object:
    module_name, _, attribute = target.partition(":")
    try:
        value = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"reference: cannot import {module_name} ({exc}); build the docs "
                          "in the workspace's environment: make docs") from None
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


def scripts(package: str) -> list[str]:
    """The console scripts of ``package``, in the order its setup.py lists them."""
    text = (ROOT / package / "setup.py").read_text(encoding="utf-8")
    block = re.search(r"^SCRIPTS = \[(.*?)^\]", text, re.M | re.S)
    if block is None:
        raise PluginError(f"reference: no SCRIPTS list in {package}/setup.py")
    return re.findall(r"'([A-Za-z0-9_]+) = ", block.group(1))


# -- argparse ------------------------------------------------------------------------------

class _Caught(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def parser_of(kind: str, target: str) -> argparse.ArgumentParser:
    """The argparse parser of an executable."""
    function = _load(target)
    if kind == "parser":
        return function()
    original = argparse.ArgumentParser.parse_args

    def catch(self, *args, **kwargs):
        raise _Caught(self)

    argparse.ArgumentParser.parse_args = catch
    try:
        function([])
    except _Caught as caught:
        return caught.parser
    finally:
        argparse.ArgumentParser.parse_args = original
    raise PluginError(f"reference: {target} parsed nothing")


def cell(text: object) -> str:
    """Text for a Markdown table cell."""
    text = " ".join(str(text).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def code(text: object) -> str:
    return "`" + str(text).replace("|", "\\|") + "`"


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:
        params = {**vars(action), "prog": prog}
        if action.choices is not None:
            params["choices"] = ", ".join(map(str, action.choices))
        text = text % params
    return text


def _default(action: argparse.Action) -> str:
    default = action.default
    if default in (None, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction):
        return ""
    if isinstance(default, (list, tuple)):
        return code(" ".join(map(str, default))) if default else ""
    return code(default) if default != "" else '`""`'


def option_rows(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    formatter = parser._get_formatter()
    rows = []
    for action in actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        invocation = formatter._format_action_invocation(action)
        if not action.option_strings:
            invocation = formatter._format_args(action, action.dest)
        text = cell(_help(action, parser.prog))
        if action.required and action.option_strings:
            text = f"{text} (required)" if text else "required"
        rows.append(f"| {code(invocation)} | {_default(action)} | {text} |")
    return rows


def render_parser(parser: argparse.ArgumentParser, command: str, depth: int) -> list[str]:
    lines = []
    if parser.description:
        lines += [cell(parser.description).replace("\\|", "|"), ""]
    untitled = ("options", "optional arguments", "positional arguments")
    plain = [a for g in parser._action_groups if g.title in untitled for a in g._group_actions]
    titled = [g for g in parser._action_groups if g.title not in untitled and g._group_actions]
    header = ["| option | default | meaning |", "|---|---|---|"]
    rows = option_rows(parser, plain)
    if rows:
        lines += [*header, *rows, ""]
    for group in titled:
        description = f": {cell(group.description)}" if group.description else ""
        lines += [f"**{group.title}**{description}", "", *header,
                  *option_rows(parser, group._group_actions), ""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                heading = "#" * (depth + 1)
                lines += [f"{heading} `{command} {name}`", ""]
                if helps.get(name):
                    lines += [cell(helps[name]).capitalize() + ".", ""]
                lines += render_parser(sub, f"{command} {name}", depth + 1)
    return lines


# -- nodes ---------------------------------------------------------------------------------

def _number(x: object) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


def render_node(params, computed: str) -> list[str]:
    lines = ["| parameter | default | range | meaning |", "|---|---|---|---|"]
    for p in params:
        if p.default is None:
            default = computed
        elif isinstance(p.default, float) and math.isnan(p.default):
            default = "`nan` (none)"
        else:
            default = code(repr(p.default) if isinstance(p.default, str) else p.default)
        span = "" if p.low is None else f"[{_number(p.low)}, {_number(p.high)}]"
        meaning = cell(p.description) + ("; read-only" if p.read_only else "")
        lines.append(f"| `{p.name}` | {default} | {span} | {meaning} |")
    return lines + [""]


def _docstring_summary(module_name: str) -> str:
    doc = importlib.import_module(module_name).__doc__ or ""
    first = doc.strip().split("\n\n")[0]
    return cell(first).replace("\\|", "|")


def render_executable(package: str, name: str) -> list[str]:
    try:
        kind, target = SOURCES[(package, name)]
    except KeyError:
        raise PluginError(f"reference: {package}/setup.py names the console script {name}, "
                          "which docs/hooks/reference.py does not know: add it to SOURCES"
                          ) from None
    _rendered.add((package, name))
    run = "bench" if package == "bam_bringup" else name
    lines = [f"### `{name}` {{#{name}}}", ""]
    if kind == "node":
        lines += [f"`ros2 run {package} {run} --ros-args -p NAME:=VALUE ...` "
                  "(or `--params-file FILE`)", ""]
        module = target.partition(":")[0]
        lines += [_docstring_summary(module), ""]
        lines += render_node(_load(target), COMPUTED.get((package, name), "computed"))
        if (package, name) in TAKES_A_SET:
            lines += ["It also takes the values of one parameter set as ROS parameters "
                      "(`--params-file` with a file of the fit, or `-p` with `actuator` and "
                      "`model`): every key of [parameter files](parameter-files.md).", ""]
    else:
        parser = parser_of(kind, target)
        lines += [f"`ros2 run {package} {run} [options]`", ""]
        lines += render_parser(parser, name, 3)
        if (package, name) in NOTES:
            lines += [NOTES[(package, name)], ""]
    return lines


# -- launch files, topics, parameters ------------------------------------------------------

def render_launch(name: str) -> list[str]:
    from bam_bringup.launch_standin.launch_file import LaunchFile

    path = ROOT / "bam_bringup" / "launch" / f"{name}.launch.py"
    if not path.exists():
        raise PluginError(f"reference: no launch file {path}")
    lines = ["| argument | default | meaning |", "|---|---|---|"]
    for arg in LaunchFile(name, path).arguments().values():
        default = code(arg.default) if arg.default else '`""`'
        lines.append(f"| `{arg.name}` | {default} | {cell(arg.description)} |")
    return lines + [""]


def _qos(qos) -> str:
    return ", ".join([("reliable" if qos.reliable else "best effort"),
                      ("transient local" if qos.transient_local else "volatile"),
                      f"depth {qos.depth}"])


def render_topics() -> list[str]:
    contract = _load("bam_sim.common.contract")
    topics = {name: value for name, value in vars(contract).items()
              if isinstance(value, contract.Topic)}
    roles = {}
    for group, text in (("ACTUATOR_PUBLISHES", "published by every actuator node"),
                        ("ACTUATOR_SUBSCRIBES", "taken by every actuator node"),
                        ("RECORDED", "recorded for a bench fit")):
        for topic in getattr(contract, group):
            roles.setdefault(topic.name, []).append(text)
    lines = ["| topic | type | QoS | role |", "|---|---|---|---|"]
    for topic in topics.values():
        role = "; ".join(roles.get(topic.name, [])) or "see below"
        lines.append(f"| `{topic.name}` | `{topic.type}` | {_qos(topic.qos)} | {role} |")
    lines += ["", f"Action: `{contract.RUN_TRAJECTORY_ACTION}` "
              "(`bam_msgs/action/RunTrajectory`).", ""]
    return lines


def _symbols() -> dict[str, tuple[str, str]]:
    """(symbol, unit) of each key, from the table in parameter_vector's docstring."""
    P = _load("bam_sim.models.parameter_vector")
    table = {}
    for line in (P.__doc__ or "").splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in P.INDEX:
            table[words[0]] = (words[1], words[2] if len(words) > 2 else "")
    return table


def _span(low: float, high: float, low_open: bool = False) -> str:
    return f"{'(' if low_open else '['}{_number(low)}, {_number(high)}]"


def render_parameter_keys() -> list[str]:
    P = _load("bam_sim.models.parameter_vector")
    registry = _load("bam_sim.models.model_registry")
    groups = _load("bam_sim.models.dcmotor.groups").GROUPS
    specs = dict(registry._SPECS)
    used: dict[str, list[str]] = {}
    for model in registry.FRICTION_MODELS.values():
        for name in model.params:
            used.setdefault(name, []).append(model.name)
    for group in groups.values():
        for spec in group.specs:
            specs.setdefault(spec.name, spec)
            used.setdefault(spec.name, []).append(f"group `{group.name}`")
    symbols = _symbols()
    motor_keys = _motor_keys(_load("bam_sim.models.servo.actuators"))
    lines = ["| key | symbol | unit | plausible range | identification bounds | used by |",
             "|---|---|---|---|---|---|"]
    for name in P.NAMES:
        unit, low, high = P.PLAUSIBLE[name]
        spec = specs.get(name)
        symbol = spec.symbol if spec else symbols.get(name, ("", ""))[0]
        if symbol in ("(bench)", "–"):
            symbol = ""
        bounds = ""
        if spec is not None:
            bounds = _span(spec.lower, spec.upper)
            if spec.scale:
                bounds += f" × {spec.scale} scale"
        elif name in motor_keys:
            bounds = "per actuator ([actuators](#actuators))"
        elif name == "q_offset":
            bounds = "identified unless `--no-offset`"
        who = used.get(name, [])
        if name in P.ALIASES:
            who = [f"alias of `{P.ALIASES[name]}` (dcmotor family)"]
        text = ", ".join(f"`{w}`" if not w.startswith(("group", "alias")) else w for w in who)
        lines.append(f"| `{name}` | {cell(symbol)} | {cell(unit)} | "
                     f"{_span(low, high, name in P.STRICTLY_POSITIVE)} | {bounds} | {text} |")
    return lines + [""]


def render_models() -> list[str]:
    registry = _load("bam_sim.models.model_registry")
    lines = ["| model | friction | equation | parameters |", "|---|---|---|---|"]
    for m in registry.FRICTION_MODELS.values():
        params = ", ".join(f"`{p}`" for p in m.params)
        lines.append(f"| `{m.name}` | {cell(m.title)} | ({m.equation}) of {cell(m.paper)} | "
                     f"{params} |")
    return lines + [""]


def render_groups() -> list[str]:
    groups = _load("bam_sim.models.dcmotor.groups").GROUPS
    lines = ["| group | what | keys | `fit --groups` identifies | carried by |",
             "|---|---|---|---|---|"]
    for g in groups.values():
        keys = ", ".join(f"`{n}`" for n in g.names)
        identified = ", ".join(f"`{n}`" for n in g.identified) or "nothing (a constant)"
        who = f"the {g.family_text} family" if g.families else "any actuator"
        lines.append(f"| `{g.name}` | {cell(g.title)} | {keys} | {identified} | {who} |")
    return lines + [""]


def _motor_keys(actuators) -> set[str]:
    """The keys each actuator identifies with the model or holds fixed."""
    return {k for a in actuators.ACTUATORS.values() for k in (*a.motor_bounds, *a.fixed)}


def render_actuators() -> list[str]:
    actuators = _load("bam_sim.models.servo.actuators")
    families = _load("bam_sim.models.servo.actuator").FAMILY_NAMES
    lines = ["| actuator | servo | law | supply (V) | gains (unit) | driver | identified with "
             "the model | held fixed | bound scales |", "|---|---|---|---|---|---|---|---|---|"]
    for a in actuators.ACTUATORS.values():
        bounds = ", ".join(f"`{k}` {_span(*b)}" for k, b in a.motor_bounds.items())
        fixed = ", ".join(f"`{k}` = {_number(v)}" for k, v in a.fixed.items()) or "–"
        scales = ", ".join(f"{k} {_number(v)}" for k, v in a.scales.items())
        gains = ", ".join(_number(g) for g in a.gains) + f" ({cell(a.gain_unit)})"
        lines.append(f"| `{a.name}` | {cell(a.title)} | {families[a.family]} | "
                     f"{_number(a.supply_voltage)} | {gains} | {a.driver or '–'} | {bounds} | "
                     f"{fixed} | {scales} |")
    return lines + [""]


def render_published() -> list[str]:
    folder = ROOT / "bam_sim" / "bam_sim" / "models" / "files" / "published"
    sets: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.yaml")):
        actuator, _, model = path.stem.rpartition("_")
        sets.setdefault(actuator, []).append(model)
    lines = ["| actuator | published models |", "|---|---|"]
    for actuator, models in sets.items():
        lines.append(f"| `{actuator}` | {', '.join(f'`{m}`' for m in models)} |")
    return lines + [""]


def render(kind: str, argument: str) -> list[str]:
    argument = argument.strip()
    if kind == "executables":
        if argument not in PACKAGES:
            raise PluginError(f"reference: no package {argument!r} ({', '.join(PACKAGES)})")
        lines = []
        for name in scripts(argument):
            lines += render_executable(argument, name)
        return lines
    if kind == "launch":
        return render_launch(argument)
    return {"topics": render_topics, "parameter_keys": render_parameter_keys,
            "models": render_models, "groups": render_groups, "actuators": render_actuators,
            "published": render_published}[kind]()


# -- MkDocs events -------------------------------------------------------------------------

def on_config(config, **kwargs):
    _importable()
    _rendered.clear()
    return config


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    def replace(match: re.Match) -> str:
        try:
            return "\n".join(render(match.group(1), match.group(2)))
        except PluginError:
            raise
        except Exception as exc:  # a broken generator names the page and the marker
            raise PluginError(f"reference: {page.file.src_uri}: {match.group(0)}: "
                              f"{type(exc).__name__}: {exc}") from exc

    return MARKER.sub(replace, markdown)


def on_post_build(config, **kwargs) -> None:
    missing = [f"{p} {n}" for p in PACKAGES for n in scripts(p) if (p, n) not in _rendered]
    if missing:
        raise PluginError("reference: executables without a reference section: "
                          + ", ".join(missing) + " (add {{ executables PACKAGE }} to a page)")
