"""The asyncio edge around the Raft core: sockets, timers and the clock for one RaftClient
(Kafka's KafkaRaftManager with its network channel and its I/O thread).

The real-world twin of ``engine.sim.raft_simulation``: inbound Raft requests come through
``handle_request`` from the controller listener (``engine.server.controller_apis``, which
binds it, authorizes each request and tells the driver its address), outbound requests go
through KafkaClients, and one timer task runs ``poll`` when the core asks for it. Every call
into the core happens on the event loop thread, so nothing needs a lock.

- An inbound request gets a future as its token; the OutboundResponse carrying that
  token resolves it, and the server writes it (connections answer in request order).
- An outbound request is one task: send, then ``receive`` the response or, on a
  network error, a timeout or a version the peer lacks, ``InboundResponse(cid, None, why)``.
- After every ``receive`` the core is polled and its messages dispatched at once.
- An inbound Fetch may instead be taken directly (``answer_directly``, the listener's direct
  path): the core sees it in the reader's own step and its answer is written to the socket in
  the step that makes it (a parked Fetch: the step where the high watermark moves), with no
  task in between. The other RPCs keep the future.
- Fetches go through their own KafkaClient: the leader parks a Fetch up to 500 ms, and
  responses on one connection come back in order, so a parked Fetch must not sit in
  front of a Vote or an AddRaftVoter on the same connection.
- A snapshot a listener asks for from ``handle_commit`` (``request_snapshot``) is encoded
  after that poll and written by a forked child (engine.raft.snapshot_writing: the image it
  reads is immutable, so the child's copy-on-write view of it is the same), or, for a log
  in memory, in short slices between the loop's other work and on a worker thread; it is
  installed on the loop.

The clock is wall-clock milliseconds at start plus monotonic time since: DescribeQuorum
timestamps are epoch milliseconds, yet timers never jump with the wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import random
import time
from typing import Any, Callable, Iterable, Iterator

from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import ErrorCode
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import RAFT_APIS, ApiSpec, request_class, response_class
from engine.net.kafka_server import RequestContext
from engine.net.message_versions import convert_message
from engine.raft import raft_messages as rm
from engine.raft.direct_answer import DirectAnswer
from engine.raft.election_store import ElectionStore
from engine.raft.raft_client import (
    InboundRequest, InboundResponse, LeaderAndEpoch, NotLeaderError, OutboundRequest, OutboundResponse, RaftClient,
    RaftListener,
)
from engine.raft.raft_config import RaftConfig
from engine.raft.raft_log import RaftLog
from engine.raft.snapshot_writing import can_fork, write_in_child, write_in_slices
from engine.raft.voter_set import Address, ReplicaKey
from engine.storage.snapshot_writer import SnapshotBuilder, SnapshotId

log = logging.getLogger("engine.raft.driver")
Entry = tuple[bytes | None, bytes | None]  # an encoded record: (key, value)

# Raft's own RPCs, which the core answers (ApiVersions and DescribeCluster, on the same listener,
# are the listener's: engine.server.controller_apis)
RAFT_KEYS = (ApiKeys.VOTE, ApiKeys.BEGIN_QUORUM_EPOCH, ApiKeys.END_QUORUM_EPOCH, ApiKeys.FETCH, ApiKeys.FETCH_SNAPSHOT,
             ApiKeys.DESCRIBE_QUORUM, ApiKeys.ADD_RAFT_VOTER, ApiKeys.REMOVE_RAFT_VOTER, ApiKeys.UPDATE_RAFT_VOTER)
VOTER_CHANGE_WAIT_MS = 60_000  # how long RemoveRaftVoter may take (the core's own deadline)
ANSWER_WAIT_MS = 30_000  # a safety net: the core answers every other request far sooner
# What ApiVersions tells of us: a leader adding us as a voter (AddRaftVoter) reads our kraft.version
# range there and refuses a node that cannot take the finalized level (Kafka's reads 0-0 if absent).
SUPPORTED_FEATURES = {"kraft.version": (0, 1)}


def served_apis() -> dict[int, ApiSpec]:
    """Raft's RPCs as the controller listener serves them: each at the version the core reads and
    writes (Fetch also at v18), DescribeQuorum from v0 (converted here, for older tools) and
    AddRaftVoter from v0 (Kafka 4.1's tool and controllers speak only v0)."""
    apis = {}
    for key in RAFT_KEYS:
        spec = RAFT_APIS[key]
        version = rm.VERSIONS.get(spec.name)
        if key in (ApiKeys.DESCRIBE_QUORUM, ApiKeys.ADD_RAFT_VOTER) or version is None:
            apis[key] = spec
        else:  # Fetch: v17 as we send it, v18 with the fetcher's high watermark (KIP-1166)
            apis[key] = ApiSpec(key, spec.name, version, rm.INBOUND_VERSIONS[spec.name])
    return apis


def refused_response(api_key: int, version: int, code: Any) -> Any:
    """A Raft API's answer carrying only a top-level error, as Kafka's getErrorResponse builds
    it for a request refused before the core sees it (no topics, no nodes); DescribeCluster's too."""
    if api_key == ApiKeys.UPDATE_RAFT_VOTER:
        return convert_message(rm.update_voter_response(code, -1, -1, None), response_class(api_key, version))
    cls = response_class(api_key, version)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        if f.name == "error_code":
            values[f.name] = code
        elif f.name == "throttle_time":
            values[f.name] = datetime.timedelta(0)
        elif f.name == "error_message":
            values[f.name] = None
        elif f.name == "cluster_id":
            values[f.name] = ""
        else:  # topics, responses, nodes, brokers
            values[f.name] = ()
    return cls(**values)


class WallClock:
    """Epoch milliseconds that move with the monotonic clock."""

    def __init__(self) -> None:
        self._wall0_ms = time.time_ns() // 1_000_000
        self._mono0_ns = time.monotonic_ns()

    def now_ms(self) -> int:
        return self._wall0_ms + (time.monotonic_ns() - self._mono0_ns) // 1_000_000


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


class RaftDriver:
    """Runs one RaftClient over real sockets: ``listening_on`` (when a listener serves its
    RPCs), ``start_core()``, then ``await stop()``."""

    def __init__(self, *, config: RaftConfig, cluster_id: str, local: ReplicaKey,
                 endpoints: tuple[tuple[str, Address], ...], log: RaftLog, store: ElectionStore,
                 rng: random.Random | None = None, clock: WallClock | None = None,
                 client_id: str | None = None, client_security: ClientSecurity = PLAINTEXT_CLIENT):
        # How we reach the other controllers' listener (Kafka's controller.listener.names security)
        self.client_security = client_security
        self._after_pump: list[Callable[[], None]] = []
        self.config = config
        self.cluster_id = cluster_id
        self.local = local
        self.endpoints = endpoints
        self.raft_log = log
        self.store = store
        self.rng = rng or random.Random()
        self.clock = clock or WallClock()
        client_id = client_id or f"raft-client-{local.node_id}"
        self.net = KafkaClient(client_id=client_id, request_timeout_ms=config.request_timeout_ms,
                               security=client_security)
        self.fetch_net = KafkaClient(client_id=client_id, request_timeout_ms=config.request_timeout_ms,
                                     security=client_security)
        self.client: RaftClient | None = None
        self.address: Address | None = None  # where the controller listener took our requests (``listening_on``)
        self.failure: BaseException | None = None
        self.done = asyncio.Event()  # set when the driver stopped (on request or after a core failure)
        self.last_append_ms: int | None = None
        self._listeners: list[RaftListener] = []
        self._state_hooks: list[Callable[[str, LeaderAndEpoch], None]] = []
        self._last_state: tuple[str, LeaderAndEpoch] | None = None
        self._next_poll_ms = 0
        self._poll_requested = False
        self._wake = asyncio.Event()
        self._core_ready = asyncio.Event()
        self._timer: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._snapshot_task: asyncio.Task | None = None
        # a file log's snapshots are written by a forked child (engine.raft.snapshot_writing);
        # False: in slices on the loop and a worker thread (the memory log; tests of the slices)
        self.snapshot_in_child = can_fork() and hasattr(log, "staged_snapshot_path")
        self.snapshot_child_pid: int | None = None  # the child writing one now, if any
        self._stopping = False  # no more calls into the core
        self._stopped = False

    # -- the public surface ---------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def register(self, listener: RaftListener) -> None:
        """Add a RaftListener (before or after start)."""
        self._listeners.append(listener)
        if self.client is not None:
            self.client.register(listener)

    def on_state_change(self, hook: Callable[[str, LeaderAndEpoch], None]) -> None:
        """``hook(role, leader_and_epoch)`` after every poll that changed either."""
        self._state_hooks.append(hook)

    def after_pump(self, hook: Callable[[], None]) -> None:
        """``hook()`` after every poll of the core, once its messages are dispatched (the controller
        answers what got committed and appends what it must)."""
        self._after_pump.append(hook)

    def next_append_offset(self) -> int:
        """The offset the next appended record will take (after what is scheduled)."""
        client = self.client
        return client.log.end_offset + len(client.pending_records)

    def append_atomic(self, records: list) -> int | None:
        """Append ``records`` as one batch now, as the leader; its last offset, or None when this
        replica does not lead."""
        return self._leader_append(records, atomic=True)

    @property
    def is_leader(self) -> bool:
        return self.client is not None and self.client.quorum.is_leader()

    @property
    def leader_id(self) -> int:
        """The leader this replica knows of, or -1 (none known, or the core not started)."""
        return self.client.quorum.leader_id if self.client is not None else -1

    def voter_endpoints(self) -> list[tuple[int, Address]]:
        """(node id, address on the controller listener) of each voter that names one."""
        client, listener = self.client, self.config.listener_name
        voters = client.control.latest_voters().voters if client is not None else ()
        return [(node.key.node_id, address) for node in voters
                if (address := node.endpoint(listener)) is not None]

    def listening_on(self, address: Address) -> None:
        """Before ``start_core``: the controller listener is bound at ``address`` (requests that
        reach ``handle_request`` meanwhile wait for the core). A listener configured with port 0
        advertises the port it got."""
        self.address = address
        self.endpoints = tuple((name, (host, address[1]) if name == self.config.listener_name and port == 0
                                else (host, port)) for name, (host, port) in self.endpoints)

    def start_core(self) -> None:
        """Create the RaftClient and start its timer."""
        self.client = RaftClient(config=self.config, cluster_id=self.cluster_id, local=self.local,
                                 endpoints=self.endpoints, log=self.raft_log, store=self.store, rng=self.rng,
                                 now_ms=self.now_ms())
        for listener in self._listeners:
            self.client.register(listener)
        self._timer = asyncio.create_task(self._timer_loop(), name=f"raft timer {self.local.node_id}")
        self._core_ready.set()
        self.pump()

    def schedule_append(self, records: list, *, atomic: bool = False) -> int | None:
        """Queue records as the leader (batched after append.linger.ms; ``atomic``: all in one
        batch); the offset of the last, or None when this replica does not lead."""
        return self._leader_append(records, atomic=atomic, linger=True)

    def _leader_append(self, records: list, *, atomic: bool, linger: bool = False) -> int | None:
        client = self.client
        if client is None or self._stopping or not client.quorum.is_leader():
            return None
        now = self.now_ms()
        try:
            if linger:
                offset = client.schedule_append(client.epoch, records, now, atomic=atomic)
            else:
                offset = client.append_now(client.epoch, records, now)
        except NotLeaderError:
            return None
        self.last_append_ms = now
        self.request_poll()  # may run inside a listener callback, i.e. inside poll: no re-entry
        return offset

    def request_snapshot(self, end_offset: int, entries: Iterable[Entry], *,
                         last_contained_log_timestamp_ms: int,
                         on_done: Callable[[SnapshotId], None] | None = None) -> bool:
        """Snapshot the state machine as of ``end_offset`` (committed and applied, on a batch
        boundary); ``entries`` are its records encoded, (key, value) as ``encode_record`` gives
        them, from an iterator over an immutable state, so it may be consumed later (or in a
        forked child). Returns at once: the bytes are built and written off the loop (a child
        process, or slices between the loop's other work and a worker thread), then installed, and the
        core deletes the log before it. A snapshot that cannot be written is logged in one line
        and the log kept whole: nothing is lost. False if one is still being written (it is
        skipped, as Kafka's SnapshotGenerator skips)."""
        if self._snapshot_task is not None and not self._snapshot_task.done():
            log.info("node %d: snapshot at offset %d skipped: the previous one is still being written",
                     self.local.node_id, end_offset)
            return False
        task = asyncio.get_running_loop().create_task(
            self._write_snapshot(end_offset, iter(entries), last_contained_log_timestamp_ms, on_done),
            name=f"snapshot at {end_offset}")
        self._snapshot_task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _write_snapshot(self, end_offset: int, entries: Iterator[Entry], timestamp_ms: int,
                              on_done: Callable[[SnapshotId], None] | None) -> None:
        await asyncio.sleep(0)  # past the poll that asked: the core cannot be re-entered from a listener
        client = self.client
        if client is None or self._stopping:
            return
        try:
            plan = client.prepare_snapshot(end_offset)
            if plan is None:
                return
            now_ms = self.now_ms()

            def make_builder() -> SnapshotBuilder:
                return SnapshotBuilder(epoch=plan.snapshot_id.epoch, kraft_control=plan.kraft_control,
                                       last_contained_log_timestamp_ms=timestamp_ms, now_ms=now_ms)

            if self.snapshot_in_child:
                staged = await self._write_in_child(plan.snapshot_id, make_builder, entries)
            else:
                staged = await write_in_slices(make_builder(), entries,
                                               lambda data: self.raft_log.stage_snapshot(plan.snapshot_id, data),
                                               self.raft_log.discard_snapshot, lambda: self._stopping)
            if staged is None or self._stopping:
                if staged is not None:
                    self.raft_log.discard_snapshot(staged)
                return
            installed = client.install_snapshot(plan.snapshot_id, staged)
        except Exception as err:  # noqa: BLE001 - a failed snapshot is one line; the log stays whole
            log.error("node %d: no snapshot at offset %d (the next one due is tried afresh): %s", self.local.node_id,
                      end_offset, one_line(err))
            return
        if installed and on_done is not None:
            on_done(plan.snapshot_id)

    async def _write_in_child(self, snapshot_id: SnapshotId, make_builder: Callable[[], SnapshotBuilder],
                              entries: Iterator[Entry]) -> Any:
        """Encode and write in a forked child (engine.raft.snapshot_writing): the staged path."""
        part = self.raft_log.staged_snapshot_path(snapshot_id)

        def started(pid: int) -> None:
            self.snapshot_child_pid = pid

        try:
            await write_in_child(make_builder, entries, lambda data: self.raft_log.stage_snapshot(snapshot_id, data, part),
                                 part, on_started=started)
        finally:
            self.snapshot_child_pid = None
        return part

    def request_poll(self) -> None:
        """Have the timer task poll the core soon (safe from inside a listener callback)."""
        self._poll_requested = True
        self._wake.set()

    async def resign(self, wait_ms: int = 1000) -> None:
        """If leading, step down (EndQuorumEpoch to the voters) and wait up to ``wait_ms``
        for the voters to acknowledge it."""
        client = self.client
        if client is None or self.failure is not None or not client.quorum.is_leader():
            return
        client.resign(client.epoch, self.now_ms())
        self.pump()
        deadline = time.monotonic() + wait_ms / 1000
        while time.monotonic() < deadline and client.role == "resigned" and client.quorum.state.unacked \
                and self.failure is None:
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Close the connections and stop the timer; the log stays open (its owner flushes and
        closes it). The controller listener is closed first, by its owner: requests still
        arriving meanwhile are served."""
        if self._stopped:
            return
        self._stopped = True
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        tasks = [t for t in (self._timer, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(self.net.close(), self.fetch_net.close(), return_exceptions=True)
        self.done.set()

    # -- polling ----------------------------------------------------------------------

    def pump(self) -> None:
        """Poll the core now and dispatch what it says."""
        client = self.client
        if client is None or self._stopping:
            return
        try:
            ready = client.poll(self.now_ms())
        except Exception as err:  # noqa: BLE001 - a broken core stops the node, it must not limp on
            self._fail("poll", err)
            return
        previous = self._next_poll_ms
        self._next_poll_ms = ready.next_poll_ms
        self._dispatch(ready.messages)
        if ready.next_poll_ms < previous:
            self._wake.set()  # the timer sleeps for longer than it now should
        self._note_state()
        for hook in self._after_pump:
            try:
                hook()
            except Exception as err:  # noqa: BLE001 - a broken state machine stops the node too
                self._fail("after poll", err)
                return

    def _receive(self, message: InboundRequest | InboundResponse) -> bool:
        if self.client is None or self._stopping:
            return False
        try:
            self.client.receive(self.now_ms(), message)
        except Exception as err:  # noqa: BLE001
            self._fail("receive", err)
            return False
        self.pump()
        return True

    def _fail(self, where: str, err: BaseException) -> None:
        if self.failure is None:
            self.failure = err
            log.error("node %d: the Raft core failed in %s: %s: %s", self.local.node_id, where,
                      type(err).__name__, one_line(err), exc_info=err)
        self._stopping = True
        self.done.set()

    def _note_state(self) -> None:
        client = self.client
        state = (client.role, client.leader_and_epoch)
        if state != self._last_state:
            self._last_state = state
            for hook in self._state_hooks:
                hook(*state)

    async def _timer_loop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            delay_s = 0.0 if self._poll_requested else max(0.001, (self._next_poll_ms - self.now_ms()) / 1000)
            if delay_s > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay_s):
                        await self._wake.wait()
            else:
                await asyncio.sleep(0)
            if self._poll_requested or self.now_ms() >= self._next_poll_ms:
                self._poll_requested = False
                self.pump()

    # -- messages ---------------------------------------------------------------------

    def _dispatch(self, messages: list) -> None:
        for message in messages:
            if isinstance(message, OutboundResponse):
                token = message.token
                if isinstance(token, DirectAnswer):
                    token.answer(message.response)  # written now, in this step
                elif isinstance(token, asyncio.Future) and not token.done():
                    token.set_result(message.response)
            elif isinstance(message, OutboundRequest):
                task = asyncio.create_task(self._send(message), name=f"raft send {message.correlation_id}")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _send(self, message: OutboundRequest) -> None:
        request, address = message.request, message.destination.address
        net = self.fetch_net if type(request).__api_key__ == ApiKeys.FETCH else self.net
        response, error = None, None
        if address is None:
            error = f"no address known for node {message.destination.node_id}"
        else:
            try:
                # A leader of Kafka 4.1 takes AddRaftVoter v0 only (auto-join): asked in it. The other
                # RPCs go at the core's version or not at all: an older one would drop what they mean.
                response = await net.send(address, request, timeout_ms=self.config.request_timeout_ms,
                                          adapt=type(request).__api_key__ == ApiKeys.ADD_RAFT_VOTER)
            except (NetError, OSError) as err:  # NetworkError, RequestTimeoutError, UnsupportedVersionError, ...
                error = one_line(err)
            except Exception as err:  # noqa: BLE001 - e.g. a request kio cannot encode: still an answer
                log.error("node %d: sending %s failed: %s: %s", self.local.node_id, type(request).__name__,
                          type(err).__name__, one_line(err))
                error = f"{type(err).__name__}: {one_line(err)}"
        self._receive(InboundResponse(message.correlation_id, response, error))

    async def handle_request(self, ctx: RequestContext, request: Any) -> Any:
        """Serve one of Raft's RPCs (``served_apis``), read at ``ctx.api_version``: converted to
        the core's version and back, answered when the core answers (or refused when it never
        does in time). The caller has authorized it."""
        if self.client is None:
            await self._core_ready.wait()  # the listener is bound, the core not created yet
        core_version = rm.INBOUND_VERSIONS.get(RAFT_APIS[ctx.api_key].name, ctx.api_version)
        if ctx.api_version != core_version:
            request = convert_message(request, request_class(ctx.api_key, core_version))
        future = asyncio.get_running_loop().create_future()
        if not self._receive(InboundRequest(future, request)):
            raise ConnectionAbortedError("the controller is shutting down")
        try:
            async with asyncio.timeout(self._answer_wait_ms(ctx.api_key, request) / 1000):
                response = await future
        except TimeoutError:
            response = self._unanswered(ctx, request)
        if type(response).__version__ != ctx.api_version:
            response = convert_message(response, response_class(ctx.api_key, ctx.api_version))
        return response

    def answer_directly(self, ctx: RequestContext, request: Any, reply: Callable[[Any], None]) -> bool:
        """Take a Fetch on the listener's direct path (engine.net.kafka_server): into the core now,
        its answer to ``reply`` in the step the core makes it. False for anything else, or before
        the core runs (the ordinary path waits for it). The caller has authorized it."""
        if ctx.api_key != ApiKeys.FETCH or self.client is None or self._stopping:
            return False
        core_version = rm.INBOUND_VERSIONS.get(RAFT_APIS[ctx.api_key].name, ctx.api_version)
        if ctx.api_version != core_version:
            request = convert_message(request, request_class(ctx.api_key, core_version))
        token = DirectAnswer(reply, ctx.api_version)

        token.timer = asyncio.get_running_loop().call_later(ANSWER_WAIT_MS / 1000, token.expire)
        if not self._receive(InboundRequest(token, request)):
            token.done = True
            token.timer.cancel()
            reply(ConnectionAbortedError("the controller is shutting down"))
        return True

    def _answer_wait_ms(self, api_key: int, request: Any) -> int:
        if api_key == ApiKeys.ADD_RAFT_VOTER:
            return int(request.timeout.total_seconds() * 1000) + self.config.request_timeout_ms
        if api_key == ApiKeys.REMOVE_RAFT_VOTER:
            return VOTER_CHANGE_WAIT_MS + self.config.request_timeout_ms
        return ANSWER_WAIT_MS

    def _unanswered(self, ctx: RequestContext, request: Any) -> Any:
        """The core dropped a request (e.g. a voter change whose leader lost its epoch)."""
        name = RAFT_APIS[ctx.api_key].name
        log.warning("node %d: the Raft core never answered %s (correlation id %d)", self.local.node_id, name,
                    ctx.correlation_id)
        if ctx.api_key == ApiKeys.ADD_RAFT_VOTER:
            return rm.add_voter_response(ErrorCode.request_timed_out, "the voter change was not completed in time")
        if ctx.api_key == ApiKeys.REMOVE_RAFT_VOTER:
            return rm.remove_voter_response(ErrorCode.request_timed_out,
                                            "the voter change was not completed in time")
        raise TimeoutError(f"the Raft core never answered {name}")


__all__ = ["SUPPORTED_FEATURES", "RaftDriver", "WallClock", "convert_message", "refused_response", "served_apis"]
