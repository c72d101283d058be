"""The brokers: registration, state (colour *and* a text marker), and their load."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget

from metashell.dashboard.model import BrokerRow
from metashell.dashboard.widgets.row_table import Cell, Column, RowTable

# Markers make the state readable without colour (monochrome terminals, screenshots in print).
STATE_MARKERS = {"active": "● active", "fenced": "✖ fenced", "controlled-shutdown": "◐ shutdown",
                 "unregistered": "○ unregistered"}
# Narrow, the incarnation goes first, then the epoch, the endpoints and the rack; id, state and
# the load stay.
BROKER_COLUMNS = (
    Column("broker_id", "id", align="right"), Column("rack", "rack", max_width=12, drop=4),
    Column("state", "state"), Column("epoch", "epoch", align="right", drop=2),
    Column("incarnation", "incarnation", max_width=24, shrink=True, drop=1),
    Column("endpoints", "endpoints", max_width=60, shrink=True, min_width=16, drop=3),
    Column("leader_of", "leads", align="right"), Column("replicas", "replicas", align="right"))


def broker_cells(row: BrokerRow) -> list[Cell]:
    state = STATE_MARKERS.get(row.state, row.state)
    if row.cordoned:  # said beside the state, not in a column of its own: rare, and it matters when so
        state += f", {row.cordoned} dir{'s' if row.cordoned > 1 else ''} cordoned"
    return [(str(row.broker_id), None), (row.rack, None),
            (state, f"state-{row.state}" if row.state in STATE_MARKERS else None),
            (str(row.epoch), None), (row.incarnation, "muted"), (row.endpoints, None),
            _load(row.leader_of), _load(row.replicas)]


def _load(count: int | None) -> Cell:
    """A broker's leaders or replicas; "…" while they are being counted (the subtitle says so)."""
    return ("…", "muted") if count is None else (str(count), None)


class BrokersPanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Brokers"

    def compose(self) -> ComposeResult:
        yield RowTable(BROKER_COLUMNS, broker_cells,
                       lambda r: "muted" if r.state == "unregistered" else None, id="brokers")

    @property
    def table(self) -> RowTable:
        return self.query_one("#brokers", RowTable)

    @property
    def focus_target(self) -> Widget:
        """What takes the focus when the panel comes forward."""
        return self.table

    def show(self, rows: list[BrokerRow]) -> None:
        if list(self.table.rows) != rows:
            self.table.set_rows(rows)
            self.border_subtitle = _summary(rows)


def _summary(rows: list[BrokerRow]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    states = "  ".join(f"{STATE_MARKERS.get(s, s).split()[0]} {n}" for s, n in counts.items())
    counting = any(row.leader_of is None for row in rows)
    return f"{states} · leads: counting…" if counting else states
