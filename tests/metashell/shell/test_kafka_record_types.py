"""``records --type`` knows Kafka's record types by Kafka's own names: each MetadataRecordType
constant and its message class's name, and each ControlRecordType, asked of Kafka's classes."""

from __future__ import annotations

import pytest

from metashell.shell.record_types import SPELLINGS, UNREADABLE, type_filter
from tests.kafka_peer.fixtures import HARNESS_VERSIONS

pytestmark = pytest.mark.kafka


def test_our_record_types_are_kafkas_in_both_spellings(kafka_classes) -> None:
    kafka = kafka_classes.call("RecordTypes")
    ours = [(constant, name) for constant, name in SPELLINGS if constant not in UNREADABLE]
    metadata = [(row["constant"], row["message"]) for row in kafka["metadata"]]
    ours_metadata = [pair for pair in ours if pair[0].endswith("_RECORD")]
    if kafka_classes.version == HARNESS_VERSIONS[-1]:  # the newest
        assert ours_metadata == metadata
    else:  # an older release lacks the newest types (4.1.2: UNREGISTER_CONTROLLER_RECORD)
        assert [pair for pair in ours_metadata if pair in metadata] == metadata
    assert [constant for constant, _ in ours if not constant.endswith("_RECORD")] == kafka["control"]
    for constant, message in metadata:  # either spelling keeps exactly that type
        for typed in (constant, message, message.lower()):
            keep = type_filter([typed])
            assert keep(constant) and not keep("NO_OP_RECORD" if constant != "NO_OP_RECORD" else "TOPIC_RECORD")
