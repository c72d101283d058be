"""The main screen's keys over the whole of the log: the timeline across every run, going to a
point of another run, the marks of a diff, and a node's history.

A mixin of MainScreen (its bindings are listed in MainScreen.BINDINGS from HISTORY_BINDINGS).

- **Runs.** A log directory with gaps (damage, or an archive's holes) is several runs; the screen
  shows one History at a time, and ``goto_offset`` / ``goto_time`` switch to the History of the
  run holding the point (metashell.dashboard.archive_runs.RunCache: opened once, from that run's
  snapshot).
  A switch swaps the source under every panel (``switch_source``) and the frame is shown anew.
- **Across gaps.** ``<`` / ``>``: the end of the run before, the start of the run after; a click
  on the timeline goes to the offset under it (refused in one line inside a gap).
- **Marks.** ``m`` marks the point shown (A, then B); once both are set the diff between them
  opens. ``M`` clears them, ``D`` opens their diff again. The marks show on the timeline.
- **A node's history.** ``h`` in the node browser: every change under the selected path, as
  ``log PATH`` lists it, over every run (metashell.dashboard.screens.changes_screen).

The history and the diff are answered in a worker thread from the History of change items the
shell's ``log`` and ``diff`` use (metashell.dashboard.change_views.change_history): an
archive's index, a log directory's items (read once, then kept), or what a live source holds.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual import work
from textual.binding import Binding, BindingType
from textual.worker import get_current_worker

from metashell.dashboard import change_views, diff_views
from metashell.dashboard.archive_runs import RunCache, Spans, neighbour_run, spans_of
from metashell.dashboard.failure import one_line
from metashell.dashboard.model import Frame
from metashell.dashboard.screens.changes_screen import ChangesScreen
from metashell.dashboard.screens.goto_checks import checked_offset
from metashell.dashboard.widgets import Charts, EventsFeed
from metashell.dashboard.widgets.timeline import Timeline

if TYPE_CHECKING:
    # the Screen, not MainScreen: importing the screen this mixin is part of would be a cycle
    from textual.screen import Screen

    _Base = Screen
else:
    _Base = object

HISTORY_BINDINGS: list[BindingType] = [
    Binding("less_than_sign", "run(-1)", "Previous run (across a gap)", show=False),
    Binding("greater_than_sign", "run(1)", "Next run (across a gap)", show=False),
    Binding("m", "mark", "Mark (diff of two)", show=False),  # (in the help; the footer is full)
    Binding("M", "clear_marks", "Clear the marks", show=False),
    Binding("D", "diff_marks", "Diff of the two marks", show=False),
]


class HistoryKeys(_Base):
    marks: tuple[int, ...] = ()  # the offsets marked (A, then B)
    _runs: RunCache | None = None
    _spans: Spans | None = None
    _runs_lock = threading.Lock()
    _changes_lock = threading.Lock()
    _kept_changes: Any = None  # a log directory's change items, once read (metashell.history.sources)

    # -- the runs --------------------------------------------------------------------------------

    @property
    def spans(self) -> Spans:
        """Every run of the log and the gaps: found once (a scan of the batch headers when damaged)."""
        if self._spans is None:
            self._spans = spans_of(self.source)
            directory = getattr(getattr(self.source, "info", None), "source", None)
            if len(self._spans.runs) > 1 and directory is not None:
                from metashell.dashboard.history import History

                self._runs = RunCache(directory, lambda path, offset: History.open_log_dir(path, offset=offset))
                self._runs.add(self.shown_run(), self.source)
        return self._spans

    def shown_run(self) -> tuple[int, int]:
        src = self.source
        return (src.start_offset, src.last_offset)

    def goto_offset(self, offset: int) -> None:
        """Show ``offset`` (``g``), switching to its run when another one holds it. A point in no
        run (the prompt refuses it before it gets here) is clamped to the run shown."""
        run = self.spans.run_of(offset)
        if run is not None and run != self.shown_run():
            self._switch_to(run, lambda history: history.frame_at(offset))
        else:
            self._go(self.source.frame_at(offset, self.frame))

    def goto_time(self, time_ms: int) -> None:
        """Show the point at ``time_ms`` (``T``), in whichever run holds it."""
        if self._runs is not None:
            offset = self.source.replay.image_at(time_ms=time_ms)[0].provenance.last_offset
            run = self.spans.run_of(offset)
            if run is not None and run != self.shown_run():
                self._switch_to(run, lambda history: history.at_time(time_ms))
                return
        self._go(self.source.at_time(time_ms, self.frame))

    def _switch_to(self, run: tuple[int, int], point: Callable[[Any], Frame]) -> None:
        """Show ``point`` of ``run``'s History: at once when opened before, else once a worker has
        opened it (a replay of the whole run: the keys stay live meanwhile)."""
        assert self._runs is not None
        held = self._runs.held(run)
        if held is not None:
            self.switch_source(held)
            self.show(point(held))
            return
        self.notify(f"opening offsets {run[0]}..{run[1]}: replaying that run from its start…", timeout=4)
        self._open_run(run, point)

    @work(thread=True, exclusive=True, group="open-run")
    def _open_run(self, run: tuple[int, int], point: Callable[[Any], Frame]) -> None:
        assert self._runs is not None
        try:
            with self._runs_lock:
                history = self._runs.history_for(run)
            if not getattr(history, "under_counted", True):  # a big starting image: counted here, off the UI thread
                history.set_under_base(history.count_under_base())
        except Exception as exc:  # noqa: BLE001 - the run could not be read: one line, the position stays
            why = " ".join(str(exc).split()) if type(exc) is ValueError else one_line(exc)
            self.app.call_from_thread(self.notify, f"offsets {run[0]}..{run[1]} cannot be opened: {why}",
                                      severity="error", timeout=10)
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._arrived, history, point)

    def _arrived(self, history: Any, point: Callable[[Any], Frame]) -> None:
        self.switch_source(history)
        self.show(point(history))

    def action_run(self, direction: int) -> None:
        """To the end of the run before, or the start of the run after (the other side of a gap)."""
        run = neighbour_run(self.spans, self.shown_run(), direction)
        if run is None:
            self.notify("no run before this one" if direction < 0 else "no run after this one", timeout=3)
            return
        self.goto_offset(run[1] if direction < 0 else run[0])

    def on_timeline_picked(self, message: Timeline.Picked) -> None:
        """A click on the timeline: there, unless in a gap (refused in one line, as ``g`` refuses it)."""
        try:
            checked_offset(self.source, str(message.offset), lambda text: int(text))
        except ValueError as exc:
            self.notify(str(exc), severity="warning", timeout=8)
            return
        self.goto_offset(message.offset)

    def switch_source(self, source: Any) -> None:
        """Put ``source`` (another run's History) under every panel that reads the source."""
        self.source = source
        self.query_one(EventsFeed).source = source
        self._seen = (source.generation, source.reshaped)
        self.query_one(Charts).follow(source)
        self.frame = None  # the next frame is shown whole: nothing of the other run's carries over

    def show_timeline(self, frame: Frame) -> None:
        self.query_one(Timeline).show(self.spans, self.shown_run(), frame.offset, self.marks)

    # -- marks and the diff ----------------------------------------------------------------------

    def action_mark(self) -> None:
        assert self.frame is not None
        marks = self.marks if len(self.marks) < 2 else ()
        self.marks = (*marks, self.frame.offset)
        self.show_timeline(self.frame)
        if len(self.marks) == 2:
            self.action_diff_marks()
        else:
            self.notify(f"mark A at offset {self.frame.offset}: m again at another point shows the diff", timeout=4)

    def action_clear_marks(self) -> None:
        self.marks = ()
        if self.frame is not None:
            self.show_timeline(self.frame)

    def action_diff_marks(self) -> None:
        if len(self.marks) < 2:
            self.notify("mark two points first (m here, then m at another point)", timeout=4)
            return
        a, b = sorted(self.marks)
        answer = self._change_history()
        self.app.push_screen(ChangesScreen(f"diff {a} {b}", change_views.DIFF_COLUMNS,
                                           lambda: answer(lambda history: diff_views.marks_diff(history, a, b))))

    # -- a node's history ------------------------------------------------------------------------

    def show_node_history(self, path: str) -> None:
        answer = self._change_history()
        self.app.push_screen(ChangesScreen(f"log {path}", change_views.HISTORY_COLUMNS,
                                           lambda: answer(lambda history: change_views.node_history_view(history,
                                                                                                          path))))

    def _change_history(self) -> Callable[[Callable[[Any], change_views.ChangesView]], change_views.ChangesView]:
        """How a worker asks the History of change items ``log`` and ``diff`` would (see
        change_views.change_history): what a live source holds is taken now, on the UI thread; a
        log directory's items are read once and kept; an archive's index is opened per question."""
        live = change_views.held(self.source)
        info = getattr(self.source, "info", None)
        directory = Path(info.source) if info is not None and Path(info.source).is_dir() else None

        def answer(ask: Callable[[Any], change_views.ChangesView]) -> change_views.ChangesView:
            with self._changes_lock:
                kept = self._kept_changes if live is None else None
                history = kept or change_views.change_history(directory, live)
                if live is None and not hasattr(history, "close"):
                    self._kept_changes = history  # a MemoryHistory: plain data, good for every later question
            try:
                return ask(history)
            finally:
                if hasattr(history, "close"):
                    history.close()  # an archive's index: its connection belongs to this thread
        return answer
