"""Load an image from a snapshot file or a log directory, now or as of an offset or a time.

From a directory the loader starts at the newest snapshot at or before the point asked
for (or at the log's start when the log reaches back to offset 0), then replays the
segments up to that point. What it read from is reported in ``LoadInfo``, together
with the node's ``quorum-state`` and ``meta.properties`` when the directory has them.

``replay_start`` (where a replay of a directory begins: the starting image and offset) and
``segment_batches`` (the segments' batches from there) are shared with
engine.image.metadata_history, which keeps checkpoints for repeated questions.
Records of a metadata transaction still open where the replay stops are in no image, as
in Kafka (whose loader publishes nothing mid-transaction); a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Iterator

from engine.common.errors import CorruptRecordError, MetadataError, OffsetOutOfRange, StorageError
from engine.storage.log_reader import (
    LogDirListing, LogEntry, batches_of_bytes, entries_by_batch, entries_of_batch, is_snapshot_file, list_log_dir, read_file,
    resolve_metadata_dir, unreadable_snapshot,
)
from engine.storage.log_segment import iter_batches, read_segment_bytes
from engine.storage.meta_properties import MetaProperties, read_meta_properties
from engine.image.gc_pause import collector_paused
from engine.image.lazy_topics import lazy_topics_image
from engine.image.metadata_delta import MetadataDelta
from engine.image.snapshot_index import index_snapshot
from engine.image.index_in_two import index_snapshot_on_two
from engine.image.log_holes import HOLE_NOTE, LogHoleError, hole_error
from engine.image.metadata_image import MetadataImage, Provenance, QuorumImage
from engine.records.record_batch import decode_batch
from engine.storage.quorum_state_file import QuorumStateData, read_quorum_state
from engine.storage.snapshot_writer import SnapshotId, parse_snapshot_name


@dataclass(frozen=True, slots=True)
class LoadInfo:
    source: Path
    snapshot: SnapshotId | None = None  # the snapshot the image started from
    first_offset: int | None = None  # of the records replayed after it
    end_offset: int = 0  # one past the last record read
    log_end_offset: int = 0  # one past the last record the source holds
    quorum_state: QuorumStateData | None = None
    meta: MetaProperties | None = None
    skipped_records: int = 0
    notes: tuple[str, ...] = ()


def load_snapshot(path: Path) -> tuple[MetadataImage, LoadInfo]:
    """The image a snapshot file holds. A snapshot in Kafka's grouped shape is indexed in one
    pass and its topics' partitions decoded on first touch (engine.image.lazy_topics); any
    other file is replayed whole, as before."""
    path = Path(path)
    snapshot_id = _snapshot_id_of(path)
    lazy = None if path.is_dir() else image_of_snapshot_bytes(read_segment_bytes(path), str(path), snapshot_id,
                                                              processes=2)
    if lazy is not None:
        image, skipped = lazy
    else:  # not grouped, or damaged: the eager reader's replay and its errors (the file read again)
        image, skipped = image_of_snapshot(read_file(path, snapshot=True), snapshot_id)
    end = snapshot_id.end_offset if snapshot_id else 0
    return image, LoadInfo(path, snapshot_id, None, end, end, skipped_records=skipped)


def load_file(path: Path) -> tuple[MetadataImage, LoadInfo]:
    """The image one file holds, read as ``kafka-metadata-shell --snapshot`` reads any file: a
    snapshot (a SnapshotHeader first, or a snapshot's name) as a snapshot; anything else (a
    segment) replayed from its first batch, its records at their offsets, epochs and times."""
    path = Path(path)
    try:
        # an empty file is nothing Kafka writes (a snapshot holds at least its header and footer, a
        # segment at least a batch): refused, not an empty image (kafka-metadata-shell 4.1 waits forever)
        if is_snapshot_file(path) or path.suffix == ".checkpoint" or _is_empty(path) \
                or _starts_with_snapshot_header(path):
            return load_snapshot(path)
    except CorruptRecordError as exc:  # not even a first batch reads
        raise unreadable_snapshot(exc, path, "snapshot or segment") from None
    delta = MetadataDelta(MetadataImage())
    first = last = None
    notes: list[str] = []
    with collector_paused():
        try:
            for entry in read_file(path, snapshot=False):
                delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
                first = entry if first is None else first
                last = entry
        except CorruptRecordError as exc:  # a segment damaged past its first batch: up to the damage, as a log
            notes.append(f"{DAMAGE_NOTE}: {exc.one_line()}")
        image = delta.apply()
    end = last.offset + 1 if last else 0
    notes.extend(open_transaction_notes(delta.open_transaction, end))
    return image, LoadInfo(path, None, first.offset if first else None, end, end, skipped_records=delta.skipped,
                           notes=tuple(notes))


def _is_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False  # the reading says why


def _starts_with_snapshot_header(path: Path) -> bool:
    first = next(iter(read_file(path, snapshot=False)), None)  # the first batch decoded, no more
    return first is not None and first.record.type_name == "SNAPSHOT_HEADER"


def image_of_snapshot(entries: Iterable[LogEntry], snapshot_id: SnapshotId | None) -> tuple[MetadataImage, int]:
    """The image a snapshot's records hold (from a file, or downloaded by FetchSnapshot), stamped
    with the snapshot's end; and how many records were of unknown types."""
    delta = MetadataDelta(MetadataImage())
    header_ts = -1
    with collector_paused():
        for entry in entries:
            if entry.record.type_name == "SNAPSHOT_HEADER":
                header_ts = entry.record.message.last_contained_log_timestamp
            delta.replay(entry.record)
        image = delta.apply()
    if snapshot_id is not None:
        image = replace(image, provenance=Provenance(snapshot_id.end_offset - 1, snapshot_id.epoch, header_ts))
    return image, delta.skipped


def image_of_snapshot_bytes(buf: bytes, where: str, snapshot_id: SnapshotId | None, *,
                            processes: int = 1) -> tuple[MetadataImage, int] | None:
    """As ``image_of_snapshot``, from a snapshot's bytes (a file's, or a FetchSnapshot answer's),
    with the topics' partitions left to decode on first touch; None when the bytes are not a
    whole snapshot in Kafka's grouped shape, or a batch is damaged (the caller's eager reading
    then replays them, or says what is wrong). The count of skipped records covers the records
    decoded so far (``SnapshotIndex.skipped`` adds those of each topic as it is decoded)."""
    with collector_paused():
        try:
            index = index_snapshot_on_two(buf, where) if processes > 1 else index_snapshot(buf, where)
        except MetadataError:
            return None
        if index is None:
            return None
        image, skipped = image_of_snapshot(index.entries, snapshot_id)
    return replace(image, topics=lazy_topics_image(index)), skipped


def image_of_fetched_snapshot(buf: bytes, snapshot_id: SnapshotId, where: str) -> MetadataImage:
    """The live attachment's starting image (engine.raft.log_follower's ``snapshot_bytes_state``):
    a FetchSnapshot download indexed as a snapshot file is, its topics decoded on first touch;
    a download not in the grouped shape replayed whole. A damaged one raises the eager reader's
    MetadataError, naming ``where`` (the snapshot and the controller it came from) and the byte
    offset. The bytes are read once: the index keeps them until every topic was decoded."""
    lazy = image_of_snapshot_bytes(buf, where, snapshot_id)
    if lazy is not None:
        return lazy[0]
    return image_of_snapshot((e for _, batch in batches_of_bytes(buf, where, None, True) for e in batch),
                             snapshot_id)[0]


@dataclass(frozen=True, slots=True)
class ReplayStart:
    """Where a replay of a log directory begins."""

    listing: LogDirListing
    image: MetadataImage  # a snapshot's (with the quorum of the segments before it), or empty
    info: LoadInfo  # the snapshot, the node's files and notes; the offsets are the start's
    begin: int  # the first offset to replay from the segments

    @property
    def start_offset(self) -> int:
        """The offset the starting image stands at (-1: the empty image)."""
        return self.begin - 1 if self.info.snapshot is not None else -1


def replay_start(path: Path, *, offset: int | None = None, time_ms: int | None = None,
                 earliest: bool = False) -> ReplayStart:
    """The newest snapshot at or before ``offset`` / ``time_ms`` (the newest of all without
    either), or the log's start when none is; with ``earliest``, the earliest point the
    directory can rebuild: offset 0, or the oldest snapshot the segments continue from."""
    directory = resolve_metadata_dir(Path(path))
    listing = list_log_dir(directory)
    segments_start = listing.segments[0][0] if listing.segments else None
    if earliest:
        begin = earliest_offset(listing)
        start = next((s for s in listing.snapshots if s[0].end_offset == begin), None)
    else:
        start = _starting_snapshot(listing, offset, time_ms, segments_start)
    notes: list[str] = []
    start, image, info = _readable_start(listing, start, segments_start, directory, notes)
    if start is None and earliest:
        begin = segments_start or 0
    begin = (0 if not earliest else begin) if start is None else start[0].end_offset
    if start is not None and segments_start is not None and segments_start < begin:
        image = replace(image, quorum=with_snapshot_voters(quorum_before(listing, begin), image.quorum))
    info = replace(info, source=directory, snapshot=start[0] if start else None, first_offset=None,
                   end_offset=begin, log_end_offset=begin, quorum_state=_quorum_state(directory, notes),
                   meta=_meta(directory, notes), notes=tuple(notes))
    return ReplayStart(listing, image, info, begin)


def _readable_start(listing: LogDirListing, start, segments_start: int | None, directory: Path,
                    notes: list[str]) -> tuple:
    """(start, image, info) from the snapshot ``start`` names; when it does not read, from the
    next older snapshot or the log's start that the segments continue from, with a note: one
    damaged snapshot does not lock away a log whose segments still hold its records. When the
    segments do not reach back that far, the snapshot's own error stands."""
    while start is not None:
        try:
            image, info = load_snapshot(start[1])
            return start, image, info
        except MetadataError as exc:
            older = [s for s in listing.snapshots if s[0].end_offset < start[0].end_offset]
            fallback = older[-1] if older else None
            fallback_end = fallback[0].end_offset if fallback else 0
            if segments_start is None or segments_start > fallback_end:
                raise
            instead = f"the snapshot {fallback[1].name}" if fallback else "the log's start"
            notes.append(f"{exc.one_line()}; replayed from {instead} instead")
            start = fallback
    return None, MetadataImage(), LoadInfo(directory)


def earliest_offset(listing: LogDirListing) -> int:
    """The first offset a replay of the whole directory starts at: the segments' start when
    it is 0 (or there is no snapshot), else the end of the oldest snapshot they continue from
    (the newest snapshot when none is)."""
    segments, snapshots = listing.segments, listing.snapshots
    if not segments:
        return snapshots[-1][0].end_offset if snapshots else 0
    start = segments[0][0]
    if start == 0 or not snapshots:
        return start
    covered = [s for s, _ in snapshots if s.end_offset >= start]
    return (covered[0] if covered else snapshots[-1][0]).end_offset


def load_log_dir(path: Path, *, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
    """The image of a node's metadata log: the latest, or the last one at or before ``offset``
    (inclusive) or ``time_ms`` (records stamped at or before it)."""
    start = replay_start(path, offset=offset, time_ms=time_ms)
    begin, listing = start.begin, start.listing
    delta = MetadataDelta(start.image)
    notes = list(start.info.notes)
    last = None
    stopped_early = False
    with collector_paused():
        for batch in segment_batches(listing, begin, notes):
            for entry in batch:
                if (offset is not None and entry.offset > offset) or \
                        (time_ms is not None and entry.timestamp_ms > time_ms):
                    stopped_early = True
                    break
                delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
                last = entry
            if stopped_early:
                break
        image = delta.apply()
    # read to the end already, unless time travel stopped short: then look at batch headers only
    log_end = max(_log_end_offset(listing) if stopped_early else (last.offset + 1 if last else 0), begin)
    end = last.offset + 1 if last else begin
    notes.extend(open_transaction_notes(delta.open_transaction, end))
    return image, replace(start.info, first_offset=begin if last else None, end_offset=end, log_end_offset=log_end,
                          skipped_records=start.info.skipped_records + delta.skipped, notes=tuple(notes))


def open_transaction_notes(open_transaction: tuple | None, end_offset: int) -> list[str]:
    """A note when a metadata transaction is open where the replay stopped."""
    if open_transaction is None:
        return []
    return [f"a metadata transaction is open at offset {end_offset - 1}: its {len(open_transaction)} records "
            f"so far are not in this image (Kafka applies them at its EndTransactionRecord)"]


def _starting_snapshot(listing, offset: int | None, time_ms: int | None, segments_start: int | None):
    """The newest snapshot at or before the point asked for; None to replay the log from its start."""
    candidates = [s for s in listing.snapshots
                  if (offset is None or s[0].end_offset <= offset + 1)
                  and (time_ms is None or _snapshot_time_ms(s[1]) <= time_ms)]
    if candidates:
        return candidates[-1]
    if listing.snapshots and segments_start not in (None, 0):
        oldest = listing.snapshots[0][0].end_offset
        point = f"offset {offset}" if offset is not None else f"time {time_ms}"
        last = _log_end_offset(listing) - 1
        raise OffsetOutOfRange(f"{point} is before the oldest data here (snapshot at {oldest}, log from "
                               f"{segments_start}): {reachable_words(oldest - 1, last)}",
                               first=oldest - 1, last=last, path=str(listing.path))
    return None


def reachable_words(first: int, last: int) -> str:
    """How an out-of-range error names what can be reached."""
    if last < max(first, 0):
        return "the log holds no records"
    named = f"{first} (before the first record)" if first == -1 else str(first)
    return f"offsets {named} to {last} can be reached"


def first_reachable(listing: LogDirListing) -> int:
    """The offset of the earliest image a replay of the directory gives: the last offset of the
    oldest snapshot the segments continue from, or -1 (the empty image, before the first record)
    when the log reaches back to offset 0. Reads nothing."""
    begin = earliest_offset(listing)
    if begin > 0 and any(s.end_offset == begin for s, _ in listing.snapshots):
        return begin - 1
    return -1 if begin == 0 else begin


def first_reachable_time(listing: LogDirListing) -> int | None:
    """The time of the earliest image: the oldest snapshot's (its header's), or the first record's
    when the log reaches back to offset 0 (earlier times are before the log). Reads one batch;
    None when there is no record."""
    begin = earliest_offset(listing)
    if begin > 0:
        snapshot = next((s for s in listing.snapshots if s[0].end_offset == begin), None)
        if snapshot is not None:
            return _snapshot_time_ms(snapshot[1])
    for batch in segment_batches(listing, begin, []):
        return batch[0].timestamp_ms
    return None


def _snapshot_time_ms(path: Path) -> int:
    """The append time of the last record a snapshot holds (its header's), from the first batch only."""
    buf = read_segment_bytes(path)
    try:
        for _, batch, _ in iter_batches(buf, str(path)):
            for entry in entries_of_batch(batch, True):
                if entry.record.type_name == "SNAPSHOT_HEADER":
                    return entry.record.message.last_contained_log_timestamp
            break
    except CorruptRecordError as exc:
        raise unreadable_snapshot(exc, path) from None
    return -1


def with_snapshot_voters(before: QuorumImage, snapshot: QuorumImage) -> QuorumImage:
    """The leader changes of the segments a snapshot replaced, with the snapshot's kraft.version and
    voters when it carries them (its KRaftVersion and KRaftVoters stand at its end offset; the
    segments kept before it may begin after the records that set them, which Kafka deleted, or be
    the far side of an archive's gap: engine.image.run_replay)."""
    if snapshot.kraft_version is None:
        return before
    return replace(before, kraft_version=snapshot.kraft_version, voters=snapshot.voters)


def quorum_before(listing, end_offset: int, *, begin: int = 0, start: MetadataImage | None = None) -> QuorumImage:
    """The quorum's control records (leader changes, kraft.version, voters) from segments that a
    snapshot replaced, which Kafka's snapshots do not carry. Only control batches are decoded.
    ``begin`` / ``start``: only the records from ``begin`` on, onto ``start``'s quorum (a run
    after a gap: nothing of the segments before the gap counts, engine.image.run_replay)."""
    delta = MetadataDelta(MetadataImage(quorum=start.quorum) if start is not None else MetadataImage())
    segments = listing.segments
    for index, (base, segment) in enumerate(segments):
        if base >= end_offset:
            break
        if index + 1 < len(segments) and segments[index + 1][0] <= begin:
            continue  # wholly before ``begin``
        buf = read_segment_bytes(segment)
        try:
            for pos, header, _ in iter_batches(buf, str(segment), decode_records=False,
                                               on_torn_tail=lambda at, err: None):
                if header.base_offset >= end_offset:
                    break
                if header.is_control:
                    batch, _ = decode_batch(buf, pos)
                    for entry in entries_of_batch(batch):
                        if begin <= entry.offset < end_offset:
                            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        except MetadataError:
            break  # damage in history the snapshot replaced: the snapshot still stands
    return delta.apply().quorum


TORN_TAIL_NOTE = "not read, cut short or still being written"
DAMAGE_NOTE = "not read from here on, damaged"


def segment_batches(listing: LogDirListing, begin: int, notes: list[str], end: int | None = None,
                    files_read: list[Path] | None = None,
                    damage: list[CorruptRecordError] | None = None) -> Iterator[list[LogEntry]]:
    """The segments' records at offsets ``begin`` <= offset < ``end``, a list per batch. A torn
    tail of the last segment is noted, not read. Damage (a batch that fails its CRC or does not
    parse, with the log going on after it) ends the records there: what comes before it is still
    the log's history, what comes after cannot be replayed onto it (a batch is missing), so it is
    noted (and added to ``damage``), as Kafka's recovery would cut the log there. A hole between
    segments (an archive's gap, engine.image.log_holes) ends them the same way, noted as a gap.
    The file is never changed. Each file opened is added to ``files_read``."""
    try:
        yield from _segment_batches(listing, begin, notes, end, files_read)
    except CorruptRecordError as exc:
        notes.append(f"{HOLE_NOTE if isinstance(exc, LogHoleError) else DAMAGE_NOTE}: {exc.one_line()}")
        if damage is not None:
            damage.append(exc)


def _segment_batches(listing: LogDirListing, begin: int, notes: list[str], end: int | None,
                     files_read: list[Path] | None) -> Iterator[list[LogEntry]]:
    segments = listing.segments
    expected = None  # the offset the next batch must start at, once a batch was read
    for index, (base, segment) in enumerate(segments):
        if index + 1 < len(segments) and segments[index + 1][0] <= begin:
            continue
        if end is not None and base >= end:
            return
        if expected is not None and base > expected:
            raise hole_error(listing.path, expected, base)  # offsets in no segment: never replayed across
        on_torn = (lambda pos, err: notes.append(f"{TORN_TAIL_NOTE}: {err.one_line()}")) \
            if index == len(segments) - 1 else None
        if files_read is not None:
            files_read.append(segment)
        for entries in entries_by_batch(segment, on_torn, False, begin if base < begin else None):
            if entries:
                expected = entries[-1].offset + 1
            if entries and entries[0].offset < begin:
                entries = [e for e in entries if e.offset >= begin]
            if end is not None and entries and entries[-1].offset >= end:
                entries = [e for e in entries if e.offset < end]
                if entries:
                    yield entries
                return
            if entries:
                yield entries


def _log_end_offset(listing) -> int:
    """One past the last complete batch of the newest non-empty segment (headers only)."""
    for base, segment in reversed(listing.segments):
        last = None
        try:
            for _, header, _ in iter_batches(read_segment_bytes(segment), str(segment), decode_records=False,
                                             on_torn_tail=lambda pos, err: None):
                last = header.last_offset
        except MetadataError:
            return base
        if last is not None:
            return last + 1
    return listing.segments[0][0] if listing.segments else 0


def _quorum_state(directory: Path, notes: list[str]) -> QuorumStateData | None:
    path = directory / "quorum-state"
    if not path.exists():
        return None
    try:
        return read_quorum_state(path)
    except StorageError as exc:
        notes.append(exc.one_line())
        return None


def _meta(directory: Path, notes: list[str]) -> MetaProperties | None:
    node_dir = directory.parent
    if not (node_dir / "meta.properties").exists():
        return None
    try:
        return read_meta_properties(node_dir)
    except StorageError as exc:
        notes.append(exc.one_line())
        return None


def _snapshot_id_of(path: Path) -> SnapshotId | None:
    return parse_snapshot_name(path.name)
