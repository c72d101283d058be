"""``FileRaftLog``: the RaftLog contract over MetadataLog (Kafka's on-disk layout).

Appends are fsynced only by ``flush()`` (fsync policy "explicit": the Raft layer
flushes before it votes or acknowledges). Truncation, snapshots and retention are
durable as soon as they return. Reads hand out the file bytes themselves, through
an in-memory index of every batch (segment, byte position, size), never re-encoded.

A snapshot download is written to ``<id>.checkpoint.part`` (which MetadataLog
deletes when it opens: a crash loses a partial download), validated, renamed into
place, and then the log restarts, empty, at the snapshot's end offset. Opening
repeats that reset if a crash came in between (Kafka's truncateToLatestSnapshot), and
deletes snapshots older than a log that starts at or after the latest one (Kafka's
recoverSnapshots drops those below the log start offset).
"""

from __future__ import annotations

import os
import secrets
from collections import OrderedDict
from bisect import bisect_left
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence

from engine.common.errors import StorageError
from engine.common.file_io import write_new_file
from engine.storage.log_reader import list_log_dir, read_batch_headers
from engine.storage.metadata_log import DEFAULT_SEGMENT_BYTES, FsyncPolicy, MetadataLog
from engine.records.metadata_record_serde import AnyRecord, ControlRecord, UnknownRecord
from engine.raft.memory_raft_log import (answer_end_offset_for_epoch, answer_last_fetched_epoch, check_fetched_batch,
                                         check_new_snapshot_id, check_snapshot_bytes, decode_all, leader_batch_bytes,
                                         snapshot_is_ahead)
from engine.raft.raft_log import LogBatch, OffsetAndEpoch
from engine.storage.snapshot_writer import PARTIAL_SUFFIX, SnapshotId, snapshot_bytes

_READ_CHUNK = 1 << 20  # batches() reads the files this much at a time
# The records of the latest batches this leader appended, handed back by batches() instead of
# decoding the bytes just encoded (Kafka's leader too commits to its listeners the records it
# holds in memory: KafkaRaftClient.appendBatch -> maybeFireHandleCommit). Bounded: a batch that
# fell out is decoded from the file, as any other.
_KEEP_BATCHES = 64
_KEEP_RECORDS = 50_000


class FileRaftLog:
    """RaftLog on disk. One owner, not thread-safe (as MetadataLog)."""

    def __init__(self, log: Path | str | MetadataLog, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 fsync_policy: FsyncPolicy = "explicit"):
        """``log``: a ``__cluster_metadata-0`` directory, or a MetadataLog opened already (its
        fsync policy then stands; "never" makes flush() no promise of durability)."""
        self._log = log if isinstance(log, MetadataLog) else MetadataLog(
            Path(log), segment_bytes=segment_bytes, fsync_policy=fsync_policy)
        self.directory = self._log.directory
        # The batch index: parallel lists, ordered by offset.
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._paths: list[Path] = []
        self._positions: list[int] = []
        self._sizes: list[int] = []
        self._fds: dict[Path, int] = {}
        self._download: tuple[SnapshotId, Path, BinaryIO, int] | None = None
        self._closed = False
        self._appended: OrderedDict[int, tuple[int, tuple[AnyRecord, ...]]] = OrderedDict()  # base -> (last, records)
        self._appended_records = 0
        self._load_index()
        latest = self.latest_snapshot_id()
        data_end = self._lasts[-1] + 1 if self._lasts else self._log.active_segment[1]
        if snapshot_is_ahead(latest, data_end, self._log.epochs):
            self._reset_to(latest)  # a crash between installing a snapshot and emptying the log
        elif latest is not None and len(self._log.snapshots) > 1 and self._first_segment_base >= latest.end_offset:
            # The log starts at or after the latest snapshot, so every older one (the format's
            # 0-0 checkpoint) lies below the log start: Kafka's open deletes those. No segment
            # goes: none lies wholly below the latest snapshot.
            self._log.delete_before_latest_snapshot()
        # What survived a process crash may still sit in the page cache only: fsync it before
        # anything (a fetch offset) acknowledges it.
        self._log.flush()
        self._flushed_end = self.end_offset

    @classmethod
    def open(cls, metadata_log_dir: Path, **kwargs) -> "FileRaftLog":
        """Open ``metadata_log_dir/__cluster_metadata-0``, creating it if needed."""
        kwargs.setdefault("fsync_policy", "explicit")
        return cls(MetadataLog.create(Path(metadata_log_dir), **kwargs))

    def _load_index(self) -> None:
        self._close_fds()
        for column in (self._bases, self._lasts, self._paths, self._positions, self._sizes):
            column.clear()
        listing = list_log_dir(self.directory)
        self._first_segment_base = listing.segments[0][0] if listing.segments else self.end_offset
        for _, path in listing.segments:
            for pos, header in read_batch_headers(path):  # CRCs checked once, at open
                self._index(header.base_offset, header.last_offset, path, pos, header.size_bytes)

    def _index(self, base: int, last: int, path: Path, position: int, size: int) -> None:
        self._bases.append(base)
        self._lasts.append(last)
        self._paths.append(path)
        self._positions.append(position)
        self._sizes.append(size)

    # -- positions ----------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self._log.end_offset

    @property
    def start_offset(self) -> int:
        latest = self.latest_snapshot_id()
        return max(self._first_segment_base, latest.end_offset) if latest else self._first_segment_base

    @property
    def flushed_end_offset(self) -> int:
        return self._flushed_end

    def last_fetched_epoch(self) -> int:
        return answer_last_fetched_epoch(self._log.epochs, self._lasts[-1] if self._lasts else None,
                                         self.latest_snapshot_id())

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return answer_end_offset_for_epoch(self._log.epochs, epoch, self.end_offset, self.latest_snapshot_id())

    # -- writing ------------------------------------------------------------------------

    def append_as_leader(self, records: Sequence[AnyRecord], *, epoch: int, timestamp_ms: int,
                         control: bool = False) -> OffsetAndEpoch:
        if epoch < self.last_fetched_epoch():
            raise StorageError(f"append in epoch {epoch} after epoch {self.last_fetched_epoch()}",
                               path=str(self.directory))
        base = self.end_offset
        data = leader_batch_bytes(records, base_offset=base, epoch=epoch, timestamp_ms=timestamp_ms,
                                  control=control)
        last = base + len(records) - 1
        self._append(data, base, last)
        self._keep_appended(base, last, records)
        return OffsetAndEpoch(last, epoch)

    def _keep_appended(self, base: int, last: int, records: Sequence[AnyRecord]) -> None:
        """Remember what was just appended, as decoding its bytes gives it back (an
        UnknownRecord's decoded reason could differ: such a batch is decoded)."""
        if any(isinstance(r, UnknownRecord) for r in records):
            return
        self._appended[base] = (last, tuple(records))
        self._appended_records += len(records)
        while len(self._appended) > _KEEP_BATCHES or self._appended_records > _KEEP_RECORDS:
            _, (_, dropped) = self._appended.popitem(last=False)
            self._appended_records -= len(dropped)

    def _forget_appended(self) -> None:
        self._appended.clear()
        self._appended_records = 0

    def append_as_follower(self, data: bytes) -> int:
        self._forget_appended()  # no longer the leader of what follows
        pos = 0
        while pos < len(data):
            try:
                end, base, last, _ = check_fetched_batch(data, pos, end_offset=self.end_offset,
                                                         min_epoch=self.last_fetched_epoch())
            except StorageError as exc:
                raise exc.at(path=str(self.directory)) from None
            self._append(bytes(data[pos:end]), base, last)
            pos = end
        return self.end_offset

    def _append(self, data: bytes, base: int, last: int) -> None:
        self._log.append_batch_bytes(data, last + 1)  # may roll to a new segment first
        path, _, size = self._log.active_segment
        self._index(base, last, path, size - len(data), len(data))

    def truncate_to(self, offset: int) -> int:
        latest = self.latest_snapshot_id()
        if offset < self.start_offset:
            raise StorageError(f"cannot truncate to {offset}: below the log start offset {self.start_offset}",
                               path=str(self.directory))
        if offset >= self.end_offset:
            return self.end_offset
        index = bisect_left(self._lasts, offset)
        if index == len(self._lasts):
            return self.end_offset
        if latest is not None and self._bases[index] < latest.end_offset:
            raise StorageError(f"cannot truncate to {offset}: the batch at {self._bases[index]} holds offsets "
                               f"of the snapshot ending at {latest.end_offset}", path=str(self.directory))
        self._close_fds()
        self._forget_appended()
        new_end = self._log.truncate_to(offset)  # cuts at the same batch boundary
        if new_end == self._bases[index]:
            for column in (self._bases, self._lasts, self._paths, self._positions, self._sizes):
                del column[index:]
        else:  # offsets with gaps (a foreign directory): trust the files
            self._load_index()
        self._refresh_first_segment()
        self._flushed_end = min(self._flushed_end, new_end)  # the cut is fsynced already
        return new_end

    def flush(self) -> None:
        self._log.flush()
        self._flushed_end = self.end_offset

    def _refresh_first_segment(self) -> None:
        segments = list_log_dir(self.directory).segments
        self._first_segment_base = segments[0][0] if segments else self.end_offset

    # -- reading ------------------------------------------------------------------------

    def _check_offset(self, offset: int) -> None:
        if not self.start_offset <= offset <= self.end_offset:
            raise StorageError(f"offset {offset} is outside the log [{self.start_offset}, {self.end_offset}]",
                               path=str(self.directory))

    def _fd(self, path: Path) -> int:
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_RDONLY)
        return fd

    def _close_fds(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _read_span(self, first: int, stop: int) -> bytes:
        """The bytes of index entries [first, stop): one pread per segment they lie in."""
        parts = []
        run = first
        while run < stop:
            path, end = self._paths[run], run + 1
            while end < stop and self._paths[end] == path:
                end += 1
            position = self._positions[run]
            length = self._positions[end - 1] + self._sizes[end - 1] - position
            data = os.pread(self._fd(path), length, position)
            if len(data) != length:
                raise StorageError(f"segment ends at byte {position + len(data)}, the index expects "
                                   f"{position + length}", path=str(path))
            parts.append(data)
            run = end
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        self._check_offset(start_offset)
        first = bisect_left(self._lasts, start_offset)
        if first == len(self._lasts):
            return b""
        stop, total = first + 1, self._sizes[first]  # at least one batch
        while stop < len(self._sizes) and total + self._sizes[stop] <= max_bytes:
            total += self._sizes[stop]
            stop += 1
        return self._read_span(first, stop)

    def batches(self, start_offset: int, end_offset: int | None = None) -> Iterator[LogBatch]:
        self._check_offset(start_offset)
        first = bisect_left(self._lasts, start_offset)
        stop = bisect_left(self._bases, self.end_offset if end_offset is None else end_offset)
        return self._batches(first, stop)

    def _batches(self, first: int, stop: int) -> Iterator[LogBatch]:
        while first < stop:
            end, total = first + 1, self._sizes[first]
            while end < stop and total + self._sizes[end] <= _READ_CHUNK:
                total += self._sizes[end]
                end += 1
            for batch in decode_all(self._read_span(first, end), str(self.directory)):
                kept = self._appended.get(batch.base_offset)
                if kept is not None and kept[0] == batch.last_offset:
                    batch = LogBatch(batch.base_offset, batch.last_offset, batch.epoch, batch.append_time_ms,
                                     batch.control, kept[1], batch.size_bytes)
                yield batch
            first = end

    # -- snapshots ----------------------------------------------------------------------

    def latest_snapshot_id(self) -> SnapshotId | None:
        return self._log.latest_snapshot

    def earliest_snapshot_id(self) -> SnapshotId | None:
        snapshots = self._log.snapshots
        return snapshots[0] if snapshots else None

    def create_snapshot(self, snapshot_id: SnapshotId, records: Sequence[AnyRecord], *,
                        kraft_control: Sequence[ControlRecord], last_contained_log_timestamp_ms: int,
                        now_ms: int) -> None:
        self._check_new_snapshot(snapshot_id)  # before the work of encoding
        data = snapshot_bytes(records, epoch=snapshot_id.epoch, kraft_control=kraft_control, now_ms=now_ms,
                              last_contained_log_timestamp_ms=last_contained_log_timestamp_ms)
        self.install_snapshot(snapshot_id, self.stage_snapshot(snapshot_id, data))

    def _check_new_snapshot(self, snapshot_id: SnapshotId) -> None:
        try:
            check_new_snapshot_id(snapshot_id, end_offset=self.end_offset, latest=self.latest_snapshot_id(),
                                  epochs=self._log.epochs)
        except StorageError as exc:
            raise exc.at(path=str(self.directory)) from None

    def staged_snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        """A new, uniquely named ``.checkpoint.part`` path beside the log for ``snapshot_id``."""
        stem = snapshot_id.file_name[: -len(".checkpoint")]
        return self.directory / f"{stem}.{secrets.token_hex(4)}.checkpoint{PARTIAL_SUFFIX}"

    def stage_snapshot(self, snapshot_id: SnapshotId, data: bytes, part: Path | None = None) -> Path:
        """Write ``data`` to ``part`` (by default a new ``staged_snapshot_path``; fsynced unless
        the policy is "never"). Reads and changes nothing of the log's own state, so it may run
        on another thread, or in a forked child, while the log goes on: the fsync of 100 MB must
        not stop the event loop. A crash leaves only a ``.part``, which opening deletes."""
        if part is None:
            part = self.staged_snapshot_path(snapshot_id)
        try:
            write_new_file(part, data, fsync=self._log.fsync_policy != "never")
        except OSError as err:
            part.unlink(missing_ok=True)
            raise StorageError(f"cannot write snapshot: {err.strerror or err}", path=str(part)) from None
        return part

    def install_snapshot(self, snapshot_id: SnapshotId, staged: Path) -> None:
        """Make a staged snapshot complete (rename, directory fsync). StorageError, the staged
        file deleted and the log unchanged, if it is not past the latest snapshot or not
        within the log."""
        try:
            self._check_new_snapshot(snapshot_id)
            self._log.install_snapshot_file(snapshot_id, staged)
        except (StorageError, OSError) as err:
            staged.unlink(missing_ok=True)
            if isinstance(err, StorageError):
                raise
            raise StorageError(f"cannot install snapshot: {err.strerror or err}", path=str(staged)) from None

    def discard_snapshot(self, staged: Path) -> None:
        staged.unlink(missing_ok=True)

    def _snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        if snapshot_id not in self._log.snapshots:
            raise StorageError(f"no snapshot {snapshot_id.file_name}", path=str(self.directory))
        return self.directory / snapshot_id.file_name

    def snapshot_size(self, snapshot_id: SnapshotId) -> int:
        return self._snapshot_path(snapshot_id).stat().st_size

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        path = self._snapshot_path(snapshot_id)
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if not 0 <= position <= size:
                raise StorageError(f"position {position} is outside the snapshot of {size} bytes", path=str(path))
            return os.pread(handle.fileno(), max(0, min(max_bytes, size - position)), position)

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[LogBatch]:
        path = self._snapshot_path(snapshot_id)
        return decode_all(path.read_bytes(), str(path))

    def begin_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        self._abandon_download()
        part = self.directory / (snapshot_id.file_name + PARTIAL_SUFFIX)
        self._download = (snapshot_id, part, open(part, "wb"), 0)

    def _abandon_download(self) -> None:
        if self._download is not None:
            _, part, handle, _ = self._download
            handle.close()
            part.unlink(missing_ok=True)
            self._download = None

    def _downloading(self, snapshot_id: SnapshotId) -> tuple[SnapshotId, Path, BinaryIO, int]:
        if self._download is None or self._download[0] != snapshot_id:
            raise StorageError(f"no download of snapshot {snapshot_id.file_name} in progress",
                               path=str(self.directory))
        return self._download

    def append_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, data: bytes) -> None:
        _, part, handle, size = self._downloading(snapshot_id)
        if position != size:
            raise StorageError(f"snapshot chunk at position {position}, the download has {size} bytes",
                               path=str(part))
        handle.write(data)
        self._download = (snapshot_id, part, handle, size + len(data))

    def complete_snapshot_download(self, snapshot_id: SnapshotId) -> None:
        _, part, handle, _ = self._downloading(snapshot_id)
        handle.flush()
        try:
            check_snapshot_bytes(part.read_bytes())
        except StorageError as exc:
            raise exc.at(path=str(part)) from None
        latest = self.latest_snapshot_id()
        if latest is not None and snapshot_id.end_offset <= latest.end_offset:
            raise StorageError(f"downloaded snapshot is not past the latest snapshot {latest.file_name}",
                               path=str(part))
        handle.close()
        self._download = None
        self._log.install_snapshot_file(snapshot_id, part)  # fsync, rename, fsync the directory
        self._reset_to(snapshot_id)

    def _reset_to(self, snapshot_id: SnapshotId) -> None:
        """Every segment and every older snapshot goes; the log restarts at the snapshot's end."""
        self._close_fds()
        self._forget_appended()
        self._log.truncate_fully_and_start_at(snapshot_id.end_offset)
        self._log.delete_before_latest_snapshot()
        self._load_index()
        self._flushed_end = self.end_offset

    def delete_before_snapshot(self) -> int:
        if self.latest_snapshot_id() is None:
            return self.start_offset
        self._close_fds()
        deleted = set(self._log.delete_before_latest_snapshot())
        keep = [i for i, path in enumerate(self._paths) if path not in deleted]
        for name in ("_bases", "_lasts", "_paths", "_positions", "_sizes"):
            column = getattr(self, name)
            setattr(self, name, [column[i] for i in keep])
        self._refresh_first_segment()
        return self.start_offset

    def close(self) -> None:
        """Flush and close; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        if self._download is not None:
            self._download[2].close()  # the .part stays; MetadataLog deletes it on the next open
            self._download = None
        self._close_fds()
        self._log.close()
