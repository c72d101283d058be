"""The live dashboard's start-up: painted at once, "connecting to ..." in the header while the
attachment connects, its progress while it catches up, then the data; an attach that gives up
ends the app with its one line (metashell.dashboard.failure.EndedOnError), exit code 1.

First with a feed the test pushes (the attachment's surface, polled on a ManualTicker), then on
sockets: the real Attachment through a relay whose controller is started after the app (the
relay accepts at once and pipes to the controller once there is one), and a refused port through
``run_app``, as the command line runs the app.
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
from engine.storage.log_reader import LogEntry
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.failure import EndedOnError, run_app
from metashell.dashboard.live_history import LiveHistory, open_live
from metashell.dashboard.screens import MainScreen
from metashell.dashboard.ticker import ManualTicker
from metashell.dashboard.widgets import HeaderBar, PartitionsPanel
from metashell.live.attach import AttachError
from metashell.live.feed import AttachStatus, FeedUpdate
from metashell.source import LiveSource

pytestmark = pytest.mark.slow  # Textual apps, sockets and a controller

SIZE = (160, 50)
BOOTSTRAP = "127.0.0.1:9093"
DEADLINE_S = 60  # a safety net only


class StartingFeed:
    """The attachment's surface before and after it caught up, pushed by the test."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._status = AttachStatus(BOOTSTRAP, catching_up=True, note=f"connecting to {BOOTSTRAP}")
        self._first: FeedUpdate | None = None
        self.quorum = None
        self.started = False

    @property
    def status(self) -> AttachStatus:
        return self._status

    def start(self) -> None:
        self.started = True

    def set(self, **status: object) -> None:
        with self._lock:
            self._status = AttachStatus(**{**self._status.__dict__, **status})

    def catch_up(self, batches: list[list[LogEntry]]) -> None:
        last = batches[-1][-1].offset
        self.set(connected=True, catching_up=False, leader_id=1, leader_epoch=1, applied_offset=last,
                 high_watermark=last + 1, note="following leader 1 (epoch 1)")
        with self._lock:
            self._first = FeedUpdate(self._status, (MetadataImage(), -1), batches)

    def caught_up_update(self) -> FeedUpdate | None:
        with self._lock:
            if self._status.error is not None:
                raise AttachError(self._status.error)
            first, self._first = self._first, None
            return first

    def drain(self) -> FeedUpdate:
        return FeedUpdate(self._status)

    def close(self) -> None:
        pass


def header(screen: MainScreen) -> str:
    return screen.query_one(HeaderBar).text()


def run(source: LiveHistory, body: Callable[..., Awaitable[None]]) -> DashboardApp:
    poll = ManualTicker()
    app = DashboardApp(source, poll_ticker=poll)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()

            async def tick() -> None:
                poll.tick()
                await pilot.pause()
            await body(app.main, tick)
    asyncio.run(main())
    return app


def test_painted_at_once_connecting_then_catching_up_then_the_data(demo_log_dir: Path) -> None:
    start = replay_start(demo_log_dir, earliest=True)
    batches = list(segment_batches(start.listing, start.begin, []))
    feed = StartingFeed()
    source = LiveHistory(LiveSource(feed), wait=False)
    assert feed.started and not source.attached

    async def body(screen: MainScreen, tick) -> None:
        assert screen.frame.offset == -1 and screen.frames_shown == 1  # the frame, before any answer
        assert f"◌ connecting to {BOOTSTRAP}" in header(screen)
        assert screen.query_one(PartitionsPanel).all_rows == []
        feed.set(connected=True, leader_id=1, leader_epoch=1, snapshot_bytes=10, snapshot_size=2_500_000,
                 note="downloading snapshot 20-2 from leader 1 (epoch 1): 10 bytes of 2.5 MB")
        await tick()
        assert "◌ downloading snapshot 20-2 from leader 1 (epoch 1): 10 bytes of 2.5 MB" in header(screen)
        assert screen.frame.offset == -1
        feed.catch_up(batches)
        await tick()
        last = batches[-1][-1].offset
        assert source.attached and screen.frame.offset == last and screen.following
        assert f"● live @{last}" in header(screen) and "connecting" not in header(screen)
        assert screen.frame.image == load_log_dir(demo_log_dir, offset=last)[0]
        assert {r.topic for r in screen.query_one(PartitionsPanel).all_rows} == \
            set(screen.frame.image.topics.by_name)
    run(source, body)


def test_an_attach_that_gives_up_ends_the_app_with_its_one_line() -> None:
    feed = StartingFeed()
    source = LiveHistory(LiveSource(feed), wait=False)
    line = f"cannot reach any bootstrap controller: {BOOTSTRAP} (connection refused)"

    async def body(screen: MainScreen, tick) -> None:
        assert "◌ connecting to" in header(screen)
        feed.set(error=line, note=f"stopped: {line}")
        await tick()
    app = run(source, body)
    assert app.return_code == 1 and app.return_value == EndedOnError(line)


def test_on_a_refused_port_the_app_run_as_the_command_line_runs_it_returns_the_line() -> None:
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # bound, never listening: refused
    port = probe.getsockname()[1]
    source = open_live(f"127.0.0.1:{port}", wait=False)
    try:
        line = run_app(DashboardApp(source), headless=True, size=SIZE)
    finally:
        source.close()
        probe.close()
    assert line == f"cannot reach any bootstrap controller: 127.0.0.1:{port} (connection refused)"


class Relay:
    """A port that accepts at once and pipes each connection to the controller once it is given one."""

    def __init__(self) -> None:
        self.target: asyncio.Future | None = None
        self.port = 0

    async def start(self) -> None:
        self.target = asyncio.get_running_loop().create_future()
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def to(self, address: tuple[str, int]) -> None:
        self.target.set_result(address)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = await self.target
        up_reader, up_writer = await asyncio.open_connection(host, port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def stop(self) -> None:
        self.server.close()


def test_with_the_controller_started_after_the_app_it_connects_then_shows_the_data(tmp_path: Path) -> None:
    from tests.metashell.dashboard.test_dashboard_live import LoopThread
    from tests.node_quorum import CLUSTER_ID, start_quorum

    quorum, relay, nodes = LoopThread(), Relay(), []

    async def start_controller() -> None:
        _, started = await start_quorum(tmp_path / "quorum", 1)
        nodes.extend(started)
        await relay.to(started[0].driver.address)

    async def stop() -> None:
        await relay.stop()
        for node in nodes:
            await node.stop()

    async def main() -> None:
        await quorum.run(relay.start())
        source = open_live(f"127.0.0.1:{relay.port}", command_config={"cluster.id": CLUSTER_ID}, wait=False)
        try:
            app = DashboardApp(source)  # polled on Textual's timer, woken by the attachment
            async with app.run_test(size=SIZE) as pilot:
                screen = app.main

                async def until(done: Callable[[], bool], what: str) -> None:
                    deadline = time.monotonic() + DEADLINE_S
                    while not done():
                        assert time.monotonic() < deadline, what
                        await pilot.pause(0.02)

                await until(lambda: f"connecting to 127.0.0.1:{relay.port}" in header(screen), "connecting")
                assert screen.frame.offset == -1 and not source.attached  # painted: no controller yet
                await quorum.run(start_controller())
                await until(lambda: source.attached and screen.frame.offset >= 0, "the data")
                leader = nodes[0]
                await until(lambda: "● live @" in header(screen), "following")
                assert "metadata.version" in header(screen) and "connecting" not in header(screen)
                assert screen.frame.image == load_log_dir(leader.settings.metadata_log_dir,
                                                          offset=screen.frame.offset)[0]
        finally:
            await asyncio.to_thread(source.close)

    quorum.drive(main, stop)
