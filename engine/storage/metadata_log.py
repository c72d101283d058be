"""The writable ``__cluster_metadata-0`` log: segments, snapshots, recovery, retention.

Opening recovers the active (newest) segment: a torn tail left by a crash is
truncated to the last complete batch and reported in ``recovery``; damage
before the tail is an error and nothing is changed. Appends go to the active
segment, which rolls to a new file once it reaches ``segment_bytes``. Durability
follows ``fsync_policy``: ``always`` fsyncs every append, ``explicit`` only on
``flush()`` (the Raft layer flushes before it votes or acknowledges), ``never``
leaves it to the OS (benchmarks).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal, Sequence

from engine.common.errors import ConfigError, StorageError
from engine.storage.log_reader import METADATA_PARTITION_DIR, LogEntry, list_log_dir, read_batch_headers, read_log_dir
from engine.storage.log_segment import (
    SegmentWriter,
    read_segment_bytes,
    scan_segment,
    segment_file_name,
    truncate_file,
)
from engine.records.metadata_record_serde import AnyRecord, ControlRecord, encode_record
from engine.records.record_batch import build_batch, encode_batch
from engine.common.file_io import fsync_directory
from engine.storage.leader_epoch_cache import LeaderEpochCache
from engine.storage.leader_epoch_checkpoint import (
    LEADER_EPOCH_CHECKPOINT_FILE, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint,
)
from engine.storage.partition_metadata_file import PARTITION_METADATA_FILE, write_partition_metadata
from engine.storage.snapshot_writer import SnapshotId, write_snapshot

FsyncPolicy = Literal["always", "explicit", "never"]
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes default


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    segment: Path
    truncated_bytes: int
    reason: str

    def one_line(self) -> str:
        return f"{self.segment}: truncated {self.truncated_bytes} bytes of torn tail ({self.reason})"


class MetadataLog:
    """A KRaft metadata log directory opened for appending. Not thread-safe: one owner."""

    def __init__(self, directory: Path, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 fsync_policy: FsyncPolicy = "always"):
        if segment_bytes < 1:
            raise ConfigError(f"segment_bytes must be positive, got {segment_bytes}")
        if fsync_policy not in ("always", "explicit", "never"):
            raise ConfigError(f"unknown fsync policy {fsync_policy!r}")
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.fsync_policy = fsync_policy
        self.recovery: RecoveryReport | None = None
        self._active: SegmentWriter | None = None
        self._open()

    @classmethod
    def create(cls, log_dir: Path, **kwargs) -> "MetadataLog":
        """Open ``log_dir/__cluster_metadata-0``, creating it if needed."""
        directory = Path(log_dir) / METADATA_PARTITION_DIR
        directory.mkdir(parents=True, exist_ok=True)
        return cls(directory, **kwargs)

    # -- opening and recovery -------------------------------------------------

    def _open(self) -> None:
        if not self.directory.is_dir():
            raise StorageError("no such metadata log directory", path=str(self.directory))
        for leftover in self.directory.glob("*.checkpoint.part"):
            leftover.unlink()  # an interrupted snapshot write; never visible to readers
        if not (self.directory / PARTITION_METADATA_FILE).exists():
            write_partition_metadata(self.directory / PARTITION_METADATA_FILE)
        listing = list_log_dir(self.directory)
        self._snapshots = [sid for sid, _ in listing.snapshots]
        if not listing.segments:
            self.epochs = self._load_epochs(listing)
            start = self._snapshots[-1].end_offset if self._snapshots else 0
            self._start_segment(start)
            return
        base, path = listing.segments[-1]
        buf = read_segment_bytes(path)
        scan = scan_segment(buf, str(path))
        if scan.has_torn_tail:
            truncate_file(path, scan.valid_bytes)
            self.recovery = RecoveryReport(path, len(buf) - scan.valid_bytes, scan.tail_error.reason)
        next_offset = scan.next_offset if scan.next_offset is not None else base
        if self._snapshots:
            next_offset = max(next_offset, self._snapshots[-1].end_offset)
        self._active = SegmentWriter(path, base, scan.valid_bytes, next_offset)
        self.epochs = self._load_epochs(listing)  # after recovery: the torn tail is gone
        if self.epochs.truncate_from_end(next_offset):
            self._save_epochs()

    def _load_epochs(self, listing) -> LeaderEpochCache:
        """The checkpoint if there is one, else rebuilt from the batches' leader epochs."""
        path = self.directory / LEADER_EPOCH_CHECKPOINT_FILE
        if path.exists():
            return LeaderEpochCache(read_leader_epoch_checkpoint(path))
        cache = LeaderEpochCache()
        for _, segment in listing.segments:
            for _, header in read_batch_headers(segment):
                cache.assign(header.partition_leader_epoch, header.base_offset)
        if cache.entries:
            write_leader_epoch_checkpoint(path, cache.entries)
        return cache

    def _save_epochs(self) -> None:
        write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_CHECKPOINT_FILE, self.epochs.entries)

    def _start_segment(self, base_offset: int) -> None:
        path = self.directory / segment_file_name(base_offset)
        path.touch()
        if self.fsync_policy != "never":
            fsync_directory(self.directory)
        self._active = SegmentWriter(path, base_offset, 0, base_offset)

    # -- appending ------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """The offset the next appended record gets (Kafka's log end offset)."""
        return self._active.next_offset

    @property
    def active_segment(self) -> tuple[Path, int, int]:
        """(path, base offset, size in bytes) of the segment appends go to (for raw reads)."""
        return self._active.path, self._active.base_offset, self._active.size_bytes

    @property
    def start_offset(self) -> int:
        segments = list_log_dir(self.directory).segments
        first = segments[0][0] if segments else self.end_offset
        return max(first, self._snapshots[-1].end_offset) if self._snapshots else first

    def append(self, records: Sequence[AnyRecord], *, epoch: int, timestamp_ms: int,
               control: bool = False) -> tuple[int, int]:
        """Append one batch; returns (base offset, last offset)."""
        entries = [encode_record(r) for r in records]
        base = self.end_offset
        batch = build_batch(base, entries, timestamp_ms=timestamp_ms, leader_epoch=epoch, control=control)
        self.append_batch_bytes(encode_batch(batch), base + len(entries))
        return base, base + len(entries) - 1

    def append_batch_bytes(self, data: bytes, next_offset: int) -> None:
        """Append an already-encoded batch (e.g. one fetched from the leader)."""
        base_offset, _, epoch = struct.unpack_from(">qii", data, 0)
        if base_offset < self.end_offset:
            raise StorageError(f"append at offset {base_offset} is below the log end offset {self.end_offset}",
                               path=str(self.directory))
        if self._active.size_bytes > 0 and self._active.size_bytes + len(data) > self.segment_bytes:
            self.roll()
        self._active.append(data, next_offset)
        if self.epochs.assign(epoch, base_offset):
            self._save_epochs()
        # Always hand the bytes to the OS, so readers of the directory see them;
        # only the fsync depends on the policy.
        self._active.flush(fsync=self.fsync_policy == "always")

    def flush(self) -> None:
        self._active.flush(fsync=self.fsync_policy != "never")

    def roll(self) -> None:
        """Close the active segment and start a new one at the log end offset."""
        self._active.flush(fsync=self.fsync_policy != "never")
        self._active.close()
        self._start_segment(self._active.next_offset)

    def close(self) -> None:
        if self._active is not None:
            self._active.flush(fsync=self.fsync_policy != "never")
            self._active.close()

    def __enter__(self) -> "MetadataLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading --------------------------------------------------------------

    def read(self, *, use_snapshot: bool = True) -> Iterable[LogEntry]:
        self._active.flush(fsync=False)
        return read_log_dir(self.directory, use_snapshot=use_snapshot)

    # -- snapshots and retention -------------------------------------------------

    @property
    def snapshots(self) -> list[SnapshotId]:
        return list(self._snapshots)

    @property
    def latest_snapshot(self) -> SnapshotId | None:
        return self._snapshots[-1] if self._snapshots else None

    def write_snapshot(self, snapshot_id: SnapshotId, records: Iterable[AnyRecord], *,
                       last_contained_log_timestamp_ms: int, now_ms: int,
                       kraft_control: Sequence[ControlRecord] = ()) -> Path:
        if snapshot_id.end_offset > self.end_offset:
            raise StorageError(f"snapshot end offset {snapshot_id.end_offset} is past the log end offset "
                               f"{self.end_offset}", path=str(self.directory))
        path = write_snapshot(self.directory, snapshot_id, records,
                              last_contained_log_timestamp_ms=last_contained_log_timestamp_ms,
                              now_ms=now_ms, kraft_control=kraft_control,
                              fsync=self.fsync_policy != "never")
        self._snapshots = sorted(set(self._snapshots) | {snapshot_id})
        return path

    def install_snapshot_file(self, snapshot_id: SnapshotId, source: Path) -> Path:
        """Move a complete snapshot written elsewhere in the directory (a download's ``.part``)
        into place: fsync it, rename it atomically, make the rename durable."""
        target = self.directory / snapshot_id.file_name
        if self.fsync_policy != "never":
            fd = os.open(source, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(source, target)
        if self.fsync_policy != "never":
            fsync_directory(self.directory)
        self._snapshots = sorted(set(self._snapshots) | {snapshot_id})
        return target

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Remove every segment and restart the log, empty, at ``offset`` (Kafka's name for
        what a follower does once it has installed the leader's snapshot).

        The emptied epoch checkpoint is written first and segments go newest first, so a
        crash midway leaves at most a prefix of the old log, and no epochs.
        """
        self._active.close()
        self.epochs = LeaderEpochCache()
        self._save_epochs()
        for _, path in reversed(list_log_dir(self.directory).segments):
            os.unlink(path)
        self._start_segment(offset)  # fsyncs the directory: the unlinks are durable too

    def delete_before_latest_snapshot(self) -> list[Path]:
        """Delete segments wholly below the newest snapshot, and every older snapshot.

        A segment goes only when the next segment starts at or below the snapshot's
        end offset, so every offset at or after it stays readable.
        """
        if not self._snapshots:
            return []
        latest = self._snapshots[-1]
        listing = list_log_dir(self.directory)
        doomed = [path for sid, path in listing.snapshots if sid < latest]
        segments = listing.segments
        for (base, path), (next_base, _) in zip(segments, segments[1:]):
            if next_base <= latest.end_offset and path != self._active.path:
                doomed.append(path)
        for path in doomed:
            os.unlink(path)
        if doomed and self.fsync_policy != "never":
            fsync_directory(self.directory)
        self._snapshots = [latest]
        if self.epochs.truncate_from_start(self.start_offset):
            self._save_epochs()
        return doomed

    def truncate_to(self, offset: int) -> int:
        """Cut the log so that it ends at or below ``offset`` (a follower whose log diverged).

        The cut falls on a batch boundary: a batch holding ``offset`` goes whole. Returns
        the new log end offset. Offsets inside the newest snapshot cannot be cut.
        """
        if self._snapshots and offset < self._snapshots[-1].end_offset:
            raise StorageError(f"cannot truncate to {offset}: below the snapshot at "
                               f"{self._snapshots[-1].end_offset}", path=str(self.directory))
        if offset >= self.end_offset:
            return self.end_offset
        self._active.close()
        new_end = None
        for base, path in reversed(list_log_dir(self.directory).segments):
            if base >= offset and base > 0 and new_end is None:
                os.unlink(path)
                continue
            new_end = self._cut_segment(path, base, offset)
            break
        new_end = offset if new_end is None else new_end
        if self.fsync_policy != "never":
            fsync_directory(self.directory)
        if self.epochs.truncate_from_end(new_end):
            self._save_epochs()
        self._open_active_after_truncation(new_end)
        return new_end

    def _cut_segment(self, path: Path, base: int, offset: int) -> int:
        position, end_offset = 0, base
        for pos, header in read_batch_headers(path):
            if header.last_offset >= offset:
                break
            position, end_offset = pos + header.size_bytes, header.last_offset + 1
        truncate_file(path, position)
        return end_offset

    def _open_active_after_truncation(self, end_offset: int) -> None:
        segments = list_log_dir(self.directory).segments
        if not segments:
            self._start_segment(end_offset)
            return
        base, path = segments[-1]
        self._active = SegmentWriter(path, base, path.stat().st_size, end_offset)
