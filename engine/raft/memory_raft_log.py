"""``MemoryRaftLog``: the RaftLog contract in memory, for the deterministic simulator.

It stores the very bytes a FileRaftLog writes (batches built by engine.records.record_batch,
snapshots by engine.storage.snapshot_writer), so fetch responses, CRCs and sizes are real.
``flushed_end_offset`` is kept apart from ``end_offset``: ``crash()`` keeps only the
flushed prefix, as a power loss would. Truncation, snapshots and retention count
as durable at once, as they are on disk (MetadataLog fsyncs them immediately).

The module also holds the checks both implementations share (record kinds of a
leader batch, a fetched batch, a downloaded snapshot, snapshot ids, epoch answers),
so the two cannot drift apart.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterator, Sequence

from engine.common.errors import MetadataError, StorageError
from engine.storage.leader_epoch_cache import LeaderEpochCache
from engine.records.metadata_record_serde import (SNAPSHOT_FOOTER, SNAPSHOT_HEADER, AnyRecord, ControlRecord, UnknownRecord,
                                          decode_record, encode_record)
from engine.records.metadata_records import MetadataRecord
from engine.raft.raft_log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LogBatch, OffsetAndEpoch
from engine.records.compression import NONE
from engine.records.record_batch import HEADER_SIZE, decode_batch, encode_entries
from engine.storage.log_reader import entries_in_place
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes

# -- checks shared with FileRaftLog ------------------------------------------------------


def leader_batch_bytes(records: Sequence[AnyRecord], *, base_offset: int, epoch: int, timestamp_ms: int,
                       control: bool) -> bytes:
    """The encoded batch ``append_as_leader`` writes; ValueError for an empty or mixed batch."""
    if not records:
        raise ValueError("a batch needs at least one record")
    for record in records:
        if control:
            ok = isinstance(record, ControlRecord) or (isinstance(record, UnknownRecord) and record.control)
        else:
            ok = isinstance(record, MetadataRecord) or (isinstance(record, UnknownRecord) and not record.control)
        if not ok:
            kind = "control" if control else "data"
            raise ValueError(f"a {kind} batch cannot hold {type(record).__name__}")
    return encode_entries(base_offset, [encode_record(r) for r in records], epoch=epoch,
                          timestamp_ms=timestamp_ms, control=control)


def check_fetched_batch(data: bytes | memoryview, pos: int, *, end_offset: int,
                        min_epoch: int) -> tuple[int, int, int, int]:
    """Validate the batch at ``pos`` of fetched bytes; (end position, base, last offset, epoch)."""
    try:
        header, end = decode_batch(data, pos, decode_records=False)  # lengths, magic, CRC
    except MetadataError as exc:
        raise StorageError(f"fetched batch rejected: {exc.reason}", byte_offset=exc.byte_offset) from None
    if header.base_offset != end_offset:
        raise StorageError(f"fetched batch starts at offset {header.base_offset}, the log ends at {end_offset}",
                           byte_offset=pos)
    if header.last_offset_delta < 0:
        raise StorageError(f"fetched batch has a negative last offset delta {header.last_offset_delta}",
                           byte_offset=pos)
    if header.partition_leader_epoch < min_epoch:
        raise StorageError(f"fetched batch has epoch {header.partition_leader_epoch}, below the log's "
                           f"last epoch {min_epoch}", byte_offset=pos)
    return end, header.base_offset, header.last_offset, header.partition_leader_epoch


def decode_log_batch(buf: bytes | memoryview, pos: int = 0, *, path: str | None = None) -> tuple[LogBatch, int]:
    """Decode (CRC checked) the batch at ``pos`` into a LogBatch; (batch, end position)."""
    try:
        header, end = decode_batch(buf, pos, decode_records=False)  # lengths, magic, CRC: checked now
    except MetadataError as exc:
        raise StorageError(exc.reason, path=path, byte_offset=exc.byte_offset) from None
    control = header.is_control

    def decode() -> tuple[AnyRecord, ...]:  # later, and only if asked: the CRC above vouches for the bytes
        if header.compression == NONE and not control:
            count = int.from_bytes(buf[pos + HEADER_SIZE - 4:pos + HEADER_SIZE], "big", signed=True)
            entries = entries_in_place(buf, header, pos + HEADER_SIZE, end, count, False)
            if entries is not None:
                return tuple(entry.record for entry in entries)
        try:
            batch, _ = decode_batch(buf, pos, verify_crc=False)
        except MetadataError as exc:  # CRC-valid yet its records do not parse: kept, shown, never fatal
            return (UnknownRecord(None, bytes(buf[pos:end]), f"undecodable batch at offset {header.base_offset}: "
                                  f"{exc.reason}", control=control),)
        return tuple(decode_record(r.key, r.value, control) for r in batch.records)

    return LogBatch(header.base_offset, header.last_offset, header.partition_leader_epoch, header.max_timestamp,
                    control, None, end - pos, decode=decode), end


def decode_all(buf: bytes | memoryview, path: str | None = None) -> Iterator[LogBatch]:
    pos = 0
    while pos < len(buf):
        batch, pos = decode_log_batch(buf, pos, path=path)
        yield batch


def _positions(data: bytes, batches: list[LogBatch]) -> Iterator[tuple[int, LogBatch]]:
    pos = 0
    for batch in batches:
        yield pos, batch
        pos += batch.size_bytes


def check_snapshot_bytes(data: bytes) -> None:
    """A downloaded snapshot must be whole, CRC-valid batches from a SnapshotHeader to a SnapshotFooter."""
    batches = list(decode_all(data))  # raises StorageError on a torn or damaged batch
    for pos, batch in _positions(data, batches):
        try:  # every record's framing too, before the log is given up for it (decode_all is lazy)
            decode_batch(data, pos, verify_crc=False)
        except MetadataError as exc:
            raise StorageError(f"downloaded snapshot has an undecodable batch at offset {batch.base_offset}: "
                               f"{exc.reason}", byte_offset=pos) from None

    def is_control(record: AnyRecord, control_type: int) -> bool:
        return isinstance(record, ControlRecord) and record.control_type == control_type

    if not batches:
        raise StorageError("downloaded snapshot is empty")
    first, last = batches[0], batches[-1]
    if not (first.control and first.records and is_control(first.records[0], SNAPSHOT_HEADER)):
        raise StorageError("downloaded snapshot does not start with a SnapshotHeader", byte_offset=0)
    if not (last.control and last.records and is_control(last.records[-1], SNAPSHOT_FOOTER)):
        raise StorageError("downloaded snapshot does not end with a SnapshotFooter", byte_offset=len(data))


def epoch_at(epochs: LeaderEpochCache, offset: int) -> int:
    """The epoch of the batch holding ``offset`` as the epoch cache knows it (UNDEFINED_EPOCH if before it)."""
    index = bisect_right([start for _, start in epochs.entries], offset) - 1
    return epochs.entries[index][0] if index >= 0 else UNDEFINED_EPOCH


def check_new_snapshot_id(snapshot_id: SnapshotId, *, end_offset: int, latest: SnapshotId | None,
                          epochs: LeaderEpochCache) -> None:
    """create_snapshot's preconditions: within the log, past the latest snapshot, and (a
    clarification of the contract, as Kafka's validateOffsetAndEpoch) stamped with the epoch
    of the record at end_offset - 1 when the log still knows that epoch."""
    if snapshot_id.end_offset > end_offset:
        raise StorageError(f"snapshot end offset {snapshot_id.end_offset} is past the log end offset {end_offset}")
    if latest is not None and snapshot_id.end_offset <= latest.end_offset:
        raise StorageError(f"snapshot end offset {snapshot_id.end_offset} is not past the latest snapshot's "
                           f"{latest.end_offset}")
    known = epoch_at(epochs, snapshot_id.end_offset - 1)
    if known != UNDEFINED_EPOCH and known != snapshot_id.epoch:
        raise StorageError(f"snapshot epoch {snapshot_id.epoch} differs from epoch {known} of offset "
                           f"{snapshot_id.end_offset - 1}")


def answer_end_offset_for_epoch(epochs: LeaderEpochCache, epoch: int, end_offset: int,
                                latest: SnapshotId | None) -> OffsetAndEpoch:
    found_epoch, found_end = epochs.end_offset_for(epoch, end_offset)
    if found_epoch != UNDEFINED_EPOCH:
        return OffsetAndEpoch(found_end, found_epoch)
    if latest is not None:  # below every epoch of the log: the snapshot ends the history we know
        return OffsetAndEpoch(latest.end_offset, latest.epoch)
    return OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)


def answer_last_fetched_epoch(epochs: LeaderEpochCache, last_batch_offset: int | None,
                              latest: SnapshotId | None) -> int:
    # Epochs never decrease, so the epoch cache's latest epoch is the last batch's.
    if last_batch_offset is not None and (latest is None or last_batch_offset >= latest.end_offset):
        return epochs.latest_epoch
    return latest.epoch if latest is not None else UNDEFINED_EPOCH


def snapshot_is_ahead(latest: SnapshotId | None, data_end: int, epochs: LeaderEpochCache) -> bool:
    """After a crash: whether the log must be reset to start at the latest snapshot (Kafka's
    truncateToLatestSnapshot): the log stops short of it, or its epochs are older than it."""
    if latest is None:
        return False
    return data_end < latest.end_offset or (bool(epochs.entries) and epochs.latest_epoch < latest.epoch)


# -- the in-memory log -------------------------------------------------------------------


class MemoryRaftLog:
    """RaftLog in memory. Batches live in parallel lists searched with bisect (the
    simulator calls this millions of times); decoded batches are cached lazily."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._data: list[bytes] = []
        self._byte_ends: list[int] = []  # running byte total at each batch's end (any origin)
        self._decoded: list[LogBatch | None] = []
        self._end = 0
        self._flushed_end = 0
        self._epochs = LeaderEpochCache()
        self._snapshots: dict[SnapshotId, bytes] = {}
        self._snapshot_ids: list[SnapshotId] = []  # sorted
        self._download: tuple[SnapshotId, bytearray] | None = None

    # -- positions ----------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def start_offset(self) -> int:
        return self._snapshot_ids[-1].end_offset if self._snapshot_ids else 0

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed_end

    def last_fetched_epoch(self) -> int:
        return answer_last_fetched_epoch(self._epochs, self._lasts[-1] if self._lasts else None,
                                         self.latest_snapshot_id())

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return answer_end_offset_for_epoch(self._epochs, epoch, self._end, self.latest_snapshot_id())

    # -- writing ------------------------------------------------------------------------

    def append_as_leader(self, records: Sequence[AnyRecord], *, epoch: int, timestamp_ms: int,
                         control: bool = False) -> OffsetAndEpoch:
        if epoch < self.last_fetched_epoch():
            raise StorageError(f"append in epoch {epoch} after epoch {self.last_fetched_epoch()}")
        base = self._end
        data = leader_batch_bytes(records, base_offset=base, epoch=epoch, timestamp_ms=timestamp_ms,
                                  control=control)
        last = base + len(records) - 1
        # The records we were given are what decoding the bytes gives back: cache them,
        # unless one is an UnknownRecord (its decoded reason could differ).
        decoded = None
        if not any(isinstance(r, UnknownRecord) for r in records):
            decoded = LogBatch(base, last, epoch, timestamp_ms, control, tuple(records), len(data))
        self._append(data, base, last, epoch, decoded)
        return OffsetAndEpoch(last, epoch)

    def append_as_follower(self, data: bytes) -> int:
        pos = 0
        while pos < len(data):
            end, base, last, epoch = check_fetched_batch(data, pos, end_offset=self._end,
                                                         min_epoch=self.last_fetched_epoch())
            whole = pos == 0 and end == len(data) and type(data) is bytes  # one batch: no copy
            self._append(data if whole else bytes(data[pos:end]), base, last, epoch, None)
            pos = end
        return self._end

    def _append(self, data: bytes, base: int, last: int, epoch: int, decoded: LogBatch | None) -> None:
        self._bases.append(base)
        self._lasts.append(last)
        self._data.append(data)
        self._byte_ends.append((self._byte_ends[-1] if self._byte_ends else 0) + len(data))
        self._decoded.append(decoded)
        self._end = last + 1
        self._epochs.assign(epoch, base)

    def truncate_to(self, offset: int) -> int:
        latest = self.latest_snapshot_id()
        if offset < self.start_offset:
            raise StorageError(f"cannot truncate to {offset}: below the log start offset {self.start_offset}")
        if offset >= self._end:
            return self._end
        index = bisect_left(self._lasts, offset)  # the first batch reaching ``offset`` goes, whole
        if index == len(self._lasts):
            return self._end
        cut = self._bases[index]
        if latest is not None and cut < latest.end_offset:
            raise StorageError(f"cannot truncate to {offset}: the batch at {cut} holds offsets of the "
                               f"snapshot ending at {latest.end_offset}")
        self._drop_from(index)
        self._end = cut
        self._flushed_end = min(self._flushed_end, cut)  # a truncation is durable at once
        self._epochs.truncate_from_end(cut)
        return cut

    def _drop_from(self, index: int) -> None:
        for column in (self._bases, self._lasts, self._data, self._byte_ends, self._decoded):
            del column[index:]

    def flush(self) -> None:
        self._flushed_end = self._end

    def crash(self) -> None:
        """Power loss: the unflushed suffix and any partial snapshot download are gone."""
        self._drop_from(bisect_left(self._bases, self._flushed_end))
        self._end = self._flushed_end
        self._epochs.truncate_from_end(self._flushed_end)
        self._download = None
        latest = self.latest_snapshot_id()
        if snapshot_is_ahead(latest, self._end, self._epochs):  # as FileRaftLog does on reopening
            self._reset_to(latest)

    def _reset_to(self, snapshot_id: SnapshotId) -> None:
        self._drop_from(0)
        self._end = self._flushed_end = snapshot_id.end_offset
        self._epochs = LeaderEpochCache()

    # -- reading ------------------------------------------------------------------------

    def _check_offset(self, offset: int) -> None:
        if not self.start_offset <= offset <= self._end:
            raise StorageError(f"offset {offset} is outside the log [{self.start_offset}, {self._end}]")

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        self._check_offset(start_offset)
        first = bisect_left(self._lasts, start_offset)
        if first == len(self._lasts):
            return b""
        limit = self._byte_ends[first] - len(self._data[first]) + max_bytes
        stop = bisect_right(self._byte_ends, limit, first + 1)  # at least one batch
        return self._data[first] if stop == first + 1 else b"".join(self._data[first:stop])

    def batches(self, start_offset: int, end_offset: int | None = None) -> Iterator[LogBatch]:
        self._check_offset(start_offset)
        return self._batches(start_offset, self._end if end_offset is None else end_offset)

    def _batches(self, start_offset: int, end_offset: int) -> Iterator[LogBatch]:
        index = bisect_left(self._lasts, start_offset)
        while index < len(self._bases) and self._bases[index] < end_offset:
            batch = self._decoded[index]
            if batch is None:
                batch = self._decoded[index] = decode_log_batch(self._data[index])[0]
            yield batch
            index += 1

    # -- snapshots ----------------------------------------------------------------------

    def latest_snapshot_id(self) -> SnapshotId | None:
        return self._snapshot_ids[-1] if self._snapshot_ids else None

    def earliest_snapshot_id(self) -> SnapshotId | None:
        return self._snapshot_ids[0] if self._snapshot_ids else None

    def create_snapshot(self, snapshot_id: SnapshotId, records: Sequence[AnyRecord], *,
                        kraft_control: Sequence[ControlRecord], last_contained_log_timestamp_ms: int,
                        now_ms: int) -> None:
        self._check_new_snapshot(snapshot_id)  # before the work of encoding
        self.install_snapshot(snapshot_id, snapshot_bytes(
            records, epoch=snapshot_id.epoch, last_contained_log_timestamp_ms=last_contained_log_timestamp_ms,
            now_ms=now_ms, kraft_control=kraft_control))

    def _check_new_snapshot(self, snapshot_id: SnapshotId) -> None:
        check_new_snapshot_id(snapshot_id, end_offset=self._end, latest=self.latest_snapshot_id(),
                              epochs=self._epochs)

    def stage_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> bytes:
        return data  # nothing to write: the bytes are the snapshot

    def install_snapshot(self, snapshot_id: SnapshotId, staged: bytes) -> None:
        self._check_new_snapshot(snapshot_id)
        self._snapshots[snapshot_id] = staged
        self._snapshot_ids.append(snapshot_id)

    def discard_snapshot(self, staged: bytes) -> None:
        pass

    def _snapshot(self, snapshot_id: SnapshotId) -> bytes:
        data = self._snapshots.get(snapshot_id)
        if data is None:
            raise StorageError(f"no snapshot {snapshot_id.file_name}")
        return data

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        return len(self._snapshot(snapshot_id))

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        data = self._snapshot(snapshot_id)
        if not 0 <= position <= len(data):
            raise StorageError(f"position {position} is outside snapshot {snapshot_id.file_name} "
                               f"of {len(data)} bytes")
        return data[position:position + max_bytes]

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[LogBatch]:
        return decode_all(self._snapshot(snapshot_id))

    def begin_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        self._download = (snapshot_id, bytearray())

    def _downloading(self, snapshot_id: SnapshotId) -> bytearray:
        if self._download is None or self._download[0] != snapshot_id:
            raise StorageError(f"no download of snapshot {snapshot_id.file_name} in progress")
        return self._download[1]

    def append_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, data: bytes) -> None:
        partial = self._downloading(snapshot_id)
        if position != len(partial):
            raise StorageError(f"snapshot chunk at position {position}, the download has {len(partial)} bytes")
        partial += data

    def complete_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        data = bytes(self._downloading(snapshot_id))
        check_snapshot_bytes(data)
        latest = self.latest_snapshot_id()
        if latest is not None and snapshot_id.end_offset <= latest.end_offset:
            raise StorageError(f"downloaded snapshot {snapshot_id.file_name} is not past the latest snapshot "
                               f"{latest.file_name}")
        self._download = None
        self._snapshots = {snapshot_id: data}  # older snapshots go, as on disk
        self._snapshot_ids = [snapshot_id]
        self._reset_to(snapshot_id)

    def delete_before_snapshot(self) -> int:
        latest = self.latest_snapshot_id()
        if latest is None:
            return self.start_offset
        keep_from = bisect_left(self._lasts, latest.end_offset)  # batches wholly below the snapshot go
        for column in (self._bases, self._lasts, self._data, self._byte_ends, self._decoded):
            del column[:keep_from]
        self._snapshots = {latest: self._snapshots[latest]}
        self._snapshot_ids = [latest]
        self._epochs.truncate_from_start(latest.end_offset)
        return self.start_offset

    def close(self) -> None:
        self._download = None
