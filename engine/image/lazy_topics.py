"""A topics image whose partitions are decoded on first touch (issue 26).

``lazy_topics_image`` makes, from a SnapshotIndex (engine.image.snapshot_index), the TopicsImage
an eager load makes: the same TopicImage per topic (name, id), in the same order, with the same
names. Only a topic's ``partitions`` differ in kind: a ``LazyPartitions``, a read-only mapping that
decodes the topic's records from the snapshot's bytes the first time anything reads it (a
lookup, its length, an iteration, an equality) and is, from then on, that topic's partitions.

This fits the images' design unchanged: a delta that touches a topic copies its partitions
(TopicDelta), which decodes them first; a topic no delta touched stays the same TopicImage object
in every later image (a seek's checkpoints, a log directory's replay), so its partitions are
decoded once for all of them, and the snapshot is read once. A whole-image question (a summary,
``find``, an export) reads every topic and so decodes the rest; ``decode_all`` does it at once.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterator, Mapping

from engine.image.snapshot_index import IndexedTopic, SnapshotIndex
from engine.image.topics_image import TopicImage, TopicsImage


class LazyPartitions(Mapping):
    """One topic's partitions, decoded from ``index`` on first use."""

    __slots__ = ("_index", "_topic", "_decoded")

    def __init__(self, index: SnapshotIndex, topic: IndexedTopic) -> None:
        self._index: SnapshotIndex | None = index
        self._topic: IndexedTopic | None = topic
        self._decoded: Mapping | None = None

    @property
    def decoded(self) -> bool:
        """Whether the records were decoded (asked for here, or decoded ahead with the rest)."""
        topic = self._topic
        return self._decoded is not None or (topic is not None and topic.partitions is not None)

    def _partitions(self) -> Mapping:
        decoded = self._decoded
        if decoded is None:
            index, topic = self._index, self._topic
            if index is None:  # another thread decoded it meanwhile
                return self._decoded  # type: ignore[return-value]
            decoded = index.topic_partitions(topic)  # the same object to every thread that asks
            self._decoded = decoded
            self._index = self._topic = None
        return decoded

    def __getitem__(self, key: Any) -> Any:
        return self._partitions()[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._partitions().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._partitions()

    def __iter__(self) -> Iterator:
        return iter(self._partitions())

    def __len__(self) -> int:
        return len(self._partitions())

    def keys(self):
        return self._partitions().keys()

    def items(self):
        return self._partitions().items()

    def values(self):
        return self._partitions().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._partitions()) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        # a copy (a pickle, a deepcopy) holds the partitions, never the snapshot's bytes
        return dict, (dict(self._partitions()),)

    def __repr__(self) -> str:
        return f"LazyPartitions({dict(self._partitions())!r})" if self.decoded else "LazyPartitions(<not decoded yet>)"


def lazy_topics_image(index: SnapshotIndex) -> TopicsImage:
    """The topics of an indexed snapshot, each decoded on first touch."""
    by_id: dict = {}
    by_name: dict = {}
    for topic in index.topics:
        record = topic.record
        by_id[record.topic_id] = TopicImage(record.name, record.topic_id, LazyPartitions(index, topic))
        by_name[record.name] = record.topic_id  # a name given twice: the later id, as TopicsDelta.apply
    return TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))


def decode_all(topics: TopicsImage) -> None:
    """Decode every topic not decoded yet (a whole-image question is coming)."""
    for topic in topics.by_id.values():
        partitions = topic.partitions
        if isinstance(partitions, LazyPartitions) and not partitions.decoded:
            len(partitions)


def pending_partition_records(partitions: Mapping) -> int | None:
    """For a topic not decoded yet, how many PartitionRecords its runs hold: its partition count
    unless the file repeats a partition (the decode then keeps the last), so a count to lay out
    by, not to report; None once decoded (or for partitions that were never lazy): ask ``len``."""
    if not isinstance(partitions, LazyPartitions) or partitions.decoded:
        return None
    topic = partitions._topic
    runs = topic.runs if topic is not None else None
    if not runs or topic.partitions is not None:  # decoded meanwhile (another thread)
        return None
    return sum(run[2] for run in runs) - 1  # the first run begins with the TopicRecord


def undecoded_topics(topics: TopicsImage) -> int:
    """How many topics still wait for their partitions."""
    return sum(1 for t in topics.by_id.values() if isinstance(t.partitions, LazyPartitions) and not t.partitions.decoded)


__all__ = ["LazyPartitions", "decode_all", "lazy_topics_image", "pending_partition_records", "undecoded_topics"]
