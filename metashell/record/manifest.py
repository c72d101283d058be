"""``archive.json``: what an archive of a cluster's metadata log holds, beside its segments.

The manifest is the archive's promise: every offset it names as held (``ranges``) is in a
segment that was fsynced before the manifest said so, and every offset between ``first_offset``
and ``last_offset`` that is not held is in a ``gap`` with its reason. It is rewritten whole and
atomically (temp file, fsync, rename, directory fsync), so a crash leaves the old or the new one.

    {"format": 1, "cluster_id": "...", "first_offset": N, "last_offset": N,
     "ranges": [[first, last], ...],
     "gaps": [{"first": A+1, "resume": B, "reason": "one line", "recorded_ms": T}],
     "snapshots": [[end_offset, epoch], ...],
     "dropped": [{"first": F, "last": L, "reason": "one line", "recorded_ms": T}]}

``first_offset`` is -1 and ``last_offset`` -1 while nothing is held. ``dropped`` (ours, beyond the
shared contract's fields) names what ``--retention-ms`` removed, so that an operator sees why
the archive starts where it does. Readers ignore keys they do not know.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.common.errors import StorageError
from engine.common.file_io import read_text_file, write_bytes_atomically

MANIFEST_FILE = "archive.json"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class ArchiveGap:
    """Offsets ``first`` to ``resume`` - 1 that the archive does not hold, and why."""

    first: int
    resume: int
    reason: str
    recorded_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first, "resume": self.resume, "reason": self.reason, "recorded_ms": self.recorded_ms}


@dataclass(frozen=True, slots=True)
class Dropped:
    """Offsets ``first`` to ``last`` removed by retention."""

    first: int
    last: int
    reason: str
    recorded_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "reason": self.reason, "recorded_ms": self.recorded_ms}


@dataclass(frozen=True, slots=True)
class Manifest:
    cluster_id: str | None = None
    first_offset: int = -1
    last_offset: int = -1
    ranges: tuple[tuple[int, int], ...] = ()
    gaps: tuple[ArchiveGap, ...] = ()
    snapshots: tuple[tuple[int, int], ...] = ()
    dropped: tuple[Dropped, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "cluster_id": self.cluster_id, "first_offset": self.first_offset,
                "last_offset": self.last_offset, "ranges": [list(r) for r in self.ranges],
                "gaps": [g.to_json() for g in self.gaps], "snapshots": [list(s) for s in self.snapshots],
                "dropped": [d.to_json() for d in self.dropped]}

    def held(self, first: int, last: int) -> "Manifest":
        """With offsets ``first`` to ``last`` held too (appended after the last range, or extending it)."""
        ranges = list(self.ranges)
        if ranges and first <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], last))
        else:
            ranges.append((first, last))
        start = ranges[0][0]
        return replace(self, ranges=tuple(ranges), first_offset=start, last_offset=ranges[-1][1])

    def gap_for(self, offset: int) -> ArchiveGap | None:
        """The gap that holds ``offset`` (or begins right after it), if any."""
        return next((g for g in self.gaps if g.first <= offset < g.resume), None)


def manifest_path(archive: Path) -> Path:
    return Path(archive) / MANIFEST_FILE


def read_manifest(archive: Path) -> Manifest:
    """The manifest of ``archive``; StorageError (one line naming the file) when it is missing or garbled."""
    path = manifest_path(archive)
    text = read_text_file(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StorageError(f"not an archive manifest: line {exc.lineno} column {exc.colno}: {exc.msg}",
                           path=str(path)) from None
    try:
        return _parse(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"not an archive manifest: {_why(exc)}", path=str(path)) from None


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"the key {exc.args[0]!r} is missing"
    return str(exc) or type(exc).__name__


def _parse(data: Any) -> Manifest:
    if not isinstance(data, dict):
        raise ValueError("the manifest is not a JSON object")
    if data.get("format") != FORMAT:
        raise ValueError(f"format {data.get('format')!r}, where this metashell reads format {FORMAT}")
    cluster_id = data.get("cluster_id")
    if cluster_id is not None and not isinstance(cluster_id, str):
        raise ValueError("cluster_id is not a string")
    ranges = tuple(_pair(r, "ranges") for r in _list(data, "ranges"))
    snapshots = tuple(_pair(s, "snapshots") for s in _list(data, "snapshots"))
    gaps = tuple(ArchiveGap(_int(g["first"], "gap first"), _int(g["resume"], "gap resume"), str(g["reason"]),
                            _int(g["recorded_ms"], "gap recorded_ms")) for g in _list(data, "gaps"))
    dropped = tuple(Dropped(_int(d["first"], "dropped first"), _int(d["last"], "dropped last"), str(d["reason"]),
                            _int(d["recorded_ms"], "dropped recorded_ms")) for d in data.get("dropped", []) or [])
    return Manifest(cluster_id, _int(data["first_offset"], "first_offset"), _int(data["last_offset"], "last_offset"),
                    ranges, gaps, snapshots, dropped)


def _list(data: dict, key: str) -> list:
    value = data[key]
    if not isinstance(value, list):
        raise ValueError(f"{key} is not a list")
    return value


def _pair(value: Any, what: str) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"an entry of {what} is not a pair of numbers")
    return _int(value[0], what), _int(value[1], what)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is not a whole number")
    return value


def write_manifest(archive: Path, manifest: Manifest) -> None:
    """Replace the manifest atomically and durably; StorageError naming the file and the OS error."""
    data = (json.dumps(manifest.to_json(), indent=1) + "\n").encode()
    write_bytes_atomically(manifest_path(archive), data)
