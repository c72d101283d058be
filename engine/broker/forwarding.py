"""A broker's admin writes, forwarded to the active controller inside an Envelope (KIP-590).

The client's request goes as it came: its frame (without the size prefix) at the client's
version, header, client id and correlation id included, with the client's principal
(DefaultPrincipalData v0: who the client's connection authenticated as, User:ANONYMOUS on a
listener without SASL or client certificates) and its IP
address. The controller's answer comes back inside the EnvelopeResponse and is read at the
client's version, as Kafka's ForwardingManager does. Kafka's rules kept here:

- Envelope NOT_CONTROLLER: the request goes again, to whichever controller is active then,
  until the request timeout; no answer in time is the API's REQUEST_TIMED_OUT;
- any other Envelope error, or an answer that does not read, is the API's UNKNOWN_SERVER_ERROR
  (Kafka answers UNSUPPORTED_VERSION by closing the client's connection; we keep it and say
  UNSUPPORTED_VERSION instead).

The error answers reuse the controller's own ``error_response`` of each command (the request
read at the command's version first), so a forwarded refusal looks the same whichever side made it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import time
import typing
from datetime import timedelta
from typing import Any, Awaitable, Callable

from engine.common.api_keys import FORWARDABLE, ApiKeys
from engine.controller.commands import all_commands
from engine.controller.controller_result import Command
from engine.net.errors import NetError, ProtocolError
from engine.net.kafka_protocol import (
    ApiSpec, api_name, decode_response_frame, encode_request, request_class, response_class,
)
from engine.net.kafka_server import RequestContext
from engine.net.message_versions import convert_message
from engine.raft.raft_driver import served_apis
from engine.records.kio_codec import ErrorCode, encode_entity, i8, protocol_module

log = logging.getLogger("engine.broker.forwarding")

RETRY_BACKOFF_MS = 50  # between sends after NOT_CONTROLLER or an unreachable controller
ANONYMOUS = ("User", "ANONYMOUS")

_envelope = protocol_module("envelope", 0, "request")
_principal = protocol_module("default_principal_data", 0, "data")

Send = Callable[[Any], Awaitable[Any]]


def _kio_range(api_key: int, low: int, high: int) -> tuple[int, int] | None:
    versions = []
    for version in range(low, high + 1):
        try:
            request_class(api_key, version)
        except ProtocolError:
            continue
        versions.append(version)
    return (min(versions), max(versions)) if versions else None


def forwarded_apis() -> dict[int, ApiSpec]:
    """The forwarded APIs at the versions our controller serves (its commands' ranges, the Raft
    driver's for DescribeQuorum and the voter changes) that kio has."""
    commands = all_commands()
    raft = served_apis()
    apis = {}
    for key in sorted(FORWARDABLE):  # what Kafka 4.x's broker forwards (KafkaApis' forwardToController)
        if key in commands:
            name, low, high = commands[key].name, commands[key].min_version, commands[key].max_version
        elif key in raft:
            name, low, high = raft[key].name, raft[key].min_version, raft[key].max_version
        else:
            continue
        found = _kio_range(key, low, high)
        if found is not None:
            apis[key] = ApiSpec(key, name, *found)
    return apis


def principal_bytes(principal: tuple[str, str] = ANONYMOUS, token_authenticated: bool = False) -> bytes:
    """Kafka's DefaultKafkaPrincipalBuilder serialization: the version (0) then the data."""
    data = _principal.DefaultPrincipalData(type_=principal[0], name=principal[1],
                                           token_authenticated=token_authenticated)
    return (0).to_bytes(2, "big") + encode_entity(data)


def client_address_bytes(peer: tuple[str, int]) -> bytes:
    try:
        return ipaddress.ip_address(peer[0].split("%")[0]).packed
    except ValueError:
        return b""  # a peer with no IP (a test's fake): the controller reads no address


def envelope_of(ctx: RequestContext, request: Any) -> Any:
    frame = encode_request(request, ctx.correlation_id, ctx.client_id)
    principal = (ctx.principal.principal_type, ctx.principal.name)  # who the client authenticated as
    return _envelope.EnvelopeRequest(request_data=frame[4:], request_principal=principal_bytes(principal),
                                     client_host_address=client_address_bytes(ctx.peer))


# -- the APIs' error answers --------------------------------------------------------------------

def _older_request_fields(api_key: int, version: int, request: Any) -> dict[str, Any] | None:
    """What the command's newest request needs that an old version names otherwise (only what
    an error answer reads: the items it answers for)."""
    if api_key == ApiKeys.DELETE_TOPICS and version < 6:
        v6 = protocol_module("delete_topics", 6, "request")
        return {"topics": tuple(v6.DeleteTopicState(name=n, topic_id=None) for n in request.topic_names)}
    if api_key == ApiKeys.ELECT_LEADERS and version < 1:
        return {"election_type": i8(0)}
    if api_key == ApiKeys.UPDATE_FEATURES and version < 1:
        v1 = protocol_module("update_features", 1, "request")
        return {"feature_updates": tuple(v1.FeatureUpdateKey(feature=u.feature, max_version_level=u.max_version_level,
                                                             upgrade_type=i8(2 if u.allow_downgrade else 1))
                                         for u in request.feature_updates)}
    if api_key == ApiKeys.CREATE_DELEGATION_TOKEN and version < 3:
        return {"owner_principal_type": None, "owner_principal_name": None}
    return None


def top_level_error(api_key: int, version: int, code: Any, message: str | None) -> Any:
    """A response whose only news is its top-level error (DescribeQuorum, the voter changes)."""
    cls = response_class(api_key, version)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "error_code":
            values[f.name] = code
        elif f.name == "error_message":
            values[f.name] = message
        elif f.name == "throttle_time":
            values[f.name] = timedelta(0)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            hint = hints[f.name]
            values[f.name] = () if typing.get_origin(hint) is tuple or tuple in typing.get_args(hint) else None
    return cls(**values)


def error_response(api_key: int, version: int, request: Any, code: Any, message: str | None,
                   commands: dict[int, Command] | None = None) -> Any:
    """The API's answer at ``version`` refusing the whole ``request`` with ``code``."""
    command = (commands if commands is not None else _COMMANDS).get(api_key)
    if command is not None:
        newest = convert_message(request, request_class(api_key, command.max_version),
                                 _older_request_fields(api_key, version, request))
        response = command.error_response(newest, code, message)
        extra = command.legacy_fields(newest, response) if command.legacy_fields is not None else None
        return convert_message(response, response_class(api_key, version), extra)
    return top_level_error(api_key, version, code, message)


_COMMANDS = all_commands()


# -- forwarding -----------------------------------------------------------------------------

class Forwarder:
    """``await forward(ctx, request)``: the active controller's answer at the client's version."""

    def __init__(self, send_to_controller: Send, *, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = RETRY_BACKOFF_MS):
        self.send = send_to_controller
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.forwarded = 0  # Envelopes sent, retries included (for tests and status)

    async def forward(self, ctx: RequestContext, request: Any) -> Any:
        what = f"{api_name(ctx.api_key)} v{ctx.api_version} from {ctx.client_id or '?'}"
        envelope = envelope_of(ctx, request)
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        problem = "no controller answered"
        while True:
            remaining_s = deadline - time.monotonic()
            if remaining_s <= 0:
                log.info("forwarding %s: %s within %d ms", what, problem, self.request_timeout_ms)
                return self._refuse(ctx, request, ErrorCode.request_timed_out,
                                    f"no active controller answered within {self.request_timeout_ms} ms ({problem})")
            try:
                self.forwarded += 1
                async with asyncio.timeout(remaining_s):
                    answer = await self.send(envelope)
            except TimeoutError:
                problem = "the controller did not answer in time"
                continue
            except NetError as err:
                problem = " ".join(str(err).split())
                await asyncio.sleep(min(self.retry_backoff_ms / 1000, max(remaining_s, 0)))
                continue
            code = getattr(answer, "error_code", None)
            if getattr(type(answer), "__api_key__", None) != ApiKeys.ENVELOPE:
                log.warning("forwarding %s: the controller answered %s, not an Envelope response", what,
                            type(answer).__name__)
                return self._refuse(ctx, request, ErrorCode.unknown_server_error,
                                    "the controller's answer was not an Envelope response")
            if code == ErrorCode.not_controller:
                problem = "the controller asked is no longer active"
                await asyncio.sleep(min(self.retry_backoff_ms / 1000, max(remaining_s, 0)))
                continue
            if code != ErrorCode.none:
                log.warning("forwarding %s: the controller refused the Envelope with %s", what, _name(code))
                mapped = ErrorCode.unsupported_version if code == ErrorCode.unsupported_version \
                    else ErrorCode.unknown_server_error
                return self._refuse(ctx, request, mapped, f"the controller refused the forwarded request: {_name(code)}")
            return self._read_answer(ctx, request, answer, what)

    def _read_answer(self, ctx: RequestContext, request: Any, answer: Any, what: str) -> Any:
        data = answer.response_data
        try:
            if data is None:
                raise ProtocolError("no response data")
            correlation_id, response = decode_response_frame(bytes(data), ctx.api_key, ctx.api_version)
            if correlation_id != ctx.correlation_id:
                raise ProtocolError(f"correlation id {correlation_id}, not {ctx.correlation_id}")
        except ProtocolError as err:
            log.warning("forwarding %s: the Envelope's answer does not read: %s", what, " ".join(str(err).split()))
            return self._refuse(ctx, request, ErrorCode.unknown_server_error,
                                "the controller's answer to the forwarded request does not read")
        return response

    @staticmethod
    def _refuse(ctx: RequestContext, request: Any, code: Any, message: str) -> Any:
        return error_response(ctx.api_key, ctx.api_version, request, code, message)


def _name(code: Any) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"error {code}"


__all__ = ["Forwarder", "client_address_bytes", "envelope_of", "error_response",
           "forwarded_apis", "principal_bytes", "top_level_error"]
