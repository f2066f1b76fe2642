"""Bad input to the identification commands: one line, exit 2, nothing written or lost.

Each case runs a command's ``main`` as a user would and checks the exit code,
that the error is one line naming the problem, and that every file already
in the folder is byte-identical afterwards. A few run as real processes (the
interpreter prints no traceback, the exit status is the process's), two of
them racing for the same new output; a hypothesis test feeds generated option
values to the parsing and validation layer of every command.
"""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from identify_cases import mx64_session

from bam_identify.campaign_cli import campaign_main, campaign_parser
from bam_identify.cli import (
    NUMBERS,
    FitJob,
    eval_main,
    eval_parser,
    fit_main,
    fit_parser,
    recover_main,
    recover_parser,
)
from bam_identify.data.bag_writer import write_bag
from bam_identify.export_cli import check_export_args, export_main, export_parser
from bam_identify.protocol import parse_protocol
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.output_paths import check_output
from bam_sim.models.files.bam_json import parameters_to_json
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.models.parameter_set import ParameterSet
from bam_testing.output_cases import device_node, fifo, same_node

LONG = "n" * 300  # a name over the 255 bytes a file name may have
ROBOT = """<mujoco model="robot">
  <worldbody>
    <body name="link" pos="0 0 0">
      <joint name="elbow" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02" mass="0.5"/>
    </body>
  </worldbody>
  <actuator><motor name="elbow_motor" joint="elbow"/></actuator>
</mujoco>
"""


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    return write_bag(tmp_path_factory.mktemp("bags") / "bench", [mx64_session(duration=0.5)])


@pytest.fixture
def files(tmp_path):
    """A folder of things a command must never change: a text file, parameter sets
    (one an unstable LuGre set), a robot MJCF and another program's SQLite database."""
    (tmp_path / "taken.txt").write_text("keep me")
    save(published_named("mx64", "m1"), tmp_path / "m1.yaml")
    save(published_named("mx64", "m4"), tmp_path / "m4.yaml")
    save(ParameterSet.from_names("dcmotor", "lugre", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "lugre.stiffness": 1.0e9,
        "lugre.damping": 3.0, "lugre.coulomb": 0.05, "lugre.static": 0.1,
        "lugre.stribeck": 0.2, "lugre.viscous": 0.05}), tmp_path / "unstable.yaml")
    (tmp_path / "robot.xml").write_text(ROBOT)
    with contextlib.closing(sqlite3.connect(tmp_path / "other.db")) as conn:
        conn.execute("CREATE TABLE customers (name TEXT)")
        conn.commit()
    return tmp_path


def snapshot(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def call(main, args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exit_:  # argparse's own refusals
        return exit_.code


def expand(args: list[str], tmp: Path, bag: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)).replace("{bag}", str(bag)) for a in args]


def assert_refused(code: int, err: str, message: str) -> None:
    assert code == 2, err
    assert message in err and err.strip().count("\n") == 0, err
    assert "Traceback" not in err


FIT_CASES = {
    "popsize 1": (["--popsize", "1"], "argument --popsize: must be in [2, 100000], got 1"),
    "negative popsize": (["--popsize", "-3"], "--popsize: must be in [2, 100000]"),
    "memory-exhausting dt": (["--dt", "1e-12"], "--dt: must be in [0.0001, 1), got 1e-12"),
    "zero trials": (["--trials", "0"], "--trials: must be in [1, 100000000], got 0"),
    "fractional trials": (["--trials", "2.5"], "--trials: must be a whole number"),
    "negative seed": (["--seed", "-1"], "--seed: must be in [0, 4294967295], got -1"),
    "negative jobs": (["--jobs", "-3"], "--jobs: must be in [1, 4096], got -3"),
    "nan target": (["--target-mae", "nan"], "--target-mae: must be a finite number"),
    "negative target": (["--target-mae", "-1"], "--target-mae: must be in (0, 10], got -1"),
    "zero workers": (["--storage", "sqlite:///{tmp}/s.db", "--workers", "0"],
                     "--workers: must be in [1, 1000], got 0"),
    "whole validation": (["--validation-fraction", "1"], "--validation-fraction: must be in"),
    "zero validation kp": (["--validation-kp", "0"], "--validation-kp: must be in (0, 10000]"),
    "negative weight": (["--temperature-weight", "-1"], "--temperature-weight: must be in"),
    "output inside a file": (["--output", "{tmp}/taken.txt/p.yaml"], "is a file, not a folder"),
    "report inside a file": (["--report", "{tmp}/taken.txt/r"], "is a file, not a folder"),
    "report is a file": (["--report", "{tmp}/taken.txt", "--force"],
                         "--report {tmp}/taken.txt is a file, not a folder"),
    "report is the data": (["--report", "{bag}", "--force"], "is the input --bags"),
    "long output name": (["--output", f"{{tmp}}/{LONG}.yaml"], "is 305 bytes long"),
    "long report name": (["--report", f"{{tmp}}/{LONG}"], "is 300 bytes long"),
    "unwritable output": (["--output", "/proc/bam/p.yaml"], "/proc is not writable"),
    "device as data": (["--bags", "/dev/null"], "--bags /dev/null is not a file or folder"),
    "unknown model": (["--models", "m9"], "invalid choice: 'm9'"),
    "absurd fixed value": (["--set", "kt=1e30"], "parameter 'kt' = 1e+30 is outside"),
    "unknown fixed name": (["--set", "kq=1"], "unknown parameter 'kq'"),
    "no value": (["--set", "kt"], "'kt' is not NAME=VALUE"),
    "implausible armature": (["--set", "armature=0"],
                             "--set armature=0 is outside [0.001, 0.05], the range the fit "
                             "searches for armature on mx64"),
    "fixed twice": (["--set", "kt=1.6", "--set", "kt=1.7"], "--set kt is given 2 times"),
    "memory storage": (["--storage", "sqlite:///"], "keeps the study in memory only"),
    "mistyped storage": (["--storage", "sqlite//x.db"], "is not a database URL"),
    "foreign database": (["--storage", "sqlite:///{tmp}/other.db"],
                         "holds tables of another program (customers)"),
    "unknown database": (["--storage", "mysql://u@h/db"], "into SQLite or PostgreSQL"),
}


@pytest.mark.parametrize("case", FIT_CASES)
def test_fit_refuses_bad_input_before_working(case, bag, files, capsys):
    extra, message = FIT_CASES[case]
    before = snapshot(files)
    args = ["--bags", str(bag), "--models", "m1", "--trials", "4", "--quiet",
            "--output", str(files / "p.yaml"), "--report", str(files / "r")]
    code = call(fit_main, args + expand(extra, files, bag))
    assert_refused(code, capsys.readouterr().err, message.replace("{tmp}", str(files)))
    assert snapshot(files) == before


OTHER_CASES = {
    "eval scores over its own parameters": (
        eval_main, ["--params", "{tmp}/m1.yaml", "--bags", "{bag}", "--json", "{tmp}/m1.yaml",
                    "--force"], "--json {tmp}/m1.yaml is the input --params"),
    "eval json of a long name": (
        eval_main, ["--params", "{tmp}/m1.yaml", "--bags", "{bag}", "--json",
                    f"{{tmp}}/{LONG}.json"], "is 305 bytes long"),
    "eval json over a file": (
        eval_main, ["--params", "{tmp}/m1.yaml", "--bags", "{bag}", "--json",
                    "{tmp}/taken.txt"], "already exists; choose another path or pass --force"),
    "eval nan dt": (eval_main, ["--params", "{tmp}/m1.yaml", "--bags", "{bag}", "--dt", "nan"],
                    "argument --dt: must be a finite number"),
    "export over its robot": (
        export_main, ["{tmp}/m1.yaml", "--format", "dcmotor-mjcf", "--mjcf", "{tmp}/robot.xml",
                      "--joint", "elbow", "--output", "{tmp}/robot.xml", "--force"],
        "is the input --mjcf"),
    "export over its parameters": (
        export_main, ["{tmp}/m1.yaml", "--output", "{tmp}/m1.yaml", "--force"],
        "is the input params"),
    "export zero gain": (export_main, ["{tmp}/m1.yaml", "--format", "dcmotor-mjcf", "--gain",
                                       "0", "--output", "{tmp}/a.xml"],
                         "argument --gain: must be in (0, 10000], got 0"),
    "export huge gain": (export_main, ["{tmp}/m1.yaml", "--format", "dcmotor-mjcf", "--gain",
                                       "1e308", "--output", "{tmp}/a.xml"], "got 1e+308"),
    "export gain above the servo's": (
        export_main, ["{tmp}/m1.yaml", "--format", "dcmotor-mjcf", "--gain", "300",
                      "--output", "{tmp}/a.xml"], "above the largest gain 254 the mx64"),
    "export gain to bam-json": (
        export_main, ["{tmp}/m1.yaml", "--gain", "8", "--output", "{tmp}/a.json"],
        "--gain means nothing to --format bam-json; it applies to dcmotor-mjcf only"),
    "export joint to bam-json": (
        export_main, ["{tmp}/m1.yaml", "--joint", "elbow", "--output", "{tmp}/a.json"],
        "--joint means nothing to --format bam-json"),
    "export unstable lugre": (
        export_main, ["{tmp}/unstable.yaml", "--format", "dcmotor-mjcf", "--output",
                      "{tmp}/u.xml"], "the bristle spring-damper is unstable"),
    "export long name": (export_main, ["{tmp}/m1.yaml", "--output", f"{{tmp}}/{LONG}"],
                         "is 300 bytes long"),
    "recover onto its bag": (recover_main, ["{bag}", "--output", "{bag}"],
                             "is the input bag"),
    "recover long name": (recover_main, ["{bag}", "--output", f"{{tmp}}/{LONG}"],
                          "is 300 bytes long"),
    "campaign mistyped storage": (
        campaign_main, ["status", "--storage", "sqlite//x.db", "--campaign", "c"],
        "is not a database URL"),
    "campaign memory storage": (
        campaign_main, ["add", "--storage", "sqlite:///", "--campaign", "c", "--bags", "{bag}"],
        "keeps the study in memory only"),
    "campaign foreign database": (
        campaign_main, ["work", "--storage", "sqlite:///{tmp}/other.db", "--campaign", "c"],
        "holds tables of another program"),
    "campaign negative jobs": (
        campaign_main, ["work", "--storage", "sqlite:///{tmp}/c.db", "--campaign", "c",
                        "--jobs", "-3"], "argument --jobs: must be in [1, 4096]"),
}


@pytest.mark.parametrize("case", OTHER_CASES)
def test_eval_export_recover_campaign_refuse_bad_input(case, bag, files, capsys):
    main, args, message = OTHER_CASES[case]
    before, bag_before = snapshot(files), snapshot(bag)
    code = call(main, expand(args, files, bag))
    assert_refused(code, capsys.readouterr().err, message.replace("{tmp}", str(files)))
    assert snapshot(files) == before and snapshot(bag) == bag_before


ENTRY = {"fit": ("bam_identify.cli", "fit_main"), "eval": ("bam_identify.cli", "eval_main"),
         "export": ("bam_identify.export_cli", "export_main"),
         "campaign": ("bam_identify.campaign_cli", "campaign_main")}


def process(command: str, args: list[str], cwd: Path) -> subprocess.Popen:
    module, function = ENTRY[command]
    code = f"import sys; from {module} import {function}; sys.exit({function}(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


PROCESS_CASES = {
    "fit on a device": ("fit", ["--bags", "/dev/null", "--report", "{tmp}/r"],
                        "--bags /dev/null is not a file or folder"),
    "fit report is a file": ("fit", ["--bags", "{bag}", "--report", "{tmp}/taken.txt"],
                             "is a file, not a folder"),
    "eval over its parameters": ("eval", ["--params", "{tmp}/m1.yaml", "--bags", "{bag}",
                                          "--json", "{tmp}/m1.yaml", "--force"],
                                 "is the input --params"),
    "export long name": ("export", ["{tmp}/m1.yaml", "--output", f"{{tmp}}/{LONG}.json"],
                         "is 305 bytes long"),
    "campaign mistyped storage": ("campaign", ["status", "--storage", "sqlite//x.db",
                                               "--campaign", "c"], "is not a database URL"),
}


@pytest.mark.parametrize("case", PROCESS_CASES)
def test_a_refusal_is_one_line_and_exit_2_from_a_real_process(case, bag, files):
    command, args, message = PROCESS_CASES[case]
    before = snapshot(files)
    child = process(command, expand(args, files, bag), files)
    out, err = child.communicate(timeout=120)
    assert_refused(child.returncode, err, message)
    assert snapshot(files) == before


def test_two_exports_racing_for_one_new_file_keep_the_winner(files):
    """Both check that the file is new: the first to claim it writes it, the other is
    refused (the claim, or the no-replace move if it came later) in one line (exit 2),
    and the file is the winner's."""
    target = files / "model.json"
    children = {name: process("export", [str(files / f"{name}.yaml"), "--output", str(target)],
                              files) for name in ("m1", "m4")}
    results = {name: (child.wait(timeout=120), child.stderr.read()) for name, child in
               children.items()}
    codes = sorted(code for code, _ in results.values())
    assert codes == [0, 2], results
    winner = next(name for name, (code, _) in results.items() if code == 0)
    loser_err = next(err for code, err in results.values() if code == 2)
    assert loser_err.strip().count("\n") == 0 and "Traceback" not in loser_err
    assert ("was created by another command" in loser_err or "already exists" in loser_err
            or "is being written by another command" in loser_err), loser_err
    assert target.read_text() == parameters_to_json(published_named("mx64", winner))
    assert not [p for p in files.iterdir() if p.name.startswith(".model.json.")]


def test_a_protocol_of_1e8_repetitions_is_refused_with_its_size():
    with pytest.raises(BamError, match=r"holds 200000000 runs, more than 100000"):
        parse_protocol({"trajectories": ["steps"], "gains": [8, 16],
                        "repetitions": 10**8})


# --- generated option values through the parsing and validation layer (in-process) ---

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**12, 10**12).map(str),
    st.sampled_from(["", "x", "1e", "0x10", "1_0", "True", " 3 ", "-0", "1e-400"]))


def parsed(parser, argv: list[str]):
    """(namespace, None) when argparse accepts ``argv``, else (None, its stderr line)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return parser.parse_args(argv), None
        except SystemExit as exit_:
            assert exit_.code == 2
    return None, err.getvalue()


def validated(check) -> str | None:
    """None when ``check()`` passes, else the one line the command would print."""
    try:
        check()
    except BamError as exc:
        return one_line(exc)
    return None


def in_range(value, spec: dict) -> bool:
    low, high = spec.get("low"), spec.get("high")
    if spec.get("whole") and not isinstance(value, int):
        return False
    if low is not None and (value <= low if spec.get("low_open") else value < low):
        return False
    return high is None or (value < high if spec.get("high_open") else value <= high)


@SETTINGS
@given(field=st.sampled_from(sorted(NUMBERS)), text=NUMBER_TEXT)
def test_generated_fit_numbers_are_accepted_in_range_or_refused_in_one_line(field, text):
    option_name = f"--{field.replace('_', '-')}"
    args, err = parsed(fit_parser(), ["--bags", "b", f"{option_name}={text}"])
    if args is None:
        assert err.count("\n") == 1 and f"argument {option_name}:" in err, err
        return
    value = getattr(args, field)
    assert in_range(value, NUMBERS[field]), (field, text, value)
    FitJob.from_args(args)  # the job built from accepted values is valid too


@SETTINGS
@given(field=st.sampled_from(["kp", "mass", "length", "arm-mass", "dt"]), text=NUMBER_TEXT)
def test_generated_simulate_numbers_are_plausible_or_refused(field, text):
    from bam_sim.simulate_cli import build_parser

    args, err = parsed(build_parser(), [f"--{field}={text}"])
    if args is None:
        assert err.count("\n") == 1 and f"argument --{field}:" in err, err
        return
    value = getattr(args, field.replace("-", "_"))
    bounds = {"kp": (0.0, 1e4), "mass": (0.0, 100.0), "length": (0.0, 5.0),
              "arm-mass": (0.0, 100.0), "dt": (1e-4, 0.05)}[field]
    assert bounds[0] <= value <= bounds[1] and (value > 0.0 or field == "arm-mass")


@SETTINGS
@given(text=NUMBER_TEXT, fmt=st.sampled_from(["bam-json", "dcmotor-mjcf"]),
       joint=st.booleans())
def test_generated_export_options_are_accepted_only_where_they_mean_something(
        tmp_path, text, fmt, joint):
    argv = ["p.yaml", "--format", fmt, f"--gain={text}", "--output", str(tmp_path / "o.xml")]
    args, err = parsed(export_parser(), argv + (["--joint", "j"] if joint else []))
    if args is None:
        assert err.count("\n") == 1 and "argument --gain:" in err, err
        return
    assert 0.0 < args.gain <= 1e4
    problem = validated(lambda: check_export_args(args))
    assert (problem is None) == (fmt == "dcmotor-mjcf"), problem
    if problem:
        assert "--gain means nothing to --format bam-json" in problem


PATH_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from("ab/._- é\n"), min_size=1, max_size=40),
    st.integers(200, 5000).map(lambda n: "x" * n),
    st.lists(st.integers(1, 300), min_size=1, max_size=30).map(
        lambda sizes: "/".join("d" * n for n in sizes)))


@SETTINGS
@given(name=PATH_TEXT, command=st.sampled_from(["eval", "recover"]))
def test_generated_output_paths_are_writable_or_refused_in_one_line(tmp_path, name, command):
    output = Path(f"{tmp_path / 'out'}/{name}")  # a name starting with / stays inside out/
    if command == "eval":
        args, err = parsed(eval_parser(), ["--params", "p.yaml", "--json", str(output)])
        what, folder = "--json", False
    else:
        args, err = parsed(recover_parser(), ["bag", "--output", str(output)])
        what, folder = "--output", True
    assert args is not None, err
    problem = validated(lambda: check_output(output, what, folder=folder,
                                             inputs=[("--params", tmp_path / "p.yaml")]))
    if problem is not None:
        assert problem.startswith(what) or problem.startswith(f"cannot write {what}"), problem
        return
    parts = output.relative_to(tmp_path).parts
    assert all(len(p.encode()) <= 255 for p in parts) and len(str(output).encode()) < 4096
    output.parent.mkdir(parents=True, exist_ok=True)  # the OS agrees: it can be created
    output.write_text("x") if not folder else output.mkdir()


STORAGE_TEXT = st.one_of(
    st.sampled_from(["sqlite:///", "sqlite://", "sqlite:///:memory:", "sqlite//x.db",
                     "sqlite:/x.db", "postgresql+psycopg://u@h/db", "mysql://u@h/db",
                     "sqlite:///file:x?mode=memory&uri=true", ":memory:", "", "x"]),
    st.builds(lambda scheme, rest: scheme + rest,
              st.sampled_from(["sqlite:///", "sqlite://", "postgresql://", "oracle://", ""]),
              st.text(alphabet=st.sampled_from("ab./:?=@"), max_size=12)))


@SETTINGS
@given(url=STORAGE_TEXT, action=st.sampled_from(["add", "work", "status"]))
def test_generated_storage_urls_are_durable_sqlite_or_postgres_or_refused(
        tmp_path, monkeypatch, url, action):
    import sqlalchemy as sa

    monkeypatch.chdir(tmp_path)  # relative SQLite paths land here, never in the checkout
    argv = [action, f"--storage={url}", "--campaign", "c"]
    args, err = parsed(campaign_parser(), argv)
    if args is None:
        assert err.count("\n") == 1 and "argument --storage:" in err, err
        return
    where = sa.engine.make_url(args.storage)
    assert where.get_backend_name() in ("sqlite", "postgresql")
    if where.get_backend_name() == "sqlite":
        assert where.database not in (None, "", ":memory:")
        assert "mode=memory" not in where.database


@pytest.mark.parametrize("node", ["fifo", "device"])
def test_a_storage_at_a_pipe_or_a_device_is_refused_before_it_is_opened(tmp_path, node):
    """--storage is written too: a named pipe there held the fit forever (opening it
    waits for a reader), a device is nobody's database."""
    from bam_identify.fitting.study_record import storage_url

    path = (fifo if node == "fifo" else device_node)(tmp_path / "fit.db")
    before = os.lstat(path)
    with pytest.raises(BamError, match=r"fit\.db is a (named pipe|character device).*, not a "
                       "regular file; give the path of a regular file or of a new one"):
        storage_url(f"sqlite:///{path}")
    assert same_node(path, before)
