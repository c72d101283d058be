"""engine.net's KafkaServer and KafkaClient over real TCP sockets on 127.0.0.1.

Every wait is on an asyncio event or a socket; timeouts are safety nets only (SAFETY),
except in the test of the request timeout itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import struct
import threading
from typing import Any, Awaitable, Callable

import pytest

from engine.common.errors import MetadataError
from engine.records.kio_codec import ErrorCode, encode_entity, protocol_module
from engine.net.errors import NetworkError, RequestTimeoutError, UnsupportedVersionError
from engine.net.kafka_client import KafkaClient, ReconnectBackoff, request_once
from engine.net.kafka_protocol import RAFT_APIS, ApiSpec, encode_request, request_class, response_class
from engine.net.kafka_server import KafkaServer, RequestContext

SAFETY = 5.0
DQ_RESP = response_class(55, 2)


def run(coro: Awaitable[Any]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, SAFETY)
    return asyncio.run(bounded())


def describe(tag: str) -> Any:
    """A DescribeQuorum v2 request whose single topic name is ``tag`` (echoed by the handler)."""
    m = protocol_module("describe_quorum", 2, "request")
    return m.DescribeQuorumRequest(topics=(m.TopicData(topic_name=tag, partitions=()),))


def echo(request: Any) -> Any:
    m = protocol_module("describe_quorum", 2, "response")
    topics = tuple(m.TopicData(topic_name=t.topic_name, partitions=()) for t in request.topics)
    return m.DescribeQuorumResponse(error_code=ErrorCode.none, error_message=None, topics=topics, nodes=())


def tag_of(response: Any) -> str:
    return response.topics[0].topic_name


async def echo_handler(ctx: RequestContext, request: Any) -> Any:
    return echo(request)


async def serving(handler: Callable, **server_args: Any) -> tuple[KafkaServer, tuple[str, int], KafkaClient]:
    server = KafkaServer(handler, **server_args)
    address = await server.start()
    return server, address, KafkaClient(client_id="test-client", reconnect_backoff_ms=1)


async def raw_exchange(address: tuple[str, int], data: bytes) -> bytes:
    """Send raw bytes; what the server answers before it closes the connection."""
    reader, writer = await asyncio.open_connection(*address)
    writer.write(data)
    try:
        await writer.drain()
        received = await reader.read()  # until EOF: the server closed the connection
    except ConnectionResetError:
        received = b""  # closed with our bytes still unread on its side: the kernel resets instead
    writer.close()
    with contextlib.suppress(ConnectionResetError):
        await writer.wait_closed()
    return received


def one_line_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "engine.net" and r.levelno >= logging.WARNING]
    assert all("\n" not in line for line in lines)
    return lines


def test_round_trip_and_request_context() -> None:
    seen: list[RequestContext] = []

    async def handler(ctx: RequestContext, request: Any) -> Any:
        seen.append(ctx)
        if ctx.api_key == 53:  # BeginQuorumEpoch v0: header v1 request, header v0 response
            return response_class(53, 0)(error_code=ErrorCode.none, topics=())
        return echo(request)

    async def main() -> None:
        server, address, client = await serving(handler, listener_name="CONTROLLER")
        response = await client.send(address, describe("hello"))
        assert type(response) is DQ_RESP and tag_of(response) == "hello"
        begin = await client.send(address, request_class(53, 0)(cluster_id=None, topics=()))
        assert begin.error_code == ErrorCode.none
        assert server.connection_count == 1  # one pooled connection for both
        await client.close()
        await server.close()
        return address

    address = run(main())
    assert [(c.api_key, c.api_version, c.correlation_id) for c in seen] == [(55, 2, 1), (53, 0, 2)]
    assert {(c.client_id, c.listener_name, c.peer[0]) for c in seen} == {("test-client", "CONTROLLER", "127.0.0.1")}
    assert seen[0].peer[1] != address[1]


def test_pipelined_requests_complete_out_of_order_and_are_answered_in_order() -> None:
    count = 50

    async def main() -> None:
        release = {str(i): asyncio.Event() for i in range(count)}
        started: list[str] = []
        all_started = asyncio.Event()

        async def handler(ctx: RequestContext, request: Any) -> Any:
            tag = request.topics[0].topic_name
            started.append(tag)
            if len(started) == count:
                all_started.set()  # every handler runs at once: the reader never waited for one
            await release[tag].wait()
            return echo(request)

        server, address, client = await serving(handler)
        await client.api_versions(address)
        sends = [asyncio.create_task(client.send(address, describe(str(i)))) for i in range(count)]
        await all_started.wait()
        order = list(range(count))
        random.Random(7).shuffle(order)
        for i in order:  # complete the handlers in a random order, one by one
            release[str(i)].set()
            await asyncio.sleep(0)
        responses = await asyncio.gather(*sends)
        assert [tag_of(r) for r in responses] == [str(i) for i in range(count)]
        assert server.connection_count == 1
        await client.close()
        await server.close()

    run(main())


def test_server_writes_responses_in_request_order_on_the_wire() -> None:
    async def main() -> None:
        release = {tag: asyncio.Event() for tag in "abc"}

        async def handler(ctx: RequestContext, request: Any) -> Any:
            await release[request.topics[0].topic_name].wait()
            return echo(request)

        server, address, _ = await serving(handler)
        reader, writer = await asyncio.open_connection(*address)
        writer.write(b"".join(encode_request(describe(tag), cid, "raw") for cid, tag in enumerate("abc")))
        release["c"].set()
        release["b"].set()
        release["a"].set()
        ids = []
        for _ in "abc":
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            ids.append(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])
        assert ids == [0, 1, 2]
        writer.close()
        await writer.wait_closed()
        await server.close()

    run(main())


def test_api_versions_negotiation_and_unsupported_version() -> None:
    called: list[int] = []

    async def handler(ctx: RequestContext, request: Any) -> Any:
        called.append(ctx.api_key)
        return echo(request)

    async def main() -> None:
        # A peer that serves Vote only up to v1 and ApiVersions only up to v2: our v4 ApiVersions
        # gets Kafka's v0 UNSUPPORTED_VERSION answer and the client retries at v2.
        apis = {**RAFT_APIS, 52: ApiSpec(52, "vote", 0, 1), 18: ApiSpec(18, "api_versions", 0, 2)}
        server, address, client = await serving(handler, apis=apis)
        ranges = await client.api_versions(address)
        assert ranges == {k: (s.min_version, s.max_version) for k, s in apis.items()}
        vote = request_class(52, 2)(cluster_id="c", voter_id=1, topics=())
        with pytest.raises(UnsupportedVersionError) as caught:
            await client.send(address, vote)
        assert str(caught.value) == "127.0.0.1:%d cannot take vote v2 (it serves v0-v1)" % address[1]
        assert isinstance(caught.value, MetadataError)
        assert tag_of(await client.send(address, describe("still fine"))) == "still fine"
        assert called == [55] and server.connection_count == 1
        await client.close()
        await server.close()

    run(main())


def test_raw_unknown_api_versions_version_gets_a_v0_answer() -> None:
    async def main() -> None:
        server, address, _ = await serving(echo_handler)
        payload = struct.pack(">hhih", 18, 9, 77, 2) + b"me" + b"\x00" + b"\x05whatever"
        reader, writer = await asyncio.open_connection(*address)
        writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        answer = await reader.readexactly(size)
        assert answer == struct.pack(">ihihhh", 77, 35, 1, 18, 0, 4)
        writer.close()
        await writer.wait_closed()
        await server.close()

    run(main())


def test_bad_frames_close_only_their_connection(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="engine.net")
    vote = encode_request(request_class(52, 2)(cluster_id="c", voter_id=1, topics=()), 5, "x")

    async def main() -> None:
        server, address, client = await serving(echo_handler, max_frame_bytes=1000)
        await client.api_versions(address)  # a healthy connection that must survive the bad ones
        bad = {
            struct.pack(">i", 5000) + b"\x00" * 16: "frame of 5000 bytes is larger than the 1000 byte limit",
            struct.pack(">i", -3): "invalid frame size -3",
            struct.pack(">i", 12) + b"\xde\xad\xbe\xef" * 3: "is not served",
            vote[:-2] + b"\x80\x80\x80\x01\x00": "malformed vote v2 request",
            struct.pack(">ihhi", 8, 0, 9, 3): "produce v9 (api key 0) is not served",  # Kafka closes, no answer
        }
        for data, problem in bad.items():
            caplog.clear()
            assert await raw_exchange(address, data) == b""
            lines = one_line_records(caplog)
            assert len(lines) == 1 and problem in lines[0] and "closing connection from 127.0.0.1:" in lines[0]
        assert tag_of(await client.send(address, describe("alive"))) == "alive"
        fresh = KafkaClient(client_id="fresh")
        assert tag_of(await fresh.send(address, describe("new"))) == "new"
        await fresh.close()
        await client.close()
        await server.close()

    run(main())


def test_handler_exception_closes_that_connection_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="engine.net")

    async def main() -> None:
        parked = asyncio.Event()

        async def handler(ctx: RequestContext, request: Any) -> Any:
            tag = request.topics[0].topic_name
            if tag == "boom":
                raise RuntimeError("handler bug\nsecond line")
            if tag == "park":
                parked.set()
                await asyncio.Event().wait()  # a long poll ahead of the failing request
            return echo(request)

        server, address, client = await serving(handler)
        other = KafkaClient(client_id="other")
        assert tag_of(await other.send(address, describe("x"))) == "x"
        park = asyncio.create_task(client.send(address, describe("park")))
        await parked.wait()
        with pytest.raises(NetworkError, match="closed by the peer"):
            await client.send(address, describe("boom"))
        with pytest.raises(NetworkError, match="closed by the peer"):
            await park  # in flight on the same connection: failed with it
        lines = one_line_records(caplog)
        assert len(lines) == 1 and "RuntimeError: handler bug second line" in lines[0]
        assert "describe_quorum v2 (correlation id 2)" in lines[0]
        assert tag_of(await other.send(address, describe("y"))) == "y"  # other connection untouched
        assert tag_of(await client.send(address, describe("z"))) == "z"  # and a reconnect works
        await other.close()
        await client.close()
        await server.close()

    run(main())


def test_wrong_response_type_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="engine.net")

    async def handler(ctx: RequestContext, request: Any) -> Any:
        return response_class(55, 1)(error_code=ErrorCode.none, topics=())

    async def main() -> None:
        server, address, client = await serving(handler)
        with pytest.raises(NetworkError):
            await client.send(address, describe("v"))
        assert "returned DescribeQuorumResponse v1, not a describe_quorum v2 response" in one_line_records(caplog)[0]
        await client.close()
        await server.close()

    run(main())


def test_request_timeout() -> None:
    async def main() -> None:
        async def handler(ctx: RequestContext, request: Any) -> Any:
            await asyncio.Event().wait()

        server, address, client = await serving(handler)
        await client.api_versions(address)
        with pytest.raises(RequestTimeoutError, match=r"^describe_quorum v2 request to 127\.0\.0\.1:\d+ timed out "
                                                      r"after 100 ms$") as caught:
            # the outer deadline only guards against a hang: the request's own 100 ms must end it
            await asyncio.wait_for(client.send(address, describe("slow"), timeout_ms=100), 60)
        assert isinstance(caught.value, NetworkError)
        await client.close()
        await server.close()

    run(main())


def test_connection_refused_and_backoff() -> None:
    # A port bound but never listening, held for the whole test: connections to it are refused,
    # and no other process can take it meanwhile (a port closed again could be anyone's).
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    address = probe.getsockname()

    async def main() -> None:
        now_ms = [1_000.0]  # the backoff runs on this clock, not the wall's
        client = KafkaClient(client_id="c", reconnect_backoff_ms=20, reconnect_backoff_max_ms=40,
                             clock=lambda: now_ms[0])
        with pytest.raises(NetworkError, match=rf"^cannot connect to 127\.0\.0\.1:{address[1]}: "):
            await asyncio.wait_for(client.send(address, describe("x")), 60)  # a refusal, not a hang
        backoff = client.backoff(address)
        assert backoff.failures == 1 and 16 <= backoff.remaining_ms() <= 24  # 20 ms, jitter 0.2
        now_ms[0] += 24
        assert backoff.remaining_ms() == 0
        with pytest.raises(NetworkError):
            await client.send(address, describe("x"))  # the backoff is over: tried, refused again
        assert backoff.failures == 2 and 32 <= backoff.remaining_ms() <= 40  # doubled, capped at the max
        await client.close()

    try:
        run(main())
    finally:
        probe.close()


class StubRandom(random.Random):
    def __init__(self, factors: list[float]):
        super().__init__(0)
        self.factors = factors

    def uniform(self, a: float, b: float) -> float:
        assert (a, b) == (0.8, 1.2)
        return self.factors.pop(0)


def test_reconnect_backoff_growth() -> None:
    now = [1000.0]
    backoff = ReconnectBackoff(50, 1000, rng=StubRandom([1.0] * 7 + [1.2, 0.8]), clock=lambda: now[0])
    assert backoff.remaining_ms() == 0
    assert [backoff.record_failure() for _ in range(7)] == [50, 100, 200, 400, 800, 1000, 1000]
    assert backoff.remaining_ms() == 1000
    now[0] += 400
    assert backoff.remaining_ms() == 600
    assert backoff.record_failure() == 1000  # jitter above the cap is capped (Kafka caps after jitter)
    backoff.record_success()
    assert backoff.failures == 0 and backoff.remaining_ms() == 0
    assert backoff.record_failure() == 40  # 50 * 0.8
    seeded = ReconnectBackoff(50, 1000, rng=random.Random(1), clock=lambda: 0.0)
    delays = [seeded.record_failure() for _ in range(5)]
    assert all(0.8 * 50 * 2**i <= d <= 1.2 * 50 * 2**i for i, d in enumerate(delays[:4]))
    assert 640 <= delays[4] <= 960


def test_server_close_cancels_a_long_poll_and_fails_in_flight_requests() -> None:
    async def main() -> None:
        started = asyncio.Event()
        cancelled: list[str] = []

        async def handler(ctx: RequestContext, request: Any) -> Any:
            tag = request.topics[0].topic_name
            try:
                if tag == "poll-2":
                    started.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(tag)
                raise

        server, address, client = await serving(handler)
        polls = [asyncio.create_task(client.send(address, describe(f"poll-{i}"))) for i in range(3)]
        await started.wait()
        await server.close()
        results = await asyncio.gather(*polls, return_exceptions=True)
        assert all(isinstance(r, NetworkError) and "closed by the peer" in str(r) for r in results)
        assert sorted(cancelled) == ["poll-0", "poll-1", "poll-2"]
        with pytest.raises(NetworkError, match="cannot connect"):
            await client.send(address, describe("after"))
        await client.close()

    run(main())


def test_client_close_fails_in_flight_requests() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def handler(ctx: RequestContext, request: Any) -> Any:
            started.set()
            await asyncio.Event().wait()

        server, address, client = await serving(handler)
        poll = asyncio.create_task(client.send(address, describe("p")))
        await started.wait()
        await client.close()
        with pytest.raises(NetworkError, match="the client is closing"):
            await poll
        with pytest.raises(NetworkError, match="the client is closed"):
            await client.send(address, describe("p"))
        await server.close()

    run(main())


def test_request_once_from_synchronous_code() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = KafkaServer(echo_handler)
    try:
        address = asyncio.run_coroutine_threadsafe(server.start(), loop).result(SAFETY)
        assert tag_of(request_once(address, describe("cli"), timeout_ms=2000)) == "cli"
        assert encode_entity(request_once(address, describe("b"))) == encode_entity(echo(describe("b")))
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(SAFETY)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(SAFETY)
        loop.close()
