"""The dashboard's controller panel over the dashboard demo's real log: the numbers of the frame on
screen, checked against the other panels and the image itself, and following time travel.

Positions come from the history (its events and images), not hard-coded offsets, so the test
holds while the demo grows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Awaitable, Callable

import pytest

from engine.controller.controller_metrics import controller_metrics
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.model import FLAG_LEADERLESS
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.widgets import BrokersPanel, PartitionsPanel
from metashell.dashboard.widgets.controller_panel import ControllerPanel

SIZE = (160, 50)


@pytest.fixture
def history(dashboard_demo_dir: Path) -> History:
    return History.open_log_dir(dashboard_demo_dir)


def run(app: DashboardApp, body: Callable[[object, MainScreen], Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await body(pilot, app.main)
    asyncio.run(main())


def first_offline_offset(history: History) -> int:
    """The first frame with a partition without a leader (the demo fences every replica of one)."""
    frames = (history.frame_at(entry.offset) for entry in history.entries)
    return next(f.offset for f in frames
                if any(p.leader == -1 for t in f.image.topics.by_id.values() for p in t.partitions.values()))


def panel(screen: MainScreen) -> ControllerPanel:
    return screen.query_one(ControllerPanel)


def assert_matches_the_other_panels(screen: MainScreen) -> None:
    """The controller panel's counts agree with the brokers and partitions panels of the same frame."""
    metrics = panel(screen).metrics
    assert metrics is not None
    brokers = screen.query_one(BrokersPanel).table.rows
    rows = screen.query_one(PartitionsPanel).all_rows
    assert metrics.fenced_broker_count == sum(1 for b in brokers if b.state == "fenced")
    assert metrics.active_broker_count == sum(1 for b in brokers if b.state in ("active", "controlled-shutdown"))
    assert metrics.global_partition_count == len(rows)
    assert metrics.global_topic_count == len({r.topic for r in rows})
    assert metrics.offline_partitions_count == sum(1 for r in rows if FLAG_LEADERLESS in r.flags)
    assert metrics.preferred_replica_imbalance_count == sum(1 for r in rows if r.leader != r.replicas[0])
    assert metrics.last_applied_record_offset == screen.frame.offset
    text = panel(screen).text()
    assert f"{metrics.offline_partitions_count} offline" in text
    assert f"{metrics.fenced_broker_count} fenced" in text
    assert f"{metrics.preferred_replica_imbalance_count} imbalanced" in text
    assert f"offset {screen.frame.offset}" in text


@pytest.mark.slow
def test_the_panel_shows_the_metrics_of_the_frame_on_screen(history: History) -> None:
    offline_at = first_offline_offset(history)

    async def body(pilot, screen: MainScreen) -> None:
        assert screen.frame.offset == offline_at
        metrics = panel(screen).metrics
        assert metrics == controller_metrics(screen.frame.image)
        assert metrics.offline_partitions_count >= 1 and metrics.fenced_broker_count >= 1
        leader = screen.frame.image.quorum.leader
        assert metrics.active_controller_id == leader.leader_id and metrics.active_controller_count == 1
        assert f"controller {leader.leader_id} · epoch {leader.epoch}" in panel(screen).text()
        assert_matches_the_other_panels(screen)
        assert "OfflinePartitionsCount = " in str(panel(screen).tooltip)
    run(DashboardApp(history, offset=offline_at), body)


def test_the_panel_follows_time_travel(history: History) -> None:
    offline_at = first_offline_offset(history)
    changes = [e for e in history.events if e.kind == "leader-change"]
    assert len(changes) >= 2, "the demo has a controller failover"

    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")  # before any record: nothing registered, no leader
        metrics = panel(screen).metrics
        assert (metrics.active_controller_id, metrics.active_controller_count) == (-1, 0)
        assert (metrics.global_partition_count, metrics.fenced_broker_count) == (0, 0)
        assert "controller none" in panel(screen).text()
        screen.goto_offset(offline_at - 1)  # the record before the partition went offline
        await pilot.pause()
        assert panel(screen).metrics.offline_partitions_count == 0
        assert_matches_the_other_panels(screen)
        await pilot.press("right")
        assert screen.frame.offset == offline_at and panel(screen).metrics.offline_partitions_count >= 1
        assert_matches_the_other_panels(screen)
        # across the failover: the active controller moves to the new leader
        screen.goto_offset(changes[1].offset - 1)
        await pilot.pause()
        before = panel(screen).metrics.active_controller_id
        screen.goto_offset(changes[1].offset)
        await pilot.pause()
        after = panel(screen).metrics
        assert after.active_controller_id == screen.frame.image.quorum.leader.leader_id != before
        assert after.new_active_controllers_count == 2
        await pilot.press("end")
        assert panel(screen).metrics == controller_metrics(history.last().image)
        assert_matches_the_other_panels(screen)
    run(DashboardApp(history), body)


@pytest.mark.slow
def test_every_batch_agrees_with_a_fresh_count(history: History) -> None:
    """Playing through the log batch by batch, the panel's cached per-topic counts equal a full count."""
    async def body(pilot, screen: MainScreen) -> None:
        await pilot.press("home")
        while True:
            assert panel(screen).metrics == controller_metrics(screen.frame.image)
            offset = screen.frame.offset
            await pilot.press("right_square_bracket")
            if screen.frame.offset == offset:
                break
        assert offset == history.last_offset
    run(DashboardApp(history), body)
