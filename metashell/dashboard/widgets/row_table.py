"""A table drawn with Textual's Line API: only the rows on screen are ever rendered.

Every panel's table (voters, brokers, partitions, events) is one of these. Rows are any
hashable values (the model's frozen dataclasses); a ``cells`` function turns a row into
(text, style name) pairs only when the row scrolls into view, so a table over 100,000
partitions costs one list and the ~40 visible rows. Rendered lines are cached by row
*value*, so a new frame whose row is unchanged reuses its line, and ``set_rows`` redraws
only the visible lines whose row differs from the one drawn before.

Colours come from component classes (``row-table--state-fenced`` ...) styled in
dashboard.tcss with theme variables; a theme switch clears the cache and redraws.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Hashable, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from metashell.dashboard.model import ALL_FLAGS, EVENT_KINDS
from metashell.dashboard.widgets.columns import Column, column_widths, fit, line_width

__all__ = ["Cell", "Column", "RowTable", "fit"]

BROKER_STATES = ("active", "fenced", "controlled-shutdown", "unregistered")
# Style names a cell or a row may carry; each is the component class "row-table--<name>".
STYLE_NAMES = ("leader", "muted", "current", "flagged",
               *(f"state-{s}" for s in BROKER_STATES),
               *(f"flag-{f}" for f in ALL_FLAGS),
               *(f"event-{k}" for k in EVENT_KINDS))

Cell = tuple[str, "str | None"]  # text, style name (or None: the table's own colours)
AUTO_WIDTH_LIMIT = 2_000  # fitting columns to content scans every row: small tables only
# A table whose content-sized columns are all ``fit`` ones (they have a width to fall back on)
# scans fewer: its rows change with every step (the partitions), and 2,000 rows cost ~10 ms a step.
FIT_LIMIT = 500


class RowTable(ScrollView, can_focus=True):
    """A virtual table: a fixed header line, then one line per row, cursor and click-to-sort."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-table--header", "row-table--cursor", "row-table--cursor-blurred",
        *(f"row-table--{name}" for name in STYLE_NAMES)}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Row up", show=False),
        Binding("down", "cursor(1)", "Row down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, always_update=False, init=False)

    class HeaderClicked(Message):
        def __init__(self, table: "RowTable", column_key: str) -> None:
            super().__init__()
            self.table, self.column_key = table, column_key

    class ColumnsHidden(Message):
        """The columns hidden for want of width changed (``hidden``: their labels)."""

        def __init__(self, table: "RowTable", hidden: list[str]) -> None:
            super().__init__()
            self.table, self.hidden = table, hidden

    class CursorMoved(Message):
        def __init__(self, table: "RowTable", row: Any) -> None:
            super().__init__()
            self.table, self.row = table, row

    def __init__(self, columns: Sequence[Column], cells: Callable[[Any], Sequence[Cell]],
                 row_style: Callable[[Any], "str | None"] = lambda row: None, *,
                 key: Callable[[Any], Hashable] = lambda row: row,
                 name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns = list(columns)
        self._cells, self._row_style, self._key = cells, row_style, key
        self._rows: Sequence[Any] = ()
        self._widths = [max(cell_len(c.label) + 1, c.width or 0) for c in self._columns]
        self._fitted = list(self._widths)  # before flex columns take the spare width
        self._lines: LRUCache[tuple, Strip] = LRUCache(2_000)
        self._styles: dict[str, Style] = {}
        # Lines reserved whatever the row count: a table whose rows come and go every frame (the
        # feed) keeps one virtual size, so a new row repaints the table instead of relaying out
        # the screen. Lines past the rows are blank.
        self.capacity = 0
        self.sort_key: str | None = None  # shown in the header (▲ ascending, ▼ descending)
        self.sort_descending = False

    # -- data ----------------------------------------------------------------------

    @property
    def rows(self) -> Sequence[Any]:
        return self._rows

    @property
    def cursor_value(self) -> Any:
        return self._rows[self.cursor_row] if 0 <= self.cursor_row < len(self._rows) else None

    def row_cells(self, row: Any) -> list[str]:
        """The texts of a row's cells, as drawn (for tests and the help of other panels)."""
        return [text for text, _ in self._cells(row)]

    def set_rows(self, rows: Sequence[Any]) -> int:
        """Show ``rows``; returns how many on-screen lines had to be redrawn."""
        old, self._rows = self._rows, rows
        if old is rows:
            return 0
        if self._fit_columns() or len(old) != len(rows) or self._flex():
            self._resize()
            self.cursor_row = min(self.cursor_row, max(0, len(rows) - 1))
            self.refresh()
            return self.size.height
        # Same length: compare only the rows on screen; the others are drawn when they scroll in.
        top = self.scroll_offset.y
        redrawn = 0
        for index in range(top, min(len(rows), top + max(0, self.size.height - 1))):
            a, b = old[index], rows[index]
            if a is not b and a != b:
                self.refresh(Region(0, index - top + 1, self.size.width, 1))
                redrawn += 1
        return redrawn

    def set_header(self, sort_key: str | None, descending: bool) -> None:
        self.sort_key, self.sort_descending = sort_key, descending
        self.refresh(Region(0, 0, self.size.width, 1))

    def _fit_columns(self) -> bool:
        """Fit the content-sized columns (``width`` None, or ``fit``) to the rows; True if any
        width changed. Past AUTO_WIDTH_LIMIT rows (FIT_LIMIT when every such column is ``fit``)
        nothing is scanned: a ``fit`` column takes its ``width``, a ``width`` None one keeps the
        width it had."""
        columns = self._columns
        if not any(c.width is None or c.fit for c in columns):
            return False
        limit = AUTO_WIDTH_LIMIT if any(c.width is None for c in columns) else FIT_LIMIT
        scan = len(self._rows) <= limit
        content = [cell_len(c.label) + 1 for c in columns]  # +1: room for the sort arrow
        if scan:
            for row in self._rows:
                for i, (text, _) in enumerate(self._cells(row)):
                    content[i] = max(content[i], cell_len(text))
        widths = list(self._fitted)
        for i, c in enumerate(columns):
            if c.width is None:
                widths[i] = content[i] if scan else widths[i]
            elif c.fit:
                widths[i] = content[i] if scan else max(c.width, content[i])
            else:
                widths[i] = max(c.width, cell_len(c.label) + 1)
        widths = [min(w, c.max_width) for w, c in zip(widths, columns)]
        if widths == self._fitted:
            return False
        self._fitted = widths
        self._flex()
        return True

    def _flex(self) -> bool:
        """Share the width among the columns (metashell.dashboard.widgets.columns: some hide,
        some shrink, the flex column takes what is left); True if any width changed."""
        widths = column_widths(self._columns, self._fitted, self.scrollable_content_region.width)
        if widths == self._widths:
            return False
        hidden = [w == 0 for w in self._widths]
        self._widths = widths
        if hidden != [w == 0 for w in widths]:
            self.post_message(self.ColumnsHidden(self, self.hidden_columns))
        self._lines.clear()
        return True

    @property
    def hidden_columns(self) -> list[str]:
        """The labels of the columns hidden for want of width."""
        return [c.label for c, w in zip(self._columns, self._widths) if not w]

    def set_columns(self, columns: Sequence[Column]) -> None:
        """New columns (the same cells function must fill them)."""
        self._columns = list(columns)
        self._fitted = [max(cell_len(c.label) + 1, c.width or 0) for c in self._columns]
        self._fit_columns()
        self._flex()
        self._lines.clear()
        self._resize()
        self.refresh()

    def _resize(self) -> None:
        size = Size(line_width(self._widths), max(len(self._rows), self.capacity) + 1)
        if size != self.virtual_size:  # a new virtual size relays out the whole screen
            self.virtual_size = size

    def on_resize(self) -> None:
        if self._flex():
            self._resize()
            self.refresh()

    def watch_show_vertical_scrollbar(self) -> None:
        self.on_resize()  # the scrollbar took (or gave back) a column: refit the flex columns

    # -- rendering -----------------------------------------------------------------------

    def on_mount(self) -> None:
        self._fit_columns()
        self._flex()
        self._resize()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()  # a theme switch: every cached line has the old colours
        self._styles.clear()

    def _style(self, name: str | None) -> Style:
        """A component class's style, only what it sets; translucent colours ($text-muted,
        $primary 20%) blended over the table's background, as Textual does for widgets."""
        if not name:
            return Style()
        style = self._styles.get(name)
        if style is None:
            styles = self.get_component_styles(f"row-table--{name}")
            style = styles.partial_rich_style
            base = self.background_colors[1]
            if styles.has_rule("background"):
                base = base + styles.background
                style += Style(bgcolor=base.rich_color)
            if styles.has_rule("color"):  # "auto 60%" ($text-muted): a contrast colour for this background
                color = base + (base.get_contrast_text(styles.color.a) if styles.auto_color else styles.color)
                style += Style(color=color.rich_color)
            self._styles[name] = style
        return style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            strip = self._header_strip()
        else:
            index = scroll_y + y - 1
            if index >= len(self._rows):
                return Strip.blank(width, base)
            strip = self._row_strip(self._rows[index], index == self.cursor_row)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _header_strip(self) -> Strip:
        key = ("header", self.sort_key, self.sort_descending)
        strip = self._lines.get(key)
        if strip is None:
            style = self.rich_style + self._style("header")
            texts = []
            for column, w in zip(self._columns, self._widths):
                if w:  # 0: hidden for want of width
                    arrow = ("▼" if self.sort_descending else "▲") if column.key == self.sort_key else ""
                    texts.append(fit(column.label + arrow, w, column.align))
            strip = Strip([Segment(" ".join(texts) + " ", style)])
            self._lines[key] = strip
        return strip

    def _row_strip(self, row: Any, cursor: bool) -> Strip:
        key = (self._key(row), cursor and (2 if self.has_focus else 1))
        strip = self._lines.get(key)
        if strip is None:
            base = self.rich_style
            row_style = self._row_style(row)
            if row_style:
                base = base + self._style(row_style)
            segments = []
            for column, w, (text, style_name) in zip(self._columns, self._widths, self._cells(row)):
                if not w:
                    continue
                segments.append(Segment(fit(text, w, column.align), base + self._style(style_name)))
                segments.append(Segment(" ", base))
            if cursor:
                over = self._style("cursor" if self.has_focus else "cursor-blurred")
                segments = list(Segment.apply_style(segments, post_style=over))
            strip = Strip(segments)
            self._lines[key] = strip
        return strip

    # -- cursor, keys and mouse ----------------------------------------------------------------

    def watch_cursor_row(self, old: int, new: int) -> None:
        top = self.scroll_offset.y
        for index in (old, new):
            self.refresh(Region(0, index - top + 1, self.size.width, 1))
        self._scroll_to_cursor()
        self.post_message(self.CursorMoved(self, self.cursor_value))

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False)

    def move_cursor(self, index: int) -> None:
        self.cursor_row = max(0, min(index, len(self._rows) - 1))

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor_row + direction * max(1, self.size.height - 2))

    def _on_focus(self, event: events.Focus) -> None:
        self.refresh()

    def _on_blur(self, event: events.Blur) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        x, y = offset.x + self.scroll_offset.x, offset.y
        if y == 0:
            left = 0
            for column, w in zip(self._columns, self._widths):
                if not w:
                    continue
                if left <= x < left + w + 1:
                    self.post_message(self.HeaderClicked(self, column.key))
                    return
                left += w + 1
        elif self._rows:
            self.move_cursor(self.scroll_offset.y + y - 1)
