"""KRaft snapshot files (``<20-digit end offset>-<10-digit epoch>.checkpoint``) and bootstrap.checkpoint.

A snapshot is a sequence of batches: a control batch with the
SnapshotHeaderRecord (followed, for kraft.version 1, by KRaftVersionRecord and
VotersRecord in the same batch), data batches of metadata records, and a control
batch with the SnapshotFooterRecord. It is written to ``NAME.part``, fsynced,
atomically renamed, and the directory fsynced, so a reader sees all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from engine.common.file_io import write_bytes_atomically
from engine.records.kio_codec import SnapshotFooterRecord, SnapshotHeaderRecord, i16, i64
from engine.records.metadata_record_serde import AnyRecord, ControlRecord, control_record, encode_record
from engine.records.record_batch import encode_entries

CHECKPOINT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".part"
BOOTSTRAP_FILE_NAME = "bootstrap.checkpoint"
DEFAULT_MAX_BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    end_offset: int  # offsets below this are contained in the snapshot
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{CHECKPOINT_SUFFIX}"


def parse_snapshot_name(name: str) -> SnapshotId | None:
    """The snapshot id in a file name, or None if the name is not a complete snapshot's."""
    if not name.endswith(CHECKPOINT_SUFFIX):
        return None
    stem = name[: -len(CHECKPOINT_SUFFIX)]
    offset, dash, epoch = stem.partition("-")
    if dash and len(offset) == 20 and len(epoch) == 10 and offset.isdigit() and epoch.isdigit():
        return SnapshotId(int(offset), int(epoch))
    return None


class SnapshotBuilder:
    """A snapshot file's bytes, built a few records at a time.

    A controller snapshots an image of a million partitions (over 100 MB); encoding it in one
    call would stop its event loop for tens of seconds, long enough to lose the leadership.
    The image is immutable, so the records can be fed in slices between other work (``add``
    returns after ``max_records``) and the result is the same as one ``snapshot_bytes`` call.
    """

    def __init__(self, *, epoch: int, last_contained_log_timestamp_ms: int, now_ms: int,
                 kraft_control: Sequence[ControlRecord] = (), max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES):
        self._epoch = epoch
        self._now_ms = now_ms
        self._max_batch_bytes = max_batch_bytes
        self._out = bytearray()
        self._offset = 0
        self._pending: list[tuple[bytes | None, bytes | None]] = []
        self._pending_bytes = 0
        header = SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(last_contained_log_timestamp_ms))
        # Kafka puts the header and the kraft.version/voters records in one control batch.
        self._emit([encode_record(control_record(header))] + [encode_record(r) for r in kraft_control], control=True)

    @property
    def size_bytes(self) -> int:
        return len(self._out) + self._pending_bytes

    def _emit(self, entries: list[tuple[bytes | None, bytes | None]], control: bool) -> None:
        self._out += encode_entries(self._offset, entries, epoch=self._epoch, timestamp_ms=self._now_ms,
                                    control=control)
        self._offset += len(entries)

    def add(self, records: Iterator[AnyRecord], max_records: int | None = None) -> bool:
        """Encode records from ``records`` (at most ``max_records``); False once it is exhausted."""
        return self.add_entries(map(encode_record, records), max_records)

    def add_entries(self, entries: Iterator[tuple[bytes | None, bytes | None]], max_entries: int | None = None) -> bool:
        """As ``add``, with records already encoded ((key, value), as ``encode_record`` gives them)."""
        pending, limit = self._pending, self._max_batch_bytes
        taken = 0
        for entry in entries:
            size = len(entry[1] or b"") + 8
            if pending and self._pending_bytes + size > limit:
                self._emit(pending, control=False)
                pending = self._pending = []
                self._pending_bytes = 0
            pending.append(entry)
            self._pending_bytes += size
            taken += 1
            if max_entries is not None and taken >= max_entries:
                return True
        return False

    def finish(self) -> bytes:
        """The whole file: the last data batch and the footer appended."""
        return bytes(self.finish_buffer())

    def finish_buffer(self) -> bytearray:
        """As ``finish``, the builder's own buffer rather than a copy: a snapshot writer about to
        write it out need not hold the file twice (at a million partitions, 124 MB more)."""
        if self._pending:
            self._emit(self._pending, control=False)
            self._pending, self._pending_bytes = [], 0
        self._emit([encode_record(control_record(SnapshotFooterRecord(version=i16(0))))], control=True)
        return self._out


def snapshot_bytes(
    records: Iterable[AnyRecord],
    *,
    epoch: int,
    last_contained_log_timestamp_ms: int,
    now_ms: int,
    kraft_control: Sequence[ControlRecord] = (),
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> bytes:
    """The bytes of a whole snapshot file."""
    builder = SnapshotBuilder(epoch=epoch, last_contained_log_timestamp_ms=last_contained_log_timestamp_ms,
                              now_ms=now_ms, kraft_control=kraft_control, max_batch_bytes=max_batch_bytes)
    builder.add(iter(records))
    return builder.finish()


def write_snapshot(
    directory: Path,
    snapshot_id: SnapshotId,
    records: Iterable[AnyRecord],
    *,
    last_contained_log_timestamp_ms: int,
    now_ms: int,
    kraft_control: Sequence[ControlRecord] = (),
    fsync: bool = True,
) -> Path:
    data = snapshot_bytes(records, epoch=snapshot_id.epoch,
                          last_contained_log_timestamp_ms=last_contained_log_timestamp_ms,
                          now_ms=now_ms, kraft_control=kraft_control)
    return write_bytes_atomically(Path(directory) / snapshot_id.file_name, data, temp_suffix=PARTIAL_SUFFIX,
                                  fsync=fsync)


def write_bootstrap_checkpoint(directory: Path, records: Iterable[AnyRecord], *, now_ms: int) -> Path:
    """``bootstrap.checkpoint``: the feature levels a new cluster starts with, in snapshot form."""
    data = snapshot_bytes(records, epoch=0, last_contained_log_timestamp_ms=0, now_ms=now_ms)
    return write_bytes_atomically(Path(directory) / BOOTSTRAP_FILE_NAME, data)
