"""Leadership claims a voter cannot act on, and the last epoch an int32 holds.

Kafka 4.1.2 (KafkaRaftClient.validateVoterOnlyRequest) refuses a BeginQuorumEpoch,
EndQuorumEpoch or Vote only for an epoch from the past (FENCED_LEADER_EPOCH) or a negative
node id (INVALID_REQUEST); a leader outside the voter set is followed when its request says
where it listens. One that neither is a voter we know nor sent an endpoint makes Kafka's
transitionToFollower throw (its Raft thread then halts the process); ours refuses it with
INCONSISTENT_VOTER_SET and changes nothing. No epoch taken from a peer makes the core run for
an epoch past 2**31 - 1: it waits in that epoch, one line logged, instead of dying.
"""

from __future__ import annotations

import logging

import pytest

from engine.records.kio_codec import ErrorCode as E
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState, MemoryElectionStore
from engine.raft.quorum_state import MAX_EPOCH, IllegalTransition
from engine.raft.raft_client import Destination
from engine.raft.voter_set import ReplicaKey
from test_raft_client_rpcs import CID, Replica, addr, endpoints, part, vote

STRANGER = 99  # in no voter set


def _fingerprint(r: Replica) -> tuple:
    c = r.client
    return c.role, c.epoch, c.quorum.leader_id, r.store.writes, r.store.state, r.log.end_offset


def _in_role(role: str) -> Replica:
    r = Replica()
    if role == "follower":
        r.answer(10, rm.begin_epoch_request(CID, 2, 3, r.local, endpoints(2)))
    elif role == "leader":
        r.elect(0)
    assert r.client.role == role
    return r


@pytest.mark.parametrize("role", ["unattached", "follower", "leader"])
@pytest.mark.parametrize("epoch", [5, MAX_EPOCH])
def test_begin_epoch_from_an_unreachable_non_voter_is_refused(role: str, epoch: int) -> None:
    r = _in_role(role)
    before = _fingerprint(r)
    hint = (r.client.quorum.leader_id, r.client.epoch)
    response = r.answer(100, rm.begin_epoch_request(CID, STRANGER, epoch, r.local, ()))
    p = part(response)
    assert (response.error_code, p.error_code) == (E.none, E.inconsistent_voter_set)
    assert (p.leader_id, p.leader_epoch) == hint  # what we know, as any refusal answers
    assert _fingerprint(r) == before


def test_end_epoch_from_an_unreachable_non_voter_is_refused() -> None:
    r = _in_role("follower")
    before = _fingerprint(r)
    p = part(r.answer(100, rm.end_epoch_request(CID, STRANGER, 7, (r.local,), ())))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.inconsistent_voter_set, 2, 3)
    assert _fingerprint(r) == before


def test_a_non_voter_leader_that_says_where_it_listens_is_followed_as_kafka_does() -> None:
    # KIP-853: a leader elected by voters we have not learnt of yet is real; its endpoints come along
    r = _in_role("unattached")
    p = part(r.answer(100, rm.begin_epoch_request(CID, STRANGER, 4, r.local, endpoints(STRANGER))))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.none, STRANGER, 4)
    assert r.store.state == ElectionState(4, STRANGER, None)
    assert r.requests(r.ready, "FetchRequest")[0].destination == Destination(STRANGER, addr(STRANGER))


def test_a_voter_without_endpoints_in_the_request_is_followed_at_its_known_address() -> None:
    r = _in_role("unattached")
    p = part(r.answer(100, rm.begin_epoch_request(CID, 3, 4, r.local, ())))
    assert (p.error_code, p.leader_id) == (E.none, 3)
    assert r.requests(r.ready, "FetchRequest")[0].destination == Destination(3, addr(3))


@pytest.mark.parametrize("build", [
    lambda r: rm.begin_epoch_request(CID, -1, 9, r.local, endpoints(2)),
    lambda r: rm.end_epoch_request(CID, -1, 9, (), endpoints(2)),
], ids=["begin", "end"])
def test_a_negative_leader_id_is_an_invalid_request(build) -> None:
    r = _in_role("follower")
    before = _fingerprint(r)
    p = part(r.answer(100, build(r)))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.invalid_request, 2, 3)
    assert _fingerprint(r) == before


def _run(r: Replica, start: int, until: int, step: int = 50) -> None:
    for now in range(start, until, step):
        r.client.poll(now)
        assert r.client.epoch <= MAX_EPOCH and r.store.state.epoch <= MAX_EPOCH


def test_the_only_voter_made_to_follow_in_the_last_epoch_waits_instead_of_dying(caplog) -> None:
    # the fuzzer's case, with endpoints so that it is followed: the fetch timeout passes, and the
    # election it would run is for epoch 2**31, which an int32 cannot hold
    r = Replica(voter_ids=(1,))
    assert r.client.role == "leader"
    r.answer(10, rm.begin_epoch_request(CID, STRANGER, MAX_EPOCH, r.local, endpoints(STRANGER)))
    assert (r.client.role, r.client.epoch) == ("follower", MAX_EPOCH)
    end = r.log.end_offset
    with caplog.at_level(logging.ERROR, logger="engine.raft.polls"):
        _run(r, 20, 20 + 10 * r.config.fetch_timeout_ms)
    assert r.client.role == "unattached" and r.client.epoch == MAX_EPOCH
    assert r.store.state == ElectionState(MAX_EPOCH, -1, None)
    assert r.log.end_offset == end  # no leader's first batch in an epoch past the last
    lines = [rec.getMessage() for rec in caplog.records]
    assert lines == [f"node 1: epoch {MAX_EPOCH} is the last one: no election can follow it, waiting for its leader"]


def test_a_voter_that_voted_in_the_last_epoch_never_runs_past_it() -> None:
    r = _in_role("unattached")
    p = part(r.answer(10, vote(ReplicaKey(2), MAX_EPOCH)))
    assert p.vote_granted and r.client.epoch == MAX_EPOCH
    _run(r, 20, 20 + 10 * r.config.election_timeout_ms)
    assert r.client.role == "voted" and r.store.state == ElectionState(MAX_EPOCH, -1, ReplicaKey(2))
    assert not r.requests(r.client.poll(10**6), "VoteRequest")  # not even pre-votes go out


def test_the_last_epoch_still_takes_a_leader() -> None:
    r = _in_role("unattached")
    r.answer(10, vote(ReplicaKey(2), MAX_EPOCH))
    _run(r, 20, 20 + 3 * r.config.election_timeout_ms)
    p = part(r.answer(10**6, rm.begin_epoch_request(CID, 2, MAX_EPOCH, r.local, endpoints(2))))
    assert (p.error_code, r.client.role, r.client.quorum.leader_id) == (E.none, "follower", 2)


def test_the_only_voter_restarted_in_the_last_epoch_starts_without_electing_itself() -> None:
    store = MemoryElectionStore()
    store.write(ElectionState(MAX_EPOCH, STRANGER, None))
    r = Replica(voter_ids=(1,), store=store)
    assert r.client.role != "leader" and r.client.epoch == MAX_EPOCH
    _run(r, 0, 5 * r.config.election_timeout_ms)
    assert r.store.state.epoch == MAX_EPOCH and r.log.end_offset == 0


def test_the_quorum_state_itself_refuses_a_candidate_past_the_last_epoch() -> None:
    r = _in_role("unattached")
    r.answer(10, vote(ReplicaKey(2), MAX_EPOCH))
    r.client.quorum.to_prospective(10**6)
    with pytest.raises(IllegalTransition, match="past 2147483647"):
        r.client.quorum.to_candidate(10**6)
    assert r.store.state.epoch == MAX_EPOCH


@pytest.mark.parametrize("leader_id, error", [(3, E.none), (STRANGER, E.inconsistent_voter_set)])
def test_a_version_0_begin_epoch_has_no_endpoints_and_is_judged_by_the_voter_set(leader_id: int, error) -> None:
    from engine.records.kio_codec import i32, protocol_module

    m = protocol_module("begin_quorum_epoch", 0, "request")
    request = m.BeginQuorumEpochRequest(cluster_id=CID, topics=(m.TopicData(
        topic_name="__cluster_metadata", partitions=(m.PartitionData(
            partition_index=i32(0), leader_id=i32(leader_id), leader_epoch=i32(4)),)),))
    r = _in_role("unattached")
    assert part(r.answer(100, request)).error_code == error
    assert r.client.quorum.leader_id == (leader_id if error == E.none else -1)
