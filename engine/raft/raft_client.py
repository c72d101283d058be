"""The Raft core: a deterministic replica fed with messages and the time, nothing else.

Like etcd's ``Step``/``Ready`` and Kafka's ``KafkaRaftClient.poll()``: the owner calls
``receive(now_ms, message)`` for every request or response that arrives and
``poll(now_ms)``, which runs timers and returns a ``Ready`` with the messages to send
and the time by which ``poll`` wants to run again. The log and the election store are
passed in; they are written synchronously inside those calls, so whatever a message
promises (a vote, an acknowledged offset) is durable before the message is returned.
No sockets, threads, wall clock or global randomness live here: the same code runs in
``kraftd start`` and in the seeded simulator.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i16
from engine.records.metadata_record_serde import AnyRecord, control_record
from engine.raft.election_store import ElectionStore
from engine.raft.kraft_control_state import KRaftControlState
from engine.raft.leader_state import LeaderState
from engine.raft.quorum_state import (
    QuorumState,
)
from engine.raft.raft_config import MAX_BATCH_RECORDS, RaftConfig
from engine.raft.raft_log import LogBatch, RaftLog
from engine.raft.voter_set import Address, ReplicaKey
from engine.storage.snapshot_writer import SnapshotId

RETRY_BACKOFF_BASE_MS = 100  # Kafka's base for the binary exponential election backoff
BOOTSTRAP_NODE_ID = -1  # bootstrap servers have no known id: they are addressed as -1, -2, ...


class NotLeaderError(Exception):
    """An append for an epoch this replica does not lead (any more)."""


@dataclass(frozen=True, slots=True)
class Destination:
    node_id: int  # -1 for a bootstrap server whose id is not known yet
    address: Address | None


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    correlation_id: int
    destination: Destination
    request: Any


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    token: object  # whatever the edge passed with the request
    response: Any


@dataclass(frozen=True, slots=True)
class InboundRequest:
    token: object
    request: Any


@dataclass(frozen=True, slots=True)
class InboundResponse:
    correlation_id: int
    response: Any | None  # None when the request failed: ``error`` says why
    error: str | None = None


@dataclass
class Ready:
    messages: list = field(default_factory=list)  # OutboundRequest and OutboundResponse, in order
    next_poll_ms: int = 0


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int  # -1: unknown
    epoch: int


class RaftListener(Protocol):
    def handle_commit(self, batches: Sequence[LogBatch]) -> None:
        """Batches wholly below the high watermark, in order, each exactly once (control
        batches included: check ``batch.control``)."""

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[LogBatch]) -> None:
        """Replace all state with this snapshot; commits continue from its end offset."""

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        ...


@dataclass
class _InFlight:
    api: str
    destination: Destination
    deadline_ms: int
    context: Any = None


def _backoff_key(node_id: int, api: str) -> tuple[int, str]:
    # The bootstrap servers are asked in turn under made-up ids: one back-off covers them all.
    return (BOOTSTRAP_NODE_ID if node_id < 0 else node_id), api


@dataclass
class _ListenerContext:
    listener: RaftListener
    next_offset: int = 0
    last_leader: LeaderAndEpoch | None = None


class RaftClient:
    def __init__(self, *, config: RaftConfig, cluster_id: str, local: ReplicaKey,
                 endpoints: tuple[tuple[str, Address], ...], log: RaftLog, store: ElectionStore,
                 rng: random.Random, now_ms: int):
        self.config = config
        self.cluster_id = cluster_id
        self.local = local
        self.endpoints = endpoints
        self.log = log
        self.rng = rng
        self.quorum = QuorumState(local, store)
        self.control = KRaftControlState(config.static_voters)
        self.high_watermark: int | None = None
        self.outbox: list = []
        self.inflight: dict[int, _InFlight] = {}
        self.parked_fetches: list = []  # (token, request, deadline_ms)
        self.backoff_until: dict[tuple[int, str], int] = {}
        self.listeners: list[_ListenerContext] = []
        self.pending_records: list[AnyRecord] = []
        self.pending_since_ms: int | None = None
        self._next_correlation_id = 1
        self._bootstrap_index = 0
        self.election_retries = 0  # elections lost in a row: the backoff grows with it
        self.updated_endpoints_epoch = -1  # the epoch in which our UpdateRaftVoter succeeded
        self._led: LeaderState | None = None  # the leadership last seen, to tidy up after it
        self._load_control_state()
        stored = self.quorum.initialize(now_ms, self._random_election_timeout_ms())
        if stored.leader_id >= 0 and stored.leader_id != local.node_id:
            address = self.leader_address(stored.leader_id)
            if address is not None:  # fetch from it at once rather than wait for an election timeout
                self.quorum.resume_following(stored.leader_id, address, now_ms + config.fetch_timeout_ms)
        self._maybe_become_only_voter_leader(now_ms)

    # -- the public surface ---------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.quorum.leader_id, self.quorum.epoch)

    @property
    def role(self) -> str:
        return self.quorum.role

    def has_uncommitted_voter_change(self) -> bool:
        return self.control.has_uncommitted_change(self.high_watermark)

    def is_voter(self) -> bool:
        return self.control.latest_voters().is_voter(self.local)

    def register(self, listener: RaftListener) -> None:
        self.listeners.append(_ListenerContext(listener))

    def receive(self, now_ms: int, message: InboundRequest | InboundResponse) -> None:
        from engine.raft import raft_requests, raft_responses

        if isinstance(message, InboundRequest):
            raft_requests.handle_request(self, now_ms, message.token, message.request)
        else:
            flight = self.inflight.pop(message.correlation_id, None)
            if flight is not None:  # a late answer to a request we gave up on is ignored
                raft_responses.handle_response(self, now_ms, flight, message)

    def poll(self, now_ms: int) -> Ready:
        from engine.raft import raft_polls

        self._expire_inflight(now_ms)
        self._abandon_old_leadership()
        if not self.quorum.is_leader():
            if self.parked_fetches:
                self.complete_parked_fetches(now_ms, force=True)  # answered "not the leader"
            # Appends queued while we led die with the leadership, as in Kafka's accumulator.
            self.pending_records, self.pending_since_ms = [], None
        raft_polls.poll_state(self, now_ms)
        self._abandon_old_leadership()
        if self.quorum.is_leader():
            self._led = self.quorum.state
        self._deliver(now_ms)
        ready = Ready(self.outbox, self._next_poll_ms(now_ms))
        self.outbox = []
        return ready

    def _abandon_old_leadership(self) -> None:
        """A voter change still waiting when the leadership went gets its answer: not the leader."""
        if self._led is not None and self.quorum.state is not self._led:
            from engine.raft import voter_changes

            voter_changes.abandon(self, self._led)
            self._led = None

    def schedule_append(self, epoch: int, records: Sequence[AnyRecord], now_ms: int) -> int:
        """Queue records for the next batch (sent after ``append.linger.ms``); returns the
        offset of the last. NotLeaderError unless this replica leads ``epoch``."""
        self._check_leader_epoch(epoch)
        if self.pending_since_ms is None:
            self.pending_since_ms = now_ms
        self.pending_records.extend(records)
        return self.log.end_offset + len(self.pending_records) - 1

    def append_now(self, epoch: int, records: Sequence[AnyRecord], now_ms: int, *, control: bool = False) -> int:
        """Append ``records`` as one batch at once (an atomic append); returns its last offset."""
        self._check_leader_epoch(epoch)
        self.drain_appends(now_ms)
        start = self.log.end_offset
        last = self.log.append_as_leader(list(records), epoch=epoch, timestamp_ms=now_ms, control=control).offset
        self._after_leader_append(now_ms, start)
        return last

    def resign(self, epoch: int, now_ms: int) -> None:
        """Step down gracefully (shutdown): EndQuorumEpoch to the voters, successors named."""
        from engine.raft import raft_polls

        if self.quorum.is_leader() and self.epoch == epoch:
            raft_polls.resign(self, now_ms)

    def create_snapshot(self, end_offset: int, records: Sequence[AnyRecord], *,
                        last_contained_log_timestamp_ms: int, now_ms: int) -> SnapshotId:
        """Snapshot the state machine as of ``end_offset`` (committed, delivered, on a batch
        boundary), then trim the log before it."""
        delivered = min((c.next_offset for c in self.listeners), default=self.high_watermark or 0)
        if self.high_watermark is None or end_offset > self.high_watermark or end_offset > delivered:
            raise ValueError(f"snapshot at {end_offset} is past what is committed and applied")
        latest = self.log.latest_snapshot_id()
        if latest is not None and end_offset <= latest.end_offset:
            return latest
        batch = next(iter(self.log.batches(end_offset - 1, end_offset)), None)
        if batch is None or batch.last_offset != end_offset - 1:
            raise ValueError(f"snapshot end offset {end_offset} is not on a batch boundary")
        snapshot_id = SnapshotId(end_offset, batch.epoch)
        self.log.create_snapshot(snapshot_id, records, kraft_control=self.control.control_records_at(end_offset - 1),
                                 last_contained_log_timestamp_ms=last_contained_log_timestamp_ms, now_ms=now_ms)
        self.log.delete_before_snapshot()
        return snapshot_id

    # -- plumbing shared by the handlers ---------------------------------------------

    def send(self, api: str, destination: Destination, request: Any, now_ms: int, context: Any = None) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        self.inflight[correlation_id] = _InFlight(api, destination, now_ms + self.config.request_timeout_ms, context)
        self.outbox.append(OutboundRequest(correlation_id, destination, request))
        return correlation_id

    def respond(self, token: object, response: Any) -> None:
        self.outbox.append(OutboundResponse(token, response))

    def has_inflight(self, node_id: int, api: str) -> bool:
        return any(f.api == api and f.destination.node_id == node_id for f in self.inflight.values())

    def can_send(self, node_id: int, api: str, now_ms: int) -> bool:
        return not self.has_inflight(node_id, api) and now_ms >= self.backoff_until.get(_backoff_key(node_id, api), 0)

    def back_off(self, node_id: int, api: str, now_ms: int, delay_ms: int | None = None) -> None:
        delay = self.config.retry_backoff_ms if delay_ms is None else delay_ms
        self.backoff_until[_backoff_key(node_id, api)] = now_ms + delay

    def voter_destination(self, node_id: int) -> Destination | None:
        node = self.control.latest_voters().node(node_id)
        address = node.endpoint(self.config.listener_name) if node is not None else None
        return Destination(node_id, address) if address is not None else None

    def bootstrap_destination(self) -> Destination | None:
        own = self.local_address()
        servers = [s for s in self.config.bootstrap_servers if s != own]  # asking ourselves tells nothing
        if not servers:
            return None
        self._bootstrap_index = (self._bootstrap_index + 1) % len(servers)
        return Destination(-1 - self._bootstrap_index, servers[self._bootstrap_index])

    def leader_address(self, leader_id: int, hint: Address | None = None) -> Address | None:
        if hint is not None:
            return hint
        destination = self.voter_destination(leader_id)
        return destination.address if destination else None

    def local_address(self) -> Address | None:
        for name, address in self.endpoints:
            if name == self.config.listener_name:
                return address
        return None

    def _random_election_timeout_ms(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self.rng.randrange(max(timeout, 1))

    def election_deadline_ms(self, now_ms: int) -> int:
        return now_ms + self._random_election_timeout_ms()

    def election_backoff_ms(self, retries: int) -> int:
        """Kafka's binary exponential backoff after a lost election."""
        bound = 2 << min(20, max(retries, 1) - 1)
        return min(RETRY_BACKOFF_BASE_MS * self.rng.randrange(bound), self.config.election_backoff_max_ms)

    def strict_backoff_ms(self, position: int, count: int) -> int:
        """Backoff of a preferred successor: the first goes at once, the rest in turn."""
        if position == 0:
            return 0
        if position < 0 or position >= count:
            return self.config.election_backoff_max_ms
        base = self.config.election_backoff_max_ms >> (count - 1)
        return min(self.config.election_backoff_max_ms, base << (position - 1))

    def last_fetched(self) -> tuple[int, int]:
        """(end offset, epoch of the last entry): what elections compare."""
        return self.log.end_offset, max(self.log.last_fetched_epoch(), 0)  # Kafka: 0 for an empty log

    def is_log_up_to_date(self, last_offset: int, last_epoch: int) -> bool:
        end, epoch = self.last_fetched()
        return last_epoch > epoch or (last_epoch == epoch and last_offset >= end)

    # -- becoming leader, appending as leader -----------------------------------------

    def become_leader(self, now_ms: int) -> None:
        state = self.quorum.state
        voters = self.control.latest_voters()
        leader = LeaderState(self.local, state.epoch, self.log.end_offset, voters, frozenset(state.granted),
                             now_ms, int(self.config.fetch_timeout_ms * 1.5))
        self.quorum.to_leader(leader)
        self.pending_records = []
        self.pending_since_ms = None
        message = LeaderChangeMessage(
            version=i16(0), leader_id=self.local.node_id,
            voters=tuple(LeaderChangeVoter(voter_id=v) for v in voters.ids),
            granting_voters=tuple(LeaderChangeVoter(voter_id=v) for v in sorted(state.granted)))
        records = [control_record(message)]
        if self.control.kraft_version == 1 and self.control.history.latest_offset() < 0:
            # Voters known only from the local bootstrap checkpoint go into the log with the
            # first batch of the epoch, as Kafka does, so that every replica can learn them.
            records += self.control.control_records_at(-1)
        start = self.log.end_offset
        self.log.append_as_leader(records, epoch=leader.epoch, timestamp_ms=now_ms, control=True)
        self._after_leader_append(now_ms, start)

    def drain_appends(self, now_ms: int) -> None:
        leader = self.quorum.state
        start = self.log.end_offset
        while self.pending_records and isinstance(leader, LeaderState):
            chunk, self.pending_records = (self.pending_records[:MAX_BATCH_RECORDS],
                                           self.pending_records[MAX_BATCH_RECORDS:])
            self.log.append_as_leader(chunk, epoch=leader.epoch, timestamp_ms=now_ms)
        self.pending_records = []
        self.pending_since_ms = None
        self._after_leader_append(now_ms, start)

    def _after_leader_append(self, now_ms: int, start: int) -> None:
        """Make the leader's appends (from ``start``) durable, count them, wake parked fetches."""
        leader = self.quorum.state
        if not isinstance(leader, LeaderState):
            return
        self.log.flush()
        if self.log.end_offset > start:
            self.control.observe(self.log.batches(start))
            leader.set_voters(self.control.latest_voters())
        if leader.update_local(self.log.flushed_end_offset, now_ms):
            self.on_high_watermark(leader.high_watermark, now_ms)
        self.complete_parked_fetches(now_ms, force=False)

    def _check_leader_epoch(self, epoch: int) -> None:
        if not self.quorum.is_leader() or self.epoch != epoch:
            raise NotLeaderError(f"not the leader of epoch {epoch} (this replica is {self.role} in epoch {self.epoch})")

    def on_high_watermark(self, offset: int | None, now_ms: int) -> None:
        """Raise (never lower) the local high watermark; committed changes take effect."""
        if offset is None or (self.high_watermark is not None and offset <= self.high_watermark):
            return
        self.high_watermark = offset
        from engine.raft import voter_changes

        voter_changes.on_commit(self, now_ms)

    def complete_parked_fetches(self, now_ms: int, force: bool) -> None:
        from engine.raft import raft_requests

        parked, self.parked_fetches = self.parked_fetches, []
        for token, request, deadline_ms in parked:
            if force or now_ms >= deadline_ms or raft_requests.fetch_has_news(self, request):
                raft_requests.answer_fetch(self, now_ms, token, request, park=False)
            else:
                self.parked_fetches.append((token, request, deadline_ms))

    # -- startup, delivery, timers ------------------------------------------------------

    def _load_control_state(self) -> None:
        snapshot = self.log.latest_snapshot_id()
        if snapshot is not None:
            self.control.observe(self.log.read_snapshot(snapshot), snapshot_end_offset=snapshot.end_offset)
        self.control.observe(self.log.batches(self.log.start_offset))

    def _maybe_become_only_voter_leader(self, now_ms: int) -> None:
        # A quorum of one elects itself at once (Kafka does the same).
        if self.control.latest_voters().is_only_voter(self.local):
            self.quorum.to_prospective(now_ms)
            self.quorum.to_candidate(self.election_deadline_ms(now_ms))
            self.become_leader(now_ms)

    def _expire_inflight(self, now_ms: int) -> None:
        from engine.raft import raft_responses

        for correlation_id, flight in list(self.inflight.items()):
            if now_ms >= flight.deadline_ms:
                del self.inflight[correlation_id]
                raft_responses.handle_response(self, now_ms, flight,
                                               InboundResponse(correlation_id, None, "request timed out"))

    def _deliver(self, now_ms: int) -> None:
        leader = self.leader_and_epoch
        for ctx in self.listeners:
            if ctx.last_leader != leader:
                ctx.last_leader = leader
                ctx.listener.handle_leader_change(leader)
            self._deliver_to(ctx)

    def _deliver_to(self, ctx: _ListenerContext) -> None:
        snapshot = self.log.latest_snapshot_id()
        if snapshot is not None and ctx.next_offset < self.log.start_offset:
            ctx.listener.handle_load_snapshot(snapshot, list(self.log.read_snapshot(snapshot)))
            ctx.next_offset = snapshot.end_offset
        hw = self.high_watermark
        if hw is None or ctx.next_offset >= hw:
            return
        batches = [b for b in self.log.batches(ctx.next_offset, hw) if b.last_offset < hw]
        if batches:
            ctx.listener.handle_commit(batches)
            ctx.next_offset = batches[-1].last_offset + 1

    def _next_poll_ms(self, now_ms: int) -> int:
        from engine.raft import raft_polls

        times = [raft_polls.state_deadline_ms(self, now_ms)]
        times.extend(f.deadline_ms for f in self.inflight.values())
        times.extend(deadline for _, _, deadline in self.parked_fetches)
        times.extend(t for t in self.backoff_until.values() if t > now_ms)
        if self.pending_since_ms is not None:
            times.append(self.pending_since_ms + self.config.append_linger_ms)
        return max(now_ms, min(times))
