"""What ``kraftd dump-log`` prints: segments and snapshots as ``kafka-dump-log --cluster-metadata-decoder``
prints them. A library, shared by the command line and the fuzzer."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from engine.common.errors import CorruptRecordError, MetadataError, StorageError
from engine.storage.log_reader import in_words, is_snapshot_file, list_log_dir
from engine.storage.log_segment import parse_segment_name, read_segment_bytes
from engine.records.metadata_record_serde import ControlRecord, MetadataRecord, UnknownRecord, decode_record
from engine.records.record_batch import ATTR_DELETE_HORIZON, LOG_OVERHEAD, NO_SEQUENCE, RecordBatch, decode_batch
from engine.records.compression import codec_name
from engine.records.record_json import control_payload, record_to_json
from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME, parse_snapshot_name


# Kafka's batch iteration stops, reporting the rest as invalid bytes, with this many bytes or fewer
# left (a batch's offset, size and magic), or at a size past the end that is at least the smallest
# legacy record's (smaller sizes are its CorruptRecordException).
_SIZE_AND_MAGIC = 17
_RECORD_OVERHEAD_V0 = 14

# Files of a log directory that hold no record batches, and what they are.
_NOT_BATCHES = {
    ".index": "an offset index", ".timeindex": "a time index", ".txnindex": "a transaction index",
    ".snapshot": "a producer-state snapshot", ".part": "an unfinished snapshot",
    ".deleted": "a segment awaiting deletion",
}
_NOT_BATCH_NAMES = {
    "quorum-state": "the quorum state (JSON)", "leader-epoch-checkpoint": "a leader-epoch checkpoint",
    "partition.metadata": "the partition's metadata", "meta.properties": "a properties file",
}


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A record shown raw: unknown type or version, or bytes that do not decode."""

    path: Path
    byte_offset: int  # of its batch
    offset: int
    reason: str


def not_batches(path: Path) -> str | None:
    """What a file is when it is a Kafka file that holds no record batches, else None."""
    if path.name in _NOT_BATCH_NAMES:
        return _NOT_BATCH_NAMES[path.name]
    return _NOT_BATCHES.get(path.suffix) if parse_segment_name(path.name) is None else None


def expand_paths(paths: Iterable[str]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for each argument; a directory stands for its snapshots and
    segments, in order."""
    out: list[tuple[Path, bool]] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            listing = list_log_dir(path)
            out.extend((p, False) for _, p in listing.snapshots)
            out.extend((p, False) for _, p in listing.segments)
        elif not path.exists():
            raise StorageError("no such file", path=name)
        else:
            out.append((path, True))
    return out


def dump_files(paths: Iterable[str], out: Callable[[str], None], note: Callable[[str], None], *,
               skip_record_metadata: bool = False) -> int:
    """Dump every file; returns the record count. Raises, after printing everything, one error
    naming the first damage met (see dump_file), else the first record that could only be shown raw."""
    unreadable: list[Unreadable] = []
    damaged: list[MetadataError] = []
    dumped = records = 0
    files = expand_paths(paths)
    for path, explicit in files:
        kind = not_batches(path)
        if kind is not None:
            note(f"skipping {path}: {kind}, not record batches")
            continue
        # An empty segment among others is Kafka's fresh active segment; alone, it is all
        # that was asked for and there is nothing in it.
        records += dump_file(path, out, skip_record_metadata=skip_record_metadata,
                             empty_ok=not explicit or len(files) > 1, unreadable=unreadable, damaged=damaged)
        dumped += 1
    if not dumped:
        raise StorageError("no segment or snapshot among the files given")
    if damaged:
        more = f" (and damage in {len(damaged) - 1} more places)" if len(damaged) > 1 else ""
        first = damaged[0]
        raise type(first)(f"{_worded(first).reason}{more}", path=first.path, byte_offset=first.byte_offset)
    if unreadable:
        first = unreadable[0]
        more = f" ({len(unreadable) - 1} more records shown raw)" if len(unreadable) > 1 else ""
        raise CorruptRecordError(f"record at offset {first.offset} shown raw: {first.reason}{more}",
                                 path=str(first.path), byte_offset=first.byte_offset)
    return records


def file_banner(path: Path) -> str | None:
    base = parse_segment_name(path.name)
    if base is not None:
        return f"Log starting offset: {base}"
    if path.name == BOOTSTRAP_FILE_NAME:
        return "KRaft bootstrap snapshot"
    snapshot_id = parse_snapshot_name(path.name)
    if snapshot_id is not None:
        return f"Snapshot end offset: {snapshot_id.end_offset}, epoch: {snapshot_id.epoch}"
    return None


def batch_line(batch: RecordBatch, position: int, valid: bool = True, count: int | None = None) -> str:
    """Kafka's batch line; ``count``: the header's record count, for a batch whose records are not decoded."""
    base_seq = batch.base_sequence
    last_seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else base_seq + batch.last_offset_delta
    horizon = (str(batch.base_timestamp) if batch.attributes & ATTR_DELETE_HORIZON else "OptionalLong.empty")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {len(batch.records) if count is None else count} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon} position: {position} {batch.timestamp_type}: {batch.max_timestamp} "
            f"size: {batch.size_bytes} magic: 2 compresscodec: {codec_name(batch.compression)} "
            f"crc: {batch.crc} isvalid: {_bool(valid)}")


def record_lines(batch: RecordBatch, skip_record_metadata: bool,
                 on_unreadable: Callable[[int, str], None] = lambda offset, reason: None) -> Iterable[str]:
    for record in batch.records:
        decoded = decode_record(record.key, record.value, batch.is_control)
        if isinstance(decoded, UnknownRecord) and decoded.problem:
            on_unreadable(batch.record_offset(record), decoded.reason)
        if skip_record_metadata and batch.is_control:
            yield ""  # Kafka's tool skips control records then, but still ends their (empty) line
            continue
        # Without the metadata, "| payload: {...}" as Kafka 4.3 prints it (4.1's tool dropped the "|" too).
        parts = ["|"]
        if not skip_record_metadata:
            seq = NO_SEQUENCE if batch.base_sequence == NO_SEQUENCE else batch.base_sequence + record.offset_delta
            headers = ",".join(k.decode("utf-8", "replace") for k, _ in record.headers)
            parts.append(f"offset: {batch.record_offset(record)} {batch.timestamp_type}: "
                         f"{batch.record_timestamp(record)} keySize: {_size(record.key)} "
                         f"valueSize: {_size(record.value)} sequence: {seq} headerKeys: [{headers}]")
        if isinstance(decoded, ControlRecord):
            parts.append(control_payload(decoded))
        elif isinstance(decoded, MetadataRecord) or not batch.is_control:
            parts.append(f"payload: {record_to_json(decoded)}")
        else:
            parts.append(f"controlRecord: {record_to_json(decoded)}")
        yield " ".join(parts)


def dump_file(path: Path, out: Callable[[str], None], *, skip_record_metadata: bool = False,
              empty_ok: bool = False, unreadable: list[Unreadable] | None = None,
              damaged: list[MetadataError] | None = None) -> int:
    """Print one file; returns the number of records. Records shown raw are added to ``unreadable``.
    An empty segment is fine where ``empty_ok`` (Kafka's active segment starts empty); a snapshot
    must end in its footer.

    Damage is met as kafka-dump-log meets it: a batch failing its CRC is printed with
    ``isvalid: false`` and the dump goes on; bytes that end before the batch they start (a torn
    tail, or a length running past the end) end the file with Kafka's ``Found N invalid bytes at
    the end of NAME``. Either is added to ``damaged`` (without it: raised once the file is printed),
    so the exit code says what Kafka's does not. Damage Kafka's tool stops at (a length too short to
    be a batch, records that do not parse) raises at once, after the batches before it. The file is
    only read."""
    out(f"Dumping {path}")
    banner = file_banner(path)
    if banner:
        out(banner)
    if path.stat().st_size == 0:
        if empty_ok and parse_segment_name(path.name) is not None:
            return 0
        raise StorageError("empty file: no record batches", path=str(path), byte_offset=0)
    found: list[MetadataError] = [] if damaged is None else damaged
    before = len(found)
    count = 0
    last_type = None
    for position, batch, valid in _batches_as_kafka_reads_them(path, out, found):
        out(batch_line(batch, position, valid))

        def collect(offset: int, reason: str, position: int = position) -> None:
            if unreadable is not None:
                unreadable.append(Unreadable(path, position, offset, reason))

        for line in record_lines(batch, skip_record_metadata, collect):
            out(line)
        count += len(batch.records)
        last_type = _last_control_type(batch)
    if damaged is None and found:
        raise found[0]
    if len(found) == before and is_snapshot_file(path) and last_type != "SNAPSHOT_FOOTER":
        raise StorageError("snapshot ends without a SnapshotFooter: cut short or not a snapshot",
                           path=str(path), byte_offset=path.stat().st_size)
    return count


def _batches_as_kafka_reads_them(path: Path, out: Callable[[str], None],
                                 damaged: list[MetadataError]) -> Iterator[tuple[int, RecordBatch, bool]]:
    """(position, batch, CRC valid) for each batch Kafka's FileRecords would hand its dump tool."""
    buf = read_segment_bytes(path)
    pos = 0
    while pos < len(buf):
        read = _batch_at(buf, pos, path, out, damaged)
        if read is None:
            return
        batch, end, valid = read
        yield pos, batch, valid
        pos = end


def _batch_at(buf: bytes, pos: int, path: Path, out: Callable[[str], None],
              damaged: list[MetadataError]) -> tuple[RecordBatch, int, bool] | None:
    """The batch at ``pos``, its end and whether its CRC holds; None where Kafka's iteration ends."""
    try:
        batch, end = decode_batch(buf, pos)
        return batch, end, True
    except CorruptRecordError as exc:
        error = exc.at(path=str(path))
    except MetadataError as exc:  # a codec this build cannot read, say: named with the file
        raise exc.at(path=str(path)) from None
    if _runs_past_the_end(buf, pos):
        out(f"Found {len(buf) - pos} invalid bytes at the end of {path.name}")
        damaged.append(error)
        return None
    if not error.reason.startswith("batch CRC mismatch"):
        raise _worded(error)
    damaged.append(error)
    try:
        batch, end = decode_batch(buf, pos, verify_crc=False)
    except MetadataError as inner:  # Kafka's tool prints the batch line, then fails on its records
        _print_header(buf, pos, out)
        raise _worded(CorruptRecordError(f"{error.reason}; its records do not parse ({inner.reason})",
                                         path=str(path), byte_offset=pos)) from None
    return batch, end, False


def _worded(error: MetadataError) -> MetadataError:
    """``error`` said in words (log_reader.in_words: "absurd batch length 1669679574" alone says
    little), the raw reason kept when the words do not carry it. Only stderr's line: stdout stays Kafka's."""
    words = in_words(error.reason)
    reason = words if error.reason in words else f"{words} ({error.reason})"
    return type(error)(reason, path=error.path, byte_offset=error.byte_offset)


def _print_header(buf: bytes, pos: int, out: Callable[[str], None]) -> None:
    """The batch line of a batch whose records do not decode, as far as its header reads."""
    try:
        header, _ = decode_batch(buf, pos, verify_crc=False, decode_records=False)
    except MetadataError:
        return
    (count,) = struct.unpack_from(">i", buf, pos + 57)
    out(batch_line(header, pos, False, count))


def _runs_past_the_end(buf: bytes, pos: int) -> bool:
    """Where Kafka's batch iteration ends without an error (FileLogInputStream.nextBatch): too few
    bytes left for a batch's size and magic, or a size that is at least a record's overhead and
    runs past the end of the file."""
    remaining = len(buf) - pos
    if remaining <= _SIZE_AND_MAGIC:
        return True
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    return length >= _RECORD_OVERHEAD_V0 and LOG_OVERHEAD + length > remaining


def _last_control_type(batch: RecordBatch) -> str | None:
    if not batch.is_control or not batch.records:
        return None
    last = batch.records[-1]
    return decode_record(last.key, last.value, True).type_name


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)
