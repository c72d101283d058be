"""Where the change items of ``log`` and ``diff`` come from: a log directory, an archive, a live session.

A ``History`` is what those commands ask: the items reaching a path between two offsets, the runs
of offsets they are known for, and the gaps between runs (with why each is a gap). Two kinds:

- ``MemoryHistory``: the items of one replay, in memory: a log directory read for the question
  (no index is written into a node's directory), or what a live session fetched since attach;
- ``IndexHistory`` (metashell/history/history_index.py): an archive's, from its index.

A log directory's items come from one replay per run (engine/image/run_replay.py, as every
history's): from the earliest point the directory can rebuild up to the first gap (damage, or,
in an archive, a hole between segments), then from the snapshot after each gap, from that
snapshot's own image; a replay never runs across a gap, and the offsets in a gap have no items:
``log`` and ``diff`` say where those gaps are, in the one wording of run_replay.gap_words.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol

from engine.image.run_replay import RunGap, log_runs
from metashell.history.change_items import ChangeItem, ChangeItemStream, change_items
from metashell.history.query import PathQuery


HistoryGap = RunGap  # records first .. resume - 1 are missing (engine.image.run_replay: one meaning)


class History(Protocol):
    runs: tuple[tuple[int, int], ...]  # (first, last) offsets whose images are known; first may be -1
    gaps: tuple[HistoryGap, ...]
    first_time_ms: int | None  # the earliest image's time (None: no record)

    def items(self, query: PathQuery, low: int | None = None, high: int | None = None, *,
              newest_first: bool = False) -> Iterator[ChangeItem]:
        """Items reaching ``query`` with ``low`` <= offset <= ``high``, in log order (or its reverse)."""
        ...

    def describe(self) -> str:
        ...

    def offset_at_time(self, time_ms: int) -> int:
        """The offset of the last change stamped at or before ``time_ms`` (the first run's start: none)."""
        ...


@dataclass
class MemoryHistory:
    all_items: list[ChangeItem]
    runs: tuple[tuple[int, int], ...]
    gaps: tuple[HistoryGap, ...] = ()
    first_time_ms: int | None = None
    what: str = "the log"
    _offsets: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._offsets = [item.offset for item in self.all_items]

    def items(self, query: PathQuery, low: int | None = None, high: int | None = None, *,
              newest_first: bool = False) -> Iterator[ChangeItem]:
        begin = 0 if low is None else bisect_left(self._offsets, low)
        end = len(self._offsets) if high is None else bisect_right(self._offsets, high)
        span = range(end - 1, begin - 1, -1) if newest_first else range(begin, end)
        items = self.all_items
        for index in span:
            if query.reaches(items[index]):
                yield items[index]

    def describe(self) -> str:
        return self.what

    def offset_at_time(self, time_ms: int) -> int:
        found = [item.offset for item in self.all_items if item.timestamp_ms <= time_ms]
        return found[-1] if found else self.runs[0][0]


# -- a log directory ---------------------------------------------------------------------------

def log_dir_history(path: Path | str) -> MemoryHistory:
    """Every item of a log directory, from one replay per run (engine.image.run_replay)."""
    found = log_runs(path)
    items: list[ChangeItem] = []
    for run in found.runs:
        items.extend(change_items(run.image, run.batches()))
    return MemoryHistory(items, found.spans, found.gaps, found.first_time_ms(), str(path))


class LiveItems:
    """A live session's items, kept from one command to the next: each asks only for the batches
    committed since (a history fetched anew, or trimmed by its window, starts over or drops the
    items before its start)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._stream: ChangeItemStream | None = None
        self._items: list[ChangeItem] = []
        self._last = -2

    def history(self, history, what: str) -> MemoryHistory:
        """The MemoryHistory of ``history`` (a growing MetadataHistory) as it stands."""
        key = (history.resets, id(history))
        entries = history.entries
        if key != self._key or history.start_offset > self._last:
            self._key, self._last = key, history.start_offset
            self._stream = ChangeItemStream(history.start_image)
            self._items = []
        elif self._items and self._items[0].offset <= history.start_offset:  # trimmed to the window
            self._items = [item for item in self._items if item.offset > history.start_offset]
        begin = history.index_of(self._last) + 1 if self._last > history.start_offset else 0
        if begin < len(entries):
            self._items.extend(self._stream.feed([entries[begin:]]))
            self._last = entries[-1].offset
        first_ts = history.start_image.provenance.last_timestamp_ms if history.start_offset >= 0 else (
            entries[0].timestamp_ms if entries else None)
        items = self._items + self._stream.pending()
        return MemoryHistory(items, ((history.start_offset, history.last_offset),), (), first_ts, what)
