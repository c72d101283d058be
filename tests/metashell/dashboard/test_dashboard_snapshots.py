"""SVG snapshots of the dashboard at three terminal sizes and in both themes, at a fixed point of
the bad day of ``metashell demo`` (metashell.demo.dashboard_demo): the moment payments-0 lost its
last in-sync replica (leaderless, ISR empty, ELR [2, 4], last-known ELR [2]).

80x24 and 120x35 are the tabbed layout (one panel filling the screen), 200x50 the wide one.
Nothing on screen comes from a clock: times are the records' own, the demo's bytes are the same
on every run, the history is a file (no live ages) and no Input has focus (no blinking cursor).
The position is found from the history's events, not hard-coded. Regenerate after a
deliberate change with ``--snapshot-update`` and look at the report before committing.
"""

from __future__ import annotations

import pytest

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from tests.dashboard_screen import elr_moment



@pytest.mark.parametrize("size", [(80, 24), (120, 35), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_elr_moment_at_each_size(snap_compare, bad_day: History, size: tuple[int, int]) -> None:
    app = DashboardApp(bad_day, offset=elr_moment(bad_day))
    assert snap_compare(app, terminal_size=size)


def test_the_light_theme(snap_compare, bad_day: History) -> None:
    app = DashboardApp(bad_day, theme="metashell-light", offset=elr_moment(bad_day))
    assert snap_compare(app, terminal_size=(200, 50))


@pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_brokers_tab(snap_compare, bad_day: History, size: tuple[int, int]) -> None:
    """2 brings the brokers forward (the tabbed layout)."""
    app = DashboardApp(bad_day, offset=elr_moment(bad_day))
    assert snap_compare(app, press=["2"], terminal_size=size)


@pytest.mark.slow
def test_drilled_into_a_partition(snap_compare, bad_day: History) -> None:
    """The node browser open at the partition under the cursor (down, enter from the partitions)."""
    app = DashboardApp(bad_day, offset=elr_moment(bad_day))
    assert snap_compare(app, press=["down", "enter"], terminal_size=(120, 35))


@pytest.mark.slow
def test_the_legend(snap_compare, bad_day: History) -> None:
    app = DashboardApp(bad_day, offset=elr_moment(bad_day))
    assert snap_compare(app, press=["question_mark"], terminal_size=(120, 35))
