"""A small metadata log of what real clusters and the scripted history rarely hold, for /image's
tests (no tests here): configs Kafka 4.3's shell drops (a retired topic config, an unknown group
config, a BROKER_LOGGER config, a resource of dropped configs only), a ZkMigrationStateRecord,
names that sort differently in Java (``10`` before ``2``, capitals first), a feature range up to
32767 (``0+``), directories out of Kafka's Uuid order, quota values Java prints in E-notation,
a quota entity with a default part, a delegation token, SCRAM users and ACLs, a name with a space.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.records import metadata_records as m
from engine.records.kio_codec import f64, i8, i16, i32, i64, u16
from engine.storage.metadata_log import MetadataLog

TOPIC_ID = uuid.UUID(int=0x1234)
LOW_DIR = uuid.UUID("7b0f4d7e-1c2a-4a51-9d8e-2f6c1a3b5d70")
HIGH_DIR = uuid.UUID("f00f4d7e-1c2a-4a51-9d8e-2f6c1a3b5d70")  # negative as Kafka's signed long: first
HIDDEN_IN_4_3 = {("TOPIC:orders", "message.timestamp.difference.max.ms"), ("TOPIC:old", "message.format.version"),
                 ("GROUP:g1", "no.such.group.config"), ("BROKER_LOGGER:1", "kafka.log")}
HIDDEN_RESOURCES = {"TOPIC:old", "BROKER_LOGGER:1"}  # of dropped configs only: not listed by 4.3


def _broker(broker_id: int, names: tuple[str, ...], log_dirs: tuple[uuid.UUID, ...]) -> m.RegisterBrokerRecordV3:
    return m.RegisterBrokerRecordV3(
        broker_id=i32(broker_id), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=broker_id),
        broker_epoch=i64(100 + broker_id),
        end_points=tuple(m.RegisterBrokerRecordV3BrokerEndpoint(name=n, host=f"b{broker_id}", port=u16(9092 + i),
                                                                security_protocol=i16(i % 4))
                         for i, n in enumerate(names)),
        features=(m.RegisterBrokerRecordV3BrokerFeature(name="metadata.version", min_supported_version=i16(7),
                                                        max_supported_version=i16(27)),
                  m.RegisterBrokerRecordV3BrokerFeature(name="kraft.version", min_supported_version=i16(1),
                                                        max_supported_version=i16(1)),
                  m.RegisterBrokerRecordV3BrokerFeature(name="a.version", min_supported_version=i16(0),
                                                        max_supported_version=i16(32767))),
        rack="r1" if broker_id == 1 else None, fenced=broker_id == 10, in_controlled_shutdown=broker_id == 2,
        log_dirs=log_dirs)


def _partition(pid: int) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=TOPIC_ID, replicas=(i32(1), i32(2), i32(10)), isr=(i32(1), i32(2)),
        removing_replicas=(i32(10),) if pid == 3 else (), adding_replicas=(i32(2),) if pid == 3 else (),
        leader=i32(1), leader_recovery_state=i8(pid == 11), leader_epoch=i32(pid), partition_epoch=i32(2 * pid),
        directories=(LOW_DIR, uuid.UUID(int=0), uuid.UUID(int=2)),
        eligible_leader_replicas=(i32(2),) if pid == 10 else None, last_known_elr=(i32(10),) if pid == 10 else None)


def _config(resource_type: int, resource: str, name: str, value: str) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(resource_type), resource_name=resource, name=name, value=value)


def _quota(entity: tuple[tuple[str, str | None], ...], key: str, value: float) -> m.ClientQuotaRecordV0:
    return m.ClientQuotaRecordV0(entity=tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n)
                                              for t, n in entity), key=key, value=f64(float(value)), remove=False)


def edge_records() -> list:
    return [
        m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),
        m.FeatureLevelRecordV0(name="transaction.version", feature_level=i16(2)),
        m.FeatureLevelRecordV0(name="group.version", feature_level=i16(1)),
        m.ZkMigrationStateRecordV0(zk_migration_state=i8(3)),
        _broker(1, ("PLAINTEXT", "CONTROLLER_B", "A_LISTENER"), (LOW_DIR, HIGH_DIR)),
        _broker(10, ("PLAINTEXT",), ()),
        _broker(2, ("PLAINTEXT",), (uuid.UUID(int=2),)),
        m.RegisterControllerRecordV0(
            controller_id=i32(3000), incarnation_id=uuid.UUID(int=3000), zk_migration_ready=False,
            end_points=(m.RegisterControllerRecordV0ControllerEndpoint(name="CONTROLLER", host="c", port=u16(9093),
                                                                        security_protocol=i16(1)),),
            features=(m.RegisterControllerRecordV0ControllerFeature(name="kraft.version", min_supported_version=i16(0),
                                                                    max_supported_version=i16(1)),)),
        m.TopicRecordV0(name="orders", topic_id=TOPIC_ID),
        *(_partition(pid) for pid in range(12)),
        _config(2, "orders", "retention.ms", "172800000"),
        _config(2, "orders", "message.timestamp.difference.max.ms", "5000"),
        _config(2, "old", "message.format.version", "2.8"),
        _config(4, "", "log.retention.ms", "259200000"),
        _config(4, "1", "log.cleaner.threads", "2"),
        _config(4, "1", "listener.name.a.scram-sha-256.sasl.jaas.config", "secret-jaas"),
        _config(32, "g1", "consumer.session.timeout.ms", "45000"),
        _config(32, "g1", "no.such.group.config", "1"),
        _config(32, "two words", "consumer.heartbeat.interval.ms", "5000"),
        _config(16, "cm", "interval.ms", "60000"),
        _config(8, "1", "kafka.log", "DEBUG"),
        _quota((("user", "alice"),), "producer_byte_rate", 1048576),
        _quota((("user", "alice"),), "consumer_byte_rate", 10485760),
        _quota((("client-id", "app"), ("user", "alice")), "request_percentage", 0.5),
        _quota((("user", "bob"), ("client-id", None)), "producer_byte_rate", 1e7),
        _quota((("ip", "10.0.0.1"),), "connection_creation_rate", 25),
        m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt-alice", stored_key=b"\x00\xffk",
                                      server_key=b"v", iterations=i32(8192)),
        m.UserScramCredentialRecordV0(name="Bob", mechanism=i8(2), salt=b"s", stored_key=b"k", server_key=b"v",
                                      iterations=i32(4096)),
        m.AccessControlEntryRecordV0(id=uuid.UUID(int=11), resource_type=i8(2), resource_name="orders",
                                     pattern_type=i8(4), principal="User:alice", host="*", operation=i8(4),
                                     permission_type=i8(3)),
        m.AccessControlEntryRecordV0(id=uuid.UUID(int=12), resource_type=i8(4), resource_name="kafka-cluster",
                                     pattern_type=i8(3), principal="User:ops", host="10.0.0.1", operation=i8(11),
                                     permission_type=i8(2)),
        m.DelegationTokenRecordV0(owner="User:alice", requester="User:alice", renewers=("User:bob", "User:carol"),
                                  issue_timestamp=i64(1739082759312), max_timestamp=i64(1739687559312),
                                  expiration_timestamp=i64(1739169159312), token_id="token-1"),
        m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(101), next_producer_id=i64(5000)),
    ]


def write_edge_log(log_dir: Path) -> Path:
    """The records in a segment of ``log_dir`` (two batches: the last one's offset, epoch and time
    are what /image/provenance shows for the file); returns the segment."""
    records = edge_records()
    with MetadataLog.create(log_dir, fsync_policy="never") as log:
        log.append(records[:20], epoch=3, timestamp_ms=1739082759312)
        log.append(records[20:], epoch=4, timestamp_ms=1739082760000)
    return log_dir / "__cluster_metadata-0" / "00000000000000000000.log"


def cordoned_records() -> list:
    """Brokers that cordoned log directories (KIP-1066: RegisterBrokerRecord v4, which Kafka 4.3
    reads and 4.1 does not): some out of Uuid order, and none (an empty list, not null)."""
    def broker(broker_id: int, cordoned: tuple[uuid.UUID, ...]) -> m.RegisterBrokerRecordV4:
        return m.RegisterBrokerRecordV4(
            broker_id=i32(broker_id), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=broker_id),
            broker_epoch=i64(7), end_points=(m.RegisterBrokerRecordV4BrokerEndpoint(
                name="PLAINTEXT", host="b", port=u16(9092), security_protocol=i16(0)),), features=(), rack=None,
            fenced=False, in_controlled_shutdown=False, log_dirs=(LOW_DIR, HIGH_DIR), cordoned_log_dirs=cordoned)
    return [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(30)),  # 4.3-IV0
            broker(1, (LOW_DIR, HIGH_DIR)), broker(2, ())]
