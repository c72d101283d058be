"""The live attachment: a thread of its own follows the quorum's metadata log over the wire.

``Attachment`` runs engine.raft.log_follower's deterministic core on its own thread and asyncio
loop, with two connections of engine.net's KafkaClient: one for Fetch / FetchSnapshot, one for
DescribeQuorum about once a second (``.quorum``: the QuorumInfo ``kraftd quorum describe``
prints). The tools only ever call the thread-safe methods below; nothing here blocks them
except ``wait_caught_up``, which is meant for command-line use, not for a UI thread.

The command config (``--command-config FILE``, Java properties) may set Kafka's client names
``request.timeout.ms`` and ``retry.backoff.ms``, ``socket.connection.setup.timeout.ms`` and
``socket.connection.setup.timeout.max.ms`` (each connection's setup, engine.net.connect),
``reconnect.backoff.ms`` and ``reconnect.backoff.max.ms``, ``controller.quorum.fetch.timeout.ms``,
``controller.quorum.fetch.snapshot.max.bytes`` (the FetchSnapshot chunk asked for), and
``cluster.id`` (sent in every Fetch, so that a controller of another cluster refuses us;
without it the Fetch carries a null cluster id, which Kafka accepts, as its own tools send).
It may also secure the connections as Kafka's tools do: ``security.protocol`` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the
username and password of ``sasl.jaas.config``, and PEM stores (``ssl.truststore.location``, and
``ssl.keystore.location`` / ``ssl.key.password`` for a listener that wants a client certificate).
A refused login or certificate stops the attachment with one line: retrying the same secret would
only be refused again (and lock accounts where a server counts failures).

Giving up before it caught up (metashell.live.startup): when every bootstrap controller failed its
connection setup and none was reached, the attachment stops at once with one line naming each and
why; once one was reached, when nothing moved for ``stall_timeout_ms``. Either way ``status.error``
says it, and ``wait_caught_up`` raises it. An address that is no controller (a broker's listener,
or not Kafka at all) counts as a failed setup, said in words. ``wait_caught_up`` may report once
on a slow wait (``on_slow``: the shell at a terminal prints ``progress_line()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from typing import Callable, Mapping

from engine.common.api_keys import ApiKeys
from engine.common.errors import MetadataError
from engine.common.java_properties import load_properties
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import image_of_fetched_snapshot
from engine.net.channel_security import ClientSecurity
from engine.net.connect import (RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MS, SETUP_TIMEOUT_MAX_MS,
                                SETUP_TIMEOUT_MS, failure_words)
from engine.net.errors import AuthenticationError, ConnectError, NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_server import DEFAULT_MAX_FRAME_BYTES
from engine.net.security_config import client_security
from engine.raft.log_follower import FollowerSettings, LogFollower, fetch_at_version
from engine.raft.raft_config import int_property
from engine.raft.raft_io import InboundResponse, OutboundRequest
from engine.raft.voter_set import Address
from engine.admin import quorum_client
from metashell.live.attach_trace import AttachTrace
from metashell.live.feed import AttachStatus, FeedUpdate
from metashell.live.startup import STALL_TIMEOUT_MS, StartupWatch, not_a_controller

DESCRIBE_INTERVAL_S = 1.0
# FetchSnapshot chunks asked for (``controller.quorum.fetch.snapshot.max.bytes`` sets another):
# Kafka 4.3's default, the most a kraftd leader hands out (Kafka 4.1's observers ask for the
# whole snapshot; 8 MiB chunks were not faster: docs/performance.md)
SNAPSHOT_CHUNK_BYTES = 1024 * 1024
CLIENT_ID = "metashell-attach"


class AttachError(MetadataError):
    """The attachment stopped (or did not catch up in time): one line saying why."""


def load_command_config(path: str) -> dict[str, str]:
    """``--command-config FILE`` as Java properties; ConfigError names the file."""
    return load_properties(path)


def follower_settings(config: Mapping[str, str], where: str = "--command-config") -> FollowerSettings:
    """The follower's timeouts from a command config, Kafka's defaults for what it leaves out;
    ConfigError for a bad number."""
    defaults = FollowerSettings()

    def number(key: str, default: int, low: int) -> int:
        return int_property(config, key, default, where, low)

    return FollowerSettings(request_timeout_ms=number("request.timeout.ms", defaults.request_timeout_ms, 1),
                            retry_backoff_ms=number("retry.backoff.ms", defaults.retry_backoff_ms, 0),
                            fetch_timeout_ms=number("controller.quorum.fetch.timeout.ms",
                                                    defaults.fetch_timeout_ms, 1),
                            snapshot_max_bytes=number("controller.quorum.fetch.snapshot.max.bytes",
                                                      SNAPSHOT_CHUNK_BYTES, 1))


@dataclasses.dataclass(frozen=True)
class ConnectionSettings:
    """Kafka's client connection settings (CommonClientConfigs' names and defaults)."""

    setup_timeout_ms: int = SETUP_TIMEOUT_MS
    setup_timeout_max_ms: int = SETUP_TIMEOUT_MAX_MS
    reconnect_backoff_ms: int = RECONNECT_BACKOFF_MS
    reconnect_backoff_max_ms: int = RECONNECT_BACKOFF_MAX_MS


def connection_settings(config: Mapping[str, str], where: str = "--command-config") -> ConnectionSettings:
    """The connection settings of a command config; ConfigError for a bad number."""
    d = ConnectionSettings()

    def number(key: str, default: int, low: int) -> int:
        return int_property(config, key, default, where, low)

    return ConnectionSettings(number("socket.connection.setup.timeout.ms", d.setup_timeout_ms, 1),
                              number("socket.connection.setup.timeout.max.ms", d.setup_timeout_max_ms, 1),
                              number("reconnect.backoff.ms", d.reconnect_backoff_ms, 0),
                              number("reconnect.backoff.max.ms", d.reconnect_backoff_max_ms, 0))


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Attachment:
    def __init__(self, bootstrap: str, *, command_config: dict[str, str] | None = None,
                 on_update: Callable[[], None] | None = None, stall_timeout_ms: int = STALL_TIMEOUT_MS,
                 clock_ms: Callable[[], int] = _monotonic_ms, trace: bool = False):
        """ConfigError (one line) for a bad --bootstrap-controller or command config.
        ``stall_timeout_ms``: before catching up, give up when nothing moved this long (after a
        controller was reached); ``clock_ms``: the monotonic clock of that and of the core.
        ``trace``: keep timestamps for metashell bench attach (metashell.live.attach_trace)."""
        config = dict(command_config or {})
        self.bootstrap = bootstrap
        self._addresses = quorum_client.parse_bootstrap(bootstrap, "--bootstrap-controller")
        self._settings = follower_settings(config)
        self._connection = connection_settings(config)
        self._stall_timeout_ms = stall_timeout_ms
        self._clock_ms = clock_ms
        self._caught_up = False
        self._records_fetched = 0
        self._security: ClientSecurity = client_security(config, "--command-config")
        self._cluster_id = config.get("cluster.id") or None
        self._on_update = on_update
        self._lock = threading.Condition()
        self._status = AttachStatus(bootstrap=bootstrap, catching_up=True, note=f"connecting to {bootstrap}")
        self._quorum: quorum_client.QuorumInfo | None = None
        self._reset: tuple | None = None
        self._batches: list = []
        self._first_high_watermark = -1
        self._fetch_version: int | None = None
        self._described_cluster_id: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._trace = AttachTrace() if trace else None

    # -- the tools' side (any thread) --------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stopping:
                return
            self._thread = threading.Thread(target=self._run, name=f"metashell attach {self.bootstrap}",
                                            daemon=True)
        self._thread.start()

    @property
    def status(self) -> AttachStatus:
        with self._lock:
            return self._status

    @property
    def quorum(self) -> quorum_client.QuorumInfo | None:
        with self._lock:
            return self._quorum

    @property
    def cluster_id(self) -> str | None:
        """The cluster's id: ``cluster.id`` from the command config, else as the leader's
        DescribeCluster tells it (None until it answered; a Fetch carries none)."""
        with self._lock:
            return self._cluster_id or self._described_cluster_id

    @property
    def fetch_version(self) -> int | None:
        """The Fetch version of the last fetch sent (13 to 18: the newest the controller serves); None before."""
        with self._lock:
            return self._fetch_version

    def drain(self) -> FeedUpdate:
        """Everything committed since the last drain, merged (the reset first, if any)."""
        with self._lock:
            update = FeedUpdate(self._status, self._reset, self._batches)
            self._reset, self._batches = None, []
            return update

    def take_trace(self) -> list[tuple[int, float, float]]:
        """With ``trace``: (first offset, answer arrived, published) per batch handed over since
        the last take, ``time.monotonic()`` seconds; [] without (metashell.live.attach_trace)."""
        with self._lock:
            return self._trace.take() if self._trace is not None else []

    @property
    def milestones(self) -> dict[str, float]:
        """With ``trace``: the attach's steps reached so far (connected, snapshot named,
        downloaded, indexed, caught up), ``time.monotonic()`` of the first of each; {} without."""
        with self._lock:
            return dict(self._trace.milestones) if self._trace is not None else {}

    def wait_caught_up(self, timeout_s: float | None = None, *, slow_s: float | None = None,
                       on_slow: Callable[[str], None] | None = None) -> FeedUpdate:
        """Block until the first high watermark seen is handed over; AttachError when the
        attachment stopped or gave up (metashell.live.startup), or at ``timeout_s`` if given (a
        safety net: the attachment's own rules end the wait). Not for a UI thread.
        ``on_slow``: called once with ``progress_line()`` when the wait has lasted ``slow_s``
        (a person at a terminal should not stare at nothing)."""
        start = time.monotonic()
        deadline = None if timeout_s is None else start + timeout_s
        slow_at = None if on_slow is None or slow_s is None else start + slow_s
        with self._lock:
            while True:
                update = self._caught_up_update()
                if update is not None:
                    return update
                now = time.monotonic()
                if slow_at is not None and now >= slow_at:
                    slow_at = None
                    on_slow(self._progress_line())  # type: ignore[misc]  # set with slow_at
                left = None if deadline is None else deadline - now
                if left is not None and left <= 0:
                    raise AttachError(f"not caught up with {self.bootstrap} after {timeout_s:g} s: "
                                      f"{self._status.note}")
                if slow_at is not None:
                    left = slow_at - now if left is None else min(left, slow_at - now)
                self._lock.wait(left)

    def progress_line(self) -> str:
        """Where the attach stands, in one line: the status note and, while no controller was
        reached yet, the connection setup timeout that bounds each attempt."""
        with self._lock:
            return self._progress_line()

    def _progress_line(self) -> str:
        note = self._status.note
        watch = getattr(self, "_watch", None)
        if self._status.error is None and not self._status.connected and (watch is None or not watch.reached):
            note += f" (socket.connection.setup.timeout.ms={self._connection.setup_timeout_ms})"
        return note

    def caught_up_update(self) -> FeedUpdate | None:
        """Without waiting: the first update once caught up (as ``wait_caught_up`` returns it),
        None while catching up; AttachError when the attachment stopped or gave up."""
        with self._lock:
            return self._caught_up_update()

    def _caught_up_update(self) -> FeedUpdate | None:
        status = self._status
        if status.error is not None:
            raise AttachError(status.error)
        if not self._caught_up:
            return None
        update = FeedUpdate(self._status, self._reset, self._batches)
        self._reset, self._batches = None, []
        return update

    def close(self) -> None:
        """Stop the thread and close its sockets; idempotent."""
        with self._lock:
            self._stopping = True
            thread, loop, wake = self._thread, self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(wake.set)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> "Attachment":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the attachment's thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as err:  # noqa: BLE001 - never a traceback: the feed stops with one line
            why = failure_words(err) if isinstance(err, OSError) else f"{type(err).__name__}: {err}"
            self._publish_error(f"the attachment stopped: {why}")

    async def _main(self) -> None:
        s = self._settings
        self._wake = asyncio.Event()
        with self._lock:
            self._loop = asyncio.get_running_loop()
            if self._stopping:
                return
        c, now = self._connection, self._clock_ms()
        core = LogFollower(self._addresses, empty_state=MetadataImage(),
                           cluster_id=self._cluster_id, settings=s, now_ms=now,
                           snapshot_bytes_state=image_of_fetched_snapshot)
        self._watch = StartupWatch(self._addresses, now, self._stall_timeout_ms)
        clients = [KafkaClient(client_id=CLIENT_ID, request_timeout_ms=s.request_timeout_ms,
                               reconnect_backoff_ms=c.reconnect_backoff_ms,
                               reconnect_backoff_max_ms=c.reconnect_backoff_max_ms,
                               connection_setup_timeout_ms=c.setup_timeout_ms,
                               connection_setup_timeout_max_ms=c.setup_timeout_max_ms, security=self._security,
                               # an answer holds a snapshot chunk as large as asked, and the frame around it
                               max_frame_bytes=max(DEFAULT_MAX_FRAME_BYTES, s.snapshot_max_bytes + 65_536))
                   for _ in range(2)]
        tasks: set[asyncio.Task] = set()
        describe = asyncio.create_task(self._describe_loop(core, clients[1]))
        try:
            while not self._stopping:
                self._wake.clear()
                ready = core.poll(self._clock_ms())
                for message in ready.messages:
                    task = asyncio.create_task(self._exchange(core, clients[0], message))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                self._judge(core)
                self._publish(core)
                if core.error is not None:
                    break
                wake_ms = ready.next_poll_ms
                if (deadline := self._watch.deadline_ms()) is not None:
                    wake_ms = min(wake_ms, deadline)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), max(0, wake_ms - self._clock_ms()) / 1000)
        finally:
            for task in (*tasks, describe):
                task.cancel()
            await asyncio.gather(*tasks, describe, return_exceptions=True)
            for client in clients:
                await client.close()

    async def _exchange(self, core: LogFollower, client: KafkaClient, message: OutboundRequest) -> None:
        """Send one of the core's requests; its answer (or failure) goes back to the core."""
        address, request = message.destination.address, message.request
        timeout_ms = self._settings.request_timeout_ms
        try:
            if type(request).__name__ == "FetchRequest":
                timeout_ms += self._settings.fetch_max_wait_ms
                # bounded by the connection's own setup and ApiVersions timeouts (engine.net.connect)
                ranges = await client.api_versions(address)
                why = not_a_controller(ranges)
                if why is not None:
                    # a broker's listener (or another Kafka service): no leader to follow there, ever
                    self._watch.setup_failed(address, why)
                    answer = InboundResponse(message.correlation_id, None,
                                             f"{quorum_client.format_address(address)} is {why}")
                    core.receive(self._clock_ms(), answer)
                    self._wake.set()
                    return
                served = ranges.get(ApiKeys.FETCH)
                self._watch.connected(self._clock_ms())
                if self._trace is not None:
                    self._trace.connected()
                sent = fetch_at_version(request, served, core.high_watermark)
                if sent is None:
                    offered = f"v{served[0]}-v{served[1]}" if served else "no Fetch at all"
                    core.fail(f"controller {quorum_client.format_address(address)} offers {offered}; "
                              "attaching needs Fetch v13 to v18")
                    self._wake.set()
                    return
                request = sent
                with self._lock:
                    self._fetch_version = int(type(sent).__version__)
            response = await client.send(address, request, timeout_ms=timeout_ms, adapt=True)
            answer = InboundResponse(message.correlation_id, response)
        except AuthenticationError as err:
            core.fail(str(err))  # fatal: the same secret or certificate would be refused again
            self._wake.set()
            return
        except NetError as err:
            if isinstance(err, ConnectError):
                self._watch.setup_failed(err.address, err.why)
            answer = InboundResponse(message.correlation_id, None, str(err))
        if self._trace is not None:
            self._trace.answered()
        core.receive(self._clock_ms(), answer)
        self._wake.set()

    async def _describe_loop(self, core: LogFollower, client: KafkaClient) -> None:
        """DescribeQuorum at the leader about once a second, for the voters' and observers' columns."""
        while True:
            address = core.leader_address
            if address is not None and self.cluster_id is None:
                await self._describe_cluster(client, address)
            if address is not None:
                try:
                    response = await client.send(address, quorum_client.describe_quorum_request(), adapt=True,
                                                 timeout_ms=min(self._settings.request_timeout_ms, 5_000))
                    info = quorum_client.quorum_info(response)
                except (NetError, MetadataError):
                    info = None
                if info is not None:
                    with self._lock:
                        self._quorum = info
                    self._notify()
            await asyncio.sleep(DESCRIBE_INTERVAL_S)

    async def _describe_cluster(self, client: KafkaClient, address: Address) -> None:
        """DescribeCluster (controller endpoints, KIP-919) once, for the cluster id the tools show."""
        try:
            response = await client.send(address, quorum_client.describe_cluster_request(), adapt=True,
                                         timeout_ms=min(self._settings.request_timeout_ms, 5_000))
        except (NetError, MetadataError):
            return  # asked again next round
        if int(response.error_code) == 0 and response.cluster_id:
            with self._lock:
                self._described_cluster_id = str(response.cluster_id)
            self._notify()

    def _judge(self, core: LogFollower) -> None:
        """Before catching up: tell the watch where things stand, and stop the core if it gives up."""
        watch, now = self._watch, self._clock_ms()
        if self._caught_up:
            watch.done()
            return
        watch.progress(now, (core.leader_id, core.epoch, core.applied_offset, core.high_watermark,
                             core.download_progress[0]))
        where = status_note(core, self.bootstrap, self._caught_up, self._records_fetched, watch.reached)
        line = watch.verdict(now, where)
        if line is not None:
            core.fail(line)

    def _publish(self, core: LogFollower) -> None:
        """Hand the core's committed batches and status to the tools' side; wake them if anything changed."""
        taken = core.take()
        fetched = self._records_fetched + sum(len(batch) for batch in taken.batches)
        if self._first_high_watermark < 0 and core.high_watermark >= 0:
            self._first_high_watermark = core.high_watermark
        caught_up = self._caught_up or (self._first_high_watermark >= 0
                                        and core.applied_offset + 1 >= self._first_high_watermark)
        downloaded, size = core.download_progress
        status = AttachStatus(bootstrap=self.bootstrap, connected=core.connected, leader_id=core.leader_id,
                              leader_epoch=core.epoch if core.leader_id >= 0 else -1,
                              high_watermark=core.high_watermark, applied_offset=core.applied_offset,
                              error=core.error,
                              note=status_note(core, self.bootstrap, caught_up, fetched, self._watch.reached),
                              catching_up=not caught_up, records_fetched=fetched, snapshot_bytes=downloaded,
                              snapshot_size=size)
        with self._lock:
            if self._trace is not None:
                self._trace.published(core, taken.batches, taken.reset is not None, caught_up)
            changed = taken.reset is not None or bool(taken.batches) or status != self._status
            if taken.reset is not None:
                self._reset, self._batches = taken.reset, []
            self._batches.extend(taken.batches)
            self._records_fetched, self._caught_up = fetched, caught_up
            self._status = status
            self._lock.notify_all()
        if changed:
            self._notify()

    def _publish_error(self, error: str) -> None:
        with self._lock:
            self._status = dataclasses.replace(self._status, error=error, connected=False,
                                               note=f"stopped: {error}")
            self._lock.notify_all()
        self._notify()

    def _notify(self) -> None:
        if self._on_update is not None:
            with contextlib.suppress(Exception):  # the tool's wake-up must not end the feed
                self._on_update()


def status_note(core: LogFollower, bootstrap: str, caught_up: bool, fetched: int, reached: bool) -> str:
    """One line on where the attachment stands: connecting, catching up (with what it fetched so
    far), following, disconnected, stopped."""
    if core.error is not None:
        return f"stopped: {core.error}"
    if core.connected:
        downloading = core.downloading
        if downloading is not None:
            done, size = core.download_progress
            of = f" of {_bytes(size)}" if size >= 0 else ""
            return (f"downloading snapshot {downloading.end_offset}-{downloading.epoch} from leader "
                    f"{core.leader_id} (epoch {core.epoch}): {_bytes(done)}{of}")
        if not caught_up:
            target = f" of {core.high_watermark:,}" if core.high_watermark >= 0 else ""
            return (f"catching up with leader {core.leader_id} (epoch {core.epoch}): {fetched:,} records fetched, "
                    f"at offset {core.applied_offset + 1:,}{target}")
        return f"following leader {core.leader_id} (epoch {core.epoch})"
    last = f" (last: {core.last_failure})" if core.last_failure else ""
    if core.applied_offset < 0 and core.high_watermark < 0:
        waiting = ": reached, no quorum leader known yet" if reached and not last else ""
        return f"connecting to {bootstrap}{waiting}{last}"
    return f"disconnected, retrying (at offset {core.applied_offset + 1}){last}"


def _bytes(count: int) -> str:
    """1,234 bytes, 5.6 MB: what a person reads in a status line."""
    if count < 1_000_000:
        return f"{count:,} bytes"
    return f"{count / 1_000_000:.1f} MB"


__all__ = ["AttachError", "Attachment", "ConnectionSettings", "connection_settings", "follower_settings",
           "load_command_config", "status_note"]
