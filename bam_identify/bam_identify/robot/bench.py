"""The pendulum bench as a one-joint robot: its MJCF, joint map and recordings.

A bench log (legacy JSON or a bag's trial) is a recording of a robot with one servo
joint, ``pendulum``, whose MJCF is the bench's (:func:`bam_sim.mujoco_arm.shipped_arms.
pendulum_mjcf`: point mass and rod at the log's step). The robot fit and eval then run
on bench logs with the code they run on any robot: no special case of the bench.
"""

from __future__ import annotations

import mujoco
import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import Actuator
from bam_sim.mujoco_arm.shipped_arms import pendulum_mjcf
from bam_sim.robot.joint_map import JointMap, joint_map
from bam_sim.robot.recording import RobotRecording

JOINT = "pendulum"


def bench_robot(logs: list[BenchLog], actuator: Actuator
                ) -> tuple[mujoco.MjModel, JointMap, list[RobotRecording]]:
    """(model, joint map, recordings) of bench logs that share one bench and step."""
    if not logs:
        raise BamError("no bench logs to read as a robot")
    benches = {(log.bench, log.dt) for log in logs}
    if len(benches) > 1:
        raise BamError(f"the logs come from {len(benches)} benches or steps; a robot is one "
                       "MJCF: give the logs of one bench (mass, length, dt)")
    bench, dt = benches.pop()
    model = mujoco.MjModel.from_xml_string(pendulum_mjcf(bench, timestep=dt, joint=JOINT))
    joints = joint_map({"joints": [{"joint": JOINT, "actuator": actuator.name,
                                    "gain": "recorded"}]}, "<bench>")
    return model, joints, [recording(log) for log in logs]


def recording(log: BenchLog) -> RobotRecording:
    """A bench log as the one-joint robot's recording (its recorded positions)."""
    if log.position is None:
        raise BamError(f"{log.name}: a command log without positions cannot be fitted")
    return RobotRecording(log.name or "bench log", log.time - log.time[0],
                          log.position[:, None].astype(float), log.goal[:, None].astype(float),
                          np.array([float(log.kp)]), np.asarray(log.enabled, bool)[:, None])
