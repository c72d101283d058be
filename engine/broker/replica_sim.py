"""The simulated broker's replicas, as Kafka's ReplicaManager, Partition and AlterPartitionManager
run them, without message data (every log is empty: a follower that fetches is caught up).

Pure and deterministic: no sockets, no threads, no clock reads. Time comes in as ``now_ms``, the
fetch failure model draws from an injected ``random.Random``. The node edge sends what ``poll``
returns: ``(leader broker id, FetchRequest)`` to that broker's listener, ``(CONTROLLER,
AlterPartitionRequest)`` to the active controller; it answers with ``handle_fetch_response`` /
``handle_alter_partition_response`` for exactly the request object it was given (None: failed),
and passes a follower's Fetch that reaches this broker to ``handle_fetch``.

Kafka's rules it follows (kafka.cluster.Partition, kafka.server.AlterPartitionManager, 4.3.1):

- From the image: a partition with this broker among its replicas is led here when the image
  names it leader, and followed (fetched from its leader) when the leader is a registered,
  unfenced broker. A partition whose directory for this broker is a failed log dir is offline
  here: neither led nor fetched. So is one in a directory this broker does not have while some
  dir failed (Kafka skips creating a log that may sit on the offline disk); UNASSIGNED is fine.
- A leader applies a changed partition from the image unless the image's partition epoch is
  older than the one an AlterPartition answer gave it; applying it drops any pending ISR change.
  A new leader epoch restarts the followers' state: ISR members caught up now, others never.
- Every replica.lag.time.max.ms / 2 (Kafka's isr-expiration task) the leader proposes an ISR
  without the followers not caught up for replica.lag.time.max.ms. One deliberate difference:
  Kafka also counts a follower whose log end offset equals the leader's as caught up, which on
  an idle partition would keep a stopped follower in the ISR for ever; this simulation stands
  for a partition under steady traffic, where only fetching keeps a follower caught up.
- A Fetch from a follower outside the ISR proposes it back (its log, like every log here, is
  at the high watermark), if the broker is registered, unfenced, not in controlled shutdown,
  and the broker epoch of its Fetch is -1 or the image's (KIP-841).
- A proposal carries each member's broker epoch: ours, a follower's from its last Fetch, -1
  when unknown (Kafka's addBrokerEpochToIsr), with the leader and partition epochs known here.
  A partition has one pending change at most; while its AlterPartition is unanswered a new
  proposal is refused (OPERATION_NOT_ATTEMPTED) and the partition stays as committed.
- AlterPartition v3 batches every unanswered proposal, one request in flight per broker. A
  failed request or a top-level error is sent again after 50 ms. Per partition: success commits
  the answer's ISR and partition epoch (unless its leader epoch is not ours or its partition
  epoch older); OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA drop the pending change;
  INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
  INVALID_REQUEST and NEW_LEADER_ELECTED keep it pending until the image moves on (never sent
  again); any other error sends the same proposal again (after 50 ms here, where Kafka resends
  at once: no hot loop between two in-process cores).
- ELR is the controller's part: Kafka's broker-side Partition has no ELR logic (4.3.1 jar); an
  ELR member rejoins the ISR by fetching, like any replica outside it.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from engine.broker.replica_fetch import (
    FETCH_BACKOFF_MS, FETCH_WAIT_MAX_MS, FollowerFetcher, PartitionAnswer, fetch_partitions, fetch_replica,
    fetch_response, fetch_version, replica_fetch_request)
from engine.common.directory_id import UNASSIGNED
from engine.image.metadata_image import MetadataImage
from engine.image.partition_registration import PartitionRegistration
from engine.records.kio_codec import ErrorCode, i8, i32, i64, protocol_module

CONTROLLER = -1  # poll's destination for requests to the active controller (AlterPartition)
ALTER_PARTITION_RETRY_MS = 50  # Kafka's AlterPartitionManager: resend after an error
_AP = protocol_module("alter_partition", 3, "request")

# Per-partition AlterPartition errors after which Kafka's Partition waits for new metadata
_WAIT_FOR_METADATA = frozenset({
    ErrorCode.invalid_update_version, ErrorCode.fenced_leader_epoch, ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id, ErrorCode.invalid_request, ErrorCode.new_leader_elected})
_BACK_TO_COMMITTED = frozenset({ErrorCode.operation_not_attempted, ErrorCode.ineligible_replica})

PartitionKey = tuple[uuid.UUID, int]  # (topic id, partition index)


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """What the replicas need of the broker's configuration, by Kafka's names and defaults."""

    broker_id: int  # node.id
    log_dir_ids: tuple[uuid.UUID, ...] = ()  # directory.id of each configured log dir
    fetch_interval_ms: int = FETCH_WAIT_MAX_MS  # replica.fetch.wait.max.ms
    fetch_backoff_ms: int = FETCH_BACKOFF_MS  # replica.fetch.backoff.ms
    replica_lag_time_max_ms: int = 30000  # replica.lag.time.max.ms


@dataclass(slots=True)
class ReplicaCounters:
    """For status: what the leader side did (the follower side counts in ``fetcher.counters``)."""

    fetches_answered: int = 0
    isr_shrinks_sent: int = 0  # proposals, each sent in an AlterPartition
    isr_expands_sent: int = 0
    alter_partition_requests: int = 0
    alter_partition_failures: int = 0  # no answer or a top-level error
    alter_partition_errors: int = 0  # partition-level errors
    not_attempted: int = 0  # proposals refused while one was unanswered


@dataclass(eq=False, slots=True)
class _Proposal:
    """A pending ISR change (Kafka's PendingExpandIsr / PendingShrinkIsr) and what is sent for it."""

    key: PartitionKey
    isr_with_epochs: tuple[tuple[int, int], ...]
    leader_epoch: int
    partition_epoch: int
    recovery_state: int
    not_before_ms: int = 0  # a resend waits until then


@dataclass(slots=True)
class _Remote:
    last_caught_up_ms: int = 0
    broker_epoch: int | None = None  # from its last Fetch


@dataclass(slots=True)
class _Led:
    """A partition this broker leads (Kafka's Partition as leader)."""

    key: PartitionKey
    seen: PartitionRegistration  # the image's registration last applied or skipped
    replicas: tuple[int, ...]
    isr: tuple[int, ...]  # committed: from the image or an AlterPartition answer
    leader_epoch: int
    partition_epoch: int
    recovery_state: int
    remotes: dict[int, _Remote] = field(default_factory=dict)
    pending: _Proposal | None = None


class ReplicaSim:
    """One broker's simulated replicas (see the module's rules)."""

    def __init__(self, config: ReplicaConfig, rng: random.Random | None = None, fetch_delay_ms: int = 0,
                 fetch_failure_rate: float = 0.0) -> None:
        self.config = config
        self.rng = rng or random.Random(0)
        self.fetch_delay_ms = fetch_delay_ms
        self.fetch_failure_rate = fetch_failure_rate
        self.counters = ReplicaCounters()
        self.fetcher = FollowerFetcher(config.fetch_interval_ms, config.fetch_backoff_ms)
        self.broker_epoch = -1
        self._image: MetadataImage | None = None
        self._failed_dirs: frozenset[uuid.UUID] = frozenset()
        self._led: dict[PartitionKey, _Led] = {}
        self._next_isr_check_ms: int | None = None
        self._unsent: dict[PartitionKey, _Proposal] = {}  # unanswered proposals (Kafka's unsentIsrUpdates)
        self._ap_in_flight: tuple[Any, dict[PartitionKey, _Proposal]] | None = None
        self._ap_next_send_ms = 0
        self._now_ms = 0

    # -- inputs ----------------------------------------------------------------------------

    def set_image(self, image: MetadataImage, now_ms: int, broker_epoch: int) -> None:
        """The broker's newest metadata image and its own current broker epoch."""
        self._image, self.broker_epoch, self._now_ms = image, broker_epoch, now_ms
        if self._next_isr_check_ms is None:
            self._next_isr_check_ms = now_ms + self._isr_check_interval_ms
        self._apply(now_ms)

    def set_failed_dirs(self, dir_ids: Iterable[uuid.UUID], now_ms: int | None = None) -> None:
        """Log dirs whose disk failed: their partitions go offline here (never back in this
        incarnation, as in Kafka)."""
        self._failed_dirs = self._failed_dirs | frozenset(dir_ids)
        if now_ms is not None:
            self._now_ms = now_ms
        if self._image is not None:
            self._apply(self._now_ms)

    def set_fetch_delay_ms(self, delay_ms: int) -> None:
        """The lag knob: added before every fetch this broker sends (0: none)."""
        self.fetch_delay_ms = max(0, int(delay_ms))

    def set_fetch_failure_rate(self, rate: float) -> None:
        """The probability that a fetch is lost (retried after replica.fetch.backoff.ms)."""
        self.fetch_failure_rate = min(1.0, max(0.0, float(rate)))

    # -- what to send, and when ----------------------------------------------------------------

    def poll(self, now_ms: int) -> list[tuple[int, Any]]:
        """Requests to send now: (leader broker id, FetchRequest) per leader whose fetch is due,
        and (CONTROLLER, AlterPartitionRequest v3) when proposals wait and none is in flight."""
        self._now_ms = now_ms
        if self._image is None:
            return []
        if self._next_isr_check_ms is not None and now_ms >= self._next_isr_check_ms:
            self._next_isr_check_ms = now_ms + self._isr_check_interval_ms
            for led in self._led.values():
                self._maybe_shrink(led, now_ms)
        version = fetch_version(self._image.metadata_version)
        out = self.fetcher.poll(
            now_ms, self.fetch_delay_ms, self._lost,
            lambda targets: replica_fetch_request(version, self.config.broker_id, self.broker_epoch, targets))
        request = self._alter_partition_due(now_ms)
        if request is not None:
            out.append((CONTROLLER, request))
        return out

    def next_poll_ms(self, now_ms: int) -> int | None:
        """When ``poll`` next has something to do (never before ``now_ms``); None: nothing planned."""
        due = []
        fetch_ms = self.fetcher.next_due_ms(now_ms, self.fetch_delay_ms)
        if fetch_ms is not None:
            due.append(fetch_ms)
        if self._led and self._next_isr_check_ms is not None:
            due.append(self._next_isr_check_ms)
        if self._ap_in_flight is None and self._unsent:
            due.append(max(self._ap_next_send_ms, min(p.not_before_ms for p in self._unsent.values())))
        return max(now_ms, min(due)) if due else None

    # -- the leader's side ------------------------------------------------------------------------

    def handle_fetch(self, request: Any, now_ms: int) -> Any:
        """Answer a follower's Fetch (any version 4-18): per partition an error or an empty log at
        offset 0; a follower that fetched is caught up now, and proposed back into the ISR."""
        self._now_ms = now_ms
        replica_id, replica_epoch = fetch_replica(request)
        answers = []
        for topic_key, partition, epoch in fetch_partitions(request):
            answers.append(self._answer(request.__version__, topic_key, partition, epoch, replica_id,
                                        replica_epoch, now_ms))
        self.counters.fetches_answered += 1
        return fetch_response(request, answers)

    def _answer(self, version: int, topic_key: Any, partition_id: int, epoch: int, replica_id: int,
                replica_epoch: int, now_ms: int) -> PartitionAnswer:
        image = self._image
        topics = image.topics if image is not None else None
        topic_id = topic_key if version >= 13 else (topics.by_name.get(topic_key) if topics else None)
        topic = topics.by_id.get(topic_id) if topics is not None and topic_id is not None else None
        if topic is None:
            code = ErrorCode.unknown_topic_id if version >= 13 else ErrorCode.unknown_topic_or_partition
            return PartitionAnswer(topic_key, partition_id, code)
        partition = topic.partitions.get(partition_id)
        if partition is None:
            return PartitionAnswer(topic_key, partition_id, ErrorCode.unknown_topic_or_partition)
        me = self.config.broker_id
        if me in partition.replicas and not self._online(partition, me):
            return PartitionAnswer(topic_key, partition_id, ErrorCode.kafka_storage_error)
        led = self._led.get((topic_id, partition_id))
        if led is None or (replica_id >= 0 and replica_id not in led.replicas):
            return PartitionAnswer(topic_key, partition_id, ErrorCode.not_leader_or_follower,
                                   partition.leader, partition.leader_epoch)
        if epoch >= 0 and epoch != led.leader_epoch:
            code = ErrorCode.fenced_leader_epoch if epoch < led.leader_epoch else ErrorCode.unknown_leader_epoch
            return PartitionAnswer(topic_key, partition_id, code, me, led.leader_epoch)
        remote = led.remotes.get(replica_id)
        if remote is not None:
            remote.last_caught_up_ms, remote.broker_epoch = now_ms, replica_epoch
            self._maybe_expand(led, replica_id, remote, now_ms)
        return PartitionAnswer(topic_key, partition_id)

    # -- the follower's side ------------------------------------------------------------------------

    def handle_fetch_response(self, leader_id: int, request: Any, response: Any | None, now_ms: int) -> bool:
        """The leader's answer to our Fetch (None: lost, timed out, refused); False if it is not
        the fetch in flight toward ``leader_id``."""
        self._now_ms = now_ms
        return self.fetcher.handle_response(leader_id, request, response, now_ms)

    # -- AlterPartition --------------------------------------------------------------------------

    def handle_alter_partition_response(self, request: Any, response: Any | None, now_ms: int) -> bool:
        """The controller's answer to our AlterPartition (None: failed); False if it is not the
        one in flight."""
        self._now_ms = now_ms
        if self._ap_in_flight is None or self._ap_in_flight[0] is not request:
            return False
        _, sent = self._ap_in_flight
        self._ap_in_flight = None
        if type(response).__name__ != "AlterPartitionResponse" or response.error_code != ErrorCode.none:
            # everything stays unsent (STALE_BROKER_EPOCH and NOT_CONTROLLER included): resent soon
            self.counters.alter_partition_failures += 1
            self._ap_next_send_ms = now_ms + ALTER_PARTITION_RETRY_MS
            return True
        self._ap_next_send_ms = now_ms  # what is still unsent goes at once
        for topic in response.topics:
            for result in topic.partitions:
                key = (topic.topic_id, int(result.partition_index))
                proposal = sent.get(key)
                if proposal is None or self._unsent.get(key) is not proposal:
                    continue  # not in our request: Kafka logs and ignores it
                del self._unsent[key]
                self._partition_answer(proposal, result, now_ms)
        return True  # a partition the answer left out stays unsent: it goes again

    def _partition_answer(self, proposal: _Proposal, result: Any, now_ms: int) -> None:
        led = self._led.get(proposal.key)
        if led is None or led.pending is not proposal:
            return  # the partition moved on (new metadata, or no longer led here): stale answer
        error = result.error_code
        if error == ErrorCode.none:
            if result.leader_epoch != led.leader_epoch or result.partition_epoch < led.partition_epoch:
                return  # Kafka ignores it and stays pending until the metadata
            led.isr = tuple(int(r) for r in result.isr)
            led.partition_epoch = int(result.partition_epoch)
            led.recovery_state = int(result.leader_recovery_state)
            led.pending = None
            return
        self.counters.alter_partition_errors += 1
        if error in _BACK_TO_COMMITTED:
            led.pending = None
        elif error not in _WAIT_FOR_METADATA:
            proposal.not_before_ms = now_ms + ALTER_PARTITION_RETRY_MS  # retried: the same proposal
            self._unsent[proposal.key] = proposal

    def _alter_partition_due(self, now_ms: int) -> Any | None:
        if self._ap_in_flight is not None or not self._unsent or now_ms < self._ap_next_send_ms:
            return None
        ready = {k: p for k, p in self._unsent.items() if p.not_before_ms <= now_ms}
        if not ready:
            return None
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for (topic_id, partition_id), p in sorted(ready.items()):
            by_topic.setdefault(topic_id, []).append(_AP.PartitionData(
                partition_index=i32(partition_id), leader_epoch=i32(p.leader_epoch),
                new_isr_with_epochs=tuple(_AP.BrokerState(broker_id=i32(b), broker_epoch=i64(e))
                                          for b, e in p.isr_with_epochs),
                leader_recovery_state=i8(p.recovery_state), partition_epoch=i32(p.partition_epoch)))
        request = _AP.AlterPartitionRequest(
            broker_id=i32(self.config.broker_id), broker_epoch=i64(self.broker_epoch),
            topics=tuple(_AP.TopicData(topic_id=t, partitions=tuple(ps)) for t, ps in by_topic.items()))
        self._ap_in_flight = (request, ready)
        self.counters.alter_partition_requests += 1
        return request

    # -- status ----------------------------------------------------------------------------------

    def leading(self) -> dict[PartitionKey, tuple[int, ...]]:
        """Each partition led here and its ISR as this leader knows it (committed)."""
        return {key: led.isr for key, led in self._led.items()}

    def following(self) -> dict[PartitionKey, int]:
        """Each partition fetched here and its leader."""
        return self.fetcher.following()

    def pending_isr(self, key: PartitionKey) -> tuple[int, ...] | None:
        """The ISR proposed and not yet settled for a led partition, if any."""
        led = self._led.get(key)
        return None if led is None or led.pending is None else tuple(b for b, _ in led.pending.isr_with_epochs)

    @property
    def alter_partition_in_flight(self) -> Any | None:
        return self._ap_in_flight[0] if self._ap_in_flight is not None else None

    # -- inside ----------------------------------------------------------------------------------

    @property
    def _isr_check_interval_ms(self) -> int:
        return max(1, self.config.replica_lag_time_max_ms // 2)

    def _lost(self) -> bool:
        return self.fetch_failure_rate > 0 and self.rng.random() < self.fetch_failure_rate

    def _online(self, partition: PartitionRegistration, broker_id: int) -> bool:
        """Whether our replica of ``partition`` has a usable log dir (see the module's rules)."""
        if not self._failed_dirs or len(partition.directories) != len(partition.replicas):
            return True
        directory = partition.directories[partition.replicas.index(broker_id)]
        if directory in self._failed_dirs:
            return False
        return directory == UNASSIGNED or directory in self.config.log_dir_ids

    def _apply(self, now_ms: int) -> None:
        image = self._image
        assert image is not None
        me = self.config.broker_id
        brokers = image.cluster.brokers
        led: dict[PartitionKey, _Led] = {}
        following: dict[PartitionKey, tuple[int, int]] = {}
        for topic_id, topic in image.topics.by_id.items():
            for partition_id, partition in topic.partitions.items():
                if me not in partition.replicas or not self._online(partition, me):
                    continue
                key = (topic_id, partition_id)
                if partition.leader == me:
                    led[key] = self._make_leader(key, partition, now_ms)
                elif partition.leader >= 0:
                    leader = brokers.get(partition.leader)
                    if leader is not None and not leader.fenced:  # Kafka: only from an alive leader
                        following[key] = (partition.leader, partition.leader_epoch)
        self._led = led
        self.fetcher.update(following, now_ms)

    def _make_leader(self, key: PartitionKey, p: PartitionRegistration, now_ms: int) -> _Led:
        led = self._led.get(key)
        if led is None:
            led = _Led(key, p, p.replicas, p.isr, p.leader_epoch, p.partition_epoch, p.leader_recovery_state)
            self._reset_remotes(led, now_ms)
            return led
        if p == led.seen:
            return led
        led.seen = p
        if p.partition_epoch < led.partition_epoch:
            return led  # an AlterPartition answer already told us of a newer state
        new_epoch = p.leader_epoch > led.leader_epoch
        led.replicas, led.isr, led.leader_epoch = p.replicas, p.isr, p.leader_epoch
        led.partition_epoch, led.recovery_state, led.pending = p.partition_epoch, p.leader_recovery_state, None
        if new_epoch:
            self._reset_remotes(led, now_ms)
        else:
            led.remotes = {r: led.remotes.get(r) or _Remote() for r in p.replicas if r != self.config.broker_id}
        return led

    def _reset_remotes(self, led: _Led, now_ms: int) -> None:
        led.remotes = {r: _Remote(now_ms if r in led.isr else 0) for r in led.replicas if r != self.config.broker_id}

    def _maybe_shrink(self, led: _Led, now_ms: int) -> None:
        if led.pending is not None:
            return
        lag_ms = self.config.replica_lag_time_max_ms
        me = self.config.broker_id
        out = {r for r in led.isr if r != me and (r not in led.remotes
                                                   or now_ms - led.remotes[r].last_caught_up_ms > lag_ms)}
        if out:
            self._propose(led, tuple(r for r in led.isr if r not in out), now_ms, shrink=True)

    def _maybe_expand(self, led: _Led, replica_id: int, remote: _Remote, now_ms: int) -> None:
        if led.pending is not None or replica_id in led.isr or self._image is None:
            return
        broker = self._image.cluster.brokers.get(replica_id)
        if broker is None or broker.fenced or broker.in_controlled_shutdown:
            return
        if remote.broker_epoch is None or (remote.broker_epoch != -1 and remote.broker_epoch != broker.epoch):
            return  # KIP-841: a Fetch from another incarnation may not rejoin
        self._propose(led, led.isr + (replica_id,), now_ms, shrink=False)

    def _propose(self, led: _Led, isr: tuple[int, ...], now_ms: int, shrink: bool) -> None:
        key = led.key
        if key in self._unsent:
            self.counters.not_attempted += 1  # Kafka: OPERATION_NOT_ATTEMPTED, stays committed
            return
        me = self.config.broker_id
        epochs = tuple((r, self.broker_epoch if r == me else _epoch_or_unknown(led.remotes.get(r))) for r in isr)
        led.pending = _Proposal(key, epochs, led.leader_epoch, led.partition_epoch, led.recovery_state)
        self._unsent[key] = led.pending
        if shrink:
            self.counters.isr_shrinks_sent += 1
        else:
            self.counters.isr_expands_sent += 1


def _epoch_or_unknown(remote: _Remote | None) -> int:
    return -1 if remote is None or remote.broker_epoch is None else remote.broker_epoch
