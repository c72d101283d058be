"""An asyncio Kafka protocol client: one pooled, pipelined connection per address.

Each new connection first negotiates ApiVersions (as Kafka's NetworkClient does) and
remembers the peer's version ranges, so a request the peer cannot read fails here
with UnsupportedVersionError instead of closing the connection on the far side.
Responses arrive in request order; each is matched to its request by correlation id.
A request timeout drops the connection (Kafka does the same: a late response would
otherwise sit in the pipeline), and every failure makes the next connect to that
address wait an exponential backoff.

Connection setup (engine.net.connect): resolving and the TCP connect are bounded by the setup
timeout, Kafka's ``socket.connection.setup.timeout.ms`` doubled after each failed setup in a row up
to ``socket.connection.setup.timeout.max.ms`` (with jitter), and the TLS handshake by what is left
of it; ApiVersions (and SASL) by the request timeout. A setup that fails raises ConnectError with
the address and why in words. Without setup timeouts given, the request timeout bounds the setup.
A peer that answers ApiVersions with something no Kafka peer sends (HTTP, text, an absurd frame
size, a frame cut short) fails the setup too, saying what it answered (connect.not_kafka_words).

Security (``ClientSecurity``): TLS is started on the connected TCP stream (so a refused connect stays a
NetworkError with backoff, while a handshake that fails is an AuthenticationError naming the address and
OpenSSL's reason); SASL runs after ApiVersions, as Kafka's SaslClientAuthenticator does. A refused login
is an AuthenticationError too: retrying the same credentials cannot help, so callers report it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import ssl
import time
from typing import Any, Callable

from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import ErrorCode
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity
from engine.net.connect import failure_words, kafka_backoff, not_kafka_words, open_tcp
from engine.net.errors import (
    AuthenticationError, ConnectError, NetError, NetworkError, ProtocolError, RequestTimeoutError,
    UnsupportedVersionError,
)
from engine.net.kafka_protocol import (
    API_VERSIONS_SPEC, api_name, decode_response_frame, encode_request, frame_size,
    peek_correlation_id, peer_ranges, request_class, response_class,
)
from engine.net.message_versions import convert_message, shared_version
from engine.net.kafka_server import DEFAULT_MAX_FRAME_BYTES, format_address
from engine.net.sasl_authenticator import authenticate_client
from engine.net.tls_channel import handshake_failure, start_tls

Address = tuple[str, int]
SOFTWARE_NAME = "metashell"
SOFTWARE_VERSION = "0.1.0"


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class ReconnectBackoff:
    """Kafka's reconnect backoff for one address (ExponentialBackoff, multiplier 2, jitter 0.2).

    The n-th failure in a row (since the last successful connect) makes the next connect
    wait ``min(base * 2**(n-1) * jitter, max)`` ms, jitter uniform in [0.8, 1.2].
    """

    def __init__(self, base_ms: float, max_ms: float, *, rng: random.Random | None = None,
                 clock: Callable[[], float] = monotonic_ms, jitter: float = 0.2):
        self.base_ms = min(base_ms, max_ms)
        self.max_ms = max_ms
        self.jitter = jitter
        self.rng = rng or random.Random()
        self.clock = clock
        self.failures = 0
        self._ready_at = float("-inf")

    def backoff_ms(self, failures: int) -> float:
        """The wait after ``failures`` failures in a row (0 when there were none): Kafka's
        ``backoff(failures - 1)`` (ClusterConnectionStates.updateReconnectBackoff)."""
        if failures <= 0:
            return 0.0
        return float(kafka_backoff(failures - 1, self.base_ms, self.max_ms, self.rng, jitter=self.jitter))

    def record_failure(self) -> float:
        """Note a failed connect or a dropped connection; returns the wait it imposes."""
        self.failures += 1
        delay = self.backoff_ms(self.failures)
        self._ready_at = self.clock() + delay
        return delay

    def record_success(self) -> None:
        self.failures = 0
        self._ready_at = float("-inf")

    def remaining_ms(self) -> float:
        """How long the next connect must still wait."""
        return max(0.0, self._ready_at - self.clock())


class _Channel:
    """One TCP connection with its in-flight requests, in the order they were sent."""

    def __init__(self, client: "KafkaClient", address: Address, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter):
        self.client = client
        self.address = address
        self.name = format_address(address)
        self.reader = reader
        self.writer = writer
        self.pending: dict[int, tuple[int, int, asyncio.Future]] = {}  # dicts keep insertion (= send) order
        self.next_id = 0
        self.ranges: dict[int, tuple[int, int]] = {}
        self.closed_reason: str | None = None
        # TLS 1.3 finishes the client's handshake before the server has checked the client's certificate,
        # so a refused certificate arrives as an alert on the first read: kept to report it as such.
        self.tls_failure: str | None = None
        self.peer_closed = False
        self.speaks_tls = False  # a PLAINTEXT channel whose peer answered in TLS records
        self.not_kafka: str | None = None  # before ApiVersions: what the peer answered instead, in words
        self.received = 0  # bytes read of the frame being read (a peer that stops mid-frame)
        self.announced: int | None = None  # the size of the frame being read, once its prefix came
        self.read_task = asyncio.create_task(self._read_loop(), name=f"kafka client reader {self.name}")

    @property
    def open(self) -> bool:
        return self.closed_reason is None

    def submit(self, request: Any) -> asyncio.Future:
        """Write one request frame; the future gets its response."""
        if self.closed_reason is not None:
            raise NetworkError(f"connection to {self.name} {self.closed_reason}")
        correlation_id = self.next_id
        self.next_id = (correlation_id + 1) & 0x7FFFFFFF  # an int32 on the wire
        cls = type(request)
        frame = encode_request(request, correlation_id, self.client.client_id)
        future = asyncio.get_running_loop().create_future()
        self.pending[correlation_id] = (cls.__api_key__, cls.__version__, future)
        self.writer.write(frame)
        return future

    async def call(self, request: Any) -> Any:
        future = self.submit(request)
        try:
            await self.writer.drain()
        except OSError as err:
            self.peer_closed = isinstance(err, (ConnectionResetError, BrokenPipeError)) or self.peer_closed
            self.close(f"failed: {failure_words(err)}")  # fails ``future`` too
        return await future

    async def _read_loop(self) -> None:
        max_bytes = self.client.max_frame_bytes
        try:
            while True:
                self.received, self.announced = 0, None
                prefix = await self.reader.readexactly(4)
                self.received = 4
                try:
                    size = frame_size(prefix, max_bytes)
                except ProtocolError:
                    tls_record = prefix[0] in (0x15, 0x16) and prefix[1] == 3 and prefix[2] <= 4  # alert/handshake
                    if tls_record and not self.client.security.protocol.uses_tls:
                        # a TLS record (an alert or a handshake) where a frame size should be: a TLS
                        # listener refusing our plain bytes, not a 350 MB response
                        self.speaks_tls = True
                        raise ProtocolError("the peer answered with a TLS record: it is a TLS listener") from None
                    if not self.ranges:
                        # before ApiVersions was answered an absurd size is no Kafka frame at all: an
                        # HTTP status line's "HTTP" reads as 1213486160 bytes
                        self.not_kafka = not_kafka_words(prefix)
                        raise ProtocolError(self.not_kafka) from None
                    raise
                self.announced = size
                payload = await self.reader.readexactly(size)
                self.announced = None
                correlation_id = peek_correlation_id(payload)
                if not self.pending:
                    raise ProtocolError(f"unexpected response with correlation id {correlation_id}")
                oldest = next(iter(self.pending))
                if correlation_id != oldest:
                    mismatch = f"response correlation id {correlation_id} does not match the oldest request's {oldest}"
                    if not self.ranges:
                        self.not_kafka = f"it answered something that is not Kafka's protocol ({mismatch})"
                    raise ProtocolError(mismatch)
                api_key, version, future = self.pending.pop(correlation_id)
                try:
                    _, response = decode_response_frame(payload, api_key, version)
                except ProtocolError as err:
                    if api_key == ApiKeys.API_VERSIONS and not self.ranges:
                        self.not_kafka = f"it answered something that is not Kafka's protocol ({err})"
                    if not future.done():
                        future.set_exception(err)
                    raise
                if not future.done():
                    future.set_result(response)
        except asyncio.IncompleteReadError as err:
            self.peer_closed = True
            received = self.received + len(err.partial)
            if received and not self.ranges:
                # a few bytes and a hang-up where ApiVersions' answer should be
                self.not_kafka = (f"it answered something that is not Kafka's protocol ({received:,} "
                                  f"byte{'s' if received != 1 else ''}, then it closed the connection)")
            self.close("closed by the peer")
        except ProtocolError as err:
            self.close(f"closed: {err}")
        except ssl.SSLError as err:
            self.tls_failure = handshake_failure(err)
            self.close(f"failed: {self.tls_failure}")
        except (ConnectionResetError, BrokenPipeError) as err:
            # a peer that hung up with a reset (unread data in its buffer) closed the connection all
            # the same: what it means is judged as for a clean close (a TLS listener refusing our
            # certificate after the handshake, whichever way the race went)
            self.peer_closed = True
            self.close(f"failed: {failure_words(err)}")
        except OSError as err:
            self.close(f"failed: {failure_words(err)}")

    def close(self, reason: str, *, failure: bool = True) -> None:
        """Close once: fail every in-flight request with NetworkError; a failure also starts a backoff."""
        if self.closed_reason is not None:
            return
        self.closed_reason = reason
        for _, _, future in self.pending.values():
            if not future.done():
                future.set_exception(NetworkError(f"connection to {self.name} {reason}"))
        self.pending.clear()
        self.writer.close()
        if asyncio.current_task() is not self.read_task:
            self.read_task.cancel()
        self.client._channel_closed(self, failure)


TLS_CLOSE_WAIT_S = 0.05  # how long close() waits for a TLS peer's close_notify (see _closed)


class KafkaClient:
    """Sends kio requests to Kafka-protocol peers and returns their responses."""

    def __init__(self, *, client_id: str, request_timeout_ms: int = 2000, reconnect_backoff_ms: int = 50,
                 reconnect_backoff_max_ms: int = 1000, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 rng: random.Random | None = None, clock: Callable[[], float] = monotonic_ms,
                 security: ClientSecurity = PLAINTEXT_CLIENT, connection_setup_timeout_ms: int | None = None,
                 connection_setup_timeout_max_ms: int | None = None):
        """``connection_setup_timeout_ms`` / ``_max_ms``: Kafka's socket.connection.setup.timeout.ms and
        .max.ms (None: the request timeout, constant)."""
        if security.protocol.uses_tls and security.ssl_context is None:
            raise ValueError(f"{security.protocol.name} needs a TLS context")
        self.client_id = client_id
        self.security = security
        self.request_timeout_ms = request_timeout_ms
        self.max_frame_bytes = max_frame_bytes
        self.rng = rng or random.Random()
        self._backoff = functools.partial(ReconnectBackoff, reconnect_backoff_ms, reconnect_backoff_max_ms,
                                          rng=self.rng, clock=clock)
        setup_ms = request_timeout_ms if connection_setup_timeout_ms is None else connection_setup_timeout_ms
        self.connection_setup_timeout_ms = setup_ms
        self.connection_setup_timeout_max_ms = (setup_ms if connection_setup_timeout_max_ms is None
                                                else connection_setup_timeout_max_ms)
        self._setup_failures: dict[Address, int] = {}  # failed setups in a row, per address
        self._backoffs: dict[Address, ReconnectBackoff] = {}
        self._channels: dict[Address, _Channel] = {}
        self._connecting: dict[Address, asyncio.Task] = {}
        self._closed = False

    def setup_timeout_ms(self, address: Address) -> int:
        """The next setup's timeout for ``address``: Kafka's ``backoff(failed setups in a row)``
        (ClusterConnectionStates.updateConnectionSetupTimeout), a fresh jitter each time."""
        failures = self._setup_failures.get((address[0], int(address[1])), 0)
        return kafka_backoff(failures, self.connection_setup_timeout_ms, self.connection_setup_timeout_max_ms,
                             self.rng)

    def backoff(self, address: Address) -> ReconnectBackoff:
        address = (address[0], int(address[1]))
        if address not in self._backoffs:
            self._backoffs[address] = self._backoff()
        return self._backoffs[address]

    async def send(self, address: Address, request: Any, timeout_ms: int | None = None, *,
                   adapt: bool = False) -> Any:
        """The peer's response to ``request``; the timeout covers connecting too. With ``adapt``,
        a peer that lacks the request's version is asked in the newest older version it serves
        (as Kafka's clients pick a version), and its answer comes back as the response class of
        the request's version.

        Raises NetworkError (unreachable or connection lost), RequestTimeoutError,
        UnsupportedVersionError (before sending) or ProtocolError (a malformed response).
        """
        cls = type(request)
        what = f"{api_name(getattr(cls, '__api_key__', -1))} v{getattr(cls, '__version__', '?')}"
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        channel: _Channel | None = None
        try:
            async with asyncio.timeout(timeout_ms / 1000.0):
                channel = await self._channel(address)
                sent = self._fit(channel, request, adapt)
                response = await channel.call(sent)
                if sent is not request:
                    response = convert_message(response, response_class(cls.__api_key__, cls.__version__))
                return response
        except TimeoutError:
            if channel is not None:
                channel.close(f"closed: {what} request timed out after {timeout_ms} ms")
            raise RequestTimeoutError(f"{what} request to {format_address(address)} timed out after "
                                      f"{timeout_ms} ms") from None

    async def api_versions(self, address: Address, timeout_ms: int | None = None) -> dict[int, tuple[int, int]]:
        """api key -> (min, max) versions the peer serves (connecting if needed). Without
        ``timeout_ms``, the connection's own bounds (the setup timeout, then the request timeout
        for ApiVersions) are the only ones: a failed setup is a ConnectError saying which."""
        if timeout_ms is None:
            return dict((await self._channel(address)).ranges)
        try:
            async with asyncio.timeout(timeout_ms / 1000.0):
                return dict((await self._channel(address)).ranges)
        except TimeoutError:
            raise RequestTimeoutError(f"connecting to {format_address(address)} timed out after "
                                      f"{timeout_ms} ms") from None

    def _fit(self, channel: _Channel, request: Any, adapt: bool) -> Any:
        """``request``, or (``adapt``) the same request in an older version the peer serves."""
        api_key, version = type(request).__api_key__, type(request).__version__
        served = channel.ranges.get(api_key)
        if served is not None and served[0] <= version <= served[1]:
            return request
        older = shared_version(api_key, version, served) if adapt else None
        if older is not None:
            with contextlib.suppress(TypeError):  # a field the older version needs and ours lacks
                return convert_message(request, request_class(api_key, older))
        serves = f"it serves v{served[0]}-v{served[1]}" if served else "it does not serve that api"
        raise UnsupportedVersionError(f"{channel.name} cannot take {api_name(api_key)} v{version} ({serves})")

    async def _channel(self, address: Address) -> _Channel:
        if self._closed:
            raise NetworkError("the client is closed")
        address = (address[0], int(address[1]))
        channel = self._channels.get(address)
        if channel is not None and channel.open:
            return channel
        task = self._connecting.get(address)
        if task is None:
            # One connect per address, shared by every sender; shielded so that one sender's
            # timeout does not abort it for the others.
            task = asyncio.create_task(self._connect(address), name=f"kafka connect {format_address(address)}")
            self._connecting[address] = task
            task.add_done_callback(functools.partial(self._connect_done, address))
        return await asyncio.shield(task)

    def _connect_done(self, address: Address, task: asyncio.Task) -> None:
        self._connecting.pop(address, None)
        if not task.cancelled():
            task.exception()  # retrieved: the senders awaiting it (if any are left) re-raise it

    async def _connect(self, address: Address) -> _Channel:
        name = format_address(address)
        backoff = self.backoff(address)
        wait_ms = backoff.remaining_ms()
        if wait_ms > 0:
            await asyncio.sleep(wait_ms / 1000.0)
        setup_ms = self.setup_timeout_ms(address)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + setup_ms / 1000.0
        try:
            async with asyncio.timeout_at(deadline):
                reader, writer = await open_tcp(address)
        except (ConnectError, TimeoutError) as err:
            backoff.record_failure()
            self._setup_failures[address] = self._setup_failures.get(address, 0) + 1
            if isinstance(err, ConnectError):
                raise
            raise ConnectError(address, f"timed out after {setup_ms} ms") from None
        context = self.security.ssl_context if self.security.protocol.uses_tls else None
        if context is not None:
            try:
                await start_tls(writer, context, max(1.0, (deadline - loop.time()) * 1000.0),
                                server_hostname=address[0] if context.check_hostname else None)
            except (OSError, EOFError, TimeoutError) as err:
                writer.close()
                backoff.record_failure()
                self._setup_failures[address] = self._setup_failures.get(address, 0) + 1
                raise AuthenticationError(f"cannot connect to {name}: {handshake_failure(err)}") from None
            except BaseException:
                writer.close()
                raise
        channel = _Channel(self, address, reader, writer)
        try:
            async with asyncio.timeout(self.request_timeout_ms / 1000.0):
                await self._negotiate(channel)
                if self.security.protocol.uses_sasl:
                    await authenticate_client(channel.call, channel.ranges, self.security, name)
        except TimeoutError:
            step = "SASL authentication" if channel.ranges else "ApiVersions response"
            announced = channel.announced if not channel.ranges else None
            channel.close(f"closed: no {step}")
            if announced is not None:
                # a size came, never its frame: a peer speaking something else, waiting for more from us
                raise ConnectError(address, f"it answered something that is not Kafka's protocol (a frame of "
                                            f"{announced:,} bytes announced, not sent within "
                                            f"{self.request_timeout_ms} ms)") from None
            raise ConnectError(address, f"no {step} within {self.request_timeout_ms} ms") from None
        except NetError as err:
            channel.close(f"closed: {err}")
            if isinstance(err, AuthenticationError):
                raise
            if channel.tls_failure is not None:
                raise AuthenticationError(f"cannot connect to {name}: {channel.tls_failure}") from None
            if context is not None and channel.peer_closed and not channel.ranges:
                # asyncio's TLS server drops the connection without an alert when it refuses our
                # certificate, so a TLS peer that hangs up before answering ApiVersions most likely did.
                raise AuthenticationError(f"cannot connect to {name}: the peer closed the connection after the "
                                          f"TLS handshake (did it refuse our certificate?)") from None
            if channel.not_kafka is not None:
                raise ConnectError(address, channel.not_kafka) from None
            if channel.speaks_tls:
                raise AuthenticationError(f"cannot connect to {name}: it is a TLS listener and we are not using "
                                          f"TLS (set security.protocol to SSL or SASL_SSL)") from None
            if context is None and channel.peer_closed and not channel.ranges:
                # A TLS listener takes our ApiVersions for a bad handshake and hangs up without a word.
                raise ConnectError(address, "the peer closed the connection before answering ApiVersions (is it "
                                            "a TLS listener? set security.protocol to SSL or SASL_SSL)") from None
            raise ConnectError(address, str(err).removeprefix(f"connection to {name} ")) from None
        except BaseException:
            channel.close("closed: connect cancelled", failure=False)
            raise
        backoff.record_success()
        self._setup_failures.pop(address, None)
        self._channels[address] = channel
        return channel

    async def _negotiate(self, channel: _Channel) -> None:
        version = API_VERSIONS_SPEC.max_version
        while True:
            response = await channel.call(self._api_versions_request(version))
            if response.error_code == ErrorCode.none:
                channel.ranges = peer_ranges(response)
                return
            if response.error_code != ErrorCode.unsupported_version or version == 0:
                raise NetworkError(f"{channel.name} refused ApiVersions v{version}: "
                                   f"{ErrorCode(response.error_code).name.upper()}")
            # Like Kafka's NetworkClient: retry at the highest ApiVersions version the peer listed.
            peer = peer_ranges(response).get(ApiKeys.API_VERSIONS, (0, 0))
            version = max(0, min(peer[1], version - 1))

    @staticmethod
    def _api_versions_request(version: int) -> Any:
        cls = request_class(ApiKeys.API_VERSIONS, version)
        if version >= 3:
            return cls(client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION)
        return cls()

    def _channel_closed(self, channel: _Channel, failure: bool) -> None:
        if self._channels.get(channel.address) is channel:
            del self._channels[channel.address]
        if failure and not self._closed:
            self.backoff(channel.address).record_failure()

    async def close(self) -> None:
        """Close every connection; requests still in flight fail with NetworkError."""
        self._closed = True
        connecting = list(self._connecting.values())
        for task in connecting:
            task.cancel()
        channels = list(self._channels.values())
        for channel in channels:
            channel.close("closed: the client is closing", failure=False)
        await asyncio.gather(*connecting, *(c.read_task for c in channels), return_exceptions=True)
        await asyncio.gather(*(_closed(c.writer) for c in channels))

    async def __aenter__(self) -> "KafkaClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _closed(writer: asyncio.StreamWriter) -> None:
    """Until the connection is closed. Over TLS, asyncio waits for the peer's close_notify after
    sending ours, and a JVM peer answers it late (0.2-0.5 s from Kafka's controllers, measured:
    a whole tool run's worth); Kafka's own clients do not wait for it either, so after
    ``TLS_CLOSE_WAIT_S`` the connection is dropped."""
    try:
        async with asyncio.timeout(TLS_CLOSE_WAIT_S):
            await writer.wait_closed()
    except TimeoutError:
        writer.transport.abort()
    except Exception:  # the connection failed as it closed: closed all the same
        pass


def request_once(address: Address, request: Any, *, timeout_ms: int = 2000, client_id: str = "metashell",
                 adapt: bool = False, security: ClientSecurity = PLAINTEXT_CLIENT) -> Any:
    """Send one request and return its response, for command-line tools (runs its own event
    loop); ``adapt`` as in ``KafkaClient.send``."""
    async def once() -> Any:
        async with KafkaClient(client_id=client_id, request_timeout_ms=timeout_ms, security=security) as client:
            return await client.send(address, request, timeout_ms=timeout_ms, adapt=adapt)
    return asyncio.run(once())
