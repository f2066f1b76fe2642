"""A small robot fit on simulated recordings recovers its truth.

The Feetech 2R arm (two STS3215 sharing one M1 set, each joint with its own offset)
records three step sequences under gravity, its readings quantized to the encoder's
4096 ticks per turn: the quantization is the noise, and the truth's own MAE on the
same recordings (about a quarter of a tick) is the floor. Fitted on two recordings:
the third validates within 1.2× the floor, the offsets are found within a tick, and
the combinations the data fix are found within bands the floor allows (measured: kt/R
to 1e-5, the damping kt²/R + K_v to 1e-3, J_m and the Coulomb friction to 3 %); kt²/R
and K_v apart are not (they trade: both are viscous at the joint).

The STS firmware's target slew (max_velocity) and error gain ratio are held at the
truth's: free, the search settles on these step goals in a basin 30× above the
floor (measured), the slew and the friction trading on the long steps.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from bam_identify.fitting.fit import FitSettings, run_search
from bam_identify.robot.objective import RobotObjective
from bam_identify.robot.space import RobotSpace
from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.models import parameter_vector as P
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.mujoco_arm import mujoco_warnings
from bam_sim.mujoco_arm.shipped_arms import arm_spec
from bam_sim.robot.joint_map import joint_map
from bam_sim.robot.rollout import bind, simulated_recording

TICK = 2.0 * np.pi / 4096
OFFSETS = np.array([0.03, -0.02])  # rad
JOINTS = joint_map({"joints": [{"joint": "shoulder", "actuator": "sts3215", "gain": 32},
                               {"joint": "elbow", "actuator": "sts3215", "gain": 32}]})


def arm_model() -> mujoco.MjModel:
    model = mujoco.MjModel.from_xml_path(str(arm_spec("feetech").mjcf))
    model.opt.timestep = 0.005  # the recordings' 50 Hz is 4 steps
    return model


def recordings(truth, latency: float = 0.0) -> list:
    arm = bind(arm_model(), JOINTS, [truth, truth])
    rng = np.random.default_rng(1)
    n = 200  # 4 s at 50 Hz, a new pair of goals every 0.5 s
    out = []
    for r in range(3):
        goal = np.repeat(rng.uniform(-1.2, 1.2, (n // 25, 2)), 25, axis=0)
        out.append(simulated_recording(arm, f"steps{r}", np.arange(n) * 0.02, goal,
                                       np.full(2, 32.0), OFFSETS, tick=TICK,
                                       latency=np.full(2, latency)))
    return out


@pytest.fixture(scope="module")
def fitted():
    truth = published_named("sts3215", "m1")
    held = {"error_gain_ratio": truth.values["error_gain_ratio"],
            "max_velocity": truth.values["max_velocity"]}
    space = RobotSpace.build(JOINTS.with_model(get_model("m1")), held)
    train, validation = recordings(truth)[:2], recordings(truth)[2:]
    objective = RobotObjective(space, arm_model(), train)
    check = RobotObjective(space, arm_model(), validation)
    vectors = np.stack([truth.vector()] * 2)
    vectors[:, P.Q_OFFSET] = OFFSETS
    floor_train = objective.per_joint(vectors).mean()
    floor = check.per_joint(vectors).mean()
    assert 0.15 * TICK < floor < 0.35 * TICK  # a quantization floor, nothing else
    settings = FitSettings(trials=2000, seed=0, target=1.05 * floor_train)
    result = run_search(space, objective, settings, {"data": objective.fingerprint()}, True)
    found = space.population_of([result.values])[0]
    return truth.values, result.values, check.per_joint(found).mean(), floor


def test_the_validation_recording_is_met_at_the_noise_floor(fitted) -> None:
    _, _, validation, floor = fitted
    assert validation <= 1.2 * floor


def test_each_joint_offset_is_found_within_a_tick(fitted) -> None:
    _, found, _, _ = fitted
    assert found["shoulder/offset"] == pytest.approx(OFFSETS[0], abs=TICK)
    assert found["elbow/offset"] == pytest.approx(OFFSETS[1], abs=TICK)


def test_what_the_data_fix_is_recovered(fitted) -> None:
    truth, found, _, _ = fitted
    kt, r = found["sts3215/kt"], found["sts3215/R"]
    assert kt / r == pytest.approx(truth["kt"] / truth["R"], rel=0.01)
    damping = truth["kt"] ** 2 / truth["R"] + truth["friction_viscous"]
    assert kt * kt / r + found["sts3215/friction_viscous"] == pytest.approx(damping, rel=0.02)
    assert found["sts3215/armature"] == pytest.approx(truth["armature"], rel=0.1)
    assert found["sts3215/friction_base"] == pytest.approx(truth["friction_base"], rel=0.1)


def test_the_command_latency_is_identified_on_the_robot() -> None:
    """Recordings whose goals act 23 ms late (4.6 of the model's 5 ms steps): the latency
    group's L_c, the only value searched, is found within a step, and the set with it
    meets the quantization floor that the same set without it misses by far.

    Within a step, not better: the STS firmware slews its target toward the goal at
    max_velocity, so a goal that has moved by more than a step's slew (26 mrad at 5 ms)
    starts the target at full rate in the step it arrives in, whatever its share of that
    step. On these steps of goals the MAE is flat at the floor for L from 20 to about
    24.5 ms (measured: 0.25 ticks; 1.4 at 24.9 ms, 5.6 at 25 ms and at 19 ms)."""
    truth = published_named("sts3215", "m1")
    latency = 0.023
    recs = recordings(truth, latency)
    joints = joint_map({"joints": [
        {"joint": j, "actuator": "sts3215", "gain": 32, "offset": float(o)}
        for j, o in zip(JOINTS.names, OFFSETS, strict=True)]})
    held = {k: v for k, v in truth.values.items() if k != "q_offset"}
    space = RobotSpace.build(joints.with_model(get_model("m1")), held, ("latency",), False)
    assert space.names == ["sts3215/latency.command"]
    objective = RobotObjective(space, arm_model(), recs)
    scores = objective(space.population_of([{"sts3215/latency.command": latency},
                                            {"sts3215/latency.command": 0.0}]))
    assert scores[0] < 0.35 * TICK < 5 * 0.35 * TICK < scores[1]
    result = run_search(space, objective, FitSettings(trials=200, seed=0),
                        {"data": objective.fingerprint()}, True)
    step = float(arm_model().opt.timestep)
    assert result.values["sts3215/latency.command"] == pytest.approx(latency, abs=step)
    assert result.train_mae <= 1.05 * scores[0]


def test_the_backlash_is_identified_on_the_robot() -> None:
    """Recordings of STS3215s with 0.02 rad (1.1°) of backlash: the backlash group's width,
    the only value searched, is found to 1 % (measured 0.2 %), and meets the quantization
    floor that the rigid set misses by far (measured: 0.25 and 4.3 ticks)."""
    width = 0.02
    truth = published_named("sts3215", "m1").replace(**{"backlash.width": width})
    joints = joint_map({"joints": [
        {"joint": j, "actuator": "sts3215", "gain": 32, "offset": float(o)}
        for j, o in zip(JOINTS.names, OFFSETS, strict=True)]})
    held = {k: v for k, v in truth.values.items() if k not in ("q_offset", "backlash.width")}
    space = RobotSpace.build(joints.with_model(get_model("m1")), held, ("backlash",), False)
    assert space.names == ["sts3215/backlash.width"]
    objective = RobotObjective(space, arm_model(), recordings(truth))
    scores = objective(space.population_of([{"sts3215/backlash.width": width},
                                            {"sts3215/backlash.width": 0.0}]))
    assert scores[0] < 0.35 * TICK < 5 * 0.35 * TICK < scores[1]
    result = run_search(space, objective, FitSettings(trials=200, seed=0),
                        {"data": objective.fingerprint()}, True)
    assert result.values["sts3215/backlash.width"] == pytest.approx(width, rel=0.01)
    assert result.train_mae <= 1.05 * scores[0]


def test_bench_logs_read_as_the_one_joint_robot_score_as_the_bench_does() -> None:
    """A bench log through bench_robot and the robot objective with the published
    integrator: the truth's MAE is the MuJoCo pendulum's distance to Algorithm 1
    (test_arm_equivalence: ≤ 2 mrad; MuJoCo's own Euler step differs by up to ~4 mrad on
    free swings), and logs of two benches are refused (one robot is one MJCF)."""
    from bam_identify.data.synthetic import paper_like_set
    from bam_identify.robot.bench import bench_robot
    from bam_sim.models.servo.actuators import get_actuator

    truth = published_named("mx64", "m1")
    log = paper_like_set(truth, 1, duration=2.0, seed=1)[0]
    model, joints, recs = bench_robot([log], get_actuator("mx64"))
    assert joints.names == ["pendulum"] and joints.joints[0].gain is None  # the log's kp
    assert recs[0].gain.tolist() == [log.kp]
    space = RobotSpace.build(joints.with_model(get_model("m1")), {})
    vectors = truth.vector()[None, :].copy()
    vectors[0, P.Q_OFFSET] = 0.0
    objective = RobotObjective(space, model, recs, identification_integrator=True)
    mae = objective.per_joint(vectors).mean()
    assert mae <= 2e-3
    other = dataclasses.replace(log, bench=Bench(log.bench.mass * 2, log.bench.length))
    with pytest.raises(BamError, match="benches or steps"):
        bench_robot([log, other], get_actuator("mx64"))


def test_a_population_scores_the_same_on_one_thread_or_several() -> None:
    """Candidates roll out on threads, each on its own copy of the robot: the residuals of
    a population are the same to the bit whatever the threads and the order."""
    truth = published_named("sts3215", "m1")
    space = RobotSpace.build(JOINTS.with_model(get_model("m1")), {})
    train = recordings(truth)[:2]
    rng = np.random.default_rng(2)
    middle = {n: 0.5 * (lo + hi) for n, (lo, hi) in space.bounds.items()}
    candidates = [{n: v * rng.uniform(0.8, 1.2) for n, v in middle.items()} for _ in range(5)]
    population = space.population_of(candidates)
    one = RobotObjective(space, arm_model(), train, threads=1).residuals(population)
    three = RobotObjective(space, arm_model(), train, threads=3)
    np.testing.assert_array_equal(three.residuals(population), one)
    np.testing.assert_array_equal(three.residuals(population[::-1]), one[::-1])


def test_a_candidate_that_makes_mujoco_diverge_scores_infinity_silently(tmp_path, monkeypatch,
                                                                         capfd) -> None:
    """MuJoCo resets a simulation whose acceleration is not finite and goes on; the
    readings after it are not the candidate's, so the candidate scores as diverged, and is
    counted. Silenced (as for a search), MuJoCo still counts the divergence but prints no
    warning and writes no MUJOCO_LOG.TXT where the fit runs; after the block it warns
    again as before."""
    monkeypatch.chdir(tmp_path)
    truth = published_named("sts3215", "m1")
    space = RobotSpace.build(JOINTS.with_model(get_model("m1")), {})
    objective = RobotObjective(space, arm_model(), recordings(truth)[:1], threads=1)
    good = np.stack([truth.vector()] * 2)
    bad = good.copy()
    bad[:, P.KT], bad[:, P.ARMATURE] = 50.0, 1e-6  # an explicit step far past stability
    with mujoco_warnings.silenced():
        scores = objective(np.stack([good, bad]))
    assert np.isfinite(scores[0]) and scores[1] == np.inf
    assert objective.arms[0].diverged  # the last rollout was the bad candidate's
    assert objective.diverged == 1
    assert "WARNING" not in "".join(capfd.readouterr())
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    objective(bad[None])  # the hook restored: MuJoCo's own warning and log again
    assert "Nan, Inf or huge value in QACC" in "".join(capfd.readouterr())
    assert (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert objective.diverged == 2


def test_a_set_per_joint_keeps_each_joints_offset_apart_from_its_parameters() -> None:
    """``--per-joint`` names each type for its joint: ``shoulder/kt`` and the offset
    ``shoulder/offset`` share a prefix, and the offset stays out of the set."""
    truth = published_named("sts3215", "m1")
    space = RobotSpace.build(JOINTS.per_joint().with_model(get_model("m1")), {})
    values = {name: truth.values.get(name.partition("/")[2], 0.0) for name in space.names}
    values.update({"shoulder/offset": 0.03, "elbow/offset": -0.02})
    sets = space.parameter_sets(values, {})
    assert set(sets) == {"shoulder", "elbow"}
    assert all(s.values["kt"] == truth.values["kt"] and s.values["q_offset"] == 0.0
               for s in sets.values())
    assert space.offsets(values) == {"shoulder": 0.03, "elbow": -0.02}
    np.testing.assert_array_equal(space.population_of([values])[0][:, P.Q_OFFSET], OFFSETS)
