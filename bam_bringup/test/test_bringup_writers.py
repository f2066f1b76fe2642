"""Every command that writes, against the outputs that lose data (issue 36, item 7).

Each writer's command runs as a user would (its ``main``, in-process) with its output
at a device node, a named pipe, one of its own inputs, a full disk (a small tmpfs,
an earlier file at the path) and, for the commands that replace files, beside a
second command writing the same output in lock-step. Whatever the options, each
ends with exit 2 and one line naming the path and the fix, and leaves every node,
input and earlier file as it was, with no temporary file behind; of two commands
on one output, the one whose file remains is the one that says it wrote it. The
layer they all go through is bam_sim.common.output_paths
(bam_sim/test/test_sim_output_paths.py tests it alone).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bam_bringup.runner import main as bench_main
from bam_identify.campaign_cli import campaign_main
from bam_identify.cli import eval_main, fit_main, recover_main
from bam_identify.data.bag_writer import BagSession, BagTrial, write_bag
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.export_cli import export_main
from bam_sim.common import output_paths
from bam_sim.models.files.parameter_file import load, published_named, save
from bam_sim.models.servo.actuators import get_actuator
from bam_sim.simulate_cli import main as simulate_main
from bam_testing.output_cases import device_node, fifo, same_node, small_disk

TIMEOUT = 300.0  # s: only a hang reaches it (a fit of 10 trials takes seconds)
QUICK_FIT = ["--models", "m1", "--trials", "10", "--quiet"]


@dataclass(frozen=True)
class Data:
    """What the commands read: logs, a bag, an unterminated bag, two parameter sets."""

    root: Path
    logs: Path
    bag: Path
    broken: Path
    m1: Path
    m4: Path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Data:
    root = tmp_path_factory.mktemp("inputs")
    logs = root / "logs"
    runs = paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, seed=8)
    for i, log in enumerate(runs):
        write_legacy_log(logs / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    sessions = [BagSession(get_actuator("mx64"), [BagTrial(log, log.meta["trajectory"], log.kp,
                                                           i + 1, 0)])
                for i, log in enumerate(runs)]
    bag = write_bag(root / "bag", sessions)
    broken = write_bag(root / "broken", sessions[:1])
    (broken / "metadata.yaml").unlink()  # a recording killed before its end
    mcap = next(broken.glob("*.mcap"))
    mcap.write_bytes(mcap.read_bytes()[:-200])
    return Data(root, logs, bag, broken, save(published_named("mx64", "m1"), root / "m1.yaml"),
                save(published_named("mx64", "m4"), root / "m4.yaml"))


@dataclass(frozen=True)
class Writer:
    """One command writing ``out``: its main and arguments (``side``: a folder off the
    output's disk for what else it writes), the output's kind (a file's suffix, or ""
    for a folder), whether it replaces with --force, whether an earlier file or
    folder may be at the path, and the input it could be pointed at (None: none of its
    inputs can be named as its output)."""

    main: Callable[[list[str]], int]
    args: Callable[[Data, Path, Path], list]
    suffix: str = ""
    force: bool = True
    earlier: bool = True
    input: Callable[[Data], Path] | None = None

    def run(self, data: Data, out: Path, side: Path, extra: tuple = ()) -> int:
        side.mkdir(exist_ok=True)
        argv = [str(a) for a in (*self.args(data, out, side), *extra)]
        try:
            return self.main(argv + (["--force"] if self.force else []))
        except SystemExit as exit_:  # argparse's own refusals
            return int(exit_.code or 0)


def campaign(argv: list[str]) -> int:
    """``campaign add`` of one fit job (``argv``: its options), then ``campaign work`` (the
    add refuses a job whose outputs a worker would refuse, the work what it meets)."""
    side = Path(argv[argv.index("--report") + 1]).parent
    storage = ["--storage", f"sqlite:///{side / 'campaign.db'}", "--campaign", "c"]
    return campaign_main(["add", *storage, *argv]) or campaign_main(["work", *storage,
                                                                      "--quiet"])


def fit(data: Data, out: Path, side: Path) -> list:
    return ["--logs", data.logs, *QUICK_FIT, "--output", out, "--report", side / "report"]


WRITERS = {
    "fit": Writer(fit_main, fit, ".yaml", input=lambda d: d.logs / "0.json"),
    "fit --report": Writer(fit_main, lambda d, out, side: [
        "--bags", d.bag, *QUICK_FIT, "--output", side / "p.yaml", "--report", out],
        input=lambda d: d.bag / "report"),
    "eval --json": Writer(eval_main, lambda d, out, side: [
        "--params", d.m1, "--bags", d.bag, "--json", out], ".json",
        input=lambda d: next(d.bag.glob("*.mcap"))),
    "export bam-json": Writer(export_main, lambda d, out, side: [d.m1, "--output", out],
                              ".json", input=lambda d: d.m1),
    "export dcmotor-mjcf": Writer(export_main, lambda d, out, side: [
        d.m1, "--format", "dcmotor-mjcf", "--output", out], ".xml", input=lambda d: d.m1),
    # simulate reads only --params (YAML or JSON), which no figure name (.png, .svg) is
    "simulate": Writer(simulate_main, lambda d, out, side: [
        "--params", d.m1, "--output", out], ".png"),
    "simulate --diagram": Writer(simulate_main, lambda d, out, side: [
        "--params", d.m1, "--output", side / "figure.png", "--diagram", out], ".png"),
    "recover": Writer(recover_main, lambda d, out, side: [d.broken, "--output", out],
                      force=False, earlier=False, input=lambda d: d.broken / "recovered"),
    "campaign": Writer(campaign, fit, ".yaml",  # --force given to campaign add
                       input=lambda d: d.logs / "0.json"),
    "bench session": Writer(bench_main, lambda d, out, side: [
        "session", "--output-dir", out, "--quiet"], force=False),  # earlier: other sessions
}


def run(name: str, data: Data, out: Path, side: Path, capsys,
        extra: tuple = ()) -> tuple[int, str, str]:
    code = WRITERS[name].run(data, out, side, extra)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def snapshot(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def temporaries(folder: Path) -> list[str]:
    """What a write left behind: hidden temporary files or folders."""
    return sorted(p.name for p in folder.rglob(".*") if p.name != ".filler")


def assert_refused(code: int, err: str, *fragments: str) -> None:
    """Exit 2 and one line holding ``fragments``; campaign work says which job failed, with
    its one line, then ends with its own."""
    assert code == 2, err
    assert "Traceback" not in err, err
    lines = [text for text in err.strip().splitlines()
             if not text.startswith("warning: ")]  # what a fit's data cannot tell apart
    if lines[0].startswith("job "):
        assert lines[-1].startswith("campaign: error: ") and len(lines) == 3, err
        line = next(text for text in lines if " failed: " in text)
    else:
        assert len(lines) == 1, err
        line = lines[0]
    for fragment in fragments:
        assert fragment in line, err


def output_path(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    return folder / f"target{WRITERS[name].suffix}"


@pytest.mark.parametrize("node", ["device", "fifo"])
@pytest.mark.parametrize("name", WRITERS)
def test_a_device_or_a_pipe_at_the_output_is_refused_and_left_as_it_is(
        name, node, data, tmp_path, capsys):
    out = output_path(tmp_path, name)
    (device_node if node == "device" else fifo)(out)
    before, inputs = os.lstat(out), snapshot(data.root)
    code, _, err = run(name, data, out, tmp_path / "side", capsys)
    folder = not WRITERS[name].suffix
    kind = "a character device" if node == "device" else "a named pipe (FIFO)"
    assert_refused(code, err, f"{out} is {kind}, not a "
                   + ("folder; give a folder or a new path" if folder else
                      "regular file; give the path of a regular file or of a new one"))
    assert same_node(out, before) and snapshot(data.root) == inputs
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("name", [n for n, w in WRITERS.items() if w.input is not None])
def test_an_input_of_the_command_is_never_its_output(name, data, tmp_path, capsys):
    target = WRITERS[name].input(data)
    inputs = snapshot(data.root)
    code, _, err = run(name, data, target, tmp_path / "side", capsys)
    assert_refused(code, err, str(target), "of this command")
    assert "write the output to another path" in err or "write the output outside it" in err
    assert snapshot(data.root) == inputs and temporaries(data.root) == []


def test_an_output_through_dot_dot_into_a_bag_is_refused(data, tmp_path, capsys):
    """The issue's repro: ``fit --output B/metadata.yaml``, spelt through another folder."""
    inputs = snapshot(data.root)
    sneaky = tmp_path / ".." / os.path.relpath(data.bag / "metadata.yaml", tmp_path.parent)
    code, _, err = run("fit --report", data, tmp_path / "r", tmp_path, capsys,
                       ("--output", sneaky))
    assert_refused(code, err, f"{sneaky} is inside {data.bag}, the input --bags")
    assert snapshot(data.root) == inputs


@pytest.mark.parametrize("name", WRITERS)
def test_a_full_disk_is_one_line_and_the_earlier_file_is_kept(name, data, tmp_path, capsys):
    writer = WRITERS[name]
    with small_disk(tmp_path / "disk") as disk:
        out = disk.root / "out" / f"target{writer.suffix}"
        out.parent.mkdir()
        if writer.earlier and writer.suffix:
            out.write_text("earlier")
        elif writer.earlier:
            out.mkdir()
            (out / "earlier.md").write_text("earlier")
        before = disk.files()
        disk.fill()
        code, _, err = run(name, data, out, tmp_path / "side", capsys)
        assert_refused(code, err, "no space left (ENOSPC: No space left on device)",
                       "free some space or choose another path")
        assert disk.files() == before, disk.files()  # nothing half-written, nothing lost
        if writer.earlier and writer.suffix:
            assert out.read_text() == "earlier"


RACERS = {  # what each of two runs of one command adds, to tell their files apart
    "fit": (("--seed", "1"), ("--seed", "2")),
    "eval --json": ((), ("--replay",)),
    "export bam-json": (("--kp", "8"), ("--kp", "16")),
    "simulate": (("--kp", "8"), ("--kp", "16")),
    "recover": ((), ()),
}


@pytest.mark.parametrize("name", RACERS)
def test_two_commands_on_one_output_the_file_is_the_one_whose_command_says_it_wrote(
        name, data, tmp_path, capsys, monkeypatch):
    """The first run is held right after it claimed the output (its check) until the
    second has run: the second is refused at its check, before its work, and writes
    nothing; the first then writes. Events, not sleeps: the order is the same on every
    machine."""
    writer = WRITERS[name]
    out = output_path(tmp_path, name)
    if writer.earlier:
        out.write_text("earlier")
    claimed, tried = threading.Event(), threading.Event()
    real = output_paths.claim

    def claim(path: Path, what: str) -> None:
        real(path, what)
        if threading.current_thread().name == "first" and not claimed.is_set() \
                and output_paths.same_file(path, out):
            claimed.set()
            assert tried.wait(TIMEOUT)

    monkeypatch.setattr(output_paths, "claim", claim)
    codes: dict[str, int] = {}

    def command(who: str, extra: tuple) -> None:
        try:
            if who == "second":
                assert claimed.wait(TIMEOUT)
            codes[who] = writer.run(data, out, tmp_path / "side", extra)  # one --report too
        finally:
            if who == "second":
                tried.set()

    threads = [threading.Thread(target=command, args=(who, extra), name=who)
               for who, extra in zip(("first", "second"), RACERS[name], strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    captured = capsys.readouterr()
    assert codes == {"first": 0, "second": 2}, captured
    assert f"{out} is being written by another command now; wait for it to end" \
        in captured.err, captured.err
    assert captured.err.count("error:") == 1 and str(out) in captured.out
    assert _written_by_first(name, out, data, tmp_path), name
    assert temporaries(tmp_path) == []


def _written_by_first(name: str, out: Path, data: Data, tmp_path: Path) -> bool:
    """Whether the file at ``out`` is the first run's (each run writes what tells it)."""
    if name == "fit":
        return load(out).provenance["seed"] == 1
    if name == "eval --json":
        return json.loads(out.read_text())["replay"] is False
    if name == "export bam-json":
        return json.loads(out.read_text())["kp"] == 8
    if name == "recover":
        return (out / "metadata.yaml").is_file()
    alone = tmp_path / "alone.png"  # the figure is the same for the same options
    assert WRITERS[name].run(data, alone, tmp_path / "side", RACERS[name][0]) == 0
    return out.read_bytes() == alone.read_bytes()


def test_the_outputs_are_released_when_a_command_ends(data, tmp_path, capsys):
    """A claim lasts one command: the next one on the same output writes it."""
    out = tmp_path / "model.json"
    for kp in (8, 16):
        code, _, err = run("export bam-json", data, out, tmp_path / "side", capsys,
                           ("--kp", str(kp)))
        assert code == 0, err
        assert json.loads(out.read_text())["kp"] == kp
    assert temporaries(tmp_path) == []


def test_a_name_the_actuator_completes_is_claimed_once_completed(data, tmp_path, capsys):
    """fit --output '{actuator}_{model}.yaml' without --actuator checks a stand-in name
    before reading the data: another fit holding that stand-in is no conflict."""
    template = tmp_path / "{actuator}_{model}.yaml"
    with output_paths.claimed_outputs():  # another command, holding the stand-in
        output_paths.claim(tmp_path / "actuator_m1.yaml", "--output")
        code, out, err = run("fit", data, template, tmp_path / "side", capsys)
    assert code == 0, err
    assert load(tmp_path / "mx64_m1.yaml").model.name == "m1"


def test_the_workers_of_one_shared_fit_may_write_the_same_output(data, tmp_path, capsys):
    """``fit --workers N --force``, started several times on one machine, writes one file
    on purpose (all workers end on the same parameters): no worker claims it."""
    out = tmp_path / "shared.yaml"
    with output_paths.claimed_outputs():  # another worker of the study, writing it too
        output_paths.claim(out, "--output")
        code, _, err = run("fit", data, out, tmp_path / "side", capsys, (
            "--storage", f"sqlite:///{tmp_path / 'fit.db'}", "--workers", "2"))
    assert code == 0, err
    assert load(out).model.name == "m1"
