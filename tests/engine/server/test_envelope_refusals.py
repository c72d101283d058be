"""What the controller answers an Envelope it cannot serve, as Kafka's EnvelopeUtils does, in its
order: the principal first (PRINCIPAL_DESERIALIZATION_FAILURE, an absent one included), then the
inner header (UNSUPPORTED_VERSION), whether the API is forwarded at all (INVALID_REQUEST), then the
inner version and body (UNSUPPORTED_VERSION). Found by ``kraftd fuzz served-controller``'s hostile
seeds: an Envelope without a principal was served as User:ANONYMOUS."""

from __future__ import annotations

import datetime
import struct

import pytest

from engine.broker.forwarding import principal_bytes
from engine.common.api_keys import ApiKeys
from engine.controller.commands import all_commands
from engine.net.kafka_protocol import encode_request
from engine.records.kio_codec import ErrorCode, i16, i32, protocol_module
from engine.server.controller_apis import (
    EnvelopeRefused, controller_listener_apis, forwardable_apis, read_envelope,
)

FORWARDABLE = forwardable_apis(controller_listener_apis(all_commands()), all_commands())
ALICE = principal_bytes(("User", "alice"))


def _create_topics() -> bytes:
    m = protocol_module("create_topics", 7, "request")
    request = m.CreateTopicsRequest(topics=(m.CreatableTopic(name="t", num_partitions=i32(1), replication_factor=i16(1),
                                                             assignments=(), configs=()),),
                                    timeout=datetime.timedelta(seconds=1), validate_only=True)
    return encode_request(request, 5, "client")[4:]


def _envelope(inner: bytes, principal: bytes | None = ALICE):
    return protocol_module("envelope", 0, "request").EnvelopeRequest(
        request_data=inner, request_principal=principal, client_host_address=b"\x7f\x00\x00\x01")


def _refusal(envelope) -> int:
    with pytest.raises(EnvelopeRefused) as caught:
        read_envelope(envelope, FORWARDABLE)
    assert "\n" not in str(caught.value)
    return int(caught.value.code)


def test_a_readable_envelope_gives_the_principal_and_the_request():
    principal, token, info, request = read_envelope(_envelope(_create_topics()), FORWARDABLE)
    assert (principal, token, info.api_key, info.correlation_id) == ("User:alice", False, ApiKeys.CREATE_TOPICS, 5)
    assert request.topics[0].name == "t"


@pytest.mark.parametrize("principal", [None, b"", b"\x00", b"\x00\x09" + ALICE[2:], b"\x00\x00\xff\xff\xff\x7f"],
                         ids=["null", "empty", "one-byte", "version-9", "garbage"])
def test_a_principal_that_does_not_read_is_refused_first(principal):
    # before the inner request is looked at: garbage inside changes nothing
    assert _refusal(_envelope(_create_topics(), principal)) == ErrorCode.principal_deserialization_failure
    assert _refusal(_envelope(b"\x00", principal)) == ErrorCode.principal_deserialization_failure


def test_an_api_that_is_not_forwarded_is_an_invalid_request():
    inner = encode_request(_envelope(_create_topics()), 6, "broker")[4:]  # an Envelope in an Envelope
    assert _refusal(_envelope(inner)) == ErrorCode.invalid_request
    versions = protocol_module("api_versions", 3, "request").ApiVersionsRequest(
        client_software_name="a", client_software_version="1")
    assert _refusal(_envelope(encode_request(versions, 6, "c")[4:])) == ErrorCode.invalid_request


@pytest.mark.parametrize("inner", [
    b"", b"\x00\x01",  # no header (Fetch, not forwarded: the header is read first)
    struct.pack(">hhih", 999, 0, 1, -1),  # an API Kafka does not know
    struct.pack(">hhih", ApiKeys.CREATE_TOPICS, 99, 1, -1) + b"\x00",  # a version we do not serve
    struct.pack(">hhih", ApiKeys.CREATE_TOPICS, 7, 1, -1) + b"\x00\xff",  # a body that does not read
], ids=["empty", "short", "api-999", "version-99", "bad-body"])
def test_an_inner_request_that_does_not_read_is_unsupported_version(inner):
    assert _refusal(_envelope(inner)) == ErrorCode.unsupported_version
