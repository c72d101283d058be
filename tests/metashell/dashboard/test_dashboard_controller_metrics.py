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

from textual.content import Content

from engine.controller.controller_metrics import controller_metrics
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32, i64
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.history import History
from metashell.dashboard.model import FLAG_LEADERLESS
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.widgets import BrokersPanel, PartitionsPanel
from metashell.dashboard.widgets.controller_panel import (ControllerPanel, broker_states, metrics_markup,
                                                          shut_down_cleanly)
from tests.broker_records import broker_fencing, broker_registration

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


# -- broker counts: each broker once, in one state -------------------------------------------------

def replayed(records: list) -> MetadataImage:
    """The image after replaying ``records`` (one a batch, offsets from 0), as the log's reader does."""
    delta = MetadataDelta(MetadataImage())
    for offset, record in enumerate(records):
        delta.replay(record, offset, 1, 1_767_225_600_000 + offset)
    return delta.apply()


def shutting_down(broker_id: int) -> m.BrokerRegistrationChangeRecordV1:
    """What the controller writes when the broker asks to shut down (its heartbeat's wantShutDown)."""
    return m.BrokerRegistrationChangeRecordV1(broker_id=i32(broker_id), broker_epoch=i64(10 + broker_id),
                                              in_controlled_shutdown=i8(1))


def brokers_line(image: MetadataImage) -> str:
    text = Content.from_markup(metrics_markup(controller_metrics(image), shut_down_cleanly(image))).plain
    return next(line for line in text.splitlines() if line.startswith("brokers"))


FIVE_UP = [r for b in range(1, 6) for r in (broker_registration(b), broker_fencing(b, False))]


@pytest.mark.parametrize("story,line", [
    ([], "5 active · 0 fenced · 0 in shutdown"),
    ([shutting_down(4)], "4 active · 0 fenced · 1 in shutdown"),
    # kraftd cluster stop broker-4: its controlled shutdown completes, then it is fenced
    ([shutting_down(4), broker_fencing(4, True)], "4 active · 1 fenced (1 shut down) · 0 in shutdown"),
    # down: four shut down cleanly, the last one's session expired (no controller left to move leaders to)
    ([*(r for b in range(1, 5) for r in (shutting_down(b), broker_fencing(b, True))), broker_fencing(5, True)],
     "0 active · 5 fenced (4 shut down) · 0 in shutdown"),
    # broker-4 started again: a new registration ends its controlled shutdown
    ([shutting_down(4), broker_fencing(4, True), broker_registration(4), broker_fencing(4, False)],
     "5 active · 0 fenced · 0 in shutdown"),
])
def test_each_broker_is_counted_once_in_one_state(story: list, line: str) -> None:
    image = replayed(FIVE_UP + story)
    assert brokers_line(image) == f"brokers    {line}"
    active, in_shutdown, fenced = broker_states(controller_metrics(image))
    assert active + in_shutdown + fenced == len(image.cluster.brokers) == 5
    # Kafka's own counts, which overlap, stay as Kafka has them (the tooltip names them)
    metrics = controller_metrics(image)
    assert metrics.active_broker_count == sum(1 for b in image.cluster.brokers.values() if not b.fenced)
    assert metrics.controlled_shutdown_broker_count == \
        sum(1 for b in image.cluster.brokers.values() if b.in_controlled_shutdown)


def test_the_demo_broker_that_shut_down_cleanly_is_fenced_once(history: History) -> None:
    """Broker 1 of the bad day shuts down cleanly, then is fenced: one fenced broker, none in shutdown."""
    shutdown = next(e for e in history.events if e.kind == "controlled-shutdown")
    fence = next(e for e in history.events if e.kind == "fence" and e.subject == shutdown.subject
                 and e.offset > shutdown.offset)

    async def body(pilot, screen: MainScreen) -> None:
        brokers = screen.frame.image.cluster.brokers
        line = next(s for s in panel(screen).text().splitlines() if s.startswith("brokers"))
        fenced = sum(1 for b in brokers.values() if b.fenced)
        assert f"{len(brokers) - fenced} active · {fenced} fenced (1 shut down) · 0 in shutdown" in line
        states = [r.state for r in screen.query_one(BrokersPanel).table.rows if r.state != "unregistered"]
        assert line.endswith(f"{states.count('active')} active · {states.count('fenced')} fenced (1 shut down) · "
                             f"{states.count('controlled-shutdown')} in shutdown")
    run(DashboardApp(history, offset=fence.offset), body)
