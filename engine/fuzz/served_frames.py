"""What a served fuzz case sends, and the hostile frames every run starts from.

An input is one connection's bytes. Byte 0 says how the rest goes out (bit 0):

- 0: one frame, its size prefix computed here: the rest is the request header and body, api key
  and version included, so mutations reach versions and APIs we do not serve;
- 1: the rest as is, size prefixes and all: truncated, oversized and negative sizes, several
  frames pipelined, a frame cut off by the close.

``hostile_inputs`` are well-framed attacks written by hand, per listener: huge array counts,
unknown versions, APIs the listener does not serve, frames cut short or announced too large,
garbage client ids, Envelopes inside Envelopes, Envelopes without a principal or on the
broker's listener, a flood of pipelined requests. They are the seeds of the two targets
(tests/fuzz_corpus/served-*) and the suite's bounded run.
"""

from __future__ import annotations

import asyncio
import datetime
import contextlib
import struct
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.net.kafka_server import DEFAULT_MAX_FRAME_BYTES

REPLY_WAIT_S = 1.0  # how long a case waits for its answers before closing (a long poll may never come)
_I32 = struct.Struct(">i")


def stream_of(data: bytes) -> bytes:
    """The bytes a case writes to the connection (see the module docstring)."""
    mode, rest = (data[0] & 1, data[1:]) if data else (0, b"")
    return rest if mode == 1 else _I32.pack(len(rest)) + rest


def framed(header_and_body: bytes) -> bytes:
    """An input of mode 0: this header and body as one frame."""
    return b"\x00" + header_and_body


def raw(stream: bytes) -> bytes:
    """An input of mode 1: these bytes as they are."""
    return b"\x01" + stream


def complete_frames(stream: bytes) -> list[int]:
    """The correlation ids of the whole frames at the start of ``stream`` (what may be answered)."""
    ids, offset = [], 0
    while offset + 4 <= len(stream):
        (size,) = _I32.unpack_from(stream, offset)
        if size < 8 or size > DEFAULT_MAX_FRAME_BYTES or offset + 4 + size > len(stream):
            break
        ids.append(_I32.unpack_from(stream, offset + 8)[0])
        offset += 4 + size
    return ids


async def send_case(address: tuple[str, int], stream: bytes, reply_wait_s: float = REPLY_WAIT_S) -> list[int]:
    """Write ``stream`` on a new connection, read the answers until every whole frame has one,
    the node closes or ``reply_wait_s``; close. The correlation ids answered, in order."""
    expected = complete_frames(stream)
    answered: list[int] = []
    reader, writer = await asyncio.open_connection(*address)
    try:
        writer.write(stream)
        async with asyncio.timeout(reply_wait_s):
            await writer.drain()
            while len(answered) < len(expected):
                size = _I32.unpack(await reader.readexactly(4))[0]
                if size < 4:
                    raise ValueError(f"the node answered a frame of {size} bytes")
                answered.append(_I32.unpack((await reader.readexactly(size))[:4])[0])
    except (TimeoutError, OSError, asyncio.IncompleteReadError):
        pass  # no answer in time, or the node closed the connection: both allowed
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    _check_order(expected, answered)
    return answered


def _check_order(expected: list[int], answered: list[int]) -> None:
    """Answers come in request order (Kafka's guarantee) and only to requests sent."""
    position = 0
    for correlation_id in answered:
        while position < len(expected) and expected[position] != correlation_id:
            position += 1
        if position == len(expected):
            raise ValueError(f"answer with correlation id {correlation_id} to no request sent, or out of "
                             f"order (sent {expected[:8]})")
        position += 1


# -- the normal requests a node must still answer ---------------------------------------------

def health_requests(listener: str) -> list[Any]:
    from engine.records.kio_codec import i32, protocol_module

    versions = protocol_module("api_versions", 3, "request")
    requests: list[Any] = [versions.ApiVersionsRequest(client_software_name="kraftd-fuzz", client_software_version="1")]
    if listener == "controller":
        quorum = protocol_module("describe_quorum", 2, "request")
        requests.append(quorum.DescribeQuorumRequest(topics=(quorum.TopicData(
            topic_name="__cluster_metadata", partitions=(quorum.PartitionData(partition_index=i32(0)),)),)))
    else:
        metadata = protocol_module("metadata", 12, "request")
        requests.append(metadata.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                 include_topic_authorized_operations=False))
    return requests


# -- hostile frames -----------------------------------------------------------------------------

def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: bytes) -> bytes:
    return struct.pack(">h", len(text)) + text


def header(api_key: int, version: int, correlation_id: int = 7, client_id: bytes = b"fuzz",
           flexible: bool = True) -> bytes:
    """Request header v2 (flexible) or v1, client id as given."""
    head = struct.pack(">hhi", api_key, version, correlation_id) + _string(client_id)
    return head + (b"\x00" if flexible else b"")


def frame_of(request: Any, correlation_id: int = 7, client_id: str | None = "fuzz") -> bytes:
    from engine.net.kafka_protocol import encode_request

    return encode_request(request, correlation_id, client_id)


def _envelope(inner_frame: bytes, principal: bytes | None) -> Any:
    from engine.records.kio_codec import protocol_module

    envelope = protocol_module("envelope", 0, "request")
    return envelope.EnvelopeRequest(request_data=inner_frame[4:], request_principal=principal,
                                    client_host_address=b"\x7f\x00\x00\x01")


def _common_hostile() -> dict[str, bytes]:
    huge = _uvarint(0x7FFFFFFF)
    api_versions = frame_of(health_requests("broker")[0])
    return {
        "unknown-api-versions-v99": framed(header(ApiKeys.API_VERSIONS, 99)),
        "api-key-999": framed(header(999, 0)),
        "api-key-negative": framed(header(-1, 0)),
        "metadata-v99": framed(header(ApiKeys.METADATA, 99)),
        "size-negative": raw(_I32.pack(-1) + header(ApiKeys.API_VERSIONS, 3)),
        "size-over-the-limit": raw(_I32.pack(DEFAULT_MAX_FRAME_BYTES + 1) + b"\x00" * 64),
        "size-2gib-then-close": raw(_I32.pack(0x7FFFFFFF) + header(ApiKeys.API_VERSIONS, 3)),
        "size-100-cut-at-10": raw(_I32.pack(100) + header(ApiKeys.API_VERSIONS, 3)[:10]),
        "size-zero": raw(_I32.pack(0)),
        "size-shorter-than-a-header": raw(_I32.pack(3) + b"\x00\x12\x00"),
        "size-prefix-cut": raw(b"\x00\x00"),
        "tls-client-hello": raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40),
        "client-id-length-past-the-frame": framed(struct.pack(">hhih", ApiKeys.API_VERSIONS, 3, 7, 0x7FFF) + b"abc"),
        "client-id-negative-length": framed(struct.pack(">hhih", ApiKeys.API_VERSIONS, 3, 7, -2) + b"\x00"),
        "client-id-not-utf8": framed(header(ApiKeys.API_VERSIONS, 3, client_id=b"\xff\xfe\xc3(")
                                     + b"\x02a\x02b\x00"),
        "client-id-null": framed(struct.pack(">hhih", ApiKeys.API_VERSIONS, 3, 7, -1) + b"\x00\x02a\x02b\x00"),
        "header-only-no-body": framed(header(ApiKeys.API_VERSIONS, 3)),
        "api-versions-bad-software-name": framed(header(ApiKeys.API_VERSIONS, 3) + b"\x04a b\x02\x00\x00"),
        "api-versions-huge-tagged-fields": framed(header(ApiKeys.API_VERSIONS, 3) + b"\x02a\x02b" + huge),
        "header-huge-tagged-fields": framed(struct.pack(">hhi", ApiKeys.API_VERSIONS, 3, 7) + _string(b"x") + huge),
        "api-versions-flood-300": raw(api_versions * 300),
        "api-versions-then-garbage": raw(api_versions + _I32.pack(12) + b"\xff" * 12),
        "envelope-unserved-or-unprivileged": framed(frame_of(_envelope(api_versions, None))[4:]),
    }


def hostile_inputs(listener: str) -> dict[str, bytes]:
    """Name -> input of the well-framed attacks on ``listener`` ("controller" or "broker")."""
    from engine.records.kio_codec import i16, i32, protocol_module

    huge = _uvarint(0x7FFFFFFF)
    cases = _common_hostile()
    create = protocol_module("create_topics", 7, "request")
    many_partitions = frame_of(create.CreateTopicsRequest(topics=(create.CreatableTopic(
        name="fuzz-huge", num_partitions=i32(0x7FFFFFFF), replication_factor=i16(1), assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=1), validate_only=True))
    cases.update({
        "create-topics-huge-topic-count": framed(header(ApiKeys.CREATE_TOPICS, 7) + huge),
        "create-topics-2147483647-partitions-validate-only": framed(many_partitions[4:]),
        "describe-quorum-huge-topic-count": framed(header(ApiKeys.DESCRIBE_QUORUM, 2) + huge),
        "delete-topics-v5-null-names": framed(header(ApiKeys.DELETE_TOPICS, 5) + b"\x00" + _I32.pack(1000) + b"\x00"),
    })
    if listener == "controller":
        api_versions = frame_of(health_requests("controller")[0])
        quorum = frame_of(health_requests("controller")[1])
        inner = frame_of(_envelope(quorum, _principal()))
        cases.update({
            "envelope-in-an-envelope": framed(frame_of(_envelope(inner, _principal()))[4:]),
            "envelope-without-principal": framed(frame_of(_envelope(quorum, None))[4:]),
            "envelope-empty-principal": framed(frame_of(_envelope(quorum, b""))[4:]),
            "envelope-principal-garbage": framed(frame_of(_envelope(quorum, b"\x00\x00\xff\xff\xff\x7f"))[4:]),
            "envelope-principal-version-9": framed(frame_of(_envelope(quorum, b"\x00\x09" + _principal()[2:]))[4:]),
            "envelope-carrying-api-versions": framed(frame_of(_envelope(api_versions, _principal()))[4:]),
            "envelope-carrying-garbage": framed(frame_of(_envelope(b"\x00" * 4 + b"\xff" * 9, _principal()))[4:]),
            "envelope-huge-request-data-length": framed(header(ApiKeys.ENVELOPE, 0) + huge),
            "produce-not-served-here": framed(header(ApiKeys.PRODUCE, 9)),
            "vote-huge-topic-count": framed(header(ApiKeys.VOTE, 2) + _compact(b"ZnV6ei1zZXJ2ZWQtbm9kZQ") + huge),
        })
    else:
        cases.update({
            "metadata-v12-huge-topic-count": framed(header(ApiKeys.METADATA, 12) + huge),
            "metadata-v4-huge-topic-count": framed(header(ApiKeys.METADATA, 4, flexible=False)
                                                   + _I32.pack(0x7FFFFFFF)),
            "vote-not-served-here": framed(header(ApiKeys.VOTE, 2)),
            "sasl-handshake-not-served-here": framed(header(ApiKeys.SASL_HANDSHAKE, 1, flexible=False)
                                                     + _string(b"PLAIN")),
            "produce-acks-0": framed(header(ApiKeys.PRODUCE, 9) + b"\x00\x00\x00" + _I32.pack(1000) + b"\x01\x00"),
            "describe-configs-huge-resource-count": framed(header(ApiKeys.DESCRIBE_CONFIGS, 4) + huge),
        })
    return cases


def _compact(text: bytes) -> bytes:
    return _uvarint(len(text) + 1) + text


def _principal() -> bytes:
    from engine.broker.forwarding import principal_bytes

    return principal_bytes(("User", "fuzz"))


__all__ = ["REPLY_WAIT_S", "complete_frames", "framed", "header", "health_requests", "hostile_inputs", "raw",
           "send_case", "stream_of", "frame_of"]
