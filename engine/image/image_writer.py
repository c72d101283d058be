"""An image as the records of a snapshot (Kafka's MetadataImage.write).

The order is Kafka's: features (metadata.version first), cluster, topics, configs,
client quotas, producer ids, ACLs, SCRAM credentials, delegation tokens (within each, the
order of Kafka's hash maps is not reproduced: it means nothing). Record versions
follow the image's metadata.version as Kafka picks them, so that a node of that version
can read the snapshot; replaying the records gives the image back, but for the ZooKeeper
migration state of a 3.x log, which Kafka 4 drops as well.
"""

from __future__ import annotations

from typing import Any, Iterator

from engine.records import metadata_records as m
from engine.records.kio_codec import f64, i8, i16, i32, i64, u16
from engine.image.metadata_image import MetadataImage
from engine.common.directory_id import migrating_array
from engine.image.partition_registration import PartitionRegistration

# metadata.version levels at which record versions changed (Kafka's MetadataVersion)
_MV_3_4_IV0, _MV_3_7_IV2, _MV_4_0_IV1, _MV_4_3_IV0 = 8, 17, 23, 30


def image_records(image: MetadataImage) -> Iterator[Any]:
    """Every record a snapshot of ``image`` holds, in Kafka's order."""
    yield from records_before_topics(image)
    level, elr = partition_record_level(image)
    for topic in image.topics.by_id.values():
        yield m.TopicRecordV0(name=topic.name, topic_id=topic.id)
        for partition_id, partition in topic.partitions.items():
            yield _partition_record(topic.id, partition_id, partition, level, elr)
    yield from records_after_topics(image)


# The parts around the topics, for a writer that encodes the partitions its own way
# (engine.image.image_entries): the same records, the same order.

def records_before_topics(image: MetadataImage) -> Iterator[Any]:
    """Features, brokers, controllers."""
    level = image.metadata_version or 0
    yield from _feature_records(image)
    yield from (_broker_record(b, level) for b in image.cluster.brokers.values())
    yield from (_controller_record(c) for c in image.cluster.controllers.values())


def partition_record_level(image: MetadataImage) -> tuple[int, bool]:
    """(metadata.version level, ELR on): what picks a PartitionRecord's version (partition_record)."""
    level = image.metadata_version or 0
    return level, level >= _MV_4_0_IV1 or image.features.get("eligible.leader.replicas.version", 0) > 0


def partition_record(topic_id: Any, partition_id: int, p: PartitionRegistration, level: int, elr: bool) -> Any:
    """The PartitionRecord a snapshot holds for ``p`` (``level``, ``elr``: partition_record_level)."""
    return _partition_record(topic_id, partition_id, p, level, elr)


def records_after_topics(image: MetadataImage) -> Iterator[Any]:
    """Configs, client quotas, producer ids, ACLs, SCRAM credentials, delegation tokens."""
    for resource, values in image.configs.items():
        for key, value in values.items():
            yield m.ConfigRecordV0(resource_type=i8(int(resource.type)), resource_name=resource.name, name=key,
                                   value=value)
    for entity, values in image.client_quotas.items():
        entity_data = tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n) for t, n in entity)
        for key, value in values.items():
            yield m.ClientQuotaRecordV0(entity=entity_data, key=key, value=f64(value), remove=False)
    if not image.producer_ids.is_empty:
        yield m.ProducerIdsRecordV0(broker_id=i32(-1), broker_epoch=i64(-1),
                                    next_producer_id=i64(image.producer_ids.next_producer_id))
    yield from (acl.to_record(acl_id) for acl_id, acl in image.acls.items())
    yield from (credential.to_record(mechanism, user) for (mechanism, user), credential in image.scram.items())
    yield from (token.to_record() for token in image.delegation_tokens.values())


def _feature_records(image: MetadataImage) -> Iterator[Any]:
    names = sorted(image.features, key=lambda name: (name != "metadata.version", name))
    for name in names:
        yield m.FeatureLevelRecordV0(name=name, feature_level=i16(image.features[name]))
    # No ZkMigrationStateRecord, though the image keeps a 3.x log's (to show it): Kafka 4's image
    # ignores the record and its snapshots never hold one.


def _broker_record(broker: Any, level: int) -> Any:
    endpoints = [dict(name=e.name, host=e.host, port=u16(e.port), security_protocol=i16(e.security_protocol))
                 for e in broker.endpoints]
    features = [dict(name=f.name, min_supported_version=i16(f.min_version), max_supported_version=i16(f.max_version))
                for f in broker.supported_features]
    # cordoned directories (v4) and log directories (v3) are kept at any level, as the rest is
    if level >= _MV_4_3_IV0 or broker.cordoned_directories is not None:
        version = 4
    else:
        version = 3 if level >= _MV_3_7_IV2 or broker.directories else 2 if level >= _MV_3_4_IV0 else 1
    cls = m.RECORD_CLASSES[(0, version)]
    endpoint_cls = getattr(m, f"RegisterBrokerRecordV{version}BrokerEndpoint")
    feature_cls = getattr(m, f"RegisterBrokerRecordV{version}BrokerFeature")
    fields = dict(broker_id=i32(broker.id), incarnation_id=broker.incarnation_id, broker_epoch=i64(broker.epoch),
                  end_points=tuple(endpoint_cls(**e) for e in endpoints),
                  features=tuple(feature_cls(**f) for f in features), rack=broker.rack, fenced=broker.fenced,
                  in_controlled_shutdown=broker.in_controlled_shutdown)
    if version >= 2:
        fields["is_migrating_zk_broker"] = broker.is_migrating_zk_broker
    if version >= 3:
        fields["log_dirs"] = broker.directories
    if version >= 4:
        fields["cordoned_log_dirs"] = broker.cordoned_directories
    return cls(**fields)


def _controller_record(controller: Any) -> Any:
    return m.RegisterControllerRecordV0(
        controller_id=i32(controller.id), incarnation_id=controller.incarnation_id,
        zk_migration_ready=controller.zk_migration_ready,
        end_points=tuple(m.RegisterControllerRecordV0ControllerEndpoint(
            name=e.name, host=e.host, port=u16(e.port), security_protocol=i16(e.security_protocol))
            for e in controller.endpoints),
        features=tuple(m.RegisterControllerRecordV0ControllerFeature(
            name=f.name, min_supported_version=i16(f.min_version), max_supported_version=i16(f.max_version))
            for f in controller.supported_features))


def _partition_record(topic_id: Any, partition_id: int, p: PartitionRegistration, level: int, elr: bool) -> Any:
    # The ints are the image's own, each read from a record: kio's per-value type wrappers would
    # check them again (a third of a million-partition snapshot's time), and the encoder's
    # struct packing refuses one out of range all the same. Keywords given directly, not through
    # a dict: one call per partition of every snapshot.
    # Kafka writes the directories, MIGRATING ones too, from 3.7-IV2 on, and none before: no
    # directories reads back as one MIGRATING per replica. Others are kept whatever the version.
    with_dirs = level >= _MV_3_7_IV2 or p.directories != migrating_array(len(p.replicas))
    if elr or p.elr or p.last_known_elr:
        # Kafka leaves empty ELR lists out (null), as their tags' default
        return m.PartitionRecordV2(
            partition_id=partition_id, topic_id=topic_id, replicas=p.replicas, isr=p.isr,
            removing_replicas=p.removing_replicas, adding_replicas=p.adding_replicas, leader=p.leader,
            leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch, directories=p.directories if with_dirs else (),
            eligible_leader_replicas=p.elr or None, last_known_elr=p.last_known_elr or None)
    if with_dirs:
        return m.PartitionRecordV1(
            partition_id=partition_id, topic_id=topic_id, replicas=p.replicas, isr=p.isr,
            removing_replicas=p.removing_replicas, adding_replicas=p.adding_replicas, leader=p.leader,
            leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch, directories=p.directories)
    return m.PartitionRecordV0(
        partition_id=partition_id, topic_id=topic_id, replicas=p.replicas, isr=p.isr,
        removing_replicas=p.removing_replicas, adding_replicas=p.adding_replicas, leader=p.leader,
        leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch)
