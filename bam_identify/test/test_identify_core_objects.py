"""The core takes objects (DESIGN.md: names resolve once, at the edges): no function or
field of the numerical core, the fit, the data or the buses accepts a registry's record
*or* its name (``Actuator | str``) to look it up again. The edges (files, messages,
parameters, command lines) call ``get_actuator``, ``get_model``, ``get_table`` or a
``from_names`` constructor; below them every annotation names the object alone."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ("bam_sim/bam_sim/bench", "bam_sim/bam_sim/models", "bam_sim/bam_sim/mujoco_arm",
        "bam_sim/bam_sim/robot", "bam_identify/bam_identify/fitting",
        "bam_identify/bam_identify/data", "bam_identify/bam_identify/robot",
        "bam_drivers/bam_drivers/serial_servo", "bam_drivers/bam_drivers/ethercat")
RECORDS = {"Actuator", "FrictionModel", "ControlTable", "DriveModel"}


def _union_members(node: ast.expr) -> set[str]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) | _union_members(node.right)
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "Actuator | str"
        try:
            return _union_members(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return set()
    return set()


def record_or_name(source: str) -> list[tuple[int, str]]:
    """(line, annotation) of every annotation in ``source`` that is a record or a str."""
    found = []
    for node in ast.walk(ast.parse(source)):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            annotations = [a.annotation for a in (*args.posonlyargs, *args.args,
                                                  *args.kwonlyargs) if a.annotation]
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            members = _union_members(annotation)
            if "str" in members and members & RECORDS:
                found.append((annotation.lineno, ast.unparse(annotation)))
    return found


def test_no_core_function_takes_a_record_or_its_name():
    files = [f for folder in CORE for f in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50  # the folders exist where this test looks
    offenders = [f"{f.relative_to(ROOT)}:{line}: {text}" for f in files
                 for line, text in record_or_name(f.read_text(encoding="utf-8"))]
    assert offenders == [], "resolve the name at the edge instead:\n" + "\n".join(offenders)


def test_the_scan_finds_a_record_or_a_name():
    source = ("def f(actuator: Actuator | str, path: Path | str) -> None: ...\n"
              "class S:\n    model: 'FrictionModel | str'\n    table: ControlTable\n")
    assert record_or_name(source) == [(1, "Actuator | str"), (3, "'FrictionModel | str'")]
