"""Inputs the fuzzer (kraftd fuzz, docs/reliability.md) found breaking a decoder, each through the
public reader it broke; the inputs themselves stay in tests/fuzz_corpus/<target>/crash-*."""

from __future__ import annotations

import dataclasses
import datetime
import struct

import pytest

from engine.net.errors import ProtocolError
from engine.net.kafka_protocol import decode_request_frame
from engine.server.request_upgrades import upgrade_fields
from engine.fuzz.targets import frame_choice, listener_tables
from engine.fuzz.fuzzer import CORPUS_ROOT


def _request(name: str):
    listener, key, version, rest = frame_choice((CORPUS_ROOT / "request-frame" / name).read_bytes())
    return decode_request_frame(struct.pack(">hh", key, version) + rest, listener_tables()[listener])


@pytest.mark.parametrize("crash, what, field", [
    ("crash-8b8bfe3f77e4", "delete_topics v5", "topic_names"),  # DeleteTopics v5, topic_names null
    ("crash-92c4c3e6c52f", "alter_partition v2", "topics"),  # AlterPartition v2, null arrays
    ("crash-d6d7f17fb61c", "update_features v0", "feature_updates"),  # UpdateFeatures v0, feature_updates null
])
def test_null_arrays_of_older_requests_are_refused(crash: str, what: str, field: str):
    # these read a null (length -1) array where the schema has none; upgrading them to the newest
    # version failed with a TypeError. The frame is now refused as Kafka's readers refuse it, in one line
    with pytest.raises(ProtocolError) as caught:
        _request(crash)
    assert str(caught.value) == f"malformed {what} request: non-nullable field {field} was sent as null"


def test_older_requests_with_null_arrays_still_upgrade():
    # the upgrade keeps reading a null array as empty, should a request reach it some other way
    from engine.records.kio_codec import protocol_module

    v5 = protocol_module("delete_topics", 5, "request")
    request = v5.DeleteTopicsRequest(topic_names=(), timeout=datetime.timedelta(0))
    assert upgrade_fields(20, 5, dataclasses.replace(request, topic_names=None)) == {"topics": ()}


def test_a_zstd_bomb_in_a_segment_is_refused_not_inflated(tmp_path):
    # 8 KB of zstd run-length blocks that inflate to 256 MiB: the batch is refused, naming file and batch,
    # and nothing near its claimed size is allocated (the limit here is 16 MiB)
    from engine.common.errors import CorruptRecordError
    from engine.storage.log_reader import read_file
    from engine.fuzz.targets import records_batch_bytes

    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(records_batch_bytes((CORPUS_ROOT / "records" / "crash-zstd-rle-blocks-256mib").read_bytes()))
    with pytest.raises(CorruptRecordError, match=r"byte offset 0: zstd data of 8198 bytes inflates past "
                                                 r"16777216 bytes") as caught:
        list(read_file(segment))
    assert str(segment) in str(caught.value)


def test_searching_damage_for_a_later_batch_is_bounded(tmp_path):
    # 40 MiB of 0x02 bytes: every position looks like a batch start claiming 33 MB, so telling a torn
    # tail from corruption hashed 33 MB per byte (hours); the search now stops at 4x the bytes and the
    # damage is corruption, named, nothing cut. (Too large for the fuzz corpus: made here.)
    from engine.common.errors import CorruptRecordError
    from engine.storage.log_reader import read_file

    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"\x02" * (40 << 20))
    torn: list[int] = []
    with pytest.raises(CorruptRecordError, match="byte offset 0: batch CRC mismatch") as caught:
        list(read_file(segment, on_torn_tail=lambda position, error: torn.append(position)))
    assert torn == [] and str(segment) in str(caught.value)
