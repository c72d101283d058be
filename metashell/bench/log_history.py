"""A big recorded history for ``metashell bench log``: an archive of N records, written fast.

A cluster of 6 brokers and ``topics`` topics of ``partitions`` partitions each (one of them
named ``X``), then batches of 50 records until N: about half NoOpRecords (the controllers' own
heartbeat into the log, KIP-835), 40% partition changes (an ISR shrinking or growing back, one
in ten a leader moving within the ISR), 5% brokers fenced and unfenced in turn, 5% topic config
changes (``retention.ms``; one in ten of them on ``X``). Deterministic for a seed. Written with
our own log writer (engine/storage/metadata_log.py) into ``DIR/__cluster_metadata-0``, in
segments of ``segment_bytes``, with a snapshot at the end (as the recorder keeps them, so that
opening the archive does not replay it all) and an ``archive.json`` manifest.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Callable

from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId

BROKERS = 6
BATCH_RECORDS = 50
SEGMENT_BYTES = 256 * 1024 * 1024
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class _Partitions:
    """The generator's own view of each partition: replicas, ISR and leader (what the changes toggle)."""

    def __init__(self, count: int, rng: random.Random) -> None:
        self.replicas = [tuple(rng.sample(range(1, BROKERS + 1), 3)) for _ in range(count)]
        self.isr = [r for r in self.replicas]
        self.leader = [r[0] for r in self.replicas]


def _register(broker_id: int) -> m.RegisterBrokerRecordV3:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host=f"b{broker_id}", port=u16(9092),
                                                      security_protocol=i16(0))
    return m.RegisterBrokerRecordV3(broker_id=i32(broker_id), is_migrating_zk_broker=False,
                                    incarnation_id=uuid.UUID(int=broker_id), broker_epoch=i64(10 + broker_id),
                                    end_points=(endpoint,), features=(), rack=None, fenced=True,
                                    in_controlled_shutdown=False, log_dirs=())


def _fencing(broker_id: int, fenced: bool) -> m.BrokerRegistrationChangeRecordV2:
    return m.BrokerRegistrationChangeRecordV2(broker_id=i32(broker_id), broker_epoch=i64(10 + broker_id),
                                              fenced=i8(1 if fenced else -1))


def topic_name(index: int) -> str:
    return "X" if index == 0 else f"t{index:05d}"


def _creation(index: int, topic_id: uuid.UUID, partitions: int, state: _Partitions) -> list:
    records: list = [m.TopicRecordV0(name=topic_name(index), topic_id=topic_id),
                     m.ConfigRecordV0(resource_type=i8(2), resource_name=topic_name(index), name="retention.ms",
                                      value="604800000")]
    for pid in range(partitions):
        slot = index * partitions + pid
        replicas = tuple(map(i32, state.replicas[slot]))
        records.append(m.PartitionRecordV2(
            partition_id=i32(pid), topic_id=topic_id, replicas=replicas, isr=replicas, removing_replicas=(),
            adding_replicas=(), leader=i32(state.leader[slot]), leader_recovery_state=i8(0), leader_epoch=i32(0),
            partition_epoch=i32(0), directories=(None,) * len(replicas), eligible_leader_replicas=None,
            last_known_elr=None))
    return records


def write_big_history(directory: Path, records: int, *, topics: int = 1_000, partitions: int = 10, seed: int = 1,
                      progress: Callable[[str], None] = lambda line: None) -> Path:
    """Write the history into ``directory`` (made; must not hold a log yet); returns it."""
    rng = random.Random(seed)
    state = _Partitions(topics * partitions, rng)
    topic_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(topics)]
    fenced = [False] * (BROKERS + 1)
    now_ms = START_MS
    with MetadataLog.create(directory, segment_bytes=SEGMENT_BYTES, fsync_policy="never") as log:
        log.append([m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))], epoch=1,
                   timestamp_ms=now_ms)
        log.append([_register(b) for b in range(1, BROKERS + 1)], epoch=1, timestamp_ms=now_ms)
        log.append([_fencing(b, False) for b in range(1, BROKERS + 1)], epoch=1, timestamp_ms=now_ms)
        for index in range(topics):
            log.append(_creation(index, topic_ids[index], partitions, state), epoch=1, timestamp_ms=now_ms)
        next_report = 1_000_000
        while log.end_offset < records:
            now_ms += 500
            batch = [_one(rng, state, topic_ids, partitions, fenced) for _ in range(min(BATCH_RECORDS,
                                                                                        records - log.end_offset))]
            log.append(batch, epoch=1, timestamp_ms=now_ms)
            if log.end_offset >= next_report:
                progress(f"{log.end_offset:,} records written")
                next_report += 1_000_000
        end = log.end_offset
    image, _ = load_log_dir(directory)
    with MetadataLog(directory / "__cluster_metadata-0", segment_bytes=SEGMENT_BYTES, fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(end, 1), image_records(image), last_contained_log_timestamp_ms=now_ms,
                           now_ms=now_ms)
    (directory / "archive.json").write_text(json.dumps({
        "format": 1, "cluster_id": "bench", "first_offset": 0, "last_offset": end - 1, "ranges": [[0, end - 1]],
        "gaps": [], "snapshots": [[end, 1]]}))
    return directory


def _one(rng: random.Random, state: _Partitions, topic_ids: list, partitions: int, fenced: list) -> object:
    roll = rng.random()
    if roll < 0.5:
        return m.NoOpRecordV0()
    if roll < 0.9:
        slot = rng.randrange(len(state.replicas))
        topic_id, pid = topic_ids[slot // partitions], slot % partitions
        replicas, isr = state.replicas[slot], state.isr[slot]
        if rng.random() < 0.1 and len(isr) > 1:  # the leader moves within the ISR
            leader = next(r for r in isr if r != state.leader[slot])
            state.leader[slot] = leader
            return m.PartitionChangeRecordV2(partition_id=i32(pid), topic_id=topic_id, leader=i32(leader))
        if len(isr) == len(replicas):  # a follower falls out
            isr = tuple(r for r in replicas if r != next(r for r in replicas if r != state.leader[slot]))
        else:
            isr = replicas
        state.isr[slot] = isr
        return m.PartitionChangeRecordV2(partition_id=i32(pid), topic_id=topic_id, isr=tuple(map(i32, isr)))
    if roll < 0.95:
        broker = rng.randrange(1, BROKERS + 1)
        fenced[broker] = not fenced[broker]
        return _fencing(broker, fenced[broker])
    index = 0 if rng.random() < 0.1 else rng.randrange(len(topic_ids))
    return m.ConfigRecordV0(resource_type=i8(2), resource_name=topic_name(index), name="retention.ms",
                            value=str(rng.randrange(1, 30) * 86_400_000))
