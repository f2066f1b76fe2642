"""An emulated EtherCAT line in this process, datagram by datagram (no network, no pysoem).

For the unit tests of :mod:`bam_drivers.emulators.esc` and the drive: eRob
drives on a :class:`~bam_drivers.emulators.esc.Chain`, a clock the test
advances, and one-datagram helpers as a master would send them.
"""

from __future__ import annotations

import struct

from bam_drivers.emulators.erob_drive import (
    INPUTS_START,
    MAILBOX_IN,
    MAILBOX_OUT,
    OUTPUTS_START,
    ErobDrive,
)
from bam_drivers.emulators.esc import Chain
from bam_drivers.ethercat import coe
from bam_drivers.ethercat import frames as fr
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.drive_models import get_drive_model
from bam_sim.bench.geometry import Bench
from bam_sim.models.files.parameter_file import published_named

STATION = 0x1001  # station address of slave 1 (SOEM's node offset)


class Line:
    """Drives of ``models`` on a line; ``now_ns`` is the emulated time."""

    def __init__(self, models=("erob80_100",), mass: float = 0.0) -> None:
        self.now_ns = 0
        bench = Bench(mass=mass, length=0.5)
        self.drives = [ErobDrive(get_drive_model(m), published_named(m, "m6"), bench, 0.001,
                                 lambda: self.now_ns, serial=i + 1)
                       for i, m in enumerate(models)]
        self.chain = Chain([d.esc for d in self.drives])
        self._counter = 0

    def send(self, command: int, address: int, data: bytes | int) -> fr.Datagram:
        """One datagram through the line (``data`` an int: that many zero bytes)."""
        payload = bytes(data) if isinstance(data, int) else data
        d = fr.Datagram(command, 0, address, bytearray(payload))
        self.chain.process([d])
        return d

    def fprd(self, station: int, ado: int, size: int) -> fr.Datagram:
        return self.send(fr.Command.FPRD, station | ado << 16, size)

    def fpwr(self, station: int, ado: int, data: bytes) -> fr.Datagram:
        return self.send(fr.Command.FPWR, station | ado << 16, data)

    def addresses(self) -> None:
        """Station addresses 0x1001, 0x1002, ... by auto-increment position."""
        for i in range(len(self.drives)):
            self.send(fr.Command.APWR, ((-i) & 0xFFFF) | reg.STATION_ADDRESS << 16,
                      struct.pack("<H", STATION + i))

    def al_request(self, station: int, state: int) -> int:
        """Write AL control; the AL status read back."""
        self.fpwr(station, reg.AL_CONTROL, struct.pack("<H", state))
        return struct.unpack("<H", self.fprd(station, reg.AL_STATUS, 2).data)[0]

    def mailboxes(self, station: int) -> None:
        """SM0/SM1 as the SII says (what SOEM writes in config_init)."""
        sm = struct.pack("<HHBBBB", *MAILBOX_OUT, 0x26, 0, 1, 0) + \
            struct.pack("<HHBBBB", *MAILBOX_IN, 0x22, 0, 1, 0)
        self.fpwr(station, reg.SM0, sm)

    def process_data(self, station: int, rx: int, tx: int, logical: int = 0) -> None:
        """SM2/SM3 and two FMMUs: outputs at ``logical``, inputs right after."""
        self.fpwr(station, reg.SM0 + 16, struct.pack("<HHBBBB", OUTPUTS_START, rx, 0x64, 0, 1, 0)
                  + struct.pack("<HHBBBB", INPUTS_START, tx, 0x20, 0, 1, 0))
        fmmu = struct.pack("<IHBBHBBBxxx", logical, rx, 0, 7, OUTPUTS_START, 0, 2, 1) + \
            struct.pack("<IHBBHBBBxxx", logical + rx, tx, 0, 7, INPUTS_START, 0, 1, 1)
        self.fpwr(station, reg.FMMU0, fmmu)

    def to_pre_op(self, station: int = STATION) -> int:
        self.mailboxes(station)
        return self.al_request(station, reg.AlState.PRE_OP)

    # -- mailbox ---------------------------------------------------------------------------

    def request(self, payload: bytes, kind: int = coe.MailboxType.COE) -> bytes:
        """A mailbox write of ``payload`` with the next counter (1..7), as SOEM numbers them:
        a slave ignores a write repeating the previous counter."""
        self._counter = self._counter % 7 + 1
        return coe.Mailbox(kind, self._counter, payload).encode(MAILBOX_OUT[1])

    def mailbox(self, station: int, payload: bytes) -> bytes:
        """Send a CoE payload; the CoE payload of the answer."""
        assert self.fpwr(station, MAILBOX_OUT[0], self.request(payload)).wkc == 1
        answer = self.fprd(station, MAILBOX_IN[0], MAILBOX_IN[1])
        assert answer.wkc == 1, "no answer in the mailbox"
        return coe.decode_mailbox(bytes(answer.data)).payload


def sdo_upload(index: int, subindex: int, complete: bool = False) -> bytes:
    command = 0x40 | (coe.COMPLETE_ACCESS if complete else 0)
    return coe.coe(coe.CoeService.SDO_REQUEST, struct.pack("<BHBI", command, index, subindex, 0))


def sdo_download(index: int, subindex: int, data: bytes) -> bytes:
    """Expedited (up to 4 bytes) or normal initiate download, as SOEM sends them."""
    if len(data) <= 4:
        command = 0x23 | (4 - len(data)) << 2
        return coe.coe(coe.CoeService.SDO_REQUEST, struct.pack("<BHB", command, index, subindex)
                       + data + bytes(4 - len(data)))
    return coe.coe(coe.CoeService.SDO_REQUEST,
                   struct.pack("<BHBI", 0x21, index, subindex, len(data)) + data)


def abort_code(payload: bytes) -> int | None:
    """The abort code of an SDO answer, None when it is no abort."""
    body = payload[2:]
    return struct.unpack_from("<I", body, 4)[0] if body[0] == coe.SDO_ABORT else None
