"""A node's history (``h`` in the node browser, as the shell's ``log``) and the diff of two marks
(``m`` twice on the timeline, as ``diff``): a full-screen box over the dashboard, a table of the
changes, what is aborted apart below it.

What is listed is worked out off the UI thread (a Textual thread worker): a node's history
replays the records of the run shown through the change sets (metashell.history), which on a
long log takes a while; the box says "reading…" meanwhile and the dashboard keeps its keys.
The work is a ``load`` function returning a ChangesView (metashell.dashboard.change_views); what
it raises is shown in one line, never a traceback.
"""

from __future__ import annotations

from typing import Callable, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import get_current_worker

from metashell.dashboard.change_views import ChangesView, TableRow
from metashell.dashboard.failure import one_line
from metashell.dashboard.widgets.row_table import Column, RowTable


def _worded(exc: Exception) -> bool:
    """A refusal of metashell.history's, worded for the user (a path whose history is not kept)."""
    from metashell.history.query import QueryError

    return isinstance(exc, QueryError)


def _cells(row: TableRow) -> list[tuple[str, str | None]]:
    return [(text, style) for text, style in row]


class ChangesScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,h", "close", "Close")]

    def __init__(self, title: str, columns: tuple[Column, ...], load: Callable[[], ChangesView]) -> None:
        super().__init__()
        self.title_text, self.columns, self._load = title, columns, load
        self.view: ChangesView | None = None
        self.failure: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="changes-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "escape closes"
            yield Static("reading…", id="changes-summary", markup=False)
            yield RowTable(self.columns, _cells, id="changes-table")
            yield Static("", id="changes-aborted-heading", markup=False)
            yield RowTable(self.columns, _cells, id="changes-aborted")

    def on_mount(self) -> None:
        self.query_one("#changes-aborted-heading").display = False
        self.query_one("#changes-aborted").display = False
        self.query_one("#changes-table", RowTable).focus()
        self._work()

    @work(thread=True, exclusive=True)
    def _work(self) -> None:
        try:
            view = self._load()
        except Exception as exc:  # noqa: BLE001 - whatever reading the log raised: one line on screen
            # a ValueError is a refusal worded for the user (a path with no history, marks across a gap)
            line = " ".join(str(exc).split()) if type(exc) is ValueError or _worded(exc) else one_line(exc)
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(self._failed, line)
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._loaded, view)

    def _failed(self, line: str) -> None:
        self.failure = line
        self.query_one("#changes-summary", Static).update(line)

    def _loaded(self, view: ChangesView) -> None:
        self.view = view
        self.query_one("#changes-summary", Static).update(view.summary)
        self.query_one("#changes-table", RowTable).set_rows(view.rows)
        heading, aborted = self.query_one("#changes-aborted-heading", Static), self.query_one("#changes-aborted",
                                                                                             RowTable)
        heading.display = aborted.display = bool(view.apart)
        if view.apart:
            heading.update(view.apart_title)
            aborted.set_rows(view.apart)

    @property
    def loaded(self) -> bool:
        return self.view is not None or self.failure is not None

    def action_close(self) -> None:
        self.workers.cancel_all()
        self.dismiss(None)
