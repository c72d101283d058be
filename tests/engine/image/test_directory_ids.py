"""Log directory ids (KIP-858) as Kafka reads, changes, writes and names them.

Kafka's DirectoryId: MIGRATING = (0, 0) ``AAAAAAAAAAAAAAAAAAAAAA``, UNASSIGNED = (0, 1)
``AAAAAAAAAAAAAAAAAAAAAQ``, LOST = (0, 2) ``AAAAAAAAAAAAAAAAAAAAAg``. Written with literal ids
and texts so that the tests say what Kafka's files hold, not what our constants are.
"""

from __future__ import annotations

import uuid

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value

TOPIC = uuid.UUID(int=0x70)
ZERO_TEXT, UNASSIGNED_TEXT, LOST_TEXT = "AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"
UNASSIGNED, LOST = uuid.UUID(int=1), uuid.UUID(int=2)
REAL = uuid.UUID("7b0f4d7e-1c2a-4a51-9d8e-2f6c1a3b5d70")
MV_3_6_IV2, MV_3_7_IV2, MV_4_1_IV1 = 14, 17, 27


def _fields(replicas=(1, 2, 3)) -> dict:
    replicas = tuple(map(i32, replicas))
    return dict(partition_id=i32(0), topic_id=TOPIC, replicas=replicas, isr=replicas, removing_replicas=(),
                adding_replicas=(), leader=replicas[0], leader_recovery_state=i8(0), leader_epoch=i32(2),
                partition_epoch=i32(5))


def _from_disk(record):
    """As a reader meets it: encoded, then decoded (kio reads the all-zero id as None)."""
    return decode_metadata_value(encode_metadata_value(record))


class Replay:
    def __init__(self, level: int = MV_4_1_IV1):
        self.delta = MetadataDelta(MetadataImage())
        self.replay(m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(level)))
        self.replay(m.TopicRecordV0(name="orders", topic_id=TOPIC))

    def replay(self, *records) -> "Replay":
        for record in records:
            self.delta.replay(_from_disk(record))
        return self

    @property
    def image(self) -> MetadataImage:
        return self.delta.apply()

    @property
    def partition(self):
        return self.image.topics.by_id[TOPIC].partitions[0]

    def texts(self) -> list[str]:
        return [uuid_to_kafka(d) for d in self.partition.directories]


def _written_partition(image: MetadataImage):
    return next(r for r in image_records(image) if r.record_name == "PartitionRecord")


# -- reading -----------------------------------------------------------------------------------


def test_a_record_from_before_kip_858_means_one_migrating_per_replica() -> None:
    """PartitionRecord v0 has no directories: Kafka reads MIGRATING (all zero), not LOST."""
    r = Replay(MV_3_6_IV2).replay(m.PartitionRecordV0(**_fields()))
    assert r.texts() == [ZERO_TEXT] * 3
    assert r.partition.directories == (uuid.UUID(int=0),) * 3


def test_explicit_zero_ids_are_migrating_and_follow_the_replicas() -> None:
    """kio decodes the all-zero id as None; all MIGRATING is resized when the replicas change."""
    r = Replay(MV_3_7_IV2).replay(m.PartitionRecordV1(**_fields((1, 2)), directories=(None, None)))
    assert r.partition.directories == (uuid.UUID(int=0),) * 2
    r.replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2), i32(3))))
    assert r.texts() == [ZERO_TEXT] * 3 and r.delta.skipped == 0
    r.replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(3),)))
    assert r.texts() == [ZERO_TEXT]


def test_unassigned_and_lost_are_not_migrating() -> None:
    """Only all MIGRATING follows the replicas' count: UNASSIGNED and LOST are kept by position."""
    r = Replay().replay(m.PartitionRecordV1(**_fields(), directories=(UNASSIGNED, LOST, REAL)))
    assert r.texts() == [UNASSIGNED_TEXT, LOST_TEXT, uuid_to_kafka(REAL)]
    r.replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(3), i32(2), i32(1))))
    assert r.partition.replicas == (3, 2, 1) and r.texts() == [UNASSIGNED_TEXT, LOST_TEXT, uuid_to_kafka(REAL)]
    r.replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC, directories=(REAL, None, LOST)))
    assert r.texts() == [uuid_to_kafka(REAL), ZERO_TEXT, LOST_TEXT] and r.delta.skipped == 0


def test_directories_that_do_not_pair_with_the_replicas_are_refused() -> None:
    """Kafka refuses such records (InvalidReplicaDirectoriesException, or the length check of
    PartitionRegistration): the record changes nothing and is counted as skipped."""
    r = Replay().replay(m.PartitionRecordV1(**_fields(), directories=(REAL, UNASSIGNED, REAL)))
    before = r.partition
    r.replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2)),
                                       isr=(i32(1),)))  # assigned directories cannot shrink unsaid
    r.replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2)),
                                       directories=(REAL,)))
    r.replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC, directories=(REAL, REAL)))
    assert r.partition == before and r.delta.skipped == 3
    r.replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC, directories=(None, None)))
    assert r.texts() == [ZERO_TEXT] * 3  # all MIGRATING: Kafka takes any count and resizes
    r.replay(m.PartitionRecordV1(**{**_fields(), "partition_id": i32(1)}, directories=(REAL,)))
    assert 1 not in r.image.topics.by_id[TOPIC].partitions and r.delta.skipped == 4


# -- writing ---------------------------------------------------------------------------------


def test_reserved_ids_round_trip_through_the_snapshot_writer_byte_for_byte() -> None:
    record = m.PartitionRecordV2(**_fields(), directories=(UNASSIGNED, LOST, REAL), eligible_leader_replicas=None,
                                 last_known_elr=None)
    r = Replay(MV_4_1_IV1).replay(record)
    assert encode_metadata_value(_written_partition(r.image)) == encode_metadata_value(record)


def test_the_writer_writes_migrating_as_kafka_does_from_3_7_iv2() -> None:
    """Kafka's PartitionRegistration.toRecord sets the directories whenever the metadata.version
    has them, MIGRATING included: an old partition in a 4.1 snapshot carries three zero ids."""
    r = Replay(MV_4_1_IV1).replay(m.PartitionRecordV0(**_fields()))
    expected = m.PartitionRecordV2(**_fields(), directories=(None, None, None), eligible_leader_replicas=None,
                                   last_known_elr=None)
    assert encode_metadata_value(_written_partition(r.image)) == encode_metadata_value(expected)


def test_the_writer_leaves_directories_out_before_3_7_iv2_unless_they_would_be_lost() -> None:
    r = Replay(MV_3_6_IV2).replay(m.PartitionRecordV0(**_fields()))
    assert encode_metadata_value(_written_partition(r.image)) == encode_metadata_value(m.PartitionRecordV0(**_fields()))
    lost = m.PartitionRecordV1(**_fields(), directories=(LOST, LOST, LOST))
    r = Replay(MV_3_6_IV2).replay(lost)
    assert encode_metadata_value(_written_partition(r.image)) == encode_metadata_value(lost)


# -- showing -----------------------------------------------------------------------------------


def test_the_shell_names_the_reserved_ids_and_its_json_keeps_kafkas_text(tmp_path) -> None:
    from engine.storage.snapshot_writer import SnapshotId, write_snapshot
    from metashell.shell.session import Session
    from metashell.source import Source

    records = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(MV_4_1_IV1)),
               m.TopicRecordV0(name="orders", topic_id=TOPIC),
               m.PartitionRecordV0(**_fields((1, 2))),
               m.PartitionRecordV1(**{**_fields((1, 2, 3, 4)), "partition_id": i32(1)},
                                   directories=(None, UNASSIGNED, LOST, REAL))]
    path = write_snapshot(tmp_path, SnapshotId(len(records), 1), records, last_contained_log_timestamp_ms=0,
                          now_ms=0, fsync=False)
    lines: list[str] = []
    session = Session(Source(snapshot=path), out=lines.append)
    session.load()

    def ask(line: str) -> str:
        lines.clear()
        session.run_line(line)
        return "\n".join(lines)

    import json

    assert json.loads(ask("cat /topics/orders/0"))["directories"] == ["MIGRATING", "MIGRATING"]
    assert json.loads(ask("cat /topics/orders/1"))["directories"] == [
        "MIGRATING", "UNASSIGNED", "LOST", uuid_to_kafka(REAL)]
    # /image prints what kafka-metadata-shell prints: the ids as they are
    assert f"directories=[{ZERO_TEXT}, {UNASSIGNED_TEXT}, {LOST_TEXT}, {uuid_to_kafka(REAL)}]" in ask(
        "cat /image/topics/byName/orders/1")
    assert json.loads(ask("cat --json /topics/orders/1"))["directories"] == [
        ZERO_TEXT, UNASSIGNED_TEXT, LOST_TEXT, uuid_to_kafka(REAL)]
    assert json.loads(ask("cat --json /topics/orders/0"))["directories"] == [ZERO_TEXT] * 2
