"""Opening a TCP connection as Kafka's NetworkClient does, and saying in words why one failed.

Kafka bounds each connection's setup (resolving, the TCP connect, and for TLS or SASL the
handshake and the login: all that happens while ClusterConnectionStates holds the node in
CONNECTING) by ``socket.connection.setup.timeout.ms``, and after every failed setup in a row it
doubles that timeout up to ``socket.connection.setup.timeout.max.ms``, each with a jitter of
±20 % (``ExponentialBackoff(timeout, 2, max, 0.2)``, attempt n waits ``backoff(n)``, the first
``backoff(0)``). Between two attempts it waits ``reconnect.backoff.ms``, doubled per failure up
to ``reconnect.backoff.max.ms`` with the same jitter. ``kafka_backoff`` is that formula.

``failure_words`` turns what the socket layer raised into words an operator reads ("connection
refused", "unknown host"): never asyncio's "Connect call failed ('127.0.0.1', 9093)".
``not_kafka_words`` names what a peer that is no Kafka peer answered (HTTP, text, an absurd size).
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import random
import socket

from engine.net.errors import ConnectError

Address = tuple[str, int]
MULTIPLIER = 2
JITTER = 0.2
# CommonClientConfigs' defaults
SETUP_TIMEOUT_MS = 10_000  # socket.connection.setup.timeout.ms
SETUP_TIMEOUT_MAX_MS = 30_000  # socket.connection.setup.timeout.max.ms
RECONNECT_BACKOFF_MS = 50  # reconnect.backoff.ms
RECONNECT_BACKOFF_MAX_MS = 1_000  # reconnect.backoff.max.ms

_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset by the peer",
    errno.ECONNABORTED: "connection aborted",
    errno.EPIPE: "connection closed by the peer",
    errno.ETIMEDOUT: "timed out",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
    errno.EADDRNOTAVAIL: "address not available",
}
_UNKNOWN_HOST = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


def kafka_backoff(attempts: int, initial_ms: float, max_ms: float, rng: random.Random,
                  multiplier: int = MULTIPLIER, jitter: float = JITTER) -> int:
    """Kafka's ExponentialBackoff.backoff(attempts): ``initial * multiplier**attempts`` (the
    exponent capped where the term reaches ``max``) times a jitter uniform in [1-j, 1+j], truncated
    to whole ms and never above ``max``; a ``max`` at or below ``initial`` is a constant ``max``
    with no jitter."""
    initial_ms = min(max_ms, initial_ms)
    exp_max = math.log(max_ms / max(initial_ms, 1)) / math.log(multiplier) if max_ms > initial_ms else 0.0
    if exp_max == 0:
        return int(initial_ms)
    term = initial_ms * multiplier ** min(attempts, exp_max)
    factor = rng.uniform(1 - jitter, 1 + jitter) if jitter > 0 else 1.0
    return int(min(int(factor * term), max_ms))


def failure_words(err: BaseException) -> str:
    """Why a connect, read or write failed, in words (no errno numbers, no address tuples)."""
    if isinstance(err, socket.gaierror):
        if err.errno in _UNKNOWN_HOST:
            return "unknown host"
        detail = (err.strerror or "").strip().rstrip(".")
        return f"unknown host ({detail[:1].lower()}{detail[1:]})" if detail else "unknown host"
    if isinstance(err, TimeoutError) and not err.errno:
        return "timed out"
    if isinstance(err, OSError) and err.errno:
        words = _WORDS.get(err.errno)
        if words is None:
            text = os.strerror(err.errno)
            words = text[:1].lower() + text[1:]
        return words
    if isinstance(err, (asyncio.IncompleteReadError, EOFError)):
        return "connection closed by the peer"
    return "connection failed"


def not_kafka_words(prefix: bytes) -> str:
    """What a peer answered, in words, when its first four bytes are no frame size: HTTP (an HTTP
    response's status line starts with "HTTP"; Python's http.server takes our bytes for an HTTP/0.9
    request and answers an HTML page without one), other text, else the size they would announce."""
    if prefix == b"HTTP":
        return "it answered in HTTP, not Kafka's protocol"
    if prefix.lower() in (b"<!do", b"<htm"):
        return "it answered in HTML (an HTTP server?), not Kafka's protocol"
    if all(0x20 < byte < 0x7F for byte in prefix):
        return f'it answered in text starting "{prefix.decode("ascii")}", not Kafka\'s protocol'
    size = int.from_bytes(prefix, "big", signed=True)
    what = f"a frame of {size:,} bytes" if size >= 0 else f"a frame size of {size:,}"
    return f"it answered something that is not Kafka's protocol ({what})"


def _unique(infos: list) -> list[Address]:
    seen: list[Address] = []
    for _, _, _, _, sockaddr in infos:
        where = (str(sockaddr[0]), int(sockaddr[1]))
        if where not in seen:
            seen.append(where)
    return seen


async def open_tcp(address: Address) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to ``address``: the host resolved, then each of its addresses tried in
    turn. Raises ConnectError naming the address and why in words (the caller bounds the time)."""
    host, port = address[0], int(address[1])
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise ConnectError(address, failure_words(err)) from None
    failures: list[str] = []
    for ip, ip_port in _unique(infos) or [(host, port)]:
        try:
            return await asyncio.open_connection(ip, ip_port)
        except OSError as err:
            words = failure_words(err)
            if words not in failures:
                failures.append(words)
    raise ConnectError(address, " / ".join(failures) or "no address")


__all__ = ["RECONNECT_BACKOFF_MAX_MS", "RECONNECT_BACKOFF_MS", "SETUP_TIMEOUT_MAX_MS", "SETUP_TIMEOUT_MS",
           "failure_words", "kafka_backoff", "not_kafka_words", "open_tcp"]
