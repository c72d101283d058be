"""A partition's state in the metadata image, and Kafka's rules for changing it.

PartitionRecord sets the whole state; PartitionChangeRecord merges into it with
Kafka's semantics: a null (None) field keeps its value; leader -2 keeps the leader,
any other value (-1: no leader) sets it and bumps the leader epoch; every change
bumps the partition epoch; leader recovery state -1 keeps it.

Directories (KIP-858), as Kafka's PartitionRegistration reads them: none (a record from
before 3.7) or all MIGRATING means one MIGRATING per replica, resized when the replicas
change; otherwise there is one per replica, kept by position while a change leaves them
out. A record whose directories do not pair with its replicas is refused
(InvalidReplicaDirectories), as Kafka refuses it.
"""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

from engine.common.directory_id import MIGRATING, migrating_array

NO_LEADER = -1
NO_LEADER_CHANGE = -2
LEADER_RECOVERY_RECOVERED = 0
LEADER_RECOVERY_RECOVERING = 1
LEADER_RECOVERY_NO_CHANGE = -1


class InvalidPartitionRecord(ValueError):
    """A PartitionRecord the replay skips: it changes nothing."""


class InvalidReplicaDirectories(InvalidPartitionRecord):
    """Directories that do not pair one to one with the replicas (Kafka's
    InvalidReplicaDirectoriesException): the record changes nothing."""


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
    directories: tuple[uuid.UUID, ...] = ()  # one per replica; reserved ids in engine.common.directory_id
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
        if replicas is None or record.isr is None or record.removing_replicas is None \
                or record.adding_replicas is None:
            # arrays Kafka's schema makes non-nullable, read as null from damaged bytes (Kafka's
            # reader refuses the record; kio reads it): skipped, as a record that does not decode
            raise InvalidPartitionRecord("a null replica list")
        directories = _record_directories(record.directories if version >= 1 else None, len(replicas))
        elr = record.eligible_leader_replicas if version >= 2 else None
        last_known = record.last_known_elr if version >= 2 else None
        return tuple.__new__(cls, (
            replicas, record.isr, record.removing_replicas, record.adding_replicas, record.leader,
            record.leader_recovery_state, record.leader_epoch, record.partition_epoch,
            directories, elr or (), last_known or ()))

    def merge(self, change: Any) -> "PartitionRegistration":
        """The state after a PartitionChangeRecord (any version); InvalidReplicaDirectories when
        its directories do not pair with the replicas."""
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
            directories=_changed_directories(change, self.directories, len(replicas)),
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


def _record_directories(directories: tuple | None, replica_count: int) -> tuple:
    """A PartitionRecord's directories as Kafka's PartitionRegistration(PartitionRecord) reads them."""
    if not directories:
        return migrating_array(replica_count)
    if len(directories) != replica_count:
        raise InvalidReplicaDirectories(f"{len(directories)} directories for {replica_count} replicas")
    return _assigned(directories) or migrating_array(replica_count)


def _changed_directories(change: Any, current: tuple, replica_count: int) -> tuple:
    """Kafka's PartitionRegistration.merge (since 3.8, KAFKA-16583): the change's directories, else
    the current ones; all MIGRATING follow the replicas' count, any others must match it."""
    directories = getattr(change, "directories", None)
    if directories is None:
        if len(current) == replica_count:  # the common case: kept as they are (all MIGRATING or not)
            return current
        directories = current
    elif directories and change.replicas is not None and len(directories) != len(change.replicas):
        raise InvalidReplicaDirectories(f"{len(directories)} directories for {len(change.replicas)} replicas")
    assigned = _assigned(directories) if directories else None
    if assigned is None:
        return migrating_array(replica_count)
    if len(assigned) != replica_count:
        raise InvalidReplicaDirectories(f"{len(assigned)} directories for {replica_count} replicas")
    return assigned


def _assigned(directories: tuple) -> tuple | None:
    """``directories`` with kio's None (the all-zero id) as MIGRATING; None when all are MIGRATING.

    On the replay hot path: identity and ``.int`` tests, no UUID.__eq__ calls."""
    nones = zeros = 0
    for directory in directories:
        if directory is None:
            nones += 1
        elif not directory.int:
            zeros += 1
    if nones + zeros == len(directories):
        return None
    if nones:
        return tuple(MIGRATING if d is None else d for d in directories)
    # one tuple per set of directories: a cluster has a few directories, and a million partitions
    # would otherwise hold three UUIDs of their own each (about 300 MB); keyed by the ids' ints,
    # whose hashes are C calls (UUID.__hash__ and __eq__ are Python's)
    key = tuple([d.int for d in directories])
    shared = _SHARED_DIRECTORIES.get(key)
    if shared is None:
        shared = tuple(directories)
        if len(_SHARED_DIRECTORIES) < _SHARED_DIRECTORIES_MAX:
            _SHARED_DIRECTORIES[key] = shared
    return shared


_SHARED_DIRECTORIES: dict[tuple[int, ...], tuple] = {}
_SHARED_DIRECTORIES_MAX = 65536  # sets of directories kept; past it (a huge JBOD cluster) each its own


def _keep(new: Any, old: tuple) -> tuple:
    return old if new is None else tuple(new)
