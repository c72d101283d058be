"""Apache Kafka metadata records (KRaft), as kio-style frozen dataclasses.

Generated from the field definitions of Kafka's metadata record schemas
(api keys, versions, tags, defaults). One class per record version, so that
kio's entity reader and writer encode each version exactly. Do not edit by hand.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from engine.kio_codec import EntityType, f64, i8, i16, i32, i64, u16


class MetadataRecord:
    """Base of every metadata record class: a decoded record *is* its message, and knows
    its api key, version and Kafka type name (what Kafka's ApiMessageAndVersion carries).
    """

    __slots__ = ()
    api_key: ClassVar[int]
    record_name: ClassVar[str]
    type_name: ClassVar[str]

    @property
    def version(self) -> int:
        return self.__version__

    @property
    def message(self) -> "MetadataRecord":
        """The record itself (records and messages are one object here)."""
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV0BrokerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    port: u16 = field(metadata={'kafka_type': 'uint16'})
    security_protocol: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV0BrokerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    min_supported_version: i16 = field(metadata={'kafka_type': 'int16'})
    max_supported_version: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 0
    record_name: ClassVar[str] = 'RegisterBrokerRecord'
    type_name: ClassVar[str] = 'REGISTER_BROKER_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    incarnation_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    end_points: tuple[RegisterBrokerRecordV0BrokerEndpoint, ...]
    features: tuple[RegisterBrokerRecordV0BrokerFeature, ...]
    rack: str | None = field(metadata={'kafka_type': 'string'})
    fenced: bool = field(metadata={'kafka_type': 'bool'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV1BrokerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    port: u16 = field(metadata={'kafka_type': 'uint16'})
    security_protocol: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV1BrokerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    min_supported_version: i16 = field(metadata={'kafka_type': 'int16'})
    max_supported_version: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV1(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 0
    record_name: ClassVar[str] = 'RegisterBrokerRecord'
    type_name: ClassVar[str] = 'REGISTER_BROKER_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    incarnation_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    end_points: tuple[RegisterBrokerRecordV1BrokerEndpoint, ...]
    features: tuple[RegisterBrokerRecordV1BrokerFeature, ...]
    rack: str | None = field(metadata={'kafka_type': 'string'})
    fenced: bool = field(metadata={'kafka_type': 'bool'})
    in_controlled_shutdown: bool = field(metadata={'kafka_type': 'bool'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV2BrokerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    port: u16 = field(metadata={'kafka_type': 'uint16'})
    security_protocol: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV2BrokerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    min_supported_version: i16 = field(metadata={'kafka_type': 'int16'})
    max_supported_version: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV2(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 0
    record_name: ClassVar[str] = 'RegisterBrokerRecord'
    type_name: ClassVar[str] = 'REGISTER_BROKER_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    is_migrating_zk_broker: bool = field(metadata={'kafka_type': 'bool'})
    incarnation_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    end_points: tuple[RegisterBrokerRecordV2BrokerEndpoint, ...]
    features: tuple[RegisterBrokerRecordV2BrokerFeature, ...]
    rack: str | None = field(metadata={'kafka_type': 'string'})
    fenced: bool = field(metadata={'kafka_type': 'bool'})
    in_controlled_shutdown: bool = field(metadata={'kafka_type': 'bool'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV3BrokerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    port: u16 = field(metadata={'kafka_type': 'uint16'})
    security_protocol: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV3BrokerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    min_supported_version: i16 = field(metadata={'kafka_type': 'int16'})
    max_supported_version: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV3(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 0
    record_name: ClassVar[str] = 'RegisterBrokerRecord'
    type_name: ClassVar[str] = 'REGISTER_BROKER_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    is_migrating_zk_broker: bool = field(metadata={'kafka_type': 'bool'})
    incarnation_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    end_points: tuple[RegisterBrokerRecordV3BrokerEndpoint, ...]
    features: tuple[RegisterBrokerRecordV3BrokerFeature, ...]
    rack: str | None = field(metadata={'kafka_type': 'string'})
    fenced: bool = field(metadata={'kafka_type': 'bool'})
    in_controlled_shutdown: bool = field(metadata={'kafka_type': 'bool'})
    log_dirs: tuple[uuid.UUID | None, ...] = field(metadata={'kafka_type': 'uuid', 'tag': 0}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 1
    record_name: ClassVar[str] = 'UnregisterBrokerRecord'
    type_name: ClassVar[str] = 'UNREGISTER_BROKER_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 2
    record_name: ClassVar[str] = 'TopicRecord'
    type_name: ClassVar[str] = 'TOPIC_RECORD'
    name: str = field(metadata={'kafka_type': 'string'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 3
    record_name: ClassVar[str] = 'PartitionRecord'
    type_name: ClassVar[str] = 'PARTITION_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    isr: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    removing_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    adding_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    leader: i32 = field(metadata={'kafka_type': 'int32'})
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={'kafka_type': 'int32'})
    partition_epoch: i32 = field(metadata={'kafka_type': 'int32'})


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV1(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 3
    record_name: ClassVar[str] = 'PartitionRecord'
    type_name: ClassVar[str] = 'PARTITION_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    isr: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    removing_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    adding_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    leader: i32 = field(metadata={'kafka_type': 'int32'})
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={'kafka_type': 'int32'})
    partition_epoch: i32 = field(metadata={'kafka_type': 'int32'})
    directories: tuple[uuid.UUID | None, ...] = field(metadata={'kafka_type': 'uuid'})


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV2(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 3
    record_name: ClassVar[str] = 'PartitionRecord'
    type_name: ClassVar[str] = 'PARTITION_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    isr: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    removing_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    adding_replicas: tuple[i32, ...] = field(metadata={'kafka_type': 'int32'})
    leader: i32 = field(metadata={'kafka_type': 'int32'})
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))
    leader_epoch: i32 = field(metadata={'kafka_type': 'int32'})
    partition_epoch: i32 = field(metadata={'kafka_type': 'int32'})
    directories: tuple[uuid.UUID | None, ...] = field(metadata={'kafka_type': 'uuid'})
    eligible_leader_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 1}, default=None)
    last_known_elr: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 2}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 4
    record_name: ClassVar[str] = 'ConfigRecord'
    type_name: ClassVar[str] = 'CONFIG_RECORD'
    resource_type: i8 = field(metadata={'kafka_type': 'int8'})
    resource_name: str = field(metadata={'kafka_type': 'string'})
    name: str = field(metadata={'kafka_type': 'string'})
    value: str | None = field(metadata={'kafka_type': 'string'})


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 5
    record_name: ClassVar[str] = 'PartitionChangeRecord'
    type_name: ClassVar[str] = 'PARTITION_CHANGE_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    isr: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 0}, default=None)
    leader: i32 = field(metadata={'kafka_type': 'int32', 'tag': 1}, default=i32(-2))
    replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 2}, default=None)
    removing_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 3}, default=None)
    adding_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 4}, default=None)
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 5}, default=i8(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV1(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 5
    record_name: ClassVar[str] = 'PartitionChangeRecord'
    type_name: ClassVar[str] = 'PARTITION_CHANGE_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    isr: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 0}, default=None)
    leader: i32 = field(metadata={'kafka_type': 'int32', 'tag': 1}, default=i32(-2))
    replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 2}, default=None)
    removing_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 3}, default=None)
    adding_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 4}, default=None)
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 5}, default=i8(-1))
    directories: tuple[uuid.UUID | None, ...] | None = field(metadata={'kafka_type': 'uuid', 'tag': 8}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV2(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 5
    record_name: ClassVar[str] = 'PartitionChangeRecord'
    type_name: ClassVar[str] = 'PARTITION_CHANGE_RECORD'
    partition_id: i32 = field(metadata={'kafka_type': 'int32'})
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    isr: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 0}, default=None)
    leader: i32 = field(metadata={'kafka_type': 'int32', 'tag': 1}, default=i32(-2))
    replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 2}, default=None)
    removing_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 3}, default=None)
    adding_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 4}, default=None)
    leader_recovery_state: i8 = field(metadata={'kafka_type': 'int8', 'tag': 5}, default=i8(-1))
    directories: tuple[uuid.UUID | None, ...] | None = field(metadata={'kafka_type': 'uuid', 'tag': 8}, default=None)
    eligible_leader_replicas: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 6}, default=None)
    last_known_elr: tuple[i32, ...] | None = field(metadata={'kafka_type': 'int32', 'tag': 7}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class FenceBrokerRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 7
    record_name: ClassVar[str] = 'FenceBrokerRecord'
    type_name: ClassVar[str] = 'FENCE_BROKER_RECORD'
    id: i32 = field(metadata={'kafka_type': 'int32'})
    epoch: i64 = field(metadata={'kafka_type': 'int64'})


@dataclass(frozen=True, slots=True, kw_only=True)
class UnfenceBrokerRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 8
    record_name: ClassVar[str] = 'UnfenceBrokerRecord'
    type_name: ClassVar[str] = 'UNFENCE_BROKER_RECORD'
    id: i32 = field(metadata={'kafka_type': 'int32'})
    epoch: i64 = field(metadata={'kafka_type': 'int64'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 9
    record_name: ClassVar[str] = 'RemoveTopicRecord'
    type_name: ClassVar[str] = 'REMOVE_TOPIC_RECORD'
    topic_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationTokenRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 10
    record_name: ClassVar[str] = 'DelegationTokenRecord'
    type_name: ClassVar[str] = 'DELEGATION_TOKEN_RECORD'
    owner: str = field(metadata={'kafka_type': 'string'})
    requester: str = field(metadata={'kafka_type': 'string'})
    renewers: tuple[str, ...] = field(metadata={'kafka_type': 'string'})
    issue_timestamp: i64 = field(metadata={'kafka_type': 'int64'})
    max_timestamp: i64 = field(metadata={'kafka_type': 'int64'})
    expiration_timestamp: i64 = field(metadata={'kafka_type': 'int64'})
    token_id: str = field(metadata={'kafka_type': 'string'})


@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 11
    record_name: ClassVar[str] = 'UserScramCredentialRecord'
    type_name: ClassVar[str] = 'USER_SCRAM_CREDENTIAL_RECORD'
    name: str = field(metadata={'kafka_type': 'string'})
    mechanism: i8 = field(metadata={'kafka_type': 'int8'})
    salt: bytes = field(metadata={'kafka_type': 'bytes'})
    stored_key: bytes = field(metadata={'kafka_type': 'bytes'})
    server_key: bytes = field(metadata={'kafka_type': 'bytes'})
    iterations: i32 = field(metadata={'kafka_type': 'int32'})


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 12
    record_name: ClassVar[str] = 'FeatureLevelRecord'
    type_name: ClassVar[str] = 'FEATURE_LEVEL_RECORD'
    name: str = field(metadata={'kafka_type': 'string'})
    feature_level: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecordV0EntityData:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    entity_type: str = field(metadata={'kafka_type': 'string'})
    entity_name: str | None = field(metadata={'kafka_type': 'string'})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 14
    record_name: ClassVar[str] = 'ClientQuotaRecord'
    type_name: ClassVar[str] = 'CLIENT_QUOTA_RECORD'
    entity: tuple[ClientQuotaRecordV0EntityData, ...]
    key: str = field(metadata={'kafka_type': 'string'})
    value: f64 = field(metadata={'kafka_type': 'float64'})
    remove: bool = field(metadata={'kafka_type': 'bool'})


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 15
    record_name: ClassVar[str] = 'ProducerIdsRecord'
    type_name: ClassVar[str] = 'PRODUCER_IDS_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    next_producer_id: i64 = field(metadata={'kafka_type': 'int64'})


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 17
    record_name: ClassVar[str] = 'BrokerRegistrationChangeRecord'
    type_name: ClassVar[str] = 'BROKER_REGISTRATION_CHANGE_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    fenced: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV1(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 17
    record_name: ClassVar[str] = 'BrokerRegistrationChangeRecord'
    type_name: ClassVar[str] = 'BROKER_REGISTRATION_CHANGE_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    fenced: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))
    in_controlled_shutdown: i8 = field(metadata={'kafka_type': 'int8', 'tag': 1}, default=i8(0))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV2(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 17
    record_name: ClassVar[str] = 'BrokerRegistrationChangeRecord'
    type_name: ClassVar[str] = 'BROKER_REGISTRATION_CHANGE_RECORD'
    broker_id: i32 = field(metadata={'kafka_type': 'int32'})
    broker_epoch: i64 = field(metadata={'kafka_type': 'int64'})
    fenced: i8 = field(metadata={'kafka_type': 'int8', 'tag': 0}, default=i8(0))
    in_controlled_shutdown: i8 = field(metadata={'kafka_type': 'int8', 'tag': 1}, default=i8(0))
    log_dirs: tuple[uuid.UUID | None, ...] = field(metadata={'kafka_type': 'uuid', 'tag': 2}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 18
    record_name: ClassVar[str] = 'AccessControlEntryRecord'
    type_name: ClassVar[str] = 'ACCESS_CONTROL_ENTRY_RECORD'
    id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    resource_type: i8 = field(metadata={'kafka_type': 'int8'})
    resource_name: str = field(metadata={'kafka_type': 'string'})
    pattern_type: i8 = field(metadata={'kafka_type': 'int8'})
    principal: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    operation: i8 = field(metadata={'kafka_type': 'int8'})
    permission_type: i8 = field(metadata={'kafka_type': 'int8'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 19
    record_name: ClassVar[str] = 'RemoveAccessControlEntryRecord'
    type_name: ClassVar[str] = 'REMOVE_ACCESS_CONTROL_ENTRY_RECORD'
    id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})


@dataclass(frozen=True, slots=True, kw_only=True)
class NoOpRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 20
    record_name: ClassVar[str] = 'NoOpRecord'
    type_name: ClassVar[str] = 'NO_OP_RECORD'


@dataclass(frozen=True, slots=True, kw_only=True)
class ZkMigrationStateRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 21
    record_name: ClassVar[str] = 'ZkMigrationStateRecord'
    type_name: ClassVar[str] = 'ZK_MIGRATION_STATE_RECORD'
    zk_migration_state: i8 = field(metadata={'kafka_type': 'int8'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 22
    record_name: ClassVar[str] = 'RemoveUserScramCredentialRecord'
    type_name: ClassVar[str] = 'REMOVE_USER_SCRAM_CREDENTIAL_RECORD'
    name: str = field(metadata={'kafka_type': 'string'})
    mechanism: i8 = field(metadata={'kafka_type': 'int8'})


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginTransactionRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 23
    record_name: ClassVar[str] = 'BeginTransactionRecord'
    type_name: ClassVar[str] = 'BEGIN_TRANSACTION_RECORD'
    name: str | None = field(metadata={'kafka_type': 'string', 'tag': 0}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTransactionRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 24
    record_name: ClassVar[str] = 'EndTransactionRecord'
    type_name: ClassVar[str] = 'END_TRANSACTION_RECORD'


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortTransactionRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 25
    record_name: ClassVar[str] = 'AbortTransactionRecord'
    type_name: ClassVar[str] = 'ABORT_TRANSACTION_RECORD'
    reason: str | None = field(metadata={'kafka_type': 'string', 'tag': 0}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveDelegationTokenRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 26
    record_name: ClassVar[str] = 'RemoveDelegationTokenRecord'
    type_name: ClassVar[str] = 'REMOVE_DELEGATION_TOKEN_RECORD'
    token_id: str = field(metadata={'kafka_type': 'string'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecordV0ControllerEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    host: str = field(metadata={'kafka_type': 'string'})
    port: u16 = field(metadata={'kafka_type': 'uint16'})
    security_protocol: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecordV0ControllerFeature:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    name: str = field(metadata={'kafka_type': 'string'})
    min_supported_version: i16 = field(metadata={'kafka_type': 'int16'})
    max_supported_version: i16 = field(metadata={'kafka_type': 'int16'})


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterControllerRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 27
    record_name: ClassVar[str] = 'RegisterControllerRecord'
    type_name: ClassVar[str] = 'REGISTER_CONTROLLER_RECORD'
    controller_id: i32 = field(metadata={'kafka_type': 'int32'})
    incarnation_id: uuid.UUID | None = field(metadata={'kafka_type': 'uuid'})
    zk_migration_ready: bool = field(metadata={'kafka_type': 'bool'})
    end_points: tuple[RegisterControllerRecordV0ControllerEndpoint, ...]
    features: tuple[RegisterControllerRecordV0ControllerFeature, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearElrRecordV0(MetadataRecord):
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    api_key: ClassVar[int] = 28
    record_name: ClassVar[str] = 'ClearElrRecord'
    type_name: ClassVar[str] = 'CLEAR_ELR_RECORD'
    topic_name: str = field(metadata={'kafka_type': 'string'})


# (api key, version) -> record class
RECORD_CLASSES: dict[tuple[int, int], type] = {
    (0, 0): RegisterBrokerRecordV0,
    (0, 1): RegisterBrokerRecordV1,
    (0, 2): RegisterBrokerRecordV2,
    (0, 3): RegisterBrokerRecordV3,
    (1, 0): UnregisterBrokerRecordV0,
    (2, 0): TopicRecordV0,
    (3, 0): PartitionRecordV0,
    (3, 1): PartitionRecordV1,
    (3, 2): PartitionRecordV2,
    (4, 0): ConfigRecordV0,
    (5, 0): PartitionChangeRecordV0,
    (5, 1): PartitionChangeRecordV1,
    (5, 2): PartitionChangeRecordV2,
    (7, 0): FenceBrokerRecordV0,
    (8, 0): UnfenceBrokerRecordV0,
    (9, 0): RemoveTopicRecordV0,
    (10, 0): DelegationTokenRecordV0,
    (11, 0): UserScramCredentialRecordV0,
    (12, 0): FeatureLevelRecordV0,
    (14, 0): ClientQuotaRecordV0,
    (15, 0): ProducerIdsRecordV0,
    (17, 0): BrokerRegistrationChangeRecordV0,
    (17, 1): BrokerRegistrationChangeRecordV1,
    (17, 2): BrokerRegistrationChangeRecordV2,
    (18, 0): AccessControlEntryRecordV0,
    (19, 0): RemoveAccessControlEntryRecordV0,
    (20, 0): NoOpRecordV0,
    (21, 0): ZkMigrationStateRecordV0,
    (22, 0): RemoveUserScramCredentialRecordV0,
    (23, 0): BeginTransactionRecordV0,
    (24, 0): EndTransactionRecordV0,
    (25, 0): AbortTransactionRecordV0,
    (26, 0): RemoveDelegationTokenRecordV0,
    (27, 0): RegisterControllerRecordV0,
    (28, 0): ClearElrRecordV0,
}

# api key -> Kafka's record type name, as MetadataRecordType prints it
RECORD_TYPE_NAMES: dict[int, str] = {
    0: 'REGISTER_BROKER_RECORD',
    1: 'UNREGISTER_BROKER_RECORD',
    2: 'TOPIC_RECORD',
    3: 'PARTITION_RECORD',
    4: 'CONFIG_RECORD',
    5: 'PARTITION_CHANGE_RECORD',
    7: 'FENCE_BROKER_RECORD',
    8: 'UNFENCE_BROKER_RECORD',
    9: 'REMOVE_TOPIC_RECORD',
    10: 'DELEGATION_TOKEN_RECORD',
    11: 'USER_SCRAM_CREDENTIAL_RECORD',
    12: 'FEATURE_LEVEL_RECORD',
    14: 'CLIENT_QUOTA_RECORD',
    15: 'PRODUCER_IDS_RECORD',
    17: 'BROKER_REGISTRATION_CHANGE_RECORD',
    18: 'ACCESS_CONTROL_ENTRY_RECORD',
    19: 'REMOVE_ACCESS_CONTROL_ENTRY_RECORD',
    20: 'NO_OP_RECORD',
    21: 'ZK_MIGRATION_STATE_RECORD',
    22: 'REMOVE_USER_SCRAM_CREDENTIAL_RECORD',
    23: 'BEGIN_TRANSACTION_RECORD',
    24: 'END_TRANSACTION_RECORD',
    25: 'ABORT_TRANSACTION_RECORD',
    26: 'REMOVE_DELEGATION_TOKEN_RECORD',
    27: 'REGISTER_CONTROLLER_RECORD',
    28: 'CLEAR_ELR_RECORD',
}
