"""Which partitions of a topic each broker is in: Kafka's ``BrokersToIsrs`` and ``BrokersToElrs``,
without their bookkeeping.

A controller fences, unfences or shuts down a broker by visiting the partitions whose ISR or
ELR holds it, or that have no leader. Scanning a million partitions for each of a thousand
brokers coming up is minutes of work; the index is built once per topic object and cached on
it (images are immutable, and a topic a delta did not touch is the same object in the next
image), so each visit costs one lookup per topic. Partition ids keep the topic's own order,
so the records written follow the same order as a full scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from engine.image.metadata_image import MetadataImage
from engine.image.topics_image import TopicImage
from engine.image.partition_registration import NO_LEADER


@dataclass(frozen=True, slots=True)
class TopicIndex:
    in_isr: Mapping[int, tuple[int, ...]]  # broker id -> partitions whose ISR holds it
    in_elr: Mapping[int, tuple[int, ...]]  # ... whose ELR holds it (and the ISR does not: they are disjoint)
    leaderless: tuple[int, ...]  # partitions with no leader
    led: Mapping[int, int]  # broker id -> how many partitions it leads


def topic_index(topic: TopicImage) -> TopicIndex:
    index = topic._index
    if index is None:
        index = _build(topic)
        object.__setattr__(topic, "_index", index)  # a cache on a frozen object: same answer every time
    return index


def _build(topic: TopicImage) -> TopicIndex:
    in_isr: dict[int, list[int]] = {}
    in_elr: dict[int, list[int]] = {}
    leaderless: list[int] = []
    led: dict[int, int] = {}
    for pid, p in topic.partitions.items():
        # dict.fromkeys: a broker named twice (a damaged record) still lists the partition once
        for broker in dict.fromkeys(p.isr):
            in_isr.setdefault(broker, []).append(pid)
        for broker in dict.fromkeys(p.elr):
            if broker not in p.isr:  # a damaged record naming it in both: visited once, as in the ISR
                in_elr.setdefault(broker, []).append(pid)
        if p.leader == NO_LEADER:
            leaderless.append(pid)
        else:
            led[p.leader] = led.get(p.leader, 0) + 1
    return TopicIndex({b: tuple(v) for b, v in in_isr.items()}, {b: tuple(v) for b, v in in_elr.items()},
                      tuple(leaderless), led)


def partitions_in_isr(image: MetadataImage, broker_id: int) -> Iterator[tuple[TopicImage, int]]:
    for topic in image.topics.by_id.values():
        for pid in topic_index(topic).in_isr.get(broker_id, ()):
            yield topic, pid


def partitions_in_elr(image: MetadataImage, broker_id: int) -> Iterator[tuple[TopicImage, int]]:
    for topic in image.topics.by_id.values():
        for pid in topic_index(topic).in_elr.get(broker_id, ()):
            yield topic, pid


def leaderless_partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int]]:
    for topic in image.topics.by_id.values():
        for pid in topic_index(topic).leaderless:
            yield topic, pid


def partitions_led_by(image: MetadataImage, broker_id: int) -> int:
    return sum(topic_index(topic).led.get(broker_id, 0) for topic in image.topics.by_id.values())


__all__ = ["TopicIndex", "leaderless_partitions", "partitions_in_elr", "partitions_in_isr",
           "partitions_led_by", "topic_index"]
