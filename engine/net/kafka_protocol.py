"""Kafka's request/response framing over kio messages. Pure: bytes in, messages out.

A frame is a 4-byte big-endian size, then a header, then the message body. The
header version follows from the message version (Kafka's ApiMessageTypeGenerator):
request header v2 for flexible request versions and v1 otherwise; response header
v1 for flexible response versions and v0 otherwise, except ApiVersions responses,
which always carry header v0 (KIP-511) so that a client can read the error of a
version the broker does not know.
"""

from __future__ import annotations

import datetime
import functools
import re
import struct
from dataclasses import dataclass
from typing import Any, Mapping

from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import (
    API_NAMES, DECODE_ERRORS, EntityType, ErrorCode, encode_entity, i16, i64, protocol_module,
)
from engine.records.bounds_check import decode_entity
from engine.net.errors import ProtocolError, UnsupportedRequestError
from engine.net.null_fields import first_null

_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id: the same in header v1 and v2
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")  # Kafka's ApiVersionsRequest.isValid


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API a server serves: its key, kio module name and version range (inclusive)."""

    api_key: int
    name: str
    min_version: int
    max_version: int

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def range_text(self) -> str:
        return f"v{self.min_version}-v{self.max_version}"


@dataclass(frozen=True, slots=True)
class RequestHeaderInfo:
    """What a server needs from a request header (a null client id reads as "", as in Kafka)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str


def _specs(*specs: ApiSpec) -> dict[int, ApiSpec]:
    return {spec.api_key: spec for spec in specs}


# What our KRaft controller listener serves. Versions are those kio 0.6.5 has, capped
# where our Raft code stops (Fetch: v13 is the first with topic ids; v18 adds the fetcher's
# high watermark, KIP-1166, which the leader reads; our own fetches stay at v17).
RAFT_APIS: dict[int, ApiSpec] = _specs(
    ApiSpec(ApiKeys.API_VERSIONS, "api_versions", 0, 4),
    ApiSpec(ApiKeys.VOTE, "vote", 0, 2),
    ApiSpec(ApiKeys.BEGIN_QUORUM_EPOCH, "begin_quorum_epoch", 0, 1),
    ApiSpec(ApiKeys.END_QUORUM_EPOCH, "end_quorum_epoch", 0, 1),
    ApiSpec(ApiKeys.FETCH, "fetch", 13, 18),
    ApiSpec(ApiKeys.FETCH_SNAPSHOT, "fetch_snapshot", 0, 1),
    ApiSpec(ApiKeys.DESCRIBE_QUORUM, "describe_quorum", 0, 2),
    ApiSpec(ApiKeys.ADD_RAFT_VOTER, "add_raft_voter", 0, 1),
    ApiSpec(ApiKeys.REMOVE_RAFT_VOTER, "remove_raft_voter", 0, 0),
    ApiSpec(ApiKeys.UPDATE_RAFT_VOTER, "update_raft_voter", 0, 0),
    ApiSpec(ApiKeys.DESCRIBE_CLUSTER, "describe_cluster", 0, 2),
)
API_VERSIONS_SPEC = RAFT_APIS[ApiKeys.API_VERSIONS]


def api_name(api_key: int) -> str:
    """kio's module name of an API key, or "api key N" for one kio does not know."""
    return API_NAMES.get(api_key, f"api key {api_key}")


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


@functools.lru_cache(maxsize=None)
def _message_class(api_key: int, version: int, kind: str) -> type:
    name = API_NAMES.get(api_key)
    if name is None:
        raise ProtocolError(f"unknown api key {api_key}")
    try:
        module = protocol_module(name, version, kind)
    except ModuleNotFoundError:
        raise ProtocolError(f"kio has no {name} v{version} {kind}") from None
    wanted = EntityType.request if kind == "request" else EntityType.response
    # The top-level message is the one class of its module typed request/response (the rest are nested).
    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == module.__name__ \
                and getattr(value, "__type__", None) == wanted:
            return value
    raise ProtocolError(f"kio module {module.__name__} has no {kind} class")


def request_class(api_key: int, version: int) -> type:
    """kio's request class of one API version (ProtocolError if kio has none)."""
    return _message_class(api_key, version, "request")


def response_class(api_key: int, version: int) -> type:
    """kio's response class of one API version (ProtocolError if kio has none)."""
    return _message_class(api_key, version, "response")


def request_header_version(message_cls: type) -> int:
    return 2 if message_cls.__flexible__ else 1


def response_header_version(message_cls: type) -> int:
    if message_cls.__api_key__ == ApiKeys.API_VERSIONS:
        return 0  # KIP-511: always v0, so any client can read an UNSUPPORTED_VERSION answer
    return 1 if message_cls.__flexible__ else 0


@functools.lru_cache(maxsize=None)
def _header_class(kind: str, version: int) -> type:
    module = protocol_module(kind, version, "header")
    return module.RequestHeader if kind == "request_header" else module.ResponseHeader


def _check_message(message: Any, wanted: EntityType) -> type:
    cls = type(message)
    if getattr(cls, "__type__", None) != wanted:
        raise TypeError(f"{cls.__name__} is not a kio {wanted.name} message")
    return cls


def _frame(*parts: bytes) -> bytes:
    body = b"".join(parts)
    return _SIZE.pack(len(body)) + body


def frame_size(prefix: bytes, max_frame_bytes: int) -> int:
    """The size announced by a frame's 4-byte prefix, checked as Kafka's NetworkReceive does."""
    (size,) = _SIZE.unpack(prefix)
    if size < 0:
        raise ProtocolError(f"invalid frame size {size}")
    if size > max_frame_bytes:
        raise ProtocolError(f"frame of {size} bytes is larger than the {max_frame_bytes} byte limit")
    return size


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """A whole request frame (size prefix included)."""
    cls = _check_message(request, EntityType.request)
    header = _header_class("request_header", request_header_version(cls))(
        request_api_key=cls.__api_key__, request_api_version=cls.__version__,
        correlation_id=correlation_id, client_id=client_id)
    return _frame(encode_entity(header), encode_entity(request))


def encode_response(response: Any, correlation_id: int, api_key: int | None = None) -> bytes:
    """A whole response frame (size prefix included); ``api_key``, when given, must match the message."""
    cls = _check_message(response, EntityType.response)
    if api_key is not None and api_key != cls.__api_key__:
        raise ValueError(f"{cls.__name__} is api key {cls.__api_key__}, not {api_key}")
    header = _header_class("response_header", response_header_version(cls))(correlation_id=correlation_id)
    return _frame(encode_entity(header), encode_entity(response))


def _decode_exactly(cls: type, payload: bytes, offset: int, what: str, *, trailing_ok: bool = False) -> Any:
    try:
        message, size = decode_entity(cls, payload, offset)
    except DECODE_ERRORS as err:
        raise ProtocolError(f"malformed {what}: {_one_line(err)}") from None
    if offset + size != len(payload) and not trailing_ok:
        raise ProtocolError(f"malformed {what}: {len(payload) - offset - size} trailing bytes")
    null = first_null(message)
    if null is not None:  # as Kafka's readers: "non-nullable field X was serialized as null"
        raise ProtocolError(f"malformed {what}: non-nullable field {null} was sent as null")
    return message


def decode_request_frame(payload: bytes, apis: Mapping[int, ApiSpec] = RAFT_APIS) -> tuple[RequestHeaderInfo, Any]:
    """Header and message of one request frame (without its size prefix).

    An API or version not in ``apis`` raises UnsupportedRequestError, which still
    carries the api key, version and correlation id (ApiVersions must be answered).
    """
    if len(payload) < _REQUEST_HEAD.size:
        raise ProtocolError(f"request frame of {len(payload)} bytes is shorter than a request header")
    api_key, version, correlation_id = _REQUEST_HEAD.unpack_from(payload)
    spec = apis.get(api_key)
    ids = {"api_key": api_key, "api_version": version, "correlation_id": correlation_id}
    if spec is None:
        raise UnsupportedRequestError(f"{api_name(api_key)} v{version} (api key {api_key}) is not served", **ids)
    if not spec.supports(version):
        raise UnsupportedRequestError(
            f"{spec.name} v{version} is not served (supported {spec.range_text()})", **ids)
    cls = request_class(api_key, version)
    header_cls = _header_class("request_header", request_header_version(cls))
    what = f"{spec.name} v{version} request"
    try:
        header, used = decode_entity(header_cls, payload)
    except DECODE_ERRORS as err:
        raise ProtocolError(f"malformed header of {what}: {_one_line(err)}") from None
    # Kafka's broker reads a request's fields and ignores bytes after them (librdkafka 2.16
    # sends Metadata v13 with three), so a request is lenient where a response is not
    request = _decode_exactly(cls, payload, used, what, trailing_ok=True)
    return RequestHeaderInfo(api_key, version, correlation_id, header.client_id or ""), request


def peek_correlation_id(payload: bytes) -> int:
    """The correlation id of a response frame: the first field of response header v0 and v1."""
    if len(payload) < 4:
        raise ProtocolError(f"response frame of {len(payload)} bytes is shorter than a response header")
    return _SIZE.unpack_from(payload)[0]


def decode_response_frame(payload: bytes, api_key: int, api_version: int) -> tuple[int, Any]:
    """(correlation id, message) of one response frame (without its size prefix).

    An ApiVersions response that does not read at the version asked is read again
    as v0: a broker answers a version it does not know in v0 (Kafka's
    ApiVersionsResponse.parse does the same fallback).
    """
    cls = response_class(api_key, api_version)
    header_cls = _header_class("response_header", response_header_version(cls))
    what = f"{api_name(api_key)} v{api_version} response"
    try:
        header, used = decode_entity(header_cls, payload)
    except DECODE_ERRORS as err:
        raise ProtocolError(f"malformed header of {what}: {_one_line(err)}") from None
    try:
        return header.correlation_id, _decode_exactly(cls, payload, used, what)
    except ProtocolError:
        if api_key != ApiKeys.API_VERSIONS or api_version == 0:
            raise
    return header.correlation_id, _decode_exactly(response_class(api_key, 0), payload, used, what + " (read as v0)")


def api_versions_response(apis: Mapping[int, ApiSpec], version: int = 4, *,
                          error_code: ErrorCode = ErrorCode.none,
                          features: Mapping[str, tuple[int, int]] | None = None,
                          finalized: tuple[int, Mapping[str, int]] | None = None) -> Any:
    """The ApiVersions response listing ``apis`` (throttle 0), at ``version``; from v3 with the
    supported ``features`` (name -> (min, max)). As Kafka does, v3 leaves out the features whose
    minimum is 0, which clients before v4 cannot read (Kafka 4.1's controller answers v3 with
    metadata.version alone, v4 with kraft.version 0-1 too)."""
    cls = response_class(ApiKeys.API_VERSIONS, version)
    module = protocol_module("api_versions", version, "response")
    keys = tuple(module.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
                 for s in sorted(apis.values(), key=lambda s: s.api_key))
    fields: dict[str, Any] = {"error_code": error_code, "api_keys": keys}
    if version >= 1:
        fields["throttle_time"] = datetime.timedelta(0)
    if version >= 3 and features:
        fields["supported_features"] = tuple(
            module.SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in sorted(features.items()) if version >= 4 or low > 0)
    if version >= 3 and finalized is not None:
        epoch, levels = finalized
        fields["finalized_features_epoch"] = i64(epoch)
        fields["finalized_features"] = tuple(
            module.FinalizedFeatureKey(name=name, max_version_level=i16(level), min_version_level=i16(level))
            for name, level in sorted(levels.items()))
    return cls(**fields)


def unsupported_api_versions_response(apis: Mapping[int, ApiSpec]) -> Any:
    """Kafka's answer to an ApiVersions version it does not know: v0, UNSUPPORTED_VERSION,
    listing only the ApiVersions range (KIP-511) so the client can retry at a version we have."""
    spec = apis.get(ApiKeys.API_VERSIONS, API_VERSIONS_SPEC)
    return api_versions_response({spec.api_key: spec}, 0, error_code=ErrorCode.unsupported_version)


def answer_api_versions(request: Any, apis: Mapping[int, ApiSpec],
                        features: Mapping[str, tuple[int, int]] | None = None,
                        finalized: tuple[int, Mapping[str, int]] | None = None) -> Any:
    """A server's answer to a supported ApiVersions request (v3+ names are validated as Kafka does)."""
    version = type(request).__version__
    if version >= 3 and not (_SOFTWARE.fullmatch(request.client_software_name)
                             and _SOFTWARE.fullmatch(request.client_software_version)):
        return api_versions_response({}, version, error_code=ErrorCode.invalid_request)
    return api_versions_response(apis, version, features=features, finalized=finalized)


def peer_ranges(response: Any) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) versions from an ApiVersions response."""
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
