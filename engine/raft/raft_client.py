"""The Raft core: a deterministic replica fed with messages and the time, nothing else.

Like etcd's ``Step``/``Ready`` and Kafka's ``KafkaRaftClient.poll()``: the owner calls
``receive(now_ms, message)`` for every request or response that arrives and
``poll(now_ms)``, which runs timers and returns a ``Ready`` with the messages to send
and the time by which ``poll`` wants to run again. The log and the election store are
passed in; they are written synchronously inside those calls, so whatever a message
promises (a vote, an acknowledged offset) is durable before the message is returned.
No sockets, threads, wall clock or global randomness live here: the same code runs in
``kraftd start`` and in the seeded simulator.

The modules below it, from the top: this one (the public surface, and the dispatch to the
handlers); raft_polls, raft_requests, raft_responses (one per kind of work) over
voter_changes and describe_quorum; replica_context (the replica's state and primitives);
raft_io (the messages in and out).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from engine.records.metadata_record_serde import AnyRecord, ControlRecord
from engine.raft import raft_polls, raft_requests, raft_responses, voter_changes
from engine.raft.election_store import ElectionStore
from engine.raft.leader_state import LeaderState
from engine.raft.raft_config import MAX_BATCH_RECORDS, RaftConfig
from engine.raft.raft_io import (  # noqa: F401 - the public names, importable from here as before
    BOOTSTRAP_NODE_ID, Destination, InboundRequest, InboundResponse, LeaderAndEpoch, NotLeaderError, OutboundRequest,
    OutboundResponse, RaftListener, Ready,
)
from engine.raft.raft_log import RaftLog
from engine.raft.replica_context import ReplicaContext
from engine.raft.voter_set import Address, ReplicaKey
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes

DELIVERY_RECORDS = 10_000  # committed records handed to a listener per poll (at least one batch)

@dataclass(frozen=True)
class SnapshotPlan:
    """A snapshot to build: its id, and the KRaft control records that open it."""

    snapshot_id: SnapshotId
    kraft_control: list[ControlRecord]


@dataclass
class _ListenerContext:
    listener: RaftListener
    next_offset: int = 0
    last_leader: LeaderAndEpoch | None = None
    more: bool = False  # committed batches left undelivered by the last poll (DELIVERY_RECORDS)


class RaftClient(ReplicaContext):
    def __init__(self, *, config: RaftConfig, cluster_id: str, local: ReplicaKey,
                 endpoints: tuple[tuple[str, Address], ...], log: RaftLog, store: ElectionStore,
                 rng: random.Random, now_ms: int):
        self.listeners: list[_ListenerContext] = []
        self._led: LeaderState | None = None  # the leadership last seen, to tidy up after it
        super().__init__(config=config, cluster_id=cluster_id, local=local, endpoints=endpoints, log=log,
                         store=store, rng=rng, now_ms=now_ms)

    # -- the public surface ---------------------------------------------------------

    def register(self, listener: RaftListener) -> None:
        self.listeners.append(_ListenerContext(listener))

    def receive(self, now_ms: int, message: InboundRequest | InboundResponse) -> None:
        if isinstance(message, InboundRequest):
            raft_requests.handle_request(self, now_ms, message.token, message.request)
        else:
            flight = self.inflight.pop(message.correlation_id, None)
            if flight is not None:  # a late answer to a request we gave up on is ignored
                raft_responses.handle_response(self, now_ms, flight, message)

    def poll(self, now_ms: int) -> Ready:
        self._expire_inflight(now_ms)
        self._abandon_old_leadership()
        if not self.quorum.is_leader():
            if self.parked_fetches:
                self.complete_parked_fetches(now_ms, force=True)  # answered "not the leader"
            # Appends queued while we led die with the leadership, as in Kafka's accumulator.
            self.clear_pending_appends()
        raft_polls.poll_state(self, now_ms)
        self._abandon_old_leadership()
        if self.quorum.is_leader():
            self._led = self.quorum.state
        self._deliver(now_ms)
        ready = Ready(self.outbox, self._next_poll_ms(now_ms))
        self.outbox = []
        return ready

    def schedule_append(self, epoch: int, records: Sequence[AnyRecord], now_ms: int, *, atomic: bool = False) -> int:
        """Queue records for the next batch (sent after ``append.linger.ms``); returns the
        offset of the last. ``atomic``: the records stay together in one batch (Kafka's
        scheduleAtomicAppend: lingered too, so the appends of a busy moment share one flush);
        more than a batch holds are appended at once as one batch. NotLeaderError unless this
        replica leads ``epoch``."""
        self.check_leader_epoch(epoch)
        if atomic and len(records) > MAX_BATCH_RECORDS:
            return self.append_batch(epoch, records, now_ms)
        if self.pending_since_ms is None:
            self.pending_since_ms = now_ms
        if atomic and records:
            start = len(self.pending_records)
            self.pending_atomic.append((start, start + len(records)))
        self.pending_records.extend(records)
        return self.log.end_offset + len(self.pending_records) - 1

    def append_now(self, epoch: int, records: Sequence[AnyRecord], now_ms: int, *, control: bool = False) -> int:
        """Append ``records`` as one batch at once (an atomic append); returns its last offset.
        NotLeaderError unless this replica leads ``epoch``."""
        return self.append_batch(epoch, records, now_ms, control=control)

    def resign(self, epoch: int, now_ms: int) -> None:
        """Step down gracefully (shutdown): EndQuorumEpoch to the voters, successors named."""
        if self.quorum.is_leader() and self.epoch == epoch:
            self.become_resigned(now_ms)

    def create_snapshot(self, end_offset: int, records: Sequence[AnyRecord], *,
                        last_contained_log_timestamp_ms: int, now_ms: int) -> SnapshotId:
        """Snapshot the state machine as of ``end_offset`` (committed, delivered, on a batch
        boundary), then trim the log before it. All at once: the simulator's way; a node
        builds the bytes in slices between prepare_snapshot and install_snapshot."""
        plan = self.prepare_snapshot(end_offset)
        if plan is None:
            return self.log.latest_snapshot_id()
        data = snapshot_bytes(records, epoch=plan.snapshot_id.epoch, kraft_control=plan.kraft_control,
                              last_contained_log_timestamp_ms=last_contained_log_timestamp_ms, now_ms=now_ms)
        self.install_snapshot(plan.snapshot_id, self.log.stage_snapshot(plan.snapshot_id, data))
        return plan.snapshot_id

    def prepare_snapshot(self, end_offset: int) -> SnapshotPlan | None:
        """What a snapshot at ``end_offset`` is called and which KRaft control records
        (kraft.version, voters) open it; None if the latest snapshot already covers it.
        ValueError if ``end_offset`` is not committed, delivered and on a batch boundary."""
        delivered = min((c.next_offset for c in self.listeners), default=self.high_watermark or 0)
        if self.high_watermark is None or end_offset > self.high_watermark or end_offset > delivered:
            raise ValueError(f"snapshot at {end_offset} is past what is committed and applied")
        latest = self.log.latest_snapshot_id()
        if latest is not None and end_offset <= latest.end_offset:
            return None
        batch = next(iter(self.log.batches(end_offset - 1, end_offset)), None)
        if batch is None or batch.last_offset != end_offset - 1:
            raise ValueError(f"snapshot end offset {end_offset} is not on a batch boundary")
        return SnapshotPlan(SnapshotId(end_offset, batch.epoch), self.control.control_records_at(end_offset - 1))

    def install_snapshot(self, snapshot_id: SnapshotId, staged: object) -> bool:
        """Complete a snapshot staged by the log, then trim the log before it. False (the staged
        copy dropped) when a newer snapshot came meanwhile, e.g. one downloaded from the leader."""
        latest = self.log.latest_snapshot_id()
        if latest is not None and snapshot_id.end_offset <= latest.end_offset:
            self.log.discard_snapshot(staged)
            return False
        self.log.install_snapshot(snapshot_id, staged)
        self.log.delete_before_snapshot()
        return True

    # -- the hooks ReplicaContext declares ---------------------------------------------

    def complete_parked_fetches(self, now_ms: int, force: bool) -> None:
        raft_requests.complete_parked_fetches(self, now_ms, force)

    def on_commit(self, now_ms: int) -> None:
        voter_changes.on_commit(self, now_ms)

    # -- leadership changes, delivery, timers --------------------------------------------

    def _abandon_old_leadership(self) -> None:
        """A voter change still waiting when the leadership went gets its answer: not the leader."""
        if self._led is not None and self.quorum.state is not self._led:
            voter_changes.abandon(self, self._led)
            self._led = None

    def _expire_inflight(self, now_ms: int) -> None:
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
        # At most DELIVERY_RECORDS a poll (at least one batch), the rest at the next poll, soon:
        # replaying 40,000 committed records at once kept a follower's event loop from its fetches
        # past the fetch timeout on a starved machine. Kafka too hands a listener a bounded read
        # of the committed log each time (KafkaRaftClient.updateListenersProgress, log.read).
        batches, records = [], 0
        ctx.more = False
        for batch in self.log.batches(ctx.next_offset, hw):
            if batch.last_offset >= hw:
                break
            if records >= DELIVERY_RECORDS:
                ctx.more = True
                break
            batches.append(batch)
            records += batch.last_offset - batch.base_offset + 1
        if batches:
            ctx.listener.handle_commit(batches)
            ctx.next_offset = batches[-1].last_offset + 1

    def _next_poll_ms(self, now_ms: int) -> int:
        if any(ctx.more for ctx in self.listeners):
            return now_ms  # more committed batches to hand over
        times = [raft_polls.state_deadline_ms(self, now_ms)]
        times.extend(f.deadline_ms for f in self.inflight.values())
        times.extend(entry[2] for entry in self.parked_fetches)
        times.extend(t for t in self.backoff_until.values() if t > now_ms)
        if self.pending_since_ms is not None:
            times.append(self.pending_since_ms + self.config.append_linger_ms)
        return max(now_ms, min(times))
