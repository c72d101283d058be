"""The dashboard's demo: the generated history of a small cluster having a bad day.

Three controllers (a kraft.version 1 quorum: the first leader writes KRaftVersionRecord and
VotersRecord with its LeaderChangeMessage, as Kafka's LeaderState does) and five brokers on
three racks; metadata.version 4.1-IV1 with eligible.leader.replicas.version=1 (KIP-966). Topics
``orders`` (6 partitions, RF 3, min.insync.replicas=2), ``payments`` (3 partitions, RF 3,
min.insync.replicas=2) and ``audit`` (2 partitions, RF 2). Then:

1. broker 3 loses its session: fenced, out of every ISR, its leaderships move; it comes back,
   the leaders add it to their ISRs again, the preferred leaders are restored;
2. the quorum leader changes (controller 100 restarts; 101 leads epoch 2);
3. an ELR episode on ``payments-0`` (replicas [2, 4, 5], min ISR 2): broker 5 is fenced (ISR
   [2, 4], still at min ISR, so no ELR), then broker 4 (ISR [2] is under min ISR: the member
   that just left, 4, becomes eligible: ELR [4]), then broker 2 (ISR empty, leader -1, ELR
   [2, 4], last-known ELR [2], the last leader); broker 4 returns and is elected from the ELR
   (leader 4, ISR [4], ELR [2]); broker 5 catches up and the ISR is back at min ISR: ELR
   cleared; broker 2 returns; the preferred leaders are restored;
4. broker 1 shuts down cleanly (in controlled shutdown: out of every ISR, leaderships moved;
   then fenced), restarts with a new broker epoch, catches up, and leads again;
5. ``audit`` is deleted; the partitions on broker 5 are reassigned away (adding the new
   replica, removing 5, completed once the new replica is in the ISR); broker 5 shuts down and
   is unregistered.

The records are what Kafka's quorum controller writes for these events: a small port of its
PartitionChangeBuilder (ELR enabled, the last known leader kept in LastKnownElr, as Kafka 4.x
does) makes every PartitionChangeRecord, and the engine's own PartitionRegistration.merge
follows them, so the state here is the state a replay of the log reaches. Each batch is one
second after the previous one; broker epochs are the offsets of their registrations, as in
Kafka. Everything is deterministic: the same bytes on every run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from engine.common.config_resource import ConfigResourceType
from engine.records import metadata_records as m
from engine.records.kio_codec import (
    KRaftVersionFeature, KRaftVersionRecord, LeaderChangeMessage, LeaderChangeVoter, VotersEndpoint,
    VotersRecord, VotersVoter, i8, i16, i32, i64, u16,
)
from engine.storage.meta_properties import MetaProperties, write_meta_properties
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_record_serde import control_record
from engine.image.partition_registration import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration
from engine.storage.quorum_state_file import QUORUM_STATE_FILE, QuorumStateData, write_quorum_state

START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=timezone.utc)
START_MS = int(START.timestamp() * 1000)
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
NODE_ID = 101  # the controller whose log directory this is (the leader at the end)
METADATA_VERSION = 27  # 4.1-IV1: ELR (4.1-IV0+), directory assignment, kraft.version 1
CONTROLLERS = (100, 101, 102)
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-a", 5: "rack-c"}
TOPICS = {  # name -> (replica assignments, topic configs)
    "orders": ([[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 1], [5, 1, 2], [1, 3, 5]],
               {"min.insync.replicas": "2", "retention.ms": "604800000"}),
    "payments": ([[2, 4, 5], [3, 5, 1], [4, 1, 2]], {"min.insync.replicas": "2", "cleanup.policy": "delete"}),
    "audit": ([[5, 1], [2, 3]], {"retention.ms": "2592000000"}),
}
# Moving broker 5's replicas away before it is decommissioned (audit is gone by then).
REASSIGNMENTS = {("orders", 2): [3, 4, 1], ("orders", 3): [4, 2, 1], ("orders", 4): [3, 1, 2],
                 ("orders", 5): [1, 3, 2], ("payments", 0): [2, 4, 3], ("payments", 1): [3, 2, 1]}
DEFAULT_MIN_ISR = 1  # the cluster default: min.insync.replicas is not set for the brokers

_NAMESPACE = uuid.UUID("0c6f6d2e-6d65-7461-7368-656c6c2d6465")  # ids are uuid5 of names in it
SUPPORTED = (("eligible.leader.replicas.version", 0, 1), ("group.version", 0, 1), ("kraft.version", 0, 1),
             ("metadata.version", 7, METADATA_VERSION), ("transaction.version", 0, 2))
FINALIZED = (("metadata.version", METADATA_VERSION), ("eligible.leader.replicas.version", 1),
             ("group.version", 1), ("transaction.version", 2))


def _id(name: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, name)


def topic_id(name: str) -> uuid.UUID:
    return _id(f"topic/{name}")


def directory_id(node_id: int) -> uuid.UUID:
    """The (single) log directory of a broker, or the metadata directory of a controller."""
    return _id(f"directory/{node_id}")


@dataclass
class _Broker:
    epoch: int
    incarnation: int = 0
    fenced: bool = True
    shutting_down: bool = False

    @property
    def active(self) -> bool:
        return not self.fenced and not self.shutting_down


@dataclass
class _Topic:
    name: str
    id: uuid.UUID
    min_isr: int
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)

    @property
    def effective_min_isr(self) -> int:
        """Kafka's: min(min.insync.replicas, replication factor)."""
        return min(self.min_isr, len(self.partitions[0].replicas))


class _Cluster:
    """Just enough of Kafka's quorum controller to write the demo's records."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list, bool]] = []  # (leader epoch, records, control?)
        self.story: list[tuple[int, str]] = []
        self.next_offset = 0
        self.epoch = 0
        self.brokers: dict[int, _Broker] = {}
        self.topics: dict[str, _Topic] = {}
        self.controller_incarnations: dict[int, int] = {}

    # -- the log -----------------------------------------------------------------------

    def append(self, records: list, control: bool = False, story: str | None = None) -> int:
        """Append one batch (nothing if ``records`` is empty); returns its last offset."""
        if records:
            self.batches.append((self.epoch, records, control))
            self.next_offset += len(records)
        last = self.next_offset - 1
        if story:
            self.story.append((last, story))
        return last

    def mark(self, story: str) -> None:
        self.story.append((self.next_offset - 1, story))

    def idle(self, seconds: int) -> None:
        """Quiet time: the active controller's NoOpRecords (metadata.max.idle.interval.ms)."""
        for _ in range(seconds):
            self.append([m.NoOpRecordV0()])

    def allocate_producer_ids(self, broker_id: int, next_producer_id: int) -> None:
        """AllocateProducerIds: a block of 1000 producer ids for an idempotent producer's broker."""
        self.append([m.ProducerIdsRecordV0(broker_id=i32(broker_id), broker_epoch=i64(self.brokers[broker_id].epoch),
                                           next_producer_id=i64(next_producer_id))])

    # -- the quorum ----------------------------------------------------------------------

    def elect(self, leader: int, granting: tuple[int, ...], first: bool = False, story: str | None = None) -> None:
        """A new quorum epoch: the leader's first batch is its LeaderChangeMessage (with, on the
        very first election of a kraft.version 1 cluster, the bootstrap voter set)."""
        self.epoch += 1
        voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in CONTROLLERS)
        granted = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in granting)
        records = [control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(leader), voters=voters,
                                                      granting_voters=granted))]
        if first:
            feature = KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
            voter_set = VotersRecord(version=i16(0), voters=tuple(
                VotersVoter(voter_id=i32(v), voter_directory_id=directory_id(v),
                            endpoints=(VotersEndpoint(name="CONTROLLER", host=f"controller-{v}", port=u16(9093)),),
                            k_raft_version_feature=feature)
                for v in CONTROLLERS))
            records += [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))),
                        control_record(voter_set)]
        self.append(records, control=True, story=story)

    def register_controller(self, controller_id: int) -> None:
        incarnation = self.controller_incarnations.get(controller_id, -1) + 1
        self.controller_incarnations[controller_id] = incarnation
        self.append([m.RegisterControllerRecordV0(
            controller_id=i32(controller_id), incarnation_id=_id(f"controller/{controller_id}/{incarnation}"),
            zk_migration_ready=False,
            end_points=(m.RegisterControllerRecordV0ControllerEndpoint(
                name="CONTROLLER", host=f"controller-{controller_id}", port=u16(9093), security_protocol=i16(0)),),
            features=tuple(m.RegisterControllerRecordV0ControllerFeature(
                name=name, min_supported_version=i16(low), max_supported_version=i16(high))
                for name, low, high in SUPPORTED))])

    # -- brokers -------------------------------------------------------------------------

    def register_broker(self, broker_id: int, story: str | None = None) -> None:
        """RegisterBrokerRecord: a (re)started broker, fenced until it catches up. Its epoch is
        the offset of this record."""
        previous = self.brokers.get(broker_id)
        broker = _Broker(epoch=self.next_offset, incarnation=previous.incarnation + 1 if previous else 0)
        self.brokers[broker_id] = broker
        self.append([m.RegisterBrokerRecordV3(
            broker_id=i32(broker_id), is_migrating_zk_broker=False,
            incarnation_id=_id(f"broker/{broker_id}/{broker.incarnation}"), broker_epoch=i64(broker.epoch),
            end_points=(m.RegisterBrokerRecordV3BrokerEndpoint(
                name="PLAINTEXT", host=f"broker-{broker_id}", port=u16(9092), security_protocol=i16(0)),),
            features=tuple(m.RegisterBrokerRecordV3BrokerFeature(
                name=name, min_supported_version=i16(low), max_supported_version=i16(high))
                for name, low, high in SUPPORTED),
            rack=RACKS[broker_id], fenced=True, in_controlled_shutdown=False,
            log_dirs=(directory_id(broker_id),))], story=story)

    def _registration_change(self, broker_id: int, *, fenced: int = 0, shutdown: int = 0):
        """BrokerRegistrationChangeRecord at the version Kafka writes: 0 to (un)fence, 1 for
        the controlled shutdown flag."""
        epoch = i64(self.brokers[broker_id].epoch)
        if shutdown:
            return m.BrokerRegistrationChangeRecordV1(broker_id=i32(broker_id), broker_epoch=epoch,
                                                      in_controlled_shutdown=i8(shutdown))
        return m.BrokerRegistrationChangeRecordV0(broker_id=i32(broker_id), broker_epoch=epoch, fenced=i8(fenced))

    def fence(self, broker_id: int, story: str | None = None) -> None:
        """handleBrokerFenced: out of every ISR (leaderships move), then the fencing record."""
        records = self._leader_and_isr_updates(remove=broker_id, partitions=self._where(
            lambda p: broker_id in p.isr or broker_id in p.elr))
        records.append(self._registration_change(broker_id, fenced=1))
        self.brokers[broker_id].fenced = True
        self.append(records, story=story)

    def unfence(self, broker_id: int, story: str | None = None) -> None:
        """handleBrokerUnfenced: the unfencing record, then elections for leaderless partitions."""
        records = [self._registration_change(broker_id, fenced=-1)]
        self.brokers[broker_id].fenced = False
        records += self._leader_and_isr_updates(add=broker_id, partitions=self._where(lambda p: p.leader == NO_LEADER))
        self.append(records, story=story)

    def controlled_shutdown(self, broker_id: int, story: str | None = None) -> None:
        """handleBrokerInControlledShutdown: the flag, then out of every ISR, leaderships moved."""
        records = [self._registration_change(broker_id, shutdown=1)]
        self.brokers[broker_id].shutting_down = True
        records += self._leader_and_isr_updates(remove=broker_id,
                                                partitions=self._where(lambda p: broker_id in p.isr))
        self.append(records, story=story)

    def unregister(self, broker_id: int, story: str | None = None) -> None:
        records = self._leader_and_isr_updates(remove=broker_id, partitions=self._where(
            lambda p: broker_id in p.isr or broker_id in p.elr))
        records.append(m.UnregisterBrokerRecordV0(broker_id=i32(broker_id),
                                                  broker_epoch=i64(self.brokers.pop(broker_id).epoch)))
        self.append(records, story=story)

    def _acceptable(self, remove: int = NO_LEADER, add: int = NO_LEADER) -> Callable[[int], bool]:
        def acceptable(replica: int) -> bool:
            broker = self.brokers.get(replica)
            return replica != remove and (replica == add or (broker is not None and broker.active))
        return acceptable

    def _leader_and_isr_updates(self, *, remove: int = NO_LEADER, add: int = NO_LEADER,
                                partitions: Iterable[tuple[_Topic, int]]) -> list:
        records = []
        for topic, pid in partitions:
            part = topic.partitions[pid]
            records += self._change(topic, pid, isr=[r for r in part.isr if r != remove],
                                    acceptable=self._acceptable(remove, add))
        return records

    def catch_up(self, broker_id: int, story: str | None = None) -> None:
        """The leaders add a caught-up follower to their ISRs: one AlterPartition (one batch)
        per leader."""
        by_leader: dict[int, list[tuple[_Topic, int]]] = {}
        for topic, pid in self._where(lambda p: broker_id in p.replicas and broker_id not in p.isr
                                      and p.leader >= 0):
            by_leader.setdefault(topic.partitions[pid].leader, []).append((topic, pid))
        for leader in sorted(by_leader):
            records = []
            for topic, pid in by_leader[leader]:
                records += self._change(topic, pid, isr=[*topic.partitions[pid].isr, broker_id],
                                        acceptable=self._acceptable())
            self.append(records)
        if story:
            self.mark(story)

    def preferred_leaders(self, story: str | None = None) -> None:
        """The periodic preferred-replica election (auto.leader.rebalance.enable)."""
        records = []
        for topic, pid in self._where(lambda p: p.leader != p.replicas[0]):
            records += self._change(topic, pid, acceptable=self._acceptable(), preferred=True)
        self.append(records, story=story)

    # -- topics --------------------------------------------------------------------------

    def create_topic(self, name: str, story: str | None = None) -> None:
        assignments, configs = TOPICS[name]
        topic = _Topic(name, topic_id(name), int(configs.get("min.insync.replicas", DEFAULT_MIN_ISR)))
        records: list = [m.TopicRecordV0(name=name, topic_id=topic.id)]
        records += [m.ConfigRecordV0(resource_type=i8(ConfigResourceType.TOPIC.value), resource_name=name, name=key,
                                     value=value) for key, value in configs.items()]
        for pid, replicas in enumerate(assignments):
            record = m.PartitionRecordV2(
                partition_id=i32(pid), topic_id=topic.id, replicas=tuple(map(i32, replicas)),
                isr=tuple(map(i32, replicas)), removing_replicas=(), adding_replicas=(), leader=i32(replicas[0]),
                leader_epoch=i32(0), partition_epoch=i32(0),
                directories=tuple(directory_id(r) for r in replicas), eligible_leader_replicas=(),
                last_known_elr=())
            topic.partitions[pid] = PartitionRegistration.from_record(record)
            records.append(record)
        self.topics[name] = topic
        self.append(records, story=story)

    def delete_topic(self, name: str, story: str | None = None) -> None:
        self.append([m.RemoveTopicRecordV0(topic_id=self.topics.pop(name).id)], story=story)

    def reassign(self, targets: dict[tuple[str, int], list[int]], story: str | None = None) -> None:
        """AlterPartitionReassignments: replicas = target + removing, with adding/removing set."""
        records = []
        for (name, pid), target in targets.items():
            topic = self.topics[name]
            current = list(topic.partitions[pid].replicas)
            removing = [r for r in current if r not in target]
            adding = [r for r in target if r not in current]
            records += self._change(topic, pid, replicas=target + removing, removing=removing, adding=adding,
                                    acceptable=self._acceptable())
        self.append(records, story=story)

    def _where(self, predicate: Callable[[PartitionRegistration], bool]) -> list[tuple[_Topic, int]]:
        return [(topic, pid) for topic in self.topics.values() for pid, part in sorted(topic.partitions.items())
                if predicate(part)]

    # -- Kafka's PartitionChangeBuilder (ELR enabled, last known leader in LastKnownElr) ---

    def _change(self, topic: _Topic, pid: int, *, acceptable: Callable[[int], bool], isr: list[int] | None = None,
                replicas: list[int] | None = None, removing: list[int] | None = None,
                adding: list[int] | None = None, preferred: bool = False) -> list:
        """The PartitionChangeRecord Kafka's controller writes for this change ([] when it
        changes nothing); the partition's state follows it."""
        part = topic.partitions[pid]
        min_isr = topic.effective_min_isr
        t_isr = list(part.isr if isr is None else isr)
        t_replicas = list(part.replicas if replicas is None else replicas)
        t_removing = list(part.removing_replicas if removing is None else removing)
        t_adding = list(part.adding_replicas if adding is None else adding)
        t_elr = list(part.elr)
        change: dict = {}

        # completeReassignmentIfNeeded
        if t_removing or t_adding:
            new_isr = [r for r in t_isr if r not in t_removing]
            if new_isr and set(t_adding) <= set(new_isr):
                t_isr = new_isr
                t_replicas = [r for r in t_replicas if r not in t_removing]
                t_removing, t_adding = [], []

        # maybePopulateTargetElr: under min ISR, the ELR keeps its members and gains the ISR
        # members that just left (a HashSet of small ints in Kafka: ascending order)
        if len(t_isr) >= min_isr:
            t_elr = []
        else:
            t_elr = sorted(r for r in set(t_elr) | set(part.isr) if r not in t_isr)

        # tryElection
        def valid(replica: int) -> bool:
            return (replica in t_isr or (not t_isr and replica in t_elr)) and acceptable(replica)

        if preferred and valid(t_replicas[0]):
            new_leader = t_replicas[0]
        elif valid(part.leader):
            new_leader = part.leader
        else:
            new_leader = next((r for r in t_replicas if valid(r)), NO_LEADER)
            if new_leader == NO_LEADER and not t_elr and not t_isr and len(part.last_known_elr) == 1:
                raise AssertionError("the demo never needs an election of the last known leader")
        if new_leader != part.leader:
            if new_leader in t_elr:
                t_isr = [new_leader]
                t_elr = [r for r in t_elr if r != new_leader]
            change["leader"] = new_leader

        # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
        if "leader" not in change and not set(part.replicas) <= set(t_replicas):
            change["leader"] = part.leader

        # maybeUpdateRecordElr (the last known ELR is left to maybeUpdateLastKnownLeader)
        if t_elr != list(part.elr):
            change["eligible_leader_replicas"] = t_elr

        if t_isr != list(part.isr):
            change["isr"] = t_isr
        # (no leader epoch bump on an ISR shrink since 3.6: KAFKA-15021)

        # maybeUpdateLastKnownLeader
        leader_field = change.get("leader", NO_LEADER_CHANGE)
        if "isr" in change and not change["isr"] and part.last_known_elr != (part.leader,):
            change["last_known_elr"] = [part.leader]
        elif ((leader_field >= 0 or (part.leader != NO_LEADER and leader_field != NO_LEADER))
              and part.last_known_elr):
            change["last_known_elr"] = []

        # setAssignmentChanges
        if t_replicas != list(part.replicas):
            change["replicas"] = t_replicas
            change["directories"] = [directory_id(r) for r in t_replicas]
        if t_removing != list(part.removing_replicas):
            change["removing_replicas"] = t_removing
        if t_adding != list(part.adding_replicas):
            change["adding_replicas"] = t_adding

        if not change:
            return []
        record = m.PartitionChangeRecordV2(
            partition_id=i32(pid), topic_id=topic.id,
            leader=i32(change.get("leader", NO_LEADER_CHANGE)),
            **{key: tuple(map(i32, value)) if key != "directories" else tuple(value)
               for key, value in change.items() if key != "leader"})
        topic.partitions[pid] = part.merge(record)
        return [record]


def _history() -> _Cluster:
    c = _Cluster()
    c.elect(100, (100, 101), first=True,
            story="controller 100 leads quorum epoch 1; kraft.version 1 with voters 100, 101, 102")
    c.append([m.BeginTransactionRecordV0(name="Bootstrap records"),
              *(m.FeatureLevelRecordV0(name=name, feature_level=i16(level)) for name, level in FINALIZED),
              m.EndTransactionRecordV0()])
    for controller in CONTROLLERS:
        c.register_controller(controller)
    for broker in sorted(RACKS):
        c.register_broker(broker)
    for broker in sorted(RACKS):
        c.unfence(broker)
    c.mark("5 brokers registered and unfenced, on racks a, b, c")
    for name in TOPICS:
        c.create_topic(name)
    c.mark("topics orders (6 partitions), payments (3) and audit (2) created")
    for n, broker in enumerate((1, 2, 3)):
        c.allocate_producer_ids(broker, 1000 * (n + 1))
    c.idle(3)

    c.fence(3, story="broker 3 fenced (session lost): out of every ISR; orders-2 and payments-1 change leader")
    c.idle(2)
    c.unfence(3)
    c.catch_up(3, story="broker 3 back: unfenced and in sync again")
    c.preferred_leaders(story="preferred leaders restored (orders-2, payments-1 led by 3 again)")
    c.idle(3)

    c.elect(101, (101, 102), story="quorum leader change: controller 101 leads epoch 2")
    c.register_controller(100)  # controller 100 restarted: a new incarnation
    c.idle(3)

    c.fence(5, story="broker 5 fenced: payments-0 ISR [2, 4], at min ISR 2, no ELR")
    c.idle(1)
    c.fence(4, story="broker 4 fenced: payments-0 ISR [2] under min ISR; ELR [4]")
    c.idle(1)
    c.fence(2, story="broker 2 fenced: payments-0 leaderless, ISR empty, ELR [2, 4], last-known ELR [2]")
    c.idle(3)
    c.unfence(4, story="broker 4 back: elected payments-0 leader from the ELR (ISR [4], ELR [2])")
    c.catch_up(4)
    c.idle(1)
    c.unfence(5)
    c.catch_up(5, story="broker 5 in sync: payments-0 ISR [4, 5] at min ISR again, ELR cleared")
    c.idle(1)
    c.unfence(2)
    c.catch_up(2)
    c.idle(2)
    c.preferred_leaders(story="all brokers back, preferred leaders restored")
    c.idle(3)

    c.controlled_shutdown(1, story="broker 1 in controlled shutdown: out of every ISR, its leaderships moved")
    c.fence(1, story="broker 1 shut down: fenced")
    c.idle(2)
    c.register_broker(1, story="broker 1 restarted: registered again with a new epoch")
    c.unfence(1)
    c.catch_up(1)
    c.idle(2)
    c.preferred_leaders(story="broker 1 back in sync and leading its preferred partitions")
    c.allocate_producer_ids(1, 4000)
    c.idle(3)

    c.delete_topic("audit", story="topic audit deleted")
    c.idle(2)
    c.reassign(REASSIGNMENTS, story="reassignment off broker 5 started: payments-0 replicas [2, 4, 3, 5], "
                                    "adding [3], removing [5]")
    c.idle(2)
    for broker in sorted({r for target in REASSIGNMENTS.values() for r in target}):
        c.catch_up(broker)
    c.mark("reassignment completed: payments-0 replicas [2, 4, 3]; broker 5 holds no replica")
    c.idle(2)
    c.controlled_shutdown(5)
    c.fence(5)
    c.idle(2)
    c.unregister(5, story="broker 5 unregistered (decommissioned)")
    c.idle(2)
    return c


_CLUSTER = _history()
DEMO_BATCHES: list[tuple[int, list, bool]] = _CLUSTER.batches
DEMO_STORY: list[tuple[int, str]] = _CLUSTER.story
END_OFFSET = _CLUSTER.next_offset  # one past the last record


def write_dashboard_demo(directory: Path) -> Path:
    """Write the demo history as controller 101's log directory under ``directory`` (with its
    meta.properties and quorum-state); returns ``directory``."""
    directory = Path(directory)
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for step, (epoch, records, control) in enumerate(DEMO_BATCHES):
            log.append(records, epoch=epoch, timestamp_ms=START_MS + step * 1000, control=control)
        partition_dir = log.directory
    write_meta_properties(directory, MetaProperties(1, CLUSTER_ID, NODE_ID, directory_id(NODE_ID)), now=START)
    write_quorum_state(partition_dir / QUORUM_STATE_FILE, QuorumStateData(
        leader_id=NODE_ID, leader_epoch=DEMO_BATCHES[-1][0], voted_id=NODE_ID,
        voted_directory_id=directory_id(NODE_ID), data_version=1))
    return directory
