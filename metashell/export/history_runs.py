"""The runs of a log directory or an archive that a replay may walk, and the gaps between them.

A replay of the change tables must never cross a gap: records missing between offsets A+1 and
B-1 would leave every "old value" after B wrong, silently. An archive (docs/record.md) says
where its gaps are in its manifest (``archive.json``: the recorder fell behind the leader's log
start and fetched a snapshot, written as ``B-epoch.checkpoint``), and an archive whose manifest
is lost still shows them as holes between its segments; a damaged log directory has gaps where
its batches do not read (engine.image.log_runs.scan_log). Either way the history is
cut there: the first run replays from the directory's earliest point up to the gap, and the
next starts again from the oldest snapshot at or after the gap's end, from that snapshot's image
(its own voters and kraft.version; nothing of the segments before the gap is carried over).

Nothing here looks at what a record changed: each run is a start image and its batches, handed
to the one interpreter of changes (metashell.history.change_items).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from engine.common.errors import MetadataError
from engine.image.log_runs import scan_log
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_snapshot, replay_start, segment_batches
from engine.storage.log_reader import (LogDirListing, LogEntry, list_log_dir, read_batch_headers,
                                       resolve_metadata_dir)

MANIFEST = "archive.json"


@dataclass(frozen=True, slots=True)
class HistoryGap:
    """Offsets ``first`` .. ``resume`` - 1 that no change row speaks of (``resume`` None: the
    history ends at the gap)."""

    first: int
    resume: int | None
    reason: str
    recorded_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """One stretch a replay walks: its start image and, lazily, its batches."""

    image: MetadataImage
    begin: int  # the first offset of its batches
    end: int | None  # one past its last offset (the next gap's first), None: the log's end
    listing: LogDirListing

    def batches(self) -> Iterator[list[LogEntry]]:
        return segment_batches(self.listing, self.begin, [], end=self.end)


def history_runs(log_dir: Path | str) -> tuple[list[Run], list[HistoryGap]]:
    """The runs of ``log_dir`` (a node's log directory, an archive, or its __cluster_metadata-0)
    in log order, and the gaps between them, each with the offset its next run resumes at."""
    directory = resolve_metadata_dir(Path(log_dir))
    listing = list_log_dir(directory)
    first = replay_start(directory, earliest=True)
    runs, out_gaps = [], []
    image, begin = first.image, first.begin
    for gap in known_gaps(directory, listing):
        if gap.resume is not None and gap.resume <= begin:
            continue  # wholly before where the replay stands (or a resume already skipped it)
        if gap.first > begin:
            runs.append(Run(image, begin, gap.first, listing))
        resumed = _resume(listing, gap.resume)
        out_gaps.append(HistoryGap(gap.first, resumed[1] if resumed else None, gap.reason, gap.recorded_ms))
        if resumed is None:
            return runs, out_gaps
        image, begin = resumed
    runs.append(Run(image, begin, None, listing))
    return runs, out_gaps


def known_gaps(directory: Path, listing: LogDirListing) -> list[HistoryGap]:
    """The archive manifest's gaps, the damage a scan of the segments finds, and holes between
    segments, by offset; where more than one names a gap, the manifest's reason (and time) stands."""
    found = {gap.first: gap for gap in _holes(listing)}
    found.update({gap.first: HistoryGap(gap.first, gap.resume, gap.damage) for gap in scan_log(listing).gaps})
    for gap in _manifest_gaps(directory):
        found[gap.first] = gap
    return [found[first] for first in sorted(found)]


def _holes(listing: LogDirListing) -> list[HistoryGap]:
    """Offsets no segment holds: a segment that starts past the end of the one before it (an
    archive whose manifest is lost still says where its gaps are)."""
    holes = []
    segments = listing.segments
    for (_, path), (next_base, _) in zip(segments, segments[1:]):
        last = None
        try:
            for _, header in read_batch_headers(path):
                last = header.last_offset
        except MetadataError:
            continue  # damage: the scan of the segments names it
        if last is not None and last + 1 < next_base:
            holes.append(HistoryGap(last + 1, next_base, f"no segment holds offsets {last + 1} to {next_base - 1} "
                                                         f"({path.name} ends at {last})"))
    return holes


def _manifest_gaps(directory: Path) -> list[HistoryGap]:
    """The gaps ``archive.json`` records (beside __cluster_metadata-0, or in it); none when there
    is no manifest. A manifest that does not read is an error naming it and what is wrong."""
    for candidate in (directory.parent / MANIFEST, directory / MANIFEST):
        if candidate.is_file():
            return _gaps_of(candidate)
    return []


def _gaps_of(path: Path) -> list[HistoryGap]:
    def refused(what: str) -> MetadataError:
        return MetadataError(f"not a readable archive manifest: {what}", path=str(path))

    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise refused(exc.strerror or "it cannot be read") from None
    except ValueError as exc:
        raise refused(f"not JSON ({exc})") from None
    gaps = data.get("gaps", []) if isinstance(data, dict) else None
    if not isinstance(gaps, list):
        raise refused("no list of gaps")
    out = []
    for number, gap in enumerate(gaps):
        gap = gap if isinstance(gap, dict) else {}
        first, resume, recorded_ms = gap.get("first"), gap.get("resume"), gap.get("recorded_ms")
        if not _is_offset(first) or not (resume is None or _is_offset(resume)):
            raise refused(f"gap {number} has no offsets (first, resume)")
        reason = gap.get("reason") if isinstance(gap.get("reason"), str) and gap.get("reason") else \
            "records not recorded"
        out.append(HistoryGap(first, resume, f"archive gap: {reason}", recorded_ms if _is_offset(recorded_ms) else None))
    return out


def _is_offset(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _resume(listing: LogDirListing, resume: int | None) -> tuple[MetadataImage, int] | None:
    """The image and first offset of the run after a gap: the oldest snapshot at or after the
    gap's end that reads (its image holds every offset before its end offset); None when none."""
    if resume is None:
        return None
    for snapshot_id, path in listing.snapshots:
        if snapshot_id.end_offset < resume:
            continue
        try:
            return load_snapshot(path)[0], snapshot_id.end_offset
        except MetadataError:
            continue  # a damaged snapshot: a later one may still resume the history
    return None


def batches_of(runs: Iterable[Run]) -> Iterator[tuple[MetadataImage, Iterator[list[LogEntry]]]]:
    for run in runs:
        yield run.image, run.batches()
