"""A null where the schema has none is a malformed frame, refused in one line as Kafka's readers
refuse it ("non-nullable field X was serialized as null"), never a None handed to a handler."""

from __future__ import annotations

import datetime
import struct

import pytest

from engine.common.api_keys import ApiKeys
from engine.net.errors import ProtocolError
from engine.net.kafka_protocol import decode_request_frame, decode_response_frame, encode_response
from engine.net.null_fields import first_null
from engine.records.kio_codec import ErrorCode, protocol_module
from engine.server.controller_apis import controller_listener_apis
from engine.controller.commands import all_commands

APIS = controller_listener_apis(all_commands())


def _header(api_key: int, version: int) -> bytes:
    return struct.pack(">hhih", api_key, version, 7, 4) + b"fuzz" + b"\x00"  # header v2, no tagged fields


def test_a_null_top_level_array_is_refused():
    # DeleteAcls v3 with filters sent as a null compact array (length 0): the handler iterated None
    frame = _header(ApiKeys.DELETE_ACLS, 3) + b"\x00" + b"\x00"
    with pytest.raises(ProtocolError) as caught:
        decode_request_frame(frame, APIS)
    assert str(caught.value) == "malformed delete_acls v3 request: non-nullable field filters was sent as null"


def test_a_null_nested_array_is_named_by_its_path():
    # CreateTopics v7: one topic whose assignments array is null
    topic = b"\x02t" + struct.pack(">ih", 1, 1) + b"\x00" + b"\x01" + b"\x00"  # name, partitions, rf, null, configs, tags
    frame = _header(ApiKeys.CREATE_TOPICS, 7) + b"\x02" + topic + struct.pack(">i", 1000) + b"\x00" + b"\x00"
    with pytest.raises(ProtocolError, match=r"non-nullable field topics\[0\]\.assignments was sent as null"):
        decode_request_frame(frame, APIS)


def test_a_null_where_the_schema_allows_one_is_read():
    # Metadata v12's topics is nullable (null: every topic)
    from engine.broker.broker_apis import LOCAL_APIS

    frame = _header(ApiKeys.METADATA, 12) + b"\x00" + b"\x00\x00" + b"\x00"
    _, request = decode_request_frame(frame, LOCAL_APIS)
    assert request.topics is None and first_null(request) is None


def test_a_response_with_a_null_array_is_refused():
    m = protocol_module("describe_acls", 3, "response")
    good = encode_response(m.DescribeAclsResponse(throttle_time=datetime.timedelta(0),
                                                  error_code=ErrorCode.none, error_message=None, resources=()), 9)[4:]
    assert good[-2:] == b"\x01\x00"  # resources: an empty compact array, then no tagged fields
    with pytest.raises(ProtocolError, match="malformed describe_acls v3 response: non-nullable field resources"):
        decode_response_frame(good[:-2] + b"\x00\x00", ApiKeys.DESCRIBE_ACLS, 3)
