"""The events up to the frame shown, newest first, coloured by kind; the current ones marked."""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timezone
from typing import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical

from metashell.dashboard.model import EVENT_KINDS, Event
from metashell.dashboard.widgets.row_table import Cell, Column, RowTable

# No kind column: the text says what happened and the colour says the kind (room is short here).
FEED_COLUMNS = (Column("mark", " ", width=1), Column("offset", "offset", width=7, align="right"),
                Column("time", "time UTC", width=8), Column("text", "event", width=20, flex=True))
FeedRow = tuple[Event, bool]  # the event, and whether it is in the frame just shown


class NewestFirst(Sequence[FeedRow]):
    """The first ``count`` events, reversed, without copying: O(1) per frame however long the log."""

    def __init__(self, events: Sequence[Event], count: int, current_from: int, current_to: int) -> None:
        self.events, self.count = events, count
        self.current = (current_from, current_to)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        event = self.events[self.count - 1 - index]
        return event, self.current[0] <= event.offset <= self.current[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NewestFirst) and (other.events, other.count, other.current) == \
            (self.events, self.count, self.current)

    def __hash__(self) -> int:
        return hash((id(self.events), self.count, self.current))


def _time(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M:%S")


def feed_cells(row: FeedRow) -> list[Cell]:
    event, current = row
    style = f"event-{event.kind}" if event.kind in EVENT_KINDS else None
    return [("▶" if current else " ", "current" if current else None), (str(event.offset), "muted"),
            (_time(event.timestamp_ms), "muted"), (event.text, style)]


class EventsFeed(Vertical):
    def __init__(self, events: Sequence[Event] = (), *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Events"
        self.events = list(events)
        self._offsets = [e.offset for e in self.events]  # sorted: events come in log order

    def compose(self) -> ComposeResult:
        table = RowTable(FEED_COLUMNS, feed_cells, lambda row: "current" if row[1] else None, id="events")
        table.capacity = len(self.events)  # room for the whole history: stepping never relays out
        yield table

    @property
    def table(self) -> RowTable:
        return self.query_one("#events", RowTable)

    def show(self, offset: int, changed_from: int) -> None:
        """Events at offsets <= ``offset``; those in (changed_from, offset] are the current ones."""
        count = bisect_right(self._offsets, offset)
        view = NewestFirst(self.events, count, changed_from + 1, offset)
        if view != self.table.rows:
            self.table.set_rows(view)
            self.border_subtitle = f"{count:,} of {len(self.events):,}"

    def texts(self) -> list[str]:
        """The feed's event texts, newest first (tests)."""
        return [event.text for event, _ in self.table.rows]
