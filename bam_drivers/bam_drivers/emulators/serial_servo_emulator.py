"""``serial_servo_emulator``: Dynamixel or Feetech servos on a pseudo-terminal, driven by bam_sim.

Example::

    ros2 run bam_drivers serial_servo_emulator --servo-model mx64_p1 --ids 1 2 --physics mx64:m4
    # prints: READY /tmp/dxl_emu_xxxx/ttyDXL /tmp/dxl_emu_xxxx/control.sock
    ros2 run bam_drivers serial_servo_emulator --servo-model sts3215 --ids 1  # Feetech STS

A separate process that behaves like servos on a bus for any master opening
the port (dynamixel-sdk's PortHandler in the driver): it opens a
pseudo-terminal in raw mode, exposes its slave side at a stable symlink
(``--port``) and answers Dynamixel protocol 1.0 or 2.0 instructions, or
Feetech's SCS protocol for an STS servo model, with the
firmware semantics of :mod:`bam_drivers.emulators.serial_servos`. Each servo's joint is
a pendulum (:class:`bam_sim.bench.stepper.BenchStepper` with a published
M1..M6 parameter set, or a parameter file) advanced at ``--physics-rate``
(1 kHz) in its own thread against the monotonic clock.

Threads: the bus (select on the pty master, parse, answer), the physics and
the control socket; one lock guards the servos. The bus thread runs the physics
steps due before it answers (a read sees the joint as it is then); with
``--priority`` the bus and physics threads run at that SCHED_FIFO priority, so
that a busy host does not make the servos late. The emulator keeps a slave
descriptor of its own open so that the master never sees a hang-up while no
client is connected.

Fault injection, from the command line or the control socket: replies dropped
(probability), checksums corrupted (probability), added reply latency (s),
hardware-error bits per id, and the port vanishing (pty closed, symlink
removed) and returning after N seconds or on the ``restore`` command (a new
pty behind the same symlink). From the control socket only, faults of the
next replies, one reply each, in order (``next``, :data:`ONE_SHOT`): ``drop``
(not sent), ``checksum`` (a wrong checksum or CRC), ``short`` (its last
three bytes never sent), ``id`` (the id of no servo on the bus, checksum
right), ``value`` (its data bytes XOR 0x5A, checksum right: a wrong value
nothing on the wire can tell) and ``late`` (sent ``LATE_REPLY`` s late,
after any driver's reply timeout).
Random draws come from one generator seeded by ``--seed``.

Control socket: a Unix stream socket; one JSON object per line in, one per
line out (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ...}``).
Commands: ``{"cmd": "truth"}``, ``{"cmd": "inject", "drop": p, "corrupt": p,
"latency": s, "hardware_error": {"1": bits}, "next": ["short", "late"]}``, ``{"cmd": "vanish",
"seconds": s}`` (``null``: until ``{"cmd": "restore"}``), ``{"cmd": "set_position",
"id": i, "position": rad}``, ``{"cmd": "physics", "values": {"friction_base": 0.1}}``
(parameter values of every joint changed mid-run, the state kept: the faults a health
monitor must see; ``{}`` restores the set it started with), ``{"cmd": "stats"}``,
``{"cmd": "stop"}``.

Stops cleanly (symlink, socket and temporary directory removed) on SIGTERM,
SIGINT, the ``stop`` command, or with ``--exit-with-parent`` when the process
that started it dies (no orphan emulators after a crashed test).

The control socket, the life cycle and the exit codes are the emulator
server's (:mod:`bam_drivers.emulators.emulator_server`), shared with the
EtherCAT emulator; this module adds the pty, the servos and their faults.
"""

from __future__ import annotations

import math
import os
import select
import sys
import tempfile
import time
import tty
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from bam_drivers.dynamixel import control_table as dynamixel_tables
from bam_drivers.emulators.emulator_server import (
    EmulatorServer,
    ServerConfig,
    add_exit_with_parent,
    add_priority,
    numbered_code,
    serve,
)
from bam_drivers.emulators.serial_servos import EmulatedBus, EmulatedServo
from bam_drivers.feetech import control_table as feetech_tables
from bam_drivers.serial_servo import packet as pk
from bam_drivers.serial_servo.control_table import get_table
from bam_sim.bench.geometry import Bench
from bam_sim.bench.stepper import BenchStepper
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.numbers import number
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.models.servo.actuators import ACTUATORS as REGISTRY
from bam_sim.models.servo.actuators import driven_by

# Every servo model the emulator runs, and the bam_sim actuators each can be.
TABLES = MappingProxyType({**dynamixel_tables.TABLES, **feetech_tables.TABLES})
ACTUATORS = {vendor: driven_by(vendor) for vendor in ("dynamixel", "feetech")}
# Tables whose gain and duty belong to their own actuators, which they only run.
OWN_TABLES = ("xl320", "xl330_m288")
INTER_BYTE_TIMEOUT = 0.01  # s without bytes after which a partial packet is dropped
WRITE_TIMEOUT = 0.05  # s a reply may wait for room in the pty buffer before it is lost
ONE_SHOT = ("drop", "checksum", "short", "id", "value", "late")  # faults of one reply each
LATE_REPLY = 0.5  # s a "late" reply waits: past the reply timeout of a 100 ms latency timer


@dataclass
class EmulatorConfig(ServerConfig):
    """Everything the command line sets."""

    servo_model: str = "mx64_p1"
    protocol: int | None = None
    ids: tuple[int, ...] = (1,)
    physics: str | None = None  # "actuator:model"; default from the servo model
    params_file: str | None = None
    mass: float = 1.0
    length: float = 0.15
    arm_mass: float = 0.0
    supply_voltage: float | None = None
    temperature: float = 35.0
    initial_position: float = 0.0
    baud_rate: int = 1_000_000
    return_delay: float = 0.0
    physics_rate: float = 1000.0
    port: str | None = None
    drop: float = 0.0
    corrupt: float = 0.0
    latency: float = 0.0
    hardware_error: dict[int, int] = field(default_factory=dict)


# -- configuration ----------------------------------------------------------------------

def _probability(name: str, value: object) -> float:
    value = _seconds(name, value)
    if value > 1.0:
        raise BamError(f"{name} must be a probability in [0, 1], got {value}")
    return value


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BamError(f"{name} must be a number, got {value!r}")
    if not value >= 0.0 or value == float("inf"):
        raise BamError(f"{name} must be a finite number >= 0, got {value}")
    return float(value)


def parse_args(argv: Sequence[str] | None = None) -> EmulatorConfig:
    parser = ArgumentParser(
        prog="serial_servo_emulator",
        description="Dynamixel servos on a pseudo-terminal, driven by bam_sim physics.")
    parser.add_argument("--servo-model", default="mx64_p1", choices=sorted(TABLES))
    parser.add_argument("--protocol", type=int, choices=(1, 2),
                        help="must match the servo model (default: the model's)")
    parser.add_argument("--ids", type=int, nargs="+", default=[1])
    parser.add_argument("--physics", help="published parameter set ACTUATOR:MODEL, e.g. mx64:m4")
    parser.add_argument("--params-file", help="parameter file instead of --physics")
    parser.add_argument("--mass", type=float, default=1.0, help="pendulum mass, kg")
    parser.add_argument("--length", type=float, default=0.15, help="pendulum length, m")
    parser.add_argument("--arm-mass", type=float, default=0.0, help="rod mass, kg")
    parser.add_argument("--supply-voltage", type=float, help="V (default: the actuator's)")
    parser.add_argument("--temperature", type=float, default=35.0, help="°C")
    parser.add_argument("--initial-position", type=float, default=0.0, help="rad")
    parser.add_argument("--baud-rate", type=int, default=1_000_000,
                        help="accepted for symmetry with the driver; a pty has no baud rate")
    parser.add_argument("--return-delay", type=float, default=0.0,
                        help="initial Return Delay Time, s (register: 2 µs steps)")
    parser.add_argument("--physics-rate", type=float, default=1000.0, help="Hz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", help="symlink path of the port (default: a fresh temp dir)")
    parser.add_argument("--control", help="Unix socket path (default: next to a temp port)")
    parser.add_argument("--drop", type=float, default=0.0, help="reply drop probability")
    parser.add_argument("--corrupt", type=float, default=0.0, help="checksum corruption prob.")
    parser.add_argument("--latency", type=float, default=0.0, help="added reply latency, s")
    add_priority(parser, "servos")
    parser.add_argument("--hardware-error", action="append", default=[],
                        type=numbered_code("hardware error", "ID:BITS", "1:0x20"),
                        metavar="ID:BITS", help="hardware-error bits of a servo (repeatable)")
    add_exit_with_parent(parser)
    a = parser.parse_args(argv)
    return EmulatorConfig(
        servo_model=a.servo_model, protocol=a.protocol, ids=tuple(a.ids), physics=a.physics,
        params_file=a.params_file, mass=a.mass, length=a.length, arm_mass=a.arm_mass,
        supply_voltage=a.supply_voltage, temperature=a.temperature,
        initial_position=a.initial_position, baud_rate=a.baud_rate, return_delay=a.return_delay,
        physics_rate=a.physics_rate, seed=a.seed, port=a.port, control=a.control, drop=a.drop,
        corrupt=a.corrupt, latency=a.latency, hardware_error=dict(a.hardware_error),
        priority=a.priority, exit_with_parent=a.exit_with_parent)


def load_physics(config: EmulatorConfig) -> ParameterSet:
    """The parameter set driving the joints."""
    if config.params_file:
        return load(config.params_file)
    spec = config.physics or _default_physics(config.servo_model)
    actuator, sep, model = spec.partition(":")
    if not sep or not actuator or not model:
        raise BamError(f"physics {spec!r} must be ACTUATOR:MODEL, e.g. mx64:m4")
    return published_named(actuator, model)


def _default_physics(servo_model: str) -> str:
    """The registry's actuator of ``servo_model`` (named so, or whose control table it is, or
    whose name it starts with; an MX-64 otherwise) with the model its record gives the
    emulator."""
    serial = [a for a in REGISTRY.values() if a.driver in ACTUATORS]
    for matches in (lambda a: servo_model == a.name, lambda a: servo_model == a.control_table,
                    lambda a: servo_model.startswith(a.name)):
        record = next((a for a in serial if matches(a)), None)
        if record is not None:
            return f"{record.name}:{record.emulator_model}"
    return f"mx64:{REGISTRY['mx64'].emulator_model}"


def _check_physics(actuator: str, table) -> None:
    """The bam_sim actuator must be a servo of the table's kind; an XL its own table."""
    allowed = ACTUATORS[table.vendor]
    if actuator not in allowed:
        raise BamError(f"physics actuator {actuator} does not run the {table.title}; give "
                       f"{', '.join(allowed)} parameters for a {table.vendor} servo model")
    own = REGISTRY[actuator].control_table
    if (own in OWN_TABLES or table.name in OWN_TABLES) and own != table.name:
        xl = own if own in OWN_TABLES else table.name
        raise BamError(f"physics actuator {actuator} does not run servo model "
                       f"{table.name}: the {xl.upper()}'s gain and duty are its own; "
                       f"give servo_model {xl} with its actuators' physics only")


def build_bus(config: EmulatorConfig) -> EmulatedBus:
    """The servos of the configuration, each with its own pendulum."""
    table = get_table(config.servo_model, TABLES)
    if config.protocol is not None and config.protocol != table.protocol:
        raise BamError(
            f"servo model {table.name} speaks protocol {table.protocol}, not {config.protocol}; "
            f"choose a protocol-{config.protocol} model")
    ids = list(config.ids)
    if not ids or len(set(ids)) != len(ids) or not all(0 <= i <= 252 for i in ids):
        raise BamError(f"ids {ids} must be distinct whole numbers in 0..252")
    unknown = set(config.hardware_error) - set(ids)
    if unknown:
        raise BamError(f"hardware error given for ids {sorted(unknown)} not on the bus {ids}")
    number(config.priority, "--priority", low=0, high=99, text=False)
    rate = _seconds("physics rate", config.physics_rate)
    if rate <= 0.0:
        raise BamError("physics rate must be > 0 Hz")
    _seconds("return delay", config.return_delay)
    params = load_physics(config)
    _check_physics(params.actuator.name, table)
    bench = Bench(mass=config.mass, length=config.length, arm_mass=config.arm_mass)

    def make_sim(position: float, velocity: float) -> BenchStepper:
        return BenchStepper(params, bench, 1.0 / rate, position=position, velocity=velocity,
                              torque_enable=False, supply_voltage=config.supply_voltage)

    servos = [EmulatedServo(i, table, make_sim, position=config.initial_position,
                            temperature=config.temperature, return_delay=config.return_delay)
              for i in ids]
    for servo in servos:
        servo.set_hardware_error(config.hardware_error.get(servo.id, 0))
    return EmulatedBus(table.protocol, servos)


# -- the pseudo-terminal ------------------------------------------------------------------

class PtyPort:
    """A raw pseudo-terminal whose slave is reachable at a stable symlink."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.master: int | None = None
        self._slave: int | None = None
        if os.path.lexists(path) and not os.path.islink(path):
            raise BamError(f"port path {path} exists and is not a symlink; choose another --port")

    @property
    def is_open(self) -> bool:
        return self.master is not None

    def open(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline: bytes pass unchanged
        os.set_blocking(master, False)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        if os.path.lexists(temporary):
            os.unlink(temporary)
        os.symlink(os.ttyname(slave), temporary)
        os.replace(temporary, self.path)  # atomic: the path is never half made
        self.master, self._slave = master, slave

    def close(self) -> None:
        """Close both sides (clients see a hang-up) and remove the symlink."""
        for fd in (self.master, self._slave):
            if fd is not None:
                os.close(fd)
        self.master = self._slave = None
        if os.path.islink(self.path):
            os.unlink(self.path)

    def write(self, data: bytes) -> bool:
        """Write all of ``data`` unless the buffer stays full for WRITE_TIMEOUT."""
        deadline = time.monotonic() + WRITE_TIMEOUT
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.master, view):]
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                select.select([], [self.master], [], WRITE_TIMEOUT)
        return True


# -- the emulator -----------------------------------------------------------------------

@dataclass
class Faults:
    drop: float = 0.0
    corrupt: float = 0.0
    latency: float = 0.0
    next: list[str] = field(default_factory=list)  # one-shot faults of the next replies


def _one_shot(kinds: object) -> list[str]:
    if not isinstance(kinds, list) or any(k not in ONE_SHOT for k in kinds):
        raise BamError(f"next must be a list of one-shot faults, each one of "
                       f"{', '.join(ONE_SHOT)}; got {kinds!r}")
    return list(kinds)


def garble(reply: bytes, kind: str, protocol: int, spare_id: int) -> bytes:
    """``reply`` with the one-shot fault ``kind`` (:data:`ONE_SHOT`; drop and late are the
    sender's); ``spare_id``: an id no servo on the bus has."""
    if kind == "checksum":
        return pk.corrupt(reply)
    if kind == "short":
        return reply[:-3]
    if kind not in ("id", "value"):
        return reply
    frame = pk.StreamParser(protocol).feed(reply)[0]
    if kind == "id":
        return pk.status_packet(protocol, spare_id, frame.error, frame.data)
    return pk.status_packet(protocol, frame.id, frame.error, bytes(b ^ 0x5A for b in frame.data))


class Emulator(EmulatorServer):
    """The bus, physics and control threads around an :class:`EmulatedBus`."""

    PROGRAM = "serial_servo_emulator"
    COMMANDS = ("truth", "inject", "vanish", "restore", "set_position", "physics", "stats",
                "stop")

    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.bus = build_bus(config)
        self._start_params = next(iter(self.bus.servos.values())).sim.params
        self.protocol = self.bus.protocol
        self.faults = Faults(_probability("drop", config.drop),
                             _probability("corrupt", config.corrupt),
                             _seconds("latency", config.latency))
        if config.port is not None:
            PtyPort(config.port)  # refuse a path that is not ours before making anything
        temp_dir = None
        if config.port is None or config.control is None:
            temp_dir = tempfile.mkdtemp(prefix="dxl_emu_")
        super().__init__(config, temp_dir)
        self.port_path = config.port or os.path.join(temp_dir, "ttyDXL")
        self.port = PtyPort(self.port_path)
        self._parser = pk.StreamParser(self.protocol)
        self._vanish_for: float | None = None
        self._restore_at: float | None = None
        self.stats = dict(received=0, replies=0, errors=0, dropped=0, corrupted=0,
                          bad_checksums=0, garbage_bytes=0, lost_writes=0, physics_ticks=0,
                          physics_skipped_s=0.0, vanished=0, one_shot=0)
        self._spare_id = min(set(range(253)) - set(self.bus.servos))

    # -- the device (EmulatorServer) ---------------------------------------------------

    def _open_device(self) -> None:
        self.port.open()

    def _close_device(self) -> None:
        if self.port.is_open:
            self.port.close()

    def _workers(self) -> list[tuple[Callable[[], None], str]]:
        return [(self._serve_bus, "bus"), (self._run_physics, "physics")]

    def ready_words(self) -> list[str]:
        return [self.port_path, self.control_path]

    # -- physics thread -------------------------------------------------------------

    def _run_physics(self) -> None:
        self._run_clock(self.config.physics_rate, self.bus.tick, "physics_ticks",
                        "physics_skipped_s")

    # -- bus thread -----------------------------------------------------------------

    def _serve_bus(self) -> None:
        last_rx = time.monotonic()
        while not self._stop.is_set():
            if self._vanish_for is not None:
                self._vanish()
            if not self.port.is_open:
                if time.monotonic() >= self._restore_at:
                    self.port.open()
                    self._restore_at = None
                else:
                    self._stop.wait(0.01)
                continue
            ready, _, _ = select.select([self.port.master, self._wake_r], [], [], 0.02)
            if self._wake_r in ready:
                os.read(self._wake_r, 64)
            frames: list[pk.Frame] = []
            if self.port.master in ready:
                try:
                    data = os.read(self.port.master, 4096)
                except (BlockingIOError, InterruptedError):
                    data = b""
                if data:
                    last_rx = time.monotonic()
                    frames = self._parser.feed(data)
            elif self._parser.pending and time.monotonic() - last_rx > INTER_BYTE_TIMEOUT:
                frames = self._parser.drop_stale()
            self.stats["garbage_bytes"] = self._parser.garbage
            for frame in frames:
                self._answer(frame)

    def _answer(self, frame: pk.Frame) -> None:
        self.stats["received"] += 1
        self.stats["bad_checksums"] += not frame.valid
        with self._lock:
            self._catch_up()
            errors = self.bus.errors_sent
            replies = self.bus.handle(frame)
            self.stats["errors"] += self.bus.errors_sent - errors
            delays = [servo.return_delay for servo, _ in replies]
        for delay, (_, reply) in zip(delays, replies, strict=True):
            faults = self.faults
            kind = faults.next.pop(0) if faults.next else None
            wait = delay + faults.latency + (LATE_REPLY if kind == "late" else 0.0)
            if wait > 0.0:
                time.sleep(wait)
            if kind == "drop" or self._rng.random() < faults.drop:
                self.stats["dropped"] += 1
                continue
            if kind is not None:
                reply = garble(reply, kind, self.protocol, self._spare_id)
                self.stats["one_shot"] += 1
            elif self._rng.random() < faults.corrupt:
                reply = pk.corrupt(reply)
                self.stats["corrupted"] += 1
            if self.port.is_open and self.port.write(reply):
                self.stats["replies"] += 1
            else:
                self.stats["lost_writes"] += 1

    def _vanish(self) -> None:
        seconds, self._vanish_for = self._vanish_for, None
        # The return time is set before the port closes: a restore sent as soon as a client
        # sees the port gone must find it (set after, it was lost and the port never came back).
        self._restore_at = time.monotonic() + seconds
        if self.port.is_open:
            self.port.close()
            self.stats["vanished"] += 1
        self._parser.clear()

    # -- control commands (EmulatorServer.command) ------------------------------------

    def _cmd_truth(self, request: dict) -> dict:
        with self._lock:
            self._catch_up()
            return {str(i): s.truth() for i, s in sorted(self.bus.servos.items())}

    def _cmd_vanish(self, request: dict) -> None:
        seconds = request.get("seconds", 1.0)
        self._vanish_for = math.inf if seconds is None else _seconds("vanish seconds", seconds)
        self._wake()

    def _cmd_restore(self, request: dict) -> None:
        """A port that vanished returns now (one about to vanish returns at once)."""
        if self._vanish_for is not None:
            self._vanish_for = 0.0
        if self._restore_at is not None:
            self._restore_at = time.monotonic()

    def _cmd_set_position(self, request: dict) -> None:
        with self._lock:
            servo = self._servo(request["id"])
            servo.set_state(float(request["position"]), float(request.get("velocity", 0.0)))

    def _cmd_physics(self, request: dict) -> dict[str, float]:
        """The start set with ``values`` changed, on every joint; its values."""
        values = request.get("values")
        if not isinstance(values, dict):
            raise BamError(f"physics needs values, a mapping of parameter names to numbers, "
                           f"got {values!r}")
        with self._lock:
            params = self._start_params.replace(**values)  # validated: a bad name refuses
            for servo in self.bus.servos.values():
                servo.set_parameters(params)
        return dict(params.values)

    def _cmd_stats(self, request: dict) -> dict:
        return {**self.stats, "port_present": self.port.is_open,
                "faults": {**vars(self.faults), "next": list(self.faults.next)}}

    def _servo(self, dxl_id: object) -> EmulatedServo:
        try:
            return self.bus.servos[int(dxl_id)]
        except (KeyError, ValueError, TypeError):
            raise BamError(f"no servo with id {dxl_id!r}; ids: {sorted(self.bus.servos)}") from None

    def _cmd_inject(self, request: dict) -> dict:
        faults = Faults(
            _probability("drop", request.get("drop", self.faults.drop)),
            _probability("corrupt", request.get("corrupt", self.faults.corrupt)),
            _seconds("latency", request.get("latency", self.faults.latency)),
            _one_shot(request.get("next", self.faults.next)))
        errors = request.get("hardware_error") or {}
        with self._lock:
            servos = {self._servo(i): int(bits) for i, bits in errors.items()}
            for servo, bits in servos.items():
                servo.set_hardware_error(bits)
        self.faults = faults
        return {**vars(faults), "next": list(faults.next)}


def main(argv: Sequence[str] | None = None) -> int:
    return serve(Emulator, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())
