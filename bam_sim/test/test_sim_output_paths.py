"""The one layer of output paths (bam_sim.common.output_paths) and of option numbers
(bam_sim.common.numbers.option): what they refuse, in one line, and that a write never
replaces a file or folder another writer created meanwhile, nor a device, a pipe or a
socket, nor an input; that two commands never both write one output; and that a full
disk is one line that leaves the earlier file as it was. Each writer's command is held
to the same in bam_bringup/test/test_bringup_writers.py."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading

import pytest

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import integer, option
from bam_sim.common.output_paths import (
    check_output,
    claimed_outputs,
    output_file,
    output_folder,
    same_file,
    write_new,
)
from bam_testing.output_cases import device_node, fifo, same_node, small_disk, unix_socket

TIMEOUT = 60.0  # s: only a hang reaches it


def refused(match: str, *args, **kwargs) -> str:
    with pytest.raises(BamError, match=match) as info:
        check_output(*args, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_names_longer_than_the_file_system_allows_are_refused_before_any_io(tmp_path):
    refused("is 256 bytes long, more than the 255", tmp_path / ("a" * 256), "--output")
    # multi-byte characters count as bytes: 128 'é' are 256 bytes
    refused("is 256 bytes long", tmp_path / ("é" * 128), "--json")
    deep = tmp_path.joinpath(*["d" * 200] * 21)  # each part fine, the whole > 4096 bytes
    refused("more than the 4095 a path may have", deep / "x.yaml", "--output")
    assert check_output(tmp_path / ("a" * 255), "--output") == tmp_path / ("a" * 255)


def test_existing_files_folders_and_suffixes(tmp_path):
    taken = tmp_path / "taken.yaml"
    taken.write_text("keep")
    refused("already exists; choose another path or pass --force", taken, "--output")
    assert check_output(taken, "--output", force=True) == taken
    refused("is a folder; give a file name", tmp_path, "--output", force=True)
    refused(r"unsupported file type '\.txt'; give a name ending in \.png, \.svg",
            tmp_path / "x.txt", "--output", suffixes=(".png", ".svg"))
    refused("is a file, not a folder", taken, "--report", folder=True, force=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_text("x")
    refused("is a folder that is not empty", tmp_path / "full", "--report", folder=True)
    (tmp_path / "empty").mkdir()
    assert check_output(tmp_path / "empty", "--report", folder=True)
    assert taken.read_text() == "keep"


def test_an_input_is_never_an_output_even_with_force(tmp_path):
    source = tmp_path / "params.yaml"
    source.write_text("keep")
    link = tmp_path / "hard.yaml"
    os.link(source, link)
    (tmp_path / "sym.yaml").symlink_to(source)
    for alias in (source, link, tmp_path / "sym.yaml", tmp_path / "sub" / ".." / "params.yaml"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        text = refused("is the input --params", alias, "--json", force=True,
                       inputs=[("--params", source)])
        assert "write the output to another path" in text
    assert same_file(link, source) and not same_file(tmp_path / "new.json", source)
    assert source.read_text() == "keep"


def test_an_unwritable_folder_is_named(tmp_path):
    refused("/proc is not writable", "/proc/bam/x.json", "--json")


def test_a_file_that_appears_while_writing_is_kept_and_the_collision_reported(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(BamError, match="was created by another command while this one ran"):
        with output_file(target, "--json") as tmp:
            tmp.write_text("mine")
            target.write_text("theirs")  # the other writer wins the race
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


def test_a_write_through_the_layer_is_whole_and_force_replaces(tmp_path):
    target = tmp_path / "new" / "out.yaml"
    write_new(target, "first", "--output")
    assert target.read_text() == "first"
    with pytest.raises(BamError, match="was created by another command"):
        write_new(target, "second", "--output")
    write_new(target, "third", "--output", force=True)
    assert target.read_text() == "third"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.yaml"]


def test_a_folder_that_appears_while_writing_is_kept(tmp_path):
    target = tmp_path / "report"
    with pytest.raises(BamError, match="was created by another command"):
        with output_folder(target, "--report") as tmp:
            (tmp / "report.md").write_text("mine")
            target.mkdir()
            (target / "report.md").write_text("theirs")
    assert (target / "report.md").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    fresh = tmp_path / "fresh"
    with output_folder(fresh, "--report") as tmp:
        (tmp / "report.md").write_text("mine")
        assert not fresh.exists()  # nothing half-written is visible under the name
    assert (fresh / "report.md").read_text() == "mine"


@pytest.mark.parametrize(("spec", "text", "expected"), [
    ({"low": 0.0, "low_open": True}, "0", "must be > 0, got 0"),
    ({"low": 0.0, "high": 1.0}, "nan", "must be a finite number, got nan"),
    ({"low": 0.0, "high": 1.0}, "inf", "must be a finite number, got inf"),
    ({"low": 0.0, "high": 1.0}, "1e308", "must be in [0, 1], got 1e+308"),
    ({"low": 0.0}, "x", "must be a number, got 'x'"),
    ({"low": 0, "high": 2**32 - 1, "whole": True}, "-1", "must be in [0, 4294967295], got -1"),
    ({"low": 1, "whole": True}, "2.5", "must be a whole number, got '2.5'"),
    ({"low": 1, "whole": True}, "True", "must be a whole number, got 'True'"),
])
def test_option_numbers_are_refused_with_their_range(spec, text, expected):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        option(**spec)(text)
    assert str(info.value) == expected


def test_option_numbers_in_range_are_kept_exactly():
    assert option(low=1, whole=True)("1e3") == 1000 and isinstance(integer("7", "n"), int)
    assert option(low=0.0, high=1.0, high_open=True)("0.25") == 0.25


def test_a_folder_that_cannot_be_searched_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    """As a user without the right to search a folder on the way sees it (EACCES from
    stat); root, who runs the tests, never does, so the refusal is simulated."""
    from pathlib import Path

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "exists", denied)
    refused("cannot write --json .*: Permission denied; choose another path",
            tmp_path / "private" / "x.json", "--json")


def special(kind: str, path):
    """A path that is no regular file: a device node, a named pipe, a socket (bound while
    the test runs), a symbolic link to a device."""
    if kind == "device":
        return device_node(path)
    if kind == "fifo":
        return fifo(path)
    if kind == "link to a device":
        path.symlink_to("/dev/null")
        return path
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["device", "fifo", "link to a device"])
@pytest.mark.parametrize("force", [False, True, None])
@pytest.mark.parametrize("folder", [False, True])
def test_a_device_a_pipe_or_a_link_to_one_is_never_an_output(tmp_path, kind, force, folder):
    path = special(kind, tmp_path / "node")
    before = os.lstat(path)
    text = refused(r"--output .*node is (a character device|a named pipe|a symbolic link to "
                   r"a character device \(/dev/null\))", path, "--output", force=force,
                   folder=folder)
    assert ("not a folder; give a folder or a new path" if folder else
            "not a regular file; give the path of a regular file or of a new one") in text
    assert same_node(path, before)


def test_a_socket_is_never_an_output(tmp_path):
    with unix_socket(tmp_path / "s.sock") as path:
        before = os.lstat(path)
        refused("is a socket, not a regular file", path, "--output", force=True)
        assert same_node(path, before)


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_node_that_appears_while_writing_is_left_as_it_is(tmp_path, kind):
    """Checked before the work, then again at the move: --force replaces a regular file,
    never what took its place meanwhile."""
    target = tmp_path / "out.yaml"
    target.write_text("earlier")
    check_output(target, "--output", force=True)
    with pytest.raises(BamError, match="not a regular file") as info:
        with output_file(target, "--output", force=True) as tmp:
            tmp.write_text("mine")
            target.unlink()
            special(kind, target)
            before = os.lstat(target)
    assert "\n" not in str(info.value) and same_node(target, before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]  # no temporary left


def test_an_output_inside_a_folder_the_command_reads_is_refused(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "000.json").write_text("log")
    (tmp_path / "alias").symlink_to(logs)
    inputs = [("--logs", logs)]
    for path in (logs / "000.json", logs / "new.yaml", logs / "sub" / "p.yaml",
                 tmp_path / "x" / ".." / "logs" / "p.yaml", tmp_path / "alias" / "p.yaml"):
        refused("the input --logs of this command", path, "--output", force=True,
                inputs=inputs)
    refused("is inside", logs / "report", "--report", force=True, folder=True, inputs=inputs)
    assert check_output(tmp_path / "p.yaml", "--output", inputs=inputs)
    assert check_output(tmp_path / "logs2.yaml", "--output", inputs=inputs)  # a prefix only
    assert (logs / "000.json").read_text() == "log"


def test_two_commands_on_one_output_the_second_is_refused_until_the_first_ends(tmp_path):
    """Two --force writers of one file, in lock-step: the one that checked first writes;
    the other is refused at its check, before its work, and writes nothing."""
    target = tmp_path / "out.yaml"
    target.write_text("earlier")
    claimed, tried = threading.Event(), threading.Event()
    said: dict[str, str] = {}

    def first() -> None:
        with claimed_outputs():
            check_output(target, "--output", force=True)
            claimed.set()
            assert tried.wait(TIMEOUT)
            write_new(target, "first", "--output", force=True)
            said["first"] = "wrote"

    def second() -> None:
        assert claimed.wait(TIMEOUT)
        try:
            with claimed_outputs():
                check_output(tmp_path / "." / "out.yaml", "--output", force=True)
                write_new(target, "second", "--output", force=True)
                said["second"] = "wrote"
        except BamError as exc:
            said["second"] = str(exc)
        finally:
            tried.set()

    threads = [threading.Thread(target=f) for f in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert said["first"] == "wrote"
    assert "is being written by another command now; wait for it to end" in said["second"]
    assert target.read_text() == "first"
    with claimed_outputs():  # released with the first's block
        write_new(target, "third", "--output", force=True)
    assert target.read_text() == "third"


def test_a_full_disk_is_one_line_and_the_earlier_file_is_kept(tmp_path):
    with small_disk(tmp_path / "disk") as disk:
        earlier = disk.root / "out.yaml"
        earlier.write_text("earlier")
        (disk.root / "report").mkdir()
        (disk.root / "report" / "old.md").write_text("old")
        disk.fill()
        with pytest.raises(BamError) as info:
            write_new(earlier, "x" * 100_000, "--output", force=True)
        text = str(info.value)
        assert "\n" not in text and "no space left (ENOSPC" in text, text
        assert f"what was at {earlier} is kept as it was" in text
        assert earlier.read_text() == "earlier"
        with pytest.raises(BamError, match=r"cannot write --output .*new\.yaml: no space left "
                           r"\(ENOSPC.*free some space or choose another path"):
            write_new(disk.root / "new.yaml", "x" * 100_000, "--output")
        with pytest.raises(BamError, match="cannot write --report .*fresh: no space left"):
            with output_folder(disk.root / "fresh", "--report") as tmp:
                (tmp / "report.md").write_text("x" * 100_000)
        with pytest.raises(BamError, match="cannot write --report .*report: no space left"):
            with output_folder(disk.root / "report", "--report", force=True) as tmp:
                (tmp / "old.md").write_text("x" * 100_000)
        assert disk.files() == ["out.yaml", "report", "report/old.md"]  # no temporary left
        assert (disk.root / "report" / "old.md").read_text() == "old"


def test_force_into_a_folder_replaces_its_namesakes_once_the_block_is_done(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "notes.txt").write_text("mine")
    (report / "report.md").write_text("old")
    with output_folder(report, "--report", force=True) as tmp:
        (tmp / "report.md").write_text("new")
        assert (report / "report.md").read_text() == "old"  # nothing half-done is seen
    assert (report / "report.md").read_text() == "new"
    assert (report / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_claim_holds_against_another_process_and_ends_with_its_command(tmp_path):
    """The claim is the kernel's (an abstract socket): another process is refused while
    this command holds the output, and takes it once this one has ended."""
    target = tmp_path / "out.yaml"
    other = ("import sys\nfrom bam_sim.common.errors import BamError\n"
             "from bam_sim.common.output_paths import check_output, claimed_outputs\n"
             "try:\n    with claimed_outputs():\n"
             "        check_output(sys.argv[1], '--output', force=True)\n"
             "except BamError as exc:\n    sys.exit(str(exc))\n")

    def run_other() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", other, str(target)], capture_output=True,
                              text=True, timeout=TIMEOUT)

    with claimed_outputs():
        check_output(target, "--output")
        held = run_other()
    assert held.returncode == 1 and "is being written by another command now" in held.stderr
    assert run_other().returncode == 0
