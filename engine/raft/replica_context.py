"""What every handler of the Raft core sees of the replica: its state and its primitives.

``ReplicaContext`` holds the replica (log, election state, voter sets, what is in flight)
and the few things the handlers do with it: send and answer, back off, find a destination,
draw election timeouts, change role (become leader, follow, resign) and append as leader.
The handler modules (raft_polls, raft_requests, raft_responses, voter_changes,
describe_quorum) import this module and each other as a DAG, never raft_client:
``RaftClient`` subclasses this class with the public surface and dispatches to them. The two
hooks a primitive needs from a handler module are declared here and implemented there.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, Sequence

from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i16
from engine.records.metadata_record_serde import AnyRecord, control_record
from engine.raft.election_store import ElectionStore
from engine.raft.kraft_control_state import KRaftControlState
from engine.raft.leader_state import LeaderState
from engine.raft.quorum_state import MAX_EPOCH, FollowerState, QuorumState, ResignedState
from engine.raft.raft_config import MAX_BATCH_RECORDS, RaftConfig
from engine.raft.raft_io import (
    BOOTSTRAP_NODE_ID, Destination, InFlight, LeaderAndEpoch, NotLeaderError, OutboundRequest, OutboundResponse,
)
from engine.raft.raft_log import RaftLog
from engine.raft.voter_set import Address, ReplicaKey

RETRY_BACKOFF_BASE_MS = 100  # Kafka's base for the binary exponential election backoff


def _backoff_key(node_id: int, api: str) -> tuple[int, str]:
    # The bootstrap servers are asked in turn under made-up ids: one back-off covers them all.
    return (BOOTSTRAP_NODE_ID if node_id < 0 else node_id), api


class ReplicaContext(ABC):
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
        self.inflight: dict[int, InFlight] = {}
        self.parked_fetches: list = []  # (token, request, deadline_ms, high watermark when parked)
        self.backoff_until: dict[tuple[int, str], int] = {}
        self.pending_records: list[AnyRecord] = []
        # (start, end) in pending_records of each atomic append: kept whole in one batch
        self.pending_atomic: list[tuple[int, int]] = []
        self.pending_since_ms: int | None = None
        self._next_correlation_id = 1
        self._bootstrap_index = 0
        self.election_retries = 0  # elections lost in a row: the backoff grows with it
        self.exhausted_epoch_logged: int | None = None  # the last epoch said once to allow no election
        self.updated_endpoints_epoch = -1  # the epoch in which our UpdateRaftVoter succeeded
        self._load_control_state()
        stored = self.quorum.initialize(now_ms, self._random_election_timeout_ms(),
                                        max(log.last_fetched_epoch(), 0))
        if stored.leader_id >= 0 and stored.leader_id != local.node_id:
            address = self.leader_address(stored.leader_id)
            if address is not None:  # fetch from it at once rather than wait for an election timeout
                self.quorum.resume_following(stored.leader_id, address, now_ms + config.fetch_timeout_ms)
        self._maybe_become_only_voter_leader(now_ms)

    # -- hooks: primitives that need a handler module (RaftClient implements them) ---------

    @abstractmethod
    def complete_parked_fetches(self, now_ms: int, force: bool) -> None:
        """Answer the parked (long-poll) fetches that have news, or all of them with ``force``."""

    @abstractmethod
    def on_commit(self, now_ms: int) -> None:
        """The high watermark moved: whatever waited for a commit may go on."""

    # -- queries -------------------------------------------------------------------------

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

    def last_fetched(self) -> tuple[int, int]:
        """(end offset, epoch of the last entry): what elections compare."""
        return self.log.end_offset, max(self.log.last_fetched_epoch(), 0)  # Kafka: 0 for an empty log

    def is_log_up_to_date(self, last_offset: int, last_epoch: int) -> bool:
        end, epoch = self.last_fetched()
        return last_epoch > epoch or (last_epoch == epoch and last_offset >= end)

    # -- requests out, responses out ---------------------------------------------------------

    def send(self, api: str, destination: Destination, request: Any, now_ms: int, context: Any = None) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        self.inflight[correlation_id] = InFlight(api, destination, now_ms + self.config.request_timeout_ms, context)
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

    # -- where to send ---------------------------------------------------------------------

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

    # -- timers -------------------------------------------------------------------------------

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

    # -- changing role ---------------------------------------------------------------------

    def become_leader(self, now_ms: int) -> None:
        state = self.quorum.state
        voters = self.control.latest_voters()
        leader = LeaderState(self.local, state.epoch, self.log.end_offset, voters, frozenset(state.granted),
                             now_ms, int(self.config.fetch_timeout_ms * 1.5))
        self.quorum.to_leader(leader)
        self.clear_pending_appends()
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

    def become_follower(self, now_ms: int, epoch: int, leader_id: int, address: Any) -> bool:
        """Follow ``leader_id`` in ``epoch`` unless we already do; False when that contradicts what
        we know (another leader of the same epoch, or ourselves)."""
        state = self.quorum.state
        if leader_id == self.local.node_id:
            if epoch > self.epoch:
                self.quorum.to_unattached(epoch, self.election_deadline_ms(now_ms))
                return True
            return False
        if isinstance(state, FollowerState) and state.epoch == epoch:
            if state.leader_id != leader_id:
                return False
            if address is not None:
                state.leader_address = address
            return True
        if isinstance(state, (LeaderState, ResignedState)) and state.epoch == epoch:
            return False  # we led this epoch: nobody else did
        self.quorum.to_follower(epoch, leader_id, address, now_ms + self.config.fetch_timeout_ms)
        return True

    def become_resigned(self, now_ms: int) -> None:
        """Leave the leadership: EndQuorumEpoch goes to the other voters, the most caught-up named first."""
        leader: LeaderState = self.quorum.state
        successors = leader.successors()
        others = set(leader.voters.ids) - {self.local.node_id}
        self.quorum.to_resigned(self.election_deadline_ms(now_ms), successors, others)
        self.complete_parked_fetches(now_ms, force=True)  # now answered "not the leader"
        self.clear_pending_appends()

    # -- appending as leader ----------------------------------------------------------------

    def check_leader_epoch(self, epoch: int) -> None:
        if not self.quorum.is_leader() or self.epoch != epoch:
            raise NotLeaderError(f"not the leader of epoch {epoch} (this replica is {self.role} in epoch {self.epoch})")

    def append_batch(self, epoch: int, records: Sequence[AnyRecord], now_ms: int, *, control: bool = False) -> int:
        """Append ``records`` as one batch at once, after what is pending; returns its last offset."""
        self.check_leader_epoch(epoch)
        self.drain_appends(now_ms)
        start = self.log.end_offset
        last = self.log.append_as_leader(list(records), epoch=epoch, timestamp_ms=now_ms, control=control).offset
        self._after_leader_append(now_ms, start)
        return last

    def drain_appends(self, now_ms: int) -> None:
        leader = self.quorum.state
        start = self.log.end_offset
        if isinstance(leader, LeaderState):
            pending = self.pending_records
            for first, end in batch_ranges(len(pending), self.pending_atomic, MAX_BATCH_RECORDS):
                self.log.append_as_leader(pending[first:end], epoch=leader.epoch, timestamp_ms=now_ms)
        self.clear_pending_appends()
        self._after_leader_append(now_ms, start)

    def clear_pending_appends(self) -> None:
        """Nothing queued any more (drained, or the leadership went with it)."""
        self.pending_records, self.pending_atomic, self.pending_since_ms = [], [], None

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

    def on_high_watermark(self, offset: int | None, now_ms: int) -> None:
        """Raise (never lower) the local high watermark; committed changes take effect."""
        if offset is None or (self.high_watermark is not None and offset <= self.high_watermark):
            return
        self.high_watermark = offset
        self.on_commit(now_ms)

    # -- startup ---------------------------------------------------------------------------

    def _load_control_state(self) -> None:
        snapshot = self.log.latest_snapshot_id()
        if snapshot is not None:
            self.control.observe(self.log.read_snapshot(snapshot), snapshot_end_offset=snapshot.end_offset)
        self.control.observe(self.log.batches(self.log.start_offset))

    def _maybe_become_only_voter_leader(self, now_ms: int) -> None:
        # A quorum of one elects itself at once (Kafka does the same), unless no epoch is left to
        # run for: then its poll says so and waits, as any prospective in that epoch does.
        if self.control.latest_voters().is_only_voter(self.local) and self.epoch < MAX_EPOCH:
            self.quorum.to_prospective(now_ms)
            self.quorum.to_candidate(self.election_deadline_ms(now_ms))
            self.become_leader(now_ms)


def batch_ranges(count: int, atomic: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """How ``count`` pending records go into batches of at most ``limit``: (start, end) of each,
    in order. Records of an atomic append (``atomic``: sorted, disjoint (start, end), each at
    most ``limit`` long) share one batch: one that does not fit in the batch being filled starts
    the next (Kafka's BatchAccumulator does the same); the others fill batches as they come."""
    spans: list[tuple[int, int, bool]] = []
    at = 0
    for first, end in atomic:
        if first > at:
            spans.append((at, first, False))
        spans.append((first, end, True))
        at = end
    if at < count:
        spans.append((at, count, False))
    out: list[tuple[int, int]] = []
    batch_start = 0
    for first, end, whole in spans:
        if whole:
            if first > batch_start and end - batch_start > limit:
                out.append((batch_start, first))
                batch_start = first
            continue
        while end - batch_start > limit:  # loose records fill the batch, then the next
            cut = batch_start + limit
            out.append((batch_start, cut))
            batch_start = cut
    if batch_start < count:
        out.append((batch_start, count))
    return out
