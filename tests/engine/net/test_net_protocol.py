"""engine.net.kafka_protocol: framing, header versions and ApiVersions rules, without I/O."""

from __future__ import annotations

import dataclasses
import datetime
import struct
import typing
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.records.kio_codec import ErrorCode, encode_entity, protocol_module
from engine.net.errors import ProtocolError, UnsupportedRequestError
from engine.net.kafka_protocol import (
    RAFT_APIS, ApiSpec, RequestHeaderInfo, answer_api_versions, api_versions_response, decode_request_frame,
    decode_response_frame, encode_request, encode_response, frame_size, peer_ranges, request_class,
    response_class, unsupported_api_versions_response,
)

# Fetch responses carry kio's ``Records`` bytes type, which has no hypothesis strategy of its own.
_records = typing.get_type_hints(protocol_module("fetch", 17, "response").PartitionData)["records"]
st.register_type_strategy(next(a for a in typing.get_args(_records) if a is not type(None)),
                          st.binary(max_size=32))

_SAMPLES = {"int8": 5, "int16": 300, "int32": 70000, "int64": 2**40, "uint16": 9093, "bool": True,
            "string": "name", "records": b"\x01\x02\x03", "uuid": uuid.UUID(int=7),
            "timedelta_i32": datetime.timedelta(milliseconds=250), "error_code": ErrorCode.unsupported_version}


def rich_sample(cls: type) -> typing.Any:
    """A deterministic instance with every field set away from its default (arrays of two), so
    that tagged fields are written too."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if type(None) in typing.get_args(tp):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        is_array = typing.get_origin(tp) is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        value = rich_sample(inner) if dataclasses.is_dataclass(inner) else _SAMPLES[f.metadata["kafka_type"]]
        values[f.name] = (value, value) if is_array else value
    return cls(**values)


VERSIONS = [(spec.api_key, v) for spec in RAFT_APIS.values() for v in range(spec.min_version, spec.max_version + 1)]
IDS = [f"{RAFT_APIS[k].name}-v{v}" for k, v in VERSIONS]
FEW = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))


def kafka_request_header_version(cls: type) -> int:
    return 2 if cls.__flexible__ else 1  # Kafka: request header v2 for flexible versions


def kafka_response_header_version(cls: type) -> int:
    if cls.__api_key__ == 18:
        return 0  # KIP-511: ApiVersions responses always carry header v0
    return 1 if cls.__flexible__ else 0


def test_raft_apis_are_the_versions_kio_has() -> None:
    expected = {18: (0, 4), 52: (0, 2), 53: (0, 1), 54: (0, 1), 1: (13, 18), 59: (0, 1), 55: (0, 2),
                80: (0, 1), 81: (0, 0), 82: (0, 0), 60: (0, 2)}
    assert {k: (s.min_version, s.max_version) for k, s in RAFT_APIS.items()} == expected
    for api_key, version in VERSIONS:
        for cls in (request_class(api_key, version), response_class(api_key, version)):
            assert (cls.__api_key__, cls.__version__) == (api_key, version)
    # kio's own header choice agrees with Kafka's rule, ApiVersions' v0 response header included
    for api_key, version in VERSIONS:
        assert request_class(api_key, version).__header_schema__.__version__ == \
            kafka_request_header_version(request_class(api_key, version))
        assert response_class(api_key, version).__header_schema__.__version__ == \
            kafka_response_header_version(response_class(api_key, version))
    with pytest.raises(ProtocolError, match="kio has no vote v9 request"):
        request_class(52, 9)


def check_round_trip(request: typing.Any, response: typing.Any) -> None:
    """Frames equal kio's own encoding of Kafka's header choice plus the message, and decode back."""
    api_key, version = type(request).__api_key__, type(request).__version__
    frame = encode_request(request, 1234, "node-1")
    header_cls = protocol_module("request_header", kafka_request_header_version(type(request)), "header").RequestHeader
    header = header_cls(request_api_key=api_key, request_api_version=version, correlation_id=1234, client_id="node-1")
    body = encode_entity(header) + encode_entity(request)
    assert frame == struct.pack(">i", len(body)) + body
    info, decoded = decode_request_frame(frame[4:], RAFT_APIS)
    assert info == RequestHeaderInfo(api_key, version, 1234, "node-1")
    assert encode_entity(decoded) == encode_entity(request)

    frame = encode_response(response, 99, api_key)
    header_cls = protocol_module("response_header", kafka_response_header_version(type(response)),
                                 "header").ResponseHeader
    body = encode_entity(header_cls(correlation_id=99)) + encode_entity(response)
    assert frame == struct.pack(">i", len(body)) + body
    correlation_id, decoded = decode_response_frame(frame[4:], api_key, version)
    assert correlation_id == 99 and encode_entity(decoded) == encode_entity(response)


@pytest.mark.parametrize(("api_key", "version"), VERSIONS, ids=IDS)
def test_every_raft_api_round_trips(api_key: int, version: int) -> None:
    request, response = rich_sample(request_class(api_key, version)), rich_sample(response_class(api_key, version))
    check_round_trip(request, response)
    assert decode_request_frame(encode_request(request, 1, "c")[4:])[1] == request
    assert decode_response_frame(encode_response(response, 1)[4:], api_key, version)[1] == response


@pytest.mark.parametrize(("api_key", "version"), [(52, 2), (1, 17), (53, 0), (18, 4)], ids=str)
@FEW
@given(data=st.data())
def test_random_messages_round_trip(api_key: int, version: int, data: st.DataObject) -> None:
    check_round_trip(data.draw(st.from_type(request_class(api_key, version))),
                     data.draw(st.from_type(response_class(api_key, version))))


def test_header_versions_on_the_wire() -> None:
    # BeginQuorumEpoch v0 is not flexible: header v1 (no tagged fields), response header v0.
    begin = request_class(53, 0)(cluster_id=None, topics=())
    frame = encode_request(begin, 7, "c")
    assert frame[4:15] == struct.pack(">hhih", 53, 0, 7, 1) + b"c"
    assert frame[15:] == encode_entity(begin)
    # Vote v0 is flexible: header v2 (client id stays a legacy int16-length string), then an empty tag buffer.
    vote = request_class(52, 0)(cluster_id=None, topics=())
    frame = encode_request(vote, 7, None)
    assert frame[4:15] == struct.pack(">hhih", 52, 0, 7, -1) + b"\x00"
    # ApiVersions v4 is flexible, but its response header is v0: no tag buffer after the correlation id.
    response = api_versions_response(RAFT_APIS, 4)
    frame = encode_response(response, 5)
    assert frame[4:] == struct.pack(">i", 5) + encode_entity(response)
    # DescribeQuorum v2 response: header v1, one empty tag buffer after the correlation id.
    dq = response_class(55, 2)(error_code=ErrorCode.none, error_message=None, topics=(), nodes=())
    assert encode_response(dq, 5)[4:] == struct.pack(">i", 5) + b"\x00" + encode_entity(dq)


def test_unknown_api_versions_version_is_answered_in_v0() -> None:
    # An ApiVersions v9 request (flexible range, so header v2) whose body we cannot read.
    payload = struct.pack(">hhih", 18, 9, 77, 2) + b"me" + b"\x00" + b"\x05whatever"
    with pytest.raises(UnsupportedRequestError) as caught:
        decode_request_frame(payload, RAFT_APIS)
    assert (caught.value.api_key, caught.value.api_version, caught.value.correlation_id) == (18, 9, 77)
    answer = encode_response(unsupported_api_versions_response(RAFT_APIS), 77, 18)
    # Kafka's bytes: header v0, error 35, a legacy array holding only ApiVersions' own range.
    assert answer == struct.pack(">iihihhh", 16, 77, 35, 1, 18, 0, 4)
    # A client that asked for v4 reads it back as v0, as Kafka's ApiVersionsResponse.parse does.
    correlation_id, response = decode_response_frame(answer[4:], 18, 4)
    assert correlation_id == 77 and response.error_code == ErrorCode.unsupported_version
    assert peer_ranges(response) == {18: (0, 4)}


def test_unserved_apis_still_give_their_correlation_id() -> None:
    produce = struct.pack(">hhih", 0, 9, 41, 0)
    with pytest.raises(UnsupportedRequestError, match=r"^produce v9 \(api key 0\) is not served$") as caught:
        decode_request_frame(produce, RAFT_APIS)
    assert caught.value.correlation_id == 41
    vote_v7 = struct.pack(">hhih", 52, 7, 42, 0)
    with pytest.raises(UnsupportedRequestError, match=r"vote v7 is not served \(supported v0-v2\)") as caught:
        decode_request_frame(vote_v7, RAFT_APIS)
    assert caught.value.correlation_id == 42
    with pytest.raises(UnsupportedRequestError, match="api key 999"):
        decode_request_frame(struct.pack(">hhih", 999, 0, 1, 0), RAFT_APIS)


def test_malformed_frames_are_one_line_protocol_errors() -> None:
    vote = request_class(52, 2)(cluster_id="c", voter_id=1, topics=())
    frame = encode_request(vote, 3, "x")[4:]
    cases = {
        frame[:5]: "shorter than a request header",
        frame[:-1]: "malformed vote v2 request",
        frame[:8] + b"\x7f\xff": "malformed header of vote v2 request",
        # a topics count of ~2**28 in 3 bytes: refused by the bounds check before kio allocates
        frame[:-2] + b"\x80\x80\x80\x01\x00": "malformed vote v2 request",
    }
    for payload, message in cases.items():
        with pytest.raises(ProtocolError, match=message) as caught:
            decode_request_frame(payload, RAFT_APIS)
        assert "\n" not in str(caught.value)
    # as Kafka's RequestContext.parseRequest: what follows a request's fields is not read
    assert decode_request_frame(frame + b"\x00\x01\x02", RAFT_APIS)[1] == vote
    with pytest.raises(ProtocolError, match="malformed describe_quorum v2 response"):
        decode_response_frame(struct.pack(">i", 1) + b"\x00\x00", 55, 2)


def test_frame_size_limits() -> None:
    assert frame_size(struct.pack(">i", 100), 100) == 100
    with pytest.raises(ProtocolError, match="^invalid frame size -1$"):
        frame_size(struct.pack(">i", -1), 100)
    with pytest.raises(ProtocolError, match="^frame of 101 bytes is larger than the 100 byte limit$"):
        frame_size(struct.pack(">i", 101), 100)


def test_encode_refuses_what_is_not_a_message() -> None:
    with pytest.raises(TypeError, match="not a kio request"):
        encode_request(api_versions_response(RAFT_APIS), 1, "x")
    with pytest.raises(ValueError, match="is api key 18, not 52"):
        encode_response(api_versions_response(RAFT_APIS), 1, 52)


def test_api_versions_answers() -> None:
    v4 = request_class(18, 4)
    answer = answer_api_versions(v4(client_software_name="metashell", client_software_version="0.1.0"), RAFT_APIS)
    assert type(answer).__version__ == 4 and answer.error_code == ErrorCode.none
    assert peer_ranges(answer) == {k: (s.min_version, s.max_version) for k, s in RAFT_APIS.items()}
    assert [k.api_key for k in answer.api_keys] == sorted(RAFT_APIS)
    # Kafka validates v3+ software names and answers INVALID_REQUEST at the request's version
    bad = answer_api_versions(v4(client_software_name="-bad", client_software_version="1"), RAFT_APIS)
    assert bad.error_code == ErrorCode.invalid_request
    v0 = answer_api_versions(request_class(18, 0)(), {18: ApiSpec(18, "api_versions", 0, 4)})
    assert type(v0).__version__ == 0 and peer_ranges(v0) == {18: (0, 4)}
