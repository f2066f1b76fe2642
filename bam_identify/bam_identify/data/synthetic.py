"""Synthetic bench recordings: logs simulated from a known parameter set.

Used to check identification end to end (recover a known truth) and to
benchmark it on a set shaped like the paper's (Table I configurations × the
section V-A trajectories).
"""

from __future__ import annotations

import itertools

import numpy as np

from bam_sim.bench.bench_log import BenchLog
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import published
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import Actuator

PAPER_TRAJECTORIES = ("accelerated_oscillations", "slow_oscillations", "raise_lower", "lift_drop")


def record(truth: ParameterSet, bench: Bench, kp: float, trajectory: str, dt: float = 0.005,
           duration: float = 6.0, noise: float = 0.0,
           rng: np.random.Generator | None = None, temperature_step: float = 0.0,
           voltage_step: float = 0.0) -> BenchLog:
    """One log of ``trajectory`` as the bench would record it under ``truth``.

    ``noise`` (rad) adds Gaussian measurement noise to the recorded positions.
    A ``truth`` with the thermal group also records the winding temperature,
    rounded to ``temperature_step`` (°C; 0: exact), and one with the supply group
    the input voltage, rounded to ``voltage_step`` (V), as a servo reports them.
    """
    cmd = command_log(trajectory, bench, kp, dt, duration)
    sim = rollout(truth, cmd)
    position = sim.position
    if noise > 0.0:
        position = position + (rng or np.random.default_rng(0)).normal(0.0, noise, len(cmd))
    temperature = None
    if np.isfinite(sim.temperature).all():
        temperature = sim.temperature
        if temperature_step > 0.0:
            temperature = np.round(temperature / temperature_step) * temperature_step
    voltage = None
    if "supply" in truth.groups:
        voltage = sim.input_voltage
        if voltage_step > 0.0:
            voltage = np.round(voltage / voltage_step) * voltage_step
    return BenchLog(bench=bench, kp=kp, dt=dt, goal=cmd.goal, enabled=cmd.enabled,
                    position=position, velocity=sim.velocity, control=sim.control,
                    name=f"{trajectory}_m{bench.mass:g}_l{bench.length:g}_kp{kp:g}",
                    meta={"trajectory": trajectory, "gain": kp},
                    supply_voltage=None, damping=None, temperature=temperature,
                    input_voltage=voltage)


def paper_like_set(truth: ParameterSet, n_logs: int, arm_mass: float = 0.0,
                   trajectories: tuple[str, ...] = PAPER_TRAJECTORIES, dt: float = 0.005,
                   duration: float = 6.0, noise: float = 0.0, seed: int = 0) -> list[BenchLog]:
    """``n_logs`` logs spread over the actuator's Table I setups and the trajectories.

    Each trajectory is recorded equally often; masses, lengths and gains are
    drawn without repetition from their combinations (seeded).
    """
    act = truth.actuator
    rng = np.random.default_rng(seed)
    setups = list(itertools.product(act.masses, act.lengths, act.gains))
    order = rng.permutation(len(setups))
    logs = []
    for i in range(n_logs):
        mass, length, kp = setups[order[i % len(setups)]]
        bench = Bench(mass=mass, length=length, arm_mass=arm_mass)
        logs.append(record(truth, bench, kp, trajectories[i % len(trajectories)], dt, duration,
                           noise, rng))
    return logs


# A synthetic elasto-plastic friction in units of the actuator's scales (see
# model_registry.ParamSpec): F_C, F_S − F_C, D, K, B, and v_S in rad/s.
_EP_EXAMPLE = {"friction_base": (0.12, "friction"), "friction_stribeck": (0.16, "friction"),
               "friction_viscous": (0.1, "viscous"), "contact_stiffness": (0.3, "stiffness"),
               "contact_damping": (0.2, "damping"), "dtheta_stribeck": (0.2, None),
               "load_friction_base": (0.02, None), "load_friction_stribeck": (0.03, None)}


def elastoplastic_example(actuator: Actuator, model: FrictionModel) -> ParameterSet:
    """A made-up ``ep_*`` set to simulate recordings from: not identified on any servo.

    Motor parameters (k_t, R, J_m, ...) of the actuator's published M2 set (M1 where
    only that one is published); a
    stiction F_S = 2.3·F_C, sized to the actuator's friction scale, with the
    spring-damper at the registry's defaults, so (14) and the coupling limit
    hold on the Table I benches at a 5 ms step.
    """
    if not model.elastoplastic:
        raise BamError(f"{model.name} is not an elasto-plastic model; choose one of ep_cv, "
                       "ep_stribeck, ep_rational, ep_load")
    try:
        m2 = published(actuator, get_model("m2"))
    except BamError:
        m2 = published(actuator, get_model("m1"))
    scales = m2.actuator.scales
    values = {name: m2.values[name] for name in m2.actuator.motor_bounds}
    for name in model.params:
        factor, scale = _EP_EXAMPLE[name]
        values[name] = factor * scales.get(scale, 1.0)
    return ParameterSet.build(actuator, model, values,
                              {"source": "bam_identify.data.synthetic.elastoplastic_example"})


# A made-up motor of the dcmotor family: a small servo motor with LuGre friction and a
# winding that heats by tens of kelvin within a minute of holding against gravity.
_DCMOTOR_EXAMPLE = {
    "resistance": 2.5, "motorconst": 0.45, "armature": 0.012,
    "lugre.stiffness": 150.0, "lugre.damping": 1.5, "lugre.coulomb": 0.06,
    "lugre.static": 0.12, "lugre.stribeck": 0.3, "lugre.viscous": 0.04,
    "thermal.resistance": 6.0, "thermal.capacitance": 4.0, "thermal.tempcoef": 0.0039,
    "thermal.reftemp": 22.0, "thermal.ambient": 22.0,
    "controller.kd": 0.4,
}


def dcmotor_example(**values: float) -> ParameterSet:
    """A made-up ``dcmotor`` set with LuGre and the thermal group, to simulate recordings
    from (not identified on any motor); ``values`` replace some of its numbers."""
    return ParameterSet.from_names("dcmotor", "lugre", {**_DCMOTOR_EXAMPLE, **values},
                                   {"source": "bam_identify.data.synthetic.dcmotor_example"})
