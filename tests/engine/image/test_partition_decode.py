"""engine.image.partition_decode reads a topic's PartitionRecords as the general path does, or refuses.

The general path (kio's reader, PartitionRegistration.from_record, TopicsDelta's replay) is the
reference: for Kafka's shape the fast reader must answer, and answer the same registrations in
the same order with the same count of skipped records; for any other bytes it may only refuse.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.image import snapshot_index
from engine.image.partition_decode import decode_topic_partitions
from engine.image.snapshot_index import SnapshotIndex, index_snapshot
from engine.records import metadata_records as m
from engine.records.kio_codec import SnapshotFooterRecord, SnapshotHeaderRecord, i8, i16, i32, i64
from engine.records.metadata_record_serde import control_record, encode_metadata_value, encode_record
from engine.records.record_batch import encode_entries

TOPIC_ID = uuid.UUID(int=0xABCDEF)
DIRECTORY_IDS = [None, uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=7), uuid.UUID(int=2**127 + 5),
                 uuid.UUID("6f1e0f2a-3b4c-4d5e-8f60-718293a4b5c6")]
int_lists = st.lists(st.integers(-(2**31), 2**31 - 1).map(i32), max_size=5).map(tuple)
broker_lists = st.lists(st.integers(0, 4).map(i32), max_size=4).map(tuple)


@st.composite
def partition_records(draw):
    """A PartitionRecord of any version, with any leader recovery state, any directories (which
    may not pair with the replicas: skipped) and ELRs null, empty or not."""
    version = draw(st.sampled_from([0, 1, 2]))
    fields = dict(partition_id=draw(st.integers(0, 5).map(i32)), topic_id=TOPIC_ID,
                  replicas=draw(broker_lists), isr=draw(broker_lists), removing_replicas=draw(broker_lists),
                  adding_replicas=draw(broker_lists), leader=draw(st.integers(-(2**31), 2**31 - 1).map(i32)),
                  leader_recovery_state=draw(st.sampled_from([0, 1, -1, 127, -128]).map(i8)),
                  leader_epoch=draw(st.integers(-(2**31), 2**31 - 1).map(i32)),
                  partition_epoch=draw(st.integers(0, 2**31 - 1).map(i32)))
    if version == 0:
        return m.PartitionRecordV0(**fields)
    fields["directories"] = tuple(draw(st.lists(st.sampled_from(DIRECTORY_IDS), max_size=4)))
    if version == 1:
        return m.PartitionRecordV1(**fields)
    return m.PartitionRecordV2(**fields, eligible_leader_replicas=draw(st.one_of(st.none(), int_lists)),
                               last_known_elr=draw(st.one_of(st.none(), int_lists)))


def _snapshot(values: list[bytes], per_batch: int) -> bytes:
    """A snapshot whose one topic's records are ``values`` (raw PartitionRecord values), batched."""
    header = encode_record(control_record(SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(5))))
    footer = encode_record(control_record(SnapshotFooterRecord(version=i16(0))))
    data = [(None, encode_metadata_value(m.TopicRecordV0(name="t", topic_id=TOPIC_ID)))] + [(None, v) for v in values]
    out, offset = [encode_entries(0, [header], epoch=1, timestamp_ms=5, control=True)], 1
    for first in range(0, len(data), per_batch):
        batch = data[first:first + per_batch]
        out.append(encode_entries(offset, batch, epoch=1, timestamp_ms=5, control=False))
        offset += len(batch)
    out.append(encode_entries(offset, [footer], epoch=1, timestamp_ms=5, control=True))
    return b"".join(out)


def _both(buf: bytes, monkeypatch: pytest.MonkeyPatch):
    """(the fast reader's answer, the general path's (partitions in order, skipped)); None for an
    index that refuses the file (then neither path reads it); (None, None) when the fast reader
    refuses the records."""
    index = index_snapshot(buf, "t.checkpoint")
    if index is None:
        return None
    [topic] = index.topics
    fast = decode_topic_partitions(buf, [(start, end, count) for _, _, count, start, end in topic.runs])
    if fast is None:
        return None, None  # refused: the general path decides alone (and is checked by its own tests)
    with monkeypatch.context() as patched:
        patched.setattr(snapshot_index, "decode_topic_partitions", lambda buf, spans: None)
        partitions = index.topic_partitions(topic)
    return fast, (list(partitions.items()), index.skipped)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(partition_records(), max_size=10), st.integers(1, 6))
def test_kafka_shaped_records_read_as_the_general_path_reads_them(monkeypatch, records, per_batch) -> None:
    found = _both(_snapshot([encode_metadata_value(r) for r in records], per_batch), monkeypatch)
    assert found is not None
    fast, (general, skipped) = found
    assert fast is not None  # Kafka's shape: never left to the general path
    partitions, fast_skipped = fast
    assert list(partitions.items()) == general
    assert fast_skipped == skipped


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(partition_records(), st.integers(0, 10**6), st.integers(0, 255), st.booleans())
@example(m.PartitionRecordV0(partition_id=i32(0), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(), removing_replicas=(),
                             adding_replicas=(), leader=i32(1), leader_epoch=i32(0), partition_epoch=i32(0)),
         23, 0, False)  # a null replica list (count 0): refused, as kio decides what it means
def test_damaged_bytes_are_read_as_the_general_path_reads_them_or_refused(monkeypatch, record, where, byte, cut) -> None:
    """Any byte of the message after the topic id changed (or the message cut there): the fast
    reader refuses, or answers what the general path makes of the same bytes."""
    value = bytearray(encode_metadata_value(record))
    at = 23 + where % max(1, len(value) - 23)  # past the frame header, partition id and topic id
    if cut:
        del value[at:]
    elif at < len(value):
        value[at] = byte
    found = _both(_snapshot([bytes(value), encode_metadata_value(record)], 4), monkeypatch)
    if found is None or found[0] is None:
        return
    (partitions, fast_skipped), (general, skipped) = found
    assert list(partitions.items()) == general
    assert fast_skipped == skipped


def test_partitions_in_the_same_state_share_one_registration(monkeypatch) -> None:
    """A million partitions hold a few thousand distinct states: one object each."""
    records = [m.PartitionRecordV2(partition_id=i32(p), topic_id=TOPIC_ID, replicas=(i32(1), i32(2)), isr=(i32(1), i32(2)),
                                   removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(3),
                                   partition_epoch=i32(4), directories=(DIRECTORY_IDS[5], DIRECTORY_IDS[4]))
               for p in range(3)]
    fast, (general, _) = _both(_snapshot([encode_metadata_value(r) for r in records], 10), monkeypatch)
    partitions, _ = fast
    assert list(partitions.items()) == general
    assert partitions[0] is partitions[1] is partitions[2]


def test_an_unknown_tagged_field_is_left_to_the_general_path(monkeypatch) -> None:
    record = m.PartitionRecordV1(partition_id=i32(0), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(i32(1),),
                                 removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                 partition_epoch=i32(0), directories=())
    value = encode_metadata_value(record)
    assert value.endswith(b"\x00")  # no tagged fields: add tag 9, one byte
    found = _both(_snapshot([value[:-1] + b"\x01\x09\x01\x2a"], 4), monkeypatch)
    assert found is not None and found[0] is None


def test_the_same_bytes_under_another_version_are_read_by_that_version_rules(monkeypatch) -> None:
    """v2's ELR tags are unknown to v1: v1 bytes equal to an already read v2 record's are not
    taken for it (each version has its own shared states)."""
    record = m.PartitionRecordV2(partition_id=i32(0), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(i32(1),),
                                 removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                 partition_epoch=i32(0), directories=(), eligible_leader_replicas=(i32(1),),
                                 last_known_elr=None)
    v2 = encode_metadata_value(record)
    v1 = v2[:2] + b"\x01" + v2[3:]
    fast, _ = _both(_snapshot([v2], 4), monkeypatch)
    assert fast is not None and fast[0][0].elr == (1,)
    assert _both(_snapshot([v1], 4), monkeypatch) == (None, None)


def test_a_null_replica_list_is_skipped_alike_lazily_and_eagerly(tmp_path) -> None:
    """Kafka's schema makes the replica lists non-nullable and its reader refuses such a record;
    kio reads it, with None. It is skipped (counted), never a TypeError, in either load."""
    from engine.image.lazy_topics import decode_all
    from engine.image.metadata_loader import image_of_snapshot, image_of_snapshot_bytes
    from engine.storage.log_reader import read_file

    good = m.PartitionRecordV0(partition_id=i32(1), topic_id=TOPIC_ID, replicas=(i32(1),), isr=(i32(1),),
                               removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                               partition_epoch=i32(0))
    damaged = bytearray(encode_metadata_value(m.PartitionRecordV0(
        partition_id=i32(0), topic_id=TOPIC_ID, replicas=(), isr=(), removing_replicas=(), adding_replicas=(),
        leader=i32(1), leader_epoch=i32(0), partition_epoch=i32(0))))
    damaged[23] = 0  # the replica list's count: null
    path = tmp_path / "00000000000000000004-0000000001.checkpoint"
    path.write_bytes(_snapshot([bytes(damaged), encode_metadata_value(good)], 4))
    eager, eager_skipped = image_of_snapshot(read_file(path, snapshot=True), None)
    lazy, _ = image_of_snapshot_bytes(path.read_bytes(), str(path), None)
    topic = lazy.topics.by_id[TOPIC_ID]
    index = topic.partitions._index
    decode_all(lazy.topics)
    assert lazy == eager
    assert list(eager.topics.by_id[TOPIC_ID].partitions) == [1]
    assert index.skipped == 1 and eager_skipped >= 1
