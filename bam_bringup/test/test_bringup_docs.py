"""The README and the documentation site stay what a user reads.

The README is a guide of at most 300 lines whose links all lead somewhere; the reference
page of every executable holds every option its ``--help`` prints. The site itself is built
in strict mode by ``make test`` (tools/workspace.sh, cmd_docs) before pytest runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bam_sim", "bam_identify", "bam_drivers", "bam_bringup")
README_LINES = 300


def _reference_hook():
    spec = importlib.util.spec_from_file_location("_docs_reference_hook",
                                                  ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_a_guide_of_at_most_300_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines"


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
               if not re.match(r"[a-z]+://", t)]
    assert targets, "the README links into docs/"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
    assert any(t.startswith("docs/") for t in targets)


def _help(main, argv: list[str], capsys) -> str:
    interval = sys.getswitchinterval()  # an emulator's main sets it before it parses
    try:
        main(argv)
    except SystemExit as exit_:  # argparse's --help, where the main lets it through
        assert exit_.code in (0, None)
    finally:
        sys.setswitchinterval(interval)
    return capsys.readouterr().out


def _options(text: str) -> set[str]:
    """The options (--name) an argparse help shows, or the parameters a node's help lists."""
    if "Parameters:" in text:  # a node: "  name   description (default ...)"
        listed = text.split("Parameters:", 1)[1]
        return set(re.findall(r"^  ([a-z_][a-z0-9_]*)\s", listed, re.M))
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)) - {"--help"}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_option_of_every_executable_is_in_the_reference(package, capsys) -> None:
    hook = _reference_hook()
    page = "\n".join(hook.render("executables", package))
    entry_points = importlib.import_module(f"{package}.executables")
    names = hook.scripts(package)
    assert names, f"{package}/setup.py lists no console script"
    for name in names:
        deferred = getattr(entry_points, name)
        main = getattr(importlib.import_module(deferred.module), deferred.attribute)
        # A node's main reads a whole argv (sys.argv), its program first; the others, the
        # arguments only.
        program = [name] if hook.SOURCES[(package, name)][0] == "node" else []
        text = _help(main, [*program, "--help"], capsys)
        subcommands = re.search(r"^usage: \S+ .*?\{([a-z,]+)\}", text, re.M)
        for sub in subcommands.group(1).split(",") if subcommands else ():
            text += _help(main, [sub, "--help"], capsys)
        options = _options(text)
        assert options, f"{package} {name} --help shows no option"
        missing = sorted(o for o in options if f"`{o}" not in page)
        assert not missing, f"{package} {name}: not in the reference page: {missing}"
