"""The SDO server of an emulated slave: CoE requests in, CoE responses out (ETG.1000.6 5.6.2).

:class:`SdoServer` answers the SDO requests of a master over the mailbox:
expedited, normal and segmented downloads and uploads (toggle bit checked),
complete access, and aborts for whatever the object dictionary refuses or
the protocol gets wrong (unknown command specifier, toggle error, a
segment without a transfer). Payloads are CoE payloads (CoE header first);
the drive wraps them in mailbox headers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from bam_drivers.emulators.object_dictionary import ObjectDictionary, SdoAbort
from bam_drivers.ethercat import coe
from bam_drivers.ethercat.coe import CoeService

MAILBOX_HEADER = 6
INITIATE_OVERHEAD = 10  # CoE header 2, command 1, index 2, subindex 1, size 4
SEGMENT_OVERHEAD = 3  # CoE header 2, command 1


@dataclass
class _Transfer:
    index: int
    subindex: int
    complete: bool
    data: bytearray
    size: int = 0  # total bytes announced (downloads)
    toggle: int = 0


class SdoServer:
    """SDO requests of one mailbox of ``mailbox_size`` bytes, against ``od``."""

    def __init__(self, od: ObjectDictionary, mailbox_size: int) -> None:
        self.od = od
        self.mailbox_size = mailbox_size
        self._upload: _Transfer | None = None
        self._download: _Transfer | None = None
        self.aborts = 0

    def handle(self, payload: bytes) -> bytes:
        """The CoE response to the CoE request ``payload``."""
        if len(payload) < coe.COE_HEADER + 1:
            return self._abort(0, 0, coe.ABORT_COMMAND)
        body = payload[coe.COE_HEADER:]
        command = body[0]
        index, subindex = struct.unpack_from("<HB", body + bytes(4), 1)
        if command >> 5 in (coe.CCS_DOWNLOAD_SEGMENT, coe.CCS_UPLOAD_SEGMENT):
            ongoing = self._download or self._upload  # segments carry data, not the index
            index, subindex = (ongoing.index, ongoing.subindex) if ongoing else (0, 0)
        try:
            return self._dispatch(command, body)
        except SdoAbort as exc:
            self._upload = self._download = None
            return self._abort(index, subindex, exc.code)

    def _dispatch(self, command: int, body: bytes) -> bytes:
        specifier = command >> 5
        if specifier == coe.CCS_DOWNLOAD_INITIATE:
            return self._download_initiate(command, body)
        if specifier == coe.CCS_DOWNLOAD_SEGMENT:
            return self._download_segment(command, body)
        if specifier == coe.CCS_UPLOAD_INITIATE:
            return self._upload_initiate(command, body)
        if specifier == coe.CCS_UPLOAD_SEGMENT:
            return self._upload_segment(command)
        if specifier == coe.CCS_ABORT:
            self._upload = self._download = None
            return b""  # an abort from the master gets no answer
        raise SdoAbort(coe.ABORT_COMMAND)

    def _abort(self, index: int, subindex: int, code: int) -> bytes:
        self.aborts += 1
        return coe.sdo_abort(index, subindex, code)

    @staticmethod
    def _response(command: int, index: int, subindex: int, data: bytes = bytes(4)) -> bytes:
        return coe.coe(CoeService.SDO_RESPONSE, struct.pack("<BHB", command, index, subindex)
                       + data)

    # -- downloads --------------------------------------------------------------------------

    def _download_initiate(self, command: int, body: bytes) -> bytes:
        index, subindex = struct.unpack_from("<HB", body, 1)
        complete = bool(command & coe.COMPLETE_ACCESS)
        self._download = None
        if command & coe.EXPEDITED:
            size = 4 - (command >> 2 & 0x03) if command & coe.SIZE_INDICATED else 4
            self.od.download(index, subindex, bytes(body[4:4 + size]), complete)
        else:
            if len(body) < 8:
                raise SdoAbort(coe.ABORT_COMMAND)
            size = struct.unpack_from("<I", body, 4)[0]
            data = bytearray(body[8:8 + size])
            if len(data) < size:  # segments follow
                self._download = _Transfer(index, subindex, complete, data, size)
            else:
                self.od.download(index, subindex, bytes(data), complete)
        return self._response(coe.SCS_DOWNLOAD_INITIATE << 5, index, subindex)

    def _download_segment(self, command: int, body: bytes) -> bytes:
        transfer = self._download
        if transfer is None:
            raise SdoAbort(coe.ABORT_COMMAND)
        toggle = command & coe.TOGGLE
        if toggle != transfer.toggle:
            raise SdoAbort(coe.ABORT_TOGGLE)
        chunk = body[1:]
        if command & coe.LAST_SEGMENT and len(chunk) == 7:
            chunk = chunk[:7 - (command >> 1 & 0x07)]  # the unused bytes of a short last one
        transfer.data += chunk
        transfer.toggle ^= coe.TOGGLE
        if command & coe.LAST_SEGMENT:
            self._download = None
            if len(transfer.data) < transfer.size:
                raise SdoAbort(coe.ABORT_TOO_SHORT)
            self.od.download(transfer.index, transfer.subindex,
                             bytes(transfer.data[:transfer.size]), transfer.complete)
        return coe.coe(CoeService.SDO_RESPONSE, bytes([coe.SCS_DOWNLOAD_SEGMENT << 5 | toggle])
                       + bytes(7))

    # -- uploads ----------------------------------------------------------------------------

    def _upload_initiate(self, command: int, body: bytes) -> bytes:
        index, subindex = struct.unpack_from("<HB", body + bytes(4), 1)
        complete = bool(command & coe.COMPLETE_ACCESS)
        self._upload = None
        data = self.od.upload(index, subindex, complete)
        if 0 < len(data) <= 4 and not complete:
            spec = coe.SCS_UPLOAD_INITIATE << 5 | (4 - len(data)) << 2 | coe.EXPEDITED \
                | coe.SIZE_INDICATED
            return self._response(spec, index, subindex, data + bytes(4 - len(data)))
        room = self.mailbox_size - MAILBOX_HEADER - INITIATE_OVERHEAD
        first, rest = data[:room], data[room:]
        if rest:
            self._upload = _Transfer(index, subindex, complete, bytearray(rest))
        spec = coe.SCS_UPLOAD_INITIATE << 5 | coe.SIZE_INDICATED
        return self._response(spec, index, subindex, struct.pack("<I", len(data)) + first)

    def _upload_segment(self, command: int) -> bytes:
        transfer = self._upload
        if transfer is None:
            raise SdoAbort(coe.ABORT_COMMAND)
        toggle = command & coe.TOGGLE
        if toggle != transfer.toggle:
            raise SdoAbort(coe.ABORT_TOGGLE)
        room = self.mailbox_size - MAILBOX_HEADER - SEGMENT_OVERHEAD
        chunk, transfer.data = bytes(transfer.data[:room]), transfer.data[room:]
        transfer.toggle ^= coe.TOGGLE
        last = not transfer.data
        spec = coe.SCS_UPLOAD_SEGMENT << 5 | toggle | (coe.LAST_SEGMENT if last else 0)
        if last:
            self._upload = None
        if len(chunk) < 7:  # a short segment fills 7 bytes and says how many are unused
            spec |= (7 - len(chunk)) << 1
            chunk += bytes(7 - len(chunk))
        return coe.coe(CoeService.SDO_RESPONSE, bytes([spec]) + chunk)
