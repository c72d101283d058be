"""Every partition, one line each: filterable by topic glob and flag, sortable by any column.

The table is a RowTable (Line API): 100,000 partitions cost one list of PartitionRow and the
lines on screen. A new frame re-filters and re-sorts only when its rows differ from the last
frame's (list equality short-cuts on identical rows), and the table then redraws only the
visible lines whose row changed.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Input, Select

from metashell.dashboard import panels
from metashell.dashboard.model import ALL_FLAGS, PartitionRow
from metashell.dashboard.widgets.row_table import Cell, Column, RowTable


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, ids)) + "]"


# Narrow, the columns give way in this order (metashell.dashboard.widgets.columns): the leader
# epoch, the last-known ELR, the replicas, the ELR; the topic shrinks (to 12 cells). The flags
# never give way: they are what the table is read for in an incident. Up to FIT_LIMIT rows
# (row_table) the columns fit their content (replica ids are short in most clusters); past it,
# the widths given here.
PARTITION_COLUMNS = (
    Column("topic", "topic", width=18, fit=True, shrink=True, min_width=12),
    Column("partition", "part", width=5, align="right"), Column("leader", "leader", width=6, align="right"),
    Column("leader_epoch", "epoch", width=6, align="right", drop=1),
    Column("replicas", "replicas", width=11, fit=True, drop=3), Column("isr", "ISR", width=11, fit=True),
    Column("elr", "ELR", width=8, fit=True, drop=4), Column("last_known_elr", "last ELR", width=8, fit=True, drop=2),
    Column("flags", "flags", width=18, fit=True, flex=True))
# Short words for the table (the filter and the help use the full names of model.ALL_FLAGS).
FLAG_WORDS = {"leaderless": "no-leader", "under-min-isr": "<min-isr", "isr-empty-elr": "elr-only",
              "reassigning": "reassign", "unclean-recovery": "unclean"}
# column -> the data layer's sort key (panels.SORT_KEYS); columns not here do not sort
COLUMN_SORT = {"topic": "topic", "partition": "partition", "leader": "leader", "leader_epoch": "leader_epoch",
               "isr": "isr_size", "elr": "elr_size", "flags": "flags"}
SORT_COLUMNS = tuple(COLUMN_SORT)


def partition_cells(row: PartitionRow) -> list[Cell]:
    shrunk = len(row.isr) < len(row.replicas)
    return [(row.topic, None), (str(row.partition), None),
            ("none" if row.leader < 0 else str(row.leader), "flag-leaderless" if row.leader < 0 else None),
            (str(row.leader_epoch), None), (_ids(row.replicas), None),
            (_ids(row.isr), "flagged" if shrunk else None), (_ids(row.elr) if row.elr else "-", None),
            (_ids(row.last_known_elr) if row.last_known_elr else "-", None),
            (" ".join(FLAG_WORDS.get(f, f) for f in row.flags) or "-",
             f"flag-{row.flags[0]}" if row.flags else "muted")]


def parse_filter(text: str) -> tuple[str, str | None]:
    """``orders* flag:under-min-isr`` -> ("orders*", "under-min-isr"); empty glob means all.
    Plain text without ``*?[`` matches anywhere in the name (``pay`` finds ``payments``)."""
    glob, flag = [], None
    for word in text.split():
        if word.startswith("flag:"):
            flag = word[5:] or None
        else:
            glob.append(word)
    pattern = " ".join(glob)
    if pattern and not any(c in pattern for c in "*?["):
        pattern = f"*{pattern}*"
    return pattern, flag


class PartitionsTable(RowTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort_next", "Sort by next column", show=False),
        Binding("S", "sort_reverse", "Reverse sort", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(PARTITION_COLUMNS, partition_cells, key=lambda row: row, id=id)

    def action_sort_next(self) -> None:
        panel = self.parent
        if isinstance(panel, PartitionsPanel):
            index = SORT_COLUMNS.index(panel.sort_key) + 1 if panel.sort_key in SORT_COLUMNS else 0
            panel.sort_by(SORT_COLUMNS[index % len(SORT_COLUMNS)], False)

    def action_sort_reverse(self) -> None:
        panel = self.parent
        if isinstance(panel, PartitionsPanel):
            panel.sort_by(panel.sort_key or "topic", not panel.descending)


class PartitionsPanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Partitions"
        self.all_rows: list[PartitionRow] = []
        self.topic_glob = ""
        self.flag: str | None = None
        self.sort_key: str | None = None  # a column key; None: the data layer's order (topic, partition)
        self.descending = False
        self._shown = 0  # rows the filter lets through
        self._counting = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="filter-bar"):
            yield Input(placeholder="topic glob, e.g. orders*   (or flag:under-min-isr)", id="filter-input")
            yield Select([(flag, flag) for flag in ALL_FLAGS], prompt="any flag", id="flag-select")
        yield PartitionsTable(id="partitions")

    def on_mount(self) -> None:
        self._filter_focusable(False)

    def _filter_focusable(self, focusable: bool) -> None:
        """The closed bar's Input and Select take no focus: Textual hands the focus to the first
        focusable widget while the screen starts or a focused widget hides, and a closed Input
        holding it swallowed keys typed then (``q`` just after a live dashboard caught up)."""
        self.filter_bar.disabled = not focusable  # the bar and all within it (the Select's overlay too)

    @property
    def table(self) -> PartitionsTable:
        return self.query_one(PartitionsTable)

    @property
    def focus_target(self) -> Widget:
        """What takes the focus when the panel comes forward."""
        return self.table

    @property
    def filter_bar(self) -> Horizontal:
        return self.query_one("#filter-bar", Horizontal)

    def show(self, rows: Sequence[PartitionRow]) -> None:
        """``rows``: a list, or a PartitionView (metashell.dashboard.partition_view) whose rows are
        built as the table reads them; a view that is not ``exact`` yet has its total said to be
        still counting, and the screen shows a fresh one once it is."""
        if rows is self.all_rows or (type(rows) is type(self.all_rows) and rows == self.all_rows):
            return  # the same view, or the same rows (identity short-cut per row: cheap when nothing changed)
        self.all_rows = rows
        self._refresh_view()

    def _refresh_view(self) -> None:
        rows: Sequence[PartitionRow] = self.all_rows
        filtered = bool(self.topic_glob or self.flag)
        if filtered:  # a whole-image question: every row is built (a lazy image decodes the rest)
            rows = panels.filter_partitions(rows, self.topic_glob or "*", self.flag)
        if self.sort_key is not None:
            rows = panels.sort_partitions(rows, COLUMN_SORT[self.sort_key], self.descending)
        self.table.set_rows(rows if rows is self.all_rows else list(rows))
        self._shown = len(rows)
        self._counting = not filtered and self.sort_key is None and not getattr(rows, "exact", True)
        self._refresh_subtitle()

    @property
    def counting(self) -> bool:
        """Whether the total is still being counted (the subtitle says so, and no number)."""
        return self._counting

    def _refresh_subtitle(self) -> None:
        rows = self._shown
        if self._counting:
            self.border_subtitle = "partitions: counting…"
            return
        shown = f"{rows:,} of {len(self.all_rows):,}" if rows != len(self.all_rows) else f"{rows:,}"
        what = " ".join(filter(None, [self.topic_glob and f"topic {self.topic_glob}",
                                      self.flag and f"flag {self.flag}"]))
        hidden = self.table.hidden_columns
        self.border_subtitle = f"{shown} partitions" + (f" · filter: {what}" if what else "") + \
            (f" · {', '.join(hidden)} hidden (wider shows them)" if hidden else "")

    @on(RowTable.ColumnsHidden)
    def _columns_hidden(self, event: RowTable.ColumnsHidden) -> None:
        event.stop()
        self._refresh_subtitle()

    # -- filter and sort --------------------------------------------------------------------

    def set_filter(self, topic_glob: str, flag: str | None) -> None:
        if flag is not None and flag not in ALL_FLAGS:
            self.notify(f"unknown flag {flag!r}: one of {', '.join(ALL_FLAGS)}", severity="warning")
            flag = None
        if (topic_glob, flag) != (self.topic_glob, self.flag):
            self.topic_glob, self.flag = topic_glob, flag
            self.table.cursor_row = 0
            self._refresh_view()

    def sort_by(self, key: str, descending: bool) -> None:
        """Sort by a column (its key); a column the data layer cannot sort by is ignored."""
        if key not in COLUMN_SORT:
            return
        self.sort_key, self.descending = key, descending
        self.table.set_header(key, descending)
        self._refresh_view()

    def open_filter(self) -> None:
        self.filter_bar.display = True
        self._filter_focusable(True)
        self.query_one("#filter-input", Input).focus()

    def close_filter(self) -> None:
        self.filter_bar.display = False
        self._filter_focusable(False)
        self.table.focus()

    def clear_filter(self) -> None:
        """Every partition again: the typed glob and the chosen flag emptied, the bar closed."""
        self.query_one("#filter-input", Input).value = ""
        self.query_one("#flag-select", Select).clear()
        self.set_filter("", None)
        self.close_filter()

    @on(Input.Changed, "#filter-input")
    def _typed(self, event: Input.Changed) -> None:
        glob, flag = parse_filter(event.value)
        select = self.query_one("#flag-select", Select)
        self.set_filter(glob, flag if flag is not None else _selected(select))

    @on(Input.Submitted, "#filter-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.close_filter()

    @on(Select.Changed, "#flag-select")
    def _flag_chosen(self, event: Select.Changed) -> None:
        glob, typed = parse_filter(self.query_one("#filter-input", Input).value)
        self.set_filter(glob, typed if typed is not None else _selected(event.select))

    @on(RowTable.HeaderClicked)
    def _header_clicked(self, event: RowTable.HeaderClicked) -> None:
        event.stop()
        self.sort_by(event.column_key, not self.descending if event.column_key == self.sort_key else False)

    def selected_path(self) -> str | None:
        row = self.table.cursor_value
        return None if row is None else f"/topics/{row.topic}/{row.partition}"


def _selected(select: Select) -> str | None:
    value = select.value
    return value if isinstance(value, str) else None
