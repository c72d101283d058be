"""Points in a history, as ``log`` and ``diff`` take them, and what they may not be.

A position is typed as ``seek`` takes one: an offset (``1200``; ``-1`` is before the first
record, where the log starts at offset 0), a time (ISO 8601, ``2025-05-16T03:42:00Z``; epoch
milliseconds with a unit, ``1747366920000ms``: a bare number is an offset), or ``latest``. A
point stands after its record: the image at offset 1200 holds record 1200, the image at time T
every record stamped at or before T.

An offset must be one the history can rebuild (in one of its runs): before the first, past the
last, or in a gap is one line saying which, never a clamp. A time before the earliest image is
refused too; a time after the last record is the latest image (nothing changed after it), as
``seek`` reads it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import NamedTuple, Sequence

from engine.image.log_runs import iso_time
from engine.image.run_replay import gap_words


class PositionError(ValueError):
    """A position that cannot be used: one line."""


class Point(NamedTuple):
    """An offset or a time (neither: the latest)."""

    offset: int | None = None
    time_ms: int | None = None
    text: str = "latest"

    @property
    def latest(self) -> bool:
        return self.offset is None and self.time_ms is None

    def before(self, offset: int, timestamp_ms: int) -> bool:
        """Whether a change at ``offset``/``timestamp_ms`` is in the image at this point."""
        if self.offset is not None:
            return offset <= self.offset
        if self.time_ms is not None:
            return timestamp_ms <= self.time_ms
        return True


def parse_point(text: str) -> Point:
    if text == "latest":
        return Point()
    if text.removeprefix("-").isdigit():
        return Point(offset=int(text), text=text)
    if text.endswith("ms") and text[:-2].isdigit():
        return Point(time_ms=int(text[:-2]), text=text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PositionError(f"{text}: not a position (an offset, a time in ISO 8601 or epoch milliseconds as "
                            f"1747366920000ms, or latest)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return Point(time_ms=int(moment.timestamp() * 1000), text=text)


def runs_text(runs: Sequence[tuple[int, int]]) -> str:
    if not runs or runs[-1][1] < max(runs[0][0], 0):
        return "it holds no records"
    return "offsets " + " and ".join(f"{a}..{b}" for a, b in runs) + " can be reached"


def check_point(point: Point, runs: Sequence[tuple[int, int]], gaps: Sequence, first_time_ms: int | None,
                what: str) -> None:
    """PositionError unless ``point`` is one the history can rebuild (see the module's docstring)."""
    if point.offset is not None:
        offset = point.offset
        if any(low <= offset <= high for low, high in runs):
            return
        if not runs or offset < runs[0][0]:
            raise PositionError(f"offset {offset} is before the earliest point of {what}: {runs_text(runs)}")
        gap = next((g for g in gaps if g.first <= offset and (g.resume is None or offset < g.resume)), None)
        if gap is not None:
            raise PositionError(f"offset {offset} of {what} is in {gap_text(gap)}; {runs_text(runs)}")
        raise PositionError(f"offset {offset} is past the end of {what}: {runs_text(runs)}")
    if point.time_ms is not None and (first_time_ms is None or point.time_ms < first_time_ms):
        earliest = "it holds no records" if first_time_ms is None else f"its earliest point is {iso_time(first_time_ms)}"
        raise PositionError(f"time {iso_time(point.time_ms)} is before the earliest point of {what}: {earliest}")


def gap_text(gap) -> str:
    """The one wording of a gap (engine.image.run_replay.gap_words): ``gap 120..199 (records
    120..199 missing; the state at 199 is from snapshot 200): <reason>``."""
    return gap_words(gap)


def gaps_between(gaps: Sequence, low: int | None, high: int | None) -> list:
    """The gaps that hold an offset in [low, high] (None: unbounded)."""
    return [g for g in gaps if (high is None or g.first <= high) and (low is None or g.resume is None
                                                                        or g.resume - 1 >= low)]
