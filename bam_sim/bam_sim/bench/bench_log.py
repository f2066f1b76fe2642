"""A bench log: one trajectory of the pendulum bench on a fixed time step.

Entry k holds the state measured at t_k = k·Δt and the command sent at t_k,
which acts during the step k → k+1: the goal position, the torque enable and
the low-level control the servo applied. Algorithm 1 therefore steps from
entry k to k+1 with the command of entry k. This is the alignment of the
published implementation, with which the published parameter sets were
identified.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import C_DAMPING, C_SUPPLY, Actuator


def _check_series(name: str, values: np.ndarray, n: int, where: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (n,):
        raise BamError(f"{where}: '{name}' has shape {values.shape}, expected ({n},)")
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise BamError(f"{where}: '{name}' is not finite at entry {bad[0]} "
                       f"({values[bad[0]]}); drop or repair that sample")
    return values


@dataclass(frozen=True)
class BenchLog:
    """Commands, recorded states and the bench of one trajectory (SI units)."""

    bench: Bench
    kp: float
    dt: float
    goal: np.ndarray
    enabled: np.ndarray
    position: np.ndarray | None = None
    velocity: np.ndarray | None = None
    control: np.ndarray | None = None
    name: str = ""
    meta: dict = field(default_factory=dict)
    # Recording conditions that override the actuator's constants when known:
    # the measured supply voltage (voltage-controlled servos) and the damping
    # factor d of the host PD law (current-controlled servos).
    supply_voltage: float | None = None
    damping: float | None = None
    # The temperature the actuator reported, °C: a servo's own sensor, which is not the
    # winding (it lags it); sets with the thermal group start their winding temperature
    # from its first value and are scored on it.
    temperature: np.ndarray | None = None
    # The input voltage the bus reported, V (a fit of the supply group is scored on it).
    input_voltage: np.ndarray | None = None
    # The firmware's present load, a signed fraction of its register's full scale; what
    # it measures depends on the servo (meta["load"] says: the XL330's is its PWM duty).
    # Evidence only: no simulation reads it.
    load: np.ndarray | None = None

    def __post_init__(self) -> None:
        where = f"log '{self.name}'" if self.name else "log"
        if not np.isfinite(self.dt) or self.dt <= 0.0:
            raise BamError(f"{where}: time step must be > 0 s, got {self.dt}")
        if not np.isfinite(self.kp) or self.kp < 0.0:
            raise BamError(f"{where}: gain kp must be a finite number >= 0, got {self.kp}")
        n = len(self.goal)
        if n < 2:
            raise BamError(f"{where}: needs at least 2 entries, got {n}")
        object.__setattr__(self, "goal", _check_series("goal", self.goal, n, where))
        enabled = np.asarray(self.enabled).astype(bool)
        if enabled.shape != (n,):
            raise BamError(f"{where}: 'enabled' has shape {enabled.shape}, expected ({n},)")
        object.__setattr__(self, "enabled", enabled)
        # A supply is > 0 V; d = 0 is a loop without a D term (the XL330's by default).
        for name, low in (("supply_voltage", np.nextafter(0.0, 1.0)), ("damping", 0.0)):
            value = getattr(self, name)
            if value is not None and not (np.isfinite(value) and value >= low):
                raise BamError(f"{where}: {name} must be a finite number "
                               f"{'> 0' if low > 0.0 else '>= 0'}, got {value}")
        for name in ("position", "velocity", "control", "temperature", "input_voltage",
                     "load"):
            series = getattr(self, name)
            if series is not None:
                object.__setattr__(self, name, _check_series(name, series, n, where))

    def __len__(self) -> int:
        return len(self.goal)

    @property
    def time(self) -> np.ndarray:
        return np.arange(len(self)) * self.dt

    def consts(self, actuator: Actuator) -> np.ndarray:
        """The actuator's constant vector with this log's recording conditions."""
        consts = actuator.consts()
        if self.supply_voltage is not None:
            consts[C_SUPPLY] = self.supply_voltage
        if self.damping is not None:
            consts[C_DAMPING] = self.damping
        return consts

    @property
    def initial_state(self) -> tuple[float, float]:
        """(q_0, q̇_0): the recorded first state, else the first goal at rest."""
        q0 = self.position[0] if self.position is not None else self.goal[0]
        dq0 = self.velocity[0] if self.velocity is not None else 0.0
        return float(q0), float(dq0)


@dataclass(frozen=True)
class LogBatch:
    """Logs packed into padded arrays for the batched kernels."""

    logs: tuple[BenchLog, ...]
    actuator: Actuator
    dt: float
    lengths: np.ndarray
    kp: np.ndarray
    load_inertia: np.ndarray
    gravity_torque: np.ndarray
    q0: np.ndarray
    dq0: np.ndarray
    goal: np.ndarray
    enabled: np.ndarray
    control: np.ndarray
    position: np.ndarray
    consts: np.ndarray
    temperature: np.ndarray  # °C, NaN where not recorded (and as padding)
    input_voltage: np.ndarray  # V, NaN where not recorded (and as padding)

    @classmethod
    def pack(cls, logs: list[BenchLog] | tuple[BenchLog, ...], actuator: Actuator) -> LogBatch:
        """Pad ``logs`` to one length; the actuator's constants, per log, with overrides."""
        if not logs:
            raise BamError("no logs to simulate; give at least one")
        dts = {log.dt for log in logs}
        if len(dts) != 1:
            raise BamError(f"logs have different time steps {sorted(dts)}; resample them to one")
        n, t = len(logs), max(len(log) for log in logs)
        goal, control, position = (np.zeros((n, t)) for _ in range(3))
        temperature, voltage = np.full((n, t), np.nan), np.full((n, t), np.nan)
        enabled = np.zeros((n, t), dtype=np.bool_)
        for i, log in enumerate(logs):
            m = len(log)
            goal[i, :m] = log.goal
            enabled[i, :m] = log.enabled
            if log.control is not None:
                control[i, :m] = log.control
            position[i, :m] = log.position if log.position is not None else np.nan
            if log.temperature is not None:
                temperature[i, :m] = log.temperature
            if log.input_voltage is not None:
                voltage[i, :m] = log.input_voltage
        states = np.array([log.initial_state for log in logs])
        return cls(
            logs=tuple(logs), actuator=actuator, dt=dts.pop(),
            lengths=np.array([len(log) for log in logs], dtype=np.int64),
            kp=np.array([log.kp for log in logs], dtype=np.float64),
            load_inertia=np.array([log.bench.inertia(0.0) for log in logs]),
            gravity_torque=np.array([log.bench.gravity_torque for log in logs]),
            q0=states[:, 0].copy(), dq0=states[:, 1].copy(),
            goal=goal, enabled=enabled, control=control, position=position,
            consts=np.stack([log.consts(actuator) for log in logs]),
            temperature=temperature, input_voltage=voltage,
        )

    def __len__(self) -> int:
        return len(self.logs)

    @property
    def has_temperature(self) -> bool:
        """Whether any log recorded a temperature (the servo's sensor)."""
        return any(log.temperature is not None for log in self.logs)

    @property
    def has_input_voltage(self) -> bool:
        """Whether any log recorded the input voltage."""
        return any(log.input_voltage is not None for log in self.logs)

    @property
    def steps(self) -> int:
        """Total number of simulated log-steps of one pass over the batch."""
        return int(np.sum(self.lengths - 1))
