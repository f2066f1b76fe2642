"""The eRob driver loads the common node layer, bam_msgs and pysoem, never numerics it does not
use; its supervisor and protocol modules load no ROS."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numba", "mujoco", "optuna", "rosbags", "bam_identify", "bam_testing",
         "bam_sim.bench.pendulum", "pyroute2")
ROS = ("rclpy", "rcl_interfaces", "diagnostic_msgs")


def _loaded(imports: str, names: tuple[str, ...], top_level: bool) -> str:
    test = "m.split('.')[0]" if top_level else "m"
    code = (f"import sys, {imports}\n"
            f"print(','.join(m for m in sys.modules if {test} in {names!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("module", ["bam_drivers.nodes.erob_node",
                                    "bam_drivers.ethercat.supervisor"])
def test_driver_imports_no_numerics(module):
    assert _loaded(module, HEAVY, top_level=False) == "", module


def test_supervisor_and_protocol_import_no_ros():
    modules = ("bam_drivers.ethercat.supervisor, bam_drivers.ethercat.master, "
               "bam_drivers.ethercat.frames, bam_drivers.ethercat.coe, "
               "bam_drivers.ethercat.cia402, bam_drivers.ethercat.registers")
    assert _loaded(modules, ROS, top_level=True) == ""
