"""An image as a snapshot's encoded records: image_writer's records, the PartitionRecords cheaper.

A controller snapshots its whole image every 20 MB of log (Kafka's default), so at a million
partitions the snapshots are most of the records it ever encodes: building a PartitionRecord
object per partition and encoding it took a third of every node's CPU in ``kraftd bench
controller``. Most partitions of a cluster look alike: the same replicas, ISR, leader and
directories recur across topics. A PartitionRecord's value is its header, the partition id
(int32) and the topic id (16 bytes), the four replica arrays and the leader, the two epochs
(int32 each), then the directories and tagged fields; so the parts around the ids and the epochs
are encoded once per distinct shape and reused, and a partition costs one struct pack of its
ids, one of its epochs and a join.

The bytes are exactly those of ``encode_record(image_writer.partition_record(...))`` (tested on
random images): the parts are cut from that very encoder's bytes for a record whose ids and
epochs are zero, and the values spliced in are packed as the encoder packs them.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, Iterator

from engine.image.image_writer import (
    partition_record, partition_record_level, records_after_topics, records_before_topics,
)
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.fast_encode import uvarint
from engine.records.metadata_record_serde import encode_record

Entry = tuple[bytes | None, bytes | None]  # (key, value) as a record batch holds it

# At most this many distinct registrations are remembered in one snapshot (a few MB); past it
# the table starts again, so a cluster of all-different partitions costs one dict lookup more.
TAIL_CACHE_LIMIT = 16_384
_ZERO_ID = uuid.UUID(int=0)
_HEAD = 3  # the record header: frame version, api key 3, version 0-2, three one-byte varints
_IDS = struct.Struct(">i16s")  # the partition id and the topic id, as the encoder packs them
_EPOCHS = struct.Struct(">ii")  # the leader epoch and the partition epoch, likewise


def image_entries(image: MetadataImage) -> Iterator[Entry]:
    """The (key, value) bytes of every record of a snapshot of ``image``, in image_records' order."""
    yield from map(encode_record, records_before_topics(image))
    level, elr = partition_record_level(image)
    shapes: dict[tuple, tuple[bytes, bytes, bytes]] = {}
    join, ids, epochs = b"".join, _IDS.pack, _EPOCHS.pack
    for topic in image.topics.by_id.values():
        yield encode_record(m.TopicRecordV0(name=topic.name, topic_id=topic.id))
        topic_bytes = topic.id.bytes
        for partition_id, p in topic.partitions.items():
            # everything but the two epochs (PartitionRegistration's fields 6 and 7)
            shape = (p[0], p[1], p[2], p[3], p[4], p[5], p[8], p[9], p[10])
            parts = shapes.get(shape)
            if parts is None:
                if len(shapes) >= TAIL_CACHE_LIMIT:
                    shapes.clear()
                parts = shapes[shape] = _split(p, level, elr)
            head, before_epochs, after_epochs = parts
            yield None, join((head, ids(partition_id, topic_bytes), before_epochs, epochs(p[6], p[7]),
                              after_epochs))
    yield from map(encode_record, records_after_topics(image))


def _split(p: Any, level: int, elr: bool) -> tuple[bytes, bytes, bytes]:
    """``p``'s record cut around the ids and the epochs: (header, from the replicas to the
    leader, from the directories on)."""
    _, value = encode_record(partition_record(_ZERO_ID, 0, p._replace(leader_epoch=0, partition_epoch=0), level, elr))
    # after the ids: four int32 arrays (a one-byte length each below 127 entries), the leader,
    # then the two epochs
    arrays = sum(4 * len(a) + len(uvarint(len(a) + 1)) for a in (p.replicas, p.isr, p.removing_replicas,
                                                                   p.adding_replicas))
    start = _HEAD + _IDS.size
    at = start + arrays + 4
    if value[_HEAD:start] != bytes(_IDS.size) or value[at:at + _EPOCHS.size] != bytes(_EPOCHS.size):
        raise AssertionError("a PartitionRecord not laid out as ids, arrays, leader, epochs")
    return value[:_HEAD], value[start:at], value[at + _EPOCHS.size:]


__all__ = ["TAIL_CACHE_LIMIT", "image_entries"]
