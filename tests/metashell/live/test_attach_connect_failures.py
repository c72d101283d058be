"""Connection failures on real sockets on 127.0.0.1, in words, and the attachment giving up on them.

Four kinds of unreachable controller: a port bound but not listening (refused), a host under
.invalid (unknown host: no name server answers for it, RFC 6761), a listener whose accept queue
is full (the SYN is dropped: the connect hangs until the setup timeout), and a listener that
never accepts nor answers (the kernel completes the handshake; ApiVersions gets no answer within
the request timeout). Each is one line in words (never asyncio's "Connect call failed (...)"
tuple); an attachment to all four stops with one line naming each. The setup timeout per attempt
follows Kafka's rule (engine.net.connect; its formula is checked against Kafka's own class in
tests/differential/test_diff_connection_backoff.py): backoff(failures in a row), capped.
Timeouts are small settings; the deadlines around the awaits are safety nets only.
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
from collections.abc import Iterator

import pytest

from engine.net.errors import ConnectError
from engine.net.kafka_client import KafkaClient
from metashell.live.attach import AttachError, Attachment

SAFETY_S = 60
UNKNOWN = ("nosuchhost.invalid", 9093)
REPR = re.compile(r"\('|Errno|Connect call failed|\)'")  # what a Python repr would leave in a line


@pytest.fixture
def refused() -> Iterator[tuple[str, int]]:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused, the port stays ours
    yield probe.getsockname()
    probe.close()


@pytest.fixture
def backlog_full() -> Iterator[tuple[str, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = server.getsockname()
    fillers = []
    for _ in range(3):  # queue full: Linux drops further SYNs, so a connect hangs
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(address)
        fillers.append(filler)
    yield address
    for sock in (*fillers, server):
        sock.close()


@pytest.fixture
def silent() -> Iterator[tuple[str, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)  # never accepted: the handshake completes, nothing ever answers
    yield server.getsockname()
    server.close()


class Fixed(random.Random):
    """Kafka's jitter pinned at a factor of 1."""

    def uniform(self, a: float, b: float) -> float:
        return 1.0


def _one_line(text: str) -> str:
    assert "\n" not in text and not REPR.search(text), text
    return text


def _connect_error(address: tuple[str, int], **client: int) -> ConnectError:
    async def main() -> ConnectError:
        async with KafkaClient(client_id="t", rng=Fixed(), **client) as kafka:
            with pytest.raises(ConnectError) as caught:
                await asyncio.wait_for(kafka.api_versions(address), SAFETY_S)
            return caught.value
    return asyncio.run(main())


def test_a_refused_connection_in_words(refused) -> None:
    err = _connect_error(refused)
    assert _one_line(str(err)) == f"cannot connect to 127.0.0.1:{refused[1]}: connection refused"
    assert (err.address, err.why) == (refused, "connection refused")


def test_an_unknown_host_in_words() -> None:
    err = _connect_error(UNKNOWN)
    # "unknown host", with the resolver's reason when it is not simply "no such name"
    assert _one_line(str(err)).startswith("cannot connect to nosuchhost.invalid:9093: unknown host")


def test_a_full_backlog_times_out_at_the_setup_timeout_which_doubles_per_failure_up_to_its_max(backlog_full) -> None:
    async def main() -> None:
        async with KafkaClient(client_id="t", rng=Fixed(), connection_setup_timeout_ms=100,
                               connection_setup_timeout_max_ms=250, reconnect_backoff_ms=0) as kafka:
            assert kafka.setup_timeout_ms(backlog_full) == 100  # backoff(0)
            for timeout_ms in (100, 200):  # backoff(0), backoff(1)
                with pytest.raises(ConnectError) as caught:
                    await asyncio.wait_for(kafka.api_versions(backlog_full), SAFETY_S)
                assert _one_line(caught.value.why) == f"timed out after {timeout_ms} ms"
            assert kafka.setup_timeout_ms(backlog_full) == 250  # 400, capped at the max
    asyncio.run(main())


def test_a_listener_that_never_answers_fails_at_the_request_timeout(silent) -> None:
    err = _connect_error(silent, request_timeout_ms=150, connection_setup_timeout_ms=5_000)
    assert _one_line(err.why) == "no ApiVersions response within 150 ms"


def test_an_attachment_to_four_unreachable_controllers_stops_with_one_line_naming_each(
        refused, backlog_full, silent) -> None:
    bootstrap = ",".join(f"{h}:{p}" for h, p in (refused, UNKNOWN, backlog_full, silent))
    attachment = Attachment(bootstrap, command_config={
        "socket.connection.setup.timeout.ms": "200", "socket.connection.setup.timeout.max.ms": "200",
        "request.timeout.ms": "300", "retry.backoff.ms": "0", "reconnect.backoff.ms": "0"})
    try:
        attachment.start()
        with pytest.raises(AttachError) as caught:
            attachment.wait_caught_up(SAFETY_S)
        line = _one_line(str(caught.value))
        assert line == attachment.status.error and attachment.status.note == f"stopped: {line}"
        assert re.fullmatch(
            rf"cannot reach any bootstrap controller: 127\.0\.0\.1:{refused[1]} \(connection refused\), "
            rf"nosuchhost\.invalid:9093 \(unknown host(?: \([^)]*\))?\), "
            rf"127\.0\.0\.1:{backlog_full[1]} \(timed out after 200 ms\), "
            rf"127\.0\.0\.1:{silent[1]} \(no ApiVersions response within 300 ms\)", line), line
    finally:
        attachment.close()
    assert not attachment.status.connected


def test_the_connection_settings_are_read_by_kafkas_names_and_refused_in_one_line() -> None:
    from engine.common.errors import ConfigError

    with pytest.raises(ConfigError, match="^--command-config: socket.connection.setup.timeout.ms must be") as err:
        Attachment("127.0.0.1:9093", command_config={"socket.connection.setup.timeout.ms": "soon"})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("err, words", [
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "unknown host"),
    (socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
     "unknown host (temporary failure in name resolution)"),
    (ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9093)"), "connection refused"),
    (ConnectionResetError(104, "Connection reset by peer"), "connection reset by the peer"),
    (OSError(113, "Connect call failed ('10.0.0.7', 9093)"), "no route to host"),
    (OSError(5, "whatever asyncio says"), "input/output error"),  # any other errno: the C library's words
    (TimeoutError(), "timed out"),
    (OSError("Multiple exceptions: [Errno 111] Connect call failed ('::1', 9093, 0, 0)"), "connection failed"),
])
def test_failure_words_never_carry_an_address_tuple_or_an_errno(err: BaseException, words: str) -> None:
    from engine.net.connect import failure_words

    assert _one_line(failure_words(err)) == words
