"""The EtherCAT master of the eRob driver, over pysoem (SOEM): scan, configure, cycle, stop.

:class:`EthercatBus` opens a network interface and brings the line up:

1. scan (``config_init``: SOEM enumerates the slaves, reads their SII and
   takes them to PRE-OP) and match each joint to a slave, by position on
   the line or by vendor/product id in line order;
2. configure each drive over CoE SDO: check its identity (0x1018), gear
   ratio (0x6091) and encoder resolution (0x608F) against the joint's drive
   model, read its rated current and torque (0x6075, 0x6076), set the
   mode (0x6060), current and torque limits (0x6073, 0x6072), the reaction
   to a lost master (0x6007: disable voltage), the PDO mapping
   (0x1600/0x1A00) and assignment (0x1C12/0x1C13), then read everything
   back;
3. map the process data (``config_map``: SOEM reads the mapping back over
   CoE, programs the sync managers and FMMUs, requests SAFE-OP), set each
   slave's process-data watchdog (0x0420) so that a drive whose master
   stops disables itself, and go to OPERATIONAL.

Every cycle :meth:`exchange` sends the outputs and receives the inputs
(one LRW) and returns the working counter; :meth:`read_states` and
:meth:`recover` handle slaves that left OP; :meth:`torque_off` disables
operation (CiA 402) then requests SAFE-OP, and reads both back. pysoem
calls that block release the GIL. Errors are :class:`BamError` naming the
slave and what to do.
"""

from __future__ import annotations

import struct
import time
import warnings
from collections import deque
from dataclasses import dataclass, field, replace

from bam_drivers.ethercat import cia402
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.coe import abort_name
from bam_drivers.ethercat.drive_models import DriveModel
from bam_sim.common.errors import BamError, one_line

SDO_ATTEMPTS = 3  # an SDO transfer whose frames were lost is tried this many times
STATE_TIMEOUT = 2.0  # s for a state change of the line
OP_TIMEOUT = 1.0  # s of process data cycles to reach OP
CONNECTION_LOST_DISABLE_VOLTAGE = 2  # 0x6007 option: disable voltage
_RX = struct.Struct(dm.struct_format(dm.RX_ENTRIES))
_TX = struct.Struct(dm.struct_format(dm.TX_ENTRIES))


@dataclass(frozen=True)
class JointSpec:
    """A joint the driver moves: its drive model, and the slave position (None: by id)."""

    name: str
    model: DriveModel
    position: int | None = None


@dataclass(frozen=True)
class SlaveInfo:
    """A slave found by the scan."""

    position: int  # 1-based, in line order
    name: str
    vendor: int
    product: int
    revision: int


@dataclass(frozen=True)
class DriveConfig:
    """What a drive's configuration read back."""

    rated_current_ma: int
    rated_torque_mnm: int
    gear_ratio: float
    counts_per_turn: int
    mode: int
    max_current_permille: int
    max_torque_permille: int
    abort_connection_option: int
    rx_mapping: tuple[int, ...]
    tx_mapping: tuple[int, ...]
    rx_assign: tuple[int, ...]
    tx_assign: tuple[int, ...]
    watchdog_ms: float
    serial_number: int = 0  # identity 0x1018:4 (the unit, in bam/bench_info)


@dataclass(frozen=True)
class Inputs:
    """One drive's TxPDO, raw (drive units)."""

    statusword: int
    position: int
    velocity: int
    torque: int
    current: int
    error_code: int
    mode: int
    dc_link_mv: int
    temperature: int


@dataclass
class Drive:
    """A joint's slave on the line, its configuration and its emergencies."""

    joint: int
    spec: JointSpec
    slave: object  # pysoem slave
    info: SlaveInfo
    config: DriveConfig | None = None
    emergencies: deque = field(default_factory=lambda: deque(maxlen=32))

    @property
    def label(self) -> str:
        return f"slave {self.info.position} ({self.spec.name})"


@dataclass(frozen=True)
class Exchange:
    """The working counter of one process-data cycle (-1: no frame came back)."""

    wkc: int
    expected: int

    @property
    def ok(self) -> bool:
        return self.wkc == self.expected


IFNAMSIZ = 16  # Linux: an interface name is at most IFNAMSIZ - 1 bytes


def check_interface_name(name: str) -> str:
    """``name`` if Linux would take it as a network interface name, else BamError.

    The kernel's rule (dev_valid_name): 1..15 bytes, not "." or "..", no "/", ":"
    or white space. SOEM copies the name into a fixed buffer unchecked: a longer one
    crashes the process, so it is refused before pysoem sees it.
    """
    size = len(name.encode())
    bad = sorted({c for c in name if c in "/:" or c.isspace() or c == "\0"})
    if not 0 < size < IFNAMSIZ or name in (".", "..") or bad:
        why = (f"{size} bytes, more than {IFNAMSIZ - 1}" if size >= IFNAMSIZ else
               "empty" if not size else f"it holds {bad!r}" if bad else "reserved")
        shown = name if len(name) <= 40 else name[:37] + "..."
        raise BamError(f"interface {shown!r} is not a network interface name ({why}); give "
                       "a name ip link shows, e.g. eth0")
    return name


def _pysoem():
    import pysoem  # imported on use: the module loads without the C extension

    return pysoem


class EthercatBus:
    """The line of eRob drives behind ``interface`` (see the module docstring)."""

    def __init__(self, interface: str, joints: list[JointSpec], *, mode: int = cia402.CST,
                 watchdog: float = 0.1, frame_timeout: float = 0.002,
                 csp_gain: float = 25.0) -> None:
        if mode not in (cia402.CST, cia402.CSP):
            raise BamError(f"mode {mode} is not CST (10) or CSP (8)")
        self.interface = check_interface_name(interface)
        self.joints = list(joints)
        self.mode = mode
        self.watchdog = float(watchdog)
        self.frame_timeout_us = max(100, int(frame_timeout * 1e6))
        self.csp_gain = float(csp_gain)
        self.master = None
        self.slaves: list[SlaveInfo] = []
        self.drives: list[Drive] = []
        self.expected_wkc = 0

    @property
    def is_open(self) -> bool:
        return self.master is not None

    # -- bring-up ----------------------------------------------------------------------

    def open(self) -> None:
        """Scan, configure and bring the line to OP (BamError, with the bus closed, if not)."""
        pysoem = _pysoem()
        master = pysoem.Master()
        try:
            master.open(self.interface)
        except (ConnectionError, OSError) as exc:
            raise BamError(f"cannot open network interface {self.interface} ({one_line(exc)}); "
                           "check the name (ip link) and run as root or with CAP_NET_RAW") from None
        self.master = master
        try:
            self._scan()
            for drive in self.drives:
                drive.config = self._configure(drive)
            self._map()
            self._operational()
        except BamError:
            self.close()
            raise
        except Exception as exc:  # pysoem errors not handled below: one line, bus closed
            self.close()
            raise BamError(f"EtherCAT bring-up failed: {type(exc).__name__}: "
                           f"{one_line(exc)}") from None

    def _scan(self) -> None:
        pysoem = _pysoem()
        found = self.master.config_init(release_gil=True)
        if found <= 0:
            raise BamError(f"no EtherCAT slave answered on {self.interface}; check the cable "
                           "and the drives' power")
        self.slaves = [SlaveInfo(i + 1, s.name, s.man, s.id, s.rev)
                       for i, s in enumerate(self.master.slaves)]
        self.drives = self._match()
        if self.master.state_check(pysoem.PREOP_STATE, int(STATE_TIMEOUT * 1e6)) \
                != pysoem.PREOP_STATE:
            raise BamError(f"slaves did not reach PRE-OP: {self._describe_states()}")
        for drive in self.drives:
            drive.slave.add_emergency_callback(drive.emergencies.append)

    def _match(self) -> list[Drive]:
        """Each joint's slave: by position, else the next free slave of its model's id."""
        taken: set[int] = set()
        drives = []
        for i, spec in enumerate(self.joints):
            slave = self._slave_for(spec, taken)
            taken.add(slave.position)
            drives.append(Drive(i, spec, self.master.slaves[slave.position - 1], slave))
        return drives

    def _slave_for(self, spec: JointSpec, taken: set[int]) -> SlaveInfo:
        model = spec.model
        if spec.position is not None:
            if not 1 <= spec.position <= len(self.slaves):
                raise BamError(f"joint '{spec.name}' is at slave position {spec.position}, but "
                               f"{len(self.slaves)} slave(s) answered on {self.interface}")
            slave = self.slaves[spec.position - 1]
            if (slave.vendor, slave.product) != (model.vendor, model.product):
                raise BamError(f"slave {slave.position} ('{slave.name}', vendor "
                               f"0x{slave.vendor:08X}, product 0x{slave.product:08X}) is not "
                               f"an {model.title} drive for joint '{spec.name}'")
            return slave
        for slave in self.slaves:
            if slave.position not in taken and \
                    (slave.vendor, slave.product) == (model.vendor, model.product):
                return slave
        raise BamError(f"no free slave with vendor 0x{model.vendor:08X} product "
                       f"0x{model.product:08X} ({model.title}) for joint '{spec.name}' among "
                       f"{len(self.slaves)} slave(s) on {self.interface}")

    # -- SDO ---------------------------------------------------------------------------

    def sdo_read(self, drive: Drive, index: int, subindex: int, fmt: str):
        """One value of ``fmt`` (struct) read from the drive."""
        raw = self._sdo(drive, "read", index, subindex)
        size = struct.calcsize(fmt)
        if len(raw) < size:
            raise BamError(f"{drive.label}: 0x{index:04X}:{subindex} returned {len(raw)} "
                           f"byte(s), expected {size}")
        return struct.unpack(fmt, raw[:size])[0]

    def sdo_write(self, drive: Drive, index: int, subindex: int, fmt: str, value) -> None:
        self._sdo(drive, "write", index, subindex, struct.pack(fmt, value))

    def _sdo(self, drive: Drive, kind: str, index: int, subindex: int, data: bytes = b""):
        """One SDO transfer, tried again when frames were lost (its writes are idempotent)."""
        pysoem = _pysoem()
        lost = (pysoem.WkcError, pysoem.PacketError)
        for attempt in range(SDO_ATTEMPTS):
            try:
                return self._sdo_once(drive, kind, index, subindex, data)
            except lost as exc:
                if attempt + 1 == SDO_ATTEMPTS:
                    raise BamError(f"{drive.label}: SDO {kind} of 0x{index:04X}:{subindex} got "
                                   f"no answer {SDO_ATTEMPTS} times ({type(exc).__name__}); "
                                   "check the link") from None
        return None

    def _sdo_once(self, drive: Drive, kind: str, index: int, subindex: int, data: bytes):
        pysoem = _pysoem()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                if kind == "read":
                    return drive.slave.sdo_read(index, subindex, release_gil=True)
                return drive.slave.sdo_write(index, subindex, data, release_gil=True)
        except pysoem.SdoError as exc:
            raise BamError(f"{drive.label}: SDO {kind} of 0x{index:04X}:{subindex} refused: "
                           f"{abort_name(exc.abort_code)} (abort 0x{exc.abort_code:08X})"
                           ) from None
        except (pysoem.WkcError, pysoem.PacketError):
            raise
        except pysoem.MailboxError as exc:
            raise BamError(f"{drive.label}: SDO {kind} of 0x{index:04X}:{subindex} failed "
                           f"({type(exc).__name__}: {one_line(exc) or 'no answer'})") from None

    # -- configuration -----------------------------------------------------------------

    def _configure(self, drive: Drive) -> DriveConfig:
        self._check_model(drive)
        model = drive.spec.model
        rated_current = self.sdo_read(drive, cia402.RATED_CURRENT, 0, "<I")
        rated_torque = self.sdo_read(drive, cia402.RATED_TORQUE, 0, "<I")
        if not rated_current or not rated_torque:
            raise BamError(f"{drive.label}: rated current {rated_current} mA / rated torque "
                           f"{rated_torque} mN·m: cannot convert torques")
        max_current = round(1000.0 * model.max_current * 1000.0 / rated_current)
        max_torque = dm.torque_permille(model.max_current, model.motor_kt, rated_torque)
        w = self.sdo_write
        w(drive, cia402.ABORT_CONNECTION_OPTION, 0, "<h", CONNECTION_LOST_DISABLE_VOLTAGE)
        w(drive, cia402.MODES_OF_OPERATION, 0, "<b", self.mode)
        w(drive, cia402.MAX_CURRENT, 0, "<H", max_current)
        w(drive, cia402.MAX_TORQUE, 0, "<H", max_torque)
        if self.mode == cia402.CSP:
            w(drive, dm.POSITION_GAIN, 0, "<I", round(self.csp_gain * 1000.0))
        self._write_pdos(drive)
        config = self._read_back(drive, rated_current, rated_torque)
        expected = (self.mode, max_current, max_torque, CONNECTION_LOST_DISABLE_VOLTAGE,
                    tuple(e.mapping for e in dm.RX_ENTRIES),
                    tuple(e.mapping for e in dm.TX_ENTRIES), (dm.RXPDO,), (dm.TXPDO,))
        got = (config.mode, config.max_current_permille, config.max_torque_permille,
               config.abort_connection_option, config.rx_mapping, config.tx_mapping,
               config.rx_assign, config.tx_assign)
        if got != expected:
            raise BamError(f"{drive.label}: the configuration read back {got} differs from "
                           f"the one written {expected}")
        return config

    def _check_model(self, drive: Drive) -> None:
        model = drive.spec.model
        motor = self.sdo_read(drive, cia402.GEAR_RATIO, 1, "<I")
        shaft = self.sdo_read(drive, cia402.GEAR_RATIO, 2, "<I")
        if not shaft or motor / shaft != model.gear_ratio:
            raise BamError(f"{drive.label} reports a gear ratio of {motor}:{shaft}, but joint "
                           f"'{drive.spec.name}' is an {model.title} "
                           f"({model.gear_ratio}:1); check drive_models")
        counts = self.sdo_read(drive, cia402.ENCODER_RESOLUTION, 1, "<I")
        if counts != model.counts_per_turn:
            raise BamError(f"{drive.label} reports {counts} encoder increments per turn, "
                           f"{model.title} has {model.counts_per_turn}")

    def _write_pdos(self, drive: Drive) -> None:
        w = self.sdo_write
        for assign, pdo, entries in ((0x1C12, dm.RXPDO, dm.RX_ENTRIES),
                                     (0x1C13, dm.TXPDO, dm.TX_ENTRIES)):
            w(drive, assign, 0, "<B", 0)
            w(drive, pdo, 0, "<B", 0)
            for k, entry in enumerate(entries, start=1):
                w(drive, pdo, k, "<I", entry.mapping)
            w(drive, pdo, 0, "<B", len(entries))
            w(drive, assign, 1, "<H", pdo)
            w(drive, assign, 0, "<B", 1)

    def _read_back(self, drive: Drive, rated_current: int, rated_torque: int) -> DriveConfig:
        r = self.sdo_read

        def table(index: int, fmt: str) -> tuple:
            return tuple(r(drive, index, k, fmt) for k in range(1, r(drive, index, 0, "<B") + 1))

        motor, shaft = r(drive, cia402.GEAR_RATIO, 1, "<I"), r(drive, cia402.GEAR_RATIO, 2, "<I")
        return DriveConfig(
            rated_current_ma=rated_current, rated_torque_mnm=rated_torque,
            gear_ratio=motor / shaft,
            counts_per_turn=r(drive, cia402.ENCODER_RESOLUTION, 1, "<I"),
            mode=r(drive, cia402.MODES_OF_OPERATION, 0, "<b"),
            max_current_permille=r(drive, cia402.MAX_CURRENT, 0, "<H"),
            max_torque_permille=r(drive, cia402.MAX_TORQUE, 0, "<H"),
            abort_connection_option=r(drive, cia402.ABORT_CONNECTION_OPTION, 0, "<h"),
            rx_mapping=table(dm.RXPDO, "<I"), tx_mapping=table(dm.TXPDO, "<I"),
            rx_assign=table(0x1C12, "<H"), tx_assign=table(0x1C13, "<H"), watchdog_ms=0.0,
            serial_number=r(drive, cia402.IDENTITY, 4, "<I"))

    def _map(self) -> None:
        pysoem = _pysoem()
        try:
            self.master.config_map()
        except pysoem.ConfigMapError as exc:
            raise BamError(f"process data mapping failed: "
                           f"{'; '.join(one_line(e) for e in exc.error_list)}") from None
        for drive in self.drives:
            rx, tx = len(drive.slave.output), len(drive.slave.input)
            if (rx, tx) != (_RX.size, _TX.size):
                raise BamError(f"{drive.label} maps {rx} output / {tx} input bytes, expected "
                               f"{_RX.size} / {_TX.size}")
            drive.config = replace(drive.config, watchdog_ms=self._set_watchdog(drive))
        if self.master.state_check(pysoem.SAFEOP_STATE, int(STATE_TIMEOUT * 1e6)) \
                != pysoem.SAFEOP_STATE:
            raise BamError(f"slaves did not reach SAFE-OP: {self._describe_states()}")
        self.expected_wkc = self.master.expected_wkc

    def _set_watchdog(self, drive: Drive) -> float:
        """The process-data watchdog (0x0420) of the drive's ESC, ms as read back."""
        if self.watchdog <= 0.0:
            return 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # resolution of the divider
            try:
                drive.slave.set_watchdog("processdata", self.watchdog * 1000.0)
                return float(drive.slave.get_watchdog("processdata"))
            except Exception as exc:  # pysoem raises WkcError or AttributeError
                raise BamError(f"{drive.label}: cannot set the process-data watchdog to "
                               f"{self.watchdog:g} s ({type(exc).__name__})") from None

    def _operational(self) -> None:
        pysoem = _pysoem()
        for drive in self.drives:
            self.set_outputs(drive, cia402.DISABLE_VOLTAGE, 0, 0)
        self.exchange()  # valid outputs before OP, as slaves want them
        self.master.state = pysoem.OP_STATE
        self.master.write_state()
        deadline = time.monotonic() + OP_TIMEOUT
        while time.monotonic() < deadline:
            self.exchange()
            if self.master.state_check(pysoem.OP_STATE, 1000) == pysoem.OP_STATE:
                return
        raise BamError(f"slaves did not reach OP: {self._describe_states()}")

    def _describe_states(self) -> str:
        self.master.read_state()
        return ", ".join(f"slave {i + 1} {reg.al_state_name(s.state)}"
                         + (f" (AL 0x{s.al_status:04X} {reg.al_status_code_name(s.al_status)})"
                            if s.al_status else "")
                         for i, s in enumerate(self.master.slaves))

    # -- cyclic ------------------------------------------------------------------------

    def set_outputs(self, drive: Drive, controlword: int, torque: int, position: int) -> None:
        """The RxPDO sent by the next :meth:`exchange`."""
        drive.slave.output = _RX.pack(controlword, torque, position, self.mode)

    def exchange(self) -> Exchange:
        """Send the outputs, receive the inputs: the working counter."""
        master = self.master
        master.send_processdata(release_gil=True)
        wkc = master.receive_processdata(self.frame_timeout_us, release_gil=True)
        return Exchange(wkc, self.expected_wkc)

    @staticmethod
    def inputs(drive: Drive) -> Inputs:
        return Inputs(*_TX.unpack(drive.slave.input))

    def read_states(self) -> list[tuple[int, int]]:
        """(AL status, AL status code) of each drive's slave, read now."""
        self.master.read_state()
        return [(d.slave.state, d.slave.al_status) for d in self.drives]

    def recover(self, drive: Drive, status: int) -> None:
        """Acknowledge an error and request OP again (SOEM's recovery of a slave)."""
        pysoem = _pysoem()
        if status & reg.AL_ERROR:
            drive.slave.state = (status & reg.AL_STATE_MASK) | pysoem.STATE_ACK
            drive.slave.write_state()
        drive.slave.state = pysoem.OP_STATE
        drive.slave.write_state()

    def poll_mailboxes(self) -> None:
        """Read each drive's mailbox once: emergencies land in ``drive.emergencies``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            for drive in self.drives:
                try:
                    drive.slave.mbx_receive()
                except Exception:  # noqa: BLE001 - an EMCY as exception or a mailbox error
                    continue

    def write_gain(self, drive: Drive, gain: float) -> None:
        """The drive's own position gain (CSP)."""
        self.sdo_write(drive, dm.POSITION_GAIN, 0, "<I", round(gain * 1000.0))

    # -- shutdown ----------------------------------------------------------------------

    def torque_off(self, timeout: float = 0.5) -> bool:
        """Disable operation on every drive, then SAFE-OP; True when both read back."""
        pysoem = _pysoem()
        deadline = time.monotonic() + timeout
        disabled = False
        while time.monotonic() < deadline and not disabled:
            for drive in self.drives:  # hold the target where the joint is (CSP)
                self.set_outputs(drive, cia402.DISABLE_OPERATION, 0,
                                 self.inputs(drive).position)
            exchange = self.exchange()
            if exchange.ok:
                disabled = all(cia402.decode(self.inputs(d).statusword)
                               is not cia402.State.OPERATION_ENABLED for d in self.drives)
        self.master.state = pysoem.SAFEOP_STATE | pysoem.STATE_ACK  # and clear any AL error
        self.master.write_state()
        safe_op = self.master.state_check(pysoem.SAFEOP_STATE, int(timeout * 1e6)) \
            == pysoem.SAFEOP_STATE
        return disabled and safe_op

    def close(self) -> None:
        master, self.master = self.master, None
        if master is not None:
            try:
                master.close()
            except Exception:  # noqa: BLE001 - closing a broken context
                pass
