"""The compiled record JSON (engine.records.record_text) writes exactly what the generic path
(engine.records.record_json) writes, for random records of every metadata and control class."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.records.metadata_record_serde import CONTROL_CLASSES, ControlRecord, decode_record, encode_record
from engine.records.metadata_records import RECORD_CLASSES
from engine.records.record_json import control_payload, record_to_json
from engine.records.record_text import control_text, payload_text
from engine.records.tagged_fields import UnknownTaggedField
from tests.strategies import record_strategy

# Strings a record may carry that JSON must escape, or that are easy to get wrong.
AWKWARD = st.sampled_from(["", "\x00", "\x1f", "\x7f", '"', "\\", "\n\t\r\b\f", "é", "\u2028", "😀", "a/b", "\\u001f",
                          "\\\x1f"])


def _awkward_text(cls: type) -> st.SearchStrategy:
    """Records of ``cls`` whose string fields are drawn from AWKWARD as well."""
    plain = record_strategy(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.metadata.get("kafka_type") == "string"]
    if not names:
        return plain
    return st.tuples(plain, st.sampled_from(names), AWKWARD).map(
        lambda t: dataclasses.replace(t[0], **{t[1]: t[2]}) if isinstance(getattr(t[0], t[1]), str) else t[0])


@pytest.mark.parametrize("key", sorted(RECORD_CLASSES), ids=lambda k: f"{RECORD_CLASSES[k].__name__}")
def test_metadata_record_text_is_the_generic_text(key) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_awkward_text(RECORD_CLASSES[key]))
    def check(record) -> None:
        assert payload_text(record) == record_to_json(record)
        # the same record as read back from its bytes (kio's types, zero uuids as None)
        key_bytes, value = encode_record(record)
        decoded = decode_record(key_bytes, value, False)
        assert payload_text(decoded) == record_to_json(decoded)

    check()


@pytest.mark.parametrize("control_type", sorted(CONTROL_CLASSES))
def test_control_record_text_is_the_generic_text(control_type: int) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_awkward_text(CONTROL_CLASSES[control_type]))
    def check(message) -> None:
        record = ControlRecord(control_type, message)
        assert control_text(record) == control_payload(record)
        assert payload_text(record) == record_to_json(record)

    check()


def test_unknown_tagged_fields_take_the_generic_path() -> None:
    record = decode_record(*encode_record(RECORD_CLASSES[(2, 0)](name="t", topic_id=None)), False)
    object.__setattr__(record, "_unknown_tagged_fields", (UnknownTaggedField((), 9, b"\x01"),))
    assert payload_text(record) == record_to_json(record)
    assert '"_unknownTaggedFields":[{"tag":9,"data":"AQ=="}]' in payload_text(record)
