"""What ``kraftd dump-log`` prints: segments and snapshots as ``kafka-dump-log --cluster-metadata-decoder``
prints them. A library, shared by the command line and the fuzzer.

A file is printed in spans of whole batches (``span_text``): each span is one block of text, one
write, and for a large file the spans are printed by forked workers (engine.admin.dump_workers)
and written here in order. What a batch prints is engine.admin.dump_text's."""

from __future__ import annotations

import struct
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from engine.common.errors import CorruptRecordError, MetadataError, StorageError
from engine.storage.log_reader import in_words, is_snapshot_file, list_log_dir
from engine.storage.log_segment import parse_segment_name, read_segment_bytes
from engine.records.record_batch import LOG_OVERHEAD, RecordBatch, decode_batch
from engine.admin.dump_records import plain_batch
from engine.admin.dump_workers import PARALLEL_FROM_BYTES, span_bounds, spans_in_workers
from engine.admin.dump_text import batch_line, batch_text, last_control_type, record_lines  # noqa: F401 - re-exported
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
               skip_record_metadata: bool = False, write: Callable[[str], None] | None = None,
               workers: int = 1) -> int:
    """Dump every file; returns the record count. Raises, after printing everything, one error
    naming the first damage met (see dump_file), else the first record that could only be shown raw.

    ``out`` is given one line at a time; with ``write``, the text goes there instead, in blocks of
    whole lines (each ending in a newline), which is what a fast dump to stdout wants. With
    ``workers`` > 1, large files are printed by that many forked processes (engine.admin.dump_workers);
    the text is the same."""
    write = write or _by_lines(out)
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
        records += dump_file(path, write, skip_record_metadata=skip_record_metadata,
                             empty_ok=not explicit or len(files) > 1, unreadable=unreadable, damaged=damaged,
                             workers=workers)
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


def dump_file(path: Path, write: Callable[[str], None], *, skip_record_metadata: bool = False,
              empty_ok: bool = False, unreadable: list[Unreadable] | None = None,
              damaged: list[MetadataError] | None = None, workers: int = 1) -> int:
    """Print one file to ``write`` (blocks of whole lines); returns the number of records. Records shown raw are added to ``unreadable``.
    An empty segment is fine where ``empty_ok`` (Kafka's active segment starts empty); a snapshot
    must end in its footer.

    Damage is met as kafka-dump-log meets it: a batch failing its CRC is printed with
    ``isvalid: false`` and the dump goes on; bytes that end before the batch they start (a torn
    tail, or a length running past the end) end the file with Kafka's ``Found N invalid bytes at
    the end of NAME``. Either is added to ``damaged`` (without it: raised once the file is printed),
    so the exit code says what Kafka's does not. Damage Kafka's tool stops at (a length too short to
    be a batch, records that do not parse) raises at once, after the batches before it. The file is
    only read."""
    banner = file_banner(path)
    write(f"Dumping {path}\n" + (f"{banner}\n" if banner else ""))
    buf = read_segment_bytes(path)
    if not buf:
        if empty_ok and parse_segment_name(path.name) is not None:
            return 0
        raise StorageError("empty file: no record batches", path=str(path), byte_offset=0)
    found: list[MetadataError] = [] if damaged is None else damaged
    before = len(found)
    count = 0
    last_type = None
    with closing(_spans(buf, path, skip_record_metadata, workers)) as spans:  # closing: stops the workers
        for span in spans:
            write(span.text)
            count += span.count
            if span.batches:
                last_type = span.last_type
            if unreadable is not None:
                unreadable.extend(span.unreadable)
            found.extend(span.damaged)
            if span.error is not None:
                raise span.error
            if span.stopped_early:  # the file ended for Kafka's reader there (invalid bytes at the end)
                break
    if damaged is None and found:
        raise found[0]
    if len(found) == before and is_snapshot_file(path) and last_type != "SNAPSHOT_FOOTER":
        raise StorageError("snapshot ends without a SnapshotFooter: cut short or not a snapshot",
                           path=str(path), byte_offset=len(buf))
    return count


def _spans(buf: bytes, path: Path, skip_record_metadata: bool, workers: int) -> Iterator[Span]:
    """The file's spans in order, printed here or, for a large file, by forked workers."""
    bounds = span_bounds(buf)
    if workers > 1 and len(buf) >= PARALLEL_FROM_BYTES and len(bounds) > 1:
        yield from spans_in_workers(span_text, buf, path, bounds, workers, skip_record_metadata)
        return
    for start, stop in bounds:
        span = span_text(buf, path, start, stop, skip_record_metadata)
        yield span
        if span.error is not None or span.stopped_early:
            return


def _by_lines(out: Callable[[str], None]) -> Callable[[str], None]:
    def write(text: str) -> None:
        for line in text[:-1].split("\n"):
            out(line)
    return write


@dataclass(frozen=True, slots=True)
class Span:
    """What one run of whole batches of a file prints, and what it met there."""

    text: str
    batches: int
    count: int  # records
    last_type: str | None  # of the last batch's last control record, if it was one
    unreadable: list[Unreadable]
    damaged: list[MetadataError]
    error: MetadataError | None  # damage the dump stops at, after ``text``
    stopped_early: bool  # Kafka's reader saw the end of the file before ``stop`` (invalid bytes)


def span_text(buf: bytes, path: Path, start: int, stop: int, skip_record_metadata: bool) -> Span:
    """The batches of ``buf`` (the whole file) from ``start`` up to ``stop`` (batch boundaries, or
    the end of the file), as dump_file prints them."""
    parts: list[str] = []
    unreadable: list[Unreadable] = []
    damaged: list[MetadataError] = []
    batches = count = 0
    last_type = None
    reached = [start]
    try:
        for position, batch, valid in _batches_as_kafka_reads_them(buf, path, parts.append, damaged, start, stop,
                                                                   reached):
            def collect(offset: int, reason: str, position: int = position) -> None:
                unreadable.append(Unreadable(path, position, offset, reason))

            parts.append(batch_text(batch, position, valid, skip_record_metadata, collect))
            batches += 1
            count += len(batch.records)
            last_type = last_control_type(batch)
    except MetadataError as exc:
        return Span("".join(parts), batches, count, last_type, unreadable, damaged, exc, True)
    ended = len(buf) if stop is None else stop
    return Span("".join(parts), batches, count, last_type, unreadable, damaged, None, reached[0] != ended)


def _batches_as_kafka_reads_them(buf: bytes, path: Path, out: Callable[[str], None],
                                 damaged: list[MetadataError], start: int = 0,
                                 stop: int | None = None,
                                 reached: list[int] | None = None) -> Iterator[tuple[int, RecordBatch, bool]]:
    """(position, batch, CRC valid) for each batch Kafka's FileRecords would hand its dump tool,
    from ``start`` up to ``stop``; ``reached[0]``: where the reading ended."""
    pos = start
    stop = len(buf) if stop is None else stop
    while pos < stop:
        read = _batch_at(buf, pos, path, out, damaged)
        if read is None:
            return
        batch, end, valid = read
        yield pos, batch, valid
        pos = end
        if reached is not None:
            reached[0] = pos


def _batch_at(buf: bytes, pos: int, path: Path, out: Callable[[str], None],
              damaged: list[MetadataError]) -> tuple[RecordBatch, int, bool] | None:
    """The batch at ``pos``, its end and whether its CRC holds; None where Kafka's iteration ends."""
    plain = plain_batch(buf, pos)  # the common case, read faster; anything else goes the general way
    if plain is not None:
        return plain[0], plain[1], True
    try:
        batch, end = decode_batch(buf, pos)
        return batch, end, True
    except CorruptRecordError as exc:
        error = exc.at(path=str(path))
    except MetadataError as exc:  # a codec this build cannot read, say: named with the file
        raise exc.at(path=str(path)) from None
    if _runs_past_the_end(buf, pos):
        out(f"Found {len(buf) - pos} invalid bytes at the end of {path.name}\n")
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
    out(batch_line(header, pos, False, count) + "\n")


def _runs_past_the_end(buf: bytes, pos: int) -> bool:
    """Where Kafka's batch iteration ends without an error (FileLogInputStream.nextBatch): too few
    bytes left for a batch's size and magic, or a size that is at least a record's overhead and
    runs past the end of the file."""
    remaining = len(buf) - pos
    if remaining <= _SIZE_AND_MAGIC:
        return True
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    return length >= _RECORD_OVERHEAD_V0 and LOG_OVERHEAD + length > remaining
