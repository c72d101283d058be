"""The offsets a damaged log directory can still answer: a set of runs, not one range.

A replay starts at the log's start or at a snapshot and goes on until the first batch it cannot
read. A batch that fails its CRC (its records damaged, its header's length intact) is missing
from every replay that needs it; a replay that starts after it never does: it walks past it by
its header (engine.storage.log_reader.first_batch_at). So each starting point reaches from its
own offset to just before the first damaged batch after it, and the reachable offsets are the
union of those runs; between them are gaps no replay can rebuild. A batch header whose length
cannot be trusted ends the walk of its segment: the rest of that segment is a gap too.

An archive's hole between segments (engine.image.log_holes: offsets the recorder never got,
said in its manifest) is a gap of the same kind: no replay runs across it, and its line says it
is an archive gap and why, where damage names a file and a byte offset.

``scan_log`` finds the damage with one pass over the segments' batch headers and CRCs (records
are not decoded); ``runs_of`` turns it, and the starting points, into the runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Sequence

from engine.common.errors import CorruptRecordError
from engine.image.log_holes import HOLE_NOTE, hole_line
from engine.image.metadata_loader import DAMAGE_NOTE, LoadInfo
from engine.records.record_batch import decode_batch, peek_batch_extent
from engine.storage.log_reader import LogDirListing
from engine.storage.log_segment import is_torn_tail, read_segment_bytes

# damage inside a batch whose header (and so its length, the walk's step) still reads
_RECORDS_DAMAGE = ("batch CRC mismatch", "absurd record count")


@dataclass(frozen=True, slots=True)
class Gap:
    """Offsets ``first`` to ``resume`` - 1 that no replay can rebuild (``resume`` None: to the end)."""

    first: int
    resume: int | None
    damage: str  # one line naming file, byte offset and why (for a hole: the archive's gap and its reason)
    hole: bool = False  # an archive's gap between segments, not damage


@dataclass(frozen=True, slots=True)
class LogScan:
    gaps: tuple[Gap, ...]
    last_offset: int  # of the last readable record; -1 when there is none


def scan_log(listing: LogDirListing) -> LogScan:
    """One pass over every segment's batch headers, CRCs checked: where the damage is."""
    gaps: list[Gap] = []
    last = -1
    segments = listing.segments
    previous_end = None  # where the segment before ended (one past its last batch), when it ended whole
    for index, (base, segment) in enumerate(segments):
        following = segments[index + 1][0] if index + 1 < len(segments) else None
        if previous_end is not None and base > previous_end:
            gaps.append(Gap(previous_end, base, hole_line(listing.path, previous_end, base), hole=True))
        previous_end = None
        buf = read_segment_bytes(segment)
        expected, pending, pos = base, None, 0
        whole = True
        while pos < len(buf):
            try:
                header, end = decode_batch(buf, pos, decode_records=False)
            except CorruptRecordError as exc:
                error = exc.at(path=str(segment))
                if exc.reason.startswith(_RECORDS_DAMAGE):
                    pending = pending or (expected, error.one_line())
                    pos = peek_batch_extent(buf, pos)
                    continue
                if following is None and is_torn_tail(buf, pos):
                    break  # a write cut short: the log's end, not damage
                first, damage = pending or (expected, error.one_line())
                gaps.append(Gap(first, following, damage))
                pending, whole = None, False
                break
            if pending is not None:
                gaps.append(Gap(pending[0], header.base_offset, pending[1]))
                pending = None
            expected, last = header.last_offset + 1, max(last, header.last_offset)
            pos = end
        if pending is not None:
            gaps.append(Gap(pending[0], following, pending[1]))
        elif whole and (expected > base or index > 0):
            previous_end = expected  # an empty first segment says nothing of where the log was
    return LogScan(tuple(gaps), last)


def runs_of(starts: Sequence[int], scan: LogScan) -> tuple[tuple[int, int], ...]:
    """The runs (first, last) inclusive, in order, that replays from ``starts`` reach (a start is
    -1 for the log's start, or a snapshot's last offset)."""
    runs: list[tuple[int, int]] = []
    for start in sorted(set(starts)):
        end = scan.last_offset
        for gap in scan.gaps:
            # a replay from ``start`` needs the offsets after it: a gap holding any of them stops it
            if gap.resume is None or gap.resume > start + 1:
                end = min(end, gap.first - 1)
        end = max(end, start)
        if runs and start <= runs[-1][1]:  # its replay begins where the run has come to: one run
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return tuple(runs)


def runs_words(runs: Sequence[tuple[int, int]]) -> str:
    """How an out-of-range error (or a note) names what can be reached."""
    if not runs or (len(runs) == 1 and runs[0][1] < max(runs[0][0], 0)):
        return "the log holds no records"
    named = [f"{_named(first)} to {last}" if last > first else _named(first) for first, last in runs]
    return f"offsets {' and '.join(named)} can be reached"


def _named(offset: int) -> str:
    return f"{offset} (before the first record)" if offset == -1 else str(offset)


def damage_of(scan: LogScan, offset: int) -> str | None:
    """The damage that keeps ``offset`` out of reach: the gap holding it, or the last one before it."""
    before = [gap for gap in scan.gaps if gap.first <= offset]
    return before[-1].damage if before else None


def with_damage_note(info: LoadInfo, gaps: Sequence[Gap], runs: Sequence[tuple[int, int]]) -> LoadInfo:
    """``info`` naming the damage and the runs that can be reached: on the note of the damage the
    replay stopped at, or a note of its own (the replay answering never met it)."""
    words = runs_words(runs)
    marks = (DAMAGE_NOTE, HOLE_NOTE)
    notes = [f"{n}; {words}" if n.startswith(marks) and not n.endswith(words) else n for n in info.notes]
    if not any(n.startswith(marks) for n in notes):
        more = f" (and {len(gaps) - 1} more {'gaps' if gaps[0].hole else 'damaged places'})" if len(gaps) > 1 else ""
        what = "no replay crosses a gap of the archive" if gaps[0].hole else \
            "part of the log is damaged and cannot be replayed"
        notes.append(f"{what}: {gaps[0].damage}{more}; {words}")
    return replace(info, notes=tuple(notes))


def point_words(offset: int | None, time_ms: int | None) -> str:
    return f"offset {offset}" if offset is not None else f"time {iso_time(time_ms)}"


def iso_time(time_ms: int) -> str:
    """A time as an operator types it: ISO 8601 in UTC."""
    try:
        moment = datetime.fromtimestamp(time_ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{time_ms} ms"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
