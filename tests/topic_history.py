"""A seeded random history of topics (created, changed, removed, made anew) for the tests of
what follows an image from step to step: the kept sums (engine.image.topic_sums), the
dashboard's totals."""

from __future__ import annotations

import random
import uuid

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from tests.controller_helpers import bootstrapped

TOPIC_IDS = [uuid.UUID(int=(1 << 64) + 100 + t) for t in range(6)]


def _partition(topic_id: uuid.UUID, pid: int, replicas: tuple[int, ...], leader: int) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(partition_id=i32(pid), topic_id=topic_id, replicas=tuple(map(i32, replicas)),
                               isr=tuple(map(i32, replicas)), removing_replicas=(), adding_replicas=(),
                               leader=i32(leader), leader_epoch=i32(0), partition_epoch=i32(0),
                               directories=tuple(None for _ in replicas), eligible_leader_replicas=(),
                               last_known_elr=())


def batch(rng: random.Random) -> list:
    """One batch of 1-3 records: a topic made (anew over its id too), removed, or partitions changed."""
    records: list = []
    for _ in range(rng.randint(1, 3)):
        t = rng.randrange(len(TOPIC_IDS))
        topic_id, kind = TOPIC_IDS[t], rng.random()
        if kind < 0.25:
            records.append(m.TopicRecordV0(name=f"t{t}-{rng.randrange(2)}", topic_id=topic_id))
            replicas = tuple(rng.sample(range(1, 5), 3))
            records += [_partition(topic_id, p, replicas, rng.choice([-1, *replicas])) for p in range(rng.randint(0, 4))]
        elif kind < 0.35:
            records.append(m.RemoveTopicRecordV0(topic_id=topic_id))
        else:  # refused (skipped) when there is no such topic or partition: as replay does
            isr = tuple(map(i32, rng.sample(range(1, 5), rng.randint(0, 3))))
            records.append(m.PartitionChangeRecordV0(partition_id=i32(rng.randrange(4)), topic_id=topic_id,
                                                     leader=i32(rng.choice([-1, 1, 2, 3, 4])), isr=isr))
    return records


def history(seed: int, batches: int) -> list[MetadataImage]:
    rng = random.Random(seed)
    images = [bootstrapped()]
    for _ in range(batches):
        image = images[-1]
        delta = MetadataDelta(image)
        for i, record in enumerate(batch(rng)):
            delta.replay(record, image.provenance.last_offset + 1 + i, 3, 5_000)
        images.append(delta.apply())
    return images


def visits(seed: int, count: int, length: int) -> list[int]:
    """Image indexes as the dashboard visits them: mostly one step on or back, sometimes a jump."""
    rng, at, out = random.Random(seed), 0, []
    for _ in range(length):
        move = rng.random()
        at = rng.randrange(count) if move < 0.15 else max(0, min(count - 1, at + (1 if move < 0.75 else -1)))
        out.append(at)
    return out


