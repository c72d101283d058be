"""One partition change, as our builder and Kafka's own PartitionChangeBuilder see it.

``PartitionChangeCase`` holds a partition, who may lead and the targets; ``ours()`` builds our
record (engine.controller.partition_change), ``kafka_builds(classes, case)`` asks Kafka's
builder through the harness (tests/kafka/harness/PartitionChangeOp.java), and ``described``
puts our record in the form Kafka's answer takes, so that the two compare with ``==``: field
by field and byte for byte, or both None.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from engine.common.directory_id import MIGRATING, UNASSIGNED
from engine.controller.partition_change import Election, build_partition_change
from engine.image.metadata_version import BY_NAME, record_versions
from engine.image.partition_registration import PartitionRegistration
from engine.records.kio_codec import encode_entity

TOPIC = uuid.UUID("5a0c6a5e-1d2b-4c3d-8e4f-0123456789ab")


@dataclasses.dataclass(frozen=True)
class PartitionChangeCase:
    """One build: the partition, who may lead, and the targets (None leaves the partition's)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    metadata_version: str = "4.1-IV1"
    elr_enabled: bool = True
    min_isr: int = 1
    election: str = "ONLINE"
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    recovery: int = 0
    directories: tuple[uuid.UUID, ...] | None = None  # None: MIGRATING for each replica
    fenced: frozenset[int] = frozenset()
    shutting_down: frozenset[int] = frozenset()
    target_isr: tuple[int, ...] | None = None
    target_replicas: tuple[int, ...] | None = None
    target_removing: tuple[int, ...] | None = None
    target_adding: tuple[int, ...] | None = None
    target_recovery: int | None = None
    unclean_shutdown: tuple[int, ...] = ()
    target_directories: tuple[tuple[int, uuid.UUID], ...] = ()
    default_directories: tuple[tuple[int, uuid.UUID], ...] = ()
    leader_epoch: int = 5
    partition_epoch: int = 9
    partition_id: int = 0

    def dirs(self) -> tuple[uuid.UUID, ...]:
        if self.directories is None:
            return (MIGRATING,) * len(self.replicas)
        return tuple(d or MIGRATING for d in self.directories)  # (kio reads MIGRATING, all zero, as None)

    def acceptable(self, broker_id: int) -> bool:
        return broker_id not in self.fenced and broker_id not in self.shutting_down

    def request(self) -> dict[str, Any]:
        """The case as PartitionChangeOp reads it."""
        return {
            "partition": {"replicas": self.replicas, "directories": [str(d) for d in self.dirs()], "isr": self.isr,
                          "removing": self.removing, "adding": self.adding, "elr": self.elr,
                          "last_known_elr": self.last_known_elr, "leader": self.leader,
                          "leader_recovery_state": self.recovery, "leader_epoch": self.leader_epoch,
                          "partition_epoch": self.partition_epoch},
            "topic_id": str(TOPIC), "partition_id": self.partition_id, "metadata_version": self.metadata_version,
            "min_isr": self.min_isr, "elr_enabled": self.elr_enabled, "election": self.election,
            "fenced": sorted(self.fenced), "shutting_down": sorted(self.shutting_down),
            "target_isr": self.target_isr, "target_replicas": self.target_replicas,
            "target_removing": self.target_removing, "target_adding": self.target_adding,
            "target_leader_recovery_state": self.target_recovery, "unclean_shutdown": self.unclean_shutdown,
            "target_directories": {str(b): str(d) for b, d in self.target_directories},
            "default_directories": {str(b): str(d) for b, d in self.default_directories},
        }

    def ours(self) -> Any | None:
        partition = PartitionRegistration(
            replicas=self.replicas, isr=self.isr, removing_replicas=self.removing, adding_replicas=self.adding,
            leader=self.leader, leader_recovery_state=self.recovery, leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch, directories=self.dirs(), elr=self.elr,
            last_known_elr=self.last_known_elr)
        defaults = dict(self.default_directories)
        return build_partition_change(
            partition, TOPIC, self.partition_id, acceptable=self.acceptable,
            versions=record_versions(BY_NAME[self.metadata_version].level), min_isr=self.min_isr,
            elr_enabled=self.elr_enabled, election=Election[self.election], target_isr=self.target_isr,
            target_replicas=self.target_replicas, target_removing=self.target_removing,
            target_adding=self.target_adding, target_leader_recovery_state=self.target_recovery,
            unclean_shutdown_replicas=self.unclean_shutdown, target_directories=dict(self.target_directories),
            default_dir=lambda broker_id: defaults.get(broker_id, UNASSIGNED))


def described(record: Any | None) -> dict[str, Any] | None:
    """Our record in the form PartitionChangeOp describes Kafka's (absent fields are None)."""
    if record is None:
        return None

    def ints(name: str) -> list[int] | None:
        value = getattr(record, name, None)
        return None if value is None else list(value)

    directories = getattr(record, "directories", None)
    return {
        "version": record.version, "partition_id": record.partition_id, "topic_id": str(record.topic_id),
        "isr": ints("isr"), "leader": record.leader, "replicas": ints("replicas"),
        "removing_replicas": ints("removing_replicas"), "adding_replicas": ints("adding_replicas"),
        "leader_recovery_state": record.leader_recovery_state,
        "directories": None if directories is None else [str(d or MIGRATING) for d in directories],
        "eligible_leader_replicas": ints("eligible_leader_replicas"), "last_known_elr": ints("last_known_elr"),
        "bytes": encode_entity(record).hex(),
    }


def kafka_builds(classes: Any, case: PartitionChangeCase) -> dict[str, Any] | None:
    """What Kafka's PartitionChangeBuilder (of ``classes.version``) builds for ``case``."""
    return classes.call("PartitionChange", cases=[case.request()])[0]
