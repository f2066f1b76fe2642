"""A CoE object dictionary (CiA 301 / ETG.1000.6): typed entries, access rights, SDO semantics.

:class:`ObjectDictionary` holds objects of subindexed :class:`Entry` values
and answers uploads and downloads as an SDO server must: unknown objects and
subindexes, reads of write-only and writes of read-only entries, wrong
lengths and out-of-range values end in :class:`SdoAbort` with the CiA 301
abort code; complete access reads and writes a whole object (subindex 0
padded to 16 bits, as ETG.1000.6 lays it out). A validator per object lets
the drive refuse what depends on its state (PDO mapping outside PRE-OP).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from bam_drivers.ethercat import coe
from bam_drivers.ethercat.coe import DataType


class SdoAbort(Exception):
    """An SDO request refused with a CiA 301 abort code."""

    def __init__(self, code: int) -> None:
        super().__init__(f"SDO abort 0x{code:08X}: {coe.abort_name(code)}")
        self.code = code


@dataclass
class Entry:
    """One subindex: type, value, access ("ro", "rw", "wo"), PDO direction it maps to."""

    name: str
    data_type: DataType
    value: int | str | bytes
    access: str = "ro"
    pdo: str | None = None  # "rx" (outputs) or "tx" (inputs)
    low: int | None = None
    high: int | None = None
    max_size: int = 0  # strings: longest accepted

    def raw(self) -> bytes:
        return coe.pack(self.data_type, self.value)

    @property
    def bits(self) -> int:
        return coe.type_size(self.data_type) * 8


Validator = Callable[[int, int, object], None]  # (index, subindex, new value); raises SdoAbort


@dataclass
class Obj:
    """An object: VAR (subindex 0 only) or ARRAY/RECORD (subindex 0 = highest subindex)."""

    index: int
    name: str
    entries: dict[int, Entry]
    validate: Validator | None = None
    compound: bool = field(default=False)


class ObjectDictionary:
    """The objects of a device, by index."""

    def __init__(self) -> None:
        self.objects: dict[int, Obj] = {}

    def add_var(self, index: int, name: str, data_type: DataType, value, access: str = "ro",
                **kw) -> Entry:
        entry = Entry(name, data_type, value, access, **kw)
        self.objects[index] = Obj(index, name, {0: entry})
        return entry

    def add_compound(self, index: int, name: str, entries: list[Entry],
                     count_access: str = "ro") -> Obj:
        """An ARRAY/RECORD: subindex 0 (UNSIGNED8) counts ``entries``, subindexes 1..n."""
        table = {0: Entry("number of entries", DataType.UNSIGNED8, len(entries), count_access,
                          low=0, high=len(entries))}
        table.update({i + 1: e for i, e in enumerate(entries)})
        obj = Obj(index, name, table, compound=True)
        self.objects[index] = obj
        return obj

    # -- local access (the device itself) ------------------------------------------------

    def get(self, index: int, subindex: int = 0):
        return self.objects[index].entries[subindex].value

    def set(self, index: int, subindex: int, value) -> None:
        self.objects[index].entries[subindex].value = value

    def entry(self, index: int, subindex: int) -> Entry:
        obj = self.objects.get(index)
        if obj is None:
            raise SdoAbort(coe.ABORT_NO_OBJECT)
        entry = obj.entries.get(subindex)
        if entry is None:
            raise SdoAbort(coe.ABORT_NO_SUBINDEX)
        return entry

    # -- SDO semantics -------------------------------------------------------------------

    def upload(self, index: int, subindex: int, complete: bool = False) -> bytes:
        """The bytes an SDO upload returns."""
        if complete:
            return self._upload_complete(index, subindex)
        entry = self.entry(index, subindex)
        if entry.access == "wo":
            raise SdoAbort(coe.ABORT_WRITE_ONLY)
        return entry.raw()

    def _upload_complete(self, index: int, subindex: int) -> bytes:
        obj = self.objects.get(index)
        if obj is None:
            raise SdoAbort(coe.ABORT_NO_OBJECT)
        if not obj.compound:
            return self.upload(index, 0)
        count = int(obj.entries[0].value)
        out = bytearray(struct.pack("<BB", count, 0)) if subindex == 0 else bytearray()
        for sub in range(1, count + 1):
            out += obj.entries[sub].raw()
        return bytes(out)

    def download(self, index: int, subindex: int, data: bytes, complete: bool = False) -> None:
        """Apply an SDO download, or raise SdoAbort leaving the object unchanged."""
        if complete:
            self._download_complete(index, subindex, data)
            return
        entry = self.entry(index, subindex)
        value = self._decode(entry, data)
        obj = self.objects[index]
        if obj.validate is not None:
            obj.validate(index, subindex, value)
        entry.value = value

    def _decode(self, entry: Entry, data: bytes):
        if entry.access == "ro":
            raise SdoAbort(coe.ABORT_READ_ONLY)
        if coe.is_string(entry.data_type):
            if len(data) > entry.max_size:
                raise SdoAbort(coe.ABORT_TOO_LONG)
            return coe.unpack(entry.data_type, data)
        size = coe.type_size(entry.data_type)
        if len(data) != size:
            raise SdoAbort(coe.ABORT_TOO_LONG if len(data) > size else coe.ABORT_TOO_SHORT)
        value = coe.unpack(entry.data_type, data)
        if entry.low is not None and value < entry.low:
            raise SdoAbort(coe.ABORT_VALUE_LOW)
        if entry.high is not None and value > entry.high:
            raise SdoAbort(coe.ABORT_VALUE_HIGH)
        return value

    def _download_complete(self, index: int, subindex: int, data: bytes) -> None:
        obj = self.objects.get(index)
        if obj is None:
            raise SdoAbort(coe.ABORT_NO_OBJECT)
        if not obj.compound or subindex > 1:
            raise SdoAbort(coe.ABORT_UNSUPPORTED_ACCESS)
        count, offset = (data[0], 2) if subindex == 0 else (int(obj.entries[0].value), 0)
        values = []
        for sub in range(1, count + 1):
            entry = obj.entries.get(sub)
            if entry is None:
                raise SdoAbort(coe.ABORT_TOO_LONG)
            size = coe.type_size(entry.data_type)
            if offset + size > len(data):
                raise SdoAbort(coe.ABORT_TOO_SHORT)
            values.append((sub, entry, self._decode(entry, data[offset:offset + size])))
            offset += size
        # As a master would: subindex 0 to 0, the entries, then the count.
        self.download(obj.index, 0, bytes([0]))
        for sub, entry, value in values:
            if obj.validate is not None:
                obj.validate(obj.index, sub, value)
            entry.value = value
        if subindex == 0:
            self.download(obj.index, 0, bytes([count]))
