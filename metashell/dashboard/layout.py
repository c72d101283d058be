"""Which layout fits the terminal, and the panels: their order, keys and titles.

Wide enough and tall enough for every panel to show its rows, the panels sit side by side
(two columns). Below either breakpoint the panels become tabs: one fills the screen, a tab
bar names them all and the number keys switch between them. The same keys work in both
layouts (1..7, tab / shift+tab), so an operator who learnt one knows the other; the active
panel is the one holding the focus.

The breakpoints are where the two-column layout stops showing what it is for: under
WIDE_MIN_WIDTH columns the partitions table (in the left column, 5/8 of the width) has room
for fewer than 84 cells; under WIDE_MIN_HEIGHT rows the events feed and the node browser
(stacked in the right column under the charts and the controller's metrics) show fewer than
six rows each.
"""

from __future__ import annotations

from dataclasses import dataclass

WIDE_MIN_WIDTH = 140
WIDE_MIN_HEIGHT = 40
WIDE, TABBED = "wide", "tabbed"


@dataclass(frozen=True, slots=True)
class PanelSpec:
    key: str  # the key that brings the panel forward (and its number in the titles)
    id: str  # the panel widget's id on the main screen
    title: str


PANELS = (PanelSpec("1", "partitions-panel", "Partitions"), PanelSpec("2", "brokers-panel", "Brokers"),
          PanelSpec("3", "quorum", "Quorum"), PanelSpec("4", "events-panel", "Events"),
          PanelSpec("5", "controller", "Controller"), PanelSpec("6", "charts", "Charts"),
          PanelSpec("7", "nodes", "Nodes"))
PANEL_IDS = tuple(spec.id for spec in PANELS)


def layout_for(width: int, height: int) -> str:
    """WIDE when every panel fits side by side at ``width`` x ``height`` cells, else TABBED."""
    return WIDE if width >= WIDE_MIN_WIDTH and height >= WIDE_MIN_HEIGHT else TABBED


def panel_spec(panel_id: str) -> PanelSpec:
    return next(spec for spec in PANELS if spec.id == panel_id)


def cycle(panel_id: str | None, direction: int) -> str:
    """The panel ``direction`` steps from ``panel_id`` in PANELS order (from none: the first or last)."""
    if panel_id not in PANEL_IDS:
        return PANEL_IDS[0 if direction > 0 else -1]
    return PANEL_IDS[(PANEL_IDS.index(panel_id) + direction) % len(PANEL_IDS)]
