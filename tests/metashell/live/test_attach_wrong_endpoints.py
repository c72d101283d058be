"""Bootstrap addresses that answer, but are no controller: said in words, and given up on at once.

A kraftd broker's listener (``bootstrap.servers`` given where ``bootstrap.controllers`` was meant)
answers ApiVersions without the controller's Raft APIs: the attachment names it as a broker and
stops without waiting for a stall, alone or next to a refused port; next to a real controller it
attaches there. Apache Kafka's broker is checked the same way in test_kafka_live_attach.py.

Peers that do not speak Kafka's protocol at all, on 127.0.0.1: an HTTP server (http.server in a
thread: "HTTP" read as a frame size would be 1,213,486,160 bytes) and servers that answer with
bytes no Kafka peer sends (seeded random bytes, a negative size, a frame cut short, a frame that
never comes, an answer to another request). Each is one line in words, a failed connection setup
(ConnectError), and an attachment to such peers alone stops at once naming each. Deadlines are
safety nets only.
"""

from __future__ import annotations

import asyncio
import http.server
import random
import re
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.net.errors import ConnectError
from engine.net.connect import not_kafka_words
from engine.net.kafka_client import KafkaClient
from engine.server.broker_node import BrokerNode
from engine.server.broker_settings import load_broker_settings
from metashell.live.attach import AttachError, Attachment
from metashell.live.startup import not_a_controller
from tests.engine.server.test_broker_node import bootstrap_of, formatted_broker, registration
from tests.node_quorum import start_quorum, wait_until
from tests.metashell.live.test_live_attach import in_loop

SAFETY_S = 60
REPR = re.compile(r"\('|Errno|Connect call failed|\)'|b'|b\"")
BROKER_WORDS = "a broker, not a controller: use the bootstrap.controllers addresses"
QUICK = {"socket.connection.setup.timeout.ms": "2000", "request.timeout.ms": "2000", "retry.backoff.ms": "0",
         "reconnect.backoff.ms": "0"}


def _one_line(text: str) -> str:
    assert "\n" not in text and not REPR.search(text), text
    return text


def _connect_error(address: tuple[str, int], **client: int) -> ConnectError:
    async def main() -> ConnectError:
        async with KafkaClient(client_id="t", **client) as kafka:
            with pytest.raises(ConnectError) as caught:
                await asyncio.wait_for(kafka.api_versions(address), SAFETY_S)
            return caught.value
    return asyncio.run(main())


def _gives_up(bootstrap: str, **config: str) -> str:
    """The one line an attachment to ``bootstrap`` stops with (it must stop, not catch up)."""
    attachment = Attachment(bootstrap, command_config={**QUICK, **config})
    try:
        attachment.start()
        with pytest.raises(AttachError) as caught:
            attachment.wait_caught_up(SAFETY_S)
        line = _one_line(str(caught.value))
        assert line == attachment.status.error
        return line
    finally:
        attachment.close()


# -- peers that are not Kafka ------------------------------------------------------------------


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # no lines on the test's stderr
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, int]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()
    thread.join()


class Answering:
    """A TCP server on 127.0.0.1 that reads a request and writes ``answer``, then closes (or, with
    ``hold``, keeps the connection open until the client closes it)."""

    def __init__(self, answer: bytes, hold: bool = False):
        self.answer, self.hold = answer, hold
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = self.server.getsockname()[:2]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return  # closed
            with conn:
                if conn.recv(65536):
                    conn.sendall(self.answer)
                    if self.hold:
                        while conn.recv(65536):
                            pass

    def close(self) -> None:
        # shutdown wakes the thread's accept() with an error (close alone would not, on Linux)
        self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join(SAFETY_S)


def _random_bytes(seed: int) -> bytes:
    return random.Random(seed).randbytes(512)


NOT_KAFKA = "it answered something that is not Kafka's protocol"
ANSWERS = {
    # the seeds' first four bytes: an absurd size, a negative one
    "random-seed-2": (_random_bytes(2), False, rf"{NOT_KAFKA} \(a frame of [\d,]+ bytes\)"),
    "random-seed-3": (_random_bytes(3), False, rf"{NOT_KAFKA} \(a frame size of -[\d,]+\)"),
    "cut-short": (struct.pack(">i", 100) + b"\0\0\0\0" + b"x" * 10, False,
                  rf"{NOT_KAFKA} \(18 bytes, then it closed the connection\)"),
    "never-finished": (struct.pack(">i", 100) + b"abc", True,
                       rf"{NOT_KAFKA} \(a frame of 100 bytes announced, not sent within 500 ms\)"),
    "another-request's-answer": (struct.pack(">ii", 4, 77), False,
                                 rf"{NOT_KAFKA} \(response correlation id 77 does not match .*\)"),
}


def test_the_seeds_cover_an_absurd_and_a_negative_size() -> None:
    assert struct.unpack(">i", _random_bytes(2)[:4])[0] > 104857600
    assert struct.unpack(">i", _random_bytes(3)[:4])[0] < 0


def test_pythons_http_server_is_said_to_answer_in_html(http_server) -> None:
    # it takes our frame for an HTTP/0.9 request line and answers an error page without a status line
    err = _connect_error(http_server)
    assert _one_line(str(err)) == \
        f"cannot connect to 127.0.0.1:{http_server[1]}: it answered in HTML (an HTTP server?), not Kafka's protocol"


def test_an_http_1_1_answer_is_said_to_be_http() -> None:
    server = Answering(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    try:
        err = _connect_error(server.address)
    finally:
        server.close()
    assert _one_line(str(err)) == \
        f"cannot connect to 127.0.0.1:{server.address[1]}: it answered in HTTP, not Kafka's protocol"


@pytest.mark.parametrize("case", list(ANSWERS))
def test_bytes_that_are_not_kafkas_protocol_are_said_so(case: str) -> None:
    answer, hold, words = ANSWERS[case]
    server = Answering(answer, hold)
    try:
        err = _connect_error(server.address, request_timeout_ms=500)
    finally:
        server.close()
    assert re.fullmatch(words, _one_line(err.why)), err.why


def test_the_words_of_a_first_frame_size() -> None:
    assert not_kafka_words(b"HTTP") == "it answered in HTTP, not Kafka's protocol"
    assert not_kafka_words(b"<!DO") == "it answered in HTML (an HTTP server?), not Kafka's protocol"
    assert not_kafka_words(b"SSH-") == 'it answered in text starting "SSH-", not Kafka\'s protocol'
    assert not_kafka_words(b"\x7f\0\0\0") == f"{NOT_KAFKA} (a frame of 2,130,706,432 bytes)"
    assert not_kafka_words(b"\xff\xff\xff\xfe") == f"{NOT_KAFKA} (a frame size of -2)"


def test_an_attachment_to_peers_that_are_not_kafka_stops_at_once_naming_each(http_server) -> None:
    noise, http = Answering(_random_bytes(2)), Answering(b"HTTP/1.0 400 Bad Request\r\n\r\n")
    try:
        line = _gives_up(f"127.0.0.1:{http_server[1]},127.0.0.1:{http.address[1]},127.0.0.1:{noise.address[1]}")
    finally:
        noise.close()
        http.close()
    assert line == (
        f"cannot reach any bootstrap controller: 127.0.0.1:{http_server[1]} (it answered in HTML (an HTTP server?), "
        f"not Kafka's protocol), 127.0.0.1:{http.address[1]} (it answered in HTTP, not Kafka's protocol), "
        f"127.0.0.1:{noise.address[1]} ({NOT_KAFKA} (a frame of 1,940,504,308 bytes))")


# -- a broker's listener -------------------------------------------------------------------------


def test_what_tells_a_controller_from_a_broker() -> None:
    assert not_a_controller({1: (0, 17), 3: (0, 12), 52: (0, 2), 59: (0, 1)}) is None  # a combined node's controller
    assert not_a_controller({1: (0, 17), 3: (0, 12), 55: (0, 2), 60: (0, 2)}) == BROKER_WORDS
    assert not_a_controller({18: (0, 4)}) == "not a controller: its ApiVersions lists none of the Raft APIs"


@in_loop
async def test_a_kraftd_brokers_port_is_named_as_a_broker_and_given_up_on_at_once(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1)
    broker = None
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))  # bound, never listening
    try:
        config = formatted_broker(tmp_path / "broker", bootstrap_of(configs))
        broker = BrokerNode(load_broker_settings(config))
        await broker.start()
        await wait_until(lambda: registration(controller) is not None, SAFETY_S, "the broker registered")
        at = f"127.0.0.1:{broker.servers[0].address[1]}"
        line = await asyncio.to_thread(_gives_up, at)
        assert line == f"no controller among the bootstrap addresses: {at} ({BROKER_WORDS})"
        down = f"127.0.0.1:{refused.getsockname()[1]}"
        line = await asyncio.to_thread(_gives_up, f"{at},{down}")
        assert line == \
            f"no controller among the bootstrap addresses: {at} ({BROKER_WORDS}), {down} (connection refused)"
        # next to a controller, the broker is passed over and the controller attached to
        host, port = controller.driver.address
        attachment = Attachment(f"{at},{host}:{port}", command_config=QUICK)
        try:
            attachment.start()
            update = await asyncio.to_thread(attachment.wait_caught_up, SAFETY_S)
            assert update.status.error is None and update.status.leader_id == controller.settings.node_id
        finally:
            await asyncio.to_thread(attachment.close)
    finally:
        refused.close()
        if broker is not None:
            await broker.stop()
        await controller.stop()
