"""``ethercat_emulator``: eRob drives on an EtherCAT line behind a veth pair, with bam_sim physics.

Example::

    ros2 run bam_drivers ethercat_emulator --drives erob80_100 erob80_50 --physics m6
    # prints: READY <interface> <control socket> <namespace>

A separate process that answers EtherCAT frames as a line of slaves does,
so that a real master (pysoem/SOEM in the eRob driver) runs over a real
Ethernet link, frame by frame. It creates a network namespace
``bam_ecat_<interface>`` and a veth pair with pyroute2 (no ``ip`` command): one end
stays in the caller's namespace for the master (``interface``, printed on
the READY line), the other is moved into the namespace, where the emulator
opens its AF_PACKET socket (EtherType 0x88A4), so no other traffic of the
host reaches the slaves. Creating a namespace needs root (CAP_NET_ADMIN and
CAP_SYS_ADMIN); without it the emulator prints one line saying so on stderr
and exits with code 3 (:data:`NO_NAMESPACE`). The interface is the emulator's
while it runs: a lock file (``bam_ecat_<interface>.lock`` in the temporary
directory, released by the kernel however the process ends) refuses a second
emulator on it, naming the first (the file of a default name, ``bamec<pid>``, goes
with a clean stop: no other emulator asks for it); a namespace and veth of that name
left by an emulator that died (SIGKILL) are removed at start, with one line on stderr.
A name that is not a network interface name, or an interface that exists and
is not an emulator's veth, is refused (exit code 2).

Each slave is an :class:`~bam_drivers.emulators.erob_drive.ErobDrive` (its
ESC, CoE object dictionary, CiA 402 firmware and pendulum joint with a
published eRob80 parameter set); the line is an
:class:`~bam_drivers.emulators.esc.Chain`. Threads: the bus (receive a
frame, let the slaves act on it, send it back), the drive cycle (every
slave's firmware and physics at ``--cycle-rate``, 1 kHz, on the monotonic
clock, and the SM watchdogs) and the control socket; one lock guards the slaves.

Faults, from the command line or the control socket: frames lost on the way
back (``drop``, a probability), corrupted working counters of process-data
datagrams (``corrupt_wkc``), the link down (the slave end of the veth set
down) and up again, the master silenced (frames never reach the slaves for
a while: the SM watchdog must trip), and a drive fault with its error code
0x603F (over-current 0x2310, over-temperature 0x4310, following error
0x8611, ...), kept until cleared. Random draws come from one generator
seeded by ``--seed``.

Control socket: a Unix stream socket; one JSON object per line in, one per
line out (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ...}``).
Commands: ``truth``, ``frames`` (``slave``: the drive's log of its last
process-data exchanges, :attr:`ErobDrive.frames`), ``stats``, ``inject``
(``drop``, ``corrupt_wkc``), ``link`` (``up``: bool, ``seconds``: back up
after), ``silence`` (``seconds``), ``fault`` (``slave``: 1-based position,
``code``), ``clear_fault`` (``slave``), ``set_position`` (``slave``,
``position``, ``velocity``), ``set_temperature`` (``slave``, ``celsius``),
``stop``.

The control socket, the life cycle and the other exit codes are the emulator
server's (:mod:`bam_drivers.emulators.emulator_server`), shared with the
Dynamixel emulator; this module adds the veth link, the slaves and their faults.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bam_drivers.emulators.emulator_server import (
    EmulatorServer,
    ServerConfig,
    add_exit_with_parent,
    add_priority,
    numbered_code,
    serve,
)
from bam_drivers.emulators.erob_drive import ErobDrive
from bam_drivers.emulators.esc import Chain
from bam_drivers.ethercat import frames as fr
from bam_drivers.ethercat.drive_models import DRIVE_MODELS, get_drive_model
from bam_drivers.ethercat.master import check_interface_name
from bam_drivers.serial_servo.port_lock import command_line
from bam_sim.bench.geometry import Bench
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number
from bam_sim.models.files.parameter_file import load, published_named

NO_NAMESPACE = 3  # exit code: the network namespace could not be created
LINK_WAIT = 30.0  # s for the veth pair to come up: only a hang reaches it, whatever the load


@dataclass
class EmulatorConfig(ServerConfig):
    """Everything the command line sets."""

    drives: tuple[str, ...] = ("erob80_100",)
    physics: str = "m6"  # friction model of the published sets
    params_file: str | None = None
    mass: float = 0.0
    length: float = 0.5
    arm_mass: float = 0.0
    positions: tuple[float, ...] = ()
    temperature: float = 35.0
    cycle_rate: float = 1000.0
    interface: str | None = None
    drop: float = 0.0
    corrupt_wkc: float = 0.0
    faults: dict[int, int] = field(default_factory=dict)


def parse_args(argv: Sequence[str] | None = None) -> EmulatorConfig:
    parser = ArgumentParser(
        prog="ethercat_emulator",
        description="eRob drives on an EtherCAT line behind a veth pair (bam_sim physics).")
    parser.add_argument("--drives", nargs="+", default=["erob80_100"], choices=sorted(DRIVE_MODELS),
                        help="drive model of each slave, in line order")
    parser.add_argument("--physics", default="m6", help="published friction model, m1..m6")
    parser.add_argument("--params-file", help="parameter file instead of --physics (all slaves)")
    parser.add_argument("--mass", type=float, default=0.0, help="pendulum mass, kg")
    parser.add_argument("--length", type=float, default=0.5, help="pendulum length, m")
    parser.add_argument("--arm-mass", type=float, default=0.0, help="rod mass, kg")
    parser.add_argument("--positions", type=float, nargs="*", default=[],
                        help="initial joint positions, rad (default 0)")
    parser.add_argument("--temperature", type=float, default=35.0, help="drive temperature, °C")
    parser.add_argument("--cycle-rate", type=float, default=1000.0,
                        help="drive cycles (firmware and physics) per second, Hz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--interface", help="name of the master's end of the veth pair "
                        "(default bamec<pid>)")
    parser.add_argument("--control", help="Unix socket path (default: in a temp dir)")
    parser.add_argument("--drop", type=float, default=0.0, help="probability a frame is lost")
    parser.add_argument("--corrupt-wkc", type=float, default=0.0,
                        help="probability a process-data working counter is wrong")
    parser.add_argument("--fault", action="append", default=[],
                        type=numbered_code("fault", "SLAVE:CODE", "1:0x2310"),
                        metavar="SLAVE:CODE", help="drive fault at start (repeatable)")
    add_priority(parser, "slaves")
    add_exit_with_parent(parser)
    a = parser.parse_args(argv)
    return EmulatorConfig(
        drives=tuple(a.drives), physics=a.physics, params_file=a.params_file, mass=a.mass,
        length=a.length, arm_mass=a.arm_mass, positions=tuple(a.positions),
        temperature=a.temperature, cycle_rate=a.cycle_rate, seed=a.seed,
        interface=a.interface, control=a.control, drop=a.drop, corrupt_wkc=a.corrupt_wkc,
        faults=dict(a.fault), priority=a.priority, exit_with_parent=a.exit_with_parent)


def check_config(c: EmulatorConfig) -> None:
    """Every number of the configuration finite and in range (BamError naming the option);
    the interface name one Linux takes."""
    number(c.mass, "--mass", low=0.0, text=False)
    number(c.arm_mass, "--arm-mass", low=0.0, text=False)
    number(c.length, "--length", low=0.0, low_open=True, text=False)
    for p in c.positions:
        number(p, "--positions", low=-1.0e6, high=1.0e6, text=False)
    number(c.temperature, "--temperature", low=-50.0, high=200.0, text=False)
    number(c.cycle_rate, "--cycle-rate", low=0.0, low_open=True, high=1.0e5, text=False)
    _probability("--drop", c.drop)
    _probability("--corrupt-wkc", c.corrupt_wkc)
    number(c.priority, "--priority", low=0, high=99, text=False)
    if c.interface is not None:
        check_interface_name(c.interface)


def _probability(name: str, value: object) -> float:
    return number(value, name, low=0.0, high=1.0, text=False)


# -- the link -------------------------------------------------------------------------------

class NamespaceError(RuntimeError):
    """The namespace or the veth pair could not be made (not root, no pyroute2, ...)."""


class VethLink:
    """A network namespace and a veth pair: ``interface`` outside, ``peer`` inside.

    The namespace is named after the interface, so that what an emulator killed by
    SIGKILL left behind is found by the next one on the same interface.
    """

    def __init__(self, interface: str | None = None) -> None:
        pid = os.getpid()
        self.interface = check_interface_name(interface or f"bamec{pid}")
        self._own_name = interface is None  # named after this process: no next holder
        self.namespace = f"bam_ecat_{self.interface}"
        self.peer = f"bames{pid}"
        self._lock: int | None = None
        self._made = False

    def claim(self) -> None:
        """Make the interface this process's: lock it (BamError naming a live holder), then
        remove what a dead emulator left on it (one line on stderr)."""
        path = self._lock_path()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            program = command_line(int(holder)) if holder.isdigit() else "?"
            raise BamError(f"interface {self.interface} belongs to a running ethercat_emulator "
                           f"(process {holder}: {program}); stop it, or give another "
                           "--interface") from None
        previous = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock = fd
        self._remove_stale(previous)

    def _remove_stale(self, previous: str) -> None:
        try:
            from pyroute2 import IPRoute, netns
        except ImportError as exc:
            raise NamespaceError(f"pyroute2 is missing ({exc})") from None
        stale_ns = self.namespace in netns.listnetns()
        with IPRoute() as ipr:
            found = ipr.link_lookup(ifname=self.interface)
            kind = _link_kind(ipr, found[0]) if found else None
            if found and (kind != "veth" or not stale_ns):
                raise BamError(f"interface {self.interface} exists and is not an emulator's "
                               f"veth ({kind or 'a device'}); give another --interface")
            if found:
                ipr.link("del", index=found[0])  # deletes both ends
        if stale_ns:
            netns.remove(self.namespace)
            print(f"ethercat_emulator: removed the namespace {self.namespace}"
                  + (f" and veth {self.interface}" if found else "")
                  + f" left by an emulator that died (process {previous}); reusing the names",
                  file=sys.stderr, flush=True)

    def _lock_path(self) -> str:
        return os.path.join(tempfile.gettempdir(), f"bam_ecat_{self.interface}.lock")

    def release(self) -> None:
        if self._lock is not None:
            if self._own_name:  # a name no other emulator asks for: leave no file behind
                with contextlib.suppress(OSError):
                    os.unlink(self._lock_path())
            os.close(self._lock)  # the flock goes with it; a given name's file stays for
            self._lock = None     # the next emulator on it

    def create(self) -> None:
        try:
            from pyroute2 import IPRoute, netns
        except ImportError as exc:
            raise NamespaceError(f"pyroute2 is missing ({exc})") from None
        try:
            netns.create(self.namespace)
            self._made = True
            with IPRoute() as ipr:
                ipr.link("add", ifname=self.interface, kind="veth", peer=self.peer)
                peer = ipr.link_lookup(ifname=self.peer)[0]
                ipr.link("set", index=peer, net_ns_fd=self.namespace)
                ipr.link("set", index=ipr.link_lookup(ifname=self.interface)[0], state="up")
            _quiet_ipv6(self.interface)
            self.set_up(True)
        except Exception as exc:
            self.remove()
            raise NamespaceError(one_line(exc)) from None

    def set_up(self, up: bool) -> None:
        """The slave end up or down: the master sees the carrier come and go."""
        from pyroute2 import NetNS

        with NetNS(self.namespace) as ns:
            ns.link("set", index=ns.link_lookup(ifname=self.peer)[0],
                    state="up" if up else "down")

    def wait_running(self, timeout: float) -> bool:
        """True once the master's end has a carrier."""
        path = f"/sys/class/net/{self.interface}/operstate"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(path) as f:
                    if f.read().strip() == "up":
                        return True
            except OSError:
                pass
            time.sleep(0.01)
        return False

    def socket(self) -> socket.socket:
        """An AF_PACKET socket on the slave end, inside the namespace."""
        from pyroute2 import netns

        sock = netns.create_socket(self.namespace, socket.AF_PACKET, socket.SOCK_RAW,
                                   socket.htons(fr.ETHERTYPE))
        sock.bind((self.peer, fr.ETHERTYPE))
        return sock

    def remove(self) -> None:
        if not self._made:
            return
        from pyroute2 import IPRoute, netns

        try:
            with IPRoute() as ipr:
                found = ipr.link_lookup(ifname=self.interface)
                if found:
                    ipr.link("del", index=found[0])  # deletes both ends
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        try:
            netns.remove(self.namespace)
        except OSError:
            pass
        self._made = False


def _link_kind(ipr, index: int) -> str | None:
    """The kind of a link ("veth", ...; None for a physical one)."""
    (link,) = ipr.get_links(index)
    info = link.get_attr("IFLA_LINKINFO")
    return info.get_attr("IFLA_INFO_KIND") if info is not None else None


def _quiet_ipv6(interface: str) -> None:
    """No IPv6 chatter from the kernel on the master's end (best effort)."""
    try:
        with open(f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6", "w") as f:
            f.write("1")
    except OSError:
        pass


# -- the emulator -------------------------------------------------------------------------

class EthercatEmulator(EmulatorServer):
    """The link, the slaves and the bus, cycle and control threads."""

    PROGRAM = "ethercat_emulator"
    COMMANDS = ("truth", "frames", "stats", "inject", "link", "silence", "fault",
                "clear_fault", "set_position", "set_temperature", "stop")
    SWITCH_INTERVAL = 2e-4  # slaves answer within microseconds
    START_ERRORS = (NamespaceError, BamError, OSError)

    def __init__(self, config: EmulatorConfig) -> None:
        check_config(config)
        self.config = config
        self.faults = {"drop": float(config.drop), "corrupt_wkc": float(config.corrupt_wkc)}
        self._start_ns = time.monotonic_ns()
        self.drives = self._build_drives()
        self.chain = Chain([d.esc for d in self.drives])
        for slave, code in config.faults.items():
            self._drive(slave).inject_fault(code)
        super().__init__(config, tempfile.mkdtemp(prefix="bam_ecat_"))
        self._silent_until = 0.0
        self._link_up = True
        self._sock: socket.socket | None = None
        self.link = VethLink(config.interface)
        self.stats = dict(frames=0, replies=0, dropped=0, corrupted=0, ignored=0, malformed=0,
                          link_down_frames=0, cycles=0, skipped_s=0.0, link_changes=0,
                          emulator_errors=0)

    def clock(self) -> int:
        """The emulator's time, ns (the slaves' local DC clock)."""
        return time.monotonic_ns() - self._start_ns

    def _build_drives(self) -> list[ErobDrive]:
        c = self.config
        bench = Bench(mass=c.mass, length=c.length, arm_mass=c.arm_mass)
        if len(c.positions) not in (0, len(c.drives)):
            raise BamError(f"--positions gives {len(c.positions)} values for {len(c.drives)} "
                           "drives")
        drives = []
        for i, name in enumerate(c.drives):
            model = get_drive_model(name)
            params = (load(c.params_file) if c.params_file
                      else published_named(model.name, c.physics))
            if params.actuator.name != model.name:
                raise BamError(f"parameter set for {params.actuator.name} on a {model.name} "
                               "drive")
            position = c.positions[i] if c.positions else 0.0
            drives.append(ErobDrive(model, params, bench, 1.0 / c.cycle_rate, self.clock,
                                    position=position, temperature=c.temperature,
                                    serial=1000 + i))
        return drives

    # -- the device (EmulatorServer) --------------------------------------------------------

    def _open_device(self) -> None:
        self.link.claim()
        self.link.create()
        if not self.link.wait_running(LINK_WAIT):
            raise BamError(f"veth {self.link.interface} did not come up within {LINK_WAIT:g} s")
        self._sock = self.link.socket()

    def _close_device(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self.link.remove()
        self.link.release()

    def _workers(self) -> list[tuple[Callable[[], None], str]]:
        return [(self._serve_bus, "bus"), (self._run_cycles, "cycle")]

    def ready_words(self) -> list[str]:
        return [self.link.interface, self.control_path, self.link.namespace]

    def refusal(self, exc: Exception) -> tuple[int, str]:
        """Without root the namespace cannot be made: its own exit code, so that tests skip."""
        if isinstance(exc, NamespaceError):
            return NO_NAMESPACE, (f"cannot create a network namespace and veth pair ({exc}); "
                                  "run as root (CAP_NET_ADMIN, CAP_SYS_ADMIN)")
        return super().refusal(exc)

    # -- drive cycles --------------------------------------------------------------------

    def _run_cycles(self) -> None:
        self._run_clock(self.config.cycle_rate, self._cycle, "cycles", "skipped_s")

    def _cycle(self) -> None:
        """One drive cycle of every slave (under the lock): SM watchdog, firmware, physics."""
        for drive in self.drives:
            drive.esc.check_watchdog()
            drive.tick()

    # -- the bus ----------------------------------------------------------------------------

    def _serve_bus(self) -> None:
        sock = self._sock
        while not self._stop.is_set():
            ready, _, _ = select.select([sock, self._wake_r], [], [], 0.1)
            if sock not in ready:
                continue
            try:
                frame = sock.recv(2048)
            except OSError:
                continue
            reply = self._answer(frame)
            if reply is not None:
                try:
                    sock.send(reply)
                    self.stats["replies"] += 1
                except OSError:
                    self.stats["link_down_frames"] += 1

    def _answer(self, frame: bytes) -> bytes | None:
        """The frame as it returns to the master, or None when it does not."""
        if len(frame) < fr.ETH_HEADER + 2 or frame[12:14] != fr.ETHERTYPE.to_bytes(2, "big"):
            return None
        self.stats["frames"] += 1
        if not self._link_up:
            self.stats["link_down_frames"] += 1
            return None
        if time.monotonic() < self._silent_until:
            self.stats["ignored"] += 1
            return None
        payload = frame[fr.ETH_HEADER:]
        try:
            datagrams = fr.parse(payload)
        except fr.FrameError:
            self.stats["malformed"] += 1
            return None
        with self._lock:
            try:
                self._catch_up()
                self.chain.process(datagrams)
            except Exception:  # an emulator bug must not look like a dead line: reported
                self.stats["emulator_errors"] += 1
                traceback.print_exc(file=sys.stderr)
                return None
        if self._rng.random() < self.faults["drop"]:
            self.stats["dropped"] += 1  # lost on the way back: the slaves did act on it
            return None
        self._maybe_corrupt(datagrams)
        # The first slave marks the source address as locally administered on the way back.
        source = bytes([frame[6] | 0x02]) + frame[7:12]
        return frame[:6] + source + frame[12:14] + fr.build(datagrams, pad_to=len(payload))

    def _maybe_corrupt(self, datagrams: list[fr.Datagram]) -> None:
        p = self.faults["corrupt_wkc"]
        if not p:
            return
        for d in datagrams:
            if d.command in fr.LOGICAL and self._rng.random() < p:
                d.wkc = max(0, d.wkc - 1)
                self.stats["corrupted"] += 1

    # -- control commands (EmulatorServer.command) ----------------------------------------

    def _drive(self, slave: object) -> ErobDrive:
        try:
            position = int(slave)
            if position < 1:
                raise ValueError
            return self.drives[position - 1]
        except (IndexError, ValueError, TypeError):
            raise BamError(f"no slave {slave!r}; slaves are 1..{len(self.drives)}") from None

    def _cmd_truth(self, request: dict) -> dict:
        with self._lock:
            return {str(i + 1): {"model": d.model.name, **d.truth()}
                    for i, d in enumerate(self.drives)}

    def _cmd_frames(self, request: dict) -> list[dict]:
        """The frame log of one drive (ErobDrive.frames), oldest first."""
        with self._lock:
            return list(self._drive(request.get("slave", 1)).frames)

    def _cmd_stats(self, request: dict) -> dict:
        return {**self.stats, "faults": dict(self.faults), "link_up": self._link_up,
                "silent": time.monotonic() < self._silent_until,
                "interface": self.link.interface, "namespace": self.link.namespace}

    def _cmd_inject(self, request: dict) -> dict:
        faults = dict(self.faults)
        for key in ("drop", "corrupt_wkc"):
            if key in request:
                faults[key] = _probability(key, request[key])
        self.faults = faults
        return dict(faults)

    def _cmd_link(self, request: dict) -> None:
        up = bool(request.get("up", False))
        self._set_link(up)
        seconds = request.get("seconds")
        if not up and seconds is not None:
            timer = threading.Timer(float(seconds), self._set_link, args=(True,))
            timer.daemon = True
            timer.start()

    def _set_link(self, up: bool) -> None:
        self._link_up = up  # frames in flight are lost at once, whatever the kernel does
        self.link.set_up(up)
        self.stats["link_changes"] += 1

    def _cmd_silence(self, request: dict) -> None:
        self._silent_until = time.monotonic() + float(request.get("seconds", 1.0))

    def _cmd_fault(self, request: dict) -> None:
        code = request["code"]
        code = int(code, 0) if isinstance(code, str) else int(code)
        with self._lock:
            self._drive(request["slave"]).inject_fault(code)

    def _cmd_clear_fault(self, request: dict) -> None:
        with self._lock:
            self._drive(request["slave"]).clear_fault()

    def _cmd_set_position(self, request: dict) -> None:
        with self._lock:
            self._drive(request["slave"]).set_state(float(request["position"]),
                                                    float(request.get("velocity", 0.0)))

    def _cmd_set_temperature(self, request: dict) -> None:
        with self._lock:
            self._drive(request["slave"]).temperature = float(request["celsius"])


def main(argv: Sequence[str] | None = None) -> int:
    return serve(EthercatEmulator, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())
