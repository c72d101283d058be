"""A partition's state in the metadata image, and Kafka's rules for changing it.

PartitionRecord sets the whole state; PartitionChangeRecord merges into it with
Kafka's semantics: a null (None) field keeps its value; leader -2 keeps the leader,
any other value (-1: no leader) sets it and bumps the leader epoch; every change
bumps the partition epoch; leader recovery state -1 keeps it.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

MIGRATING = uuid.UUID(int=2)  # Kafka's DirectoryId.MIGRATING: a replica from before directory assignment
NO_LEADER = -1
NO_LEADER_CHANGE = -2
LEADER_RECOVERY_RECOVERED = 0
LEADER_RECOVERY_RECOVERING = 1
LEADER_RECOVERY_NO_CHANGE = -1


class PartitionRegistration(NamedTuple):
    """Immutable partition state. (A NamedTuple: an image of a million partitions builds fast.)"""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = LEADER_RECOVERY_RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    directories: tuple[uuid.UUID | None, ...] = ()  # None: UNASSIGNED (all-zero); MIGRATING: see below
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @classmethod
    def from_record(cls, record: Any) -> "PartitionRegistration":
        """From a PartitionRecord of any version (v0 has no directories, v0/v1 no ELR).

        On the replay hot path: kio's arrays are tuples already, and tuple.__new__ skips
        the NamedTuple constructor's Python frame.
        """
        version = record.__version__
        replicas = record.replicas
        directories = record.directories if version >= 1 else None
        elr = record.eligible_leader_replicas if version >= 2 else None
        last_known = record.last_known_elr if version >= 2 else None
        return tuple.__new__(cls, (
            replicas, record.isr, record.removing_replicas, record.adding_replicas, record.leader,
            record.leader_recovery_state, record.leader_epoch, record.partition_epoch,
            default_to_migrating(directories, len(replicas)), elr or (), last_known or ()))

    def merge(self, change: Any) -> "PartitionRegistration":
        """The state after a PartitionChangeRecord (any version)."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, leader_epoch + 1
        recovery = self.leader_recovery_state
        if change.leader_recovery_state != LEADER_RECOVERY_NO_CHANGE:
            recovery = change.leader_recovery_state
        replicas = _keep(change.replicas, self.replicas)
        return PartitionRegistration(
            replicas=replicas,
            isr=_keep(change.isr, self.isr),
            removing_replicas=_keep(change.removing_replicas, self.removing_replicas),
            adding_replicas=_keep(change.adding_replicas, self.adding_replicas),
            leader=leader,
            leader_recovery_state=recovery,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            directories=default_to_migrating(_keep(getattr(change, "directories", None), self.directories),
                                             len(replicas)),
            elr=_keep(getattr(change, "eligible_leader_replicas", None), self.elr),
            last_known_elr=_keep(getattr(change, "last_known_elr", None), self.last_known_elr),
        )

    def without_elr(self) -> "PartitionRegistration":
        """After ClearElrRecord: ELR and last-known ELR emptied, as a change (partition epoch + 1)."""
        return self._replace(elr=(), last_known_elr=(), partition_epoch=self.partition_epoch + 1)

    @property
    def has_leader(self) -> bool:
        return self.leader >= 0

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)


def default_to_migrating(directories: tuple | None, replica_count: int) -> tuple:
    """Kafka's rule: no directories (records from before KIP-858), or all MIGRATING, means one
    MIGRATING per replica — resized when the replicas change."""
    if not directories or all(d == MIGRATING for d in directories):
        return (MIGRATING,) * replica_count
    return tuple(directories)


def _keep(new: Any, old: tuple) -> tuple:
    return old if new is None else tuple(new)
