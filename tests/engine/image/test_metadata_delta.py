"""Replay: Kafka's semantics record by record, immutability of images, and the corpus check that
replaying a Kafka-made snapshot gives the image that replaying the log up to it gives."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.storage.log_reader import list_log_dir, read_file, read_log_dir
from engine.image.metadata_delta import MetadataDelta, replay_entries
from engine.image.metadata_image import MetadataImage
from tests.conftest import CORPUS, corpus_params

TOPIC = uuid.UUID(int=7)
# corpus nodes that hold Kafka-made snapshots
_SNAPSHOT_NODES = sorted(d for d in CORPUS.rglob("__cluster_metadata-0") if list_log_dir(d).snapshots) \
    if CORPUS.is_dir() else []
over_nodes_with_snapshots = pytest.mark.parametrize(
    "directory", corpus_params(_SNAPSHOT_NODES), ids=lambda d: d.parent.name if d else "no-corpus")


def replay(*records, image: MetadataImage | None = None) -> MetadataImage:
    delta = MetadataDelta(image or MetadataImage())
    for offset, record in enumerate(records):
        delta.replay(record, offset, 1, 1000 + offset)
    return delta.apply()


def broker(broker_id: int = 1, epoch: int = 10, fenced: bool = True) -> m.RegisterBrokerRecordV3:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="h", port=u16(9092),
                                                      security_protocol=i16(0))
    return m.RegisterBrokerRecordV3(broker_id=i32(broker_id), is_migrating_zk_broker=False,
                                    incarnation_id=uuid.UUID(int=broker_id), broker_epoch=i64(epoch),
                                    end_points=(endpoint,), features=(), rack=None, fenced=fenced,
                                    in_controlled_shutdown=False)


def topic_with_partition(**fields) -> tuple:
    values = dict(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2), i32(3)),
                  isr=(i32(1), i32(2), i32(3)), removing_replicas=(), adding_replicas=(), leader=i32(1),
                  leader_epoch=i32(4), partition_epoch=i32(9), directories=(None, None, None))
    values.update(fields)
    return m.TopicRecordV0(name="orders", topic_id=TOPIC), m.PartitionRecordV2(**values)


def partition(image: MetadataImage):
    return image.topics.by_id[TOPIC].partitions[0]


def test_partition_change_merges_as_kafka_does() -> None:
    image = replay(*topic_with_partition())
    same_leader = replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, isr=(i32(1), i32(3))),
                         image=image)
    p = partition(same_leader)
    assert p.isr == (1, 3) and p.replicas == (1, 2, 3) and p.leader == 1
    assert p.leader_epoch == 4 and p.partition_epoch == 10  # leader -2: no leader change, no leader epoch bump
    no_leader = replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, leader=i32(-1)), image=image)
    assert partition(no_leader).leader == -1 and partition(no_leader).leader_epoch == 5
    elr = replay(m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=TOPIC, isr=(i32(1),),
                                           eligible_leader_replicas=(i32(2),), last_known_elr=(i32(3),),
                                           leader_recovery_state=i8(1)), image=image)
    assert (partition(elr).elr, partition(elr).last_known_elr, partition(elr).leader_recovery_state) == ((2,), (3,), 1)
    cleared = replay(m.ClearElrRecordV0(topic_name=""), image=elr)
    assert partition(cleared).elr == () and partition(cleared).last_known_elr == ()
    assert partition(cleared).partition_epoch == partition(elr).partition_epoch + 1
    assert partition(image).isr == (1, 2, 3)  # the old image is untouched


def test_broker_fencing_tri_state_and_epoch_checks() -> None:
    image = replay(broker(fenced=True))
    assert image.cluster.brokers[1].state == "fenced"
    unfenced = replay(m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=i64(10), fenced=i8(-1)),
                      image=image)
    assert unfenced.cluster.brokers[1].state == "active"
    nothing = replay(m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=i64(10), fenced=i8(0)),
                     image=unfenced)
    assert nothing.cluster.brokers[1].state == "active"
    shutdown = replay(m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=i64(10),
                                                         in_controlled_shutdown=i8(1)), image=unfenced)
    assert shutdown.cluster.brokers[1].state == "controlled-shutdown"
    delta = MetadataDelta(unfenced)
    delta.replay(m.FenceBrokerRecordV0(id=i32(1), epoch=i64(9)))  # stale epoch: refused
    assert delta.apply().cluster.brokers[1].state == "active" and delta.skipped == 1
    fenced = replay(m.FenceBrokerRecordV0(id=i32(1), epoch=i64(10)), image=unfenced)
    assert fenced.cluster.brokers[1].fenced
    gone = replay(m.UnregisterBrokerRecordV0(broker_id=i32(1), broker_epoch=i64(10)), image=fenced)
    assert 1 not in gone.cluster.brokers


def test_remove_topic_drops_partitions_and_configs() -> None:
    image = replay(*topic_with_partition(),
                   m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name="retention.ms", value="1"),
                   m.ConfigRecordV0(resource_type=i8(4), resource_name="1", name="x", value="y"))
    assert image.configs[(2, "orders")] == {"retention.ms": "1"}
    after = replay(m.RemoveTopicRecordV0(topic_id=TOPIC), image=image)
    assert after.topics.by_id == {} and after.topics.by_name == {} and (2, "orders") not in after.configs
    assert after.configs[(4, "1")] == {"x": "y"}


def test_null_config_value_feature_level_zero_and_quota_remove_delete() -> None:
    image = replay(m.FeatureLevelRecordV0(name="group.version", feature_level=i16(1)),
                   m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="a", value="1"))
    after = replay(m.FeatureLevelRecordV0(name="group.version", feature_level=i16(0)),
                   m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="a", value=None), image=image)
    assert "group.version" not in after.features and (4, "") not in after.configs
    entity = (m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="alice"),)
    quotas = replay(m.ClientQuotaRecordV0(entity=entity, key="producer_byte_rate", value=1024.0, remove=False))
    assert quotas.client_quotas[(("user", "alice"),)] == {"producer_byte_rate": 1024.0}
    removed = replay(m.ClientQuotaRecordV0(entity=entity, key="producer_byte_rate", value=0.0, remove=True),
                     image=quotas)
    assert removed.client_quotas == {}


def test_transactions_apply_at_end_and_vanish_at_abort() -> None:
    begin, end, abort = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()
    committed = replay(begin, *topic_with_partition(), end)
    assert "orders" in committed.topics.by_name
    aborted = replay(begin, *topic_with_partition(), abort)
    assert aborted.topics.by_name == {}


def test_untouched_parts_are_reused() -> None:
    image = replay(broker(), *topic_with_partition())
    after = replay(m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(10), next_producer_id=i64(5000)),
                   image=image)
    assert after.producer_ids.next_producer_id == 5000
    assert after.topics is image.topics and after.cluster is image.cluster


@over_nodes_with_snapshots
def test_kafka_snapshot_equals_log_replay_up_to_it(directory: Path) -> None:
    """Every Kafka-made snapshot in the corpus gives the image of the log replayed up to its offset."""
    snapshots = list_log_dir(directory).snapshots
    compared = 0
    for snapshot_id, path in snapshots:
        from_log = replay_entries(e for e in read_log_dir(directory, use_snapshot=False)
                                  if e.offset < snapshot_id.end_offset)
        if from_log.provenance.last_offset != snapshot_id.end_offset - 1:
            continue  # this copy's segments stop before the snapshot: nothing to compare with
        from_snapshot = replay_entries(read_file(path))
        assert dataclasses.replace(from_snapshot, provenance=None, quorum=None) == \
            dataclasses.replace(from_log, provenance=None, quorum=None), snapshot_id
        compared += 1
    if not compared:
        pytest.skip("the log of this copy does not reach any of its snapshots")


def test_corpus_facts(corpus: Path) -> None:
    hiage = replay_entries(read_log_dir(corpus / "hiage__kafka-raft" / "kafka1"))
    assert len(hiage.topics.by_id) == 3 and hiage.partition_count == 60
    assert sorted(hiage.cluster.brokers) == [1, 2, 3]
    assert hiage.features == {"metadata.version": 7}
    assert [c.leader_id for c in hiage.quorum.leader_changes] == [1]
    yashasvi = replay_entries(read_log_dir(corpus / "Yashasvi960__kafka-service"))
    assert yashasvi.features["eligible.leader.replicas.version"] == 1
    assert all(b.state == "active" for b in yashasvi.cluster.brokers.values())


def _normalized(record) -> str:
    """Registrations' endpoint and feature lists are maps in Kafka: their order carries nothing."""
    if hasattr(record, "end_points"):
        record = dataclasses.replace(record, end_points=tuple(sorted(record.end_points, key=repr)),
                                     features=tuple(sorted(record.features, key=repr)))
    return repr(record)


@over_nodes_with_snapshots
def test_our_snapshot_records_are_kafkas(directory: Path) -> None:
    """Writing the image of a Kafka snapshot gives Kafka's own records: same types, versions, fields."""
    from engine.image.image_writer import image_records
    from engine.records.metadata_records import MetadataRecord

    snapshots = list_log_dir(directory).snapshots
    for _, path in snapshots:
        # Kafka 3.x wrote ZkMigrationStateRecord into its snapshots; Kafka 4 reads and never writes
        # it, and our writer follows Kafka 4 (tests/differential/test_diff_image_replay.py proves that live)
        kafka = [e.record for e in read_file(path) if isinstance(e.record, MetadataRecord)
                 and e.record.record_name != "ZkMigrationStateRecord"]
        ours = list(image_records(replay_entries(read_file(path))))
        assert sorted(map(_normalized, ours)) == sorted(map(_normalized, kafka)), path.name


def test_replaying_written_records_gives_the_image_back(corpus: Path) -> None:
    from engine.image.features_image import FeaturesImage
    from engine.image.image_writer import image_records

    for directory in sorted(corpus.rglob("__cluster_metadata-0")):
        image = replay_entries(read_log_dir(directory))
        again = replay(*image_records(image))
        # everything but the ZooKeeper migration state, which Kafka 4's writer (and ours) leaves out
        shown = FeaturesImage(image.features.finalized_versions)
        assert again.features.zk_migration_state is None
        assert dataclasses.replace(again, provenance=None, quorum=None) == \
            dataclasses.replace(image, provenance=None, quorum=None, features=shown), directory


def test_directories_default_to_migrating_and_follow_the_replicas() -> None:
    """Kafka: records without directories (before KIP-858) mean MIGRATING, one per replica."""
    from engine.image.partition_registration import MIGRATING

    topic = m.TopicRecordV0(name="orders", topic_id=TOPIC)
    old = m.PartitionRecordV0(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2)), isr=(i32(1),),
                              removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                              partition_epoch=i32(0))
    image = replay(topic, old)
    assert partition(image).directories == (MIGRATING, MIGRATING)
    grown = replay(m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC,
                                             replicas=(i32(1), i32(2), i32(3))), image=image)
    assert partition(grown).directories == (MIGRATING,) * 3
    assigned = uuid.UUID(int=77)
    moved = replay(m.PartitionChangeRecordV1(partition_id=i32(0), topic_id=TOPIC,
                                             directories=(assigned, assigned, assigned)), image=grown)
    assert partition(moved).directories == (assigned,) * 3
