"""KIP-966's unclean recovery: a leaderless partition gets the replica with the most data.

Kafka's unclean leader election takes the first live replica of the assignment (not a
random one), so it may keep the one with the shortest log and truncate everything else.
KIP-966 describes an Unclean Recovery Manager that Kafka never built: the controller asks the
live replicas for their log end and elects the one with the most data. This module is that manager's pure part (no sockets, no clock:
time is ``ctx.now_ms``); ``engine.server.unclean_recovery_queries`` asks the brokers.

When a partition needs recovery
    leader -1, no live (acceptable) member in its ISR, and no live member in its ELR (empty
    or every member fenced: "unusable"), and at least one live replica. The topic's strategy:

    - ``Proactive``: recover at once.
    - ``Balanced``: recover only once every replica that was last known to hold the committed
      data (last-known ELR, ELR, ISR) is live; until then wait, as the KIP says.
    - ``Manual``: never; an operator elects (ElectLeaders).

    The strategy is the dynamic ``unclean.recovery.strategy`` (topic, this node, cluster
    default), else the controller's static ``unclean.recovery.strategy``, else KIP-966's
    conversion of the topic's effective ``unclean.leader.election.enable``: true -> Proactive,
    false -> Balanced. Nothing happens unless ``unclean.recovery.manager.enabled`` is true.

The round
    Each live replica is asked (a ``LogQuery``) for its log end offset and the epoch of its
    last record (on Kafka 4.x brokers, the epoch of its newest record by timestamp: see the
    edge), fenced by its broker epoch and by the partition's current leader epoch. An
    answer (``LogInfo``) is rejected when the broker's epoch changed (it restarted after
    answering) or the replica saw another partition leader epoch (stale metadata); a rejected
    or unanswered replica is asked again after ``REQUERY_INTERVAL_MS``. A replica that comes
    back during the round is asked too.

The decision
    - every replica of the partition answered: elect now (no one else can know more);
    - ``Proactive``: else once ``PROACTIVE_WINDOW_MS`` (5 s, fixed by the KIP, capped by the
      timeout) has passed since the round began, among those that answered; if none had,
      the first answer after that decides;
    - ``Balanced``: else once ``unclean.recovery.timeout.ms`` has passed, among those that
      answered, provided every last-known-ELR member answered (else keep waiting for them).

    The winner has the highest (last epoch, log end offset); a tie goes to the replica first in
    the assignment. It is elected with ISR [winner], ELR cleared and leader recovery state
    RECOVERING (the builder's unclean election restricted to it), so its followers truncate
    to it. Nothing is written to the log before the election: a new active controller starts
    a new round, as the KIP says.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator

from engine.controller.controller_result import ControllerContext, ControllerResult
from engine.controller.partition_change import (
    Election, leader_acceptor, partition_change, topic_config)
from engine.image.topic_index import topic_index
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.image.partition_registration import NO_LEADER, PartitionRegistration

PROACTIVE, BALANCED, MANUAL = "Proactive", "Balanced", "Manual"
PROACTIVE_WINDOW_MS = 5000  # KIP-966: Proactive waits a fixed 5 s for answers
REQUERY_INTERVAL_MS = 2000  # an unanswered or rejected question is asked again after this
SCAN_INTERVAL_MS = 1000  # how often the image is scanned for leaderless partitions

PartitionKey = tuple[uuid.UUID, int]


@dataclass(frozen=True, slots=True)
class LogQuery:
    """Ask ``broker_id`` (at ``broker_epoch``) for its log end of the partition; the partition's
    leader epoch goes along so the broker refuses when its metadata differs."""

    topic_id: uuid.UUID
    topic_name: str
    partition_id: int
    broker_id: int
    broker_epoch: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class LogInfo:
    """A replica's answer: its log end offset and the leader epoch of its last record, with the
    broker epoch it was asked at and the partition leader epoch its metadata holds."""

    topic_id: uuid.UUID
    partition_id: int
    broker_id: int
    broker_epoch: int
    leader_epoch: int
    last_epoch: int
    log_end_offset: int


@dataclass
class RecoveryTask:
    topic_id: uuid.UUID
    partition_id: int
    strategy: str
    partition_epoch: int  # the round is for this state of the partition; any change ends it
    started_ms: int
    asked_ms: dict[int, tuple[int, int]] = field(default_factory=dict)  # broker -> (broker epoch, when)
    answers: dict[int, LogInfo] = field(default_factory=dict)


@dataclass
class UncleanRecoveryState:
    """The active controller's soft state of the rounds (``ctx.soft.unclean_recovery``)."""

    tasks: dict[PartitionKey, RecoveryTask] = field(default_factory=dict)
    inbox: list[LogInfo] = field(default_factory=list)
    outbox: list[LogQuery] = field(default_factory=list)
    next_scan_ms: int = 0
    elected: int = 0  # recoveries finished since activation (KIP's unclean_recovery_finished_count)

    def add_answers(self, answers: list[LogInfo]) -> None:
        """The edge hands in answers; the next poll decides with them."""
        self.inbox.extend(answers)

    def take_queries(self) -> list[LogQuery]:
        """The questions to send now (the edge sends them and forgets)."""
        queries, self.outbox = self.outbox, []
        return queries

    def reset(self) -> None:
        self.tasks.clear()
        self.inbox.clear()
        self.outbox.clear()
        self.next_scan_ms = 0


# -- which partitions need recovery -----------------------------------------------------------

def recovery_strategy(ctx: ControllerContext, topic_name: str) -> str:
    """The topic's strategy (see the module docstring for the order)."""
    value = topic_config(ctx, topic_name, "unclean.recovery.strategy")
    named = {s.lower(): s for s in (PROACTIVE, BALANCED, MANUAL)}.get((value or "").strip().lower())
    if named:
        return named
    if ctx.config.unclean_recovery_strategy:
        return ctx.config.unclean_recovery_strategy
    # KIP-966's conversion of the intent-based setting; read here, not through partition_change's
    # unclean_election_enabled, which stops meaning "elect the first live replica" once recovery replaces it
    value = topic_config(ctx, topic_name, "unclean.leader.election.enable")
    unclean = ctx.config.unclean_leader_election_enable if value is None else value.strip().lower() == "true"
    return PROACTIVE if unclean else BALANCED


def needs_recovery(image: MetadataImage, partition: PartitionRegistration, strategy: str) -> bool:
    """Leaderless, no live ISR or ELR member, someone live to ask, and the strategy allows it."""
    if partition.leader != NO_LEADER or strategy == MANUAL:
        return False
    acceptable = leader_acceptor(image, partition)
    if any(acceptable(r) for r in (*partition.isr, *partition.elr)):
        return False  # Kafka's own election can (and will) elect this one
    if not any(acceptable(r) for r in partition.replicas):
        return False
    if strategy == BALANCED:
        return all(acceptable(r) for r in _last_holders(partition))
    return True


def _last_holders(partition: PartitionRegistration) -> tuple[int, ...]:
    """The replicas last known to hold the committed data, which Balanced waits for."""
    return tuple(dict.fromkeys((*partition.last_known_elr, *partition.elr, *partition.isr)))


def leaderless_partitions(ctx: ControllerContext) -> Iterator[tuple[TopicImage, int, str]]:
    for topic in ctx.image.topics.by_id.values():
        leaderless = topic_index(topic).leaderless  # most topics have none: no partition visited
        strategy = recovery_strategy(ctx, topic.name) if leaderless else None
        for pid in leaderless:
            if needs_recovery(ctx.image, topic.partitions[pid], strategy):
                yield topic, pid, strategy


# -- the decision -----------------------------------------------------------------------------

def valid_answer(image: MetadataImage, partition: PartitionRegistration, info: LogInfo) -> bool:
    """KIP-966's checks: the broker still at the epoch it answered at, the replica's metadata at
    the partition's leader epoch, and the broker still able to lead."""
    broker = image.cluster.brokers.get(info.broker_id)
    return (broker is not None and broker.epoch == info.broker_epoch and info.leader_epoch == partition.leader_epoch
            and info.broker_id in partition.replicas and leader_acceptor(image, partition)(info.broker_id))


def choose_leader(partition: PartitionRegistration, answers: dict[int, LogInfo]) -> int:
    """The replica with the most data: highest (last epoch, log end offset); ties to the
    replica first in the assignment."""
    order = {r: i for i, r in enumerate(partition.replicas)}
    return max(answers.values(), key=lambda a: (a.last_epoch, a.log_end_offset, -order.get(a.broker_id, 0))).broker_id


def ready_to_elect(task: RecoveryTask, partition: PartitionRegistration, answers: dict[int, LogInfo],
                   now_ms: int, timeout_ms: int) -> bool:
    if not answers:
        return False
    if set(partition.replicas) <= set(answers):
        return True
    waited_ms = now_ms - task.started_ms
    if task.strategy == PROACTIVE:
        return waited_ms >= min(PROACTIVE_WINDOW_MS, timeout_ms)
    return waited_ms >= timeout_ms and set(_last_holders(partition)) <= set(answers)


def election_record(ctx: ControllerContext, topic: TopicImage, partition_id: int, leader: int) -> Any | None:
    """The PartitionChangeRecord electing ``leader`` uncleanly: ISR [leader], RECOVERING."""
    partition = topic.partitions[partition_id]
    base = leader_acceptor(ctx.image, partition)
    return partition_change(ctx, topic, partition_id, acceptable=lambda r: r == leader and base(r),
                            election=Election.UNCLEAN)


# -- the periodic task ------------------------------------------------------------------------

def recover(ctx: ControllerContext) -> ControllerResult | None:
    """Run by the active controller on every poll: take answers in, start and end rounds, ask
    whoever must be asked (into the outbox), and elect where a round is decided."""
    state: UncleanRecoveryState | None = getattr(ctx.soft, "unclean_recovery", None)
    if state is None:
        return None
    if not ctx.config.unclean_recovery_manager_enabled:
        if state.tasks or state.inbox:
            state.reset()
        return None
    _take_answers(ctx, state)
    if ctx.now_ms >= state.next_scan_ms:
        _scan(ctx, state)
        state.next_scan_ms = ctx.now_ms + SCAN_INTERVAL_MS
    records = []
    for key, task in list(state.tasks.items()):
        topic = ctx.image.topics.by_id.get(task.topic_id)
        partition = None if topic is None else topic.partitions.get(task.partition_id)
        if partition is None or partition.partition_epoch != task.partition_epoch:
            del state.tasks[key]  # the partition changed: the next scan starts a new round if still needed
            continue
        answers = {b: a for b, a in task.answers.items() if valid_answer(ctx.image, partition, a)}
        if ready_to_elect(task, partition, answers, ctx.now_ms, ctx.config.unclean_recovery_timeout_ms):
            record = election_record(ctx, topic, task.partition_id, choose_leader(partition, answers))
            del state.tasks[key]
            if record is not None:
                records.append(record)
                state.elected += 1
            continue
        state.outbox.extend(_questions(ctx, topic, partition, task))
    return ControllerResult(records, None) if records else None


def _take_answers(ctx: ControllerContext, state: UncleanRecoveryState) -> None:
    for info in state.inbox:
        task = state.tasks.get((info.topic_id, info.partition_id))
        topic = ctx.image.topics.by_id.get(info.topic_id)
        partition = None if topic is None else topic.partitions.get(info.partition_id)
        if task is None or partition is None:
            continue
        if valid_answer(ctx.image, partition, info):
            task.answers[info.broker_id] = info
        else:
            task.asked_ms.pop(info.broker_id, None)  # ask again (KIP: a rejected answer starts a new query)
    state.inbox.clear()


def _scan(ctx: ControllerContext, state: UncleanRecoveryState) -> None:
    """Start a round for each partition that needs one; end rounds whose partition changed."""
    wanted: dict[PartitionKey, tuple[TopicImage, int, str]] = {
        (topic.id, pid): (topic, pid, strategy) for topic, pid, strategy in leaderless_partitions(ctx)}
    for key in list(state.tasks):
        task = state.tasks[key]
        topic = ctx.image.topics.by_id.get(task.topic_id)
        partition = None if topic is None else topic.partitions.get(task.partition_id)
        if key not in wanted or partition is None or partition.partition_epoch != task.partition_epoch:
            del state.tasks[key]
    for key, (topic, pid, strategy) in wanted.items():
        if key not in state.tasks:
            state.tasks[key] = RecoveryTask(topic.id, pid, strategy, topic.partitions[pid].partition_epoch,
                                            ctx.now_ms)


def _questions(ctx: ControllerContext, topic: TopicImage, partition: PartitionRegistration,
               task: RecoveryTask) -> list[LogQuery]:
    """Every live replica without a valid answer, not asked at its epoch in the last interval."""
    acceptable = leader_acceptor(ctx.image, partition)
    out = []
    for broker_id in partition.replicas:
        if broker_id in task.answers or not acceptable(broker_id):
            continue
        epoch = ctx.image.cluster.brokers[broker_id].epoch
        asked = task.asked_ms.get(broker_id)
        if asked is not None and asked[0] == epoch and ctx.now_ms - asked[1] < REQUERY_INTERVAL_MS:
            continue
        task.asked_ms[broker_id] = (epoch, ctx.now_ms)
        out.append(LogQuery(topic.id, topic.name, task.partition_id, broker_id, epoch, partition.leader_epoch))
    return out


# -- the manager's hooks (engine.controller.commands) -----------------------------------------

COMMANDS: list = []
PERIODIC = [recover]


def new_soft_state(config: Any) -> Any:
    from types import SimpleNamespace
    return SimpleNamespace(unclean_recovery=UncleanRecoveryState())


def on_activation(soft: Any, image: MetadataImage, now_ms: int) -> None:
    """A new active controller starts every round afresh (the KIP keeps nothing in the log)."""
    state = getattr(soft, "unclean_recovery", None)
    if state is not None:
        state.reset()


__all__ = ["BALANCED", "COMMANDS", "LogInfo", "LogQuery", "MANUAL", "PERIODIC", "PROACTIVE", "PROACTIVE_WINDOW_MS",
           "REQUERY_INTERVAL_MS", "RecoveryTask", "UncleanRecoveryState", "choose_leader", "election_record",
           "needs_recovery", "new_soft_state", "on_activation", "recover", "recovery_strategy", "valid_answer"]
