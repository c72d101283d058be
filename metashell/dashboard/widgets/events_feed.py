"""The events up to the frame shown, newest first, coloured by kind; the current ones marked.

The feed reads the source's own event list (no copy): a live source appends to it, and the
feed's view is a window over it, so a growing feed costs nothing per update but the redraw.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timezone
from typing import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget

from metashell.dashboard.model import EVENT_KINDS, Event, FrameSource
from metashell.dashboard.widgets.row_table import Cell, Column, RowTable

# No kind column: the text says what happened and the colour says the kind (room is short here).
# The time column gains the date once the history spans more than a day (DATED_COLUMNS).
FEED_COLUMNS = (Column("mark", " ", width=1), Column("offset", "offset", width=7, align="right"),
                Column("time", "time UTC", width=8), Column("text", "event", width=20, flex=True))
DATED_COLUMNS = (*FEED_COLUMNS[:2], Column("time", "date and time UTC", width=19), FEED_COLUMNS[3])
DAY_MS = 86_400_000
FeedRow = tuple[Event, bool]  # the event, and whether it is in the frame just shown


class NewestFirst(Sequence[FeedRow]):
    """The first ``count`` events, reversed, without copying: O(1) per frame however long the log."""

    def __init__(self, events: Sequence[Event], count: int, current_from: int, current_to: int,
                 shape: int = 0) -> None:
        """``shape``: the source's ``reshaped`` count (the same count over a list cut or reordered
        since is another view)."""
        self.events, self.count = events, count
        self.current = (current_from, current_to)
        self.shape = shape

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
        return isinstance(other, NewestFirst) and other.events is self.events and \
            (other.count, other.current, other.shape) == (self.count, self.current, self.shape)

    def __hash__(self) -> int:
        return hash((id(self.events), self.count, self.current, self.shape))


def _time(ms: int, with_date: bool = False) -> str:
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def feed_cells(row: FeedRow, with_date: bool = False) -> list[Cell]:
    event, current = row
    style = f"event-{event.kind}" if event.kind in EVENT_KINDS else None
    return [("▶" if current else " ", "current" if current else None), (str(event.offset), "muted"),
            (_time(event.timestamp_ms, with_date), "muted"), (event.text, style)]


def spans_days(span: tuple[int, int]) -> bool:
    """Whether a history's (first, last) record times are more than a day apart."""
    return span[1] - span[0] > DAY_MS


class EventsFeed(Vertical):
    def __init__(self, source: FrameSource, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Events"
        self.source = source
        self.with_date = False  # the time column shows the date too (a history of more than a day)

    @property
    def events(self) -> Sequence[Event]:
        return self.source.events

    def compose(self) -> ComposeResult:
        self.with_date = spans_days(self.source.time_span())
        table = RowTable(DATED_COLUMNS if self.with_date else FEED_COLUMNS,
                         lambda row: feed_cells(row, self.with_date), lambda row: "current" if row[1] else None,
                         id="events")
        table.capacity = len(self.events)  # room for the whole history: stepping never relays out
        yield table

    @property
    def table(self) -> RowTable:
        return self.query_one("#events", RowTable)

    @property
    def focus_target(self) -> Widget:
        """What takes the focus when the panel comes forward."""
        return self.table

    def show(self, offset: int, changed_from: int) -> None:
        """Events at offsets <= ``offset``; those in (changed_from, offset] are the current ones."""
        source, table = self.source, self.table
        with_date = spans_days(source.time_span())
        if with_date != self.with_date:  # a live history passed its first day
            self.with_date = with_date
            table.set_columns(DATED_COLUMNS if with_date else FEED_COLUMNS)
        count = bisect_right(source.event_offsets, offset)
        view = NewestFirst(source.events, count, changed_from + 1, offset, source.reshaped)
        if view != table.rows:
            if len(source.events) > table.capacity:  # grown past the room: more room, with some to spare,
                table.capacity = len(source.events) * 3 // 2 + 64  # so a live feed relays out rarely
            table.set_rows(view)
        subtitle = f"{count:,} of {len(source.events):,}"
        if subtitle != self.border_subtitle:  # a growing source: the total moves while the view stays
            self.border_subtitle = subtitle

    def texts(self) -> list[str]:
        """The feed's event texts, newest first (tests)."""
        return [event.text for event, _ in self.table.rows]
