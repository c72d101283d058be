"""KafkaServer's direct path: a request taken by a plain function whose reply is written to the
socket in the very step it is given (a controller's leader answers a parked Fetch this way where
its high watermark moves), still in request order with the ordinary handlers' answers.

Every wait is on an asyncio event or a socket; SAFETY bounds a failure, it measures nothing."""

from __future__ import annotations

import asyncio
import logging
import select
import socket
import struct
from typing import Any

import pytest

from engine.net.kafka_protocol import encode_request
from engine.net.kafka_server import KafkaServer, RequestContext
from test_net_server_client import SAFETY, describe, echo, one_line_records, run, tag_of


def _frames(sock: socket.socket, count: int) -> list[int]:
    """The correlation ids of the next ``count`` response frames on a blocking socket."""
    data = b""
    ids = []
    while len(ids) < count:
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "closed by the server"
            data += chunk
        size = struct.unpack(">i", data[:4])[0]
        ids.append(struct.unpack(">i", data[4:8])[0])
        data = data[4 + size:]
    return ids


class _Direct:
    """Takes the requests tagged ``direct-*``; the test replies when it likes."""

    def __init__(self) -> None:
        self.replies: dict[str, Any] = {}
        self.requests: dict[str, Any] = {}
        self.arrived = asyncio.Event()

    def __call__(self, ctx: RequestContext, request: Any, reply: Any) -> bool:
        tag = request.topics[0].topic_name
        if not tag.startswith("direct"):
            return False
        self.replies[tag], self.requests[tag] = reply, request
        self.arrived.set()
        return True


def test_a_direct_reply_is_on_the_wire_before_the_loop_runs_again() -> None:
    async def main() -> None:
        direct = _Direct()
        server = KafkaServer(lambda ctx, request: asyncio.sleep(0, echo(request)), direct=direct)
        address = await server.start()
        sock = socket.create_connection(address)
        sock.sendall(encode_request(describe("direct-a"), 7, "raw"))
        await asyncio.wait_for(direct.arrived.wait(), SAFETY)
        direct.replies["direct-a"](echo(direct.requests["direct-a"]))
        # No await since the reply: the bytes were written in this step, not by a task later.
        readable, _, _ = select.select([sock], [], [], SAFETY)
        assert readable, "the reply waited for another step of the loop"
        assert _frames(sock, 1) == [7]
        sock.close()
        await server.close()

    run(main())


def test_direct_and_ordinary_answers_leave_in_request_order() -> None:
    async def main() -> None:
        direct = _Direct()
        release = asyncio.Event()

        async def handler(ctx: RequestContext, request: Any) -> Any:
            await release.wait()
            return echo(request)

        server = KafkaServer(handler, direct=direct)
        address = await server.start()
        reader, writer = await asyncio.open_connection(*address)
        tags = ["slow-0", "direct-1", "direct-2"]
        writer.write(b"".join(encode_request(describe(tag), cid, "raw") for cid, tag in enumerate(tags)))
        while len(direct.replies) < 2:
            direct.arrived.clear()
            await asyncio.wait_for(direct.arrived.wait(), SAFETY)
        direct.replies["direct-2"](echo(direct.requests["direct-2"]))  # answered first ...
        direct.replies["direct-1"](echo(direct.requests["direct-1"]))
        release.set()  # ... yet written after the ordinary request before them
        ids = []
        for _ in tags:
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), SAFETY))[0]
            ids.append(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])
        assert ids == [0, 1, 2]
        writer.close()
        await server.close()

    run(main())


def test_a_direct_failure_closes_that_connection_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="engine.net")

    async def main() -> None:
        direct = _Direct()
        server = KafkaServer(lambda ctx, request: asyncio.sleep(0, echo(request)), direct=direct)
        address = await server.start()
        reader, writer = await asyncio.open_connection(*address)
        writer.write(encode_request(describe("direct-boom"), 3, "raw"))
        await asyncio.wait_for(direct.arrived.wait(), SAFETY)
        direct.replies["direct-boom"](RuntimeError("core bug\nsecond line"))
        assert await asyncio.wait_for(reader.read(), SAFETY) == b""  # closed, nothing answered
        (line,) = one_line_records(caplog)
        assert "handler of describe_quorum v2 (correlation id 3) failed: RuntimeError: core bug second line" in line
        other_reader, other = await asyncio.open_connection(*address)  # the server goes on
        other.write(encode_request(describe("plain"), 4, "raw"))
        size = struct.unpack(">i", await asyncio.wait_for(other_reader.readexactly(4), SAFETY))[0]
        assert struct.unpack(">i", (await other_reader.readexactly(size))[:4])[0] == 4
        other.close()
        writer.close()
        await server.close()

    run(main())
