"""An asyncio TCP server speaking Kafka's wire protocol to one request handler.

Each connection has a reader that decodes frames and starts one handler task per
request; the responses leave strictly in request order (Kafka's guarantee): each request
holds a slot in the connection's line, and a response is written the moment its slot
reaches the head, so a long-polling Fetch never stalls the reading of the requests behind
it. ApiVersions is answered here. Anything wrong with a connection (a bad frame, a
handler error) is logged as one line and closes that connection only.

A server may also take some requests *directly* (``direct``): a plain function that gets a
``reply`` callback instead of becoming a task. A controller's leader answers a parked Fetch
this way in the very step where its high watermark moves: no task to start, no task to
resume, no writer to wake, each of which waits behind everything else the loop has to do
(under load, a leader's loop step is long: each hop cost tens of milliseconds).

Security (``ListenerSecurity``): a TLS listener accepts plain TCP and upgrades it in our accept callback
(see ``tls_channel`` for why), under a handshake timeout; a SASL listener reads only ApiVersions,
SaslHandshake and SaslAuthenticate until the login succeeded (``sasl_authenticator``). The handler sees
who the connection is in ``RequestContext.principal``: the SASL user, else the TLS client certificate's
subject, else User:ANONYMOUS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, NoReturn

from engine.common.api_keys import ApiKeys
from engine.net.channel_security import (
    ANONYMOUS, PLAINTEXT_LISTENER, KafkaPrincipal, ListenerSecurity, SecurityProtocol,
)
from engine.net.errors import ProtocolError, UnsupportedRequestError
from engine.net.kafka_protocol import (
    API_VERSIONS_SPEC, RAFT_APIS, ApiSpec, answer_api_versions, decode_request_frame,
    encode_response, frame_size, unsupported_api_versions_response,
)
from engine.net.sasl_authenticator import SASL_APIS, SaslRefused, SaslServerAuthenticator
from engine.net.tls_channel import handshake_failure, peer_principal, start_tls

log = logging.getLogger("engine.net")

DEFAULT_MAX_FRAME_BYTES = 104857600  # Kafka's socket.request.max.bytes
DEFAULT_HANDSHAKE_TIMEOUT_MS = 10000  # a TLS handshake not done by then is dropped (a stalled or silent peer)
_FLUSH = -1  # a slot's api key meaning "everything before me is written": then close


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Where a request came from, handed to the handler with the request."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    peer: tuple[str, int]
    listener_name: str
    # who the connection authenticated as (SASL user, or the TLS client certificate's subject)
    principal: KafkaPrincipal = ANONYMOUS
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT


Handler = Callable[[RequestContext, Any], Awaitable[Any]]
# reply(response), or reply(exception) for a handler that failed (the connection is closed)
Reply = Callable[[Any], None]
# direct(ctx, request, reply) -> True when it took the request (it calls reply once, now or
# later, on the loop's thread); False leaves it to the ordinary handler
DirectHandler = Callable[[RequestContext, Any, Reply], bool]


class _Slot:
    """One request's place in its connection's line of responses."""

    __slots__ = ("correlation_id", "api_key", "version", "response", "done")

    def __init__(self, correlation_id: int, api_key: int, version: int):
        self.correlation_id, self.api_key, self.version = correlation_id, api_key, version
        self.response: Any = None
        self.done = False


def format_address(address: tuple[str, int]) -> str:
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _ConnectionClosed(Exception):
    """Raised inside a connection's loops to end it; the reason was logged already (or is EOF)."""


class _Connection:
    def __init__(self, server: "KafkaServer", reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.server = server
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer: tuple[str, int] = (str(peer[0]), int(peer[1]))
        self.name = format_address(self.peer)
        # Responses in request order; its bound makes a flooding client wait (backpressure).
        self.line: deque[_Slot] = deque()
        self.room = asyncio.Event()
        self.room.set()
        self.handlers: set[asyncio.Task] = set()
        self.failed = asyncio.Event()  # set by a handler that raised, to close without waiting our turn
        security = server.security
        self.principal: KafkaPrincipal = ANONYMOUS
        self.sasl = SaslServerAuthenticator(security) if security.protocol.uses_sasl else None

    async def serve(self) -> None:
        security = self.server.security
        if security.ssl_context is not None and security.protocol.uses_tls:
            try:
                await start_tls(self.writer, security.ssl_context, self.server.handshake_timeout_ms)
            except (OSError, EOFError, TimeoutError) as err:
                return self._refuse(handshake_failure(err, server_side=True))
            except BaseException:
                self.writer.close()  # server shutdown during the handshake
                raise
            try:
                self.principal = peer_principal(self.writer)
            except ValueError as err:  # a certificate OpenSSL accepted but cryptography cannot read
                return self._refuse(f"cannot read the client certificate's subject: {err}")
            if security.principal_name is not None and self.principal is not ANONYMOUS:
                try:  # Kafka's principal builder fails the connection when no mapping rule applies
                    self.principal = KafkaPrincipal("User", security.principal_name(self.principal.name))
                except ValueError as err:
                    return self._refuse(f"the client certificate has no principal: {err}")
        tasks = [asyncio.create_task(self._read_loop()), asyncio.create_task(self.failed.wait())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            children = (*tasks, *self.handlers)
            for task in children:
                task.cancel()
            self.writer.close()  # before any await: a server shutdown may cancel us again right here
            await asyncio.gather(*children, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()

    def _refuse(self, problem: str) -> None:
        """Close a connection that never got to its first request."""
        log.warning("closing connection from %s on %s: %s", self.name, self.server.listener_name, problem)
        self.writer.close()

    def _drop(self, problem: str) -> NoReturn:
        log.warning("closing connection from %s on %s: %s", self.name, self.server.listener_name, problem)
        raise _ConnectionClosed(problem)

    async def _read_loop(self) -> None:
        with contextlib.suppress(_ConnectionClosed):
            while True:
                try:
                    prefix = await self.reader.readexactly(4)
                    size = frame_size(prefix, self.server.max_frame_bytes)
                    payload = await self.reader.readexactly(size)
                except asyncio.IncompleteReadError as err:
                    if err.partial:
                        self._drop(f"connection closed inside a frame ({len(err.partial)} bytes read)")
                    return  # a clean close between frames
                except ProtocolError as err:
                    if prefix[:2] == b"\x16\x03" and not self.server.security.protocol.uses_tls:
                        self._drop("a TLS handshake on a non-TLS listener (is the client using SSL?)")
                    self._drop(str(err))
                except OSError as err:
                    return log.debug("connection from %s failed: %s", self.name, err)
                await self._dispatch(payload)
                try:
                    await self.writer.drain()  # a client that does not read its answers is not read either
                except OSError as err:
                    return log.debug("connection from %s failed: %s", self.name, err)
                while len(self.line) >= self.server.max_in_flight:
                    self.room.clear()
                    await self.room.wait()

    async def _dispatch(self, payload: bytes) -> None:
        server = self.server
        try:
            info, request = decode_request_frame(payload, server.apis)
        except UnsupportedRequestError as err:
            if err.api_key != ApiKeys.API_VERSIONS:
                self._drop(str(err))  # Kafka closes the connection: there is no header version to answer in
            self._complete(self._take_slot(err.correlation_id, err.api_key, 0),
                           unsupported_api_versions_response(server.apis))
            return
        except ProtocolError as err:
            self._drop(str(err))
        if info.api_key == ApiKeys.API_VERSIONS:
            finalized = server.finalized_features() if server.finalized_features is not None else None
            await self._answer(info, answer_api_versions(request, server.apis, server.features, finalized))
            return
        if self.sasl is not None and (self.sasl.principal is None or info.api_key in SASL_APIS):
            await self._authenticate(info, request)
            return
        ctx = RequestContext(info.api_key, info.api_version, info.correlation_id, info.client_id, self.peer,
                             server.listener_name, self.principal, server.security.protocol)
        slot = self._take_slot(info.correlation_id, info.api_key, info.api_version)
        what = f"{server.apis[info.api_key].name} v{info.api_version} (correlation id {info.correlation_id})"
        if server.direct is not None:
            try:
                taken = server.direct(ctx, request, lambda answer: self._direct_answer(slot, what, answer))
            except Exception as err:  # noqa: BLE001 - a handler bug closes this connection only
                taken = True
                self._direct_answer(slot, what, err)
            if taken:
                return
        task = asyncio.create_task(server.handler(ctx, request), name=what)
        self.handlers.add(task)
        task.add_done_callback(lambda done: self._handler_done(slot, done))

    async def _answer(self, info: Any, response: Any) -> None:
        self._complete(self._take_slot(info.correlation_id, info.api_key, info.api_version), response)

    def _take_slot(self, correlation_id: int, api_key: int, version: int) -> _Slot:
        slot = _Slot(correlation_id, api_key, version)
        self.line.append(slot)
        return slot

    def _complete(self, slot: _Slot, response: Any) -> None:
        """A slot's response is ready: write it, and every ready one after it, if its turn came."""
        slot.response, slot.done = response, True
        line = self.line
        if line and line[0] is not slot:
            return  # written when the slots before it are
        while line and line[0].done and not self.failed.is_set():
            head = line.popleft()
            self._write(head)
        if len(line) < self.server.max_in_flight:
            self.room.set()

    def _write(self, slot: _Slot) -> None:
        if slot.api_key == _FLUSH:
            if not slot.response.done():
                slot.response.set_result(None)
            return
        what = f"{self.server.apis[slot.api_key].name} v{slot.version} (correlation id {slot.correlation_id})"
        response = slot.response
        cls = type(response)
        if getattr(cls, "__api_key__", None) != slot.api_key or getattr(cls, "__version__", None) != slot.version:
            return self._fail(f"handler of {what} returned {cls.__name__} v{getattr(cls, '__version__', '?')}, "
                              f"not a {self.server.apis[slot.api_key].name} v{slot.version} response")
        try:
            frame = encode_response(response, slot.correlation_id, slot.api_key)
        except Exception as err:  # noqa: BLE001 - a response kio cannot write is a handler bug
            return self._fail(f"cannot encode the response to {what}: {type(err).__name__}: {err}")
        if not self.writer.is_closing():
            self.writer.write(frame)  # the transport buffers; the reader waits while it is full

    def _fail(self, problem: str) -> None:
        """Close this connection (from a callback: serve() sees ``failed`` and closes)."""
        if not self.failed.is_set():
            log.warning("closing connection from %s on %s: %s", self.name, self.server.listener_name, problem)
            self.failed.set()

    def _direct_answer(self, slot: _Slot, what: str, answer: Any) -> None:
        if slot.done:
            return
        if isinstance(answer, BaseException):
            slot.done = True
            self._fail(f"handler of {what} failed: {type(answer).__name__}: {' '.join(str(answer).split())}")
            return
        self._complete(slot, answer)

    async def _authenticate(self, info: Any, request: Any) -> None:
        """The SASL exchange (SaslServerAuthenticator): nothing else is read until it succeeded."""
        assert self.sasl is not None
        what = f"{self.server.apis[info.api_key].name} v{info.api_version}"
        if self.sasl.principal is not None:
            self._drop(f"{what} after SASL authentication completed (re-authentication is not supported)")
        if info.api_key not in SASL_APIS:
            self._drop(f"{what} before SASL authentication (only ApiVersions, SaslHandshake and "
                       f"SaslAuthenticate are read until then)")
        try:
            response = self.sasl.answer(info.api_key, info.api_version, request)
        except SaslRefused as refused:
            if refused.response is not None:
                # Kafka sends the refusal, then closes: wait until it is written.
                await self._answer(info, refused.response)
                written = asyncio.get_running_loop().create_future()
                self._complete(self._take_slot(info.correlation_id, _FLUSH, 0), written)
                await written
                with contextlib.suppress(OSError):
                    await self.writer.drain()
            self._drop(refused.reason)
        if self.sasl.principal is not None:
            self.principal = self.sasl.principal
        await self._answer(info, response)

    def _handler_done(self, slot: _Slot, task: asyncio.Task) -> None:
        self.handlers.discard(task)
        if task.cancelled():
            return  # the connection is closing
        err = task.exception()
        if err is not None:
            # Close now, not when this response's turn comes behind a long poll.
            slot.done = True
            self._fail(f"handler of {task.get_name()} failed: {type(err).__name__}: {' '.join(str(err).split())}")
            return
        self._complete(slot, task.result())


class KafkaServer:
    """Serves ``handler(ctx, request) -> response`` for the APIs in ``apis`` on one TCP listener."""

    def __init__(self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0,
                 apis: Mapping[int, ApiSpec] = RAFT_APIS, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 listener_name: str = "CONTROLLER", max_in_flight: int = 128,
                 features: Mapping[str, tuple[int, int]] | None = None,
                 finalized_features: Callable[[], tuple[int, Mapping[str, int]]] | None = None,
                 security: ListenerSecurity = PLAINTEXT_LISTENER,
                 handshake_timeout_ms: int = DEFAULT_HANDSHAKE_TIMEOUT_MS, direct: DirectHandler | None = None):
        self.handler = handler
        self.direct = direct
        if security.protocol.uses_tls and security.ssl_context is None:
            raise ValueError(f"listener {listener_name} is {security.protocol.name} but has no TLS context")
        self.security = security
        self.handshake_timeout_ms = handshake_timeout_ms
        self.features = dict(features or {})  # supported feature levels, told in ApiVersions
        # (epoch, name -> level) of the finalized features, told in ApiVersions v3+ (a controller's)
        self.finalized_features = finalized_features
        self.host = host
        self.port = port
        # ApiVersions is always served (by us): clients start every connection with it.
        self.apis: dict[int, ApiSpec] = {ApiKeys.API_VERSIONS: API_VERSIONS_SPEC, **apis}
        if security.protocol.uses_sasl:
            self.apis.update(SASL_APIS)  # listed in ApiVersions, as a SASL listener must
        self.max_frame_bytes = max_frame_bytes
        self.listener_name = listener_name
        self.max_in_flight = max_in_flight
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task] = set()
        self.address: tuple[str, int] | None = None

    async def start(self) -> tuple[str, int]:
        """Start listening; returns the bound (host, port) (the real port when asked for port 0)."""
        if self._server is not None:
            raise RuntimeError("server already started")
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        sockname = self._server.sockets[0].getsockname()
        self.address = (str(sockname[0]), int(sockname[1]))
        return self.address

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await _Connection(self, reader, writer).serve()
        except asyncio.CancelledError:
            pass  # server shutdown
        except Exception as err:  # noqa: BLE001 - never let one connection take the server down
            log.error("connection on %s failed: %s: %s", self.listener_name, type(err).__name__, err)
        finally:
            self._connections.discard(task)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def close(self) -> None:
        """Stop listening, close every connection and cancel the handlers still running."""
        if self._server is None:
            return
        self._server.close()
        connections = list(self._connections)
        for task in connections:
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> "KafkaServer":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
