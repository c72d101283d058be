"""Holes between segments: the gaps of an archive (metashell record, docs/recorder.md).

A log directory Kafka writes has no holes: each segment starts where the one before it ends.
An archive may: when its recorder fell behind the leader's log start, the leader's snapshot was
written at B and a new segment started at B, and the offsets after the last segment's end A up to
B - 1 are in no file. A replay never runs across such a hole (the records in it are missing, as
damaged ones are): the runs a log reaches stop at A and start again at the snapshot at B.

The archive's manifest (``archive.json`` beside ``__cluster_metadata-0``) says why each gap is
there; this module reads that one field itself, tolerantly (engine never imports metashell): a
manifest that is missing or does not read leaves the hole described by its offsets alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.common.errors import CorruptRecordError

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


def manifest_reason(directory: Path, first: int, resume: int) -> str | None:
    """The reason the archive's manifest gives for a gap overlapping ``first``..``resume`` - 1, if any."""
    path = Path(directory).parent / MANIFEST_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        for gap in data.get("gaps", []):
            if int(gap["first"]) < resume and first < int(gap["resume"]):
                return str(gap["reason"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return None
