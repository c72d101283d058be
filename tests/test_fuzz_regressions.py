"""Inputs the fuzzer (kraftd fuzz, docs/reliability.md) found breaking a decoder, each through the
public reader it broke; the inputs themselves stay in tests/fuzz_corpus/<target>/crash-*."""

from __future__ import annotations

import struct

import pytest

from engine.net.kafka_protocol import decode_request_frame
from engine.server.request_upgrades import upgrade_fields
from engine.tools.fuzz_targets import frame_choice, listener_tables
from engine.tools.fuzz_tool import CORPUS_ROOT


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
