"""The sensor of the session's simulated bench: what makes the recording look like hardware.

A real bench never reports the exact state. The session's ``sensor`` mapping
models what the actuator's own electronics do to it, so the fit meets what it
will meet on a servo:

* ``quantization``: the encoder step, ``encoder`` for the actuator's own
  (derived from its driver's control table or drive model,
  :func:`bam_drivers.encoder.encoder_step`), a step in rad, or 0 (exact);
* ``position_noise``: standard deviation of the Gaussian noise on the position
  reading, rad (drawn before rounding to the step, so the reading flickers
  between neighbouring counts as a real encoder's does);
* ``latency``: the bus's read latency, s, a whole number of the session's ticks
  (the reading of tick k is the state of tick k − L);
* ``supply_resistance``: series resistance of the supply, Ω, so the input
  voltage sags under load (the ``supply`` group of the truth; voltage-law
  actuators only, whose law sees its supply);
* ``seed``: the seed of the noise.

The fit then frees what the sensor adds that a model can represent (the
``latency`` and ``supply`` groups): the report compares every identified
parameter with this truth. ``bench session --ideal`` turns every effect off
(the noiseless bench, whose recording M4..M6 reproduce to rounding).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import integer, number
from bam_sim.models.dcmotor.groups import get_group
from bam_sim.models.model_registry import FrictionModel
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuator import Actuator

SENSOR_KEYS = ("quantization", "position_noise", "latency", "supply_resistance", "seed")
ENCODER = "encoder"  # quantization: the actuator's own encoder step
# The session's sensor when its file says nothing (config/session.yaml spells it out):
# one count of noise spread (about a third of an MX-64 count), a 5 ms read, a 0.25 Ω supply.
DEFAULT_SENSOR = {"quantization": ENCODER, "position_noise": 5.0e-4, "latency": 0.005,
                  "supply_resistance": 0.25, "seed": 1}
IDEAL = {"quantization": 0.0, "position_noise": 0.0, "latency": 0.0, "supply_resistance": 0.0}


@dataclass(frozen=True)
class Sensor:
    """The measurement effects of one session's bench, checked."""

    quantization: float  # rad per count, 0: exact
    position_noise: float  # rad, standard deviation
    latency_ticks: int  # read latency in ticks of the session's rate
    rate: float  # Hz, the session's tick rate
    supply_resistance: float  # Ω; 0: a stiff supply
    seed: int
    encoder: str = ""  # where the step comes from, when it is the actuator's own

    @property
    def latency(self) -> float:
        return self.latency_ticks / self.rate

    @property
    def ideal(self) -> bool:
        return not (self.quantization or self.position_noise or self.latency_ticks
                    or self.supply_resistance)


def ideal_session(config: dict) -> dict:
    """``config`` with every sensor effect off (``--ideal``); its seed is kept."""
    sensor = config.get("sensor")
    return {**config, "sensor": {**(sensor if isinstance(sensor, dict) else {}), **IDEAL}}


def parse_sensor(config: dict, where: str, actuator: Actuator) -> Sensor:
    """The session's ``sensor`` mapping checked (BamError, one line naming the fix);
    ``actuator``: the session's, whose encoder ``quantization: encoder`` means."""
    given = config.get("sensor", DEFAULT_SENSOR)
    if not isinstance(given, dict):
        raise BamError(f"{where}: sensor must be a mapping of {', '.join(SENSOR_KEYS)}, "
                       f"got {given!r}")
    for key in given:
        if key not in SENSOR_KEYS:
            raise BamError(f"{where}: unknown sensor key '{key}'; known keys: "
                           f"{', '.join(SENSOR_KEYS)}")
    values = {**DEFAULT_SENSOR, **given}
    rate = number(config.get("rate", 1000.0), f"{where}: rate", low=1.0, high=1.0e5)
    step, encoder = _quantization(values["quantization"], actuator, where)
    return Sensor(
        quantization=step, encoder=encoder,
        position_noise=number(values["position_noise"], f"{where}: sensor.position_noise "
                              "(rad)", low=0.0, high=1.0),
        latency_ticks=_latency_ticks(values["latency"], rate, where), rate=rate,
        supply_resistance=number(values["supply_resistance"],
                                 f"{where}: sensor.supply_resistance (Ω)", low=0.0, high=100.0),
        seed=integer(values["seed"], f"{where}: sensor.seed", low=0, high=2**31 - 1))


def _quantization(value: object, actuator: Actuator, where: str) -> tuple[float, str]:
    if value == ENCODER:
        from bam_drivers.encoder import encoder_step

        step = encoder_step(actuator)
        table = f"{actuator.driver} {actuator.control_table}" if actuator.driver else \
            "its actuator file"
        origin = table if step else ""
        return step, origin
    if isinstance(value, str) and not _numeric(value):
        raise BamError(f"{where}: sensor.quantization must be '{ENCODER}' (the actuator's "
                       f"encoder step) or a step in rad >= 0, got {value!r}")
    return number(value, f"{where}: sensor.quantization (rad)", low=0.0, high=1.0), ""


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _latency_ticks(value: object, rate: float, where: str) -> int:
    """The read latency in ticks; a latency between two ticks is refused, not rounded
    (the truth the report compares with must be what the bench did)."""
    seconds = number(value, f"{where}: sensor.latency (s)", low=0.0, high=1.0)
    ticks = round(seconds * rate)
    if abs(ticks / rate - seconds) > 1e-9:
        raise BamError(f"{where}: sensor.latency {seconds:g} s is not a whole number of ticks "
                       f"at rate {rate:g} Hz; give a multiple of {1.0 / rate:g} s")
    return ticks


def sags(sensor: Sensor, actuator: Actuator) -> bool:
    """Whether the bench's supply sags: a resistance, and a law that sees its supply."""
    return sensor.supply_resistance > 0.0 and get_group("supply").carried_by(actuator)


def truth_set(actuator: Actuator, model: FrictionModel, sensor: Sensor) -> ParameterSet:
    """The set the bench simulates: the published one, with the supply sag when on."""
    from bam_sim.models.files.parameter_file import published

    base = published(actuator, model)
    if not sags(sensor, actuator):
        return base
    values = {**base.values, "supply.resistance": sensor.supply_resistance,
              "supply.min_voltage": 0.0}
    provenance = {**base.provenance, "bench": "bam_bringup session sensor (supply sag)"}
    return ParameterSet.build(actuator, model, values, provenance)


def fit_groups(sensor: Sensor, actuator: Actuator) -> tuple[str, ...]:
    """The groups the fit frees to represent what the sensor adds."""
    return (("supply",) if sags(sensor, actuator) else ()) + \
        (("latency",) if sensor.latency_ticks else ())


def pendulum_parameters(sensor: Sensor, truth_file: Path | None) -> dict:
    """The pendulum node's parameters of this sensor (and the truth's file, when given)."""
    values = {"quantization": sensor.quantization, "position_noise": sensor.position_noise,
              "latency": sensor.latency, "seed": sensor.seed}
    if truth_file is not None:
        values["params_file"] = str(truth_file)
    return values


def truth_values(truth: ParameterSet, sensor: Sensor) -> dict[str, float]:
    """What the fit can recover, by name: the truth's values, and the read latency as the
    command latency L_c the fit frees (a bench shows only L_c + L_r, L_r held at 0)."""
    values = dict(truth.values)
    if sensor.latency_ticks:
        values["latency.command"] = sensor.latency
    return values


def sensor_rows(sensor: Sensor, actuator: Actuator, fit_seed: int) -> list[tuple[str, str]]:
    """The sensor's settings and the seeds, as the report's table lists them."""
    from bam_drivers.encoder import counts_per_turn

    if sensor.quantization:
        origin = f", the {sensor.encoder} table's" if sensor.encoder else ""
        step = (f"{sensor.quantization:.4e} rad ({counts_per_turn(sensor.quantization):.6g} "
                f"counts/turn{origin})")
    else:
        step = "off (exact)"
    supply = (f"R_s = {sensor.supply_resistance:g} Ω" if sags(sensor, actuator) else
              "off" if not sensor.supply_resistance else "not modelled (the law of "
              f"{actuator.name} does not see its supply)")
    return [("encoder step", step),
            ("position noise (std)", f"{sensor.position_noise:g} rad"),
            ("read latency", f"{1e3 * sensor.latency:g} ms ({sensor.latency_ticks} tick(s) at "
                             f"{sensor.rate:g} Hz)"),
            ("supply sag", supply),
            ("noise seed", str(sensor.seed)),
            ("fit seed (CMA-ES, validation split)", str(fit_seed))]
