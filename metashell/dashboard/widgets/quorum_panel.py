"""The quorum: its voters (the leader highlighted) and the history of leader changes; attached
live, the voters and observers as the leader tells them now (log end offset, lag, last fetch)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from metashell.dashboard.model import VoterRow
from metashell.dashboard.widgets.row_table import Cell, Column, RowTable

# Narrow, the directory id goes first, then the ages; the id, endpoint, role and progress stay.
VOTER_COLUMNS = (
    Column("node_id", "id", align="right"),
    Column("directory_id", "directory id", max_width=24, shrink=True, drop=1),
    Column("endpoint", "endpoint", max_width=40, shrink=True, min_width=16), Column("role", "role"),
    Column("log_end_offset", "log end", align="right"), Column("lag", "lag", align="right"),
    Column("last_fetch", "last fetch", drop=3), Column("caught_up_age", "caught up", drop=2))
HISTORY_LINES = 3
ROLE_MARKERS = {"leader": "★ leader", "voter": "  voter", "observer": "  observer"}


def voter_cells(row: VoterRow) -> list[Cell]:
    return [(str(row.node_id), None), (row.directory_id, "muted"), (row.endpoint, None),
            (ROLE_MARKERS.get(row.role, row.role), "leader" if row.role == "leader" else None),
            (row.log_end_offset, None), (row.lag, None), (row.last_fetch, None), (row.caught_up_age, None)]


class QuorumPanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Quorum"
        self.history: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowTable(VOTER_COLUMNS, voter_cells, lambda r: "leader" if r.role == "leader" else None,
                       id="voters")
        yield Static("", id="leader-history", markup=False)

    @property
    def table(self) -> RowTable:
        return self.query_one("#voters", RowTable)

    @property
    def focus_target(self) -> Widget:
        """What takes the focus when the panel comes forward."""
        return self.table

    def show(self, voters: list[VoterRow], history: list[str], live: str = "") -> None:
        """``live``: the subtitle of a live quorum (its leader, epoch and high watermark)."""
        if list(self.table.rows) != voters:
            self.table.set_rows(voters)
        if live != (self.border_subtitle or ""):
            self.border_subtitle = live
        if history != self.history:
            self.history = history
            # newest first; the panel has room for the latest few
            shown = history[:HISTORY_LINES]
            more = f"  (+{len(history) - len(shown)} earlier)" if len(history) > len(shown) else ""
            lines = [f"leader changes, newest first{more}:", *("  " + line for line in shown)] if shown \
                else ["leader changes: none"]
            self.query_one("#leader-history", Static).update("\n".join(lines))
