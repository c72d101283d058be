"""A snapshot's topics decoded on first touch equal the eager load, field for field and in order."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, corpus_params
from engine.common.errors import MetadataError
from engine.image import metadata_loader
from engine.image.image_writer import image_records
from engine.image.lazy_topics import LazyPartitions, decode_all, undecoded_topics
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import image_of_snapshot, image_of_snapshot_bytes, load_snapshot
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64
from engine.records.record_batch import decode_batch
from engine.storage.log_reader import read_file
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes

SNAPSHOT_ID = SnapshotId(end_offset=100, epoch=3)
replicas = st.lists(st.integers(0, 5).map(i32), max_size=4).map(tuple)
directories = st.lists(st.sampled_from([None, uuid.UUID(int=1), uuid.UUID(int=7)]), max_size=4).map(tuple)


@st.composite
def partition_records(draw, topic_id: uuid.UUID):
    """A PartitionRecord of any version; its directories may not pair with its replicas (skipped)."""
    version = draw(st.sampled_from([0, 1, 2]))
    fields = dict(partition_id=draw(st.integers(0, 6).map(i32)), topic_id=topic_id, replicas=draw(replicas),
                  isr=draw(replicas), removing_replicas=(), adding_replicas=draw(replicas),
                  leader=draw(st.integers(-1, 5).map(i32)), leader_epoch=draw(st.integers(0, 9).map(i32)),
                  partition_epoch=draw(st.integers(0, 9).map(i32)))
    if version == 0:
        return m.PartitionRecordV0(**fields)
    fields["directories"] = draw(directories)
    if version == 1:
        return m.PartitionRecordV1(**fields)
    return m.PartitionRecordV2(**fields, eligible_leader_replicas=draw(st.one_of(st.none(), replicas)),
                               last_known_elr=draw(st.one_of(st.none(), replicas)))


@st.composite
def topic_groups(draw, ids=st.integers(1, 2**64)):
    """A topic's records as Kafka writes them: its TopicRecord, then its partitions."""
    topic_id = uuid.UUID(int=draw(ids))
    name = draw(st.sampled_from(["a", "b", "orders", "x" * 40]))  # names may repeat under other ids
    return [m.TopicRecordV0(name=name, topic_id=topic_id), *draw(st.lists(partition_records(topic_id), max_size=12))]


others = st.one_of(
    st.builds(m.ConfigRecordV0, resource_type=st.just(i8(2)), resource_name=st.sampled_from(["a", "b"]),
              name=st.sampled_from(["retention.ms", "cleanup.policy"]), value=st.sampled_from(["1", "compact"])),
    st.builds(m.FeatureLevelRecordV0, name=st.just("metadata.version"), feature_level=st.integers(7, 27).map(i16)),
    st.builds(m.ProducerIdsRecordV0, broker_id=st.integers(0, 3).map(i32), broker_epoch=st.just(i64(1)),
              next_producer_id=st.integers(0, 10**6).map(i64)),
)


def _write(tmp_path: Path, records: list, max_batch_bytes: int) -> Path:
    path = tmp_path / SNAPSHOT_ID.file_name
    path.write_bytes(snapshot_bytes(records, epoch=3, last_contained_log_timestamp_ms=777, now_ms=888,
                                    max_batch_bytes=max_batch_bytes))
    return path


def _eager(path: Path) -> tuple[MetadataImage, int]:
    return image_of_snapshot(read_file(path, snapshot=True), SNAPSHOT_ID)


def _assert_same(lazy: MetadataImage, eager: MetadataImage) -> None:
    """Field for field, and every order a reader sees (topics, names, partitions)."""
    assert lazy == eager
    assert list(lazy.topics.by_id) == list(eager.topics.by_id)
    assert list(lazy.topics.by_name.items()) == list(eager.topics.by_name.items())
    for topic_id, topic in eager.topics.by_id.items():
        assert list(lazy.topics.by_id[topic_id].partitions.items()) == list(topic.partitions.items())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(others, max_size=4), st.lists(topic_groups(), max_size=8, unique_by=lambda g: g[0].topic_id),
       st.lists(others, max_size=4),
       st.integers(120, 3000))
def test_a_grouped_snapshot_loads_lazily_and_equals_the_eager_load(tmp_path, before, topics, after, batch_bytes) -> None:
    path = _write(tmp_path, [*before, *(r for group in topics for r in group), *after], batch_bytes)
    eager, eager_skipped = _eager(path)
    lazy, skipped = image_of_snapshot_bytes(path.read_bytes(), str(path), SNAPSHOT_ID)
    assert undecoded_topics(lazy.topics) == len(topics)  # nothing decoded at load
    _assert_same(lazy, eager)
    assert undecoded_topics(lazy.topics) == 0
    assert skipped + _topic_skips(lazy, path) == eager_skipped


def _topic_skips(lazy: MetadataImage, path: Path) -> int:
    """The records the topics' decoding skipped: a fresh lazy load, every topic decoded."""
    again, _ = image_of_snapshot_bytes(path.read_bytes(), str(path), SNAPSHOT_ID)
    first = next((t.partitions for t in again.topics.by_id.values()), None)
    if first is None:
        return 0
    index = first._index
    decode_all(again.topics)
    return index.skipped


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 3)), st.data())
def test_an_image_written_by_the_engine_loads_lazily_and_equals_the_eager_load(tmp_path, shape, data) -> None:
    """Random histories replayed into an image, written back as Kafka writes a snapshot."""
    delta = MetadataDelta(MetadataImage())
    for kind in shape:
        for record in data.draw(topic_groups()) if kind == 0 else [data.draw(others)]:
            delta.replay(record)
    image = delta.apply()
    path = _write(tmp_path, list(image_records(image)), data.draw(st.integers(120, 3000)))
    loaded, _ = load_snapshot(path)
    assert all(isinstance(t.partitions, LazyPartitions) for t in loaded.topics.by_id.values())
    _assert_same(loaded, _eager(path)[0])


cross_topic = st.one_of(
    st.builds(m.RemoveTopicRecordV0, topic_id=st.just(uuid.UUID(int=1))),
    st.builds(m.ClearElrRecordV0, topic_name=st.sampled_from(["", "a"])),
    st.builds(m.PartitionChangeRecordV0, partition_id=st.integers(0, 3).map(i32), topic_id=st.just(uuid.UUID(int=1)),
              isr=st.one_of(st.none(), replicas), leader=st.integers(-2, 3).map(i32)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(topic_groups(st.integers(1, 3)),
                          st.lists(st.one_of(others, cross_topic, partition_records(uuid.UUID(int=1))), max_size=3)),
                max_size=6),
       st.randoms(use_true_random=False), st.integers(120, 3000))
def test_any_snapshot_loads_as_the_eager_load_grouped_or_not(tmp_path, groups, random, batch_bytes) -> None:
    """Records out of Kafka's order, topics made twice, records acting across topics: the load
    falls back to the eager replay where it must, and is never different from it."""
    records = [r for group in groups for r in group]
    if random.random() < 0.3:
        random.shuffle(records)
    path = _write(tmp_path, records, batch_bytes)
    loaded, info = load_snapshot(path)
    eager, eager_skipped = _eager(path)
    _assert_same(loaded, eager)


def test_a_partition_of_another_topic_inside_a_run_falls_back_to_the_eager_load(tmp_path) -> None:
    """Topic a, topic b, then a partition of a among b's: the eager replay puts it in a."""
    a, b = uuid.UUID(int=1), uuid.UUID(int=2)

    def partition(topic_id: uuid.UUID, p: int) -> m.PartitionRecordV0:
        return m.PartitionRecordV0(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),),
                                   removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                   partition_epoch=i32(0))

    records = [m.TopicRecordV0(name="a", topic_id=a), partition(a, 0), m.TopicRecordV0(name="b", topic_id=b),
               partition(b, 0), partition(a, 1), partition(b, 1)]
    path = _write(tmp_path, records, 1000)
    assert image_of_snapshot_bytes(path.read_bytes(), str(path), SNAPSHOT_ID) is None
    image, _ = load_snapshot(path)
    assert list(image.topics.topic("a").partitions) == [0, 1] and list(image.topics.topic("b").partitions) == [0, 1]


def test_a_partition_before_its_topic_falls_back_to_the_eager_load(tmp_path) -> None:
    topic = uuid.UUID(int=1)
    records = [m.PartitionRecordV0(partition_id=i32(0), topic_id=topic, replicas=(i32(1),), isr=(i32(1),),
                                   removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                   partition_epoch=i32(0)),
               m.TopicRecordV0(name="a", topic_id=topic)]
    path = _write(tmp_path, records, 1000)
    assert image_of_snapshot_bytes(path.read_bytes(), str(path), SNAPSHOT_ID) is None
    image, info = load_snapshot(path)
    assert image.topics.topic("a").partitions == {} and info.skipped_records == 1


def _big_snapshot(tmp_path: Path, topics: int = 40) -> Path:
    records = []
    for n in range(topics):
        topic_id = uuid.UUID(int=n + 1)
        records.append(m.TopicRecordV0(name=f"t{n}", topic_id=topic_id))
        records += [m.PartitionRecordV0(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1), i32(2)),
                                        isr=(i32(1),), removing_replicas=(), adding_replicas=(), leader=i32(1),
                                        leader_epoch=i32(p), partition_epoch=i32(0)) for p in range(20)]
    return _write(tmp_path, records, 2000)


def _batch_positions(buf: bytes) -> list[int]:
    positions, pos = [], 0
    while pos < len(buf):
        positions.append(pos)
        pos = decode_batch(buf, pos, decode_records=False)[1]
    return positions


def test_a_flipped_byte_in_a_late_batch_is_reported_in_one_line_naming_file_and_offset(tmp_path) -> None:
    path = _big_snapshot(tmp_path)
    buf = bytearray(path.read_bytes())
    positions = _batch_positions(bytes(buf))
    late, late_end = positions[-3], positions[-2]  # a data batch near the end (the last is the footer)
    # a PartitionRecord's leader 1, leader epoch 5, partition epoch 0: the epoch made 4, every
    # length and type still reads, only the CRC tells
    at = bytes(buf).find(b"\x00\x00\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00", late, late_end)
    assert at > 0
    buf[at + 7] ^= 0x01
    path.write_bytes(bytes(buf))
    with pytest.raises(MetadataError) as raised:
        image, _ = load_snapshot(path)
        decode_all(image.topics)  # were it not found at open, the first read of that part finds it
    line = raised.value.one_line()
    assert "\n" not in line and str(path) in line and f"byte offset {late}" in line and "checksum" in line


def test_a_topic_is_decoded_on_first_touch_and_the_rest_stay_undecoded(tmp_path) -> None:
    image, _ = load_snapshot(_big_snapshot(tmp_path))
    assert sorted(image.topics.by_name) == sorted(f"t{n}" for n in range(40))
    assert image.topics.topic("t7").partitions[3].leader_epoch == 3
    assert undecoded_topics(image.topics) == 39


def test_the_rest_are_decoded_in_one_go_once_a_walk_over_every_topic_begins(tmp_path) -> None:
    from engine.image.snapshot_index import DECODE_AHEAD

    image, _ = load_snapshot(_big_snapshot(tmp_path, topics=DECODE_AHEAD + 10))
    topics = list(image.topics.by_id.values())
    for topic in topics[:DECODE_AHEAD - 1]:
        len(topic.partitions)
    assert undecoded_topics(image.topics) == 11
    len(topics[DECODE_AHEAD - 1].partitions)
    assert undecoded_topics(image.topics) == 0
    assert list(topics[-1].partitions) == list(range(20))


@pytest.mark.parametrize("path", corpus_params(sorted(CORPUS.rglob("*.checkpoint")) if CORPUS.is_dir() else []))
def test_every_corpus_snapshot_loads_lazily_and_equals_the_eager_load(path) -> None:
    snapshot_id = metadata_loader._snapshot_id_of(path)
    lazy = image_of_snapshot_bytes(path.read_bytes(), str(path), snapshot_id)
    assert lazy is not None, "Kafka's own snapshot is in the grouped shape"
    eager, eager_skipped = image_of_snapshot(read_file(path, snapshot=True), snapshot_id)
    _assert_same(lazy[0], eager)


def test_a_record_acting_across_topics_falls_back_to_the_eager_load(tmp_path) -> None:
    """Found by the property above: a ClearElrRecord (api key 28) after the topics must be
    replayed over their partitions, so such a file is loaded eagerly."""
    topic = uuid.UUID(int=1)
    records = [m.TopicRecordV0(name="a", topic_id=topic),
               m.PartitionRecordV2(partition_id=i32(0), topic_id=topic, replicas=(), isr=(), removing_replicas=(),
                                   adding_replicas=(), leader=i32(0), leader_epoch=i32(0), partition_epoch=i32(0),
                                   directories=(), last_known_elr=(i32(0),)),
               m.ClearElrRecordV0(topic_name="")]
    path = _write(tmp_path, records, 1000)
    assert image_of_snapshot_bytes(path.read_bytes(), str(path), SNAPSHOT_ID) is None
    image, _ = load_snapshot(path)
    assert image.topics.topic("a").partitions[0].last_known_elr == ()
