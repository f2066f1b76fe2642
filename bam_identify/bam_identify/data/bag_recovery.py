"""Recover a bag whose recording stopped without closing it (crash, power loss, kill -9).

Such a bag has no ``metadata.yaml`` and its MCAP file ends mid-record, with
no summary nor footer: rosbags (and ``ros2 bag play``) refuse it. MCAP is a
sequence of records (opcode: 1 byte, length: 8 bytes little-endian, content),
so every record written before the stop is intact. :func:`recover_bag` keeps
those, closes a copy of the file with a data-end record and a footer, and
writes a complete bag from it beside the original (never over it), as
``ros2 bag reindex`` would make the original readable again. Chunked messages
are recovered chunk by chunk: a chunk cut by the stop is lost with its
messages, and the recovery says how many bytes that was.

Only MCAP storage is recovered: sqlite3 bags are transactional and remain
readable up to their last commit.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rosbags.rosbag2 import Reader, Writer

from bam_identify.data.bag_folder import METADATA
from bam_identify.data.bag_topics import ROSBAG2_VERSION, STORAGES
from bam_identify.data.typestore import typestore
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.output_paths import check_output, publish, writing

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_DATA_END = 0x01, 0x02, 0x0F
# Records that are summary or footer material: where the data section ends.
_SUMMARY_OPS = {OP_FOOTER, OP_DATA_END}


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover_bag` did: the new bag, its messages per topic, bytes lost."""

    source: Path
    output: Path
    counts: dict[str, int]
    bytes_dropped: int

    def summary(self) -> str:
        topics = ", ".join(f"{t} {n}" for t, n in self.counts.items()) or "no messages"
        lost = (f"; the last {self.bytes_dropped} bytes were an incomplete record and are "
                "dropped" if self.bytes_dropped else "")
        return f"recovered {self.source} into {self.output}: {topics}{lost}"


def needs_recovery(path: Path) -> bool:
    """A bag folder with MCAP files but no metadata, or an MCAP file without its footer.

    A bag that holds nothing at all (a recording killed before its first write:
    empty MCAP files, or no MCAP header) is neither readable nor recoverable:
    a BamError says so, for every command that meets it (eval, fit, recover).
    """
    if path.is_dir():
        files = sorted(path.glob("*.mcap"))
        unclosed = not (path / METADATA).is_file() and bool(files)
    else:
        files = [path] if path.suffix == ".mcap" and path.is_file() else []
        unclosed = bool(files) and not _has_footer(path)
    if unclosed and not any(_has_header(f) for f in files):
        raise BamError(f"bag {path}: nothing was recorded in it (no MCAP header: the recording "
                       "was killed before it wrote anything); record it again")
    return unclosed


def _has_header(file: Path) -> bool:
    """Whether ``file`` starts with the MCAP magic and a whole header record."""
    with file.open("rb") as f:
        data = f.read(len(MAGIC) + 9)
        if len(data) < len(MAGIC) + 9 or not data.startswith(MAGIC) \
                or data[len(MAGIC)] != OP_HEADER:
            return False
        (length,) = struct.unpack_from("<Q", data, len(MAGIC) + 1)
        return f.seek(0, 2) >= len(MAGIC) + 9 + length


def recover_bag(path: str | Path, output: str | Path | None = None,
                cancel: Cancellation | None = None) -> Recovery:
    """Write the complete part of the unterminated bag ``path`` as a new bag ``output``
    (default: ``<path>_recovered``); the original is left as it is. ``cancel`` is checked
    at each file and each message: Cancelled leaves nothing behind."""
    path, cancel = Path(path), cancel or Cancellation()
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path]
    if not files or not all(f.suffix == ".mcap" for f in files):
        raise BamError(f"{path} holds no MCAP file to recover; give the folder of an "
                       "mcap recording or its .mcap file")
    if needs_recovery(path):  # a bag with nothing in it is refused, with why
        files = [f for f in files if _has_header(f)]  # the files the kill left empty hold none
    output = Path(output) if output else path.with_name(f"{path.stem}_recovered")
    if output.exists():
        raise BamError(f"{output} already exists; give another output")
    # A full disk is one line, the temporary folder removed (output_paths).
    with writing(output, "--output"), tempfile.TemporaryDirectory(dir=output.parent) as tmp:
        closed, dropped = [], 0
        for i, file in enumerate(files):
            cancel.check()
            target = Path(tmp) / f"part{i}.mcap"
            dropped += _close_copy(file, target)
            closed.append(target)
        counts = _rewrite(closed, Path(tmp) / "bag", cancel)
        # no-replace: a bag another command put there meanwhile is kept (output_paths)
        publish(Path(tmp) / "bag", output, "--output")
    return Recovery(path, output, counts, dropped)


def recover(bag: Path, output: Path | None = None, cancel: Cancellation | None = None) -> str:
    """What ``recover`` does: the new bag checked (not the bag itself, not over a file), the
    bag checked to be unterminated, then recovered; the recovery's summary."""
    output = output or bag.with_name(f"{bag.stem}_recovered")
    check_output(output, "--output", force=None, inputs=[("bag", bag)], folder=True)
    if not needs_recovery(bag):
        raise BamError(f"{bag} is not an unterminated mcap bag (it has its metadata and "
                       "end, or is not an mcap recording); nothing to recover")
    return recover_bag(bag, output, cancel).summary()


def _has_footer(file: Path) -> bool:
    with file.open("rb") as f:
        size = f.seek(0, 2)
        if size < 8 + 37:
            return False
        f.seek(-8, 2)
        return f.read(8) == MAGIC


def _close_copy(source: Path, target: Path) -> int:
    """Copy the complete records of ``source`` and close the copy; bytes dropped."""
    data = source.read_bytes()
    if not data.startswith(MAGIC):
        raise BamError(f"{source} is not an MCAP file (bad magic); it cannot be recovered")
    end = _complete_end(data, source)
    with target.open("wb") as f:
        f.write(data[:end])
        f.write(_record(OP_DATA_END, struct.pack("<I", 0)))  # no data-section CRC
        f.write(_record(OP_FOOTER, struct.pack("<QQI", 0, 0, 0)))  # no summary
        f.write(MAGIC)
    return len(data) - end


def _complete_end(data: bytes, source: Path) -> int:
    """Offset just past the last complete data record (header first)."""
    pos = len(MAGIC)
    if len(data) < pos + 9 or data[pos] != OP_HEADER:
        raise BamError(f"{source} has no MCAP header; nothing can be recovered")
    while pos + 9 <= len(data):
        op = data[pos]
        (length,) = struct.unpack_from("<Q", data, pos + 1)
        if op in _SUMMARY_OPS or pos + 9 + length > len(data):
            break
        pos += 9 + length
    return pos


def _record(op: int, content: bytes) -> bytes:
    return bytes([op]) + struct.pack("<Q", len(content)) + content


def _rewrite(files: list[Path], output: Path, cancel: Cancellation) -> dict[str, int]:
    """One complete bag from the closed MCAP files: same connections, every message."""
    counts: dict[str, int] = {}
    store = typestore()  # for connections whose stored definition or hash is missing
    with Writer(output, version=ROSBAG2_VERSION, storage_plugin=STORAGES["mcap"]) as writer:
        added: dict[tuple, object] = {}
        for file in files:
            try:
                reader = Reader(file)
                reader.open()
            except Exception as err:
                raise BamError(f"cannot recover {file.name}: {one_line(err)}") from None
            try:
                for conn, stamp, raw in reader.messages():
                    cancel.check()
                    key = (conn.topic, conn.msgtype)
                    if key not in added:
                        added[key] = writer.add_connection(
                            conn.topic, conn.msgtype, typestore=store,
                            msgdef=conn.msgdef.data or None, rihs01=conn.digest or None,
                            offered_qos_profiles=conn.ext.offered_qos_profiles)
                    writer.write(added[key], stamp, raw)
                    counts[conn.topic] = counts.get(conn.topic, 0) + 1
            finally:
                reader.close()
    return counts
