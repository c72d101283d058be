"""Log segment files (``<20-digit base offset>.log``): scanning, recovery, appending.

Recovery rule: when a segment's bytes stop parsing, the damage is a *torn tail*
(a crash in the middle of a write) only if nothing valid can follow it: the bad
batch claims to run to or past the end of the file, or everything after the
last good batch is zero fill. Then the tail is cut off and reported. Anything
else is corruption before the tail: an error naming file and byte offset, and
nothing is truncated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from engine.errors import CorruptRecordError, MetadataError, StorageError
from engine.record_batch import decode_batch, peek_batch_extent

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


def scan_segment(buf: bytes | memoryview, path: str) -> SegmentScan:
    """Validate every batch; classify the first bad one as a torn tail or raise."""
    pos = 0
    count = 0
    next_offset = None
    while pos < len(buf):
        try:
            batch, end = decode_batch(buf, pos)
        except MetadataError as exc:
            error = exc.at(path=path)
            if is_torn_tail(buf, pos):
                return SegmentScan(pos, count, next_offset, error)
            raise error from None
        if next_offset is not None and batch.base_offset < next_offset:
            raise CorruptRecordError(
                f"batch base offset {batch.base_offset} goes back (expected >= {next_offset})",
                path=path, byte_offset=pos)
        count += 1
        next_offset = batch.last_offset + 1
        pos = end
    return SegmentScan(pos, count, next_offset, None)


def is_torn_tail(buf: bytes | memoryview, pos: int) -> bool:
    extent = peek_batch_extent(buf, pos)
    if extent is None or extent >= len(buf):
        return True
    return not any(bytes(buf[pos:]))


def read_segment_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
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
