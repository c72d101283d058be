"""The recorder's wire: engine.raft.log_follower's core over engine.net's KafkaClient, on the
recorder's own asyncio loop (no thread: the recorder does nothing else); the live stream's tail
(metashell.spark.stream_follow) runs the same loop (follow_loop) on a thread of its own.

It is the live attachment's wire (metashell.live.attach: the same Fetch version choice, the same
refusal of an address that is no controller, the same fatal refusal of a login), without its
startup rules: a recorder never gives up on a quorum that does not answer, it retries with the
client's reconnect backoff for as long as it runs.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from engine.admin import quorum_client
from engine.common.api_keys import ApiKeys
from engine.common.errors import MetadataError
from engine.net.channel_security import ClientSecurity
from engine.net.errors import AuthenticationError, NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_server import DEFAULT_MAX_FRAME_BYTES
from engine.raft.log_follower import FollowerSettings, LogFollower, fetch_at_version
from engine.raft.raft_io import InboundResponse, OutboundRequest
from engine.raft.voter_set import Address
from metashell.live.attach import ConnectionSettings
from metashell.live.startup import not_a_controller

CLIENT_ID = "metashell-record"


def new_client(settings: FollowerSettings, connection: ConnectionSettings, security: ClientSecurity) -> KafkaClient:
    c = connection
    return KafkaClient(client_id=CLIENT_ID, request_timeout_ms=settings.request_timeout_ms,
                       reconnect_backoff_ms=c.reconnect_backoff_ms, reconnect_backoff_max_ms=c.reconnect_backoff_max_ms,
                       connection_setup_timeout_ms=c.setup_timeout_ms,
                       connection_setup_timeout_max_ms=c.setup_timeout_max_ms, security=security,
                       max_frame_bytes=max(DEFAULT_MAX_FRAME_BYTES, settings.snapshot_max_bytes + 65_536))


async def exchange(core: LogFollower, client: KafkaClient, message: OutboundRequest, settings: FollowerSettings,
                   clock_ms: Callable[[], int]) -> None:
    """Send one of the core's requests; its answer (or failure, in words) goes back to the core."""
    address, request = message.destination.address, message.request
    timeout_ms = settings.request_timeout_ms
    try:
        if type(request).__name__ == "FetchRequest":
            timeout_ms += settings.fetch_max_wait_ms
            ranges = await client.api_versions(address)
            why = not_a_controller(ranges)
            if why is not None:
                core.receive(clock_ms(), InboundResponse(message.correlation_id, None,
                                                         f"{quorum_client.format_address(address)} is {why}"))
                return
            served = ranges.get(ApiKeys.FETCH)
            sent = fetch_at_version(request, served, core.high_watermark)
            if sent is None:
                offered = f"v{served[0]}-v{served[1]}" if served else "no Fetch at all"
                core.fail(f"controller {quorum_client.format_address(address)} offers {offered}; "
                          "recording needs Fetch v13 to v18")
                return
            request = sent
        response = await client.send(address, request, timeout_ms=timeout_ms, adapt=True)
        answer = InboundResponse(message.correlation_id, response)
    except AuthenticationError as err:
        core.fail(str(err))  # the same secret or certificate would be refused again
        return
    except NetError as err:
        answer = InboundResponse(message.correlation_id, None, str(err))
    core.receive(clock_ms(), answer)


async def describe_cluster_id(client: KafkaClient, addresses: list[Address], timeout_ms: int) -> tuple[str | None, str]:
    """The cluster id as the first controller that answers DescribeCluster tells it (KIP-919), or
    (None, why none did)."""
    why = "no controller answered"
    for address in addresses:
        try:
            response = await client.send(address, quorum_client.describe_cluster_request(), adapt=True,
                                         timeout_ms=timeout_ms)
        except AuthenticationError:
            raise
        except (NetError, MetadataError) as err:
            why = str(err)
            continue
        if int(response.error_code) == 0 and response.cluster_id:
            return str(response.cluster_id), ""
        why = f"{quorum_client.format_address(address)} answered DescribeCluster with error {response.error_code}"
    return None, why


async def ask_cluster_id(client: KafkaClient, addresses: list[Address], settings: FollowerSettings, *,
                         stopped: Callable[[], bool], failed: Callable[[int, str], None],
                         sleep: Callable[[float], Awaitable[None]], step_s: float, max_s: float) -> str | None:
    """describe_cluster_id asked until a controller answers (a quorum down is waited for, never
    given up on): ``failed(failures so far, why)`` after each miss, then ``sleep`` a backoff
    growing by ``step_s`` up to ``max_s``; None once ``stopped()``."""
    failures = 0
    while not stopped():
        cluster_id, why = await describe_cluster_id(client, addresses, min(settings.request_timeout_ms, 5_000))
        if cluster_id is not None:
            return cluster_id
        failed(failures, why)
        failures += 1
        await sleep(min(step_s * failures, max_s))
    return None


class Exchanges:
    """The core's requests under way, each on a task of its own (a slow FetchSnapshot does not hold
    up the next Fetch to another controller): the follower loop's wire, the recorder's and the
    live stream's."""

    def __init__(self, core: LogFollower, client: KafkaClient, settings: FollowerSettings,
                 clock_ms: Callable[[], int]):
        self._core, self._client, self._settings, self._clock_ms = core, client, settings, clock_ms
        self._tasks: set[asyncio.Task] = set()

    def poll(self, now_ms: int) -> int:
        """Send what the core asks for now; when it wants to be polled next."""
        ready = self._core.poll(now_ms)
        for message in ready.messages:
            task = asyncio.create_task(exchange(self._core, self._client, message, self._settings, self._clock_ms))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return ready.next_poll_ms

    async def wait(self, wake: asyncio.Event, timeout_s: float) -> None:
        """Until an exchange ends, ``wake`` is set, or ``timeout_s`` passes."""
        await wait_any(self._tasks, wake, timeout_s)

    async def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def follow_loop(core: LogFollower, client: KafkaClient, settings: FollowerSettings, clock_ms: Callable[[], int],
                      wake: asyncio.Event, stopped: Callable[[], bool],
                      step: Callable[[Exchanges, int], int | None]) -> None:
    """The follower's loop, the recorder's and the live stream's: ``step(exchanges, now)`` polls
    the core through ``exchanges`` and takes what it handed over, saying when to step again (ms,
    on ``clock_ms``) or None to end; between steps the loop sleeps until an exchange ends,
    ``wake`` is set, or that time. Until ``stopped()``; the exchanges under way are cancelled."""
    exchanges = Exchanges(core, client, settings, clock_ms)
    try:
        while not stopped():
            wake.clear()
            wake_ms = step(exchanges, clock_ms())
            if wake_ms is None:
                return
            await exchanges.wait(wake, (wake_ms - clock_ms()) / 1000)
    finally:
        await exchanges.cancel()


def wake_from_thread(loop: asyncio.AbstractEventLoop | None, wake: asyncio.Event | None) -> None:
    """Set ``wake`` from another thread (the loop's own Event is not thread-safe); nothing when the
    loop has not started yet or has closed meanwhile (nothing waits then)."""
    if loop is not None and wake is not None and not loop.is_closed():
        try:
            loop.call_soon_threadsafe(wake.set)
        except RuntimeError:
            pass  # closed between the check and the call


async def wait_any(tasks: set[asyncio.Task], wake: asyncio.Event, timeout_s: float) -> None:
    """Until an exchange ends, ``wake`` is set, or ``timeout_s`` passes."""
    waiter = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait({*tasks, waiter}, timeout=max(0.0, timeout_s), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
