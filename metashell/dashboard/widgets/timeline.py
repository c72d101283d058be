"""The time-travel slider over the whole log: every run, the gaps between them (drawn and named),
where the frame shown stands and the two marks of a diff (metashell.dashboard.archive_runs).

Two lines under the header: the bar, then the words (the span, the run shown, the marks, each
gap's offsets and reason). A click on the bar goes to the offset under it (``Picked``). It is shown only when there is something a single run's charts cannot
say: more than one run (a damaged log, an archive with gaps) or a mark set; a whole log of one
run keeps every row for the panels.
"""

from __future__ import annotations

from typing import Sequence

from textual import events
from textual.content import Content
from textual.markup import escape
from textual.message import Message
from textual.widget import Widget

from metashell.dashboard.archive_runs import Run, Spans, offset_at_cell, timeline_cells, timeline_words

CELL_STYLES = {"shown": "$accent", "other": "$text-muted", "gap": "$error", "mark": "b $warning",
               "position": "b $accent",
               "mark-here": "b reverse $warning"}


class Timeline(Widget):
    class Picked(Message):
        """The bar was clicked: go to ``offset`` (the screen refuses a point in a gap)."""

        def __init__(self, offset: int) -> None:
            super().__init__()
            self.offset = offset

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spans: Spans | None = None
        self.shown: Run = (-1, -1)
        self.position = -1
        self.marks: tuple[int, ...] = ()
        self._content = Content("")
        self.display = False

    def render(self) -> Content:
        return self._content

    def show(self, spans: Spans, shown: Run, position: int, marks: Sequence[int]) -> None:
        state = (spans, shown, position, tuple(marks))
        if state == (self.spans, self.shown, self.position, self.marks):
            return
        self.spans, self.shown, self.position, self.marks = state
        wanted = len(spans.runs) > 1 or bool(marks)
        if wanted != self.display:
            self.display = wanted
        self._draw()

    def _draw(self) -> None:
        if self.spans is None:
            return
        low, high = self.spans.low, self.spans.high
        _, width = self._bar_width()  # the bar between its two end labels
        cells = timeline_cells(width, self.spans, self.shown, self.position, self.marks)
        bar = "".join(f"[{CELL_STYLES[style]}]{escape(char)}[/]" for char, style in cells)
        plain = timeline_words(self.spans, self.shown, self.position, self.marks)
        if self.tooltip != plain:
            self.tooltip = plain  # the words whole, a gap's reason cut on a narrow terminal
        words = escape(plain)
        self._content = Content.from_markup(f"[$text-muted]{low}[/] {bar} [$text-muted]{high}[/]\n"
                                            f"[$text-muted]{words}[/]")
        self.refresh()

    def on_resize(self) -> None:
        self._draw()

    def _bar_width(self) -> tuple[int, int]:
        """(the first column of the bar within the content, its width)."""
        assert self.spans is not None
        low, high = str(self.spans.low), str(self.spans.high)
        return len(low) + 1, max(0, self.content_size.width - len(low) - len(high) - 2)

    def on_click(self, event: events.Click) -> None:
        if self.spans is None or event.y != 0:
            return
        start, width = self._bar_width()
        column = event.x - self.styles.padding.left - start
        if width > 0 and 0 <= column < width:
            self.post_message(self.Picked(offset_at_cell(width, self.spans, column)))

    def bar_text(self) -> str:
        """The bar as plain text (tests)."""
        return self._content.plain.split("\n")[0]

    def words_text(self) -> str:
        """The words under the bar (tests)."""
        lines = self._content.plain.split("\n")
        return lines[1] if len(lines) > 1 else ""
