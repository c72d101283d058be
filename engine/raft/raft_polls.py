"""What each role does when ``poll`` runs: timers fire, requests go out.

One function per role, like Kafka's ``pollLeader``/``pollCandidate``/...; each may
change the role through QuorumState, which persists first.
"""

from __future__ import annotations

import logging

from engine.raft import raft_messages as rm
from engine.raft import voter_changes
from engine.raft.leader_state import LeaderState
from engine.raft.quorum_state import (
    MAX_EPOCH, CandidateState, FollowerState, ProspectiveState, ResignedState, UnattachedState,
)
from engine.raft.raft_io import BOOTSTRAP_NODE_ID, Destination
from engine.raft.replica_context import ReplicaContext

log = logging.getLogger("engine.raft.polls")


def poll_state(client: ReplicaContext, now_ms: int) -> None:
    # A role change inside a poll is followed by one poll of the new role, so that its
    # first requests go out at once.
    for _ in range(3):
        state = client.quorum.state
        _POLLS[type(state)](client, now_ms)
        if client.quorum.state is state:
            return


def state_deadline_ms(client: ReplicaContext, now_ms: int) -> int:
    state = client.quorum.state
    if isinstance(state, LeaderState):
        return state.check_quorum_deadline_ms
    if isinstance(state, FollowerState):
        return state.fetch_deadline_ms
    if isinstance(state, CandidateState) and state.backoff_until_ms is not None:
        return state.backoff_until_ms
    return state.election_deadline_ms


# -- leader -----------------------------------------------------------------------------

def poll_leader(client: ReplicaContext, now_ms: int) -> None:
    leader: LeaderState = client.quorum.state
    client.election_retries = 0
    if client.pending_since_ms is not None and now_ms >= client.pending_since_ms + client.config.append_linger_ms:
        client.drain_appends(now_ms)
    client.complete_parked_fetches(now_ms, force=False)
    if not leader.check_quorum(now_ms):
        client.become_resigned(now_ms)
        return
    voter_changes.poll_leader(client, now_ms)
    if client.quorum.state is not leader:
        return
    # BeginQuorumEpoch to voters that have not fetched lately, as Kafka repeats it: a voter whose
    # epoch ran ahead never fetches from us, and its answer tells us to step down.
    quiet_since_ms = now_ms - client.config.fetch_timeout_ms // 2
    quiet = {p.key.node_id for p in leader.progress.values()
             if p.key.node_id != client.local.node_id and p.last_fetch_ms < quiet_since_ms}
    for node_id in sorted(leader.unacked_voters | quiet):
        destination = client.voter_destination(node_id)
        if destination is not None and client.can_send(node_id, "begin_quorum_epoch", now_ms):
            voter = client.control.latest_voters().node(node_id).key
            client.send("begin_quorum_epoch", destination, rm.begin_epoch_request(
                client.cluster_id, client.local.node_id, leader.epoch, voter, client.endpoints), now_ms)


# -- resigned ---------------------------------------------------------------------------------

def poll_resigned(client: ReplicaContext, now_ms: int) -> None:
    state: ResignedState = client.quorum.state
    if now_ms >= state.election_deadline_ms:
        _start_election_or_wait(client, now_ms)
        return
    for node_id in sorted(state.unacked):
        destination = client.voter_destination(node_id)
        if destination is not None and client.can_send(node_id, "end_quorum_epoch", now_ms):
            client.send("end_quorum_epoch", destination, rm.end_epoch_request(
                client.cluster_id, client.local.node_id, state.epoch, state.preferred_successors,
                client.endpoints), now_ms)


# -- elections ----------------------------------------------------------------------------

def _start_election_or_wait(client: ReplicaContext, now_ms: int) -> None:
    """A voter whose timer ran out asks for pre-votes; an observer goes looking for a leader."""
    if client.is_voter():
        client.quorum.to_prospective(client.election_deadline_ms(now_ms))
    else:
        client.quorum.to_unattached(client.epoch, client.election_deadline_ms(now_ms))


def poll_unattached(client: ReplicaContext, now_ms: int) -> None:
    state: UnattachedState = client.quorum.state
    if client.is_voter():
        if now_ms >= state.election_deadline_ms:
            _start_election_or_wait(client, now_ms)
        return
    if now_ms >= state.election_deadline_ms:
        state.election_deadline_ms = now_ms + client.config.election_timeout_ms  # nothing to time out
    _observer_discover_leader(client, now_ms, state)


def _observer_discover_leader(client: ReplicaContext, now_ms: int, state) -> None:
    """Observers fetch from a bootstrap server; its answer names the leader."""
    if any(f.api == "fetch" for f in client.inflight.values()):
        return
    if not client.can_send(BOOTSTRAP_NODE_ID, "fetch", now_ms):
        return
    destination = client.bootstrap_destination()
    if destination is None:
        return
    end, epoch = client.last_fetched()
    client.send("fetch", destination, rm.fetch_request(
        client.cluster_id, client.local, state.epoch, end, epoch, 0, client.config.fetch_max_bytes), now_ms)


def poll_prospective(client: ReplicaContext, now_ms: int) -> None:
    state: ProspectiveState = client.quorum.state
    voters = client.control.latest_voters()
    if not voters.is_voter(client.local):
        client.quorum.to_unattached(state.epoch, client.election_deadline_ms(now_ms))
        return
    if state.epoch >= MAX_EPOCH:
        no_epoch_left(client, now_ms)
        return
    state.granted.add(client.local.node_id)
    if state.is_vote_granted(voters):
        client.quorum.to_candidate(client.election_deadline_ms(now_ms))
        return
    if now_ms >= state.election_deadline_ms or state.is_vote_rejected(voters):
        prospective_failed(client, now_ms)
        return
    _ask_for_votes(client, state, voters, now_ms, pre_vote=True)


def no_epoch_left(client: ReplicaContext, now_ms: int) -> None:
    """A prospective in the last epoch an int32 holds (reached only by a peer's say-so, a forged
    request's included) cannot run: it waits, unattached, for a leader of that epoch to speak up.
    Kafka 4.1.2 would wrap to a negative epoch; refusing keeps every epoch we write valid."""
    state: ProspectiveState = client.quorum.state
    if client.exhausted_epoch_logged != state.epoch:
        client.exhausted_epoch_logged = state.epoch
        log.error("node %d: epoch %d is the last one: no election can follow it, waiting for its leader",
                  client.local.node_id, state.epoch)
    client.quorum.to_unattached(state.epoch, client.election_deadline_ms(now_ms))


def prospective_failed(client: ReplicaContext, now_ms: int) -> None:
    """No pre-vote majority: go back to the leader we knew, or wait and try again."""
    state: ProspectiveState = client.quorum.state
    if state.leader_id >= 0:
        client.quorum.to_follower(state.epoch, state.leader_id,
                                  client.leader_address(state.leader_id, state.leader_address),
                                  now_ms + client.config.fetch_timeout_ms)
        return
    client.election_retries += 1
    client.quorum.to_unattached(state.epoch, now_ms + client.election_backoff_ms(client.election_retries))


def poll_candidate(client: ReplicaContext, now_ms: int) -> None:
    state: CandidateState = client.quorum.state
    voters = client.control.latest_voters()
    if state.backoff_until_ms is not None:
        if now_ms >= state.backoff_until_ms:
            client.quorum.to_prospective(client.election_deadline_ms(now_ms))
        return
    if state.is_vote_granted(voters):
        client.become_leader(now_ms)
        return
    if now_ms >= state.election_deadline_ms or state.is_vote_rejected(voters):
        # Lost: back off (binary exponential, as Kafka's CandidateState did before KIP-996), then
        # pre-vote again. Kafka 4.1 sits out the rest of its election timeout instead; the backoff
        # starts the next round sooner, and safety does not depend on either.
        client.election_retries += 1
        state.backoff_until_ms = now_ms + client.election_backoff_ms(client.election_retries)
        return
    _ask_for_votes(client, state, voters, now_ms, pre_vote=False)


def _ask_for_votes(client: ReplicaContext, state, voters, now_ms: int, *, pre_vote: bool) -> None:
    """Vote (or PreVote) requests to every voter that has not answered yet.

    Both carry the sender's current epoch, as Kafka's do: a candidate has already moved to the
    epoch it runs for, a prospective has not (KIP-996). A pre-vote for epoch + 1 would make every
    receiver behind it take that epoch, so that failed pre-votes would still inflate epochs.
    """
    end, last_epoch = client.last_fetched()
    epoch = state.epoch
    for node in voters.voters:
        node_id = node.key.node_id
        if node_id in state.granted or node_id in state.rejected:
            continue
        destination = client.voter_destination(node_id)
        if destination is not None and client.can_send(node_id, "vote", now_ms):
            client.send("vote", destination, rm.vote_request(client.cluster_id, client.local, epoch, node.key,
                                                             last_epoch, end, pre_vote), now_ms,
                        context=("pre" if pre_vote else "vote", state.epoch))


# -- follower ---------------------------------------------------------------------------------

def poll_follower(client: ReplicaContext, now_ms: int) -> None:
    state: FollowerState = client.quorum.state
    client.election_retries = 0
    if now_ms >= state.fetch_deadline_ms:
        if client.is_voter():
            _start_election_or_wait(client, now_ms)
        else:
            client.quorum.to_unattached(state.epoch, client.election_deadline_ms(now_ms))
        return
    if state.leader_address is None:
        state.leader_address = client.leader_address(state.leader_id)
    if state.leader_address is None:
        return
    destination = Destination(state.leader_id, state.leader_address)
    if state.snapshot_download is not None:
        if client.can_send(state.leader_id, "fetch_snapshot", now_ms):
            snapshot_id, position = state.snapshot_download
            client.send("fetch_snapshot", destination, rm.fetch_snapshot_request(
                client.cluster_id, client.local, state.epoch, snapshot_id, position,
                client.config.fetch_snapshot_max_bytes), now_ms)
        return
    if client.can_send(state.leader_id, "fetch", now_ms):
        end, last_epoch = client.last_fetched()
        client.send("fetch", destination, rm.fetch_request(
            client.cluster_id, client.local, state.epoch, end, last_epoch, client.config.fetch_max_wait_ms,
            client.config.fetch_max_bytes, client.log.start_offset), now_ms)
    voter_changes.poll_follower(client, now_ms)


_POLLS = {
    LeaderState: poll_leader,
    ResignedState: poll_resigned,
    UnattachedState: poll_unattached,
    ProspectiveState: poll_prospective,
    CandidateState: poll_candidate,
    FollowerState: poll_follower,
}
