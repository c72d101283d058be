"""The files ``kraftd bench peer`` gives both sides: a snapshot laid out as Kafka 4.x writes one,
a log to dump, and what each file holds (so that both shells' answers can be checked).

The snapshot is the one a Kafka 4.1 controller of a 1,000,000-partition cluster would write
(MetadataImage.write through SnapshotEmitter): a control batch with the SnapshotHeaderRecord,
KRaftVersionRecord (kraft.version 1, a quorum formatted with --initial-controllers) and
VotersRecord; then, in that order, the FeatureLevelRecords, a RegisterBrokerRecord v3 per broker
(each with its one log directory), a RegisterControllerRecord per controller, each TopicRecord
followed by its PartitionRecords v2 (every replica placed in its broker's directory, as
ClusterControlManager.defaultDir places it on a broker with a single directory), a
ProducerIdsRecord; then the SnapshotFooterRecord. Data batches are cut as Kafka's
RaftSnapshotWriter and BatchAccumulator cut them: records are appended 1,024 at a time
(SnapshotEmitter's batch size) into batches of at most 8 MiB (KafkaRaftClient.MAX_BATCH_SIZE_BYTES).
An earlier version of this bench wrote MIGRATING directories (the all-zero id, which our decoder
turns into None without building UUIDs) and no brokers: a file that flattered us.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from engine.common.errors import ConfigError
from engine.common.kafka_uuid import uuid_to_kafka
from engine.records import metadata_records as m
from engine.records.kio_codec import (KRaftVersionFeature, KRaftVersionRecord, SnapshotFooterRecord,
                                      SnapshotHeaderRecord, VotersEndpoint, VotersRecord, VotersVoter,
                                      i16, i32, i64, u16)
from engine.records.metadata_record_serde import control_record, encode_record
from engine.records.record_batch import encode_entries
from engine.storage.snapshot_writer import SnapshotId
from engine.bench.replay import write_bench_log

MAX_BATCH_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
APPEND_RECORDS = 1024  # SnapshotEmitter's DEFAULT_BATCH_SIZE: RaftSnapshotWriter's appends
BATCH_HEADER_BYTES = 61  # a v2 record batch's header, its length prefix included
PARTITIONS_PER_TOPIC = 100
BROKERS = 6
CONTROLLERS = (3000, 3001, 3002)
EPOCH = 7
TIMESTAMP_MS = 1_764_000_000_000
# What a Kafka 4.1 cluster formatted with its defaults holds (the corpus's 4.1 snapshot):
# metadata.version 4.1-IV1, which Kafka 4.1.2 and every later release read.
FEATURES = (("metadata.version", 27), ("group.version", 1), ("eligible.leader.replicas.version", 1),
            ("transaction.version", 2))
SUPPORTED = (("group.version", 0, 1), ("transaction.version", 0, 2), ("eligible.leader.replicas.version", 0, 1),
             ("kraft.version", 0, 1), ("metadata.version", 7, 27), ("share.version", 0, 1))


@dataclass(frozen=True, slots=True)
class Probe:
    """One partition, with the fields a ``cat`` of it must show."""

    topic: str
    partition: int
    replicas: list[int]
    directories: list[str]
    leader: int
    leader_epoch: int
    partition_epoch: int

    @property
    def path(self) -> str:
        return f"/image/topics/byName/{self.topic}/{self.partition}"


@dataclass(frozen=True, slots=True)
class Manifest:
    """What the snapshot holds, for the answer checker: topic names and partition counts, in order."""

    topics: dict[str, int]
    probe: Probe
    records: int

    @property
    def partitions(self) -> int:
        return sum(self.topics.values())

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"topics": self.topics, "probe": asdict(self.probe), "records": self.records}))

    @staticmethod
    def load(path: Path) -> "Manifest":
        data = json.loads(path.read_text())
        return Manifest(data["topics"], Probe(**data["probe"]), data["records"])


def kafka4_records(partitions: int, seed: int = 7) -> tuple[Iterator[object], Callable[[], Manifest]]:
    """The metadata records of the snapshot, lazily, and (once they are all taken) their manifest."""
    rng = random.Random(seed)
    brokers = list(range(1, BROKERS + 1))
    directory = {b: uuid.UUID(int=rng.getrandbits(128)) for b in brokers}
    topics: dict[str, int] = {}
    probe_topic = ((partitions - 1) // PARTITIONS_PER_TOPIC) // 2
    found: list[Probe] = []

    def records() -> Iterator[object]:
        for name, level in FEATURES:
            yield m.FeatureLevelRecordV0(name=name, feature_level=i16(level))
        for broker in brokers:
            yield m.RegisterBrokerRecordV3(
                broker_id=i32(broker), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=rng.getrandbits(128)),
                broker_epoch=i64(1000 + broker), end_points=(m.RegisterBrokerRecordV3BrokerEndpoint(
                    name="PLAINTEXT", host=f"broker-{broker}", port=u16(9092), security_protocol=i16(0)),),
                features=tuple(m.RegisterBrokerRecordV3BrokerFeature(
                    name=n, min_supported_version=i16(lo), max_supported_version=i16(hi)) for n, lo, hi in SUPPORTED),
                rack=None, fenced=False, in_controlled_shutdown=False, log_dirs=(directory[broker],))
        for controller in CONTROLLERS:
            yield m.RegisterControllerRecordV0(
                controller_id=i32(controller), incarnation_id=uuid.UUID(int=rng.getrandbits(128)),
                zk_migration_ready=False, end_points=(m.RegisterControllerRecordV0ControllerEndpoint(
                    name="CONTROLLER", host=f"controller-{controller}", port=u16(9093), security_protocol=i16(0)),),
                features=tuple(m.RegisterControllerRecordV0ControllerFeature(
                    name=n, min_supported_version=i16(lo), max_supported_version=i16(hi)) for n, lo, hi in SUPPORTED))
        for index, start in enumerate(range(0, partitions, PARTITIONS_PER_TOPIC)):
            name, topic_id = f"topic-{index:05d}", uuid.UUID(int=rng.getrandbits(128))
            count = min(PARTITIONS_PER_TOPIC, partitions - start)
            topics[name] = count
            yield m.TopicRecordV0(name=name, topic_id=topic_id)
            for partition in range(count):
                replicas = tuple(i32(b) for b in rng.sample(brokers, 3))
                leader_epoch, partition_epoch = rng.randrange(9), rng.randrange(9)
                dirs = tuple(directory[b] for b in replicas)
                if index == probe_topic and partition == min(42, count - 1):
                    found.append(Probe(name, partition, list(replicas), [uuid_to_kafka(d) for d in dirs],
                                       replicas[0], leader_epoch, partition_epoch))
                yield m.PartitionRecordV2(
                    partition_id=i32(partition), topic_id=topic_id, replicas=replicas, isr=replicas,
                    removing_replicas=(), adding_replicas=(), leader=replicas[0], leader_epoch=i32(leader_epoch),
                    partition_epoch=i32(partition_epoch), directories=dirs,
                    eligible_leader_replicas=None, last_known_elr=None)  # empty ELR lists: null, as Kafka writes them
        yield m.ProducerIdsRecordV0(broker_id=i32(-1), broker_epoch=i64(-1), next_producer_id=i64(5000))

    def manifest() -> Manifest:
        records = len(FEATURES) + BROKERS + len(CONTROLLERS) + len(topics) + sum(topics.values()) + 1
        return Manifest(dict(topics), found[0], records)

    return records(), manifest


def voters_records() -> list[object]:
    """kraft.version 1 and the three voters, as Kafka 4.x puts them after the snapshot header."""
    rng = random.Random(11)
    feature = KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    voters = VotersRecord(version=i16(0), voters=tuple(
        VotersVoter(voter_id=i32(c), voter_directory_id=uuid.UUID(int=rng.getrandbits(128)),
                    endpoints=(VotersEndpoint(name="CONTROLLER", host=f"controller-{c}", port=u16(9093)),),
                    k_raft_version_feature=feature) for c in CONTROLLERS))
    return [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))), control_record(voters)]


def write_kafka4_snapshot(directory: Path, partitions: int,
                          max_batch_bytes: int = MAX_BATCH_BYTES) -> tuple[Path, Manifest]:
    """The snapshot file in ``directory`` (written batch by batch: a million partitions never sit in
    memory as objects) and its manifest."""
    records, manifest_of = kafka4_records(partitions)
    path = directory / "snapshot.part"
    offset = 0
    with open(path, "wb") as out:
        header = control_record(SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(TIMESTAMP_MS)))
        entries = [encode_record(header)] + [encode_record(r) for r in voters_records()]
        out.write(encode_entries(offset, entries, epoch=EPOCH, timestamp_ms=TIMESTAMP_MS, control=True))
        offset += len(entries)
        batch: list[tuple[bytes | None, bytes | None]] = []
        batch_bytes = 0
        done = False
        while not done:
            group = []
            for record in records:
                group.append(encode_record(record))
                if len(group) == APPEND_RECORDS:
                    break
            else:
                done = True
            # BatchBuilder.bytesNeeded: the group's exact size at its offsets in this batch, plus
            # the 61-byte batch header; if it does not fit, the batch is closed and a new one begun
            group_bytes = _records_bytes(group, len(batch))
            if batch and BATCH_HEADER_BYTES + batch_bytes + group_bytes > max_batch_bytes:
                out.write(encode_entries(offset, batch, epoch=EPOCH, timestamp_ms=TIMESTAMP_MS, control=False))
                offset += len(batch)
                batch, batch_bytes = [], 0
                group_bytes = _records_bytes(group, 0)
            batch += group
            batch_bytes += group_bytes
        if batch:
            out.write(encode_entries(offset, batch, epoch=EPOCH, timestamp_ms=TIMESTAMP_MS, control=False))
            offset += len(batch)
        footer = encode_record(control_record(SnapshotFooterRecord(version=i16(0))))
        out.write(encode_entries(offset, [footer], epoch=EPOCH, timestamp_ms=TIMESTAMP_MS, control=True))
        offset += 1
    manifest = manifest_of()
    # The end offset: the snapshot holds the log up to here (its records and control records).
    final = directory / SnapshotId(offset, EPOCH).file_name
    path.rename(final)
    return final, manifest


def _varint_bytes(value: int) -> int:
    """The size of ``value`` as a zigzag varint (Kafka's ByteUtils.sizeOfVarint)."""
    zigzag = (value << 1) ^ (value >> 63)
    return max(1, (zigzag.bit_length() + 6) // 7)


def _records_bytes(entries: list[tuple[bytes | None, bytes | None]], first_delta: int) -> int:
    """The bytes ``entries`` take in a batch from offset delta ``first_delta`` on (null keys, no
    headers, timestamp delta 0: DefaultRecord.sizeOfBodyInBytes and its length prefix)."""
    total = 0
    for delta, (_, value) in enumerate(entries, first_delta):
        size = len(value or b"")
        body = 1 + 1 + _varint_bytes(delta) + 1 + _varint_bytes(size) + size + 1
        total += _varint_bytes(body) + body
    return total


@dataclass(frozen=True, slots=True)
class BenchFiles:
    snapshot: Path
    manifest: Manifest
    segments: list[Path]
    log_records: int


def bench_files(directory: Path, partitions: int, log_partitions: int, out: Callable[[str], None]) -> BenchFiles:
    """The snapshot and its manifest, and the segments of a log of ``log_partitions`` partitions
    with that log's record count; made once in ``directory`` and reused while they are there
    (each appears whole, by a rename)."""
    snapshot_dir = directory / f"kafka4-snapshot-{partitions}"
    if not snapshot_dir.is_dir():
        started = time.perf_counter()
        partial = Path(tempfile.mkdtemp(prefix=snapshot_dir.name + ".", dir=directory))
        _, manifest = write_kafka4_snapshot(partial, partitions)
        manifest.save(partial / "manifest.json")
        partial.rename(snapshot_dir)
        out(f"generated a snapshot of {partitions:,} partitions in {time.perf_counter() - started:.0f} s")
    log_dir = directory / f"kafka4-log-{log_partitions}"
    if not log_dir.is_dir():
        started = time.perf_counter()
        partial = Path(tempfile.mkdtemp(prefix=log_dir.name + ".", dir=directory))
        write_bench_log(partial, log_partitions, directories=True)
        partial.rename(log_dir)
        out(f"generated a log of {log_partitions:,} partitions in {time.perf_counter() - started:.0f} s")
    snapshots = sorted(snapshot_dir.glob("*.checkpoint"))
    segments = sorted(log_dir.glob("__cluster_metadata-0/*.log"))
    if len(snapshots) != 1 or not segments or not (snapshot_dir / "manifest.json").is_file():
        raise ConfigError(f"{directory}: unexpected files in {snapshot_dir.name} or {log_dir.name}; remove them")
    records = log_partitions + -(-log_partitions // 100)  # the partitions and one TopicRecord per 100
    return BenchFiles(snapshots[0], Manifest.load(snapshot_dir / "manifest.json"), segments, records)
