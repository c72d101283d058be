"""The dashboard over a live source: frames stream in, the feed and the charts grow, time travel
from now, ``end`` follows again, the pause indicator, the quorum as its leader tells it, the
memory window, the feed's status in the header.

The feed is a real object with the live attachment's surface (drain/status/quorum/close, an
``on_update`` called when there is something to drain) that the test pushes: the committed
batches of a real log directory (metashell.demo.shell_demo's, read with the loader's segment reader), the
status and DescribeQuorum answers (kio's own ReplicaState). The app is Textual's, driven by its
pilot; the source is polled on a ManualTicker the test ticks, or woken from another thread.
Last, the whole path on sockets: kraftd controllers and a broker on a loop thread of their own, the real Attachment
(``open_live``) and the app, following a topic creation.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Awaitable, Callable

import pytest

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir, replay_start, segment_batches
from engine.records.kio_codec import protocol_module
from engine.storage.log_reader import LogEntry
from engine.admin.quorum_client import QuorumInfo
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.live_history import LiveHistory
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.ticker import ManualTicker
from metashell.dashboard.widgets import EventsFeed, HeaderBar, QuorumPanel
from metashell.dashboard.widgets.charts import Chart
from metashell.dashboard.live_history import open_live
from metashell.dashboard.widgets import PartitionsPanel
from metashell.live.feed import AttachStatus, FeedUpdate
from metashell.source import LiveSource

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

SIZE = (160, 50)
DQ = protocol_module("describe_quorum", 2, "response")
NOW_MS = 1_800_000_000_000


class PushedFeed:
    """The attachment's surface, pushed by the test (thread-safe, as the attachment's is)."""

    def __init__(self, bootstrap: str = "127.0.0.1:9093") -> None:
        self._lock = threading.Lock()
        self._status = AttachStatus(bootstrap, connected=True, leader_id=1, leader_epoch=1,
                                    note="following leader 1 (epoch 1)")
        self._reset: tuple[MetadataImage, int] | None = None
        self._batches: list[list[LogEntry]] = []
        self.quorum: QuorumInfo | None = None
        self.on_update: Callable[[], None] | None = None
        self.closed = False

    @property
    def status(self) -> AttachStatus:
        return self._status

    def push(self, batches: list[list[LogEntry]] = (), *, reset: tuple[MetadataImage, int] | None = None,
             **status: object) -> None:
        with self._lock:
            if reset is not None:
                self._reset, self._batches = reset, []
            self._batches += batches
            applied = batches[-1][-1].offset if batches else reset[1] if reset is not None else None
            if applied is not None:
                status.setdefault("applied_offset", applied)
                status.setdefault("high_watermark", applied + 1)
            self._status = AttachStatus(**{**self._status.__dict__, **status})
        if self.on_update is not None:
            self.on_update()

    def drain(self) -> FeedUpdate:
        with self._lock:
            update = FeedUpdate(self._status, self._reset, self._batches)
            self._reset, self._batches = None, []
        return update

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def batches(demo_log_dir: Path) -> list[list[LogEntry]]:
    start = replay_start(demo_log_dir, earliest=True)
    return list(segment_batches(start.listing, start.begin, []))


def attached(feed: PushedFeed, first: list[list[LogEntry]], *, window_records: int = 10_000) -> LiveHistory:
    """A source as open_live makes one: the attachment's first drain (the empty image, as the log
    starts at 0, and what was committed) taken before the app runs."""
    feed.push(first, reset=(MetadataImage(), -1))
    live = LiveSource(feed, window_records=window_records, initial=feed.drain())
    source = LiveHistory(live, clock_ms=lambda: NOW_MS)
    feed.on_update = live.notify
    return source


def run(source: LiveHistory, body: Callable[..., Awaitable[None]]) -> None:
    poll = ManualTicker()

    async def main() -> None:
        app = DashboardApp(source, poll_ticker=poll)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert poll.running and poll.interval_s == 0.25

            async def tick() -> None:
                poll.tick()
                await pilot.pause()
            await body(pilot, app.main, tick)
    asyncio.run(main())


def header(screen: MainScreen) -> str:
    return screen.query_one(HeaderBar).text()


def test_frames_stream_in_woken_or_polled_and_the_feed_and_charts_grow(batches, demo_log_dir: Path) -> None:
    feed = PushedFeed()
    source = attached(feed, batches[:3])

    async def body(pilot, screen: MainScreen, tick) -> None:
        first = batches[2][-1].offset
        assert screen.frame.offset == first and screen.following
        assert f"● live @{first}" in header(screen) and "following leader 1" in header(screen)
        events = screen.query_one(EventsFeed)
        before = len(events.texts())
        fenced = screen.query_one("#chart-fenced-brokers", Chart)
        points = fenced.points
        assert points is source.series()["fenced_brokers"]  # the source's list, not a copy
        chart_end = fenced.end
        # from the feed's thread: on_update wakes the screen (a posted message), no tick needed
        pusher = threading.Thread(target=feed.push, args=([batches[3]],))
        pusher.start()
        pusher.join()
        deadline = time.monotonic() + 30  # a safety net only: the wake-up is a posted message
        while screen.frame.offset != batches[3][-1].offset and time.monotonic() < deadline:
            await pilot.pause()
        assert screen.frame.offset == batches[3][-1].offset
        for n in range(4, len(batches)):
            feed.push([batches[n]])
            await tick()
            assert screen.frame.offset == batches[n][-1].offset  # following: each new frame shown
        last = batches[-1][-1].offset
        assert screen.frame.image == load_log_dir(demo_log_dir, offset=last)[0]
        assert len(events.texts()) > before and events.texts() == [e.text for e in reversed(source.events)]
        assert "quorum leader 3 (epoch 2)" in events.texts()  # a leader change, as it came
        # the same list, grown; the span is the records' times, up to the last one's
        assert fenced.points is points and fenced.end == source.time_span()[1] > chart_end
        assert len(points) > 1
        assert f"offset {last} / {last}" in header(screen)
    run(source, body)


def test_the_header_says_playing_or_paused_never_both(batches) -> None:
    """Away from the newest frame the header says where the view is: paused, or playing while
    play mode moves it; both at once (``⏸ paused @N ... ▶ playing 1x``) contradicts itself."""
    feed = PushedFeed()
    source = attached(feed, batches[:6])
    play = ManualTicker()

    async def main() -> None:
        async with DashboardApp(source, poll_ticker=ManualTicker(), ticker=play).run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = pilot.app.main
            await pilot.press("left")
            assert "⏸ paused @" in header(screen) and "playing" not in header(screen)
            await pilot.press("home", "space")  # play from the start of what was fetched
            assert screen.playing and not screen.following
            text = header(screen)
            assert "▶ playing 1x before the first record, +0 new" in text and "paused" not in text
            play.tick()
            await pilot.pause()
            text = header(screen)
            assert f"▶ playing 1x @{screen.frame.offset}, +0 new" in text and "paused" not in text
            assert text.count("playing") == 1
            await pilot.press("space")  # paused by hand: the same place, the word changes
            text = header(screen)
            assert f"⏸ paused @{screen.frame.offset}, +0 new" in text and "playing" not in text
    asyncio.run(main())


def test_looking_back_pauses_end_follows_again_and_the_feed_status_shows(batches) -> None:
    feed = PushedFeed()
    source = attached(feed, batches[:4])

    async def body(pilot, screen: MainScreen, tick) -> None:
        await pilot.press("left", "left")
        looking = screen.frame.offset
        assert not screen.following and looking == batches[3][-1].offset - 2
        assert f"⏸ paused @{looking}, +0 new" in header(screen)
        feed.push(batches[4:6])
        await tick()
        added = sum(map(len, batches[4:6]))
        assert screen.frame.offset == looking  # stays where the user looks
        assert f"⏸ paused @{looking}, +{added} new" in header(screen)
        assert f"offset {looking} / {batches[5][-1].offset}" in header(screen)
        await pilot.press("home")  # time travel back to the start of what was fetched
        assert screen.frame.offset == -1 and "⏸ paused before the first record" in header(screen)
        assert "@-1" not in header(screen) and "offset -1" not in header(screen)
        await pilot.press("end")
        assert screen.following and screen.frame.offset == batches[5][-1].offset
        assert "paused" not in header(screen) and "● live" in header(screen)
        feed.push(batches[6:])
        await tick()
        assert screen.frame.offset == batches[-1][-1].offset  # following again
        # the feed's status: disconnected (retrying), back, then a fatal error, each in one line
        last = batches[-1][-1].offset
        feed.push(connected=False, leader_id=-1, note=f"disconnected, retrying (at offset {last})")
        await tick()
        assert f"◌ disconnected, retrying (at offset {last})" in header(screen)
        await pilot.press("left")
        assert f"⏸ paused @{last - 1}, +0 new · disconnected, retrying" in header(screen)
        await pilot.press("end")
        feed.push(connected=True, leader_id=3, note="following leader 3 (epoch 2)")
        await tick()
        assert "● live" in header(screen) and "disconnected" not in header(screen)
        feed.push(error="cluster id mismatch: the quorum is abc, --command-config says xyz")
        await tick()
        assert "✖ cluster id mismatch: the quorum is abc" in header(screen)
    run(source, body)


def _replica(node_id: int, end: int, fetch_ms: int = -1, caught_up_ms: int = -1):
    return DQ.ReplicaState(replica_id=node_id, replica_directory_id=None, log_end_offset=end,
                           last_fetch_timestamp=fetch_ms, last_caught_up_timestamp=caught_up_ms)


def test_the_quorum_panel_shows_the_leader_voters_and_observers_now(batches) -> None:
    feed = PushedFeed()
    source = attached(feed, batches)
    end = batches[-1][-1].offset + 1
    feed.quorum = QuorumInfo(3, 2, end, voters=(_replica(1, end - 10, NOW_MS - 1500, NOW_MS - 4000),
                                                 _replica(2, end, NOW_MS - 200, NOW_MS - 200),
                                                 _replica(3, end, NOW_MS, NOW_MS)),
                             observers=(_replica(7, end - 3, NOW_MS - 500, NOW_MS - 900),),
                             nodes={3: (("CONTROLLER", "127.0.0.1", 9093),)})

    async def body(pilot, screen: MainScreen, tick) -> None:
        feed.push(leader_id=3, leader_epoch=2, note="following leader 3 (epoch 2)")
        await tick()
        panel = screen.query_one(QuorumPanel)
        rows = {r.node_id: r for r in panel.table.rows}
        assert [r.node_id for r in panel.table.rows] == [1, 2, 3, 7]
        assert rows[3].role == "leader" and rows[3].endpoint == "CONTROLLER://127.0.0.1:9093"
        assert (rows[1].role, rows[1].log_end_offset, rows[1].lag) == ("voter", str(end - 10), "10")
        assert (rows[1].last_fetch, rows[1].caught_up_age) == ("1.5 s ago", "4.0 s ago")
        assert (rows[7].role, rows[7].lag, rows[7].last_fetch) == ("observer", "3", "0.5 s ago")
        assert panel.border_subtitle == f"live · leader 3 · epoch 2 · high watermark {end}"
        assert "quorum leader 3 (epoch 2)" in header(screen)
        # a new leader (controller-only node 4): the panel and the header have it at the next poll
        feed.quorum = QuorumInfo(4, 3, end, voters=(_replica(3, end - 1), _replica(4, end)), observers=())
        feed.push(leader_id=4, leader_epoch=3, note="following leader 4 (epoch 3)")
        await tick()
        assert [(r.node_id, r.role, r.lag) for r in panel.table.rows] == [(3, "voter", "1"), (4, "leader", "0")]
        assert "quorum leader 4 (epoch 3)" in header(screen)
        await pilot.press("left")  # the past: the frame's own voters, no live columns
        assert all(r.lag == "-" for r in panel.table.rows) and not panel.border_subtitle
    run(source, body)


def test_the_window_bounds_memory_and_a_reset_starts_anew(batches, demo_log_dir: Path) -> None:
    feed = PushedFeed()
    total = sum(map(len, batches))
    source = attached(feed, batches[:1], window_records=total // 3)

    async def body(pilot, screen: MainScreen, tick) -> None:
        firsts = []
        for batch in batches[1:]:
            feed.push([batch])
            await tick()
            assert len(source.entries) <= total // 3
            firsts.append(source.first_offset)
        assert firsts == sorted(firsts) and firsts[-1] > firsts[0]
        assert screen.frame.offset == batches[-1][-1].offset
        assert all(e.offset > source.start_offset for e in source.events)
        assert screen.query_one(EventsFeed).texts() == [e.text for e in reversed(source.events)]
        fenced = source.series()["fenced_brokers"]
        assert fenced[0][0] >= source.start_offset and screen.query_one("#chart-fenced-brokers", Chart).start == \
            source.entries[0].timestamp_ms  # the window's first record's time
        await pilot.press("home")  # back as far as the window reaches
        assert screen.frame.offset == source.start_offset
        assert screen.frame.image == load_log_dir(demo_log_dir, offset=source.start_offset)[0]
        # the feed fell behind the leader's log start and fetched a snapshot: the history starts anew
        await pilot.press("end")
        at = batches[6][-1].offset  # what follows fits in the window
        feed.push(batches[7:], reset=(load_log_dir(demo_log_dir, offset=at)[0], at))
        await tick()
        assert (source.start_offset, source.first_offset) == (at, batches[7][0].offset)
        assert screen.frame.offset == batches[-1][-1].offset
        assert screen.frame.image == load_log_dir(demo_log_dir)[0]
        assert all(e.offset > at for e in source.events)
        assert screen.query_one(EventsFeed).texts() == [e.text for e in reversed(source.events)]
    run(source, body)


class LoopThread:
    """An event loop on its own thread: the quorum and its broker there, as in processes of their
    own, so the app's rendering on the test's loop never starves their Raft timers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="quorum loop", daemon=True)
        self.thread.start()

    async def run(self, coro: Awaitable) -> object:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()

    def drive(self, main: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]],
              timeout_s: float = 120) -> None:
        """Run the test's ``main`` on a loop of its own, then ``stop`` what runs here and close,
        whatever happened (a safety net, never a performance claim)."""
        try:
            asyncio.run(asyncio.wait_for(main(), timeout_s))
        finally:
            try:
                asyncio.run_coroutine_threadsafe(stop(), self.loop).result(60)
            finally:
                self.close()


def test_attached_to_kraftd_controllers_the_dashboard_follows_what_they_commit(tmp_path: Path) -> None:
    from engine.net.kafka_client import KafkaClient
    from engine.server.broker_node import BrokerNode
    from engine.server.broker_settings import load_broker_settings
    from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until
    from tests.engine.server.test_broker_node import BROKER_ID, FAST, create_topic_request, formatted_broker
    from tests.metashell.live.test_live_attach import DEADLINE_S, _active, _bootstrap

    quorum = LoopThread()
    nodes: list = []
    broker = None

    async def start() -> None:
        nonlocal broker
        _, started = await start_quorum(tmp_path / "quorum", 3, **FAST)
        nodes.extend(started)
        await wait_until(lambda: _active(nodes), DEADLINE_S, "an active controller")
        # a broker (topics need one): it registers with whichever controller leads and forwards
        # admin requests to it, so a change of leader under load does not stall the test
        broker = BrokerNode(load_broker_settings(formatted_broker(tmp_path / "broker", _bootstrap(nodes))))
        await broker.start()

    async def stop() -> None:
        if broker is not None:
            await broker.stop()
        for node in nodes:
            await node.stop()

    def unfenced() -> bool:
        active = _active(nodes)
        registration = active.image.cluster.brokers.get(BROKER_ID) if active is not None else None
        return registration is not None and not registration.fenced

    async def main() -> None:
        await quorum.run(start())
        client = KafkaClient(client_id="test-admin", request_timeout_ms=30_000)
        source = None
        try:
            # attach and catch up off the loop the app runs on (as the CLI does before the app)
            source = await asyncio.to_thread(open_live, _bootstrap(nodes), command_config={"cluster.id": CLUSTER_ID},
                                             window_records=10_000)
            app = DashboardApp(source)  # polled on Textual's timer and woken by the attachment
            async with app.run_test(size=SIZE) as pilot:
                screen = app.main

                async def until(done: Callable[[], bool], what: str) -> None:
                    deadline = time.monotonic() + DEADLINE_S  # a safety net only
                    while not done():
                        assert time.monotonic() < deadline, what
                        await pilot.pause(0.02)

                def topics() -> set[str]:
                    return {r.topic for r in screen.query_one(PartitionsPanel).all_rows}

                async def create(name: str, partitions: int) -> None:
                    response = await client.send(broker.servers[0].address, create_topic_request(name, partitions, 1))
                    assert [t.error_code for t in response.topics] == [0], f"creating {name}"

                await until(unfenced, "the broker unfenced")
                await create("orders", 3)
                await until(lambda: "orders" in topics(), "orders on screen")
                panel = screen.query_one(QuorumPanel)

                shown: list = []

                def shows_the_leader() -> bool:  # the leader it shows is the one the checks below use
                    active = _active(nodes)
                    shown[:] = [active]
                    return active is not None and \
                        (panel.border_subtitle or "").startswith(f"live · leader {active.settings.node_id}")
                await until(shows_the_leader, "the live quorum")
                (leader,) = shown
                rows = {r.node_id: r for r in panel.table.rows}
                # three voters, and the broker that follows the log as an observer
                assert sorted((n, r.role) for n, r in rows.items() if r.role != "voter") == \
                    [(leader.settings.node_id, "leader"), (BROKER_ID, "observer")] and len(rows) == 4
                assert rows[leader.settings.node_id].log_end_offset != "-"
                assert f"following leader {leader.settings.node_id}" in header(screen) and screen.following
                assert screen.frame.image == load_log_dir(leader.settings.metadata_log_dir,
                                                          offset=screen.frame.offset)[0]
                await pilot.press("left")  # look back while a second topic is committed
                looking = screen.frame.offset
                await create("payments", 1)
                await until(lambda: source.last_offset > looking + 1 and "+0 new" not in header(screen), "paused +K")
                assert screen.frame.offset == looking and f"⏸ paused @{looking}" in header(screen)
                await pilot.press("end")
                await until(lambda: "payments" in topics(), "payments on screen once following")
                assert "paused" not in header(screen)
        finally:
            if source is not None:
                await asyncio.to_thread(source.close)
            await client.close()

    quorum.drive(main, stop)
