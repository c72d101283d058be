"""Log segment files (``<20-digit base offset>.log``): scanning, recovery, appending.

Recovery rule: when a segment's bytes stop parsing, the damage is a *torn tail*
(a crash in the middle of a write) only if no complete, CRC-valid batch starts
anywhere after it — a half-written batch, a length that runs past the end, zero
fill. Then the tail is cut off and reported. If a valid batch follows, the log
goes on past the damage: that is corruption, an error naming file and byte
offset, and nothing is truncated.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from engine.common.errors import CorruptRecordError, MetadataError, StorageError
from engine.records.kio_codec import crc32c
from engine.records.record_batch import HEADER_SIZE, RecordBatch, decode_batch, peek_batch_extent

LOG_SUFFIX = ".log"


def segment_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{LOG_SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset in a segment file name, or None if it is not one."""
    stem, dot, suffix = name.partition(".")
    if dot and "." + suffix == LOG_SUFFIX and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


@dataclass(frozen=True, slots=True)
class SegmentScan:
    """What a full validation of a segment found."""

    valid_bytes: int
    batch_count: int
    next_offset: int | None  # one past the last valid batch's last offset
    tail_error: MetadataError | None  # why the bytes after valid_bytes are a torn tail

    @property
    def has_torn_tail(self) -> bool:
        return self.tail_error is not None


TornTailHandler = Callable[[int, MetadataError], None]


def iter_batches(buf: bytes | memoryview, path: str, *, decode_records: bool = True,
                 on_torn_tail: TornTailHandler | None = None, start: int = 0) -> Iterator[tuple[int, RecordBatch, int]]:
    """(position, batch, end position) for every batch of a file's bytes from byte ``start``: the
    one batch loop.

    Damage raises an error naming ``path`` and the byte offset. With ``on_torn_tail``, a
    torn tail (see is_torn_tail) instead ends the iteration and is reported to it.
    """
    pos = start
    while pos < len(buf):
        try:
            batch, end = decode_batch(buf, pos, decode_records=decode_records)
        except MetadataError as exc:
            error = exc.at(path=path)
            if on_torn_tail is not None and is_torn_tail(buf, pos):
                on_torn_tail(pos, error)
                return
            raise error from None
        yield pos, batch, end
        pos = end


def scan_segment(buf: bytes | memoryview, path: str) -> SegmentScan:
    """Validate every batch (lengths, magic, CRC, offsets going forward); a torn tail is
    reported in the result, any other damage raises."""
    torn: list[tuple[int, MetadataError]] = []
    count, valid_bytes, next_offset = 0, 0, None
    for pos, batch, end in iter_batches(buf, path, decode_records=False,
                                        on_torn_tail=lambda at, err: torn.append((at, err))):
        if next_offset is not None and batch.base_offset < next_offset:
            raise CorruptRecordError(
                f"batch base offset {batch.base_offset} goes back (expected >= {next_offset})",
                path=path, byte_offset=pos)
        count, valid_bytes, next_offset = count + 1, end, batch.last_offset + 1
    return SegmentScan(valid_bytes, count, next_offset, torn[0][1] if torn else None)


def is_torn_tail(buf: bytes | memoryview, pos: int) -> bool:
    """Whether the bad bytes from ``pos`` on are a write cut short, not damage inside the log.

    A crash mid-write leaves garbage only at the end: so if any complete, CRC-valid batch
    starts after ``pos``, the log goes on past the damage and this is corruption. So is
    damage too costly to search (see find_next_valid_batch): nothing is cut unproven.
    """
    return find_next_valid_batch(buf, pos + 1) is None


# The CRC work a search may do, in multiples of the bytes searched (at least 1 MiB). Checking a
# candidate costs its claimed length, and crafted bytes (a file of 0x02s) make every position a candidate
# claiming most of the file: unbounded, the search would hash the file once per byte.
SEARCH_CRC_FACTOR = 4
_CANDIDATE_COST = 256


def find_next_valid_batch(buf: bytes | memoryview, start: int) -> int | None:
    """The position of the first complete, CRC-valid batch at or after ``start``, if any.

    When the candidates would need more hashing than SEARCH_CRC_FACTOR times the bytes after
    ``start``, the search stops and answers ``start`` (a batch may follow): bytes like these
    are not a write cut short.
    """
    data = bytes(buf) if isinstance(buf, memoryview) else buf
    budget = SEARCH_CRC_FACTOR * max(len(data) - start, 1 << 20)
    magic_at = data.find(b"\x02", start + 16)
    while magic_at != -1:
        candidate = magic_at - 16  # the magic byte stands 16 bytes into a batch
        extent = peek_batch_extent(data, candidate)
        fits = extent is not None and candidate + HEADER_SIZE <= extent <= len(data)
        # a candidate's own look costs too (0x02s everywhere, their lengths never fitting): as much
        # as hashing 256 bytes, about the spacing of 0x02s in real records
        budget -= _CANDIDATE_COST + (extent - candidate if fits else 0)
        if budget < 0:
            return start
        if fits:
            (crc,) = struct.unpack_from(">I", data, candidate + 17)
            if crc32c(data[candidate + 21:extent]) == crc:
                return candidate
        magic_at = data.find(b"\x02", magic_at + 1)
    return None


def read_segment_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise StorageError("no such file", path=str(path)) from None
    except OSError as exc:
        raise StorageError(f"cannot read segment: {exc.strerror}", path=str(path)) from None


class SegmentWriter:
    """Appends encoded batches to one segment file; the caller decides when to fsync."""

    def __init__(self, path: Path, base_offset: int, size_bytes: int, next_offset: int):
        self.path = path
        self.base_offset = base_offset
        self.size_bytes = size_bytes
        self.next_offset = next_offset
        self._file = open(path, "ab")

    def append(self, batch_bytes: bytes, next_offset: int) -> None:
        self._file.write(batch_bytes)
        self.size_bytes += len(batch_bytes)
        self.next_offset = next_offset

    def flush(self, fsync: bool) -> None:
        self._file.flush()
        if fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            self._file.close()


def truncate_file(path: Path, size_bytes: int) -> None:
    """Cut a file to ``size_bytes`` and make the cut durable."""
    with open(path, "r+b") as handle:
        handle.truncate(size_bytes)
        handle.flush()
        os.fsync(handle.fileno())
