"""The time-travel slider over the whole log: every run, the gaps between them (drawn and named),
where the frame shown stands and the two marks of a diff (metashell.dashboard.archive_runs).

Two lines under the header: the bar, then the words (the span, the run shown, each gap's offsets
and reason, the marks). It is shown only when there is something a single run's charts cannot
say: more than one run (a damaged log, an archive with gaps) or a mark set; a whole log of one
run keeps every row for the panels.
"""

from __future__ import annotations

from typing import Sequence

from textual.content import Content
from textual.markup import escape
from textual.widget import Widget

from metashell.dashboard.archive_runs import Run, Spans, timeline_cells, timeline_words

CELL_STYLES = {"shown": "$accent", "other": "$text-muted", "gap": "$error", "mark": "b $warning",
               "position": "b $accent",
               "mark-here": "b reverse $warning"}


class Timeline(Widget):
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
        # the bar between its two end labels, inside the padding (one cell each side)
        width = max(0, self.content_size.width - len(str(low)) - len(str(high)) - 2)
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

    def bar_text(self) -> str:
        """The bar as plain text (tests)."""
        return self._content.plain.split("\n")[0]

    def words_text(self) -> str:
        """The words under the bar (tests)."""
        lines = self._content.plain.split("\n")
        return lines[1] if len(lines) > 1 else ""
