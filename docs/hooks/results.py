"""MkDocs hook: measured figures, read from benchmarks/results/*.json at every build.

The pages never type a measured number. A table is a block whose first line is
``{{ results FILE.json`` and whose last line is ``}}``; between them, YAML:

    rows: ours                 # the mapping (its keys are the rows) or list of FILE
    only: [m1, m4, m6]         # optional: these rows, in this order
    labels: {m6_latency: M6 with latency}   # optional: a row's label (default: its key)
    columns:
      - {title: model, value: "{label}"}                  # a text, {key} and {label} filled
      - {title: 1 core (M/s), path: log_steps_per_s_1_core, scale: 1.0e-6, format: ".1f"}
      - {title: median, path: "runs/*/seconds", reduce: median}
      - {title: richer, path: "summary/{row[model]}/mae"}   # {row[...]}: a field of the row
      - {title: ratio, path: "/reference/models/{key}/speedup_1_core", format: ".0f",
         missing: "–"}         # missing: what a row without that value shows

A path walks the JSON by keys separated by ``/`` (or is a YAML list of keys, for keys that
hold a ``/``), from the row, or from the file's root when it starts with ``/``; ``*``
takes every entry, and ``reduce`` (median, mean, min, max, sum, count) makes one number
of them. A table may instead pivot the rows into a grid:

    pivot: {row: groups, column: model, path: validation_mae_rad, format: ".4f"}
    extra_rows:                # optional: more rows, {column} filled
      - {label: published, path: "/published/{column}/ours_validation_mae_rad"}

One figure in a sentence is ``{{ value FILE.json PATH [×SCALE] [FORMAT] }}``. Each table
is followed by its provenance (the file, and the commit, date and machine its run
recorded). A missing file, row or value fails the build, so a page never shows a figure
the results no longer hold. The figures (``benchmarks/results/*.png``) are served under
``results/``.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
BLOCK = re.compile(r"^\{\{\s*results\s+(\S+)\s*\n(.*?)^\}\}[ \t]*$", re.M | re.S)
VALUE = re.compile(r"\{\{\s*value\s+(\S+)\s+(\S+)((?:\s+[^\s}]+)*)\s*\}\}")
REDUCE = {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max,
          "sum": sum, "count": len}
_MISSING = object()


class ResultError(Exception):
    pass


class _Absent(str):
    """What a cell shows where its row has no value (the column's ``missing``)."""


def load(name: str) -> dict:
    path = RESULTS / name
    if not path.is_file():
        raise ResultError(f"no {path.relative_to(ROOT)}")
    return json.loads(path.read_text(encoding="utf-8"))


def keys_of(path: object, fill: dict[str, str]) -> tuple[bool, list[str]]:
    """(from the root?, the keys) of a path written as text or as a list."""
    if isinstance(path, list):
        parts = [str(p).format(**fill) for p in path]
        absolute = bool(parts) and parts[0] == "/"
        return absolute, parts[1:] if absolute else parts
    text = str(path).format(**fill)
    return text.startswith("/"), [p for p in text.split("/") if p]


def walk(node: object, keys: list[str]) -> object:
    """The value at ``keys`` under ``node``; ``*`` fans out into a list."""
    for i, key in enumerate(keys):
        if key == "*":
            items = node.values() if isinstance(node, dict) else node
            return [walk(item, keys[i + 1:]) for item in items]
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def lookup(root: dict, row: object, spec: dict, fill: dict[str, str]) -> object:
    absolute, keys = keys_of(spec["path"], fill)
    value = walk(root if absolute else row, keys)
    if value is _MISSING:
        if "missing" in spec:  # a column that some rows do not have
            return _Absent(spec["missing"])
        raise ResultError(f"no value at {spec['path']!r} (row {fill.get('key')!r})")
    if isinstance(value, list) and "reduce" in spec:
        if any(v is _MISSING for v in value):
            raise ResultError(f"a value is missing under {spec['path']!r}")
        value = REDUCE[spec["reduce"]](value)
    return value


def show(value: object, spec: dict) -> str:
    if isinstance(value, _Absent):
        return str(value)
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        value = value * float(spec.get("scale", 1.0)) if "scale" in spec else value
        form = spec.get("format")
        if form:
            return format(value, form)
        if isinstance(value, int):
            return f"{value:,}"
        return format(value, ".3g")
    if isinstance(value, list):
        return ", ".join(show(v, spec) for v in value)
    return str(value).replace("|", "\\|")


def provenance(name: str, root: dict) -> str:
    env = root.get("environment") if isinstance(root.get("environment"), dict) else {}
    parts = [f"`benchmarks/results/{name}`"]
    if env.get("commit"):
        parts.append(f"commit {env['commit']}")
    if env.get("date"):
        parts.append(str(env["date"])[:10])
    if env.get("cores"):
        parts.append(f"{env['cores']} cores ({env.get('machine', '')})".replace(" ()", ""))
    return "*Measured: " + ", ".join(parts) + ".*"


def rows_of(root: dict, spec: dict) -> list[tuple[str, object]]:
    node = walk(root, keys_of(spec.get("rows", ""), {})[1]) if spec.get("rows") else root
    if node is _MISSING:
        raise ResultError(f"no rows at {spec['rows']!r}")
    rows = list(node.items()) if isinstance(node, dict) else \
        [(str(i), item) for i, item in enumerate(node)]
    if "only" in spec:
        found = dict(rows)
        missing = [k for k in spec["only"] if str(k) not in found]
        if missing:
            raise ResultError(f"no rows {missing} under {spec.get('rows')!r}")
        rows = [(str(k), found[str(k)]) for k in spec["only"]]
    return rows


def label_of(key: str, item: object, spec: dict) -> str:
    if key in spec.get("labels", {}):
        return str(spec["labels"][key])
    if "label_path" in spec and isinstance(item, dict):
        return show(walk(item, keys_of(spec["label_path"], {})[1]), {})
    return key


def table(name: str, body: str) -> str:
    root = load(name)
    spec = yaml.safe_load(body) or {}
    if "pivot" in spec:
        lines = pivot(root, spec)
    else:
        columns = spec.get("columns") or []
        if not columns:
            raise ResultError("a table needs columns (or a pivot)")
        lines = ["| " + " | ".join(str(c["title"]) for c in columns) + " |",
                 "|" + "---|" * len(columns)]
        for key, item in rows_of(root, spec):
            fill = {"key": key, "label": label_of(key, item, spec), "row": item}
            cells = [c["value"].format(**fill) if "value" in c
                     else show(lookup(root, item, c, fill), c) for c in columns]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", provenance(name, root)])


def pivot(root: dict, spec: dict) -> list[str]:
    p = spec["pivot"]
    grid: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for key, item in rows_of(root, spec):
        row = walk(item, keys_of(p["row"], {})[1])
        column = walk(item, keys_of(p["column"], {})[1])
        if row is _MISSING or column is _MISSING:
            raise ResultError(f"row {key!r} lacks {p['row']!r} or {p['column']!r}")
        row = "+".join(map(str, row)) or "none" if isinstance(row, list) else str(row)
        column = str(column)
        if column not in columns:
            columns.append(column)
        grid.setdefault(row, {})[column] = show(lookup(root, item, p, {"key": key}), p)
    for extra in spec.get("extra_rows", []):
        grid[extra["label"]] = {c: show(lookup(root, root, extra | {"path": extra["path"]},
                                               {"column": c, "key": c}), p)
                                for c in columns}
    title = spec.get("row_title", p["row"])
    lines = ["| " + " | ".join([title, *columns]) + " |", "|" + "---|" * (len(columns) + 1)]
    for row, cells in grid.items():
        lines.append("| " + " | ".join([row, *(cells.get(c, "–") for c in columns)]) + " |")
    return lines


def value(name: str, path: str, options: str) -> str:
    root = load(name)
    spec: dict = {"path": path if path.startswith("/") else "/" + path}
    for option in options.split():
        if option.startswith(("×", "x")) and re.fullmatch(r"[×x][-+0-9.eE]+", option):
            spec["scale"] = float(option[1:])
        elif option in REDUCE:
            spec["reduce"] = option
        else:
            spec["format"] = option
    return show(lookup(root, root, spec, {}), spec)


# -- MkDocs events -------------------------------------------------------------------------

def on_files(files, config, **kwargs):
    for path in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    where = page.file.src_uri

    def block(match: re.Match) -> str:
        try:
            return table(match.group(1), match.group(2))
        except (ResultError, KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
            raise PluginError(f"results: {where}: {match.group(1)}: {exc}") from None

    def inline(match: re.Match) -> str:
        try:
            return value(match.group(1), match.group(2), match.group(3))
        except (ResultError, KeyError, TypeError, ValueError) as exc:
            raise PluginError(f"results: {where}: {match.group(0)}: {exc}") from None

    markdown = VALUE.sub(inline, BLOCK.sub(block, markdown))
    left = re.search(r"\{\{.*?\}\}", markdown)
    if left:  # the last hook: a marker no hook knew
        raise PluginError(f"{where}: unknown marker {left.group(0)!r}")
    return markdown
