"""The archive a recorder writes: Kafka's own log directory format, plus a manifest and a lock.

    DIR/__cluster_metadata-0/NNNNNNNNNNNNNNNNNNNN.log    the committed batches, as the leader served them
    DIR/__cluster_metadata-0/<end>-<epoch>.checkpoint     snapshots (every N records, and at each gap)
    DIR/archive.json                                      the manifest (metashell.record.manifest)
    DIR/.lock                                             the recorder writing it (metashell.record.archive_lock)

Durability: batches are queued by ``append`` / ``reset`` and written by ``commit``, which fsyncs
every segment it wrote to (and the directory when it made files) before the manifest says the
offsets are held. A failed commit (a full disk, a file size limit) undoes what it wrote since the
last one (segments created are removed, the active segment cut back to its committed size), keeps
the queue, and raises ArchiveWriteError naming the file and the OS error: the next ``commit``
tries again, and the archive on disk is whole all the while.

Opening recovers the newest segment as Kafka recovers one (engine.storage.log_segment: a torn
tail cut back to the last whole batch, damage refused), reconciles the manifest with what the
segments hold (batches fsynced after the last manifest was written are kept; a hole the manifest
does not know is recorded as a gap), and says what it did in ``notes``.

A gap: the leader's log moved past what the archive holds (it snapshotted and deleted its
segments while the recorder was away or behind). ``reset`` writes the leader's snapshot as
``B-epoch.checkpoint`` (its bytes as fetched), starts a new segment at B, and the manifest
records the gap, first and resume offsets, why and when. Nothing is ever written into the hole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

from engine.common.errors import MetadataError, StorageError
from engine.common.file_io import fsync_directory, write_bytes_atomically
from engine.records.record_batch import decode_batch
from engine.storage.log_reader import METADATA_PARTITION_DIR, list_log_dir
from engine.storage.log_segment import read_segment_bytes, scan_segment, segment_file_name, truncate_file
from engine.storage.snapshot_writer import PARTIAL_SUFFIX, SnapshotId
from metashell.record.archive_lock import ArchiveLock
from metashell.record.manifest import ArchiveGap, Dropped, Manifest, read_manifest, write_manifest, manifest_path

DEFAULT_SEGMENT_BYTES = 100 * 1024 * 1024


class ArchiveWriteError(StorageError):
    """A write failed; the archive stands as of the last commit and the writes are queued for a retry."""


@dataclass(frozen=True, slots=True)
class _Batch:
    raw: bytes
    base: int
    last: int
    epoch: int


@dataclass(frozen=True, slots=True)
class _Reset:
    data: bytes
    snapshot_id: SnapshotId
    reason: str
    recorded_ms: int


@dataclass(slots=True)
class _Durable:
    """What the last commit left on disk: what a failed commit goes back to."""

    segments: list[tuple[int, Path]]
    active_size: int
    next_offset: int | None  # None: the archive holds nothing yet
    last_epoch: int
    manifest: Manifest
    snapshots: list[SnapshotId]


class Archive:
    """An archive opened for writing by its one recorder. Not thread-safe."""

    def __init__(self, root: Path, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES):
        self.root = Path(root)
        self.partition = self.root / METADATA_PARTITION_DIR
        self.segment_bytes = segment_bytes
        self.notes: list[str] = []  # what opening found and did, a line each
        self._lock = ArchiveLock(self.root)
        self._queue: list[_Batch | _Reset] = []
        self._fd: int | None = None
        self._state: _Durable | None = None
        self.records_since_snapshot = 0

    # -- opening ------------------------------------------------------------------------------

    def open(self) -> "Archive":
        """Lock, recover and reconcile; StorageError / ArchiveLocked (one line) when it cannot."""
        if self.root.exists() and not self.root.is_dir():
            raise StorageError("not a directory", path=str(self.root))
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()
        try:
            self._open_locked()
        except BaseException:
            self._lock.release()
            raise
        return self

    def _open_locked(self) -> None:
        has_files = self.partition.is_dir() and any(self.partition.iterdir())
        if not manifest_path(self.root).exists():
            if has_files:
                raise StorageError(f"holds a log but no {manifest_path(self.root).name}: not an archive a recorder "
                                   "wrote (give an empty or new directory)", path=str(self.root))
            self.partition.mkdir(exist_ok=True)
            write_manifest(self.root, Manifest())
        manifest = read_manifest(self.root)
        self.partition.mkdir(exist_ok=True)
        for leftover in self.partition.glob(f"*{PARTIAL_SUFFIX}"):
            leftover.unlink()  # an interrupted snapshot write: never visible to readers
        listing = list_log_dir(self.partition)
        segments = list(listing.segments)
        snapshots = [sid for sid, _ in listing.snapshots]
        next_offset, last_epoch, active_size = None, 0, 0
        if segments:
            base, path = segments[-1]
            buf = read_segment_bytes(path)
            scan = scan_segment(buf, str(path))
            if scan.has_torn_tail:
                truncate_file(path, scan.valid_bytes)
                self.notes.append(f"recovered {path}: cut {len(buf) - scan.valid_bytes} bytes of torn tail after the "
                                  f"last whole batch ({scan.tail_error.reason}), as Kafka recovers a segment")
            active_size = scan.valid_bytes
            next_offset = scan.next_offset if scan.next_offset is not None else base
            last_epoch = _last_epoch(buf[:scan.valid_bytes]) if scan.next_offset is not None else None
        segments_end = next_offset  # one past the last record the segments hold
        if segments and snapshots and snapshots[-1].end_offset > next_offset:
            # stopped inside a gap's writing: the leader's snapshot is there, its segment is not yet
            segments.append(self._first_segment_after_gap(snapshots[-1]))
            active_size, segments_end = 0, snapshots[-1].end_offset
        if snapshots and (next_offset is None or snapshots[-1].end_offset >= next_offset):
            next_offset, last_epoch = max(next_offset or 0, snapshots[-1].end_offset), snapshots[-1].epoch
        if last_epoch is None:
            last_epoch = _epoch_before(segments[:-1], snapshots)
        reconciled = self._reconcile(manifest, segments, segments_end, snapshots)
        if reconciled != manifest:
            write_manifest(self.root, reconciled)  # what the files hold, said before anything is added
        manifest = reconciled
        self._state = _Durable(segments, active_size, next_offset, last_epoch, manifest, snapshots)
        if segments:
            self._fd = os.open(segments[-1][1], os.O_WRONLY | os.O_APPEND)

    def _first_segment_after_gap(self, snapshot: SnapshotId) -> tuple[int, Path]:
        path = self.partition / segment_file_name(snapshot.end_offset)
        path.touch()
        fsync_directory(self.partition)
        self.notes.append(f"the snapshot {snapshot.file_name} was written before the last stop, the segment after it "
                          f"was not: {path.name} made")
        return snapshot.end_offset, path

    def _reconcile(self, manifest: Manifest, segments, next_offset: int | None,
                   snapshots: list[SnapshotId]) -> Manifest:
        """The manifest as the files stand: offsets fsynced after it was written become held; a hole
        between segments it does not know becomes a gap; its snapshots are the files'."""
        expected = manifest.last_offset + 1 if manifest.last_offset >= 0 else None
        for index, (base, path) in enumerate(segments):
            if index + 1 < len(segments) and expected is not None and segments[index + 1][0] <= expected:
                continue  # wholly within what the manifest knows
            end = _segment_end(path, base) if index + 1 < len(segments) else next_offset
            if expected is not None and base > expected and manifest.gap_for(expected) is None:
                gap = ArchiveGap(expected, base, "a hole between segments found at restart: the recorder stopped "
                                 "before recording why", 0)
                manifest = replace(manifest, gaps=manifest.gaps + (gap,))
                self.notes.append(f"offsets {expected} to {base - 1} are in no segment: recorded as a gap")
                expected = base
            if end is None or end <= base or (expected is not None and end <= expected):
                continue
            first = max(base, expected) if expected is not None else base
            if end - 1 >= first:
                manifest = manifest.held(first, end - 1)
                if expected is not None:
                    self.notes.append(f"{path.name}: offsets {first} to {end - 1} were written before the last stop "
                                      "and are kept")
            expected = end
        if manifest.last_offset >= 0 and next_offset is not None and next_offset <= manifest.last_offset:
            self.notes.append(f"the manifest held offsets up to {manifest.last_offset}, the segments only up to "
                              f"{next_offset - 1}: going on from {next_offset}")
            manifest = _cut_ranges(manifest, next_offset - 1)
        return replace(manifest, snapshots=tuple((s.end_offset, s.epoch) for s in snapshots))

    # -- what it holds ------------------------------------------------------------------------

    @property
    def manifest(self) -> Manifest:
        return self._state.manifest

    @property
    def next_offset(self) -> int | None:
        """The offset the next batch must start at (after the queue); None while the archive holds nothing."""
        for item in reversed(self._queue):
            return item.last + 1 if isinstance(item, _Batch) else item.snapshot_id.end_offset
        return self._state.next_offset

    @property
    def durable_offset(self) -> int:
        """The last offset the manifest says is held (-1: none)."""
        return self._state.manifest.last_offset

    @property
    def last_epoch(self) -> int:
        for item in reversed(self._queue):
            return item.epoch if isinstance(item, _Batch) else item.snapshot_id.epoch
        return self._state.last_epoch

    @property
    def queued(self) -> int:
        return len(self._queue)

    def set_cluster_id(self, cluster_id: str) -> None:
        """Record the cluster id of a new archive; StorageError when the archive is another cluster's."""
        known = self._state.manifest.cluster_id
        if known is not None and known != cluster_id:
            raise StorageError(f"the archive is of cluster {known}, the quorum is cluster {cluster_id}: refused "
                               "(record another cluster in another directory)", path=str(self.root))
        if known is None:
            self._state.manifest = replace(self._state.manifest, cluster_id=cluster_id)
            write_manifest(self.root, self._state.manifest)

    # -- writing ------------------------------------------------------------------------------

    def append(self, raw: bytes) -> None:
        """Queue one batch (its bytes as the leader served them) for the next commit."""
        header, _ = decode_batch(raw, 0, decode_records=False)
        self._queue.append(_Batch(raw, header.base_offset, header.last_offset, header.partition_leader_epoch))

    def reset(self, data: bytes, snapshot_id: SnapshotId, reason: str, recorded_ms: int) -> None:
        """Queue the leader's snapshot: the log goes on at its end offset (a gap when past what is held)."""
        self._queue.append(_Reset(data, snapshot_id, reason, recorded_ms))

    def commit(self) -> None:
        """Write the queue and make it durable, then the manifest; ArchiveWriteError (nothing changed) on failure."""
        if not self._queue:
            return
        state = self._state
        work = _Durable(list(state.segments), state.active_size, state.next_offset, state.last_epoch,
                        state.manifest, list(state.snapshots))
        made: list[Path] = []
        try:
            for item in self._queue:
                if isinstance(item, _Batch):
                    self._write_batch(work, item, made)
                else:
                    self._write_reset(work, item, made)
            if self._fd is not None:
                os.fsync(self._fd)
            if made:
                fsync_directory(self.partition)
            write_manifest(self.root, work.manifest)
        except (OSError, StorageError) as exc:
            self._undo(made)
            raise ArchiveWriteError(*_what_failed(exc)) from None
        self.records_since_snapshot += sum(i.last - i.base + 1 for i in self._queue if isinstance(i, _Batch))
        self._state, self._queue = work, []

    def _write_batch(self, work: _Durable, batch: _Batch, made: list[Path]) -> None:
        if work.next_offset is not None and batch.last < work.next_offset:
            return  # held already (handed over twice)
        if work.next_offset is not None and batch.base > work.next_offset:
            raise StorageError(f"batch at offset {batch.base} would leave a hole after {work.next_offset - 1}",
                               path=str(self.partition))
        if self._fd is None or (work.active_size > 0 and work.active_size + len(batch.raw) > self.segment_bytes):
            self._roll(work, batch.base if work.next_offset is None else work.next_offset, made)
        _write_all(self._fd, batch.raw, work.segments[-1][1])
        work.active_size += len(batch.raw)
        work.next_offset, work.last_epoch = batch.last + 1, batch.epoch
        first = batch.base if work.manifest.last_offset < 0 else max(batch.base, work.manifest.last_offset + 1)
        work.manifest = work.manifest.held(first, batch.last)

    def _roll(self, work: _Durable, base: int, made: list[Path]) -> None:
        """Close the active segment (fsynced) and start one at ``base``."""
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        path = self.partition / segment_file_name(base)
        if work.segments and work.segments[-1][0] == base:  # an empty segment already there (after a gap)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            return
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        made.append(path)
        work.segments.append((base, path))
        work.active_size = 0

    def _write_reset(self, work: _Durable, reset: _Reset, made: list[Path]) -> None:
        sid = reset.snapshot_id
        path = self.partition / sid.file_name
        if not path.exists():
            made.append(path)
            write_bytes_atomically(path, reset.data, temp_suffix=PARTIAL_SUFFIX)
            work.snapshots = sorted(set(work.snapshots) | {sid})
        held_end = work.next_offset
        if held_end is not None and sid.end_offset <= held_end:
            work.manifest = replace(work.manifest, snapshots=_pairs(work.snapshots))
            return  # nothing skipped: the snapshot covers offsets held already
        if held_end is not None and work.manifest.last_offset >= 0:
            gap = ArchiveGap(held_end, sid.end_offset, reset.reason, reset.recorded_ms)
            work.manifest = replace(work.manifest, gaps=work.manifest.gaps + (gap,))
        self._roll(work, sid.end_offset, made)
        work.next_offset, work.last_epoch = sid.end_offset, sid.epoch
        work.manifest = replace(work.manifest, snapshots=_pairs(work.snapshots))
        if work.manifest.first_offset < 0:
            work.manifest = replace(work.manifest, first_offset=sid.end_offset)

    def _undo(self, made: list[Path]) -> None:
        """Back to the last commit: files made since removed, the active segment cut to its durable size."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for path in reversed(made):
            path.unlink(missing_ok=True)
        for leftover in self.partition.glob(f"*{PARTIAL_SUFFIX}"):
            leftover.unlink(missing_ok=True)
        state = self._state
        if state.segments:
            path = state.segments[-1][1]
            try:
                truncate_file(path, state.active_size)
            except OSError:
                pass  # reopened below at its durable size all the same; the next open recovers a torn tail
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    # -- snapshots and retention -----------------------------------------------------------------

    def add_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> Path:
        """Write a snapshot of the archive's own image (the queue must be committed); ArchiveWriteError on failure."""
        if self._queue or snapshot_id.end_offset != self._state.next_offset:
            raise ValueError("a snapshot is written at the committed end of the archive")
        state = self._state
        standing = next((held for held in state.snapshots if held.end_offset == snapshot_id.end_offset), None)
        if standing is not None:
            # one already stands at this offset (the leader's, kept as fetched at a gap): never
            # replaced by our re-encoding, nor lost to a failed write of it
            self.records_since_snapshot = 0
            return self.partition / standing.file_name
        path = self.partition / snapshot_id.file_name
        try:
            write_bytes_atomically(path, data, temp_suffix=PARTIAL_SUFFIX)
            snapshots = sorted(set(state.snapshots) | {snapshot_id})
            manifest = replace(state.manifest, snapshots=_pairs(snapshots))
            write_manifest(self.root, manifest)
        except (OSError, StorageError) as exc:
            path.unlink(missing_ok=True)
            raise ArchiveWriteError(*_what_failed(exc)) from None
        state.snapshots, state.manifest = snapshots, manifest
        self.records_since_snapshot = 0
        return path

    def drop_older_than(self, cutoff_ms: int, now_ms: int, retention_ms: int) -> str | None:
        """Retention: delete the oldest whole segments whose records are all stamped before
        ``cutoff_ms``, as long as a snapshot at or after the next segment's start remains to
        replay from; the manifest first says so, then the files go. One line, or None."""
        state = self._state
        segments, snapshots = state.segments, state.snapshots
        doomed = 0
        for index in range(len(segments) - 1):
            if _max_timestamp(segments[index][1]) >= cutoff_ms:
                break
            if not any(s.end_offset >= segments[index + 1][0] for s in snapshots):
                break
            doomed = index + 1
        if doomed == 0:
            return None
        new_base = segments[doomed][0]
        start = min(s for s in snapshots if s.end_offset >= new_base)
        kept_snapshots = [s for s in snapshots if s >= start]
        old_first = state.manifest.first_offset
        manifest = _cut_ranges_before(state.manifest, new_base)
        manifest = replace(manifest, snapshots=_pairs(kept_snapshots), dropped=manifest.dropped + (
            Dropped(old_first, new_base - 1, f"older than --retention-ms {retention_ms}", now_ms),))
        write_manifest(self.root, manifest)
        for _, path in segments[:doomed]:
            path.unlink(missing_ok=True)
        for sid in snapshots:
            if sid < start:
                (self.partition / sid.file_name).unlink(missing_ok=True)
        fsync_directory(self.partition)
        state.segments, state.snapshots, state.manifest = segments[doomed:], kept_snapshots, manifest
        return (f"retention: dropped offsets {old_first} to {new_base - 1} ({doomed} segments older than "
                f"{retention_ms} ms); the archive now starts at {new_base}, replayable from snapshot "
                f"{start.file_name}")

    def close(self) -> None:
        """Commit what is queued (a failure is raised after the lock is released), close, unlock."""
        try:
            if self._state is not None:
                self.commit()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._lock.release()


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except OSError as exc:
            exc.filename = exc.filename or str(path)
            raise


def _what_failed(exc: Exception) -> tuple[str]:
    if isinstance(exc, StorageError):
        return (exc.one_line(),)
    where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
    return (f"{where}cannot write: {exc.strerror or exc}",)


def _pairs(snapshots: Iterable[SnapshotId]) -> tuple[tuple[int, int], ...]:
    return tuple((s.end_offset, s.epoch) for s in snapshots)


def _last_epoch(buf: bytes) -> int:
    epoch, pos = 0, 0
    while pos < len(buf):
        header, pos = decode_batch(buf, pos, verify_crc=False, decode_records=False)
        epoch = header.partition_leader_epoch
    return epoch


def _epoch_before(segments: Sequence[tuple[int, Path]], snapshots: Sequence[SnapshotId]) -> int:
    """The leader epoch of the last record before an empty newest segment (an older segment's
    last batch, or the snapshot it starts at)."""
    for _, path in reversed(segments):
        buf = read_segment_bytes(path)
        if buf:
            return _last_epoch(buf)
    return snapshots[-1].epoch if snapshots else 0


def _segment_end(path: Path, base: int) -> int:
    """One past the last whole batch of a (closed) segment; its base when it holds none."""
    buf = read_segment_bytes(path)
    end, pos = base, 0
    try:
        while pos < len(buf):
            header, pos = decode_batch(buf, pos, verify_crc=False, decode_records=False)
            end = header.last_offset + 1
    except MetadataError:
        pass  # a closed segment's torn tail: its whole batches count
    return end


def _max_timestamp(path: Path) -> int:
    buf = read_segment_bytes(path)
    newest, pos = -1, 0
    try:
        while pos < len(buf):
            header, pos = decode_batch(buf, pos, verify_crc=False, decode_records=False)
            newest = max(newest, header.max_timestamp)
    except MetadataError:
        return 2 ** 63 - 1  # damaged: never judged old enough to go
    return newest


def _cut_ranges(manifest: Manifest, last: int) -> Manifest:
    ranges = tuple((a, min(b, last)) for a, b in manifest.ranges if a <= last)
    return replace(manifest, ranges=ranges, last_offset=ranges[-1][1] if ranges else -1,
                   first_offset=ranges[0][0] if ranges else manifest.first_offset)


def _cut_ranges_before(manifest: Manifest, first: int) -> Manifest:
    ranges = tuple((max(a, first), b) for a, b in manifest.ranges if b >= first)
    gaps = tuple(g for g in manifest.gaps if g.resume > first)
    return replace(manifest, ranges=ranges, gaps=gaps, first_offset=ranges[0][0] if ranges else first)


__all__ = ["Archive", "ArchiveWriteError", "DEFAULT_SEGMENT_BYTES"]
