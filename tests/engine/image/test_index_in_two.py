"""The snapshot walk split across two processes finds what the one walk finds, or refuses alike."""

from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.image import index_in_two
from engine.image.snapshot_index import NotGrouped, _batch_headers, index_snapshot
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.storage.snapshot_writer import snapshot_bytes

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _partition(topic_id: uuid.UUID, p: int) -> m.PartitionRecordV0:
    return m.PartitionRecordV0(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),),
                               removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(p),
                               partition_epoch=i32(0))


def _bytes(records: list) -> bytes:
    return snapshot_bytes(records, epoch=1, last_contained_log_timestamp_ms=5, now_ms=6, max_batch_bytes=300)


def _shape(index) -> object:
    return None if index is None else ([(t.record, t.runs) for t in index.topics], [e.record for e in index.entries])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 40)), min_size=1, max_size=8),
       st.sets(st.sampled_from(["duplicate", "stray"]), max_size=1))
def test_two_halves_find_what_one_walk_finds(monkeypatch, topics, damage) -> None:
    monkeypatch.setattr(index_in_two, "MIN_BYTES", 0)
    # other tests of this process may have left idle threads; the shell's process has none
    monkeypatch.setattr(index_in_two, "_alone", lambda: True)
    records = []
    for n, (topic, partitions) in enumerate(topics):
        topic_id = uuid.UUID(int=topic if "duplicate" in damage else n + 1)
        records += [m.TopicRecordV0(name=f"t{n}", topic_id=topic_id), *(_partition(topic_id, p) for p in range(partitions))]
    if "stray" in damage:  # a PartitionRecord of another topic in the middle of a run
        records.insert(len(records) // 2, _partition(uuid.UUID(int=999), 0))
    buf = _bytes(records)
    headers, positions = _batch_headers(buf, "f")
    alone = index_snapshot(buf, "f")
    if len(headers) >= 4:
        try:
            in_two = index_in_two.index_in_two(buf, "f", headers, positions)
            assert in_two is not None  # a fork was possible: it must have been used
        except NotGrouped:
            in_two = None
        assert _shape(in_two) == _shape(alone)
    assert _shape(index_in_two.index_snapshot_on_two(buf, "f")) == _shape(alone)


def test_a_split_inside_a_topic_gives_its_runs_to_that_topic(monkeypatch) -> None:
    monkeypatch.setattr(index_in_two, "MIN_BYTES", 0)
    # other tests of this process may have left idle threads; the shell's process has none
    monkeypatch.setattr(index_in_two, "_alone", lambda: True)
    topic_id = uuid.UUID(int=1)
    buf = _bytes([m.TopicRecordV0(name="one", topic_id=topic_id), *(_partition(topic_id, p) for p in range(200))])
    headers, positions = _batch_headers(buf, "f")
    index = index_in_two.index_in_two(buf, "f", headers, positions)
    assert index is not None and len(index.topics) == 1
    assert len(index.topics[0].runs) == len(headers) - 2  # a run in every data batch
    assert list(index.topic_partitions(index.topics[0])) == list(range(200))
