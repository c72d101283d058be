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
    directories: tuple[uuid.UUID | None, ...] = ()  # in Kafka's order: see ``directory_order``
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
                   directory_order(getattr(record, "log_dirs", ())), None if cordoned is None else tuple(cordoned))

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


def directory_order(directories: Any) -> tuple[uuid.UUID | None, ...]:
    """A broker's log directories as Kafka's BrokerRegistration keeps them, and so writes them
    back: sorted by Uuid.compareTo, the two halves compared as signed 64-bit numbers (kio's None
    is the all-zero id). The cordoned ones stay as the record lists them, in Kafka too."""
    return tuple(sorted(directories, key=_signed_halves))


def _signed_halves(directory: uuid.UUID | None) -> tuple[int, int]:
    value = 0 if directory is None else directory.int
    most, least = value >> 64, value & (2**64 - 1)
    return most - (most >> 63 << 64), least - (least >> 63 << 64)


def endpoints(items: Any) -> tuple[Endpoint, ...]:
    """By listener name: Kafka keeps them in a map, so their order in a record means nothing."""
    return tuple(sorted(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in items))


def feature_ranges(items: Any) -> tuple[FeatureRange, ...]:
    return tuple(sorted(FeatureRange(f.name, f.min_supported_version, f.max_supported_version) for f in items))


__all__ = ["BrokerRegistration", "ControllerRegistration", "Endpoint", "FeatureRange", "RegisterBrokerRecord",
           "directory_order"]
