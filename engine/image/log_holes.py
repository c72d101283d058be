"""Holes between segments: the gaps of an archive (metashell record, docs/recorder.md).

A log directory Kafka writes has no holes: each segment starts where the one before it ends.
An archive may: when its recorder fell behind the leader's log start, the leader's snapshot was
written at B and a new segment started at B, and the offsets after the last segment's end A up to
B - 1 are in no file. A replay never runs across such a hole (the records in it are missing, as
damaged ones are): the runs a log reaches stop at A and start again at the snapshot at B.

The archive's manifest (``archive.json`` beside ``__cluster_metadata-0``) says why each gap is
there; this module reads its gaps itself (engine never imports metashell): for a hole's line
tolerantly (a manifest that is missing or does not read leaves the hole described by its offsets
alone), for the runs of engine.image.run_replay strictly (a manifest that does not read is one
line naming it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from engine.common.errors import CorruptRecordError, MetadataError

MANIFEST_FILE = "archive.json"
HOLE_NOTE = "not read from here on, a gap in the archive"


class LogHoleError(CorruptRecordError):
    """A replay reached a hole between segments (``first`` to ``resume`` - 1 are in no segment)."""

    def __init__(self, reason: str, *, first: int, resume: int, path: str | None = None):
        self.first, self.resume = first, resume
        super().__init__(reason, path=path)

    def at(self, path: str | None = None, base_offset: int | None = None) -> "LogHoleError":
        return LogHoleError(self.reason, first=self.first, resume=self.resume,
                            path=path if path is not None else self.path)


def hole_line(directory: Path, first: int, resume: int) -> str:
    """The one line naming a hole: offsets, that it is an archive gap, and the manifest's reason."""
    reason = manifest_reason(directory, first, resume)
    why = f": {reason}" if reason else " (no manifest names its reason)"
    return f"archive gap: offsets {first} to {resume - 1} are in no segment{why}"


def hole_error(directory: Path, first: int, resume: int) -> LogHoleError:
    return LogHoleError(hole_line(directory, first, resume), first=first, resume=resume, path=str(directory))


class ManifestGap(NamedTuple):
    """A gap as the manifest records it: offsets ``first`` .. ``resume`` - 1 were never recorded."""

    first: int
    resume: int | None
    reason: str
    recorded_ms: int | None


def manifest_gaps(directory: Path) -> list[ManifestGap]:
    """The gaps ``archive.json`` records (beside __cluster_metadata-0, or in it); none when there
    is no manifest. A manifest that does not read is a MetadataError naming it and what is wrong."""
    for candidate in (Path(directory).parent / MANIFEST_FILE, Path(directory) / MANIFEST_FILE):
        if candidate.is_file():
            return _gaps_of(candidate)
    return []


def manifest_reason(directory: Path, first: int, resume: int) -> str | None:
    """The reason the archive's manifest gives for a gap overlapping ``first``..``resume`` - 1, if
    any; a manifest that does not read names no reason here (the hole is still a gap)."""
    try:
        gaps = manifest_gaps(directory)
    except MetadataError:
        return None
    return next((gap.reason for gap in gaps if overlaps(gap, first, resume)), None)


def overlaps(gap: ManifestGap, first: int, resume: int | None) -> bool:
    return (resume is None or gap.first < resume) and (gap.resume is None or first < gap.resume)


def _gaps_of(path: Path) -> list[ManifestGap]:
    def refused(what: str) -> MetadataError:
        return MetadataError(f"not a readable archive manifest: {what}", path=str(path))

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
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
        reason = gap.get("reason")
        reason = reason if isinstance(reason, str) and reason else "records not recorded"
        out.append(ManifestGap(first, resume, reason, recorded_ms if _is_offset(recorded_ms) else None))
    return out


def _is_offset(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
