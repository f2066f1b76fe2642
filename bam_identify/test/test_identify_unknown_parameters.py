"""The recorder and the trajectory node refuse a parameter they do not have, naming the
closest; the recorder before it creates its bag."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from rclpy.parameter import Parameter

from bam_identify.nodes.recorder_node import RecorderNode
from bam_identify.nodes.trajectory_node import TrajectoryNode
from bam_sim.common.errors import BamError
from bam_testing.ros_context import private_context, ros_domain

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load


@pytest.mark.parametrize(("node_class", "typo", "meant"), [
    (RecorderNode, "storge", "storage"),
    (TrajectoryNode, "command_rat", "command_rate"),
])
def test_a_misspelt_parameter_is_refused(tmp_path, monkeypatch, node_class, typo, meant):
    monkeypatch.chdir(tmp_path)  # the recorder's default bag would be created here
    with private_context() as ctx:
        with pytest.raises(BamError) as info:
            node_class(context=ctx, parameter_overrides=[Parameter(typo, value="x")])
    text = str(info.value)
    assert text.startswith(f"unknown parameter '{typo}' for node ")
    assert f"did you mean '{meant}'?" in text and "\n" not in text
    assert os.listdir(tmp_path) == []


def test_the_recorder_executable_says_one_line_exits_2_and_writes_nothing(tmp_path):
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    done = subprocess.run([sys.executable, "-m", "bam_identify.nodes.recorder_node",
                           "--ros-args", "-p", "outptu:=bag"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "recorder: error: unknown parameter 'outptu' for node recorder; did you mean "
        "'output'? see --help for its parameters"]
    assert os.listdir(tmp_path) == []
