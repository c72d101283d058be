"""One cluster's files, as the data source plans its tasks from them: plain, picklable values
(strings and ints), so the plan travels to the executors without the driver reading a record.

``ClusterFiles`` is what metashell.spark.paths makes of the paths ``load()`` was given; the
tasks (metashell.spark.plan) carry a slice of it. Offsets come from the files' names: a
segment's base offset, a snapshot's end offset and epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SegmentFile:
    base_offset: int  # the segment's first offset (its file name)
    path: str


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    end_offset: int  # the snapshot holds the state before this offset (its file name)
    epoch: int
    path: str


@dataclass(frozen=True, slots=True)
class ClusterFiles:
    """The metadata files of one log directory (a node's ``__cluster_metadata-0`` or an
    archive's), sorted by offset. ``segments``/``snapshots`` may be a subset of the directory's
    when single files were given; ``log_dir`` is always the directory that holds them."""

    cluster_id: str | None
    log_dir: str  # the __cluster_metadata-0 directory
    segments: tuple[SegmentFile, ...]
    snapshots: tuple[SnapshotFile, ...]
    archive: str | None = None  # the archive's root (archive.json beside __cluster_metadata-0), if one

    def segment_end(self, index: int) -> int | None:
        """The offset after segment ``index``'s last record, as the names tell it: the next
        segment's base offset (None for the last: its end is in the file)."""
        return self.segments[index + 1].base_offset if index + 1 < len(self.segments) else None


def cluster_files_of(log_dir: Path | str, cluster_id: str | None) -> ClusterFiles:
    """Every segment and complete snapshot of ``log_dir`` (a node's log dir or its
    __cluster_metadata-0), by name only."""
    from engine.storage.log_reader import list_log_dir

    listing = list_log_dir(Path(log_dir))
    archive = listing.path.parent if (listing.path.parent / "archive.json").is_file() else None
    return ClusterFiles(cluster_id, str(listing.path),
                        tuple(SegmentFile(base, str(path)) for base, path in listing.segments),
                        tuple(SnapshotFile(sid.end_offset, sid.epoch, str(path)) for sid, path in listing.snapshots),
                        str(archive) if archive else None)
