"""The dashboard on a damaged log: it opens the run that reaches the newest point (as the shell
does), says in its header that the log is damaged and which offsets it shows, and its ``g`` and
``T`` accept what --offset and --time accept, refusing the rest in one line with the position
unchanged. ``T`` before the first record is refused on any log, as --time is.

The demo log (offsets 0 to 23, the fifth batch holding 10 to 13) gets a snapshot at end offset 15,
then a byte flipped in that batch's records: the runs are -1..9 and 14..23.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.screens.prompt_screen import PromptScreen
from metashell.dashboard.widgets import HeaderBar
from tests.metashell.dashboard.damaged_demo import write_damaged_demo

RUNS = "offsets -1 (before the first record) to 9 and 14 to 23 can be reached"


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return write_damaged_demo(tmp_path / "demo")


def run(app: DashboardApp, body) -> None:
    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            await body(pilot, app.main)
    asyncio.run(main())


async def refused(pilot, screen: MainScreen, key: str, typed: str) -> str:
    """Type ``typed`` at ``key``'s prompt: the prompt stays with its error; escape closes it."""
    before = screen.frame.offset
    await pilot.press(key, *typed, "enter")
    await pilot.pause()
    prompt = pilot.app.screen
    assert isinstance(prompt, PromptScreen), typed
    error = str(prompt.query_one("#prompt-error").render())
    await pilot.press("escape")
    await pilot.pause()
    assert pilot.app.screen is screen and screen.frame.offset == before
    return error


def test_the_dashboard_opens_the_newest_run_and_says_the_log_is_damaged(damaged: Path) -> None:
    history = History.open_log_dir(damaged)
    assert (history.start_offset, history.last_offset) == (14, 23)
    assert History.open_log_dir(damaged, offset=5).last_offset == 9  # --offset 5: the run holding it

    async def body(pilot, screen: MainScreen) -> None:
        assert screen.frame.offset == 23
        position = screen.query_one(HeaderBar).info.position
        assert position == "offset 23 / 23 · ⚠ damaged log: 14..23 shown (-1..9 by g)"
        error = await refused(pilot, screen, "g", "12")
        assert error.startswith("offset 12 is in a damaged part of the log, which no replay reaches (")
        assert error.endswith(RUNS)
        assert (await refused(pilot, screen, "g", "30")).startswith("offset 30 is past the log's end: ")
        await pilot.press("g", "1", "6", "enter")
        await pilot.pause()
        assert pilot.app.screen is screen and screen.frame.offset == 16
        error = await refused(pilot, screen, "T", "1767225604500")  # after 9's time, before the snapshot's
        assert "the log stops at damage" in error and error.endswith(RUNS)
        # a point of the other run: that run is opened and shown (tests/metashell/dashboard/test_dash_history_runs.py)
        await pilot.press("g", "5", "enter")
        await pilot.app.workers.wait_for_complete()  # (that run is opened in a worker)
        await pilot.pause()
        assert pilot.app.screen is screen and screen.frame.offset == 5
        assert screen.query_one(HeaderBar).info.position == "offset 5 / 9 · ⚠ damaged log: -1..9 shown (14..23 by g)"
    run(DashboardApp(history), body)


def test_a_time_before_the_first_record_is_refused_as_on_the_command_line(demo_log_dir: Path) -> None:
    history = History.open_log_dir(demo_log_dir)

    async def body(pilot, screen: MainScreen) -> None:
        error = await refused(pilot, screen, "T", "2025-01-01T00:00:00Z")
        assert error == ("time 2025-01-01T00:00:00.000Z is before the log's earliest point (offset -1, "
                         "2026-01-01T00:00:00.000Z): offsets -1 (before the first record) to 23 can be reached")
        await pilot.press("T", *"2030-01-01T00:00:00Z", "enter")  # after the last record: "as of" that time
        await pilot.pause()
        assert pilot.app.screen is screen and screen.frame.offset == 23
    run(DashboardApp(history, offset=5), body)
