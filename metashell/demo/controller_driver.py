"""The demo histories' cluster: the engine's own QuorumController, driven by a script.

A demo history is not written record by record: a script says what the cluster's brokers,
admins and quorum do (a broker registers, heartbeats, goes silent, shuts down; an admin creates,
deletes, reassigns, elects; a new controller wins the quorum), ``ControllerDriver`` turns each
into the request Kafka's client would send (BrokerRegistration, BrokerHeartbeat, AlterPartition,
CreateTopics, ...), hands it to the active ``QuorumController`` and appends what the controller
returns, so every metadata record in a demo is one the controller wrote.

What the driver plays besides the controller, as the parts of a controller node around it do:

- the Raft layer: the quorum's control records (LeaderChangeMessage, and KRaftVersionRecord and
  VotersRecord for a kraft.version 1 bootstrap), written as the first batch of a leader's epoch;
  every batch commits at once (a healthy quorum), and every controller hears of commits and of
  leader changes, so the old leader renounces and the new one claims;
- the node's idle NoOpRecord (KIP-835) when nothing else is appended in a tick;
- the clock: one tick per batch, ``tick_ms`` apart from ``start_ms``, so the log is the same
  bytes on every run. Between batches, every running broker heartbeats (writing nothing while
  its state holds) and the active controller runs its periodic tasks (session expiry fences
  a broker that went silent).

A script error (a request the controller refuses, a broker in the wrong state) raises
``DemoScriptError``: a demo is generated, never half-written.
"""

from __future__ import annotations

import random
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator, Sequence

from engine.common.api_keys import ApiKeys
from engine.controller.commands import activation_hooks, all_commands, all_periodic, new_soft_state
from engine.controller.controller_config import ControllerConfig
from engine.controller.quorum_controller import ControllerOutput, QuorumController
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.raft.raft_io import LeaderAndEpoch
from engine.raft.raft_log import LogBatch
from engine.records import metadata_records as m
from engine.records.kio_codec import (
    ErrorCode, KRaftVersionFeature, KRaftVersionRecord, LeaderChangeMessage, LeaderChangeVoter, VotersEndpoint,
    VotersRecord, VotersVoter, i8, i16, i32, i64, protocol_module, u16,
)
from engine.records.metadata_record_serde import control_record
from engine.storage.metadata_log import MetadataLog

_REG = protocol_module("broker_registration", 4, "request")
_HB = protocol_module("broker_heartbeat", 2, "request")
_CREG = protocol_module("controller_registration", 0, "request")
_AP = protocol_module("alter_partition", 3, "request")
_CT = protocol_module("create_topics", 7, "request")
_DT = protocol_module("delete_topics", 6, "request")
_RA = protocol_module("alter_partition_reassignments", 0, "request")
_EL = protocol_module("elect_leaders", 2, "request")
_UB = protocol_module("unregister_broker", 0, "request")
_PID = protocol_module("allocate_producer_ids", 0, "request")
_TIMEOUT = timedelta(seconds=30)
_PREFERRED = 0  # ElectLeaders' election type
# answers that are not refusals: AlterPartition's when the change it asked for moved the
# leadership (a completed reassignment), ElectLeaders' for partitions already led by their choice
_NOT_REFUSALS = {ErrorCode.none, ErrorCode.new_leader_elected, ErrorCode.election_not_needed}


class DemoScriptError(Exception):
    """The script asked for something the cluster cannot do: one line saying what."""


Batch = tuple[int, list, bool]  # (leader epoch, records, control?)


@dataclass
class DemoBroker:
    """One broker process as the script runs it. ``state``: down (no process), running
    (heartbeats every tick), silent (alive but its heartbeats do not arrive), stopping (asked
    for a controlled shutdown)."""

    id: int
    rack: str | None
    log_dir: uuid.UUID
    incarnation: uuid.UUID | None = None
    epoch: int = -1
    restarts: int = -1
    state: str = "down"


class ControllerDriver:
    def __init__(self, *, cluster_id: str, controllers: Sequence[int], bootstrap_records: Sequence[Any],
                 features: Sequence[tuple[str, int, int]], start_ms: int, tick_ms: int = 1000,
                 id_namespace: uuid.UUID = uuid.NAMESPACE_URL, broker_session_timeout_ms: int | None = None):
        self.cluster_id = cluster_id
        self.features = tuple(features)  # (name, min, max) every node supports
        self.start_ms = start_ms
        self.tick_ms = tick_ms
        self.id_namespace = id_namespace  # incarnation ids are uuid5 of names in it
        self.batches: list[Batch] = []
        self.story: list[tuple[int, str]] = []
        self.image = MetadataImage()  # committed: everything appended commits at once
        self.log_end_offset = 0
        self.epoch = 0
        self.leader: int | None = None
        self.brokers: dict[int, DemoBroker] = {}
        self.controller_restarts: dict[int, int] = {}
        self.config = ControllerConfig(cluster_id=cluster_id)  # Kafka's defaults, but for:
        if broker_session_timeout_ms is not None:
            self.config = replace(self.config, broker_session_timeout_ms=broker_session_timeout_ms)
        self.controllers = {c: self._new_controller(c, bootstrap_records) for c in controllers}
        self.produced: list[Any] = []  # every metadata record a controller returned, in order
        self._open: list[Any] | None = None  # records of an open batch (``one_batch``)
        self._awaited: list[tuple[int, Any]] = []  # requests of the open batch, answered after it
        self._answers: dict[Any, Any] = {}
        self._token = 0

    def _new_controller(self, controller_id: int, bootstrap_records: Sequence[Any]) -> QuorumController:
        config = replace(self.config, node_id=controller_id)
        # seeded: the topic ids the controller draws are the same on every run
        soft = new_soft_state(config, random.Random(controller_id))
        return QuorumController(config, lambda: self.image, bootstrap_records, all_commands(), all_periodic(),
                                soft, activation_hooks())

    # -- the log and the clock ------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """The offset the next record written takes (an open batch's records count)."""
        return self.log_end_offset + len(self._open or ())

    @property
    def now_ms(self) -> int:
        """The time of the next batch."""
        return self.start_ms + self.tick_ms * len(self.batches)

    def write_log(self, directory: Path) -> Path:
        """The history as a node's metadata log under ``directory``, written by the engine's own
        log writer, each batch at its tick; returns the partition directory."""
        with MetadataLog.create(directory, fsync_policy="never") as log:
            for n, (epoch, records, control) in enumerate(self.batches):
                log.append(records, epoch=epoch, timestamp_ms=self.start_ms + n * self.tick_ms, control=control)
            return log.directory

    def mark(self, story: str) -> None:
        """A line of the story at the last offset written."""
        self.story.append((self.next_offset - 1, story))

    def _append(self, records: Sequence[Any], control: bool = False) -> None:
        """One batch, committed at once: the image follows it and every controller hears of it."""
        base = self.log_end_offset
        timestamp = self.now_ms
        self.batches.append((self.epoch, list(records), control))
        self.log_end_offset += len(records)
        delta = MetadataDelta(self.image)
        for i, record in enumerate(records):
            delta.replay(record, base + i, self.epoch, timestamp)
        self.image = delta.apply()
        committed = [LogBatch(base, base + len(records) - 1, self.epoch, timestamp, control, tuple(records), 0)]
        for controller in self.controllers.values():
            controller.handle_commit(committed)

    def _take(self, out: ControllerOutput) -> None:
        """What the active controller asked for: its appends (one batch each, or into the open
        batch), its answers kept by token."""
        for append in out.appends:
            self.produced.extend(append.records)
            if self._open is not None:
                self._open.extend(append.records)
            else:
                self._append(append.records)
                self._between_batches()
        self._answers.update(out.responses)

    def _between_batches(self) -> None:
        """The tick after a batch: running brokers heartbeat (to an active controller: a new
        leader claims in the poll), then the controller polls: its periodic tasks may write
        (session expiry), and its answers to committed writes come out."""
        if self.leader is not None and self.controllers[self.leader].is_active:
            for broker in sorted(self.brokers.values(), key=lambda b: b.id):
                registration = self.image.cluster.brokers.get(broker.id)
                if (broker.state == "running" and registration is not None and not registration.fenced
                        and not registration.in_controlled_shutdown):
                    before = len(self.batches)
                    self._heartbeat(broker)
                    if len(self.batches) != before:
                        raise DemoScriptError(f"broker {broker.id}'s routine heartbeat changed its state")
        self._poll()

    def _poll(self) -> None:
        if self.leader is not None:
            self._take(self.controllers[self.leader].poll(self.now_ms, self.next_offset))

    @contextmanager
    def one_batch(self) -> Iterator[None]:
        """The controller's appends inside go into one batch, as Raft's accumulator gathers
        appends that arrive within its linger time."""
        self._open, self._awaited = [], []
        try:
            yield
        finally:
            records, self._open = self._open, None
        if records:
            self._append(records)
            self._between_batches()
        for token, request in self._awaited:  # answered once the batch committed
            self._check(token, request)

    def idle(self, seconds: int = 1) -> None:
        """Quiet ticks: the active controller's node writes a NoOpRecord for each one in which
        nothing else was written (metadata.max.idle.interval.ms)."""
        for _ in range(seconds):
            before = len(self.batches)
            self._poll()
            if len(self.batches) == before:
                self._append([m.NoOpRecordV0()])
                self._between_batches()

    # -- the quorum -------------------------------------------------------------------------

    def elect(self, leader: int, granting: Sequence[int], voters: Sequence[int], *,
              bootstrap_voters: bool = False, story: str | None = None) -> None:
        """``leader`` wins a new epoch with the votes of ``granting``: its LeaderChangeMessage
        (with, on a kraft.version 1 cluster's first election, KRaftVersionRecord and the bootstrap
        VotersRecord) is the epoch's first batch. Once it commits, the old active controller has
        renounced and the new one claims, bootstrapping an empty log."""
        if self._open is not None:
            raise DemoScriptError("a leader change inside one batch")
        self.epoch += 1
        records = [control_record(LeaderChangeMessage(
            version=i16(0), leader_id=i32(leader), voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in voters),
            granting_voters=tuple(LeaderChangeVoter(voter_id=i32(v)) for v in granting)))]
        if bootstrap_voters:
            records += [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))),
                        control_record(VotersRecord(version=i16(0), voters=tuple(self._voter(v) for v in voters)))]
        for controller in self.controllers.values():
            controller.handle_leader_change(LeaderAndEpoch(leader, self.epoch))
        self.leader = leader
        self._append(records, control=True)
        if story:
            self.mark(story)
        self._between_batches()
        if not self.controllers[leader].is_active:
            raise DemoScriptError(f"controller {leader} did not claim epoch {self.epoch}")

    def _voter(self, controller_id: int) -> VotersVoter:
        return VotersVoter(voter_id=i32(controller_id), voter_directory_id=self.directory_id(controller_id),
                           endpoints=(VotersEndpoint(name="CONTROLLER", host=f"controller-{controller_id}",
                                                     port=u16(9093)),),
                           k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(0),
                                                                      max_supported_version=i16(1)))

    def register_controller(self, controller_id: int) -> None:
        """ControllerRegistration from a (re)started controller: a new incarnation each time."""
        restarts = self.controller_restarts.get(controller_id, -1) + 1
        self.controller_restarts[controller_id] = restarts
        self._submit(ApiKeys.CONTROLLER_REGISTRATION, _CREG.ControllerRegistrationRequest(
            controller_id=i32(controller_id), incarnation_id=self._uuid(f"controller/{controller_id}/{restarts}"),
            zk_migration_ready=False,
            listeners=(_CREG.Listener(name="CONTROLLER", host=f"controller-{controller_id}", port=u16(9093),
                                      security_protocol=i16(0)),),
            features=tuple(_CREG.Feature(name=name, min_supported_version=i16(low), max_supported_version=i16(high))
                           for name, low, high in self.features)))

    # -- brokers ---------------------------------------------------------------------------

    def directory_id(self, node_id: int) -> uuid.UUID:
        return node_directory_id(self.id_namespace, node_id)

    def _uuid(self, name: str) -> uuid.UUID:
        return uuid.uuid5(self.id_namespace, name)

    def add_broker(self, broker_id: int, rack: str | None) -> None:
        self.brokers[broker_id] = DemoBroker(broker_id, rack, self.directory_id(broker_id))

    def _broker(self, broker_id: int) -> DemoBroker:
        if broker_id not in self.brokers:
            raise DemoScriptError(f"no broker {broker_id} in the script")
        return self.brokers[broker_id]

    def register_broker(self, broker_id: int, story: str | None = None) -> None:
        """A broker (re)starts: BrokerRegistration with a new incarnation, naming the epoch a
        clean shutdown left (KIP-966). It stays fenced until a heartbeat shows it caught up.
        While its previous incarnation's session lives, the controller refuses it
        (DUPLICATE_BROKER_REGISTRATION) and it tries again each tick, as Kafka's broker does."""
        broker = self._broker(broker_id)
        if broker.state != "down":
            raise DemoScriptError(f"broker {broker_id} is already running")
        broker.restarts += 1
        broker.incarnation = self._uuid(f"broker/{broker_id}/{broker.restarts}")
        request = _REG.BrokerRegistrationRequest(
            broker_id=i32(broker_id), cluster_id=self.cluster_id, incarnation_id=broker.incarnation,
            listeners=(_REG.Listener(name="PLAINTEXT", host=f"broker-{broker_id}", port=u16(9092),
                                     security_protocol=i16(0)),),
            features=tuple(_REG.Feature(name=name, min_supported_version=i16(low), max_supported_version=i16(high))
                           for name, low, high in self.features),
            rack=broker.rack, is_migrating_zk_broker=False, log_dirs=(broker.log_dir,),
            previous_broker_epoch=i64(broker.epoch))
        for _ in range(self._session_ticks()):
            answer = self._submit(ApiKeys.BROKER_REGISTRATION, request, story,
                                  refusable=frozenset({ErrorCode.duplicate_broker_registration}))
            if answer is None or answer.error_code == ErrorCode.none:
                # the epoch the controller gave (its image has it before the answer, in one batch)
                broker.epoch, broker.state = self.active.image.cluster.brokers[broker_id].epoch, "running"
                return
            self.idle()
        raise DemoScriptError(f"broker {broker_id}'s registration was refused for good")

    def _session_ticks(self) -> int:
        """Enough ticks for any session to expire."""
        return 2 + self.config.broker_session_timeout_ms // self.tick_ms

    def heartbeat(self, broker_id: int, story: str | None = None) -> None:
        """A heartbeat that changes something: a fenced broker that has caught up is unfenced
        (and may lead leaderless partitions); a silent one is heard again."""
        broker = self._broker(broker_id)
        if broker.state not in ("running", "silent"):
            raise DemoScriptError(f"broker {broker_id} is {broker.state}: it sends no heartbeat")
        broker.state = "running"
        self._heartbeat(broker, story=story)

    def _heartbeat(self, broker: DemoBroker, want_shut_down: bool = False, story: str | None = None) -> Any:
        # a broker reports the last offset it applied: everything committed
        return self._submit(ApiKeys.BROKER_HEARTBEAT, _HB.BrokerHeartbeatRequest(
            broker_id=i32(broker.id), broker_epoch=i64(broker.epoch),
            current_metadata_offset=i64(self.log_end_offset - 1), want_fence=False, want_shut_down=want_shut_down,
            offline_log_dirs=(), cordoned_log_dirs=None), story)

    def go_silent(self, broker_id: int) -> None:
        """The broker's heartbeats stop arriving (a network partition, a long pause): the
        controller fences it once its session expires (broker.session.timeout.ms)."""
        self._broker(broker_id).state = "silent"

    def wait_until_fenced(self, broker_id: int, story: str | None = None) -> None:
        """Quiet ticks until the controller's session expiry has fenced the silent broker."""
        for _ in range(self._session_ticks()):
            registration = self.image.cluster.brokers.get(broker_id)
            if registration is not None and registration.fenced:
                if story:
                    self.mark(story)
                return
            self.idle()
        raise DemoScriptError(f"broker {broker_id}'s session never expired")

    def controlled_shutdown(self, broker_id: int, story: str | None = None, stopped: str | None = None) -> None:
        """The broker asks to shut down (WantShutDown) and heartbeats until told to stop: while
        it leads partitions it is in controlled shutdown (its leaderships move, it leaves every
        ISR; the ``story`` line), then, once the others have those moves, it is fenced and stops
        (the ``stopped`` line)."""
        broker = self._broker(broker_id)
        if broker.state != "running":
            raise DemoScriptError(f"broker {broker_id} is {broker.state}: it cannot shut down")
        broker.state = "stopping"
        for beat in range(3):
            answer = self._heartbeat(broker, want_shut_down=True)
            if answer.should_shut_down:
                broker.state = "down"
                if stopped:
                    self.mark(stopped)
                return
            if beat == 0 and story:
                self.mark(story)
        raise DemoScriptError(f"broker {broker_id} was never let go")

    def catch_up(self, broker_id: int, story: str | None = None) -> None:
        """The broker's replicas caught up: each leader adds it to its ISRs (one AlterPartition
        per leader, in leader order)."""
        image = self.image
        by_leader: dict[int, list[tuple[Any, int]]] = {}
        for topic in image.topics.by_id.values():
            for pid, p in sorted(topic.partitions.items()):
                if broker_id in p.replicas and broker_id not in p.isr and p.leader >= 0:
                    by_leader.setdefault(p.leader, []).append((topic, pid))
        for leader in sorted(by_leader):
            topics: dict[uuid.UUID, list] = {}
            for topic, pid in by_leader[leader]:
                p = topic.partitions[pid]
                isr = (*p.isr, broker_id)
                topics.setdefault(topic.id, []).append(_AP.PartitionData(
                    partition_index=i32(pid), leader_epoch=i32(p.leader_epoch), leader_recovery_state=i8(0),
                    partition_epoch=i32(p.partition_epoch),
                    new_isr_with_epochs=tuple(_AP.BrokerState(broker_id=i32(r),
                                                              broker_epoch=i64(image.cluster.brokers[r].epoch))
                                              for r in isr)))
            self._submit(ApiKeys.ALTER_PARTITION, _AP.AlterPartitionRequest(
                broker_id=i32(leader), broker_epoch=i64(image.cluster.brokers[leader].epoch),
                topics=tuple(_AP.TopicData(topic_id=tid, partitions=tuple(parts)) for tid, parts in topics.items())))
        if story:
            self.mark(story)

    def allocate_producer_ids(self, broker_id: int) -> None:
        """A broker's idempotent producers need ids: a block of them."""
        self._submit(ApiKeys.ALLOCATE_PRODUCER_IDS, _PID.AllocateProducerIdsRequest(broker_id=i32(broker_id),
                                                          broker_epoch=i64(self._broker(broker_id).epoch)))

    # -- admin requests --------------------------------------------------------------------

    def create_topic(self, name: str, assignments: Sequence[Sequence[int]], configs: dict[str, str],
                     story: str | None = None) -> None:
        """CreateTopics with a manual assignment (the first replica leads)."""
        self._submit(ApiKeys.CREATE_TOPICS, _CT.CreateTopicsRequest(topics=(_CT.CreatableTopic(
            name=name, num_partitions=i32(-1), replication_factor=i16(-1),
            assignments=tuple(_CT.CreatableReplicaAssignment(partition_index=i32(pid),
                                                             broker_ids=tuple(map(i32, replicas)))
                              for pid, replicas in enumerate(assignments)),
            configs=tuple(_CT.CreatableTopicConfig(name=k, value=v) for k, v in configs.items())),),
            timeout=_TIMEOUT, validate_only=False), story)

    def delete_topic(self, name: str, story: str | None = None) -> None:
        self._submit(ApiKeys.DELETE_TOPICS, _DT.DeleteTopicsRequest(
            topics=(_DT.DeleteTopicState(name=name, topic_id=None),), timeout=_TIMEOUT), story)

    def reassign(self, targets: dict[tuple[str, int], Sequence[int]], story: str | None = None) -> None:
        """AlterPartitionReassignments to these replica lists (topic by topic, in the given order)."""
        by_topic: dict[str, list] = {}
        for (name, pid), replicas in targets.items():
            by_topic.setdefault(name, []).append(_RA.ReassignablePartition(partition_index=i32(pid),
                                                                           replicas=tuple(map(i32, replicas))))
        self._submit(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, _RA.AlterPartitionReassignmentsRequest(
            timeout=_TIMEOUT, topics=tuple(_RA.ReassignableTopic(name=name, partitions=tuple(parts))
                                           for name, parts in by_topic.items())), story)

    def elect_preferred_leaders(self, story: str | None = None) -> None:
        """ElectLeaders, preferred, for every partition (kafka-leader-election --all-topic-partitions)."""
        self._submit(ApiKeys.ELECT_LEADERS, _EL.ElectLeadersRequest(election_type=i8(_PREFERRED), topic_partitions=None,
                                                 timeout=_TIMEOUT), story)

    def unregister_broker(self, broker_id: int, story: str | None = None) -> None:
        """UnregisterBroker: a decommissioned broker leaves the cluster."""
        self._submit(ApiKeys.UNREGISTER_BROKER, _UB.UnregisterBrokerRequest(broker_id=i32(broker_id)), story)
        del self.brokers[broker_id]

    # -- requests --------------------------------------------------------------------------

    @property
    def active(self) -> QuorumController:
        if self.leader is None or not self.controllers[self.leader].is_active:
            raise DemoScriptError("no controller is active")
        return self.controllers[self.leader]

    def _submit(self, api_key: int, request: Any, story: str | None = None,
                refusable: frozenset[ErrorCode] = frozenset()) -> Any:
        """One request to the active controller; its answer once its records are committed
        (None inside ``one_batch``: checked when the batch is). A refusal raises, unless its
        code is ``refusable``; the story line is for a request that was not refused."""
        self._token += 1
        token = self._token
        self._take(self.active.submit(self.now_ms, self.next_offset, api_key, request, token))
        if self._open is not None:
            self._awaited.append((token, request))
            answer = None
        else:
            answer = self._check(token, request, refusable)
            if set(_error_codes(answer)) & refusable:
                return answer
        if story:
            self.mark(story)
        return answer

    def _check(self, token: int, request: Any, refusable: frozenset[ErrorCode] = frozenset()) -> Any:
        answer = self._answers.pop(token, None)
        if answer is None:
            raise DemoScriptError(f"{type(request).__name__} was not answered")
        refusals = sorted({ErrorCode(code).name for code in _error_codes(answer)
                           if code not in _NOT_REFUSALS | refusable})
        if refusals:
            raise DemoScriptError(f"{type(request).__name__} refused: {', '.join(refusals)}")
        return answer


def node_directory_id(namespace: uuid.UUID, node_id: int) -> uuid.UUID:
    """The (single) log directory of a broker, or the metadata directory of a controller."""
    return uuid.uuid5(namespace, f"directory/{node_id}")


def _error_codes(message: Any) -> Iterator[Any]:
    """Every error_code in a response, at any depth."""
    if isinstance(message, (tuple, list)):
        for item in message:
            yield from _error_codes(item)
    elif is_dataclass(message):
        for f in fields(message):
            value = getattr(message, f.name)
            if f.name == "error_code":
                yield value
            elif isinstance(value, (tuple, list)) or is_dataclass(value):
                yield from _error_codes(value)
