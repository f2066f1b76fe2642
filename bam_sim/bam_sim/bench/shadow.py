"""The identified model run in the shadow of a live actuator: the health monitor's core.

A :class:`Shadow` is given, sample by sample, what a bench reports (measured
position and velocity; the goal, torque enable and gain the servo acted on; its
temperature and input voltage) and steps the identified model beside it with
:class:`bam_sim.bench.stepper.BenchStepper`, one tick per sample. Every
``resync_period`` the model is put back on the measured state, as a fit's reset
period does: the residual then measures how well the model predicts the next
second or so, not how far two chaotic trajectories drifted apart. Sample k is
compared with the model's state k before the model takes command k (the tick
convention of :mod:`bam_sim.bench.stepper`), so the true set against its own
simulation gives a residual of exactly zero.

Beside the identified model runs an estimate: the same set with its friction
scaled by ŝ and its commands acting τ̂ later, and two probes, one with the
friction × ŝ(1 + ε), one with the commands τ̂ + δ late. Their differences from
the estimate are the sensitivities J of the position to the scale and to the
lag, and at the end of each window (ŝ, τ̂) take one damped Gauss-Newton step on
the window's residual ((JᵀJ + λ) Δ = rate · Jᵀr). That is a slowly varying
friction multiplier and a delay fitted on the residual, which name a drift
("friction +35 % since start", "measurement lags the model by 6 ms: bus delay")
that the residual alone only shows as "worse". The two are fitted together
because each alone would take the other's share: more friction also makes the
joint arrive late, and a late joint also looks braked. The identified model
itself is never changed: the running MAE stays the distance to the model the
thresholds were derived from.

The lag is a command delay (the set's ``latency.command`` + τ̂): a driver that
stamps its states just before the read and writes the goals after it, as the
serial drivers do, puts a slow reply between the stamp and the goal, so the
joint follows its commands τ late; a state read late looks the same over a
window (the measured motion is the model's shifted by τ).

A window in which the measured joint does not move while the model moves it
far is a jam. With the thermal group, the winding temperature the actuator
reports gives the winding resistance R(T) = R_T0 (1 + α (T − T_0)), whose change
since the first sample is named ("R +8 %: hot"); the model's winding starts each
window at the reported temperature (its ambient set to it for that window: the
thermal time constants are minutes, a window is a second).

A sample whose position, velocity, goal or gain is not a number is not compared
(the model re-syncs at the next good one) and makes the verdict an ERROR naming
the joint and the field for one window; samples whose stamps do not advance are
not compared either, and after one window's worth of them the verdict is STALE
(counted in samples: a frozen clock has no time to count in).

No ROS import: :mod:`bam_sim.nodes.monitor_node` is a thin node over it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bam_sim.bench.geometry import Bench
from bam_sim.bench.stepper import BenchStepper
from bam_sim.common.errors import BamError
from bam_sim.models.parameter_set import ParameterSet

# The magnitudes of every friction family (BAM budgets, elasto-plastic, LuGre): a
# friction "+50 %" multiplies all of them; the shapes (Stribeck speed, exponent)
# stay. The load-dependent coefficients scale a torque, hence the budget, linearly.
FRICTION_NAMES = (
    "friction_base", "friction_stribeck", "friction_viscous",
    "load_friction_base", "load_friction_stribeck", "load_friction_motor",
    "load_friction_external", "load_friction_motor_stribeck",
    "load_friction_external_stribeck", "load_friction_motor_quad",
    "load_friction_external_quad", "lugre.coulomb", "lugre.static", "lugre.viscous",
)
PROBE_STEP = 0.1  # ε: the probe model's relative friction step (a finite difference)
SCALE_RANGE = (0.1, 10.0)  # ŝ is kept here: beyond it the estimate only saturates
MAX_STEP = 0.25  # largest relative change of ŝ in one window: one odd window cannot swing it
# λ of the Gauss-Newton step per sample: sensitivities below 1 mrad per unit of scale
# (a joint at rest, held by its controller) move nothing.
SENSITIVITY_FLOOR = 1.0e-3
# States arriving with a median interval past this many ticks of the bench's rate: the
# bus no longer keeps the rate (a reply slower than the cycle), "bus delay".
SLOW_STATES = 1.25
# The lag probe's step δ, in ticks of the states: the command delay is interpolated
# linearly between ticks, so half a tick is a finite difference inside one segment.
LAG_PROBE_TICKS = 0.5
MAX_LAG = 0.25  # s: τ̂ is kept in [−the set's own command delay, this]
MAX_LAG_STEP = 0.004  # s, the largest change of τ̂ in one window (ŝ moves 25 % at most)
# λ for the lag, per sample: a joint slower than 0.05 rad/s (∂q/∂τ is about −q̇) says
# nothing about a delay.
LAG_SENSITIVITY_FLOOR = 0.05  # rad/s
# A jam: the joint moved less than JAM_STILL (a few encoder steps) in a window where the
# model moved it more than JAM_MOVING.
JAM_STILL = 0.005  # rad
JAM_MOVING = 0.05  # rad


class Measurement(NamedTuple):
    """What the actuator reports at one tick (the command is the one it acts on)."""

    position: float  # rad
    velocity: float  # rad/s
    goal: float  # rad
    torque_enable: bool
    gain: float
    temperature: float = math.nan  # °C, NaN when not measured
    input_voltage: float = math.nan  # V, NaN when not measured
    time: float = math.nan  # s, the sample's stamp (NaN: none): how fast states come


# The fields the model compares or acts on: a sample with one of them not a number (a
# failed read, a bad conversion) says nothing about the actuator's health. Temperature and
# input voltage are NaN where not measured.
COMPARED_FIELDS = ("position", "velocity", "goal", "gain")


class Residual(NamedTuple):
    """Predicted minus measured at one tick, and the running MAE after it."""

    position: float  # rad
    velocity: float  # rad/s
    mae_position: float  # rad
    mae_velocity: float  # rad/s


@dataclass(frozen=True)
class ShadowSettings:
    """How the shadow follows the actuator (validated by :meth:`check`)."""

    dt: float  # s, the period of the states (the model's time step)
    resync_period: float = 1.0  # s between two re-syncs to the measured state
    mae_window: float = 5.0  # s, time constant of the running MAE
    friction_rate: float = 0.5  # fraction of the Gauss-Newton step ŝ takes per window
    lag_rate: float = 0.5  # the same for τ̂

    def check(self) -> ShadowSettings:
        for name in ("dt", "resync_period", "mae_window"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise BamError(f"{name} must be > 0 s, got {value}")
        if self.resync_period < self.dt:
            raise BamError(f"resync_period ({self.resync_period:g} s) must be at least one "
                           f"tick of the states ({self.dt:g} s)")
        for name in ("friction_rate", "lag_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise BamError(f"{name} must be in [0, 1], got {value}")
        return self


def friction_names(params: ParameterSet) -> tuple[str, ...]:
    """The friction magnitudes ``params`` has (non-zero)."""
    return tuple(n for n in FRICTION_NAMES if params.values.get(n, 0.0) > 0.0)


def with_friction(params: ParameterSet, scale: float) -> ParameterSet:
    """``params`` with every friction magnitude multiplied by ``scale``."""
    if scale == 1.0:
        return params
    return params.replace(**{n: params.values[n] * scale for n in friction_names(params)})


def command_delay(params: ParameterSet) -> float:
    """The set's own command delay (its ``latency`` group), s."""
    return params.values.get("latency.command", 0.0)


def with_drift(params: ParameterSet, scale: float, lag: float) -> ParameterSet:
    """``params`` with the friction × ``scale`` and the commands ``lag`` s later."""
    scaled = with_friction(params, scale)
    if lag == 0.0:
        return scaled
    return scaled.replace(**{"latency.command": command_delay(params) + lag})


def has_thermal(params: ParameterSet) -> bool:
    return params.values.get("thermal.resistance", 0.0) > 0.0


def resistance_factor(params: ParameterSet, temperature: float) -> float:
    """R(T)/R_T0 = 1 + α (T − T_0) of the thermal group (1 without it, or NaN T)."""
    if not has_thermal(params) or not math.isfinite(temperature):
        return 1.0
    alpha = params.values.get("thermal.tempcoef", 0.0)
    return 1.0 + alpha * (temperature - params.values.get("thermal.reftemp", 25.0))


class DriftTracker:
    """(ŝ, τ̂): a multiplier of the friction budget and a command delay, fitted window by
    window on the residual with one damped Gauss-Newton step each.

    ``rates``: the fraction of the step each takes (0: not tracked). ``lag_floor``: the
    lowest τ̂, minus the set's own command delay (a total delay is never negative).
    """

    def __init__(self, rates: tuple[float, float], lag_floor: float = 0.0) -> None:
        self.scale = 1.0
        self.lag = 0.0  # s
        self._rates = np.array(rates, dtype=float)
        self._lag_floor = lag_floor
        self._jj = np.zeros((2, 2))
        self._jr = np.zeros(2)
        self._count = 0

    def add(self, j_scale: float, j_lag: float, residual: float) -> None:
        """One sample: ∂q/∂s (rad per unit of scale), ∂q/∂τ (rad/s) and measured −
        estimate (rad)."""
        j = np.array((j_scale, j_lag))
        self._jj += np.outer(j, j)
        self._jr += j * residual
        self._count += 1

    def update(self) -> tuple[float, float]:
        """Close the window: take the damped step; the new (ŝ, τ̂)."""
        if self._count and np.any(self._jj.diagonal() > 0.0):
            floors = np.array((SENSITIVITY_FLOOR, LAG_SENSITIVITY_FLOOR))
            # λ per parameter: a quiet sensitivity gets a step near 0, and one parameter
            # the window cannot see leaves the other a 1-D step.
            normal = self._jj + np.diag(self._count * floors ** 2)
            step = self._rates * np.linalg.solve(normal, self._jr)
            bound = MAX_STEP * self.scale
            self.scale = _clip(self.scale + _clip(step[0], -bound, bound), *SCALE_RANGE)
            self.lag = _clip(self.lag + _clip(step[1], -MAX_LAG_STEP, MAX_LAG_STEP),
                             self._lag_floor, MAX_LAG)
        self.discard()
        return self.scale, self.lag

    def discard(self) -> None:
        """Forget the window's samples."""
        self._jj[:] = 0.0
        self._jr[:] = 0.0
        self._count = 0


def _clip(value: float, low: float, high: float) -> float:
    return max(low, min(high, float(value)))


class Shadow:
    """The identified model beside one actuator; feed it every sample with :meth:`step`.

    ``supply_voltage`` is the bench's (``bam/bench_info``); a reported input
    voltage replaces it at each re-sync when the set does not model the supply's
    sag itself.
    """

    def __init__(self, params: ParameterSet, bench: Bench, settings: ShadowSettings,
                 supply_voltage: float | None = None, joint: str = "the joint") -> None:
        self.params = params
        self.joint = joint  # how the messages name the actuator's joint
        self.bench = bench
        self.settings = settings.check()
        self._supply = supply_voltage
        self._window = max(1, round(settings.resync_period / settings.dt))
        self._alpha = min(1.0, settings.dt / settings.mae_window)  # EWMA weight per tick
        self._has_friction = bool(friction_names(params))
        rates = (settings.friction_rate if self._has_friction else 0.0, settings.lag_rate)
        self._drift = DriftTracker(rates, lag_floor=-command_delay(params))
        self._lag_probe = LAG_PROBE_TICKS * settings.dt
        self._models: tuple[BenchStepper, ...] = ()
        self._previous: Measurement | None = None  # the sample before, for a late command
        self._last_time = math.nan  # s, the stamp of the sample before
        self._intervals: deque[float] = deque(maxlen=self._window)  # s, the last window's
        self._since = 0  # ticks since the last re-sync
        self.mae_position = self.mae_velocity = 0.0
        self.windows = 0  # windows closed
        self.jammed = False  # the last closed window was a jam
        self.window_motion = (0.0, 0.0)  # (measured, model) motion of the last window, rad
        self._range = _Ranges()
        self.first_temperature = self.temperature = math.nan
        self.frozen = 0  # consecutive samples whose stamp did not advance
        self.frozen_at = math.nan  # s, the stamp they repeat
        self.nonfinite = 0  # samples not compared: a field of COMPARED_FIELDS not a number
        self.nonfinite_fields = ""  # the last such sample's, e.g. "position nan"
        self._since_nonfinite = math.inf  # samples since it
        self._broken = False  # the stream broke (a sample not compared): re-sync at the next

    # -- what the monitor reports ---------------------------------------------------

    @property
    def friction_scale(self) -> float:
        """ŝ: the friction the joint shows, relative to the identified set's."""
        return self._drift.scale

    @property
    def state_interval(self) -> float:
        """The median time between two stamps over the last window, s (NaN without stamps).

        The median: a driver that was held up once and caught up does not count."""
        return float(np.median(self._intervals)) if self._intervals else math.nan

    @property
    def slow_states(self) -> bool:
        """Whether the states come markedly slower than the bench's rate."""
        return self.state_interval > SLOW_STATES * self.settings.dt

    @property
    def stale_after(self) -> int:
        """Samples with a stamp that does not advance before the verdict is STALE: one
        re-sync window's worth."""
        return self._window

    @property
    def stale(self) -> bool:
        """Whether the last :attr:`stale_after` samples or more repeated an old stamp."""
        return self.frozen >= self._window

    @property
    def nonfinite_recent(self) -> bool:
        """Whether a sample within the last window was not compared (a field not a number)."""
        return self._since_nonfinite < self._window

    @property
    def lag(self) -> float:
        """τ̂, s: how much later than the model the joint follows its commands."""
        return self._drift.lag

    @property
    def resistance_change(self) -> float:
        """R(T_now)/R(T_first) − 1 with the thermal group and a reported temperature; NaN
        otherwise."""
        if not has_thermal(self.params) or not math.isfinite(self.first_temperature):
            return math.nan
        return (resistance_factor(self.params, self.temperature)
                / resistance_factor(self.params, self.first_temperature) - 1.0)

    # -- stepping ------------------------------------------------------------------

    def step(self, m: Measurement, resync: bool = False) -> Residual | None:
        """Compare sample k with the model's state k, then step the model with its command.

        ``resync``: put the model on this sample now (e.g. after a lost sample). None for
        a sample whose stamp is not after the last one (counted in :attr:`frozen`); a
        sample with a field of :data:`COMPARED_FIELDS` not a number is not compared (NaN
        residuals, the running MAE kept) and the model re-syncs at the next one.
        """
        if math.isfinite(m.time) and math.isfinite(self._last_time):
            if m.time <= self._last_time:
                self.frozen += 1
                self.frozen_at = self._last_time
                return None
            self._intervals.append(m.time - self._last_time)
        self.frozen = 0
        self._last_time = m.time
        self._note_temperature(m.temperature)
        bad = [f"{name} {getattr(m, name)}" for name in COMPARED_FIELDS
               if not math.isfinite(getattr(m, name))]
        if bad:
            self.nonfinite += 1
            self.nonfinite_fields = ", ".join(bad)
            self._since_nonfinite = 0
            self._broken = True
            return Residual(math.nan, math.nan, self.mae_position, self.mae_velocity)
        self._since_nonfinite += 1
        resync, self._broken = resync or self._broken, False
        if resync or not self._models or self._since >= self._window:
            self._close_window()
            self._resync(m, resync)
        identified, estimate, friction_probe, lag_probe = (m.state for m in self._models)
        q, dq = identified
        rq, rdq = q - m.position, dq - m.velocity
        self.mae_position += (abs(rq) - self.mae_position) * self._alpha
        self.mae_velocity += (abs(rdq) - self.mae_velocity) * self._alpha
        q_est = estimate[0]
        self._drift.add((friction_probe[0] - q_est) / (self._drift.scale * PROBE_STEP),
                        (lag_probe[0] - q_est) / self._lag_probe, m.position - q_est)
        self._range.add(m.position, q)
        for model in self._models:
            model.set_command(m.goal, bool(m.torque_enable), m.gain)
            model.tick()
        self._since += 1
        self._previous = m
        return Residual(rq, rdq, self.mae_position, self.mae_velocity)

    def _note_temperature(self, temperature: float) -> None:
        if math.isfinite(temperature):
            self.temperature = temperature
            if not math.isfinite(self.first_temperature):
                self.first_temperature = temperature

    def _close_window(self) -> None:
        """The window's verdicts: (ŝ, τ̂) step, jam or not (nothing before the first
        window). A window cut short by a break in the stream (under half its length) gives
        none: a few samples after a slip are too few to move an estimate on."""
        if not self._models:
            return
        if 2 * self._since >= self._window:
            self._drift.update()
            moved, modelled = self.window_motion = self._range.motions()
            self.jammed = moved < JAM_STILL and modelled > JAM_MOVING
            self.windows += 1
        else:
            self._drift.discard()
        self._range = _Ranges()

    def _resync(self, m: Measurement, resync: bool) -> None:
        """Four models on the measured state: identified, (ŝ, τ̂), (ŝ(1 + ε), τ̂), (ŝ, τ̂ + δ).

        A late model acts on the command before this sample's until its delay has passed
        (the previous sample's, unless the stream broke: then this one's, which is all
        there is).
        """
        base = self.params
        if has_thermal(base) and math.isfinite(m.temperature):
            base = base.replace(**{"thermal.ambient": m.temperature})
        scale, lag = self._drift.scale, self._drift.lag
        sets = [base, with_drift(base, scale, lag),
                with_drift(base, scale * (1 + PROBE_STEP), lag),
                with_drift(base, scale, lag + self._lag_probe)]
        supply = self._supply
        if ("supply.resistance" not in base.values and math.isfinite(m.input_voltage)
                and m.input_voltage > 0.0):
            supply = m.input_voltage
        before = m if resync or self._previous is None else self._previous
        self._models = tuple(
            BenchStepper(p, self.bench, self.settings.dt, position=m.position,
                         velocity=m.velocity, goal=before.goal,
                         torque_enable=bool(before.torque_enable), gain=before.gain,
                         supply_voltage=supply)
            for p in sets)
        self._since = 0


class _Ranges:
    """The span of the measured and of the modelled positions over a window."""

    def __init__(self) -> None:
        self.low = [math.inf, math.inf]
        self.high = [-math.inf, -math.inf]

    def add(self, measured: float, modelled: float) -> None:
        for i, value in enumerate((measured, modelled)):
            self.low[i] = min(self.low[i], value)
            self.high[i] = max(self.high[i], value)

    def motions(self) -> tuple[float, float]:
        spans = [h - lo if h >= lo else 0.0 for lo, h in zip(self.low, self.high, strict=True)]
        return spans[0], spans[1]


# -- the verdict -------------------------------------------------------------------------

OK, WARN, ERROR, STALE = 0, 1, 2, 3  # diagnostic_msgs/DiagnosticStatus levels
LEVEL_NAMES = ("OK", "WARN", "ERROR", "STALE")
# Provenance keys of a fitted file that hold its position MAE (rad), best first, and how
# the diagnostics name them. fit writes validation_mae only when it had validation logs.
MAE_KEYS = (("validation_mae", "validation MAE"), ("train_mae", "training MAE"))


@dataclass(frozen=True)
class Thresholds:
    """WARN above ``warn_factor`` x the reference MAE, ERROR above ``error_factor`` x;
    drifts are named beyond their tolerances (relative; the lag's in s); see
    :func:`assess` for those that are a WARN by themselves."""

    reference_mae: float  # rad
    warn_factor: float = 2.0
    error_factor: float = 5.0
    friction_tolerance: float = 0.2
    resistance_tolerance: float = 0.05
    lag_tolerance: float = 0.01  # s
    reference_name: str = "validation MAE"  # what reference_mae is, in the messages

    def check(self) -> Thresholds:
        if not (math.isfinite(self.reference_mae) and self.reference_mae > 0.0):
            raise BamError(f"reference MAE must be > 0 rad, got {self.reference_mae}")
        if not (math.isfinite(self.lag_tolerance) and self.lag_tolerance > 0.0):
            raise BamError(f"lag_tolerance must be > 0 s, got {self.lag_tolerance}")
        if not 1.0 <= self.warn_factor < self.error_factor:
            raise BamError(f"need 1 <= warn_factor < error_factor, got {self.warn_factor:g} "
                           f"and {self.error_factor:g}")
        return self

    @property
    def warn(self) -> float:
        return self.warn_factor * self.reference_mae

    @property
    def error(self) -> float:
        return self.error_factor * self.reference_mae


def reference_mae(params: ParameterSet, where: str, given: float = 0.0) -> tuple[float, str]:
    """(the MAE the thresholds scale, what it is): ``given`` (> 0), else the file's
    validation MAE, else (a fit without validation logs) its training MAE, said so in the
    name. A set with neither (a published one) is refused, and so is a key that holds no
    MAE (NaN, 0, negative, text): the other key would silently stand in for it."""
    if given > 0.0:
        return given, "given reference MAE"
    for key, name in MAE_KEYS:
        value = params.provenance.get(key)
        if value is None:
            continue
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not (math.isfinite(value) and value > 0.0)):
            raise BamError(f"{where}: provenance {key} is {value!r}, not an MAE > 0 rad; "
                           "correct the file (fit writes it) or give the MAE to compare "
                           "with as reference_mae:=RAD")
        if key != MAE_KEYS[0][0]:
            name += f" (no {MAE_KEYS[0][0]} in the file)"
        return float(value), name
    raise BamError(f"{where} has no validation_mae in its provenance (a set not written by "
                   "fit); give the MAE to compare with as reference_mae:=RAD")


def causes(shadow: Shadow, thresholds: Thresholds) -> list[str]:
    """The drifts the shadow sees, in words: jam, slow states, lag, friction, winding
    resistance."""
    found = []
    if shadow.jammed:
        moved, modelled = shadow.window_motion
        found.append(f"jammed: moved {moved:.3f} rad where the model moved {modelled:.2f} rad")
    if shadow.slow_states:
        found.append(f"states {1e3 * shadow.state_interval:.1f} ms apart where the bench runs "
                     f"at {1e3 * shadow.settings.dt:.1f} ms: bus delay")
    if lagging(shadow, thresholds):
        lag = shadow.lag
        found.append(f"measurement {'lags' if lag > 0 else 'leads'} the model by "
                     f"{1e3 * abs(lag):.0f} ms: {'bus delay' if lag > 0 else 'early stamps'}")
    change = shadow.friction_scale - 1.0
    if abs(change) >= thresholds.friction_tolerance:
        found.append(f"friction {100 * change:+.0f} % since start")
    r_change = shadow.resistance_change
    if math.isfinite(r_change) and abs(r_change) >= thresholds.resistance_tolerance:
        found.append(f"R {100 * r_change:+.0f} %: {'hot' if r_change > 0 else 'cold'}")
    return found


def lagging(shadow: Shadow, thresholds: Thresholds) -> bool:
    """Whether τ̂ is past its tolerance."""
    return abs(shadow.lag) >= thresholds.lag_tolerance


def drifted(shadow: Shadow, thresholds: Thresholds) -> bool:
    """A fault that is a WARN whatever the MAE: a jam, or states slower than the bench's
    rate (facts of the measurement, not estimates).

    The estimates are named and left to the MAE: ŝ wanders on a healthy servo (by a
    fifth of itself on the simulated MX-64's quantized encoder, measured), so a friction
    change alone would warn of nothing; τ̂ also takes up what a model integrated at the
    states' rate misses of a continuous joint (a few ms, depending on the motion); R(T)
    is modelled (it follows the reported temperature).
    """
    return shadow.jammed or shadow.slow_states


def assess(shadow: Shadow, thresholds: Thresholds) -> tuple[int, str]:
    """(level, message): the level from the running MAE, at least WARN for a fault
    :func:`drifted` names, ERROR while samples that are not numbers come, STALE while the
    stamps do not advance; the message naming the causes."""
    mae = shadow.mae_position
    level = ERROR if mae > thresholds.error else WARN if mae > thresholds.warn else OK
    if drifted(shadow, thresholds):
        level = max(level, WARN)
    ratio = mae / thresholds.reference_mae
    message = (f"MAE {mae:.3g} rad = {ratio:.1f}x the {thresholds.reference_name} "
               f"{thresholds.reference_mae:.3g} rad (WARN above {thresholds.warn_factor:g}x, "
               f"ERROR above {thresholds.error_factor:g}x)")
    found = causes(shadow, thresholds)
    if found:
        message += ": " + "; ".join(found)
    elif level > OK:
        message += ": no drift named (a delay, a load, or a model the set lacks)"
    if shadow.nonfinite_recent:
        level = ERROR
        message = (f"{shadow.joint}: {shadow.nonfinite_fields} in the states ({shadow.nonfinite} "
                   "samples so far, not compared: a failed read or a driver fault); " + message)
    if shadow.stale:
        level = STALE
        message = (f"{shadow.joint}: the states' stamps stay at {shadow.frozen_at:.6f} s for "
                   f"{shadow.frozen} samples (a frozen clock or stamping; nothing compared); "
                   + message)
    return level, message
