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

The ``latency`` group applies as on the bench (:mod:`bam_sim.bench.latency`): a
recording that starts at rest shows only the sum L = L_c + L_r, so the goals act L
late and the readings are taken at their samples. The goal a joint's servo acts on
switches L after its sample, inside a MuJoCo step: that step runs the time-average of
the two goals (the bench's interpolation between ticks), so the error is continuous
in L. Each joint has its own L; the steps between samples are cut where any joint's
goal switches (:func:`delayed_rows`), one ``ServoArm.follow`` call still.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np

from bam_sim.common.errors import BamError, one_line
from bam_sim.models import parameter_vector as P
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
    arm_joints = [ArmJoint(j.joint, j.motor, _without_latency(params))
                  for j, params in zip(joints.joints, sets, strict=True)]
    return ServoArm(model, arm_joints, identification_integrator=identification_integrator)


def _without_latency(params: ParameterSet) -> ParameterSet:
    """The set the arm runs: its latency is the rollout's (:func:`rollout`), not the arm's."""
    if "latency" not in params.groups:
        return params
    values = {k: v for k, v in params.values.items() if not k.startswith("latency.")}
    return ParameterSet.build(params.actuator, params.model, values, params.provenance)


def latencies(vectors: np.ndarray) -> np.ndarray:
    """L = L_c + L_r (s) of each joint's parameter vector (n, N_PARAMS): 0 without the
    group (module docstring)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors[:, P.LATENCY_COMMAND] + vectors[:, P.LATENCY_READING]


def sample_steps(recording: RobotRecording, dt: float) -> np.ndarray:
    """The model step (T,) nearest each sample time of ``recording``; refused where two
    samples fall on one step (the recording samples faster than the model steps)."""
    steps = np.rint(recording.time / dt).astype(np.int64)
    if np.any(np.diff(steps) < 1):
        raise BamError(f"{recording.name}: sampled every {recording.period * 1e3:.3g} ms, "
                       f"faster than the robot model's timestep {dt * 1e3:.3g} ms; lower the "
                       "MJCF's <option timestep> or resample the recording")
    return steps


def rollout(arm: ServoArm, recording: RobotRecording, offsets: np.ndarray,
            latency: np.ndarray | None = None) -> np.ndarray:
    """Simulated readings (T, n) of ``recording`` on ``arm`` (its joints in map order):
    from rest at the first reading, under the recorded goals, gains and enables; NaN
    where the simulation diverged (MuJoCo reset it on its way).

    ``offsets`` (n,): each joint's reading at q = 0, rad; ``latency`` (n,): each joint's
    L, s (:func:`latencies`; None or 0: none).
    """
    offsets = np.asarray(offsets, dtype=np.float64)
    steps = sample_steps(recording, arm.dt)
    arm.set_command(gains=recording.gain)
    arm.reset(q=recording.position[0] - offsets)
    goal = recording.goal - offsets
    if latency is None or not np.any(np.asarray(latency) > 0.0):
        readings = arm.follow(goal[:-1], recording.enabled[:-1], np.diff(steps))
    else:
        delay = np.maximum(np.asarray(latency, dtype=np.float64), 0.0) / arm.dt
        goals, enables, counts, at = delayed_rows(steps, goal, recording.enabled, delay)
        readings = arm.follow(goals, enables, counts)[at]
    readings += offsets
    if arm.diverged:
        readings[:] = np.nan
    return readings


def delayed_rows(steps: np.ndarray, goal: np.ndarray, enabled: np.ndarray, delay: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``ServoArm.follow``'s rows for goals acting ``delay`` (n,) MuJoCo steps late.

    ``steps`` (T,): each sample's step; ``goal``, ``enabled`` (T, n). Returns goals and
    enables (R, n), counts (R,) and the row of each sample (T,): the steps from the first
    sample to the last are cut at each sample and around each joint's switch, sample k's
    goal acting on joint j from step steps[k] + delay[j] (the step it falls inside runs
    the time-average of the old goal and the new; before the first switch, the first
    goal; an enable switches at the end of that step, as on the bench).
    """
    x = steps[:, None] + delay[None, :]  # (T, n): where each goal switches, in steps
    inside = np.floor(x).astype(np.int64)
    cuts = np.concatenate([steps, inside.ravel(), inside.ravel() + 1])
    cuts = np.unique(cuts[(cuts >= steps[0]) & (cuts <= steps[-1])])
    start = cuts[:-1]  # each row's first step
    goals = np.empty((start.size, goal.shape[1]))
    enables = np.empty((start.size, goal.shape[1]), dtype=bool)
    for j in range(goal.shape[1]):
        k = np.searchsorted(x[:, j], start, side="right") - 1  # switched by the row's start
        held = np.maximum(k, 0)
        following = np.minimum(k + 1, len(steps) - 1)
        # the next goal switches inside this row's first step (then a row of one step)
        share = np.where((k + 1 < len(steps)) & (inside[following, j] == start),
                         start + 1 - x[following, j], 0.0)
        goals[:, j] = goal[held, j] + share * (goal[following, j] - goal[held, j])
        enables[:, j] = enabled[held, j]
    return goals, enables, np.diff(cuts), np.searchsorted(cuts, steps)


def simulated_recording(arm: ServoArm, name: str, time: np.ndarray, goal: np.ndarray,
                        gain: np.ndarray, offsets: np.ndarray, tick: float = 0.0,
                        noise: float = 0.0, seed: int = 0,
                        latency: np.ndarray | None = None) -> RobotRecording:
    """What the robot of ``arm`` would record under ``goal`` (T, n) from rest at its first
    goal: readings quantized to ``tick`` rad (0: not) with Gaussian ``noise`` (rad, seeded),
    the goals acting ``latency`` (n,) s late (:func:`rollout`). For tests and benchmarks: a
    recording whose truth is known."""
    goal = np.asarray(goal, dtype=np.float64)
    enabled = np.ones(goal.shape, dtype=bool)
    start = RobotRecording(name, np.asarray(time, dtype=np.float64), goal.copy(), goal,
                           np.asarray(gain, dtype=np.float64), enabled)
    q = rollout(arm, start, offsets, latency)
    q = q + np.random.default_rng(seed).normal(0.0, noise, q.shape) if noise > 0.0 else q
    if tick > 0.0:
        q = np.round(q / tick) * tick
    return RobotRecording(name, start.time, q, goal, start.gain, enabled)
