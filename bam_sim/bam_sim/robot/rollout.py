"""Rollouts of a robot's recordings: the servo joints of its MuJoCo model under the goals sent.

A robot is any MJCF whose servo joints the joint map names
(:mod:`bam_sim.robot.joint_map`); :class:`~bam_sim.mujoco_arm.servo_arm.ServoArm`
applies the servo law and friction model of each joint every MuJoCo step. A
rollout starts at rest at the recording's first reading and runs the goal in
effect at each sample until the next (zero-order hold), stepping the model's
own timestep: a sample time falls on the nearest step, so with a timestep Δt
the sampling is off by at most Δt/2. The reading of joint i is its position
plus its offset (the encoder's zero error): the firmware sees the reading, so
the servo's goal in the model is the goal sent minus the offset, and gravity
acts on the true position.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np

from bam_sim.common.errors import BamError, one_line
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm
from bam_sim.robot.joint_map import JointMap
from bam_sim.robot.recording import RobotRecording


def load_model(mjcf: str | Path) -> mujoco.MjModel:
    """The robot's MuJoCo model (MJCF, or URDF through MuJoCo's compiler)."""
    path = Path(mjcf)
    if not path.is_file():
        raise BamError(f"robot model {path} does not exist; give its MJCF (or URDF) file")
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        raise BamError(f"MuJoCo cannot load {path}: {one_line(exc)}") from None


def bind(model: mujoco.MjModel, joints: JointMap, sets: Sequence[ParameterSet],
         identification_integrator: bool = False) -> ServoArm:
    """A ServoArm of ``model`` (modified in place: give each arm its own copy) with joint
    i of the map running ``sets[i]``, which must be for that joint's actuator."""
    if len(sets) != len(joints.joints):
        raise BamError(f"{len(sets)} parameter sets for {len(joints.joints)} joints")
    for j, params in zip(joints.joints, sets, strict=True):
        if params.actuator.name != j.actuator.name:
            raise BamError(f"joint '{j.joint}' is an {j.actuator.name} in {joints.source}; "
                           f"its parameter set is for {params.actuator.name}")
    arm_joints = [ArmJoint(j.joint, j.motor, params)
                  for j, params in zip(joints.joints, sets, strict=True)]
    return ServoArm(model, arm_joints, identification_integrator=identification_integrator)


def sample_steps(recording: RobotRecording, dt: float) -> np.ndarray:
    """The model step (T,) nearest each sample time of ``recording``; refused where two
    samples fall on one step (the recording samples faster than the model steps)."""
    steps = np.rint(recording.time / dt).astype(np.int64)
    if np.any(np.diff(steps) < 1):
        raise BamError(f"{recording.name}: sampled every {recording.period * 1e3:.3g} ms, "
                       f"faster than the robot model's timestep {dt * 1e3:.3g} ms; lower the "
                       "MJCF's <option timestep> or resample the recording")
    return steps


def rollout(arm: ServoArm, recording: RobotRecording, offsets: np.ndarray) -> np.ndarray:
    """Simulated readings (T, n) of ``recording`` on ``arm`` (its joints in map order):
    from rest at the first reading, under the recorded goals, gains and enables; NaN
    where the simulation diverged (MuJoCo reset it on its way).

    ``offsets`` (n,): each joint's reading at q = 0, rad.
    """
    offsets = np.asarray(offsets, dtype=np.float64)
    steps = sample_steps(recording, arm.dt)
    arm.set_command(gains=recording.gain)
    arm.reset(q=recording.position[0] - offsets)
    readings = arm.follow(recording.goal[:-1] - offsets, recording.enabled[:-1],
                          np.diff(steps)) + offsets
    if arm.diverged:
        readings[:] = np.nan
    return readings


def simulated_recording(arm: ServoArm, name: str, time: np.ndarray, goal: np.ndarray,
                        gain: np.ndarray, offsets: np.ndarray, tick: float = 0.0,
                        noise: float = 0.0, seed: int = 0) -> RobotRecording:
    """What the robot of ``arm`` would record under ``goal`` (T, n) from rest at its first
    goal: readings quantized to ``tick`` rad (0: not) with Gaussian ``noise`` (rad, seeded).
    For tests and benchmarks: a recording whose truth is known."""
    goal = np.asarray(goal, dtype=np.float64)
    enabled = np.ones(goal.shape, dtype=bool)
    start = RobotRecording(name, np.asarray(time, dtype=np.float64), goal.copy(), goal,
                           np.asarray(gain, dtype=np.float64), enabled)
    q = rollout(arm, start, offsets)
    q = q + np.random.default_rng(seed).normal(0.0, noise, q.shape) if noise > 0.0 else q
    if tick > 0.0:
        q = np.round(q / tick) * tick
    return RobotRecording(name, start.time, q, goal, start.gain, enabled)
