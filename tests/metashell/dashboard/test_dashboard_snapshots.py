"""SVG snapshots of the dashboard's main screen, in both themes, at a fixed point of the demo.

Nothing on screen comes from a clock: times are the records' own, the demo's data is fixed,
and no Input has focus (so no blinking cursor). The position is the demo's first fence, found
from its events. Regenerate after a deliberate change with ``--snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History

SIZE = (160, 50)


@pytest.fixture
def history(demo_log_dir: Path) -> History:
    return History.open_log_dir(demo_log_dir)


def fence_offset(history: History) -> int:
    return next(e.offset for e in history.events if e.kind == "fence")


@pytest.mark.parametrize("theme", ["metashell-dark", "metashell-light"])
def test_main_screen_at_the_first_fence(snap_compare, history: History, theme: str) -> None:
    app = DashboardApp(history, theme=theme, offset=fence_offset(history))
    assert snap_compare(app, terminal_size=SIZE)


@pytest.mark.slow
def test_drilled_into_a_partition(snap_compare, history: History) -> None:
    """The node browser open at /topics/orders/1 (down, enter from the partitions table)."""
    app = DashboardApp(history, offset=fence_offset(history))
    assert snap_compare(app, press=["down", "enter"], terminal_size=SIZE)
