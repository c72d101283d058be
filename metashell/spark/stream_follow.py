"""The live stream's wire: the recorder's observer (engine.raft.log_follower over
metashell.record.link) on a thread of the driver's stream process, holding the committed batches
Spark has not committed yet.

``QuorumTail(start)`` follows one cluster's metadata log from a position (next offset, epoch of
the record before it: the Fetch's fetchOffset and lastFetchedEpoch), as an observer (replica id
-1): it finds the leader from the bootstrap controllers, fails over when the leader goes (a new
leader, a restarted controller, a quorum down for a while: retried with the client's backoff,
as the recorder does), and keeps every whole committed batch's bytes as the leader served them,
with a TransactionScan of their records (where a micro-batch may end). It stops fetching while
it holds ``max_buffer_bytes`` (Spark drops what it committed: ``drop_below``), unless one open
metadata transaction fills that much (see _may_fetch).

When the leader's log no longer holds the start (its log start moved past it, after a
snapshot), the follower is told the snapshot: ``lost`` names the offsets, and, with
``skip_lost``, the tail goes on from the snapshot's end (``earliest``: a new query starts there).
What retrying cannot mend (another cluster, a refused login) is ``error``, one line.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from engine.admin import quorum_client
from engine.net.security_config import client_security
from engine.raft.log_follower import LogFollower
from metashell.live.attach import connection_settings, follower_settings
from metashell.record.link import Exchanges, ask_cluster_id, follow_loop, new_client, wake_from_thread
from metashell.spark.stream_offsets import Position
from metashell.spark.stream_transactions import TransactionScan

DEFAULT_MAX_BUFFER_BYTES = 64 * 1024 * 1024
# how far past max_buffer_bytes one open metadata transaction may take the buffer: Spark can take
# none of it before its End, so the tail fetches on; past this, the query fails in one line
OPEN_TRANSACTION_FACTOR = 4


@dataclass(frozen=True, slots=True)
class HeldBatch:
    first: int  # the first offset handed over of it (the batch's base, or the start inside it)
    last: int
    data: bytes  # the whole batch, as the leader served it


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class QuorumTail:
    def __init__(self, bootstrap: str, config: Mapping[str, str], start: Position, *, cluster_id: str | None,
                 skip_lost: bool, max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
                 clock_ms: Callable[[], int] = _monotonic_ms):
        """ConfigError (one line) for a bad address or client setting."""
        self.bootstrap = bootstrap
        self._addresses = quorum_client.parse_bootstrap(bootstrap, "option bootstrap.controllers")
        self._follower_settings = follower_settings(config, "the kafka. options")
        self._connection = connection_settings(config, "the kafka. options")
        self._security = client_security(config, "the kafka. options")
        self._clock_ms = clock_ms
        self.start = start
        self.cluster_id = cluster_id
        self.skip_lost = skip_lost
        self.max_buffer_bytes = max_buffer_bytes
        self.changed = threading.Condition()
        # all below: guarded by ``changed``
        self.scan = TransactionScan(start)
        self.batches: list[HeldBatch] = []
        self.held_bytes = 0
        self.begin: Position | None = None  # where the records handed over start (after a snapshot: its end)
        self.lost: tuple[int, int] | None = None  # (the start asked, the leader's log start) when it moved past
        self.error: str | None = None
        self.high_watermark = -1
        self.last_failure: str | None = None
        self._stop = threading.Event()
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="kraft-stream-tail", daemon=True)

    # -- the driver's side ----------------------------------------------------------------------

    def open(self) -> "QuorumTail":
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._poke()
        if self._thread.is_alive():
            self._thread.join(10)

    def wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Until ``predicate()`` (called under the lock), an error, offsets lost that are not to be
        skipped (the tail fetches nothing more: the caller fails at once), or ``timeout_s`` passes."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate() or self.error is not None or
                                         (self.lost is not None and not self.skip_lost), timeout_s)

    def drop_below(self, offset: int) -> None:
        """Spark committed everything before ``offset``: its bytes may go."""
        with self.changed:
            keep = [b for b in self.batches if b.last >= offset]
            self.held_bytes = sum(len(b.data) for b in keep)
            self.batches = keep
            self.scan.forget_below(offset)
        self._poke()

    def holds(self, position: Position) -> bool:
        """Whether the bytes from ``position`` on are all here (or still to come) without a new fetch."""
        with self.changed:
            if position == self.start:
                return self.error is None  # what it started from (after a snapshot's skip, too)
            start = self.batches[0].first if self.batches else self.scan.start.next
            return start <= position.next <= self.scan.scanned.next and self.lost is None

    def caught_up(self) -> bool:
        """Whether every record committed when last asked is here (called under the lock)."""
        return self.high_watermark >= 0 and self.scan.scanned.next >= self.high_watermark

    def _poke(self) -> None:
        wake_from_thread(self._loop, self._wake)

    # -- the thread -------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as err:  # noqa: BLE001 - the driver reads it as one line
            with self.changed:
                self.error = self.error or f"following {self.bootstrap}: {err}"
                self.changed.notify_all()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        clients = [new_client(self._follower_settings, self._connection, self._security) for _ in range(2)]
        try:
            if self.cluster_id is None:
                self.cluster_id = await self._describe(clients[1])
                if self.cluster_id is None:
                    return
            start = (self.start.next, self.start.epoch) if self.start.next > 0 else None
            core = LogFollower(self._addresses, empty_state=None, cluster_id=self.cluster_id,
                               settings=self._follower_settings, now_ms=self._clock_ms(),
                               snapshot_bytes_state=lambda data, sid, where: sid, keep_bytes=True, start=start)
            await self._follow(core, clients[0])
        finally:
            for client in clients:
                await client.close()

    async def _describe(self, client: Any) -> str | None:
        def failed(failures: int, why: str) -> None:
            with self.changed:
                self.last_failure = why

        return await ask_cluster_id(client, self._addresses, self._follower_settings, stopped=self._stop.is_set,
                                    failed=failed, sleep=self._sleep, step_s=0.5, max_s=5.0)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass

    async def _follow(self, core: LogFollower, client: Any) -> None:
        def step(exchanges: Exchanges, now: int) -> int | None:
            wake_ms = now + 1_000
            if self._may_fetch():
                wake_ms = min(exchanges.poll(now), wake_ms)
            self._take(core)
            if core.error is not None or self.error is not None:
                with self.changed:
                    self.error = self.error or core.error
                    self.changed.notify_all()
                return None
            return wake_ms

        await follow_loop(core, client, self._follower_settings, self._clock_ms, self._wake, self._stop.is_set, step)

    def _may_fetch(self) -> bool:
        """Whether to fetch more: while less than max_buffer_bytes is held, or while one open
        metadata transaction alone holds that much (Spark can take none of it before its End: a
        stall otherwise), up to OPEN_TRANSACTION_FACTOR times that; past it, ``error``."""
        with self.changed:
            if self.held_bytes < self.max_buffer_bytes:
                return True
            first = self.scan.open_first
            if first is None:
                return False
            open_bytes = sum(len(b.data) for b in self.batches if b.last >= first)
            if open_bytes < self.max_buffer_bytes:
                return False  # Spark drains what lies before its Begin first
            cap = OPEN_TRANSACTION_FACTOR * self.max_buffer_bytes
            if open_bytes < cap:
                return True
            self.error = (f"the metadata transaction from offset {first} is still open after {open_bytes} bytes, "
                          f"more than {OPEN_TRANSACTION_FACTOR} x maxBufferBytes ({cap}): a micro-batch ends "
                          f"outside transactions; raise option maxBufferBytes (now {self.max_buffer_bytes})")
            self.changed.notify_all()
            return False

    def _take(self, core: LogFollower) -> None:
        taken = core.take()
        with self.changed:
            self.last_failure = core.last_failure
            self.high_watermark = core.high_watermark
            if taken.reset is not None and taken.reset[0] is not None:
                snapshot_id = taken.reset[0]
                if self.start.next > 0 and snapshot_id.end_offset > self.start.next:
                    self.lost = (self.start.next, snapshot_id.end_offset)
                if self.lost is None or self.skip_lost:
                    self.scan = TransactionScan(Position(snapshot_id.end_offset, snapshot_id.epoch))
                    self.batches, self.held_bytes = [], 0
            if self.begin is None and core.connected and core.downloading is None and \
                    (self.lost is None or self.skip_lost):
                self.begin = self.scan.start
            if self.lost is not None and not self.skip_lost:
                self.changed.notify_all()
                return  # nothing more is kept: the driver fails the query
            for entries, raw in zip(taken.batches, taken.raw):
                self.scan.feed(entries)
                self.batches.append(HeldBatch(entries[0].offset, entries[-1].offset, raw))
                self.held_bytes += len(raw)
            self.changed.notify_all()
