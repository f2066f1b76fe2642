"""Every package.xml lists what its Python code imports.

rosdep installs a package's dependencies from its package.xml alone, so a
module imported but not declared is found missing on a user's machine only.
Each package's Python files (launch files included, setup.py excluded) are
scanned with ast for the top-level modules they import; each module maps to a
ROS package or rosdep key that must be an exec_depend (or depend) of the
package, or a test_depend for imports of its test/ folder. A workspace package
declared as exec_depend must in turn be used: imported, or started by a launch
file.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from catkin_pkg.package import parse_package

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/package.xml"))
# Python modules of ROS packages: the key is the package name.
ROS_PACKAGES = {
    "action_msgs", "ament_index_python", "builtin_interfaces", "diagnostic_msgs",
    "dynamixel_sdk", "launch", "launch_ros", "rcl_interfaces", "rclpy", "rosgraph_msgs",
    "sensor_msgs", "std_msgs",
}
# Other modules: their rosdep key (ros/rosdistro rosdep/python.yaml; "-pip" keys install
# from PyPI where the distributions have no package).
ROSDEP_KEYS = {
    "catkin_pkg": "python3-catkin-pkg",
    "cmaes": "python3-cmaes-pip",
    "hypothesis": "python3-hypothesis",
    "llvmlite": "python3-llvmlite",
    "matplotlib": "python3-matplotlib",
    "mujoco": "python3-mujoco-pip",
    "numba": "python3-numba",
    "numpy": "python3-numpy",
    "optuna": "python3-optuna",  # no rosdep key upstream yet: the name it would take
    "pgserver": "python3-pgserver-pip",
    "psycopg": "python3-psycopg",
    "pyroute2": "python3-pyroute2",
    "pysoem": "python3-pysoem-pip",
    "pyarrow": "python3-pyarrow-pip",
    "pytest": "python3-pytest",
    "scservo_sdk": "python3-feetech-servo-sdk-pip",
    "rosbags": "python3-rosbags-pip",
    "scipy": "python3-scipy",
    "serial": "python3-serial",
    "sqlalchemy": "python3-sqlalchemy",
    "tqdm": "python3-tqdm",
    "yaml": "python3-yaml",
}
SKIPPED_PARTS = {"build", "install", "log", "__pycache__"}
BUILD_TIME = {"setup.py", "packaging.py"}


def python_files(package: str) -> list[Path]:
    folder = ROOT / package
    # Build-time code is not the package's runtime: setup.py, and the helper it imports
    # (bam_sim/packaging.py, setuptools' commands), which ament_python builds always have.
    return sorted(p for p in folder.rglob("*.py") if p.name not in BUILD_TIME
                  and not SKIPPED_PARTS & set(p.relative_to(folder).parts))


def imported_modules(path: Path) -> set[str]:
    """The top-level modules ``path`` imports (absolute imports only)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def key(module: str) -> str:
    if module in PACKAGES or module in ROS_PACKAGES:
        return module
    assert module in ROSDEP_KEYS, (f"module {module} maps to no ROS package or rosdep key: "
                                   "add it to ROS_PACKAGES or ROSDEP_KEYS")
    return ROSDEP_KEYS[module]


def needed(package: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Keys needed by the package's runtime code and by its tests, with the files needing
    them."""
    runtime: dict[str, set[str]] = defaultdict(set)
    tests: dict[str, set[str]] = defaultdict(set)
    local = {p.stem for p in (ROOT / package / "test").glob("*.py")}  # test helper modules
    for path in python_files(package):
        relative = path.relative_to(ROOT / package)
        is_test = relative.parts[0] == "test"
        for module in imported_modules(path):
            if module in sys.stdlib_module_names or module == package or \
                    (is_test and module in local):
                continue
            (tests if is_test else runtime)[key(module)].add(str(relative))
    return runtime, tests


def declared(package: str) -> tuple[set[str], set[str]]:
    """The package's exec dependencies (depend included) and its test dependencies."""
    manifest = parse_package(ROOT / package / "package.xml")
    return ({d.name for d in manifest.exec_depends},
            {d.name for d in manifest.test_depends})


def launched_packages(package: str) -> set[str]:
    """Workspace packages named by the package's launch files (nodes they start)."""
    names = set()
    for path in (ROOT / package / "launch").glob("*.py"):
        names |= {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(n, ast.Constant) and n.value in PACKAGES}
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_every_import_is_declared(package):
    runtime, tests = needed(package)
    exec_depends, test_depends = declared(package)
    missing = [f"<exec_depend>{k}</exec_depend> (imported by {', '.join(sorted(files))})"
               for k, files in sorted(runtime.items()) if k not in exec_depends]
    # A test package that depends on this one (bam_testing on bam_sim) cannot be declared
    # back: colcon refuses to order a cycle, test dependencies included.
    missing += [f"<test_depend>{k}</test_depend> (imported by {', '.join(sorted(files))})"
                for k, files in sorted(tests.items())
                if k not in exec_depends | test_depends | set(runtime)
                and not (k in PACKAGES and package in declared(k)[0])]
    assert not missing, f"{package}/package.xml lacks:\n" + "\n".join(missing)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_workspace_dependency_is_used(package):
    runtime, _ = needed(package)
    exec_depends, _ = declared(package)
    used = set(runtime) | launched_packages(package)
    unused = sorted(d for d in exec_depends if d in PACKAGES and d not in used)
    assert not unused, f"{package}/package.xml depends on {unused}, which its code does not " \
        "use (a test-only use is a test_depend)"


# What only tests need: the test-support package and the test frameworks (rosdep keys).
TEST_SUPPORT = {"bam_testing", "python3-pytest", "python3-hypothesis"}


@pytest.mark.parametrize("package", [p for p in PACKAGES if p != "bam_testing"])
def test_runtime_code_imports_no_test_support(package):
    """What a robot installs, a package's runtime code and its exec dependencies, holds no
    test support: that lives in bam_testing and the test/ folders."""
    runtime, _ = needed(package)
    exec_depends, _ = declared(package)
    found = {k: sorted(files) for k, files in runtime.items() if k in TEST_SUPPORT}
    assert not found, f"{package}'s runtime code imports test support: {found}"
    assert not TEST_SUPPORT & exec_depends, f"{package} runs with {TEST_SUPPORT & exec_depends}"


def test_the_scan_sees_imports_everywhere(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("import os.path\nimport numpy as np\nfrom yaml import safe_load\n"
                      "from . import sibling\nif False:\n    from rclpy.node import Node\n"
                      "def f():\n    import bam_sim.common\n")
    assert imported_modules(source) == {"os", "numpy", "yaml", "rclpy", "bam_sim"}
    assert key("yaml") == "python3-yaml" and key("rclpy") == "rclpy"
