"""The dashboard app driven by keys (Textual's pilot) over metashell.demo.shell_demo's generated history.

Positions are found through the history's events and the travel keys, not hard-coded
offsets, so the assertions hold while the demo grows (more brokers, ELR, leader changes).
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable

import pytest

from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.model import PartitionRow
from metashell.dashboard.screens import HelpScreen, MainScreen
from metashell.dashboard.screens.main_screen import BATCH_SECONDS, SPEEDS, TICK_SECONDS
from metashell.dashboard.ticker import IntervalTicker, ManualTicker
from metashell.dashboard.widgets import (BrokersPanel, EventsFeed, HeaderBar, NodeBrowser, PartitionsPanel,
                                         QuorumPanel)

SIZE = (160, 50)


@pytest.fixture
def history(demo_log_dir: Path) -> History:
    return History.open_log_dir(demo_log_dir)


def run(app: DashboardApp, body: Callable[..., Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await body(pilot, app.main)
    asyncio.run(main())


def broker_state(screen: MainScreen, broker_id: int) -> str | None:
    rows = screen.query_one(BrokersPanel).table.rows
    return next((r.state for r in rows if r.broker_id == broker_id), None)


def partition(screen: MainScreen, topic: str, pid: int) -> PartitionRow:
    return next(r for r in screen.query_one(PartitionsPanel).all_rows if (r.topic, r.partition) == (topic, pid))


async def press_until(pilot, key: str, done: Callable[[], bool], limit: int = 60) -> int:
    """Press ``key`` until ``done()``; how many presses it took (fails past ``limit``)."""
    for count in range(1, limit + 1):
        await pilot.press(key)
        if done():
            return count
    raise AssertionError(f"{key!r} pressed {limit} times and still not there")


def test_opens_at_the_last_record(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        assert screen.frame.offset == history.last_offset
        header = screen.query_one(HeaderBar)
        assert f"offset {history.last_offset} / {history.last_offset}" in header.text()
        assert "metadata.version" in header.text()
        assert len(screen.query_one(EventsFeed).texts()) == len(history.events)
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_stepping_keys_move_through_records_and_batches(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")
        assert screen.frame.offset == history.start_offset
        await pilot.press("right")
        assert screen.frame.offset == history.first_offset
        await pilot.press("right", "right")
        assert screen.frame.offset == history.first_offset + 2
        await pilot.press("left")
        assert screen.frame.offset == history.first_offset + 1
        await pilot.press("right_square_bracket")  # to the end of the next batch
        after_batch = screen.frame.offset
        assert after_batch in {e.offset for e in history.entries} and after_batch > history.first_offset + 1
        await pilot.press("shift+left")
        assert screen.frame.offset < after_batch
        await pilot.press("end")
        assert screen.frame.offset == history.last_offset
        assert "offset" in screen.query_one(HeaderBar).text()
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_a_broker_turns_fenced(history: History) -> None:
    fence = next(e for e in history.events if e.kind == "fence" and e.subject == "broker 2")

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")
        assert broker_state(screen, 2) is None  # nothing registered yet
        # brokers register fenced: first to broker 2 unfenced, then to it fenced again
        await press_until(pilot, "f", lambda: broker_state(screen, 2) == "active")
        await press_until(pilot, "f", lambda: broker_state(screen, 2) == "fenced")
        assert screen.frame.offset == fence.offset
        # the feed shows it newest first and marks it as the current event
        feed = screen.query_one(EventsFeed)
        current = [event.text for event, is_current in feed.table.rows if is_current]
        assert "broker 2 fenced" in current
        assert feed.texts()[0] == history.events_between(0, fence.offset)[-1].text
        await pilot.press("left")
        assert broker_state(screen, 2) != "fenced"
        await press_until(pilot, "f", lambda: broker_state(screen, 2) == "active")
        assert [r.state for r in screen.query_one(BrokersPanel).table.rows].count("fenced") == 0
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_a_partition_isr_shrinks_then_expands(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")
        await press_until(pilot, "i", lambda: any(r.topic == "orders" for r in
                                                   screen.query_one(PartitionsPanel).all_rows)
                          and partition(screen, "orders", 0).isr == (1, 3))
        row = partition(screen, "orders", 0)
        assert row.replicas == (1, 2, 3) and 2 not in row.isr
        shown = screen.query_one(PartitionsPanel).table.rows
        assert row in shown  # the table draws the same row the panel holds
        await press_until(pilot, "i", lambda: len(partition(screen, "orders", 0).isr) == 3)
    run(DashboardApp(history), body)


def test_elr_fills_on_an_elr_change(bad_day: History) -> None:
    elr = next(e for e in bad_day.events if e.kind == "elr-change")
    topic, _, pid = elr.subject.rpartition("-")

    async def body(pilot, screen: MainScreen) -> None:
        screen.goto_offset(elr.offset)
        await pilot.pause()
        row = partition(screen, topic, int(pid))
        assert row.elr or row.last_known_elr
    run(DashboardApp(bad_day), body)


@pytest.mark.slow
def test_the_quorum_leader_changes(history: History) -> None:
    changes = [e for e in history.events if e.kind == "leader-change"]
    assert len(changes) >= 2

    async def body(pilot, screen: MainScreen) -> None:
        quorum = screen.query_one(QuorumPanel)
        screen.goto_offset(changes[0].offset)
        await pilot.pause()
        first_leader = screen.query_one(HeaderBar).info.leader
        assert first_leader.startswith("1 ")
        # g opens a prompt; type the offset of the next leader change
        await pilot.press("g")
        await pilot.press(*str(changes[1].offset), "enter")
        await pilot.pause()
        assert screen.frame.offset == changes[1].offset
        assert screen.query_one(HeaderBar).info.leader.startswith("3 ")
        leaders = [r.node_id for r in quorum.table.rows if r.role == "leader"]
        assert leaders == [3]
        assert len(quorum.history) >= 2
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_theme_toggles_at_run_time(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        assert pilot.app.theme == "metashell-dark"
        await pilot.press("t")
        assert pilot.app.theme == "metashell-light"
        await pilot.press("t")
        assert pilot.app.theme == "metashell-dark"
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_filter_narrows_the_table(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        panel = screen.query_one(PartitionsPanel)
        total = len(panel.table.rows)
        orders = sum(1 for r in panel.all_rows if r.topic == "orders")
        assert total >= orders > 0
        await pilot.press("slash")
        assert panel.filter_bar.display
        await pilot.press(*"zz*")
        assert len(panel.table.rows) == 0
        await pilot.press("backspace", "backspace", "backspace", *"ord*")
        assert len(panel.table.rows) == orders
        assert all(r.topic.startswith("ord") for r in panel.table.rows)
        # travel keys stand down while typing: left moves the text cursor, not the history
        offset = screen.frame.offset
        await pilot.press("left", "home")
        assert screen.frame.offset == offset
        await pilot.press("enter")
        assert not panel.filter_bar.display and panel.table.has_focus
        panel.set_filter("", "leaderless")
        await pilot.pause()
        assert all("leaderless" in r.flags for r in panel.table.rows)
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_sorting_by_key_and_by_clicking_the_header(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        panel = screen.query_one(PartitionsPanel)
        await pilot.press("s", "s", "s")  # topic, partition, leader
        assert panel.sort_key == "leader"
        leaders = [r.leader for r in panel.table.rows]
        assert leaders == sorted(leaders)
        await pilot.press("S")
        assert [r.leader for r in panel.table.rows] == sorted(leaders, reverse=True)
        # click the "part" header (x: where the header line draws it; y: the header line)
        await pilot.click(panel.table, offset=(panel.table.render_line(0).text.index("part"), 0))
        assert panel.sort_key == "partition"
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_help_lists_the_keys_from_the_bindings(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("question_mark")
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = help_screen.keys()
        for key in ("q", "t", "?", "/", "space", "g", "n", "p", "f", "i", "enter", "tab"):
            assert key in keys, key
        await pilot.press("escape")
        assert pilot.app.screen is screen
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_enter_drills_into_the_node_browser(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        browser = screen.query_one(NodeBrowser)
        await pilot.press("down", "enter")
        assert browser.selected == "/topics/orders/1"
        assert browser.tree.has_focus
        assert '"partitionId": 1' in browser.detail_text(browser.selected)
        # shift+tab from the tree (the last panel) to the one before it, the charts; 2: the brokers
        await pilot.press("shift+tab")
        assert screen.focused is screen.query_one("#charts") and screen.active_panel == "charts"
        await pilot.press("2")
        assert screen.focused is screen.query_one(BrokersPanel).table
        await pilot.press("enter")
        assert browser.selected == "/brokers/1"
        assert "active" in browser.detail_text("/brokers/1/state")
    run(DashboardApp(history), body)


def play(history: History, body: Callable[..., Awaitable[None]]) -> None:
    """Run ``body(pilot, screen, ticker)`` on an app whose play mode ticks only when told to."""
    ticker = ManualTicker()

    async def with_ticker(pilot, screen: MainScreen) -> None:
        await body(pilot, screen, ticker)
    run(DashboardApp(history, ticker=ticker), with_ticker)


async def tick(pilot, ticker: ManualTicker) -> None:
    ticker.tick()
    await pilot.pause()


@pytest.mark.slow
def test_play_mode_shows_one_batch_per_tick_and_stops_at_the_end(history: History) -> None:
    batch_ends = [frame.offset for frame in history.frames()][1:]
    assert len(batch_ends) >= 3

    async def body(pilot, screen: MainScreen, ticker: ManualTicker) -> None:
        header = screen.query_one(HeaderBar)
        await pilot.press("home")
        assert not ticker.running and "playing" not in header.text()
        await pilot.press("space")
        assert screen.playing and ticker.running and ticker.interval_s == BATCH_SECONDS
        assert "playing 1x" in header.text()
        for end in batch_ends:
            assert ticker.running, f"play stopped before offset {end}"
            shown = screen.frames_shown
            await tick(pilot, ticker)
            assert screen.frame.offset == end and screen.frames_shown == shown + 1  # through show()
        # the tick that showed the last batch ended play: the header says so, no more ticks come
        assert not screen.playing and not ticker.running
        assert "playing" not in header.text()
        with pytest.raises(RuntimeError):
            ticker.tick()
    play(history, body)


def test_space_pauses_and_resumes_where_it_was(history: History) -> None:
    batch_ends = [frame.offset for frame in history.frames()][1:]

    async def body(pilot, screen: MainScreen, ticker: ManualTicker) -> None:
        await pilot.press("home", "space")
        await tick(pilot, ticker)
        await tick(pilot, ticker)
        assert screen.frame.offset == batch_ends[1]
        await pilot.press("space")
        assert not screen.playing and not ticker.running
        assert "playing" not in screen.query_one(HeaderBar).text()
        await pilot.press("space")  # resumes from the frame shown, not from the start
        assert screen.playing and ticker.running and screen.frame.offset == batch_ends[1]
        await tick(pilot, ticker)
        assert screen.frame.offset == batch_ends[2]
    play(history, body)


@pytest.mark.slow
def test_space_at_the_end_plays_from_the_start(history: History) -> None:
    async def body(pilot, screen: MainScreen, ticker: ManualTicker) -> None:
        assert screen.frame.offset == history.last_offset
        await pilot.press("space")
        assert screen.playing and screen.frame.offset == history.start_offset
        await tick(pilot, ticker)
        assert screen.frame.offset == history.next_batch(history.first()).offset
    play(history, body)


@pytest.mark.slow
def test_play_speed_keeps_its_pace_at_every_speed(history: History) -> None:
    """speed x plays speed / BATCH_SECONDS batches a second: fast speeds take several batches a
    tick, and the interval between ticks fits them (never shorter than TICK_SECONDS)."""
    batch_ends = [frame.offset for frame in history.frames()]

    async def body(pilot, screen: MainScreen, ticker: ManualTicker) -> None:
        await pilot.press("home", "space", *["minus"] * 3)
        assert screen.speed == SPEEDS[0] and ticker.interval_s == BATCH_SECONDS / SPEEDS[0]
        for speed in SPEEDS:
            while screen.speed < speed:
                await pilot.press("plus")
            assert screen.speed == speed and screen.playing and ticker.running
            assert f"playing {speed:g}x" in screen.query_one(HeaderBar).text()
            await pilot.press("home")
            await tick(pilot, ticker)
            batches = batch_ends.index(screen.frame.offset)
            assert batches >= 1 and ticker.interval_s >= TICK_SECONDS
            assert batches / ticker.interval_s == pytest.approx(speed / BATCH_SECONDS)
        await pilot.press("plus")  # 64x is the top
        assert screen.speed == SPEEDS[-1]
    play(history, body)


def test_the_default_ticker_runs_on_textual_timers(history: History) -> None:
    async def body(pilot, screen: MainScreen) -> None:
        calls: list[int] = []
        ticking = IntervalTicker(screen).start(0.01, lambda: calls.append(1))
        deadline = time.monotonic() + 60  # only a guard against a hang, not a claim about speed
        while len(calls) < 2:
            assert time.monotonic() < deadline, "the timer never ticked twice"
            await pilot.pause(0.01)
        ticking.stop()
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_jump_to_a_time(history: History) -> None:
    fence = next(e for e in history.events if e.kind == "fence")
    moment = datetime.fromtimestamp(fence.timestamp_ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home", "T")
        await pilot.press(*moment, "enter")
        await pilot.pause()
        assert screen.frame.timestamp_ms == fence.timestamp_ms
        assert screen.frame.offset >= fence.offset
        await pilot.press("ctrl+t", *"not a time", "enter")  # a bad answer keeps the prompt open
        assert pilot.app.screen is not screen
        await pilot.press("escape")
        assert pilot.app.screen is screen
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_show_redraws_only_rows_that_changed(history: History) -> None:
    rows = [PartitionRow(f"t{i // 100:04d}", i % 100, 1, 0, (1, 2, 3), (1, 2, 3), (), ()) for i in range(100_000)]

    async def body(pilot, screen: MainScreen) -> None:
        panel = screen.query_one(PartitionsPanel)
        table = panel.table
        drawn: list[PartitionRow] = []
        cells = table._cells
        table._cells = lambda row: drawn.append(row) or cells(row)
        panel.show(rows)
        await pilot.pause()
        assert len(table.rows) == 100_000
        visible = table.size.height
        assert 0 < len(drawn) <= 2 * visible  # only the lines on screen were ever rendered
        # scroll to the end: again only a screenful is rendered
        drawn.clear()
        table.move_cursor(99_999)
        await pilot.pause()
        assert table.scroll_offset.y > 99_000 and len(drawn) <= 2 * visible
        # a new frame with one partition changed redraws that line alone
        changed = list(rows)
        changed[99_990] = PartitionRow("t0999", 90, 2, 1, (1, 2, 3), (2, 3), (), ())
        assert table.set_rows(changed) == 1
        assert table.set_rows(list(changed)) == 0
    run(DashboardApp(history), body)


# -- the richer demo of `metashell demo` (metashell.demo.dashboard_demo) ------------------------

@pytest.fixture
def bad_day(dashboard_demo_dir: Path) -> History:
    return History.open_log_dir(dashboard_demo_dir)


@pytest.mark.slow
def test_elr_episode_flags_and_filter(bad_day: History) -> None:
    """payments-0 leaderless with an empty ISR: its ELR and last-known ELR shown, flagged, filterable."""
    moment = next(e for e in bad_day.events if e.kind == "elr-change" and "last-known ELR [] →" in e.text)
    topic, _, pid = moment.subject.rpartition("-")

    async def body(pilot, screen: MainScreen) -> None:
        screen.goto_offset(moment.offset)
        await pilot.pause()
        row = partition(screen, topic, int(pid))
        assert row.leader < 0 and not row.isr and row.elr and row.last_known_elr
        assert {"leaderless", "isr-empty-elr"} <= set(row.flags)
        panel = screen.query_one(PartitionsPanel)
        cells = panel.table.row_cells(row)
        assert cells[2] == "none" and "elr-only" in cells[-1]
        await pilot.press("slash", *"flag:isr-empty-elr", "enter")
        assert row in panel.table.rows and all("isr-empty-elr" in r.flags for r in panel.table.rows)
        assert len(panel.table.rows) < len(panel.all_rows)
    run(DashboardApp(bad_day), body)


def test_broker_states_shutdown_and_unregistered(bad_day: History) -> None:
    shutdown = next(e for e in bad_day.events if e.kind == "controlled-shutdown")
    gone = next(e for e in bad_day.events if e.kind == "broker-unregister")
    shut_id, gone_id = int(shutdown.subject.split()[1]), int(gone.subject.split()[1])

    async def body(pilot, screen: MainScreen) -> None:
        brokers = screen.query_one(BrokersPanel).table
        screen.goto_offset(shutdown.offset)
        await pilot.pause()
        assert broker_state(screen, shut_id) == "controlled-shutdown"
        row = next(r for r in brokers.rows if r.broker_id == shut_id)
        assert brokers.row_cells(row)[2] == "◐ shutdown"  # readable without colour
        await pilot.press("end")
        assert broker_state(screen, gone_id) == "unregistered"
        row = next(r for r in brokers.rows if r.broker_id == gone_id)
        assert brokers.row_cells(row)[2] == "○ unregistered"
        # kraft.version 1: the voters come from VotersRecord, with directory ids and endpoints
        voters = screen.query_one(QuorumPanel).table.rows
        assert voters and all(v.directory_id != "-" and v.endpoint != "-" for v in voters)
    run(DashboardApp(bad_day), body)


@pytest.mark.slow
def test_bench_dash_times_steps_of_the_real_app() -> None:
    """`metashell bench dash`, small: the generated history opens and every step is timed."""
    from metashell.bench.dash import bench_dash

    lines: list[str] = []
    times = bench_dash(500, 3, out=lines.append)
    assert len(times) == 3 and all(t > 0 for t in times)
    assert lines[0].startswith("generated 500 partitions") and lines[-1].startswith("redraw of one step")
