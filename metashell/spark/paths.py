"""What ``load()`` was given -> each cluster's files (ClusterFiles), by name only: the driver
reads no record, only directory listings, meta.properties and archive.json.

A path may be:
- a node's log directory (``meta.properties`` beside ``__cluster_metadata-0``),
- a metadata log directory (``__cluster_metadata-0`` itself, or any directory of segments and
  snapshots),
- an archive (``archive.json`` beside ``__cluster_metadata-0``: ``metashell record``'s),
- a single file: a segment (``<offset>.log``) or a snapshot (``<offset>-<epoch>.checkpoint``),
- a glob of any of these (``/archive/*/``; what it matches that is not metadata is passed over,
  with a warning line), or a list of them.

Files are grouped by the log directory that holds them: a directory named whole gives all its
files, single files only themselves. The cluster id comes from ``meta.properties`` beside the log
directory or from the archive's manifest, for single files too; where neither is, the
``clusterId`` option gives it, else the read fails naming the directory.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from engine.common.errors import MetadataError, StorageError
from engine.storage.log_reader import list_log_dir, resolve_metadata_dir
from engine.storage.log_segment import parse_segment_name
from engine.storage.meta_properties import META_PROPERTIES_FILE, read_meta_properties
from engine.storage.snapshot_writer import parse_snapshot_name
from metashell.spark.cluster_files import ClusterFiles, SegmentFile, cluster_files_of

_GLOB_CHARS = ("*", "?", "[")
ARCHIVE_MANIFEST = "archive.json"


class PathError(StorageError):
    """A path the kraft data source cannot read: one line naming it."""


def resolve_paths(paths: Iterable[str], cluster_id: str | None = None) -> list[ClusterFiles]:
    """Each log directory's files, in the order the paths first name them. ``cluster_id``: the
    ``clusterId`` option, used where no meta.properties or archive.json gives one."""
    paths = list(paths)
    if not paths:
        raise PathError("no path: give load() a node directory, a metadata log directory, an archive, "
                        "segment or snapshot files, or a glob")
    whole: dict[str, bool] = {}  # log dir -> named whole
    files: dict[str, list[Path]] = {}  # log dir -> single files named
    for given in paths:
        for path in _in_glob(given, _expand(given)):
            log_dir, single = _classify(path)
            key = str(log_dir)
            if key not in whole:
                whole[key], files[key] = False, []
            if single is None:
                whole[key] = True
            elif single not in files[key]:
                files[key].append(single)
    return [_cluster_files(Path(key), whole[key], files[key], cluster_id) for key in whole]


def _in_glob(given: str, matches: list[Path]) -> list[Path]:
    """The metadata a glob matches. A fleet's directory also holds other things (a README,
    lost+found, a Spark checkpoint): those are passed over with a warning line each (on the
    planning worker's stderr, in Spark's log), and the read fails only when nothing it matches is
    metadata. A path named without a glob must be metadata."""
    if not any(c in os.path.expanduser(str(given)) for c in _GLOB_CHARS):
        return matches
    kept, passed = [], []
    for path in matches:
        try:
            _classify(path)
        except PathError as exc:
            passed.append(str(exc))
            continue
        kept.append(path)
    if not kept:
        raise PathError(f"{given}: the glob matches no metadata ({passed[0]})")
    for line in passed:
        print(f"metashell: warning: {line}: passed over (matched by {given})", file=sys.stderr)
    return kept


def _expand(given: str) -> list[Path]:
    """A path, or the paths a glob matches (sorted), made absolute: the executors read them."""
    text = os.path.expanduser(str(given))
    if any(c in text for c in _GLOB_CHARS):
        matches = sorted(glob.glob(text))
        if not matches:
            raise PathError(f"{given}: the glob matches nothing")
        return [Path(m).absolute() for m in matches]
    path = Path(text).absolute()
    if not path.exists():
        raise PathError(f"{given}: no such file or directory")
    return [path]


def _classify(path: Path) -> tuple[Path, Path | None]:
    """(the log directory, the single file named or None when the directory is named whole)."""
    if path.is_dir():
        try:
            return resolve_metadata_dir(path), None
        except MetadataError as exc:
            raise PathError(f"{path}: {exc.reason}") from None
    if parse_segment_name(path.name) is not None or parse_snapshot_name(path.name) is not None:
        return path.parent, path
    raise PathError(f"{path}: not a metadata segment (<offset>.log) or snapshot (<offset>-<epoch>.checkpoint) file")


def _cluster_files(log_dir: Path, whole: bool, singles: list[Path], cluster_id: str | None) -> ClusterFiles:
    found = cluster_id_of(log_dir) or cluster_id
    if found is None:
        raise PathError(f"{log_dir}: no meta.properties or archive.json beside it names the cluster: "
                        "set option clusterId")
    try:
        listing = cluster_files_of(log_dir, found)
    except MetadataError as exc:
        raise PathError(exc.one_line()) from None
    if whole:
        return listing
    named = {str(p) for p in singles}
    return ClusterFiles(found, listing.log_dir,
                        tuple(s for s in listing.segments if s.path in named),
                        tuple(s for s in listing.snapshots if s.path in named), listing.archive)


def cluster_id_of(log_dir: Path) -> str | None:
    """The cluster id that meta.properties (a node's) or archive.json (an archive's) beside the
    ``__cluster_metadata-0`` directory gives; None when neither is there."""
    parent = Path(log_dir).parent
    if (parent / ARCHIVE_MANIFEST).is_file():
        from metashell.record.manifest import read_manifest

        cluster_id = _cluster_id_in(read_manifest, parent)
        if cluster_id:
            return cluster_id
    for where in (parent, Path(log_dir)):
        if (where / META_PROPERTIES_FILE).is_file():
            cluster_id = _cluster_id_in(read_meta_properties, where)
            if cluster_id:
                return cluster_id
    return None


def _cluster_id_in(read: Callable[[Path], Any], where: Path) -> str | None:
    """``read(where).cluster_id`` (archive.json's or meta.properties'), a damaged file as PathError."""
    try:
        return read(where).cluster_id
    except MetadataError as exc:
        raise PathError(exc.one_line()) from None


def all_segments(files: ClusterFiles) -> tuple[SegmentFile, ...]:
    """Every segment of ``files``' log directory (when single files were named, their neighbours
    too: a transaction that straddles files is resolved by reading them)."""
    listing = list_log_dir(Path(files.log_dir))
    return tuple(SegmentFile(base, str(path)) for base, path in listing.segments)

