"""Changing the voter set while the quorum runs (KIP-853).

One change at a time: a leader takes an AddRaftVoter, RemoveRaftVoter or
UpdateRaftVoter only when no VotersRecord is uncommitted. An added voter must first
catch up as an observer; the change is a VotersRecord appended as a control batch,
in force at once for the high watermark, answered once it commits. A leader that
removed itself resigns after the commit. Replicas ask for changes too: auto-join
(``controller.quorum.auto.join.enable``) and endpoint updates.
"""

from __future__ import annotations

from typing import Any

from engine.records.kio_codec import ErrorCode
from engine.records.metadata_record_serde import control_record
from engine.raft import raft_messages as rm
from engine.raft.leader_state import LeaderState, PendingVoterChange
from engine.raft.quorum_state import FollowerState
from engine.raft.raft_io import Destination, InFlight
from engine.raft.replica_context import ReplicaContext
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet

E = ErrorCode


def _refusal(client: ReplicaContext, request: Any) -> tuple[ErrorCode, str] | None:
    """The reason a leader cannot take a voter change now, or None."""
    if request.cluster_id is not None and request.cluster_id != client.cluster_id:
        return E.inconsistent_cluster_id, f"cluster id {request.cluster_id!r} is not this cluster's"
    leader = client.quorum.state
    if not isinstance(leader, LeaderState):
        return E.not_leader_or_follower, "this controller is not the leader"
    if client.control.kraft_version == 0:
        return E.unsupported_version, "kraft.version is 0: the voters are static (controller.quorum.voters)"
    if leader.high_watermark is None:
        return E.request_timed_out, "the leader has not committed an entry of its epoch yet"
    if leader.pending_change is not None or client.control.has_uncommitted_change(leader.high_watermark):
        return E.request_timed_out, "another voter change is still in progress"
    return None


def _endpoints(client: ReplicaContext, listeners: Any) -> tuple | None:
    endpoints = tuple((lst.name, (lst.host, int(lst.port))) for lst in listeners)
    return endpoints if any(name == client.config.listener_name for name, _ in endpoints) else None


def handle_add_voter(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    refusal = _refusal(client, request)
    key = ReplicaKey(request.voter_id, request.voter_directory_id)
    endpoints = _endpoints(client, request.listeners)
    if refusal is None and key.directory_id is None:
        refusal = E.invalid_request, "a new voter needs a directory id"
    if refusal is None and client.control.latest_voters().node(key.node_id) is not None:
        refusal = E.duplicate_voter, f"node {key.node_id} is already a voter"
    if refusal is None and endpoints is None:
        refusal = E.invalid_request, f"no endpoint for listener {client.config.listener_name}"
    if refusal is not None:
        client.respond(token, rm.add_voter_response(*refusal))
        return
    leader: LeaderState = client.quorum.state
    change = PendingVoterChange("add", key, token, deadline_ms=now_ms + int(request.timeout.total_seconds() * 1000))
    change.node = VoterNode(key, endpoints)
    change.ack_when_committed = getattr(request, "ack_when_committed", True)
    change.response = rm.add_voter_response(E.none)
    leader.pending_change = change
    poll_leader(client, now_ms)


def handle_remove_voter(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    refusal = _refusal(client, request)
    key = ReplicaKey(request.voter_id, request.voter_directory_id)
    voters = client.control.latest_voters()
    if refusal is None and not voters.is_voter(key):
        refusal = E.voter_not_found, f"{key} is not a voter"
    if refusal is None and len(voters.voters) == 1:
        refusal = E.invalid_request, "cannot remove the last voter"
    if refusal is not None:
        client.respond(token, rm.remove_voter_response(*refusal))
        return
    change = PendingVoterChange("remove", voters.node(key.node_id).key, token, deadline_ms=now_ms + 60_000)
    change.response = rm.remove_voter_response(E.none)
    _append_voters(client, now_ms, change, voters.without_voter(key))


def handle_update_voter(client: ReplicaContext, now_ms: int, token: object, request: Any) -> None:
    leader_id = client.quorum.leader_id
    address = client.local_address() if client.quorum.is_leader() else None

    def answer(error: ErrorCode) -> None:
        client.respond(token, rm.update_voter_response(error, leader_id, client.epoch, address))

    refusal = _refusal(client, request)
    if refusal is not None:
        answer(refusal[0])
        return
    if request.current_leader_epoch != client.epoch:
        answer(E.fenced_leader_epoch if request.current_leader_epoch < client.epoch else E.unknown_leader_epoch)
        return
    key = ReplicaKey(request.voter_id, request.voter_directory_id)
    voters = client.control.latest_voters()
    endpoints = _endpoints(client, request.listeners)
    if not voters.is_voter(key) or key.directory_id is None:
        answer(E.voter_not_found)
        return
    if endpoints is None:
        answer(E.invalid_request)
        return
    feature = request.k_raft_version_feature
    node = voters.node(key.node_id)
    if (node.endpoints, node.min_kraft_version, node.max_kraft_version) == (
            endpoints, feature.min_supported_version, feature.max_supported_version):
        answer(E.none)
        return
    change = PendingVoterChange("update", key, token, deadline_ms=now_ms + 60_000)
    change.response = rm.update_voter_response(E.none, leader_id, client.epoch, address)
    _append_voters(client, now_ms, change, voters.with_endpoints(
        key, endpoints, int(feature.min_supported_version), int(feature.max_supported_version)))


def _append_voters(client: ReplicaContext, now_ms: int, change: PendingVoterChange, voters: VoterSet) -> None:
    leader: LeaderState = client.quorum.state
    leader.pending_change = change
    record = control_record(voters.to_voters_record())
    change.offset = client.append_batch(leader.epoch, [record], now_ms, control=True)


def poll_leader(client: ReplicaContext, now_ms: int) -> None:
    leader: LeaderState = client.quorum.state
    change = leader.pending_change
    if change is not None and change.offset < 0:
        if now_ms >= change.deadline_ms:
            client.respond(change.token, rm.add_voter_response(
                E.request_timed_out, f"voter {change.key} did not catch up in time"))
            leader.pending_change = None
        elif leader.caught_up(change.key, now_ms, client.config.fetch_timeout_ms):
            _append_voters(client, now_ms, change, client.control.latest_voters().with_voter(change.node))
            if not change.ack_when_committed:
                client.respond(change.token, change.response)
                change.token = None
    # A leader that is no longer a voter (its removal committed) hands over.
    if client.quorum.state is leader and not leader.voters.is_voter(client.local) and \
            not client.control.has_uncommitted_change(leader.high_watermark):
        client.become_resigned(now_ms)


def on_commit(client: ReplicaContext, now_ms: int) -> None:
    """The high watermark moved: answer a voter change once its record is committed."""
    leader = client.quorum.state
    if not isinstance(leader, LeaderState) or leader.pending_change is None:
        return
    change = leader.pending_change
    if 0 <= change.offset < client.high_watermark:
        if change.token is not None:
            client.respond(change.token, change.response)
        leader.pending_change = None


def abandon(client: ReplicaContext, leader: LeaderState) -> None:
    change, leader.pending_change = leader.pending_change, None
    if change is None or change.token is None:
        return
    message = "the leader lost its leadership before the voter change committed"
    if change.kind == "add":
        client.respond(change.token, rm.add_voter_response(E.not_leader_or_follower, message))
    elif change.kind == "remove":
        client.respond(change.token, rm.remove_voter_response(E.not_leader_or_follower, message))
    else:
        client.respond(change.token, rm.update_voter_response(E.not_leader_or_follower, -1, client.epoch, None))


# -- what replicas ask for themselves ----------------------------------------------------

def poll_follower(client: ReplicaContext, now_ms: int) -> None:
    state: FollowerState = client.quorum.state
    if client.control.kraft_version == 0 or state.last_fetch_ok_ms is None or client.local.directory_id is None:
        return
    voters = client.control.latest_voters()
    if client.has_uncommitted_voter_change():
        return
    destination = client.voter_destination(state.leader_id)
    if destination is None and state.leader_address is not None:
        destination = Destination(state.leader_id, state.leader_address)
    if destination is None:
        return
    node = voters.node(client.local.node_id)
    if voters.is_voter(client.local):
        if node.endpoints != client.endpoints and client.updated_endpoints_epoch != state.epoch and \
                client.can_send(state.leader_id, "update_raft_voter", now_ms):
            client.send("update_raft_voter", destination, rm.update_voter_request(
                client.cluster_id, state.epoch, client.local, client.endpoints), now_ms)
        return
    if not client.config.auto_join_enable:
        return
    if node is not None and client.can_send(state.leader_id, "remove_raft_voter", now_ms):
        # Our id votes with another directory: a replaced disk. The old one goes first.
        client.send("remove_raft_voter", destination, rm.remove_voter_request(client.cluster_id, node.key), now_ms)
    elif node is None and client.can_send(state.leader_id, "add_raft_voter", now_ms):
        client.send("add_raft_voter", destination, rm.add_voter_request(
            client.cluster_id, client.local, client.endpoints, client.config.request_timeout_ms), now_ms)


def _after_answer(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    # Successful or not, the log will tell us the outcome: don't ask again for a while.
    client.back_off(flight.destination.node_id, flight.api, now_ms,
                    client.config.retry_backoff_ms if response.error_code == E.none else client.config.fetch_timeout_ms)


def handle_add_voter_response(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    _after_answer(client, now_ms, flight, response)


def handle_remove_voter_response(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    _after_answer(client, now_ms, flight, response)


def handle_update_voter_response(client: ReplicaContext, now_ms: int, flight: InFlight, response: Any) -> None:
    if response.error_code == E.none:
        client.updated_endpoints_epoch = client.epoch
    _after_answer(client, now_ms, flight, response)
