"""Responses to our own requests, and what their failure means.

Every response first goes through the epoch rule (Kafka's maybeHandleCommonResponse):
a higher epoch, or a leader we did not know of in ours, moves us to follow it (or to
unattached when no leader is named) before the response itself is looked at.
"""

from __future__ import annotations

from typing import Any

from engine.common.errors import MetadataError
from engine.records.kio_codec import ErrorCode
from engine.raft import raft_messages as rm
from engine.raft import voter_changes
from engine.raft.quorum_state import CandidateState, FollowerState, ProspectiveState, ResignedState, UnattachedState
from engine.raft.raft_io import InboundResponse, InFlight
from engine.raft.replica_context import ReplicaContext
from engine.storage.snapshot_writer import SnapshotId

E = ErrorCode


def handle_response(client: ReplicaContext, now_ms: int, flight: InFlight, message: InboundResponse) -> None:
    node_id = flight.destination.node_id
    if message.response is None:
        # Network failure or timeout: try again after the retry backoff.
        client.back_off(node_id, flight.api, now_ms)
        return
    handler = {
        "vote": _vote, "begin_quorum_epoch": _begin_epoch, "end_quorum_epoch": _end_epoch, "fetch": _fetch,
        "fetch_snapshot": _fetch_snapshot, "add_raft_voter": voter_changes.handle_add_voter_response,
        "remove_raft_voter": voter_changes.handle_remove_voter_response,
        "update_raft_voter": voter_changes.handle_update_voter_response,
    }[flight.api]
    handler(client, now_ms, flight, message.response)


def _node_address(response: Any, leader_id: int) -> Any:
    for endpoint in getattr(response, "node_endpoints", ()) or ():
        if endpoint.node_id == leader_id:
            return endpoint.host, int(endpoint.port)
    return None


def maybe_handle_epoch(client: ReplicaContext, now_ms: int, leader_id: int, epoch: int, response: Any) -> bool:
    """Apply what a response says about the leader and epoch; True if the caller should stop."""
    if epoch < client.epoch or epoch < 0:
        return epoch < client.epoch
    address = client.leader_address(leader_id, _node_address(response, leader_id)) if leader_id >= 0 else None
    if epoch > client.epoch:
        if leader_id >= 0:
            client.become_follower(now_ms, epoch, leader_id, address)
        else:
            client.quorum.to_unattached(epoch, client.election_deadline_ms(now_ms))
        return True
    state = client.quorum.state
    if isinstance(state, ProspectiveState) and leader_id == state.leader_id:
        return False  # the leader we stopped hearing from: others still naming it is no news
    if leader_id >= 0 and leader_id != client.local.node_id and isinstance(
            state, (UnattachedState, ProspectiveState, CandidateState)):
        client.become_follower(now_ms, epoch, leader_id, address)
        return True
    return False


def _vote(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    part = rm.only_partition(response)
    node_id = flight.destination.node_id
    if response.error_code != E.none or part is None:
        client.back_off(node_id, "vote", now_ms, client.config.election_backoff_max_ms)
        return
    kind, epoch = flight.context
    # An answer from an older epoch is stale, pre-vote or not: a voter behind us takes our epoch
    # on reading the request, so its answer to this one carries ours.
    if maybe_handle_epoch(client, now_ms, part.leader_id, part.leader_epoch, response):
        return
    state = client.quorum.state
    if part.error_code != E.none:
        client.back_off(node_id, "vote", now_ms)
        return
    if kind == "pre" and isinstance(state, ProspectiveState) and state.epoch == epoch:
        if not part.vote_granted and node_id in state.asked_us:
            # It has asked us for a pre-vote since: its refusal may predate that (messages
            # cross). Ask again shortly instead of counting it.
            client.back_off(node_id, "vote", now_ms)
            return
        (state.granted if part.vote_granted else state.rejected).add(node_id)
    elif kind == "vote" and isinstance(state, CandidateState) and state.epoch == epoch:
        (state.granted if part.vote_granted else state.rejected).add(node_id)


def _begin_epoch(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    part = rm.only_partition(response)
    node_id = flight.destination.node_id
    if part is None or response.error_code != E.none:
        client.back_off(node_id, "begin_quorum_epoch", now_ms)
        return
    if maybe_handle_epoch(client, now_ms, part.leader_id, part.leader_epoch, response):
        return
    # Acknowledged: wait for its fetches rather than repeat ourselves, unless they do not come.
    client.back_off(node_id, "begin_quorum_epoch", now_ms, client.config.fetch_timeout_ms // 2)


def _end_epoch(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    part = rm.only_partition(response)
    node_id = flight.destination.node_id
    if part is None or response.error_code != E.none:
        client.back_off(node_id, "end_quorum_epoch", now_ms)
        return
    if maybe_handle_epoch(client, now_ms, part.leader_id, part.leader_epoch, response):
        return
    state = client.quorum.state
    if isinstance(state, ResignedState):
        state.unacked.discard(node_id)


def _fetch(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    part = rm.only_partition(response)
    node_id = flight.destination.node_id
    if part is None or response.error_code != E.none:
        client.back_off(node_id, "fetch", now_ms)
        return
    leader = part.current_leader
    handled = maybe_handle_epoch(client, now_ms, leader.leader_id, leader.leader_epoch, response)
    state = client.quorum.state
    if node_id < 0 and not isinstance(state, FollowerState):
        # A bootstrap server that named no leader to follow (an election is on, or it is behind
        # us): ask again after retry.backoff.ms, not at once in a loop.
        client.back_off(node_id, "fetch", now_ms)
    if handled or not isinstance(state, FollowerState) or state.leader_id != node_id:
        return
    if part.error_code != E.none:
        client.back_off(node_id, "fetch", now_ms)
        return
    state.fetch_deadline_ms = now_ms + client.config.fetch_timeout_ms
    state.last_fetch_ok_ms = now_ms
    if part.diverging_epoch.epoch >= 0:
        if not _truncate_to_leader(client, part.diverging_epoch.end_offset, part.diverging_epoch.epoch):
            client.back_off(node_id, "fetch", now_ms)
        return
    if part.snapshot_id.end_offset >= 0:
        state.snapshot_download = ((part.snapshot_id.end_offset, part.snapshot_id.epoch), 0)
        client.log.begin_snapshot_download(SnapshotId(part.snapshot_id.end_offset, part.snapshot_id.epoch))
        return
    records = rm.fetched_records(part)
    if part.records:
        start = client.log.end_offset
        try:
            client.log.append_as_follower(records)
        except MetadataError:
            client.back_off(node_id, "fetch", now_ms)  # a bad batch: fetch it again
        client.log.flush()  # our next fetch offset acknowledges these: durable first
        if client.log.end_offset > start:
            client.control.observe(client.log.batches(start))
        else:  # nothing appended (a refused or only a torn batch): not again at once
            client.back_off(node_id, "fetch", now_ms)
    if part.high_watermark >= 0:
        client.on_high_watermark(min(part.high_watermark, client.log.end_offset), now_ms)


def _truncate_to_leader(client: ReplicaContext, leader_end_offset: int, leader_epoch: int) -> bool:
    """Our log diverged: cut it back to where it last agrees with the leader's epoch history.
    Never below our high watermark (committed entries): such an answer is refused (False)."""
    # Our end of that epoch (or of the last epoch before it), never past the leader's end of it.
    local = client.log.end_offset_for_epoch(leader_epoch)
    target = max(min(leader_end_offset, local.offset), client.log.start_offset)
    if client.high_watermark is not None and target < client.high_watermark:
        return False
    new_end = client.log.truncate_to(target)
    client.control.truncate_from(new_end)
    return True


def _fetch_snapshot(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    node_id = flight.destination.node_id
    part = rm.only_partition(response)
    if part is None or response.error_code != E.none:
        client.back_off(node_id, "fetch_snapshot", now_ms)
        return
    leader = part.current_leader
    if maybe_handle_epoch(client, now_ms, leader.leader_id, leader.leader_epoch, response):
        return
    state = client.quorum.state
    if not isinstance(state, FollowerState) or state.snapshot_download is None:
        return
    if part.error_code != E.none:
        state.snapshot_download = None  # e.g. the snapshot went: fetch again and be told the new one
        client.back_off(node_id, "fetch", now_ms)
        return
    (end_offset, epoch), position = state.snapshot_download
    snapshot_id = SnapshotId(end_offset, epoch)
    if (part.snapshot_id.end_offset, part.snapshot_id.epoch) != (end_offset, epoch) or part.position != position:
        client.back_off(node_id, "fetch_snapshot", now_ms)
        return
    state.fetch_deadline_ms = now_ms + client.config.fetch_timeout_ms
    state.last_fetch_ok_ms = now_ms
    data = bytes(part.unaligned_records or b"")
    client.log.append_snapshot_chunk(snapshot_id, position, data)
    position += len(data)
    if position < part.size:
        state.snapshot_download = ((end_offset, epoch), position)
        return
    state.snapshot_download = None
    try:
        client.log.complete_snapshot_download(snapshot_id)
    except MetadataError:
        client.back_off(node_id, "fetch", now_ms)
        return
    client.control.reset()
    client.control.observe(client.log.read_snapshot(snapshot_id), snapshot_end_offset=end_offset)
    client.on_high_watermark(end_offset, now_ms)
