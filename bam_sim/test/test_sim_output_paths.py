"""The one layer of output paths (bam_sim.common.output_paths) and of option numbers
(bam_sim.common.numbers.option): what they refuse, in one line, and that a write never
replaces a file or folder another writer created meanwhile."""

from __future__ import annotations

import argparse
import os

import pytest

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import integer, option
from bam_sim.common.output_paths import (
    check_output,
    output_file,
    output_folder,
    same_file,
    write_new,
)


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
