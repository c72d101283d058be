"""The entries a MetadataHistory holds, and the window that bounds a growing one.

The entries are kept decoded, in log order, with their offsets, the running maximum of their
timestamps (a point in time is found as the loader finds it) and the batches they came in.
A history that grows (the live tools') keeps about ``records`` of them: past that, the oldest
are dropped up to a checkpoint, whose state becomes the new start (``start_offset`` moves on,
and every entry index moves down). A point below the window, or before the last reset, is then
an ``OutsideWindowError``, not a silent answer from elsewhere.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, Iterator, Sequence

from engine.common.errors import MetadataError
from engine.storage.log_reader import LogEntry

WINDOW_SLACK = 8  # a window trims an eighth more than it must: trims (which renumber the entries) stay rare


class OutsideWindowError(MetadataError):
    """A point the history held once but dropped: before its window, or before its last reset."""


class HistoryWindow:
    """The entries after a starting point (``start_offset``, -1: the empty image), at most about
    ``records`` of them (None: all)."""

    def __init__(self, start_offset: int, start_ts_ms: int, begin: int, records: int | None = None) -> None:
        self.records = records
        self.entries: list[LogEntry] = []
        self.offsets: list[int] = []
        self.ts_max: list[int] = []  # running maximum of timestamps: at_time as the loader's time_ms
        self.batch_starts: list[int] = []  # offset of each batch's first record
        self.batch_ends: list[int] = []  # entry index of each batch's last record
        self.dropped_records = 0  # by the window, since the start or the last reset
        self.resets = 0
        self._restart(start_offset, start_ts_ms, begin)

    def _restart(self, start_offset: int, start_ts_ms: int, begin: int) -> None:
        self.start_offset = start_offset
        self.start_ts_ms = start_ts_ms  # the starting point's time (window checks)
        self.begin = begin  # the first offset replayed from the segments

    @property
    def first_offset(self) -> int:
        return self.offsets[0] if self.offsets else self.start_offset

    @property
    def last_offset(self) -> int:
        return self.offsets[-1] if self.offsets else self.start_offset

    def index_of(self, offset: int) -> int:
        """The entry index of the last record at or before ``offset``; -1 for the starting image."""
        return bisect_right(self.offsets, offset) - 1

    def index_at_time(self, time_ms: int) -> int:
        """As ``load_log_dir(time_ms=)``: the record before the first one stamped after ``time_ms``."""
        return bisect_right(self.ts_max, time_ms) - 1

    def after_last(self, batches: Iterable[list[LogEntry]]) -> Iterator[list[LogEntry]]:
        """``batches`` without the entries at or below the last one held (a batch handed over twice)."""
        for batch in batches:
            last = self.last_offset
            if batch and batch[0].offset <= last:
                batch = [entry for entry in batch if entry.offset > last]
            if batch:
                yield batch

    # -- bounding ----------------------------------------------------------------------------

    def cut(self, checkpoints: Sequence[int]) -> int | None:
        """Past the window: the checkpoint (one of ``checkpoints``, entry indexes in order) up to
        which the oldest entries go; None within it."""
        window = self.records
        if window is None or len(self.entries) <= window:
            return None
        need = len(self.entries) - window + window // WINDOW_SLACK - 1  # cut at this entry or after
        return checkpoints[min(bisect_left(checkpoints, need), len(checkpoints) - 1)]

    def drop_through(self, cut: int) -> None:
        """Drop the entries up to ``cut`` (inclusive): the point after it is the new start."""
        k = cut + 1
        self._restart(self.offsets[cut], self.ts_max[cut], self.offsets[cut] + 1)
        del self.entries[:k], self.offsets[:k], self.ts_max[:k]
        gone = bisect_right(self.batch_ends, cut)
        del self.batch_starts[:gone], self.batch_ends[:gone]
        self.batch_ends[:] = [i - k for i in self.batch_ends]
        self.dropped_records += k

    def reset(self, start_offset: int, start_ts_ms: int) -> None:
        """Start anew at ``start_offset``: every entry goes."""
        for kept in (self.entries, self.offsets, self.ts_max, self.batch_starts, self.batch_ends):
            kept.clear()
        self._restart(start_offset, start_ts_ms, start_offset + 1)
        self.dropped_records = 0
        self.resets += 1

    def check(self, offset: int | None, time_ms: int | None) -> None:
        """OutsideWindowError for a point this history held once but dropped."""
        if not (self.dropped_records or self.resets):
            return
        if (offset is not None and offset < self.start_offset) or \
                (offset is None and time_ms is not None and time_ms < self.start_ts_ms):
            point = f"offset {offset}" if offset is not None else f"time {time_ms}"
            raise OutsideWindowError(
                f"{point} is before what this session keeps: from offset {self.start_offset} on "
                f"(the last {self.records or len(self.entries):,} records at most)")
