"""The replicated log as the Raft core sees it: batches, epochs, snapshots, durability.

Two implementations share this contract (and one contract test suite):

* ``FileRaftLog`` (engine.raft.file_raft_log) over the Foundation's MetadataLog:
  Kafka's on-disk layout, used by ``kraftd start``.
* ``MemoryRaftLog`` (engine.raft.memory_raft_log): the same behaviour in memory,
  for the deterministic simulator. It keeps the flushed end offset separately, so
  a simulated crash loses exactly the unflushed suffix.

Offsets and epochs follow Kafka: the log holds whole record batches (v2, CRC32C),
each stamped with the leader epoch that wrote it; ``end_offset`` is the offset the
next record gets; a snapshot ``SnapshotId(end_offset, epoch)`` contains every
offset below its end offset, and the log may start at or after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol, Sequence

from engine.records.metadata_record_serde import AnyRecord, ControlRecord
from engine.storage.snapshot_writer import SnapshotId

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    offset: int
    epoch: int


class LogBatch:
    """One batch as read back: its offsets, epoch, whether it is a control batch, its records.

    ``records`` may be decoded only when first asked for (``decode``): the Raft core looks at
    every fetched or appended batch for control records, and decoding the records of a data
    batch it does not need is most of a follower's time under load."""

    __slots__ = ("base_offset", "last_offset", "epoch", "append_time_ms", "control", "size_bytes", "_records",
                 "_decode")

    def __init__(self, base_offset: int, last_offset: int, epoch: int, append_time_ms: int, control: bool,
                 records: tuple[AnyRecord, ...] | None, size_bytes: int, *,
                 decode: Callable[[], tuple[AnyRecord, ...]] | None = None):
        if records is None and decode is None:
            raise ValueError("a LogBatch needs its records or a way to decode them")
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.epoch = epoch
        self.append_time_ms = append_time_ms  # the batch's max timestamp
        self.control = control
        self.size_bytes = size_bytes
        self._records = records
        self._decode = decode

    @property
    def records(self) -> tuple[AnyRecord, ...]:
        if self._records is None:
            self._records = self._decode()
            self._decode = None  # the buffer it holds can go
        return self._records

    def _key(self) -> tuple:
        return (self.base_offset, self.last_offset, self.epoch, self.append_time_ms, self.control, self.records,
                self.size_bytes)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogBatch) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside: compared, never hashed

    def __repr__(self) -> str:
        return (f"LogBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, epoch={self.epoch}, "
                f"control={self.control}, records={len(self.records)}, size_bytes={self.size_bytes})")


class RaftLog(Protocol):
    # -- positions ----------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """Offset the next appended record gets."""

    @property
    def start_offset(self) -> int:
        """First offset still readable from the log (the latest snapshot's end offset, or
        the first segment's base offset, whichever is greater)."""

    @property
    def flushed_end_offset(self) -> int:
        """Everything below this offset is durable (survives a crash)."""

    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch in the log; the latest snapshot's epoch if the log has
        no batch after it; UNDEFINED_EPOCH (-1) for an empty log without snapshot."""

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """(end offset, epoch) of the largest epoch <= ``epoch`` in the log: where the
        epoch after it starts, or ``end_offset`` for the latest epoch. If ``epoch`` is below
        every epoch in the log but a snapshot exists, the snapshot's (end_offset, epoch);
        otherwise OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH).
        Used by a leader to answer a follower's (fetch_offset, last_fetched_epoch)."""

    # -- writing ------------------------------------------------------------------

    def append_as_leader(self, records: Sequence[AnyRecord], *, epoch: int, timestamp_ms: int,
                         control: bool = False) -> OffsetAndEpoch:
        """Append one batch at ``end_offset``; returns (last offset of the batch, epoch).
        ``records`` must be all metadata records, or (``control=True``) all ControlRecords."""

    def append_as_follower(self, data: bytes) -> int:
        """Append the whole batches in ``data`` (as fetched from the leader, bytes unchanged).
        Each batch's CRC is checked and its base offset must equal the current end offset,
        epochs must not decrease; a bad batch raises StorageError and appends nothing of
        that batch or any after it (earlier whole batches of ``data`` stay). Returns the new
        end offset. An empty ``data`` is a no-op."""

    def truncate_to(self, offset: int) -> int:
        """Remove every batch with last_offset >= ``offset``... precisely: keep only batches
        wholly below ``offset`` (a batch that straddles it goes whole). Returns the new
        end offset. Raises StorageError if ``offset`` is below the latest snapshot's end
        offset (committed data is never cut)."""

    def flush(self) -> None:
        """Make everything appended so far durable (fsync); flushed_end_offset = end_offset."""

    # -- reading ------------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        """Raw bytes of whole batches starting with the batch that contains
        ``start_offset``, up to ``max_bytes`` (but always at least one whole batch when
        one exists at that offset, like Kafka). b"" at end_offset. Raises StorageError
        when ``start_offset`` is outside [start_offset, end_offset]."""

    def batches(self, start_offset: int, end_offset: int | None = None) -> Iterator[LogBatch]:
        """Decoded batches from the one containing ``start_offset`` while their base offset is
        below ``end_offset`` (default: the log end)."""

    # -- snapshots ----------------------------------------------------------------

    def latest_snapshot_id(self) -> SnapshotId | None:
        ...

    def earliest_snapshot_id(self) -> SnapshotId | None:
        ...

    def create_snapshot(self, snapshot_id: SnapshotId, records: Sequence[AnyRecord], *,
                        kraft_control: Sequence[ControlRecord], last_contained_log_timestamp_ms: int,
                        now_ms: int) -> None:
        """Write a snapshot (header, ``kraft_control`` records — KRaftVersionRecord and
        VotersRecord for kraft.version 1 — the records, footer) in Kafka's format.
        ``snapshot_id.end_offset`` must be <= end_offset and > the latest snapshot's."""

    def stage_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> Any:
        """Make ``data`` (a whole snapshot file, built elsewhere) ready to install: written and
        made durable beside the log, or just kept. Touches none of the log's state, so it may
        run on another thread. The result goes to install_snapshot or discard_snapshot."""

    def install_snapshot(self, snapshot_id: SnapshotId, staged: Any) -> None:
        """Complete a staged snapshot, on create_snapshot's conditions (StorageError, nothing
        changed and the staged copy gone, if they do not hold)."""

    def discard_snapshot(self, staged: Any) -> None:
        """Drop a staged snapshot that will not be installed."""

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        """Size in bytes of a complete snapshot; StorageError if there is none with that id."""

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        """Raw snapshot file bytes [position, position + max_bytes) (FetchSnapshot)."""

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[LogBatch]:
        """Decoded batches of a complete snapshot, header and footer included."""

    def begin_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        """Start receiving a snapshot from the leader (discarding any earlier partial one)."""

    def append_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, data: bytes) -> None:
        """Append bytes at ``position`` of the partial download (position must equal its size)."""

    def complete_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        """Verify the downloaded bytes (whole batches, CRCs, header first, footer last), make
        the snapshot durable and complete, then reset the log to start at its end offset:
        every batch is removed, end_offset = start_offset = snapshot_id.end_offset,
        last_fetched_epoch() = snapshot_id.epoch. StorageError (and nothing changed) if
        the bytes are not a valid snapshot."""

    def delete_before_snapshot(self) -> int:
        """Retention: drop batches wholly below the latest snapshot's end offset (keeping
        whole batches so reads at or after the snapshot's end offset still work) and older
        snapshots. Returns the new start_offset."""

    def close(self) -> None:
        ...
