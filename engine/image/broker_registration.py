"""How a broker or a controller registered with the quorum (Kafka's ``BrokerRegistration`` and
``ControllerRegistration`` in metadata/): endpoints, supported feature ranges and, for brokers,
fencing, controlled shutdown and log directories."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple, Union

from engine.records import metadata_records as m

RegisterBrokerRecord = Union[m.RegisterBrokerRecordV0, m.RegisterBrokerRecordV1, m.RegisterBrokerRecordV2,
                             m.RegisterBrokerRecordV3, m.RegisterBrokerRecordV4]


class Endpoint(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: int


class FeatureRange(NamedTuple):
    name: str
    min_version: int
    max_version: int


class BrokerRegistration(NamedTuple):
    id: int
    epoch: int
    incarnation_id: uuid.UUID | None
    endpoints: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID | None, ...] = ()
    # log directories cordoned (KIP-1066, Kafka 4.3+): no new replica is placed on them.
    # None until the broker or controller says (a record before v4 of RegisterBrokerRecord).
    cordoned_directories: tuple[uuid.UUID | None, ...] | None = None

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> "BrokerRegistration":
        """From a RegisterBrokerRecord of any version (fields a version lacks take their defaults)."""
        cordoned = getattr(record, "cordoned_log_dirs", None)
        return cls(record.broker_id, record.broker_epoch, record.incarnation_id, endpoints(record.end_points),
                   feature_ranges(record.features), record.rack, record.fenced,
                   getattr(record, "in_controlled_shutdown", False), getattr(record, "is_migrating_zk_broker", False),
                   tuple(getattr(record, "log_dirs", ())), None if cordoned is None else tuple(cordoned))

    @property
    def state(self) -> str:
        """active, fenced or controlled-shutdown: how an operator names it. Fenced wins: a
        broker that finished its controlled shutdown is fenced, and serves nothing."""
        if self.fenced:
            return "fenced"
        return "controlled-shutdown" if self.in_controlled_shutdown else "active"


class ControllerRegistration(NamedTuple):
    id: int
    incarnation_id: uuid.UUID | None
    zk_migration_ready: bool
    endpoints: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]

    @classmethod
    def from_record(cls, record: m.RegisterControllerRecordV0) -> "ControllerRegistration":
        return cls(record.controller_id, record.incarnation_id, record.zk_migration_ready,
                   endpoints(record.end_points), feature_ranges(record.features))


def endpoints(items: Any) -> tuple[Endpoint, ...]:
    """By listener name: Kafka keeps them in a map, so their order in a record means nothing."""
    return tuple(sorted(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in items))


def feature_ranges(items: Any) -> tuple[FeatureRange, ...]:
    return tuple(sorted(FeatureRange(f.name, f.min_supported_version, f.max_supported_version) for f in items))


__all__ = ["BrokerRegistration", "ControllerRegistration", "Endpoint", "FeatureRange", "RegisterBrokerRecord"]
