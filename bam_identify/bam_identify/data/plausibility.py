"""Plausibility of a bench recording: the one check that bags and legacy JSON logs both pass.

A recording read from a bag (:mod:`bam_identify.data.bag_reader`) or from a
legacy JSON log (:mod:`bam_identify.data.legacy_logs`) goes through these
functions before it becomes a :class:`~bam_sim.bench.bench_log.BenchLog`:
the bench description (geometry, gain, supply, damping), every recorded
series (finite, within a bound no bench reaches) and the sample times
(increasing, a sampling period a bench records at, no holes).

The bounds are wide enough for any bench of the supported actuators and
narrow enough to catch what corrupts a fit without failing it: a number
written as 1e308, a value in the wrong unit (milliseconds for seconds,
millivolts for volts), or an hour-long pause in the middle of a run.
Each reader names the file and the field as its source spells them, and the
remedy that applies to that source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bam_sim.bench.geometry import Bench
from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models.servo.actuator import VOLTAGE, Actuator

# Bench geometry: Table I benches carry up to 20 kg at 0.5 m; a pendulum beyond these is
# no servo bench (and 1e6 m is a unit or typing error).
MAX_MASS = 100.0  # kg, point mass and arm mass alike
MAX_LENGTH = 5.0  # m
# The supply a servo runs on lies within this factor of its nominal voltage: a value in
# millivolts, or a negative one, is refused instead of silently replaced.
SUPPLY_FACTOR = 4.0
MAX_DAMPING = 1.0e3  # factor d of the host PD law (the eRob's is 2)
GAIN_LIMIT = 1.0e4  # kp of an actuator without a register limit of its own

# Beyond these a recording is corrupt or not of a bench (rad, rad/s, V or A, °C).
PLAUSIBLE = {"position": 1.0e4, "velocity": 1.0e3, "goal position": 1.0e4, "control": 1.0e3,
             "temperature": 1.0e3, "input voltage": 1.0e3}

# The readings of a servo's own sensors have physical ranges, narrower than PLAUSIBLE:
# * input voltage (V): a servo that answers on the bus runs on the supply it reports, so
#   every reading is above 0 V (0 or less is a failed read or another unit); and within
#   SUPPLY_FACTOR of the nominal supply, as the supply itself (a bus driven back by a
#   braking motor rises above its supply: the XL330's 7.4 V bus read 9.15 V, measured).
# * temperature (°C): the servo's sensor on its board, in whole degrees. No servo's
#   electronics run below -40 °C (the industrial range's floor; the supported servos are
#   rated from -5 °C), and -273.15 °C is absolute zero; above 150 °C a winding's class F
#   insulation (155 °C) is gone and every servo's over-temperature shutdown (a Dynamixel's
#   limit register goes to 100 °C at most) has long tripped.
# * temperature change: within one count of the sensor (1 K, its rounding) plus
#   MAX_HEATING_RATE times the time between the samples. A winding heats at most at its
#   stall power over its heat capacity: the XL330's 1.75 A firmware limit through its
#   2.8 Ω gives 8.6 W into about a gram of copper (0.4 J/K), some 20 K/s; the MX-64's
#   56 W at 15 V stall into its larger winding is of the same order; the board's sensor
#   follows the winding more slowly still. 100 K/s leaves room to all of them; a jump of
#   100 K in 5 ms is no heat but a corrupt reading.
TEMPERATURE_RANGE = (-40.0, 150.0)  # °C
TEMPERATURE_STEP = 1.0  # K, one count of the whole-degree sensors
MAX_HEATING_RATE = 100.0  # K/s
READING_UNITS = {"temperature": "°C", "input voltage": "V"}

# Sampling: a bench records at 10 Hz to 100 kHz. A gap of more than HOLE_PERIODS periods
# and more than HOLE_MIN is a hole: a recording paused and resumed, which the resampling
# would fill with a straight line. HOLE_MIN is not a few periods because drivers stall
# and the fit absorbs it: the emulated Dynamixel driver at 200 Hz on a loaded two-core
# machine stalled for up to 0.33 s (about 1 sample in 300 after a gap above 30 ms), and
# test_drivers_identify still recovers its emulator from such recordings.
MIN_PERIOD = 1.0e-5  # s
MAX_PERIOD = 0.1  # s
HOLE_PERIODS = 10.0
HOLE_MIN = 1.0  # s


@dataclass(frozen=True)
class Conditions:
    """The checked bench description of one recording."""

    bench: Bench
    kp: float
    supply_voltage: float | None  # V, voltage-controlled actuators only
    damping: float | None  # current-controlled actuators only


@dataclass(frozen=True)
class Source:
    """How a reader names a recording and its fields, and what to do about a bad one."""

    where: str  # "legacy log X", "bag X, trial 3 ('steps')"
    remedy: str  # what fixes a bad value of this source
    names: dict[str, str]  # mass, length, arm_mass, kp, supply_voltage, damping -> spelling

    def field(self, key: str) -> str:
        return self.names.get(key, key)

    def fail(self, text: str, remedy: str | None = None) -> BamError:
        return BamError(f"{self.where}: {text}; {remedy or self.remedy}")


def checked_field(source: Source, key: str, value: float, unit: str, note: str = "",
             **bounds) -> float:
    """``value`` within ``bounds`` (as :func:`number` takes them), else a one-line error."""
    try:
        return number(value, f"{source.field(key)} ({unit})", text=False, **bounds)
    except BamError as err:
        raise source.fail(f"{err}{note}") from None


def conditions(act: Actuator, source: Source, mass: float, length: float, arm_mass: float,
               kp: float, supply_voltage: float | None = None,
               damping: float | None = None) -> Conditions:
    """The bench, gain, supply and damping of a recording, each within its plausible range.

    ``supply_voltage`` and ``damping`` are None where the recording does not
    give them (the actuator's constants apply); a value that is given is
    checked, never replaced, whatever the actuator. The supply of a servo whose
    law does not use it (current-controlled) is then left out, as it always was.
    """
    mass = checked_field(source, "mass", mass, "kg", low=0.0, high=MAX_MASS)
    arm_mass = checked_field(source, "arm_mass", arm_mass, "kg", low=0.0, high=MAX_MASS)
    length = checked_field(source, "length", length, "m", low=0.0, high=MAX_LENGTH, low_open=True)
    limit = act.gain_limit or GAIN_LIMIT
    kp = checked_field(source, "kp", kp, f"{act.name} gain", low=0.0, high=limit)
    if supply_voltage is not None:
        # Checked before it is dropped: a -15 V supply is a corrupt recording even where
        # the law does not read it.
        supply_voltage = checked_field(
            source, "supply_voltage", supply_voltage, "V",
            f" (the {act.name}'s nominal supply is {act.supply_voltage:g} V)", low=0.0,
            high=SUPPLY_FACTOR * act.supply_voltage, low_open=True)
    if act.family != VOLTAGE:
        supply_voltage = None  # only a voltage-controlled servo's law uses it
    if damping is not None:
        # d = 0: a position loop without a D term (the XL330's firmware by default).
        damping = checked_field(source, "damping", damping, "factor d of the host PD law",
                                low=0.0, high=MAX_DAMPING)
    return Conditions(
        bench=Bench(mass=mass, length=length, arm_mass=arm_mass), kp=kp,
        supply_voltage=supply_voltage, damping=damping)


def check_series(values: np.ndarray, kind: str, what: str, source: Source,
                 at: Callable[[int], str]) -> None:
    """Every value finite and within the :data:`PLAUSIBLE` bound of ``kind``; ``what`` names
    the series as its source does, ``at(k)`` sample k (an entry, a time into the trial)."""
    bound = PLAUSIBLE[kind]
    bad = np.flatnonzero(~(np.abs(values) <= bound))
    if bad.size:
        k = int(bad[0])
        problem = "not finite" if not np.isfinite(values[k]) else f"beyond ±{bound:g}"
        raise source.fail(f"{what} is {values[k]} ({problem}) at {at(k)}")


def reading_range(kind: str, act: Actuator) -> tuple[float, float]:
    """(lowest, highest) a reading of ``kind`` of ``act`` may take (the lowest excluded for
    the input voltage); see :data:`TEMPERATURE_RANGE` and the comment above it."""
    if kind == "input voltage":
        return 0.0, SUPPLY_FACTOR * act.supply_voltage
    return TEMPERATURE_RANGE


def check_reading(values: np.ndarray, times: np.ndarray, kind: str, what: str,
                  source: Source, at: Callable[[int], str], act: Actuator,
                  remedy: str | None = None) -> None:
    """A servo's reading (``kind`` "temperature" or "input voltage") at ``times`` (s):
    finite, within its physical range (:func:`reading_range`), and a temperature that
    changes no faster than a winding can heat. ``what`` names the series as its source
    does; ``remedy`` replaces the source's."""
    check_series(values, kind, what, source, at)
    unit, (low, high) = READING_UNITS[kind], reading_range(kind, act)
    inside = (values > low) if kind == "input voltage" else (values >= low)
    bad = np.flatnonzero(~(inside & (values <= high)))
    if bad.size:
        k = int(bad[0])
        why = ("a servo that answers runs on the supply it reports"
               if kind == "input voltage" else "no servo runs there")
        opening = "(" if kind == "input voltage" else "["
        raise source.fail(f"{what} is {values[k]:g} {unit} at {at(k)}, outside "
                          f"{opening}{low:g}, {high:g}] {unit} ({why})", remedy)
    if kind == "temperature" and values.size >= 2:
        steps, spans = np.abs(np.diff(values)), np.diff(times)
        jumps = np.flatnonzero(steps > TEMPERATURE_STEP + MAX_HEATING_RATE * spans)
        if jumps.size:
            k = int(jumps[0]) + 1
            raise source.fail(f"{what} jumps from {values[k - 1]:g} to {values[k]:g} °C in "
                              f"{spans[k - 1]:g} s at {at(k)} (no winding heats or cools "
                              f"faster than {MAX_HEATING_RATE:g} K/s)", remedy)


def sampling_period(times: np.ndarray) -> float:
    """The median interval between samples at increasing ``times`` (s)."""
    return float(np.median(np.diff(times)))


def check_times(times: np.ndarray, what: str, source: Source,
                at: Callable[[int], str]) -> float:
    """Sample ``times`` (s) increasing, at a bench's sampling period, without holes; the
    period. ``at(k)`` names sample k."""
    steps = np.diff(times)
    back = np.flatnonzero(~(steps > 0.0))
    if back.size:
        k = int(back[0]) + 1
        raise source.fail(f"{what} are not increasing at {at(k)} ({times[k - 1]} s then "
                          f"{times[k]} s)")
    period = sampling_period(times)
    if not MIN_PERIOD <= period <= MAX_PERIOD:
        hint = ("are they in milliseconds? give them in seconds"
                if MIN_PERIOD <= period * 1e-3 <= MAX_PERIOD else "give them in seconds")
        raise source.fail(f"{what} are {period:g} s apart (median), not the sampling period "
                          f"of a bench ({MIN_PERIOD:g} to {MAX_PERIOD:g} s)", hint)
    limit = max(HOLE_PERIODS * period, HOLE_MIN)
    holes = np.flatnonzero(steps > limit)
    if holes.size:
        k = int(holes[0])
        raise source.fail(f"{what} have a hole of {steps[k]:g} s ({steps[k] / period:.0f} "
                          f"sampling periods of {period:g} s) after {at(k)}",
                          "a run is recorded without pauses: cut it there or re-record it")
    return period
