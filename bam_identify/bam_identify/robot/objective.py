"""The training error of a robot fit: rollouts of the whole robot under the recorded goals.

The score of a candidate is the mean absolute error between simulated and recorded
readings over every joint and sample of every recording (rad), the measure of the
bench fit (paper section V-B) with the robot in place of the pendulum. A rollout that
diverges (a reading not finite) scores infinity.

The candidates of a population roll out on threads, each with its own copy of the
robot (a rollout is one kernel call that releases the GIL, :meth:`bam_sim.mujoco_arm.
servo_arm.ServoArm.follow`); a candidate's readings do not depend on the thread.
"""

from __future__ import annotations

import copy
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import mujoco
import numba
import numpy as np

from bam_identify.robot.space import RobotSpace, apply_bodies
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.robot.recording import RobotRecording
from bam_sim.robot.rollout import bind, latencies, rollout, sample_steps


@dataclass(frozen=True)
class Lengths:
    """What the search's polish reads of a batch: the number of residuals per recording."""

    lengths: np.ndarray


class RobotObjective:
    """Scores and residuals of candidates (the bench Objective's interface for Search)."""

    def __init__(self, space: RobotSpace, model: mujoco.MjModel,
                 recordings: list[RobotRecording], cancel: Cancellation | None = None,
                 identification_integrator: bool = False, threads: int | None = None) -> None:
        if not recordings:
            raise BamError("no training recordings to identify from")
        for rec in recordings:
            if rec.n_joints != len(space.joints.joints):
                raise BamError(f"{rec.name}: {rec.n_joints} joints, the joint map has "
                               f"{len(space.joints.joints)}")
            sample_steps(rec, float(model.opt.timestep))  # refused now, not mid-fit
        self.space, self.recordings = space, recordings
        self.cancel = cancel or Cancellation()
        middle = {n: 0.5 * (lo + hi) for n, (lo, hi) in space.bounds.items()}
        sets = space.parameter_sets(middle, {})
        joint_sets = [sets[j.servo_type] for j in space.joints.joints]
        # One robot per thread (None: numba's, which `fit --jobs` sets).
        threads = max(1, numba.get_num_threads() if threads is None else int(threads))
        self.arms = [bind(copy.copy(model), space.joints, joint_sets, identification_integrator)
                     for _ in range(threads)]
        self.batch = Lengths(np.array([rec.position.size for rec in recordings]))
        self.replay, self.voltage_weight, self.scores_temperature = False, 0.0, False
        self.evaluations = 0
        self.diverged = 0  # candidates whose rollout made MuJoCo diverge (scored infinite)

    def simulate(self, vectors: np.ndarray, thread: int = 0) -> list[np.ndarray]:
        """Simulated readings of every recording (each (T, n)) for one candidate's
        vectors (n_joints, N_PARAMS), then its body rows (:class:`RobotSpace`), on the
        robot of ``thread``."""
        arm = self.arms[thread]
        n = len(self.space.joints.joints)
        apply_bodies(arm.model, self.space.bodies, vectors[n:])
        vectors = vectors[:n]
        arm.set_parameters(vectors)
        offsets, latency = vectors[:, P.Q_OFFSET], latencies(vectors)
        out = []
        for rec in self.recordings:
            self.cancel.check()
            out.append(rollout(arm, rec, offsets, latency))
        return out

    def residuals(self, population: np.ndarray) -> np.ndarray:
        """Simulated minus recorded readings, flattened over recordings, samples and
        joints: one row (sum of T·n) per candidate of ``population`` (m, n_joints, N_PARAMS)."""
        population = np.asarray(population, dtype=np.float64)
        rows = np.empty((population.shape[0], int(self.batch.lengths.sum())))

        def share(thread: int) -> None:
            for i in range(thread, len(population), len(self.arms)):
                simulated = self.simulate(population[i], thread)
                rows[i] = np.concatenate([(q - rec.position).ravel() for q, rec in
                                          zip(simulated, self.recordings, strict=True)])

        threads = min(len(self.arms), len(population))
        if threads <= 1:
            share(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                for done in [pool.submit(share, t) for t in range(threads)]:
                    done.result()  # a worker's exception (a stop) raised here
        self.evaluations += len(population)
        return rows

    def score(self, population: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(MAE in rad, violation 0) of each candidate; infinity where a rollout diverged."""
        rows = self.residuals(population)
        mae = np.abs(rows).sum(axis=1) / rows.shape[1]
        finite = np.isfinite(mae)
        self.diverged += int(np.count_nonzero(~finite))
        return np.where(finite, mae, np.inf), np.zeros(len(mae))

    def __call__(self, population: np.ndarray) -> np.ndarray:
        return self.score(population)[0]

    def per_joint(self, vectors: np.ndarray) -> np.ndarray:
        """MAE (recordings, joints) of one candidate's vectors, rad."""
        simulated = self.simulate(np.asarray(vectors, dtype=np.float64))
        return np.array([np.abs(q - rec.position).mean(axis=0)
                         for q, rec in zip(simulated, self.recordings, strict=True)])

    def fingerprint(self) -> str:
        """A digest of the recordings: a stored study must be of the same data."""
        digest = hashlib.sha256()
        for rec in self.recordings:
            for array in (rec.time, rec.position, rec.goal, rec.gain, rec.enabled):
                digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()[:16]
