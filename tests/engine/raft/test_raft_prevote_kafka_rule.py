"""Pre-votes (KIP-996) as Kafka 4.1 sends and answers them.

A prospective asks in its CURRENT epoch (a candidate has already moved to the one it runs
for); a receiver records no vote and changes no role for a pre-vote, and takes the epoch only
when it is behind it (an epoch the quorum already has). It grants when its log is not ahead,
unless it leads or follows a leader that answers its fetches. Against Kafka, pre-votes for
epoch + 1 made every Kafka voter take each epoch a failed pre-vote named.
"""

from __future__ import annotations

import pytest

from engine.records.kio_codec import ErrorCode as E
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState, MemoryElectionStore
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.raft_client import InboundResponse
from engine.sim.raft_simulation import SimConfig, Simulation
from engine.raft.voter_set import ReplicaKey
from test_raft_client_rpcs import CID, Replica, _follow, append_history


def _pre_vote(candidate: int, epoch: int, *, last_epoch: int = 0, last_offset: int = 0):
    return rm.vote_request(CID, ReplicaKey(candidate), epoch, ReplicaKey(1), last_epoch, last_offset, True)


def _in_epoch(epoch: int, history: tuple[tuple[int, int], ...] | list[tuple[int, int]] = ()) -> Replica:
    """A replica in ``epoch`` whose log holds ``history`` ((epoch, end offset) pairs)."""
    log = MemoryRaftLog()
    if history:
        append_history(log, list(history))
    store = MemoryElectionStore()
    store.write(ElectionState(epoch))
    return Replica(log=log, store=store)


def _vote_requests(r: Replica, ready) -> list:
    return r.requests(ready, "VoteRequest")


def _grant_all(r: Replica, now_ms: int, requests: list) -> None:
    for m in requests:
        r.client.receive(now_ms, InboundResponse(m.correlation_id, rm.vote_response(E.none, -1, r.client.epoch, True)))


def _elect(r: Replica) -> int:
    c = r.client
    now = c.quorum.state.election_deadline_ms
    _grant_all(r, now, _vote_requests(r, c.poll(now)))
    _grant_all(r, now, _vote_requests(r, c.poll(now)))
    c.poll(now)
    assert c.role == "leader"
    return now


def _snapshot(r: Replica) -> tuple:
    c = r.client
    return c.role, c.epoch, c.quorum.voted_key, c.quorum.leader_id, r.store.writes, r.store.state


# -- the sender ---------------------------------------------------------------------------

def test_a_prospective_asks_in_its_current_epoch_and_persists_nothing() -> None:
    r = _in_epoch(4)
    writes = r.store.writes
    now = r.client.quorum.state.election_deadline_ms
    pre = _vote_requests(r, r.client.poll(now))
    assert r.client.role == "prospective" and len(pre) == 2
    parts = [rm.only_partition(m.request) for m in pre]
    assert all(p.pre_vote and p.replica_epoch == 4 for p in parts)
    assert {m.request.voter_id for m in pre} == {2, 3}
    assert r.store.writes == writes and r.client.epoch == 4


def test_a_follower_whose_leader_went_quiet_pre_votes_in_the_leaders_epoch() -> None:
    r = _in_epoch(3, [(3, 4)])  # its log reached epoch 3: a pre-vote may name it (last epoch == epoch)
    _follow(r, 100, leader_id=2, epoch=3)
    writes = r.store.writes
    at = 100 + r.config.fetch_timeout_ms
    pre = _vote_requests(r, r.client.poll(at))
    assert r.client.role == "prospective" and pre
    assert {(rm.only_partition(m.request).replica_epoch, rm.only_partition(m.request).last_offset_epoch)
            for m in pre} == {(3, 3)}
    assert r.store.writes == writes


def test_only_a_majority_of_pre_votes_moves_to_the_next_epoch() -> None:
    r = _in_epoch(2)
    c = r.client
    now = c.quorum.state.election_deadline_ms
    pre = _vote_requests(r, c.poll(now))
    _grant_all(r, now, pre[:1])
    votes = _vote_requests(r, c.poll(now))
    assert (c.role, c.epoch) == ("candidate", 3) and r.store.state == ElectionState(3, -1, r.local)
    assert votes and all(not rm.only_partition(m.request).pre_vote and rm.only_partition(m.request).replica_epoch == 3
                         for m in votes)


def test_a_lost_candidate_pre_votes_again_in_its_own_epoch() -> None:
    r = _in_epoch(2)
    c = r.client
    now = c.quorum.state.election_deadline_ms
    _grant_all(r, now, _vote_requests(r, c.poll(now)))
    votes = _vote_requests(r, c.poll(now))
    assert (c.role, c.epoch) == ("candidate", 3)
    for m in votes:  # both refuse, in epoch 3
        c.receive(now, InboundResponse(m.correlation_id, rm.vote_response(E.none, -1, 3, False)))
    c.poll(now)
    again = []
    t = now
    while not again:  # the backoff is random: poll until the next round goes out
        t += 10
        again = _vote_requests(r, c.poll(t))
        assert t < now + 10 * r.config.election_timeout_ms
    assert c.role == "prospective"
    assert {(rm.only_partition(m.request).pre_vote, rm.only_partition(m.request).replica_epoch)
            for m in again} == {(True, 3)}


# -- the receiver ---------------------------------------------------------------------------

def _unattached(r: Replica) -> int:
    return 10


def _voted_for_another(r: Replica) -> int:
    vote = rm.vote_request(CID, ReplicaKey(2), r.client.epoch + 1, r.local, 0, 0, False)
    assert rm.only_partition(r.answer(10, vote)).vote_granted
    return 20


def _following_a_live_leader(r: Replica) -> int:
    _follow(r, 100, leader_id=2, epoch=r.client.epoch)
    return 150


def _leading(r: Replica) -> int:
    return _elect(r) + 1


def _candidate(r: Replica) -> int:
    c = r.client
    now = c.quorum.state.election_deadline_ms
    _grant_all(r, now, _vote_requests(r, c.poll(now)))
    c.poll(now)
    assert c.role == "candidate"
    return now + 1


@pytest.mark.parametrize("setup, granted", [
    (_unattached, True),
    (_voted_for_another, True),  # a pre-vote promises nothing: the vote given does not stand in its way
    (_following_a_live_leader, False),
    (_leading, False),
    (_candidate, True),
])
def test_a_pre_vote_in_our_epoch_changes_neither_epoch_nor_vote(setup, granted: bool) -> None:
    r = _in_epoch(1)
    now = setup(r)
    before = _snapshot(r)
    p = rm.only_partition(r.answer(now, _pre_vote(3, r.client.epoch)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.none, granted, r.client.epoch)
    assert _snapshot(r) == before


def test_a_pre_vote_from_a_longer_log_changes_nothing_either() -> None:
    r = _in_epoch(1)
    before = _snapshot(r)
    p = rm.only_partition(r.answer(10, _pre_vote(3, 1, last_epoch=1, last_offset=50)))
    assert p.vote_granted and _snapshot(r) == before


def test_a_voter_behind_takes_the_pre_votes_epoch_but_gives_no_vote() -> None:
    r = _in_epoch(1)
    p = rm.only_partition(r.answer(10, _pre_vote(3, 4)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.none, True, 4)
    assert (r.client.role, r.client.epoch, r.client.quorum.voted_key) == ("unattached", 4, None)
    assert r.store.state == ElectionState(4, -1, None)


def test_a_pre_vote_from_an_older_epoch_is_fenced() -> None:
    r = _in_epoch(3)
    before = _snapshot(r)
    p = rm.only_partition(r.answer(10, _pre_vote(3, 2)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.fenced_leader_epoch, False, 3)
    assert _snapshot(r) == before


@pytest.mark.parametrize("last_epoch, valid", [(2, True), (3, False)])
def test_a_pre_votes_log_may_end_in_its_epoch_but_not_past_it(last_epoch: int, valid: bool) -> None:
    r = _in_epoch(2, [(1, 2)])
    p = rm.only_partition(r.answer(10, _pre_vote(3, 2, last_epoch=last_epoch, last_offset=5)))
    assert (p.error_code, p.vote_granted) == ((E.none, True) if valid else (E.invalid_request, False))
    assert (r.client.epoch, r.store.state) == (2, ElectionState(2))


def test_a_pre_vote_from_a_shorter_log_is_refused() -> None:
    r = _in_epoch(1, [(1, 3)])
    before = _snapshot(r)
    assert not rm.only_partition(r.answer(10, _pre_vote(3, 1, last_epoch=1, last_offset=2))).vote_granted
    assert rm.only_partition(r.answer(10, _pre_vote(3, 1, last_epoch=1, last_offset=3))).vote_granted
    assert _snapshot(r) == before


# -- a whole quorum ---------------------------------------------------------------------------

def test_a_voter_cut_off_from_the_leader_alone_never_disturbs_it() -> None:
    """The loner hears the other follower but not the leader: it keeps pre-voting, the follower
    keeps refusing, and no epoch moves. Healed, it follows the same leader in the same epoch."""
    sim = Simulation(21, SimConfig(voters=3, observers=0, loss=0, duplicate=0))
    assert sim.run_until(lambda: sim.leader() is not None and sim.leader().client.high_watermark is not None,
                         20_000)
    leader = sim.leader()
    epoch = leader.client.epoch
    loner, other = (n for n in sim.nodes.values() if n is not leader)
    assert sim.run_until(lambda: all(n.client.quorum.leader_id == leader.node_id for n in (loner, other)), 10_000)
    pre_votes = []
    deliver = sim._deliver

    def watch(source, target, kind, meta, message):
        if kind == "request" and source == loner.node_id and type(message).__name__ == "VoteRequest":
            pre_votes.append(rm.only_partition(message))
        deliver(source, target, kind, meta, message)

    sim._deliver = watch
    sim.blocked.update({(loner.node_id, leader.node_id)})
    steady = (leader.node_id, "leader", epoch), (other.node_id, "follower", epoch)

    def disturbed() -> bool:
        return any((sim.leader() is not leader, leader.client.epoch != epoch,
                    (other.client.role, other.client.epoch, other.client.quorum.leader_id)
                    != ("follower", epoch, leader.node_id),
                    loner.client.epoch != epoch, other.store.state.epoch != epoch))

    assert not sim.run_until(disturbed, 10 * sim.raft_config.fetch_timeout_ms), steady
    assert len(pre_votes) >= 3, "the loner kept asking"
    assert all(p.pre_vote and p.replica_epoch == epoch for p in pre_votes)
    sim.heal()
    assert sim.run_until(lambda: loner.client.role == "follower" and loner.client.quorum.leader_id == leader.node_id
                         and loner.machine.next_offset >= leader.client.high_watermark, 20_000)
    assert sim.leader() is leader and leader.client.epoch == epoch and loner.client.epoch == epoch
