"""The dashboard at any terminal size, driven by keys over the bad day of ``metashell demo``.

At 80x24 and 120x35 the panels are tabs (one fills the screen); at 200x50 they sit side by
side. At each size every panel is reached by its key and *read*: the test reads the screen as
the terminal would show it (the compositor's frame, what Textual's own SVG export draws) and
finds the rows there, not in the widgets' data. The position is the moment payments-0 lost its
last in-sync replica, found from the history's events.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable

import pytest
from textual.widgets import Input
from textual.widgets._toast import Toast

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.layout import PANELS, TABBED, WIDE
from metashell.dashboard.legend import FLAG_MEANINGS
from metashell.dashboard.model import ALL_FLAGS
from metashell.dashboard.screens import HelpScreen, MainScreen
from metashell.dashboard.screens.prompt_screen import PromptScreen
from metashell.dashboard.widgets import PartitionsPanel
from metashell.dashboard.widgets.brokers_panel import STATE_MARKERS
from metashell.dashboard.widgets.columns import Column, column_widths
from metashell.dashboard.widgets.partitions_table import FLAG_WORDS
from tests.dashboard_screen import elr_moment, screen_lines, shows

SIZES = [(80, 24), (120, 35), (200, 50)]




def run(app: DashboardApp, size: tuple[int, int], body: Callable[..., Awaitable[None]], *,
        notifications: bool = False) -> None:
    async def main() -> None:
        async with app.run_test(size=size, notifications=notifications) as pilot:
            await pilot.pause()
            await body(pilot, app.main)
    asyncio.run(main())


# what each panel shows at the ELR moment, as a line on screen must read
READS = {
    "partitions-panel": r"payments\s+0\s+none\b.*\[2,4\].*no-leader <min-isr elr-only",
    "brokers-panel": r"\b4 rack-a\s+✖ fenced\b",
    "quorum": r"\b101 .*★ leader\b",
    "events-panel": r"\d+ \d\d:\d\d:\d\d\s+payments-0 ISR \[2\] → \[\]",
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_panel_is_reached_by_its_key_and_read(bad_day: History, size: tuple[int, int]) -> None:
    keys = {spec.id: spec.key for spec in PANELS}

    async def body(pilot, screen: MainScreen) -> None:
        assert screen.layout_mode == (WIDE if size == (200, 50) else TABBED)
        for panel_id, pattern in READS.items():
            await pilot.press(keys[panel_id])
            await pilot.pause()
            assert screen.active_panel == panel_id
            assert screen.focused is screen.focus_target(panel_id)
            assert shows(pilot.app, pattern), f"{panel_id} at {size}: {pattern!r} not on screen"
            shown = [spec.id for spec in PANELS if screen.panel(spec.id).region.area]
            if screen.layout_mode == TABBED:  # one panel fills the body, the tab bar names them all
                assert shown == [panel_id]
                assert screen.panel(panel_id).region.height >= size[1] - 5
                assert shows(pilot.app, r"1 Partitions\s+2 Brokers\s+3 Quorum\s+4 Events")
            else:
                assert shown == [spec.id for spec in PANELS]
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), size, body)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES[:2], ids=lambda s: f"{s[0]}x{s[1]}")
def test_tab_goes_round_every_panel_in_the_order_of_their_keys(bad_day: History, size: tuple[int, int]) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        assert screen.active_panel == "partitions-panel"
        seen = []
        for _ in PANELS:
            await pilot.press("tab")
            await pilot.pause()
            seen.append(screen.active_panel)
            assert screen.focused is screen.focus_target(screen.active_panel)
            assert [s.id for s in PANELS if screen.panel(s.id).region.area] == [screen.active_panel]
        assert seen == [spec.id for spec in PANELS[1:]] + [PANELS[0].id]
        await pilot.press("shift+tab")
        await pilot.pause()
        assert screen.active_panel == PANELS[-1].id
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), size, body)


def test_the_layout_follows_the_terminal_as_it_is_resized(bad_day: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("2")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert screen.layout_mode == TABBED and screen.has_class("-tabbed")
        assert [s.id for s in PANELS if screen.panel(s.id).region.area] == ["brokers-panel"]
        assert shows(pilot.app, READS["brokers-panel"])
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert screen.layout_mode == WIDE and not screen.has_class("-tabbed")
        assert all(screen.panel(s.id).region.area for s in PANELS)
        assert screen.focused is screen.focus_target("brokers-panel")
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), (200, 50), body)


@pytest.mark.parametrize("size", [(80, 24), pytest.param((200, 50), marks=pytest.mark.slow)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_focused_panel_is_marked(bad_day: History, size: tuple[int, int]) -> None:
    def border(screen: MainScreen, panel_id: str) -> str:
        return screen.panel(panel_id).styles.border_top[0]

    async def body(pilot, screen: MainScreen) -> None:
        assert border(screen, "partitions-panel") == "heavy"
        assert {border(screen, s.id) for s in PANELS[1:]} == {"round"}
        assert shows(pilot.app, r"┏━ 1 Partitions ━")
        await pilot.press("4")
        await pilot.pause()
        assert border(screen, "events-panel") == "heavy" and border(screen, "partitions-panel") == "round"
        assert shows(pilot.app, r"┏━ 4 Events ━")
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), size, body)


def test_narrow_columns_give_way_but_never_the_flags(bad_day: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        panel = screen.query_one(PartitionsPanel)
        # 80 columns: the leader epoch and the last-known ELR give way first, the flags stay whole
        assert panel.table.hidden_columns == ["epoch", "last ELR"]
        assert "epoch, last ELR hidden" in panel.border_subtitle
        assert shows(pilot.app, r"payments\s+0\s+none \[2,4,5\]\s+\[\]\s+\[2,4\] no-leader <min-isr elr-only")
        await pilot.resize_terminal(64, 24)  # narrower than the columns at their narrowest
        await pilot.pause()
        assert panel.table.hidden_columns == ["epoch", "replicas", "ELR", "last ELR"]
        assert shows(pilot.app, r"payments\s+0\s+none \[\]\s+no-leader <min-isr elr-only")
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert panel.table.hidden_columns == [] and "hidden" not in panel.border_subtitle
        assert shows(pilot.app, r"payments\s+0\s+none\s+1 \[2,4,5\]\s+\[\]\s+\[2,4\] \[2\]\s+no-leader")
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), (80, 24), body)


# -- the legend and the footer hint -------------------------------------------------------------

def test_the_legend_explains_the_words_and_every_flag(bad_day: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.pause()  # the footer lists the keys once the focus has settled
        assert shows(pilot.app, r"\? Help · legend")  # the footer's hint, even at 80 columns
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        words = help_screen.legend_words()
        for word in ("imbalanced", "last ELR", "ELR", "ISR", *(FLAG_WORDS[f] for f in ALL_FLAGS),
                     *STATE_MARKERS.values()):
            assert word in words, word
        assert set(FLAG_MEANINGS) == set(ALL_FLAGS)
        assert shows(pilot.app, r"imbalanced\s+partitions whose leader is not their")
        await pilot.press("escape")
        assert pilot.app.screen is screen
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), (80, 24), body)


# -- saving the screen --------------------------------------------------------------------------

def toasts(app: DashboardApp) -> list[str]:
    return [toast.render().plain for toast in app.screen.query(Toast)]


def test_w_saves_the_screen_as_svg_and_says_where(bad_day: History, tmp_path: Path) -> None:
    moment = datetime(2026, 11, 27, 15, 4, 5, tzinfo=timezone.utc)
    offset = elr_moment(bad_day)

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("w")
        await pilot.pause()
        written = tmp_path / f"metashell-offset-{offset}-20261127T150405Z.svg"
        assert written.is_file() and written.read_text().lstrip().startswith("<svg")
        assert "payments" in written.read_text()
        assert any(f"screen saved to {written}" in text for text in toasts(pilot.app))
    run(DashboardApp(bad_day, offset=offset, screenshot_dir=tmp_path, clock=lambda: moment), (80, 24), body,
        notifications=True)


def test_a_screen_that_cannot_be_saved_says_why_in_one_line(bad_day: History, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("w")
        await pilot.pause()
        said = [text for text in toasts(pilot.app) if "not saved" in text]
        assert len(said) == 1 and "\n" not in said[0] and "No such file or directory" in said[0]
        assert "Traceback" not in said[0] and not missing.exists()
        assert pilot.app.screen is screen  # the app carries on
    run(DashboardApp(bad_day, screenshot_dir=missing), (80, 24), body, notifications=True)


# -- go to an offset: out of range is an error, the position stays ----------------------------------

@pytest.mark.parametrize("typed,says", [
    ("99999", "offset 99999 is past the end: offsets 0..{last} can be reached"),
    pytest.param("-5", "offset -5 is before the start: offsets 0..{last} can be reached", marks=pytest.mark.slow),
    pytest.param("abc", "abc is not an offset: give one of 0..{last}", marks=pytest.mark.slow),
])
def test_g_out_of_range_is_a_one_line_error_and_the_position_stays(bad_day: History, typed: str, says: str) -> None:
    offset = elr_moment(bad_day)

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("g", *typed, "enter")
        await pilot.pause()
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen)  # still open: the answer was refused
        error = str(prompt.query_one("#prompt-error").render())
        assert error == says.format(last=bad_day.last_offset)
        assert shows(pilot.app, re.escape(error))  # on one line of the screen
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen and screen.frame.offset == offset
        await pilot.press("g", *str(offset - 3), "enter")  # an offset in range goes there
        await pilot.pause()
        assert pilot.app.screen is screen and screen.frame.offset == offset - 3
    run(DashboardApp(bad_day, offset=offset), (120, 35), body)


# -- the partition filter ---------------------------------------------------------------------------

def test_escape_clears_the_partition_filter(bad_day: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        panel = screen.query_one(PartitionsPanel)
        every = len(panel.all_rows)
        await pilot.press("slash", *"pay")
        assert 0 < len(panel.table.rows) < every and panel.filter_bar.display
        await pilot.press("escape")  # while typing
        assert len(panel.table.rows) == every and not panel.filter_bar.display
        assert panel.query_one("#filter-input", Input).value == "" and panel.table.has_focus
        await pilot.press("slash", *"flag:isr-empty-elr", "enter")  # applied, the bar closed
        assert not panel.filter_bar.display and len(panel.table.rows) == 1
        await pilot.press("escape")
        assert len(panel.table.rows) == every and "filter" not in panel.border_subtitle
        await pilot.press("slash")  # the bar opens empty again
        assert panel.query_one("#filter-input", Input).value == ""
    run(DashboardApp(bad_day, offset=elr_moment(bad_day)), (120, 35), body)


# -- the header -----------------------------------------------------------------------------------

def test_home_says_before_the_first_record(bad_day: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")
        await pilot.pause()
        assert screen.frame.offset == -1
        header = screen_lines(pilot.app)[0]
        assert "before the first record" in header
        assert "offset -1" not in header and "quorum leader none" not in header and "record time -" not in header
        assert shows(pilot.app, r"applied\s+nothing yet: before the first record")  # the Controller panel
    run(DashboardApp(bad_day), (200, 50), body)


# -- how columns share the width (pure) ---------------------------------------------------------------

def test_columns_give_way_in_their_order_and_only_as_much_as_needed() -> None:
    columns = (Column("name", "name", shrink=True, min_width=6), Column("a", "a", drop=2), Column("b", "b", drop=1),
               Column("flags", "flags", flex=True))
    fitted = [12, 5, 5, 10]  # a row: 12+1 + 5+1 + 5+1 + 10+1 = 36 cells
    assert column_widths(columns, fitted, 40) == [12, 5, 5, 14]  # room to spare: the flex column takes it
    assert column_widths(columns, fitted, 36) == [12, 5, 5, 10]
    assert column_widths(columns, fitted, 33) == [9, 5, 5, 10]  # the name shrinks before anything goes
    assert column_widths(columns, fitted, 29) == [11, 5, 0, 10]  # b (rank 1) goes, the name nearly whole again
    assert column_widths(columns, fitted, 24) == [6, 5, 0, 10]  # the name at its narrowest
    assert column_widths(columns, fitted, 19) == [7, 0, 0, 10]  # a goes too (and the name takes the room)
    assert column_widths(columns, fitted, 10)[-1] == 10  # never the flags: the table scrolls sideways
    assert column_widths(columns, fitted, 0) == fitted  # not laid out yet: nothing gives way
