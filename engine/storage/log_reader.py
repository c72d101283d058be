"""One reader for every metadata source: a segment, a snapshot, or a whole log directory.

It yields LogEntry values (offset, leader epoch, timestamp, record). Reading is
read-only and lock-free, so the directory of a running node can be read: a
segment being appended to is read up to its last complete batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple

from engine.common.errors import CorruptRecordError, MetadataError, StorageError
from engine.storage.log_segment import TornTailHandler, iter_batches, parse_segment_name, read_segment_bytes
from engine.records.compression import NONE
from engine.records.metadata_record_serde import AnyRecord, FAST_READER_TABLE, decode_record
from engine.records.record_batch import HEADER_SIZE, RecordBatch, decode_batch
from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME, SnapshotId, parse_snapshot_name

METADATA_PARTITION_DIR = "__cluster_metadata-0"


class LogEntry(NamedTuple):
    """One record read from a file, where it stands in the log. (A NamedTuple: built per record.)"""

    offset: int  # log offset; for a snapshot's records, the offset inside the snapshot file
    leader_epoch: int
    timestamp_ms: int
    record: AnyRecord
    control: bool = False
    in_snapshot: bool = False


@dataclass(frozen=True, slots=True)
class LogDirListing:
    """The files of a ``__cluster_metadata-0`` directory that matter, sorted."""

    path: Path
    segments: tuple[tuple[int, Path], ...]  # (base offset, path)
    snapshots: tuple[tuple[SnapshotId, Path], ...]

    @property
    def latest_snapshot(self) -> tuple[SnapshotId, Path] | None:
        return self.snapshots[-1] if self.snapshots else None


def entries_of_batch(batch: RecordBatch, in_snapshot: bool = False) -> Iterator[LogEntry]:
    control = batch.is_control
    base_offset, base_ts, epoch = batch.base_offset, batch.base_timestamp, batch.partition_leader_epoch
    for record in batch.records:
        yield LogEntry(base_offset + record.offset_delta, epoch, base_ts + record.timestamp_delta,
                       decode_record(record.key, record.value, control), control, in_snapshot)


def entries_in_place(buf, header: RecordBatch, start: int, end: int, record_count: int,
                      in_snapshot: bool) -> list[LogEntry] | None:
    """Decode an uncompressed data batch's metadata records straight from the file buffer.

    The hot path of every replay, written for speed: no intermediate record objects,
    no copies of values, varints of one or two bytes read inline, tuples built with
    tuple.__new__ (skipping the NamedTuple constructors' Python frames). Handles the
    record shape KRaft writes (null key, no headers, short varints, one timestamp for
    the whole batch, offsets counting up); returns None for anything else, and the caller takes the general path, which reports damage precisely.
    """
    base_offset, timestamp, epoch = header.base_offset, header.base_timestamp, header.partition_leader_epoch
    readers = FAST_READER_TABLE
    new = tuple.__new__
    entries = []
    append = entries.append
    pos = start
    try:
        while pos < end:
            b = buf[pos]
            if b < 0x80:
                length = b
                pos += 1
            else:
                c = buf[pos + 1]
                if c >= 0x80:
                    return None
                length = (b & 0x7F) | (c << 7)
                pos += 2
            body = pos
            if buf[pos + 1]:  # a timestamp delta: KRaft stamps a whole batch alike
                return None
            b = buf[pos + 2]  # buf[pos] is the record's attributes, unused
            if b < 0x80:
                offset_delta = b
                pos += 3
            else:
                c = buf[pos + 3]
                if c < 0x80:
                    offset_delta = (b & 0x7F) | (c << 7)
                    pos += 4
                else:  # a big snapshot batch: offsets past 8191 take three bytes
                    d = buf[pos + 4]
                    if d >= 0x80:
                        return None
                    offset_delta = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
                    pos += 5
            if buf[pos] != 1:  # a key
                return None
            b = buf[pos + 1]
            if b < 0x80:
                vlen = b
                pos += 2
            else:
                c = buf[pos + 2]
                if c >= 0x80:
                    return None
                vlen = (b & 0x7F) | (c << 7)
                pos += 3
            vend = pos + (vlen >> 1)
            if (vlen | length | offset_delta) & 1 or buf[vend] or vend + 1 - body != (length >> 1):
                return None  # a null value, negative lengths or deltas, headers, or lengths that disagree
            # the value: frame version 1, one-byte api key and version, then the message
            if buf[pos] != 1 or buf[pos + 2] >= 64:
                return None
            # bounds walk, then kio (engine.records.bounds_check); unknown types read as None
            message = readers[(buf[pos + 1] << 6) | buf[pos + 2]](buf, pos + 3, vend)
            if message is None:
                return None
            append(new(LogEntry, (base_offset + (offset_delta >> 1), epoch, timestamp,
                                  message, False, in_snapshot)))
            pos = vend + 1
    except Exception:  # noqa: BLE001 - any surprise: the general path decodes and reports
        return None
    if pos != end or len(entries) != record_count:
        return None
    return entries


def read_batches(path: Path, *, on_torn_tail: TornTailHandler | None = None) -> Iterator[tuple[int, RecordBatch]]:
    """(byte position, batch) for a segment or snapshot file; strict unless ``on_torn_tail``."""
    for pos, batch, _ in iter_batches(read_segment_bytes(path), str(path), on_torn_tail=on_torn_tail):
        yield pos, batch


def read_batch_headers(path: Path) -> Iterator[tuple[int, RecordBatch]]:
    """(byte position, batch without its records) for every batch of a file: CRCs checked,
    records not decoded. For scans that need only offsets and epochs."""
    for pos, header, _ in iter_batches(read_segment_bytes(path), str(path), decode_records=False):
        yield pos, header


def is_snapshot_file(path: Path) -> bool:
    return parse_snapshot_name(path.name) is not None or path.name == BOOTSTRAP_FILE_NAME


def read_file(path: Path, *, on_torn_tail: TornTailHandler | None = None,
              snapshot: bool | None = None) -> Iterator[LogEntry]:
    """Every record of a segment or snapshot file, decoded.

    A snapshot (by its name, or ``snapshot=True``) must run from its SnapshotHeader to its
    SnapshotFooter: one that does not was cut short, and reading it ends in an error
    naming the file.
    """
    path = Path(path)
    if path.is_dir():
        raise StorageError("is a directory, not a segment or snapshot file", path=str(path))
    snapshot = is_snapshot_file(path) if snapshot is None else snapshot
    last = None
    try:
        for entries in entries_by_batch(path, on_torn_tail, snapshot):
            if snapshot and last is None and entries and entries[0].record.type_name != "SNAPSHOT_HEADER":
                raise StorageError(f"not a readable snapshot: no SnapshotHeader (its first record is a "
                                   f"{entries[0].record.type_name}, where a snapshot's is its SnapshotHeader)",
                                   path=str(path), byte_offset=0)
            if entries:
                last = entries[-1]
            yield from entries
    except CorruptRecordError as exc:
        if not snapshot:
            raise
        raise unreadable_snapshot(exc, path) from None
    if snapshot and last is None and path.stat().st_size == 0:
        # Kafka's snapshots always hold their SnapshotHeader and SnapshotFooter control records
        raise StorageError("not a readable snapshot: the file is empty", path=str(path))
    if snapshot and (last is None or last.record.type_name != "SNAPSHOT_FOOTER"):
        raise StorageError("snapshot ends without a SnapshotFooter: cut short or not a snapshot",
                           path=str(path), byte_offset=path.stat().st_size)


def unreadable_snapshot(error: MetadataError, path: Path, what: str = "snapshot") -> StorageError:
    """A snapshot (or ``what``) whose batches do not read: said so first, then why in words (the raw
    reason alone, "absurd batch length -1460230223", says little to an operator)."""
    return StorageError(f"not a readable {what}: {in_words(error.reason)}", path=str(path),
                        byte_offset=error.byte_offset)


def in_words(reason: str) -> str:
    """A batch's damage (a decode_batch reason) said in words an operator reads."""
    if reason.startswith("absurd batch length"):
        claimed = reason.rsplit(" ", 1)[-1]
        return (f"the record batch there claims a length of {claimed} bytes, which no batch has: the file "
                "is not Kafka record batches, or is damaged")
    if reason.startswith("truncated"):
        return f"the file ends inside a record batch ({reason}): it was cut short"
    if reason.startswith("batch CRC mismatch"):
        return f"a record batch fails its checksum ({reason}): the file is damaged"
    if "magic" in reason:
        return f"the bytes there are not Kafka's record batch format v2 ({reason})"
    return f"a record batch there does not read ({reason})"


def entries_by_batch(path: Path, on_torn_tail: TornTailHandler | None,
                     in_snapshot: bool, begin: int | None = None) -> Iterator[list[LogEntry]]:
    """The decoded records of a file, a list per batch (fewer generator hops than per record);
    with ``begin``, from the first batch holding an offset at or past it (see first_batch_at)."""
    buf = read_segment_bytes(path)
    start = first_batch_at(buf, begin) if begin is not None else 0
    for _, entries in batches_of_bytes(buf, str(path), on_torn_tail, in_snapshot, start):
        yield entries


def first_batch_at(buf: bytes | memoryview, begin: int) -> int:
    """The byte position of the first batch whose last offset is at or past ``begin``. The batches
    before it are walked by their headers only, their CRCs unchecked: a replay that starts after a
    batch never needs its records, and damage inside them leaves the header's length, the walk's
    step, intact. A header that does not read (its length cannot be trusted) ends the walk there:
    the reading from that position reports it (or tolerates it as a torn tail)."""
    pos = 0
    while pos < len(buf):
        try:
            header, end = decode_batch(buf, pos, verify_crc=False, decode_records=False)
        except MetadataError:
            return pos
        if header.last_offset >= begin:
            return pos
        pos = end
    return pos


def batches_of_bytes(buf: bytes | memoryview, where: str, on_torn_tail: TornTailHandler | None,
                     in_snapshot: bool, start: int = 0) -> Iterator[tuple[RecordBatch, list[LogEntry]]]:
    """(batch header, its decoded records) for every batch of a file's or a Fetch answer's bytes
    from byte ``start``; damage raises an error naming ``where``."""
    for pos, header, end in iter_batches(buf, where, decode_records=False, on_torn_tail=on_torn_tail, start=start):
        entries = None
        if header.compression == NONE and not header.is_control:
            count = int.from_bytes(buf[pos + HEADER_SIZE - 4:pos + HEADER_SIZE], "big", signed=True)
            entries = entries_in_place(buf, header, pos + HEADER_SIZE, end, count, in_snapshot)
        if entries is None:
            try:
                batch, _ = decode_batch(buf, pos, verify_crc=False)  # the CRC was checked above
            except MetadataError as exc:
                raise exc.at(path=where) from None
            entries = list(entries_of_batch(batch, in_snapshot))
        yield header, entries


def resolve_metadata_dir(path: Path) -> Path:
    """Accept a node's log directory or its ``__cluster_metadata-0`` directory."""
    path = Path(path)
    if not path.exists():
        raise StorageError("no such directory", path=str(path))
    if not path.is_dir():
        raise StorageError("not a directory", path=str(path))
    if (path / METADATA_PARTITION_DIR).is_dir():
        return path / METADATA_PARTITION_DIR
    if path.name.startswith("__cluster_metadata") or _has_log_files(path):
        return path
    raise StorageError(f"not a metadata log directory (no {METADATA_PARTITION_DIR}, segments or snapshots)",
                       path=str(path))


def _has_log_files(path: Path) -> bool:
    return any(parse_segment_name(p.name) is not None or parse_snapshot_name(p.name) is not None
               for p in path.iterdir())


def list_log_dir(path: Path) -> LogDirListing:
    """Segments and complete snapshots, sorted. Other files (indexes, producer snapshots,
    ``.part`` and ``.deleted`` leftovers) are not metadata and are passed over."""
    directory = resolve_metadata_dir(path)
    segments, snapshots = [], []
    for child in directory.iterdir():
        base = parse_segment_name(child.name)
        if base is not None:
            segments.append((base, child))
            continue
        snapshot_id = parse_snapshot_name(child.name)
        if snapshot_id is not None:
            snapshots.append((snapshot_id, child))
    return LogDirListing(directory, tuple(sorted(segments)), tuple(sorted(snapshots)))


def read_log_dir(path: Path, *, use_snapshot: bool = True,
                 on_torn_tail: TornTailHandler | None = None) -> Iterator[LogEntry]:
    """The newest snapshot's records, then the segments' records after it.

    Records at or past the snapshot's end offset come from the segments. The active
    segment's torn tail (a write in progress, or a crash's leftover) is not read; it is
    reported to ``on_torn_tail`` when one is given.
    """
    listing = list_log_dir(path)
    start_offset = 0
    latest = listing.latest_snapshot if use_snapshot else None
    if latest is not None:
        snapshot_id, snapshot_path = latest
        yield from read_file(snapshot_path)
        start_offset = snapshot_id.end_offset
    for index, (base, segment_path) in enumerate(listing.segments):
        is_last = index == len(listing.segments) - 1
        nxt = listing.segments[index + 1][0] if not is_last else None
        if nxt is not None and nxt <= start_offset:
            continue  # wholly before the snapshot
        try:
            tolerate = (on_torn_tail or _ignore_torn_tail) if is_last else None
            for entries in entries_by_batch(segment_path, tolerate, False):
                if entries and entries[0].offset >= start_offset:
                    yield from entries
                else:
                    yield from (entry for entry in entries if entry.offset >= start_offset)
        except StorageError:
            if not segment_path.exists():  # deleted by the running node's retention meanwhile
                continue
            raise


def _ignore_torn_tail(position: int, error: MetadataError) -> None:
    """A running node's active segment often ends in a batch still being written."""
