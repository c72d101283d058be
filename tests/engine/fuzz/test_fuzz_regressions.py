"""Inputs the fuzzer (kraftd fuzz, docs/reliability.md) found breaking a decoder, each through the
public reader it broke; the inputs themselves stay in tests/fuzz_corpus/<target>/crash-*."""

from __future__ import annotations

import struct

import pytest

from engine.net.kafka_protocol import decode_request_frame
from engine.server.request_upgrades import upgrade_fields
from engine.fuzz.targets import frame_choice, listener_tables
from engine.fuzz.fuzzer import CORPUS_ROOT


def _request(name: str):
    listener, key, version, rest = frame_choice((CORPUS_ROOT / "request-frame" / name).read_bytes())
    return decode_request_frame(struct.pack(">hh", key, version) + rest, listener_tables()[listener])


@pytest.mark.parametrize("crash, api_key, version, field", [
    ("crash-8b8bfe3f77e4", 20, 5, "topics"),  # DeleteTopics v5, topic_names null
    ("crash-92c4c3e6c52f", 56, 2, "topics"),  # AlterPartition v2, a partition's new_isr null
    ("crash-d6d7f17fb61c", 57, 0, "feature_updates"),  # UpdateFeatures v0, feature_updates null
])
def test_null_arrays_of_older_requests_upgrade(crash: str, api_key: int, version: int, field: str):
    # these read a null (length -1) array; reading them as the newest version failed with a TypeError
    info, request = _request(crash)
    assert (info.api_key, info.api_version) == (api_key, version)
    upgraded = upgrade_fields(api_key, version, request)
    assert isinstance(upgraded[field], tuple)


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
