"""``metashell record --status DIR``: what an archive holds, read without taking its lock.

The manifest says what is held and where the gaps are; the files say the rest (segments,
snapshots, size on disk); the records' times come from the first and last batch headers only.
A missing or garbled archive is a StorageError: one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engine.common.errors import MetadataError, StorageError
from engine.image.log_runs import iso_time
from engine.records.record_batch import decode_batch
from engine.storage.log_reader import METADATA_PARTITION_DIR, list_log_dir
from engine.storage.log_segment import read_segment_bytes
from metashell.record.archive_lock import lock_holder
from metashell.record.manifest import Manifest, manifest_path, read_manifest


@dataclass(frozen=True)
class ArchiveStatus:
    path: Path
    manifest: Manifest
    segments: tuple[tuple[int, str, int], ...]  # (base offset, file name, bytes)
    snapshots: tuple[tuple[int, int, str, int], ...]  # (end offset, epoch, file name, bytes)
    size_bytes: int
    first_time_ms: int | None
    last_time_ms: int | None
    recorder_pid: int | None  # the recorder holding the lock now


def archive_status(path: Path) -> ArchiveStatus:
    path = Path(path)
    if not path.is_dir():
        raise StorageError("no such archive (not a directory)", path=str(path))
    if not manifest_path(path).exists():
        raise StorageError(f"not an archive: no {manifest_path(path).name}", path=str(path))
    manifest = read_manifest(path)
    partition = path / METADATA_PARTITION_DIR
    if not partition.is_dir():
        raise StorageError(f"not an archive: no {METADATA_PARTITION_DIR}", path=str(path))
    listing = list_log_dir(partition)
    segments = tuple((base, p.name, _size(p)) for base, p in listing.segments)
    snapshots = tuple((s.end_offset, s.epoch, p.name, _size(p)) for s, p in listing.snapshots)
    size = sum(_size(p) for p in path.rglob("*") if p.is_file())
    first = next((t for _, p in listing.segments for t in [_first_time(p)] if t is not None), None)
    last = next((t for _, p in reversed(listing.segments) for t in [_last_time(p)] if t is not None), None)
    return ArchiveStatus(path, manifest, segments, snapshots, size, first, last, lock_holder(path))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _headers(path: Path):
    buf = read_segment_bytes(path)
    pos = 0
    try:
        while pos < len(buf):
            header, pos = decode_batch(buf, pos, verify_crc=False, decode_records=False)
            yield header
    except MetadataError:
        return  # a torn tail (a write in progress): the whole batches before it stand


def _first_time(path: Path) -> int | None:
    return next((h.base_timestamp for h in _headers(path)), None)


def _last_time(path: Path) -> int | None:
    last = None
    for header in _headers(path):
        last = header.max_timestamp
    return last


def status_lines(status: ArchiveStatus) -> list[str]:
    m = status.manifest
    lines = [f"archive: {status.path}", f"cluster id: {m.cluster_id or '(not known yet)'}"]
    if m.last_offset < 0:
        lines.append("offsets held: none yet")
    else:
        lines.append(f"offsets held: {m.first_offset} to {m.last_offset} "
                     f"({sum(b - a + 1 for a, b in m.ranges):,} records)")
        lines.append("ranges: " + ", ".join(f"{a}-{b}" for a, b in m.ranges))
    if status.first_time_ms is not None and status.last_time_ms is not None:
        lines.append(f"time span: {iso_time(status.first_time_ms)} to {iso_time(status.last_time_ms)}")
    lines.append(f"gaps: {len(m.gaps) or 'none'}")
    for gap in m.gaps:
        lines.append(f"  offsets {gap.first} to {gap.resume - 1} missing (recorded {iso_time(gap.recorded_ms)}): "
                     f"{gap.reason}")
    for dropped in m.dropped:
        lines.append(f"dropped: offsets {dropped.first} to {dropped.last} ({iso_time(dropped.recorded_ms)}): "
                     f"{dropped.reason}")
    lines.append(f"snapshots: {len(status.snapshots)}"
                 + (" (" + ", ".join(name for _, _, name, _ in status.snapshots) + ")" if status.snapshots else ""))
    lines.append(f"segments: {len(status.segments)}"
                 + (" (" + ", ".join(name for _, name, _ in status.segments) + ")" if status.segments else ""))
    lines.append(f"size on disk: {status.size_bytes:,} bytes")
    pid = status.recorder_pid
    lines.append(f"recorder: {'writing (pid ' + str(pid) + ')' if pid else 'none (the lock is free)'}")
    return lines


def status_json(status: ArchiveStatus) -> str:
    data = status.manifest.to_json()
    data.update({"archive": str(status.path),
                 "segments": [{"base_offset": b, "file": n, "bytes": s} for b, n, s in status.segments],
                 "snapshot_files": [{"end_offset": o, "epoch": e, "file": n, "bytes": s}
                                    for o, e, n, s in status.snapshots],
                 "size_bytes": status.size_bytes, "first_time_ms": status.first_time_ms,
                 "last_time_ms": status.last_time_ms, "recorder_pid": status.recorder_pid})
    return json.dumps(data, sort_keys=True)
