"""image_entries(image) gives byte for byte what encoding image_records(image) gives."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.image import image_entries as entries_module
from engine.image.image_entries import image_entries
from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32
from engine.records.metadata_record_serde import encode_record

TOPICS = [uuid.UUID(int=n) for n in (101, 2**127 + 7, 2**128 - 1)]
replica_ids = st.integers(-1, 2**31 - 1).map(i32)
short_lists = st.lists(replica_ids, max_size=4).map(tuple)
# a list past 126 entries takes a two-byte length
replica_lists = st.one_of(short_lists, st.lists(replica_ids, min_size=126, max_size=130).map(tuple))
directory_ids = st.sampled_from([None, uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=9), uuid.UUID(int=2**128 - 1)])
epochs = st.one_of(st.integers(0, 3), st.integers(-1, 2**31 - 1)).map(i32)


@st.composite
def partition_records(draw):
    version = draw(st.integers(0, 2))
    replicas = draw(replica_lists)
    fields = dict(partition_id=draw(st.integers(0, 2**31 - 1).map(i32)), topic_id=draw(st.sampled_from(TOPICS)),
                  replicas=replicas, isr=draw(short_lists), removing_replicas=draw(short_lists),
                  adding_replicas=draw(short_lists), leader=draw(replica_ids),
                  leader_recovery_state=draw(st.sampled_from([0, 1]).map(i8)),
                  leader_epoch=draw(epochs), partition_epoch=draw(epochs))
    if version >= 1:  # none, or one per replica (the image refuses others)
        fields["directories"] = draw(st.one_of(st.just(()), st.lists(
            directory_ids, min_size=len(replicas), max_size=len(replicas)).map(tuple)))
    if version >= 2:
        fields["eligible_leader_replicas"] = draw(st.one_of(st.none(), short_lists))
        fields["last_known_elr"] = draw(st.one_of(st.none(), short_lists))
    return m.RECORD_CLASSES[(3, version)](**fields)


features = st.builds(m.FeatureLevelRecordV0, name=st.sampled_from(["metadata.version", "eligible.leader.replicas.version"]),
                     feature_level=st.integers(0, 30).map(i16))
histories = st.lists(st.one_of(
    st.integers(0, 2).map(lambda n: m.TopicRecordV0(name=f"topic-{n}", topic_id=TOPICS[n])),
    partition_records(), features), max_size=60)


def _image(history) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for record in history:
        delta.replay(record)
    return delta.apply()


def _bench_like(topics: int, partitions: int) -> list:
    """CreateTopics' shape: many partitions alike but for their ids (epochs 0), a few not."""
    history = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(30))]
    for t in range(topics):
        topic_id = uuid.UUID(int=1000 + t)
        history.append(m.TopicRecordV0(name=f"bench-{t}", topic_id=topic_id))
        for p in range(partitions):
            replicas = tuple(i32(1 + (p + k) % 5) for k in range(1 + t % 3))
            history.append(m.PartitionRecordV2(
                partition_id=i32(p), topic_id=topic_id, replicas=replicas, isr=replicas, removing_replicas=(),
                adding_replicas=(), leader=replicas[0], leader_recovery_state=i8(0), leader_epoch=i32(p % 2),
                partition_epoch=i32(t), directories=tuple(uuid.UUID(int=50 + r) for r in replicas),
                eligible_leader_replicas=None, last_known_elr=None))
    return history


@settings(max_examples=300, deadline=None)
@given(histories)
@example(_bench_like(3, 20))
def test_entries_are_the_encoded_records(history) -> None:
    image = _image(history)
    assert list(image_entries(image)) == [encode_record(r) for r in image_records(image)]


def test_the_shape_table_starting_again_changes_no_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    image = _image(_bench_like(4, 30))
    expected = [encode_record(r) for r in image_records(image)]
    monkeypatch.setattr(entries_module, "TAIL_CACHE_LIMIT", 2)
    assert list(image_entries(image)) == expected


def test_partitions_that_differ_in_one_field_each_keep_their_own_bytes() -> None:
    """Two registrations differing in one field only never share their cut parts."""
    topic_id = TOPICS[0]
    base = dict(topic_id=topic_id, replicas=(i32(1), i32(2)), isr=(i32(1), i32(2)), removing_replicas=(),
                adding_replicas=(), leader=i32(1), leader_recovery_state=i8(0), leader_epoch=i32(0),
                partition_epoch=i32(0), directories=(uuid.UUID(int=60), uuid.UUID(int=61)),
                eligible_leader_replicas=None, last_known_elr=None)
    changes = [{}, dict(replicas=(i32(2), i32(1))), dict(isr=(i32(1),)), dict(removing_replicas=(i32(2),)),
               dict(adding_replicas=(i32(2),)), dict(leader=i32(2)), dict(leader_recovery_state=i8(1)),
               dict(leader_epoch=i32(1)), dict(partition_epoch=i32(1)),
               dict(directories=(uuid.UUID(int=61), uuid.UUID(int=60))), dict(eligible_leader_replicas=(i32(2),)),
               dict(last_known_elr=(i32(2),))]
    history = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(30)),
               m.TopicRecordV0(name="t", topic_id=topic_id)]
    history += [m.PartitionRecordV2(partition_id=i32(n), **{**base, **change}) for n, change in enumerate(changes)]
    image = _image(history)
    values = [value for _, value in image_entries(image)]
    assert values == [encode_record(r)[1] for r in image_records(image)]
    assert len(set(v[23:] for v in values[-len(changes):])) == len(changes)  # each its own tail
