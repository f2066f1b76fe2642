"""The driver loads the common node layer and bam_msgs, never numerics it does not use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numba", "mujoco", "optuna", "rosbags", "bam_identify", "bam_testing")


@pytest.mark.parametrize("module", ["bam_drivers.nodes.serial_servo_node",
                                    "bam_drivers.nodes.feetech_node",
                                    "bam_drivers.serial_servo.supervisor"])
def test_driver_imports_no_numerics(module):
    code = (f"import sys, {module}\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "", f"{module} loads {out.stdout.strip()}"


def test_supervisor_imports_no_ros():
    code = ("import sys, bam_drivers.serial_servo.supervisor, bam_drivers.supervisor, "
            "bam_drivers.feetech.bus\n"
            "print(','.join(m for m in sys.modules if m.split('.')[0] in "
            "('rclpy', 'rcl_interfaces', 'diagnostic_msgs')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
