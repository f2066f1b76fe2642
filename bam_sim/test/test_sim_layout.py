"""The folders keep their promises: numerics-free node layer, ROS-free core, test helpers apart."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIM = ROOT / "bam_sim" / "bam_sim"
RUNTIME = [ROOT / pkg / pkg for pkg in ("bam_sim", "bam_identify", "bam_drivers", "bam_bringup")]
HEAVY = ("numba", "mujoco", "optuna", "rosbags")
ROS = ("rclpy", "rosidl_runtime_py", "bam_msgs", "launch", "launch_ros")


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names, at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def test_the_package_init_imports_nothing():
    tree = ast.parse((SIM / "__init__.py").read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_the_node_layer_loads_no_numerics():
    names = [f"bam_sim.common.{p.stem}" for p in modules(SIM / "common") if p.stem != "__init__"]
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names)
            + f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=120).stdout.strip()
    assert loaded == "", f"bam_sim.common loads {loaded}"


@pytest.mark.parametrize("subpackage", ["models", "bench", "mujoco_arm"])
def test_the_numerical_core_imports_no_ros(subpackage):
    for path in modules(SIM / subpackage):
        ros = {m for m in imports(path) if m.split(".")[0] in ROS or m.endswith("_msgs.msg")
               or m.startswith(("bam_sim.common.qos", "bam_sim.common.actuator",
                                "bam_sim.common.runner", "bam_sim.nodes"))}
        assert not ros, f"{path.relative_to(ROOT)} imports {sorted(ros)}"


def test_runtime_code_never_imports_the_test_helpers():
    for folder in RUNTIME:
        for path in modules(folder):
            if path.is_relative_to(SIM / "testing"):
                continue
            used = {m for m in imports(path) if m.startswith("bam_testing")}
            assert not used, f"{path.relative_to(ROOT)} imports {sorted(used)}"
