"""The main screen's panels as a whole: the layout that fits the terminal, which panel is in
front, moving between them, the partition filter and drilling into the node tree.

A mixin of MainScreen (its bindings are declared there). The layout is two classes on the
screen, chosen on every resize (metashell.dashboard.layout): ``-tabbed`` below the breakpoints,
where the stylesheet shows only the panel marked ``-shown`` and the tab bar. The panel in
front is always the one holding the focus: a key, a click on a tab, tab / shift+tab or a
drill-down moves the focus, and ``on_descendant_focus`` brings its panel forward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.widget import Widget

from metashell.dashboard import layout
from metashell.dashboard.layout import PANELS, TABBED, WIDE
from metashell.dashboard.widgets import BrokersPanel, EventsFeed, NodeBrowser, PartitionsPanel, QuorumPanel
from metashell.dashboard.widgets.panel_tabs import PanelTabs

if TYPE_CHECKING:
    from textual.screen import Screen

    _Base = Screen
else:
    _Base = object


class PanelNavigation(_Base):
    layout_mode = WIDE
    active_panel = PANELS[0].id

    def panel(self, panel_id: str) -> Widget:
        return self.query_one(f"#{panel_id}", Widget)

    def focus_target(self, panel_id: str) -> Widget:
        """What takes the focus when the panel comes forward: its table or tree, else itself."""
        panel: Any = self.panel(panel_id)
        return getattr(panel, "focus_target", panel)

    # -- the layout -------------------------------------------------------------------------------

    def apply_layout(self, width: int, height: int) -> None:
        """The layout for a terminal of ``width`` x ``height`` cells."""
        mode = layout.layout_for(width, height)
        if mode != self.layout_mode:
            self.layout_mode = mode
            self.set_class(mode == TABBED, "-tabbed")
            self._mark_active()

    def on_resize(self, event: events.Resize) -> None:
        self.apply_layout(event.size.width, event.size.height)

    def _mark_active(self) -> None:
        for spec in PANELS:
            self.panel(spec.id).set_class(spec.id == self.active_panel, "-shown")
        holder = self.panel(self.active_panel).parent
        for column in self.query("#body > Vertical"):
            column.set_class(column is holder, "-holds-shown")
        self.query_one(PanelTabs).activate(self.active_panel)

    def bring_forward(self, panel_id: str) -> None:
        """Make ``panel_id`` the active panel (shown alone in the tabbed layout)."""
        if panel_id != self.active_panel:
            self.active_panel = panel_id
            self._mark_active()
            if isinstance(browser := self.panel(panel_id), NodeBrowser):
                browser.rebuild()  # frames shown while it was hidden left its tree behind

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        panel = _panel_of(event.widget)
        if panel is None or panel.id not in layout.PANEL_IDS or panel.id == self.active_panel:
            return
        if self.layout_mode == TABBED and not panel.display:
            # Textual handing the focus of a widget just hidden to a sibling of it (as hidden):
            # not the user's move. The focus goes back to the panel in front.
            self.call_after_refresh(self.focus_target(self.active_panel).focus)
            return
        self.bring_forward(panel.id)

    def action_show_panel(self, panel_id: str) -> None:
        self.bring_forward(panel_id)
        # after the refresh that displays it: a widget focused while undisplayed loses the focus
        self.call_after_refresh(self.focus_target(panel_id).focus)

    def action_cycle_panel(self, direction: int) -> None:
        here = _panel_of(self.focused)  # the filter Input counts as the partitions panel
        self.action_show_panel(layout.cycle(here.id if here is not None else None, direction))

    # -- the partition filter ----------------------------------------------------------------------

    def action_filter(self) -> None:
        self.bring_forward("partitions-panel")
        self.query_one(PartitionsPanel).open_filter()

    def action_escape(self) -> None:
        """Escape clears the partition filter (and closes its bar)."""
        self.query_one(PartitionsPanel).clear_filter()

    def escape_enabled(self) -> bool:
        """Escape has something to do: a filter bar open or a filter set."""
        panel = self.query_one(PartitionsPanel)
        return bool(panel.filter_bar.display or panel.topic_glob or panel.flag)

    # -- drilling down ---------------------------------------------------------------------------

    def action_drill_down(self) -> None:
        path = self.selected_path()
        browser = self.query_one(NodeBrowser)
        if path is None:
            return
        self.bring_forward("nodes")
        if not browser.select_path(path):
            self.notify(f"{path}: not in this image", severity="warning")

    def selected_path(self) -> str | None:
        """The node-tree path of the row under the cursor of the focused panel."""
        focused = self.focused
        partitions = self.query_one(PartitionsPanel)
        if focused is partitions.table:
            return partitions.selected_path()
        if focused is self.query_one(BrokersPanel).table:
            row = focused.cursor_value
            return None if row is None else f"/brokers/{row.broker_id}"
        if focused is self.query_one(QuorumPanel).table:
            row = focused.cursor_value
            return None if row is None else f"/quorum/voters/{row.node_id}"
        if focused is self.query_one(EventsFeed).table:
            row = focused.cursor_value
            return None if row is None else subject_path(row[0].subject)
        return None


def _panel_of(widget: Widget | None) -> Widget | None:
    for node in ([widget, *widget.ancestors] if widget is not None else []):
        if isinstance(node, Widget) and node.has_class("panel"):
            return node
    return None


def subject_path(subject: str) -> str | None:
    """An event's subject as a node path: "broker 2", "topic orders", "orders-0", "voter 3"."""
    kind, _, name = subject.partition(" ")
    if kind == "broker" and name:
        return f"/brokers/{name}"
    if kind == "topic" and name:
        return f"/topics/{name}"
    if kind in ("voter", "quorum", "voters"):
        return f"/quorum/voters/{name}" if name else "/quorum"
    topic, dash, partition = subject.rpartition("-")
    return f"/topics/{topic}/{partition}" if dash and partition.isdigit() else None
