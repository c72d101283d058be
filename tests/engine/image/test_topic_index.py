"""The per-topic broker index (Kafka's BrokersToIsrs/BrokersToElrs): the same partitions, in the
same order, as a scan of every partition; built once per topic object and rebuilt only for a
topic a delta changed."""

from __future__ import annotations

import uuid
from types import MappingProxyType

from hypothesis import given, strategies as st

from engine.image import topic_index as ti
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage, TopicImage, TopicsImage
from engine.image.partition_registration import NO_LEADER, PartitionRegistration
from engine.records import metadata_records as m
from engine.records.kio_codec import i32

BROKERS = range(1, 6)


@st.composite
def partition(draw) -> PartitionRegistration:
    replicas = tuple(draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True)))
    isr = tuple(b for b in replicas if draw(st.booleans()))
    elr = tuple(b for b in replicas if b not in isr and draw(st.booleans()))
    if draw(st.booleans()):  # as a damaged log may have it: a broker twice, or in both lists
        isr, elr = isr + isr[:1], elr + elr[:1] + isr[:1]
    leader = isr[0] if isr and draw(st.booleans()) else NO_LEADER
    return PartitionRegistration(replicas=replicas, isr=isr, leader=leader, elr=elr)


def image_of(topics: list[list[PartitionRegistration]]) -> MetadataImage:
    by_id, by_name = {}, {}
    for n, parts in enumerate(topics):
        topic_id = uuid.UUID(int=n + 1)
        by_id[topic_id] = TopicImage(f"t{n}", topic_id, MappingProxyType(dict(enumerate(parts))))
        by_name[f"t{n}"] = topic_id
    return MetadataImage(topics=TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name)))


def scan(image: MetadataImage, keep) -> list[tuple[str, int]]:
    return [(t.name, pid) for t in image.topics.by_id.values() for pid, p in t.partitions.items() if keep(p)]


def named(pairs) -> list[tuple[str, int]]:
    return [(t.name, pid) for t, pid in pairs]


@given(st.lists(st.lists(partition(), max_size=8), max_size=5), st.sampled_from(BROKERS))
def test_the_index_answers_as_a_scan_of_every_partition(topics, broker) -> None:
    image = image_of(topics)
    assert named(ti.partitions_in_isr(image, broker)) == scan(image, lambda p: broker in p.isr)
    assert named(ti.partitions_in_elr(image, broker)) == \
        scan(image, lambda p: broker in p.elr and broker not in p.isr)
    assert named(ti.leaderless_partitions(image)) == scan(image, lambda p: p.leader == NO_LEADER)
    assert ti.partitions_led_by(image, broker) == len(scan(image, lambda p: p.leader == broker))


def test_the_index_is_built_once_per_topic_and_a_changed_topic_gets_a_new_one() -> None:
    image = image_of([[PartitionRegistration((1, 2), (1, 2), leader=1)], [PartitionRegistration((2, 3), (3,), leader=3)]])
    first, second = image.topics.by_id.values()
    assert first._index is None
    index = ti.topic_index(first)
    assert ti.topic_index(first) is index and index.in_isr == {1: (0,), 2: (0,)} and index.led == {1: 1}
    ti.topic_index(second)
    delta = MetadataDelta(image)
    delta.replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=first.id, isr=(i32(1),)))
    after = delta.apply()
    changed, untouched = after.topics.by_id[first.id], after.topics.by_id[second.id]
    assert untouched is second and untouched._index is not None  # kept, index and all
    assert changed is not first and changed._index is None  # rebuilt on its next use
    assert ti.topic_index(changed).in_isr == {1: (0,)}
    assert list(ti.partitions_in_isr(after, 2)) == []
