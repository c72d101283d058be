"""One partition's next state: the PartitionChangeRecord that moves it there, or None.

Kafka's PartitionChangeBuilder (4.1 to 4.4), as rules (the code is ours):

1. A reassignment completes when the target ISR, less the replicas being removed, holds every
   adding replica, and every target replica too when fewer are added than removed (so that
   completing never shrinks the ISR): replicas and ISR become the target's, adding/removing
   clear. (Kafka 4.3's rule, KAFKA-19975; 4.1 waited for every target replica, so one
   unhealthy replica kept in place blocked the reassignment.)
2. ELR (KIP-966), when on: an ISR of at least min ISR clears ELR and last-known ELR; a smaller
   one gathers into ELR every old ISR member (and old ELR member) that is not in the target
   ISR and did not shut down uncleanly.
3. Election. A valid leader is in the target ISR, or in ELR when the target ISR is empty, and
   is acceptable (the caller's test: unfenced, not in controlled shutdown, directory online).
   A leader from ELR gets ISR [leader]. Failing that, the last known leader (ISR and ELR empty,
   last-known ELR of one, and acceptable: 4.0 skipped that test, 4.1 has it) is elected
   uncleanly. Failing that, an UNCLEAN election takes the first acceptable replica in assignment
   order (not a random one, nor the one with the most data). An unclean election sets ISR
   [leader] and RECOVERING, and clears ELR and last-known ELR.
4. The leader epoch moves when the leader changes (the record names a leader), when the
   replicas lose a member, and (before 3.6-IV0) when the ISR loses a member.
5. The ISR may be written empty only with ELR on. With ELR on, a partition that loses its
   leader keeps that leader in last-known ELR (unless one is kept already); a new leader
   clears it. (Kafka 4.1's rule; 4.0's keyed it on the ISR emptying.)

Lists compare in order, as Kafka's do; ELR sets come out in the order of Java's HashSet of
Integer (which the records then carry), so our records equal Kafka's byte for byte.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any, Callable, Iterable, Mapping, Sequence

from engine.common.config_resource import BROKER_DEFAULT, broker_resource, topic_resource
from engine.common.directory_id import LOST, MIGRATING, UNASSIGNED
from engine.controller.config_control import effective_min_isr
from engine.controller.controller_result import ControllerContext
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.image.metadata_version import RecordVersions
from engine.image.partition_registration import (
    LEADER_RECOVERY_RECOVERING, NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration)
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32

IsAcceptable = Callable[[int], bool]
ELR_FEATURE = "eligible.leader.replicas.version"


class Election(enum.Enum):
    PREFERRED = "preferred"  # the first replica if it can lead, else keep the leader, else any valid one
    ONLINE = "online"  # keep the leader if valid, else any valid one (ISR, or ELR when the ISR is empty)
    UNCLEAN = "unclean"  # ONLINE, else the first acceptable replica in assignment order (data may be lost)


def build_partition_change(
    partition: PartitionRegistration,
    topic_id: uuid.UUID,
    partition_id: int,
    *,
    acceptable: IsAcceptable,
    versions: RecordVersions,
    min_isr: int,
    elr_enabled: bool,
    election: Election = Election.ONLINE,
    target_isr: Sequence[int] | None = None,
    target_replicas: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_leader_recovery_state: int | None = None,
    unclean_shutdown_replicas: Sequence[int] = (),
    target_directories: Mapping[int, uuid.UUID] | None = None,
    default_dir: Callable[[int], uuid.UUID] = lambda broker_id: UNASSIGNED,
) -> Any | None:
    """The PartitionChangeRecord (at ``versions.partition_change``) that takes ``partition`` to
    the targets (None keeps the current value), or None when nothing would change."""
    return _Change(partition, acceptable, min_isr, elr_enabled, election, target_isr, target_replicas,
                   target_removing, target_adding, target_leader_recovery_state,
                   unclean_shutdown_replicas, target_directories).record(topic_id, partition_id, versions,
                                                                         default_dir)


class _Change:
    """The working state of one build (Kafka's builder fields), consumed once by ``record``."""

    def __init__(self, partition: PartitionRegistration, acceptable: IsAcceptable, min_isr: int,
                 elr_enabled: bool, election: Election, isr: Sequence[int] | None,
                 replicas: Sequence[int] | None, removing: Sequence[int] | None, adding: Sequence[int] | None,
                 recovery: int | None, unclean_shutdown: Sequence[int],
                 directories: Mapping[int, uuid.UUID] | None):
        self.p = partition
        self.acceptable = acceptable
        self.min_isr = min_isr
        self.elr_on = elr_enabled
        self.election = election
        self.isr = list(partition.isr if isr is None else isr)
        self.replicas = list(partition.replicas if replicas is None else replicas)
        self.removing = list(partition.removing_replicas if removing is None else removing)
        self.adding = list(partition.adding_replicas if adding is None else adding)
        self.recovery = partition.leader_recovery_state if recovery is None else recovery
        self.elr = list(partition.elr)
        self.unclean_shutdown = set(unclean_shutdown)
        self.directories = dict(zip(partition.replicas, partition.directories))
        self.directories.update(directories or {})
        # the record's fields; None (and leader -2, recovery -1) leave the partition's value
        self.out: dict[str, Any] = {}
        self.leader = NO_LEADER_CHANGE

    def record(self, topic_id: uuid.UUID, partition_id: int, versions: RecordVersions,
               default_dir: Callable[[int], uuid.UUID]) -> Any | None:
        p = self.p
        self._complete_reassignment()
        self._gather_elr()
        self._elect(versions)
        if self.leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(self.replicas):
            self.leader = p.leader  # a replica leaves: naming the same leader bumps the epoch
        self._record_elr()
        if ("isr" not in self.out and (self.isr or self.elr_on) and tuple(self.isr) != p.isr):
            self.out["isr"] = tuple(self.isr)
        if (versions.leader_epoch_bump_on_isr_shrink and self.leader == NO_LEADER_CHANGE
                and "isr" in self.out and not set(p.isr) <= set(self.out["isr"])):
            self.leader = p.leader
        self._record_last_known_leader()
        self._record_assignment(versions, default_dir)
        if self.recovery != p.leader_recovery_state:
            self.out["leader_recovery_state"] = self.recovery
        if not self.out and self.leader == NO_LEADER_CHANGE:
            return None
        return _change_record(topic_id, partition_id, self.leader, self.out, versions.partition_change)

    # -- the steps, in Kafka's order ---------------------------------------------------------

    def _complete_reassignment(self) -> None:
        if not (self.removing or self.adding):
            return
        isr, replicas = self.isr, self.replicas
        if self.removing:
            isr = [r for r in self.isr if r not in self.removing]
            replicas = [r for r in self.replicas if r not in self.removing]
            if not isr or not replicas:
                return
        if not set(self.adding) <= set(isr):
            return
        if len(self.adding) < len(self.removing) and not set(replicas) <= set(isr):
            return
        self.isr, self.replicas, self.removing, self.adding = isr, replicas, [], []

    def _gather_elr(self) -> None:
        if not self.elr_on:
            return
        if len(self.isr) >= self.min_isr:
            self.elr = []
            return
        target_isr = set(self.isr)
        candidates = _JavaIntSet(self.elr)
        candidates.add_all(self.p.isr)
        self.elr = [r for r in candidates if r not in target_isr and r not in self.unclean_shutdown]
        # (Kafka also works out a last-known ELR here, but with its last-known-leader mode, the only
        # one in use, that list is never written: last-known ELR holds the last leader instead)

    def _valid_leader(self, replica: int) -> bool:
        in_isr = replica in self.isr or (not self.isr and replica in self.elr)
        return in_isr and self.acceptable(replica)

    def _last_known_leader_electable(self) -> bool:
        last_known = self.p.last_known_elr
        return (self.elr_on and not self.elr and not self.isr and len(last_known) == 1
                and self.acceptable(last_known[0]))

    def _choose_leader(self) -> tuple[int, bool]:
        """(leader, unclean) by the election type."""
        current = self.p.leader
        if self.election is Election.PREFERRED and self.replicas and self._valid_leader(self.replicas[0]):
            return self.replicas[0], False
        if self._valid_leader(current):
            return current, False
        rest = self.replicas[1:] if self.election is Election.PREFERRED else self.replicas
        for replica in rest:
            if self._valid_leader(replica):
                return replica, False
        if self._last_known_leader_electable():
            return self.p.last_known_elr[0], True
        if self.election is Election.UNCLEAN:
            for replica in self.replicas:
                if self.acceptable(replica):
                    return replica, True
        return NO_LEADER, False

    def _elect(self, versions: RecordVersions) -> None:
        leader, unclean = self._choose_leader()
        if leader == self.p.leader:
            return
        if leader in self.elr:
            self.isr = [leader]
            self.elr = [r for r in self.elr if r != leader]
        self.leader = leader
        if unclean:
            # the new leader may lack committed data: it alone is in sync, and it recovers first
            self.out["isr"] = (leader,)
            if self.p.leader_recovery_state != LEADER_RECOVERY_RECOVERING:
                self.out["leader_recovery_state"] = LEADER_RECOVERY_RECOVERING

    def _record_elr(self) -> None:
        if "isr" in self.out or not self.elr_on:  # an unclean election, or ELR off, clears ELR
            self.elr = []
        if tuple(self.elr) != self.p.elr:
            self.out["eligible_leader_replicas"] = tuple(self.elr)
        # last-known ELR holds the last known leader: written in _record_last_known_leader

    def _record_last_known_leader(self) -> None:
        if not self.elr_on:
            return
        p = self.p
        if self.leader == NO_LEADER and not p.last_known_elr:
            self.out["last_known_elr"] = (p.leader,)  # the partition just lost its leader: remember it
        elif self.leader >= 0 and p.last_known_elr:
            self.out["last_known_elr"] = ()  # a leader again

    def _record_assignment(self, versions: RecordVersions, default_dir: Callable[[int], uuid.UUID]) -> None:
        p = self.p
        if self.replicas:
            if versions.directory_assignment:
                known = self.directories
                directories = tuple(known[r] if r in known else default_dir(r) for r in self.replicas)
                if directories != p.directories:
                    self.out["directories"] = directories
            if tuple(self.replicas) != p.replicas:
                self.out["replicas"] = tuple(self.replicas)
        if tuple(self.removing) != p.removing_replicas:
            self.out["removing_replicas"] = tuple(self.removing)
        if tuple(self.adding) != p.adding_replicas:
            self.out["adding_replicas"] = tuple(self.adding)


def _change_record(topic_id: uuid.UUID, partition_id: int, leader: int, fields: dict[str, Any], version: int) -> Any:
    """The record at ``version``: fields that version lacks are left out (ELR is v2, directories v1+)."""
    values: dict[str, Any] = dict(partition_id=i32(partition_id), topic_id=topic_id, leader=i32(leader))
    for name in ("isr", "replicas", "removing_replicas", "adding_replicas"):
        if name in fields:
            values[name] = tuple(i32(r) for r in fields[name])
    if "leader_recovery_state" in fields:
        values["leader_recovery_state"] = i8(fields["leader_recovery_state"])
    if version >= 1 and "directories" in fields:
        values["directories"] = tuple(fields["directories"])
    if version >= 2:
        for name in ("eligible_leader_replicas", "last_known_elr"):
            if name in fields:
                values[name] = tuple(i32(r) for r in fields[name])
    return m.RECORD_CLASSES[(5, version)](**values)


def directory_online(directory: uuid.UUID | None, broker_directories: Sequence[uuid.UUID | None]) -> bool:
    """Kafka's DirectoryId.isOnline: a replica in an unassigned or migrating directory, or on a
    broker that lists none (registered before 3.7-IV2), counts as online; LOST never does."""
    if directory is None or directory in (MIGRATING, UNASSIGNED):
        return True
    if directory == LOST:
        return False
    return not broker_directories or directory in broker_directories


def default_directory(broker_directories: Sequence[uuid.UUID | None] | None) -> uuid.UUID:
    """Where a new replica on a broker goes (Kafka's ClusterControlManager.defaultDir): its only
    directory, MIGRATING when it lists none, UNASSIGNED when it has several or is not registered."""
    if broker_directories is None:
        return UNASSIGNED
    if not broker_directories:
        return MIGRATING
    if len(broker_directories) == 1:
        return broker_directories[0] or MIGRATING
    return UNASSIGNED


class _JavaIntSet:
    """The iteration order of a java.util.HashSet<Integer> built from a collection and then
    added to: Kafka's ELR lists come out of one, so ours follow it to match its records.

    Buckets are (h ^ h >>> 16) & (capacity - 1), capacity doubles past 3/4 full; a bucket keeps
    insertion order (a resize splits buckets without reordering them)."""

    def __init__(self, initial: Iterable[int]):
        items = list(initial)
        # HashSet(Collection) sizes its map for max(n, 12) entries: capacity ceil(n / 0.75), a power of two
        wanted = -(-max(len(items), 12) * 4 // 3)
        self.capacity = 1 << max(wanted - 1, 1).bit_length()
        self.order: dict[int, int] = {}
        self.add_all(items)

    def add_all(self, values: Iterable[int]) -> None:
        for value in values:
            if value not in self.order:
                self.order[value] = len(self.order)
                if len(self.order) > self.capacity * 3 // 4:
                    self.capacity *= 2

    def __iter__(self):
        mask = self.capacity - 1

        def bucket(value: int) -> tuple[int, int]:
            h = value & 0xFFFFFFFF
            return (h ^ (h >> 16)) & mask, self.order[value]

        return iter(sorted(self.order, key=bucket))


# -- the controller's view: what a change needs from the image and the settings -------------

def elr_enabled(ctx: ControllerContext) -> bool:
    """KIP-966 on: a metadata.version with ELR records (4.0-IV1+) and eligible.leader.replicas.version >= 1."""
    return ctx.versions.elr and ctx.image.features.get(ELR_FEATURE, 0) >= 1


def topic_config(ctx: ControllerContext, topic_name: str, key: str) -> str | None:
    """A topic's effective dynamic setting, as Kafka's controller resolves it: the topic's own,
    then this controller node's broker config, then the cluster default (broker "")."""
    configs = ctx.image.configs
    for resource in (topic_resource(topic_name), broker_resource(ctx.config.node_id), BROKER_DEFAULT):
        value = configs.config_map(resource).get(key)
        if value is not None:
            return value
    return None


def unclean_election_enabled(ctx: ControllerContext, topic_name: str) -> bool:
    """Kafka's unclean election (the first acceptable replica of the assignment): off while the
    KIP-966 unclean recovery manager is on (engine/controller/unclean_recovery.py elects the
    replica with the most data instead)."""
    if ctx.config.unclean_recovery_manager_enabled:
        return False
    value = topic_config(ctx, topic_name, "unclean.leader.election.enable")
    if value is None:
        return ctx.config.unclean_leader_election_enable
    return value.strip().lower() == "true"  # Java's Boolean.parseBoolean


def topic_min_isr(ctx: ControllerContext, topic: TopicImage) -> int:
    """min(min.insync.replicas, the replication factor of partition 0), as Kafka takes it."""
    value = topic_config(ctx, topic.name, "min.insync.replicas")
    configured = effective_min_isr(topic.name, value, ctx.config.min_insync_replicas)
    first = topic.partitions.get(0) or next(iter(topic.partitions.values()), None)
    return configured if first is None else min(configured, len(first.replicas))


def leader_acceptor(image: MetadataImage, partition: PartitionRegistration, *, removed: int = NO_LEADER,
                    added: int = NO_LEADER, unclean_shutdown: int = NO_LEADER) -> IsAcceptable:
    """Who may lead ``partition``: an active broker (registered, unfenced, not in controlled
    shutdown) whose directory for it is online. ``removed`` and ``unclean_shutdown`` never may;
    ``added`` may though the image still shows it fenced (it is being unfenced)."""
    brokers = image.cluster.brokers
    directories = dict(zip(partition.replicas, partition.directories))

    def acceptable(broker_id: int) -> bool:
        if broker_id in (removed, unclean_shutdown):
            return False
        broker = brokers.get(broker_id)
        if broker is None:
            return False
        if broker_id != added and (broker.fenced or broker.in_controlled_shutdown):
            return False
        # (Kafka throws for a broker that is not a replica; none reaches here but an adding one)
        return directory_online(directories.get(broker_id), broker.directories)

    return acceptable


def directory_for_new_replica(image: MetadataImage) -> Callable[[int], uuid.UUID]:
    def default_dir(broker_id: int) -> uuid.UUID:
        broker = image.cluster.brokers.get(broker_id)
        return default_directory(None if broker is None else broker.directories)
    return default_dir


def partition_change(ctx: ControllerContext, topic: TopicImage, partition_id: int, *,
                     acceptable: IsAcceptable | None = None, election: Election | None = None,
                     **targets: Any) -> Any | None:
    """build_partition_change with what the context says: ELR on or off, the topic's min ISR,
    the record version, unclean election when the topic allows it (unless ``election`` is
    given), and Kafka's default acceptor and default directories."""
    partition = topic.partitions[partition_id]
    if election is None:
        election = Election.UNCLEAN if unclean_election_enabled(ctx, topic.name) else Election.ONLINE
    return build_partition_change(
        partition, topic.id, partition_id,
        acceptable=acceptable or leader_acceptor(ctx.image, partition), versions=ctx.versions,
        min_isr=topic_min_isr(ctx, topic), elr_enabled=elr_enabled(ctx), election=election,
        default_dir=directory_for_new_replica(ctx.image), **targets)
