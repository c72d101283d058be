"""Time on the dashboard: the charts' shared time axis, and dates in the events feed once a
history spans more than a day. Histories are built by replaying records (the demo's, or a few
broker records stamped days apart), never by hand-made frames."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable

import pytest

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from engine.storage.log_reader import LogEntry
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.widgets import Charts, EventsFeed
from metashell.dashboard.widgets.charts import axis_line, resample
from tests.broker_records import broker_fencing, broker_registration
from tests.dashboard_screen import shows

MS = lambda text: int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)  # noqa: E731


def run(app: DashboardApp, size: tuple[int, int], body: Callable[..., Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await body(pilot, app.main)
    asyncio.run(main())


# -- the axis line ------------------------------------------------------------------------------

def test_the_axis_names_the_start_the_middle_and_the_end() -> None:
    start, end = MS("2026-03-02T09:00:00"), MS("2026-03-02T09:02:10")
    line = axis_line(start, end, 60)
    assert len(line) == 60
    assert line.startswith("09:00:00 ") and line.endswith(" 09:02:10 UTC")
    assert line.split() == ["09:00:00", "09:01:05", "09:02:10", "UTC"]
    assert abs(line.index("09:01:05") + 4 - 30) <= 1  # the middle time in the middle


def test_short_of_room_the_axis_keeps_the_ends() -> None:
    start, end = MS("2026-03-02T09:00:00"), MS("2026-03-02T09:02:10")
    assert axis_line(start, end, 26).split() == ["09:00:00", "09:02:10", "UTC"]
    assert axis_line(start, end, 18) == "09:00:00  09:02:10"
    assert axis_line(start, end, 8) == "09:00:00"


def test_past_a_day_the_axis_gives_dates() -> None:
    start, end = MS("2026-03-01T23:00:00"), MS("2026-03-04T01:00:00")
    assert axis_line(start, end, 70).split() == ["2026-03-01", "23:00", "2026-03-03", "00:00",
                                                 "2026-03-04", "01:00", "UTC"]
    exactly_a_day = axis_line(start, start + 86_400_000, 70)
    assert exactly_a_day.split()[0] == "23:00:00"  # a day, not more: times only


def test_a_series_by_offset_is_sampled_at_the_offset_of_each_moment() -> None:
    """Three records a second apart, a count changing at offset 1: by time it changes at the
    time of offset 1."""
    times = {0: 0, 1: 1000, 2: 2000}
    offset_at = lambda t: max(o for o, ms in times.items() if ms <= t)  # noqa: E731
    assert resample([(0, 0.0), (1, 3.0)], 0, 2000, samples=5, x_at=offset_at) == [0.0, 0.0, 3.0, 3.0, 3.0]


# -- the demo: one day or less ---------------------------------------------------------------------

def test_the_demo_charts_share_one_time_axis_and_the_feed_gives_times(dashboard_demo_dir: Path) -> None:
    history = History.open_log_dir(dashboard_demo_dir)
    first, last = history.time_span()
    assert last - first < 86_400_000

    async def body(pilot, screen: MainScreen) -> None:
        charts = screen.query_one(Charts)
        axis = charts.axis_text()
        assert axis.startswith(datetime.fromtimestamp(first / 1000, timezone.utc).strftime("%H:%M:%S"))
        assert axis.endswith(datetime.fromtimestamp(last / 1000, timezone.utc).strftime("%H:%M:%S UTC"))
        assert all(chart.start == first and chart.end == last for chart in charts.query("Chart"))
        feed = screen.query_one(EventsFeed)
        assert not feed.with_date
        newest = feed.table.row_cells(feed.table.rows[0])
        assert newest[2] == datetime.fromtimestamp(history.events[-1].timestamp_ms / 1000,
                                                   timezone.utc).strftime("%H:%M:%S")
    run(DashboardApp(history), (200, 50), body)


# -- a history of three days ------------------------------------------------------------------------

@pytest.fixture
def three_days() -> History:
    """Broker 1 registers late on March 1st, is unfenced, fenced on the 3rd, unfenced on the 4th."""
    stamps = ["2026-03-01T23:00:00", "2026-03-01T23:00:01", "2026-03-03T12:00:00", "2026-03-04T01:00:00"]
    records = [broker_registration(1), broker_fencing(1, False), broker_fencing(1, True), broker_fencing(1, False)]
    batches = [[LogEntry(n, 1, MS(stamp), record, False)] for n, (stamp, record) in enumerate(zip(stamps, records))]
    return History(LoadInfo(Path("memory")), MetadataImage(), batches, -1)


def test_past_a_day_events_and_axis_carry_dates(three_days: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        feed = screen.query_one(EventsFeed)
        assert feed.with_date
        cells = [feed.table.row_cells(row) for row in feed.table.rows]
        assert [(c[2], c[3]) for c in cells][:2] == [("2026-03-04 01:00:00", "broker 1 unfenced"),
                                                     ("2026-03-03 12:00:00", "broker 1 fenced")]
        assert shows(pilot.app, r"offset date and time UTC\s+event")
        assert shows(pilot.app, r"\b2 2026-03-03 12:00:00 broker 1 fenced")
        axis = screen.query_one(Charts).axis_text()
        assert axis.startswith("2026-03-01 23:00") and axis.endswith("2026-03-04 01:00 UTC")
    run(DashboardApp(three_days), (200, 50), body)
