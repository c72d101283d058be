"""Inbound Raft requests: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot,
DescribeQuorum (the voter-change RPCs are in voter_changes).

Each handler answers through ``client.respond``; a request naming another cluster, a
malformed shape or an epoch from the past is refused with Kafka's error code and
changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from engine.common.errors import MetadataError
from engine.records.kio_codec import ErrorCode
from engine.raft import raft_messages as rm
from engine.raft import voter_changes
from engine.raft.describe_quorum import describe_quorum_error, describe_quorum_response
from engine.raft.leader_state import LeaderState
from engine.raft.quorum_state import FollowerState, ProspectiveState, UnattachedState
from engine.raft.raft_config import MAX_FETCH_SIZE_BYTES
from engine.raft.raft_io import OutboundResponse
from engine.raft.raft_log import UNDEFINED_EPOCH, OffsetAndEpoch
from engine.raft.replica_context import ReplicaContext
from engine.raft.voter_set import ReplicaKey
from engine.storage.snapshot_writer import SnapshotId

E = ErrorCode

log = logging.getLogger("engine.raft.requests")


def handle_request(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    handlers = {
        "VoteRequest": handle_vote, "BeginQuorumEpochRequest": handle_begin_epoch,
        "EndQuorumEpochRequest": handle_end_epoch, "FetchRequest": handle_fetch,
        "FetchSnapshotRequest": handle_fetch_snapshot, "DescribeQuorumRequest": handle_describe_quorum,
        "AddRaftVoterRequest": voter_changes.handle_add_voter,
        "RemoveRaftVoterRequest": voter_changes.handle_remove_voter,
        "UpdateRaftVoterRequest": voter_changes.handle_update_voter,
    }
    handler = handlers.get(type(request).__name__)
    if handler is None:
        raise ValueError(f"the Raft core does not serve {type(request).__name__}")
    if type(request).__name__ in _SERVED_SAFELY:
        _serve(client, token, request, lambda: handler(client, now_ms, token, request))
    else:
        # These change the election or voter state, which must reach the disk before any answer:
        # a failure there (quorum-state not written) stops the node, as it stops Kafka's Raft
        # thread, rather than go on with a state half changed.
        handler(client, now_ms, token, request)


# The requests that only read (the log, a snapshot, the quorum's progress): a failure to answer
# one is that request's, not the node's.
_SERVED_SAFELY = frozenset({"FetchRequest", "FetchSnapshotRequest", "DescribeQuorumRequest"})


def _serve(client: ReplicaContext, token: object, request: Any, answer: Callable[[], None]) -> None:
    """Run one read-only request's handler; a failure in it (a log or snapshot that cannot be
    read, a bug) is one logged line and an UNKNOWN_SERVER_ERROR answer, as Kafka's leader
    answers a Fetch whose completion failed, and the node goes on serving."""
    try:
        answer()
    except Exception as err:  # noqa: BLE001 - a remote request must not bring the node down
        text = " ".join(str(err).split()) or type(err).__name__
        log.error("node %d: answering %s failed: %s: %s", client.local.node_id, type(request).__name__,
                  type(err).__name__, text)
        if not any(isinstance(m, OutboundResponse) and m.token is token for m in client.outbox):
            client.respond(token, _error_answer(client, request, E.unknown_server_error))


def _error_answer(client: ReplicaContext, request: Any, error: ErrorCode) -> Any:
    """The answer to ``request`` that carries only ``error`` (Kafka's RaftUtil.errorResponse)."""
    name = type(request).__name__
    if name == "FetchRequest":
        return rm.fetch_response(E.none, leader_id=-1, epoch=client.epoch, high_watermark=-1, top_error=error)
    if name == "FetchSnapshotRequest":
        return rm.fetch_snapshot_response(E.none, leader_id=-1, epoch=client.epoch, top_error=error)
    return describe_quorum_error(error, "the controller failed to answer")


def wrong_cluster(client: ReplicaContext, request: Any) -> bool:
    cluster_id = getattr(request, "cluster_id", None)
    return cluster_id is not None and cluster_id != client.cluster_id


def _leader_hint(client: ReplicaContext) -> tuple[int, int, Any]:
    leader_id = client.quorum.leader_id
    address = client.local_address() if client.quorum.is_leader() else (
        client.quorum.state.leader_address if isinstance(client.quorum.state, FollowerState) else None)
    return leader_id, client.epoch, client.leader_address(leader_id, address) if leader_id >= 0 else None


# -- Vote -------------------------------------------------------------------------------

def handle_vote(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    part = rm.only_partition(request)
    if wrong_cluster(client, request) or part is None:
        error = E.inconsistent_cluster_id if part is not None else E.invalid_request
        client.respond(token, rm.vote_response(E.none, -1, client.epoch, False, top_error=error))
        return
    # Kafka's order (KafkaRaftClient.handleVoteRequest): sanity, then the epoch (a higher one is
    # taken, even when the vote is refused), and only then whether the request was meant for us.
    candidate = ReplicaKey(part.replica_id, part.replica_directory_id)
    epoch = part.replica_epoch
    # A candidate runs in an epoch past its log's last one; a prospective asks in its current
    # epoch, which its log may have reached.
    beyond = part.last_offset_epoch > epoch if part.pre_vote else part.last_offset_epoch >= epoch
    if part.last_offset < 0 or part.last_offset_epoch < 0 or beyond:
        client.respond(token, _vote_answer(client, E.invalid_request, False))  # Kafka's sanity rule
        return
    if epoch < client.epoch:
        client.respond(token, _vote_answer(client, E.fenced_leader_epoch, False))
        return
    if candidate.node_id < 0:
        client.respond(token, _vote_answer(client, E.invalid_request, False))
        return
    if epoch > client.epoch:
        # Pre-votes too, as Kafka does: a pre-vote carries its sender's current epoch, one the
        # quorum has already reached, so taking it inflates nothing; and the answer then carries
        # the sender's epoch, the only one it counts.
        client.quorum.to_unattached(epoch, client.election_deadline_ms(now_ms))
    if not _meant_for_us(client, request.voter_id, part.voter_directory_id):
        client.respond(token, _vote_answer(client, E.invalid_voter_key, False))
        return
    up_to_date = client.is_log_up_to_date(part.last_offset, part.last_offset_epoch)
    if part.pre_vote:
        state = client.quorum.state
        if isinstance(state, ProspectiveState):
            # It asks for pre-votes, so it no longer hears from a leader: whatever it told us
            # before is stale. Ask it again (otherwise two prospectives can stall each other).
            state.rejected.discard(candidate.node_id)
            state.asked_us.add(candidate.node_id)
        # No vote is recorded and the role stays (past the epoch taken above): a pre-vote binds no one.
        granted = up_to_date and _may_pre_vote(client, now_ms) and \
            not _loses_tie(client, candidate, part.last_offset, part.last_offset_epoch)
        client.respond(token, _vote_answer(client, E.none, granted))
        return
    state = client.quorum.state
    voted = client.quorum.voted_key
    granted = (up_to_date and isinstance(state, (UnattachedState, ProspectiveState))
               and (voted is None or voted == candidate))
    if granted:
        client.quorum.to_voted(epoch, candidate, client.election_deadline_ms(now_ms))
    client.respond(token, _vote_answer(client, E.none, granted))


def _meant_for_us(client: ReplicaContext, voter_id: int, voter_directory_id: Any) -> bool:
    """Kafka's isValidVoterKey: no voter id (an older request version) names nobody in particular."""
    if voter_id < 0:
        return True
    local = client.local
    return voter_id == local.node_id and (voter_directory_id is None or local.directory_id is None
                                          or voter_directory_id == local.directory_id)


def _may_pre_vote(client: ReplicaContext, now_ms: int) -> bool:
    """KIP-996 as Kafka grants it: never as leader; as follower only if the leader has not
    answered a fetch within fetch.timeout.ms (Kafka's follower: not once, but one whose fetch
    timed out is no follower any more); in any other role, a vote given in this epoch included,
    whenever the log is up to date, since a pre-vote promises nothing."""
    state = client.quorum.state
    if isinstance(state, LeaderState):
        return False
    if isinstance(state, FollowerState):
        return state.last_fetch_ok_ms is None or now_ms - state.last_fetch_ok_ms >= client.config.fetch_timeout_ms
    return True


def _loses_tie(client: ReplicaContext, candidate: ReplicaKey, last_offset: int, last_epoch: int) -> bool:
    """Two prospective voters with equal logs would pre-vote each other into a split vote (both
    candidates in the same epoch, each voting for itself). The lower id wins the tie; pre-votes
    only steer liveness, so safety is untouched."""
    if not isinstance(client.quorum.state, ProspectiveState):
        return False
    return (last_offset, last_epoch) == client.last_fetched() and candidate.node_id > client.local.node_id


def _vote_answer(client: ReplicaContext, error: ErrorCode, granted: bool) -> Any:
    leader_id, epoch, address = _leader_hint(client)
    return rm.vote_response(error, leader_id, epoch, granted, address)


# -- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------------

def _listener_address(client: ReplicaContext, endpoints: Any) -> Any:
    for endpoint in endpoints or ():
        if endpoint.name == client.config.listener_name:
            return endpoint.host, int(endpoint.port)
    return None


def handle_begin_epoch(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    part = rm.only_partition(request)
    if wrong_cluster(client, request) or part is None:
        error = E.inconsistent_cluster_id if part is not None else E.invalid_request
        client.respond(token, rm.begin_epoch_response(E.none, -1, client.epoch, top_error=error))
        return
    if part.leader_epoch < client.epoch:
        leader_id, epoch, address = _leader_hint(client)
        client.respond(token, rm.begin_epoch_response(E.fenced_leader_epoch, leader_id, epoch, address))
        return
    address = _listener_address(client, request.leader_endpoints) or client.leader_address(part.leader_id)
    accepted = client.become_follower(now_ms, part.leader_epoch, part.leader_id, address)
    leader_id, epoch, address = _leader_hint(client)
    # A second leader for an epoch that has one is impossible: refuse it, change nothing.
    client.respond(token, rm.begin_epoch_response(E.none if accepted else E.invalid_request, leader_id, epoch,
                                                  address))


def handle_end_epoch(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    part = rm.only_partition(request)
    if wrong_cluster(client, request) or part is None:
        error = E.inconsistent_cluster_id if part is not None else E.invalid_request
        client.respond(token, rm.end_epoch_response(E.none, -1, client.epoch, top_error=error))
        return
    if part.leader_epoch < client.epoch:
        leader_id, epoch, address = _leader_hint(client)
        client.respond(token, rm.end_epoch_response(E.fenced_leader_epoch, leader_id, epoch, address))
        return
    if part.leader_epoch > client.epoch:
        # A leader we had not heard of is resigning: follow it first, as Kafka does.
        address = _listener_address(client, request.leader_endpoints) or client.leader_address(part.leader_id)
        client.become_follower(now_ms, part.leader_epoch, part.leader_id, address)
    state = client.quorum.state
    if isinstance(state, FollowerState) and state.leader_id == part.leader_id:
        # The leader is leaving: the successor it named first campaigns at once, the rest in turn.
        successors = [ReplicaKey(c.candidate_id, c.candidate_directory_id) for c in part.preferred_candidates]
        mine = [i for i, k in enumerate(successors) if k.node_id == client.local.node_id and
                (k.directory_id is None or k.directory_id == client.local.directory_id)]
        position = mine[0] if mine else -1
        state.fetch_deadline_ms = now_ms + client.strict_backoff_ms(position, len(successors))
        state.last_fetch_ok_ms = None
    leader_id, epoch, address = _leader_hint(client)
    client.respond(token, rm.end_epoch_response(E.none, leader_id, epoch, address))


# -- Fetch -----------------------------------------------------------------------------------

def handle_fetch(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    answer_fetch(client, now_ms, token, request, park=True)


def _fetch_error(client: ReplicaContext, token: object, error: ErrorCode, top: ErrorCode = E.none) -> None:
    """Kafka's buildEmptyFetchResponse: no records, high watermark -1 (not told), the log start."""
    leader_id, epoch, address = _leader_hint(client)
    client.respond(token, rm.fetch_response(error, leader_id=leader_id, epoch=epoch, high_watermark=-1,
                                            log_start_offset=client.log.start_offset, leader_address=address,
                                            top_error=top))


def fetch_sanity_error(request: Any, part: Any) -> ErrorCode | None:
    """Kafka's handleFetchRequest checks these before anything else, leader or not: a negative
    MaxWaitMs, a negative fetch offset, a negative last fetched epoch, or one above the epoch the
    fetcher itself names (CurrentLeaderEpoch, not ours) is INVALID_REQUEST."""
    if (request.max_wait.total_seconds() < 0 or part.fetch_offset < 0 or part.last_fetched_epoch < 0
            or part.last_fetched_epoch > part.current_leader_epoch):
        return E.invalid_request
    return None


def leader_only_error(client: ReplicaContext, request_epoch: int) -> ErrorCode | None:
    """Kafka's validateLeaderOnlyRequest, in its order: an epoch behind ours is fenced, one ahead
    unknown, and only then does it matter that this replica does not lead."""
    if request_epoch < client.epoch:
        return E.fenced_leader_epoch
    if request_epoch > client.epoch:
        return E.unknown_leader_epoch
    if not client.quorum.is_leader():
        return E.not_leader_or_follower
    return None


def answer_fetch(client: ReplicaContext, now_ms: int, token: object, request: Any, park: bool) -> None:
    part = rm.only_partition(request)
    if wrong_cluster(client, request) or part is None:
        _fetch_error(client, token, E.none, E.inconsistent_cluster_id if part is not None else E.invalid_request)
        return
    error = fetch_sanity_error(request, part)
    if error is None:
        error = leader_only_error(client, part.current_leader_epoch)
    if error is not None:
        _fetch_error(client, token, error)  # nothing recorded
        return
    leader = client.quorum.state
    assert isinstance(leader, LeaderState)
    replica = ReplicaKey(request.replica_state.replica_id, part.replica_directory_id)
    fetch_offset, last_epoch = part.fetch_offset, part.last_fetched_epoch
    kind, answer = fetch_position(client.log, fetch_offset, last_epoch)
    if kind == "snapshot":
        _respond_fetch(client, token, leader, snapshot=answer)
        return
    if kind == "diverging":
        _respond_fetch(client, token, leader, diverging=answer)
        return
    if fetch_offset > client.log.end_offset:
        _fetch_error(client, token, E.offset_out_of_range)
        return
    # A replica id below 0 is no replica (live attach, a tool): it reads, but is not tracked as an
    # observer nor counted anywhere (Kafka's LeaderState.updateReplicaState ignores it too).
    if replica.node_id >= 0 and leader.update_replica(replica, fetch_offset, now_ms, client.log.end_offset):
        client.on_high_watermark(leader.high_watermark, now_ms)
        client.complete_parked_fetches(now_ms, force=False)
    progress = leader.progress_of(replica)
    if park and request.max_wait.total_seconds() > 0 and not fetch_has_news(client, request):
        # Long poll: hold the fetch until there is data or a newer high watermark for it (the one
        # now is kept: a fetcher with no progress here, replica id -1, is told of every move too).
        client.parked_fetches.append((token, request, now_ms + int(request.max_wait.total_seconds() * 1000),
                                      leader.high_watermark))
        return
    # The request's MaxBytes, as Kafka's leader reads it: Kafka's fetchers leave PartitionMaxBytes at 0.
    max_bytes = min(int(request.max_bytes), MAX_FETCH_SIZE_BYTES)
    if progress is not None:
        progress.sent_high_watermark = leader.high_watermark if leader.high_watermark is not None else -1
    _respond_fetch(client, token, leader, records=client.log.read(fetch_offset, max_bytes))


def complete_parked_fetches(client: ReplicaContext, now_ms: int, force: bool) -> None:
    """Answer the parked fetches that have news or whose wait is over (all of them with ``force``:
    this replica no longer leads, they are answered as such)."""
    parked, client.parked_fetches = client.parked_fetches, []
    for entry in parked:
        token, request, deadline_ms, parked_hw = entry
        if force:  # Kafka completes its fetch purgatory exceptionally: NOT_LEADER_OR_FOLLOWER
            _serve(client, token, request, lambda: _fetch_error(client, token, E.not_leader_or_follower))
        elif now_ms >= deadline_ms or fetch_has_news(client, request, parked_hw):
            _serve(client, token, request, lambda: answer_fetch(client, now_ms, token, request, park=False))
        else:
            client.parked_fetches.append(entry)


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


def snapshot_at_start(log: Any) -> SnapshotId | None:
    """Kafka's ReplicatedLog.earliestSnapshotId: the oldest snapshot, which Kafka's log keeps at
    its start (a later start drops the snapshots below it). Our logs start at their latest
    snapshot and may still hold an older one below it (the format's 0-0 checkpoint beside
    segments kept from 0): that one is not where the log starts, so the latest stands for it."""
    earliest = log.earliest_snapshot_id()
    if earliest is not None and earliest.end_offset >= log.start_offset:
        return earliest
    return log.latest_snapshot_id()


def fetch_position(log: Any, fetch_offset: int, last_epoch: int) -> tuple[str, tuple[int, int] | None]:
    """Where a fetch at (``fetch_offset``, ``last_epoch``) stands against ``log``, as Kafka 4.1's
    leader decides it (KafkaRaftClient.tryCompleteFetchRequest, then
    ReplicatedLog.validateOffsetAndEpoch): ("valid", None), ("snapshot", (end offset, epoch)) of
    the latest snapshot, or ("diverging", (end offset, epoch)) to truncate to.

    * A fetch at offset 0 is sent the latest snapshot as soon as there is one other than the
      format's 0-0 checkpoint: an empty log is caught up faster from it than from the log.
    * Else a log that starts at 0 is read from 0; a fetch before the log start, at it with an
      epoch other than the earliest snapshot's, or on an epoch older than that snapshot's, gets
      the latest snapshot. Kafka's earliest snapshot is the one at the log start (older ones go
      when its start moves on): see snapshot_at_start.
    * Else the fetcher's epoch must end at or after ``fetch_offset`` in our log, or it diverges
      where our copy of that epoch ends."""
    latest = log.latest_snapshot_id()
    if fetch_offset == 0 and latest is not None and latest != BOOTSTRAP_SNAPSHOT_ID:
        return "snapshot", (latest.end_offset, latest.epoch)
    start = log.start_offset
    if start == 0 and fetch_offset == 0:
        return "valid", None
    earliest = snapshot_at_start(log)
    if earliest is not None and (fetch_offset < start or (fetch_offset == start and last_epoch != earliest.epoch)
                                 or last_epoch < earliest.epoch):
        assert latest is not None
        return "snapshot", (latest.end_offset, latest.epoch)
    end = log.end_offset_for_epoch(last_epoch)
    if end.epoch != last_epoch or end.offset < fetch_offset:
        if end.epoch == UNDEFINED_EPOCH:
            # Older than every epoch we have: it ends where our first epoch starts (Kafka's
            # leader epoch cache answers the same).
            end = OffsetAndEpoch(start, last_epoch)
        return "diverging", (end.offset, end.epoch)
    return "valid", None


def fetch_has_news(client: ReplicaContext, request: Any, parked_hw: int | None = None) -> bool:
    """New records past the fetch offset, or a high watermark the fetcher has not been told: for a
    tracked replica, the last one sent to it; for any fetcher, a move since its fetch was parked
    (``parked_hw``), as Kafka's leader completes every parked fetch when its high watermark moves,
    or one newer than the fetcher said it knows (Fetch v18)."""
    part = rm.only_partition(request)
    leader = client.quorum.state
    if part is None or not isinstance(leader, LeaderState):
        return True
    if part.fetch_offset < client.log.end_offset:
        return True
    if parked_hw is not None and leader.high_watermark != parked_hw:
        return True
    hw = leader.high_watermark if leader.high_watermark is not None else -1
    # KIP-1166 (Fetch v18): a fetcher that says it knows an older high watermark is answered at
    # once (Kafka's isHighWatermarkUpdated); -1 is "unknown", 2**63-1 "not supported" (v17 and older)
    if getattr(part, "high_watermark", rm.HIGH_WATERMARK_NOT_SUPPORTED) < hw:
        return True
    progress = leader.progress_of(ReplicaKey(request.replica_state.replica_id, part.replica_directory_id))
    return progress is not None and progress.sent_high_watermark != hw


def _respond_fetch(client: ReplicaContext, token: object, leader: LeaderState, *, records: bytes = b"",
                   diverging: tuple[int, int] | None = None, snapshot: tuple[int, int] | None = None) -> None:
    hw = leader.high_watermark if leader.high_watermark is not None else -1
    client.respond(token, rm.fetch_response(
        E.none, leader_id=client.local.node_id, epoch=leader.epoch, high_watermark=hw, records=records,
        log_start_offset=client.log.start_offset, diverging=diverging, snapshot=snapshot,
        leader_address=client.local_address()))


# -- FetchSnapshot ----------------------------------------------------------------------------

def handle_fetch_snapshot(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    part = rm.only_partition(request)
    leader_id, epoch, address = _leader_hint(client)

    def answer(error: ErrorCode, top: ErrorCode = E.none, **kw: Any) -> None:
        client.respond(token, rm.fetch_snapshot_response(error, leader_id=leader_id, epoch=epoch,
                                                         leader_address=address, top_error=top, **kw))

    if wrong_cluster(client, request) or part is None:
        answer(E.none, E.inconsistent_cluster_id if part is not None else E.invalid_request)
        return
    error = leader_only_error(client, part.current_leader_epoch)
    if error is not None:
        answer(error)
        return
    snapshot_id = SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch)
    try:
        size = client.log.snapshot_size(snapshot_id)
    except MetadataError:
        answer(E.snapshot_not_found)
        return
    if not 0 <= part.position < max(size, 1):
        answer(E.position_out_of_range if hasattr(E, "position_out_of_range") else E.invalid_request)
        return
    # Downloading a snapshot is following: it keeps the leader's check-quorum timer alive.
    client.quorum.state.note_contact(ReplicaKey(request.replica_id, part.replica_directory_id), now_ms)
    max_bytes = min(int(request.max_bytes), client.config.snapshot_chunk_bytes)
    data = client.log.read_snapshot_chunk(snapshot_id, part.position, max_bytes)
    answer(E.none, snapshot_id=(snapshot_id.end_offset, snapshot_id.epoch), size=size, position=part.position,
           data=data)


# -- DescribeQuorum ----------------------------------------------------------------------------

def handle_describe_quorum(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    client.respond(token, describe_quorum_response(client, now_ms, request))
