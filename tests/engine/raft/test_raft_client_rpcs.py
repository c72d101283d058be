"""One RaftClient driven by hand: handcrafted Raft RPCs in, responses and requests out.

No simulator: each test builds a replica over MemoryRaftLog and MemoryElectionStore,
feeds it requests and responses with explicit times, and looks at what ``poll`` returns.
"""

from __future__ import annotations

import dataclasses
import random
import uuid

import pytest

from engine.records.kio_codec import ErrorCode as E, VotersRecord
from engine.records.metadata_record_serde import ControlRecord
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState, MemoryElectionStore
from engine.raft.kraft_control_state import KRaftControlState
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.raft_client import (
    Destination, InboundRequest, InboundResponse, NotLeaderError, OutboundRequest, OutboundResponse, RaftClient,
)
from engine.raft.raft_config import RaftConfig
from engine.sim.state_machine import data_record
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet
from engine.storage.snapshot_writer import SnapshotId

CID = "RaftRpcTestClusterIdAA"
LISTENER = "CONTROLLER"


def addr(node_id: int) -> tuple[str, int]:
    return f"node{node_id}", 9093


def endpoints(node_id: int) -> tuple:
    return ((LISTENER, addr(node_id)),)


def dir_key(node_id: int) -> ReplicaKey:
    return ReplicaKey(node_id, uuid.UUID(int=0x100 + node_id))


class Replica:
    """A RaftClient with the pieces a test looks at."""

    def __init__(self, *, local_id: int = 1, voter_ids=(1, 2, 3), kraft_version: int = 0,
                 log: MemoryRaftLog | None = None, store: MemoryElectionStore | None = None, now_ms: int = 0,
                 **raft) -> None:
        self.log = log if log is not None else MemoryRaftLog()
        self.store = store if store is not None else MemoryElectionStore()
        if kraft_version == 1:
            self.keys = {i: dir_key(i) for i in set(voter_ids) | {local_id}}
            voters = VoterSet.of(VoterNode(self.keys[i], endpoints(i)) for i in voter_ids)
            if self.log.latest_snapshot_id() is None and self.log.end_offset == 0:
                control = KRaftControlState(VoterSet())
                control.history.add(0, voters)
                self.log.create_snapshot(SnapshotId(0, 0), [], kraft_control=control.control_records_at(0),
                                         last_contained_log_timestamp_ms=0, now_ms=0)
            static = VoterSet()
        else:
            self.keys = {i: ReplicaKey(i) for i in set(voter_ids) | {local_id}}
            static = VoterSet.of(VoterNode(ReplicaKey(i), endpoints(i)) for i in voter_ids)
        self.local = self.keys[local_id]
        self.config = RaftConfig(static_voters=static, listener_name=LISTENER,
                                 bootstrap_servers=tuple(addr(i) for i in voter_ids), **raft)
        self.client = RaftClient(config=self.config, cluster_id=CID, local=self.local, endpoints=endpoints(local_id),
                                 log=self.log, store=self.store, rng=random.Random(7), now_ms=now_ms)

    # -- requests in, responses out ------------------------------------------------------

    def request(self, now_ms: int, request) -> list:
        """Deliver ``request``, poll, and return the responses to it (usually one)."""
        token = object()
        self.client.receive(now_ms, InboundRequest(token, request))
        self.ready = self.client.poll(now_ms)
        return [m.response for m in self.ready.messages if isinstance(m, OutboundResponse) and m.token is token]

    def answer(self, now_ms: int, request):
        responses = self.request(now_ms, request)
        assert len(responses) == 1, responses
        return responses[0]

    def fetch(self, now_ms: int, node_id: int, fetch_offset: int, last_epoch: int, *, epoch: int | None = None,
              max_wait_ms: int = 0, cluster_id: str = CID):
        key = self.keys.get(node_id, ReplicaKey(node_id))
        return self.request(now_ms, rm.fetch_request(cluster_id, key, self.client.epoch if epoch is None else epoch,
                                                     fetch_offset, last_epoch, max_wait_ms, 1 << 20))

    # -- becoming leader -------------------------------------------------------------------

    def requests(self, ready, api_type: str) -> list[OutboundRequest]:
        return [m for m in ready.messages if isinstance(m, OutboundRequest) and type(m.request).__name__ == api_type]

    def elect(self, now_ms: int | None = None) -> int:
        """Run a pre-vote and a vote, granted by just enough other voters; returns the time."""
        client = self.client
        needed = client.control.latest_voters().majority_size - 1
        now = max(now_ms or 0, client.quorum.state.election_deadline_ms)
        pre = self.requests(client.poll(now), "VoteRequest")
        assert pre and all(rm.only_partition(m.request).pre_vote for m in pre)
        assert all(rm.only_partition(m.request).replica_epoch == client.epoch for m in pre)  # Kafka: current epoch
        for m in pre[:needed]:
            client.receive(now, InboundResponse(m.correlation_id, rm.vote_response(E.none, -1, client.epoch, True)))
        votes = self.requests(client.poll(now), "VoteRequest")
        assert client.role == "candidate" and votes
        assert not any(rm.only_partition(m.request).pre_vote for m in votes)
        for m in votes[:needed]:
            client.receive(now, InboundResponse(m.correlation_id, rm.vote_response(E.none, -1, client.epoch, True)))
        self.ready = client.poll(now)
        assert client.role == "leader"
        return now

    def leader_change_end(self) -> int:
        """Where the new leader's first batch ends: 1 (LeaderChangeMessage), or 3 when the voters came
        only from the bootstrap checkpoint and go into the log with it (+ KRaftVersion, Voters)."""
        return 3 if self.client.control.kraft_version == 1 else 1

    def commit_leader_change(self, now_ms: int, node_id: int = 2) -> None:
        """A follower fetches past the LeaderChangeMessage: the high watermark is the log end."""
        end = self.log.end_offset
        self.fetch(now_ms, node_id, end, self.client.epoch)
        assert self.client.high_watermark == end


def part(response):
    return rm.only_partition(response)


def vote(candidate: ReplicaKey, epoch: int, *, voter: ReplicaKey = ReplicaKey(1), last_epoch: int = 0,
         last_offset: int = 0, pre_vote: bool = False, cluster_id: str = CID):
    return rm.vote_request(cluster_id, candidate, epoch, voter, last_epoch, last_offset, pre_vote)


def append_history(log: MemoryRaftLog, epochs: list[tuple[int, int]]) -> None:
    """Batches of one record each: ``(epoch, count)`` in order."""
    n = 0
    for epoch, count in epochs:
        for _ in range(count):
            log.append_as_leader([data_record(f"r{n}")], epoch=epoch, timestamp_ms=n)
            n += 1
    log.flush()


class ObservingStore(MemoryElectionStore):
    """Remembers, for each write, which responses the client had already produced."""

    def __init__(self) -> None:
        super().__init__()
        self.client: RaftClient | None = None
        self.responses_at_write: list[int] = []

    def write(self, state: ElectionState) -> None:
        if self.client is not None:
            self.responses_at_write.append(sum(isinstance(m, OutboundResponse) for m in self.client.outbox))
        super().write(state)


class FailingStore(MemoryElectionStore):
    fail = False

    def write(self, state: ElectionState) -> None:
        if self.fail:
            raise OSError("disk full")
        super().write(state)


# -- Vote ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_vote_granted_when_log_up_to_date_and_not_voted(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    response = r.answer(10, vote(r.keys[2], 1, voter=r.local))
    assert response.error_code == E.none
    p = part(response)
    assert (p.error_code, p.vote_granted, p.leader_epoch, p.leader_id) == (E.none, True, 1, -1)
    assert r.store.state == ElectionState(1, -1, r.keys[2])
    assert r.client.role == "voted" and r.client.epoch == 1


def test_vote_rejected_when_candidate_log_is_behind() -> None:
    log = MemoryRaftLog()
    append_history(log, [(1, 3), (2, 2)])
    store = MemoryElectionStore()
    store.write(ElectionState(2))
    r = Replica(log=log, store=store)
    for last_epoch, last_offset in [(1, 10), (2, 4), (0, 0)]:
        p = part(r.answer(10, vote(ReplicaKey(2), 3, last_epoch=last_epoch, last_offset=last_offset)))
        assert not p.vote_granted, (last_epoch, last_offset)
    # The higher epoch was taken nonetheless (Kafka: transitionToUnattached first), without a vote.
    assert r.store.state == ElectionState(3, -1, None) and r.client.role == "unattached"
    p = part(r.answer(20, vote(ReplicaKey(3), 3, last_epoch=2, last_offset=5)))
    assert p.vote_granted and r.store.state == ElectionState(3, -1, ReplicaKey(3))


def test_vote_rejected_for_a_second_candidate_in_the_same_epoch() -> None:
    r = Replica()
    assert part(r.answer(10, vote(ReplicaKey(2), 1))).vote_granted
    writes = r.store.writes
    assert not part(r.answer(11, vote(ReplicaKey(3), 1))).vote_granted
    assert part(r.answer(12, vote(ReplicaKey(2), 1))).vote_granted  # a retry of the same candidate
    assert r.store.writes == writes and r.store.state == ElectionState(1, -1, ReplicaKey(2))


def test_vote_survives_a_restart() -> None:
    r = Replica()
    assert part(r.answer(10, vote(ReplicaKey(2), 1))).vote_granted
    again = Replica(log=r.log, store=r.store, now_ms=20)
    assert not part(again.answer(30, vote(ReplicaKey(3), 1))).vote_granted
    assert again.store.state == ElectionState(1, -1, ReplicaKey(2))


def test_vote_for_a_lower_epoch_is_fenced() -> None:
    r = Replica()
    r.answer(10, vote(ReplicaKey(2), 4))
    p = part(r.answer(11, vote(ReplicaKey(3), 3)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.fenced_leader_epoch, False, 4)
    assert r.store.state == ElectionState(4, -1, ReplicaKey(2))


def test_higher_epoch_is_persisted_before_the_response() -> None:
    store = ObservingStore()
    r = Replica(store=store)
    store.client = r.client
    response = r.answer(10, vote(ReplicaKey(2), 5, last_epoch=4, last_offset=3))
    assert part(response).error_code == E.none and part(response).vote_granted
    assert part(response).leader_epoch == 5
    assert store.responses_at_write and all(n == 0 for n in store.responses_at_write)
    assert store.state.epoch == 5


def test_failed_write_sends_no_vote() -> None:
    store = FailingStore()
    r = Replica(store=store)
    store.fail = True
    with pytest.raises(OSError):
        r.client.receive(10, InboundRequest(object(), vote(ReplicaKey(2), 1)))
    assert r.client.epoch == 0 and r.client.role == "unattached"
    assert not [m for m in r.client.poll(10).messages if isinstance(m, OutboundResponse)]


def test_vote_from_another_cluster() -> None:
    r = Replica()
    response = r.answer(10, vote(ReplicaKey(2), 7, cluster_id="SomeOtherClusterIdAAAA"))
    assert response.error_code == E.inconsistent_cluster_id
    assert not part(response).vote_granted
    assert r.store.writes == 0 and r.client.epoch == 0


def test_vote_meant_for_another_voter() -> None:
    r = Replica(kraft_version=1)
    response = r.answer(10, vote(dir_key(2), 1, voter=ReplicaKey(1, uuid.UUID(int=0xBAD))))
    assert part(response).error_code == E.invalid_voter_key and not part(response).vote_granted
    # Kafka takes the higher epoch before it looks at the voter key; no vote is given.
    assert r.store.state == ElectionState(1, -1, None)


@pytest.mark.parametrize("pre_vote, last_epoch, last_offset", [
    (False, 1, 0), (False, 2, 5), (False, -1, 0), (False, 0, -1),
    (True, 2, 0), (True, 2, 5), (True, -1, 0), (True, 0, -1)])
def test_vote_with_impossible_last_epoch_is_invalid(last_epoch: int, last_offset: int, pre_vote: bool) -> None:
    # KafkaRaftClient.handleVoteRequest: lastOffset < 0, lastOffsetEpoch < 0 or >= the candidate's epoch
    # (> for a pre-vote, which carries the sender's current epoch: its log may end in it).
    r = Replica()
    p = part(r.answer(10, vote(ReplicaKey(2), 1, last_epoch=last_epoch, last_offset=last_offset,
                               pre_vote=pre_vote)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.invalid_request, False, 0)
    assert r.store.writes == 0 and r.client.epoch == 0 and r.client.role == "unattached"


def test_pre_vote_granted_without_persisting_or_changing_epoch() -> None:
    r = Replica()
    p = part(r.answer(10, vote(ReplicaKey(2), 0, pre_vote=True)))
    assert p.vote_granted and p.leader_epoch == 0
    assert r.store.writes == 0 and r.client.epoch == 0 and r.client.role == "unattached"
    # A higher epoch is taken, as from any Vote (Kafka's rule), but no vote is recorded.
    p = part(r.answer(10, vote(ReplicaKey(3), 9, pre_vote=True)))
    assert p.vote_granted and p.leader_epoch == 9 and r.client.epoch == 9
    assert r.store.state == ElectionState(9, -1, None)


def test_pre_vote_rejected_when_log_behind() -> None:
    log = MemoryRaftLog()
    append_history(log, [(1, 2)])
    store = MemoryElectionStore()
    store.write(ElectionState(1))
    r = Replica(log=log, store=store)
    writes = store.writes
    assert not part(r.answer(10, vote(ReplicaKey(2), 1, last_epoch=1, last_offset=1, pre_vote=True))).vote_granted
    assert part(r.answer(10, vote(ReplicaKey(2), 1, last_epoch=1, last_offset=2, pre_vote=True))).vote_granted
    assert store.writes == writes


def _follow(r: Replica, now_ms: int, leader_id: int = 2, epoch: int = 1) -> None:
    """Make ``r`` a follower that has just fetched successfully from ``leader_id``."""
    assert part(r.answer(now_ms, rm.begin_epoch_request(CID, leader_id, epoch, r.local,
                                                        endpoints(leader_id)))).error_code == E.none
    fetches = r.requests(r.ready, "FetchRequest")
    assert len(fetches) == 1 and fetches[0].destination == Destination(leader_id, addr(leader_id))
    r.client.receive(now_ms, InboundResponse(fetches[0].correlation_id, rm.fetch_response(
        E.none, leader_id=leader_id, epoch=epoch, high_watermark=-1)))


def test_pre_vote_rejected_while_following_a_live_leader() -> None:
    r = Replica()
    _follow(r, 100)
    writes = r.store.writes
    assert not part(r.answer(150, vote(ReplicaKey(3), 1, pre_vote=True))).vote_granted
    assert r.client.role == "follower" and r.store.writes == writes
    # Not heard from the leader for a fetch timeout: a pre-vote may be granted.
    assert part(r.answer(100 + r.config.fetch_timeout_ms, vote(ReplicaKey(3), 1, pre_vote=True))).vote_granted
    assert r.store.writes == writes and r.client.epoch == 1


def test_follower_does_not_vote_in_its_epoch() -> None:
    r = Replica()
    _follow(r, 100)
    assert not part(r.answer(150, vote(ReplicaKey(3), 1))).vote_granted
    assert r.store.state == ElectionState(1, 2, None)


# -- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------------------------------


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_begin_quorum_epoch_makes_a_follower(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    response = r.answer(10, rm.begin_epoch_request(CID, 3, 2, r.local, endpoints(3)))
    p = part(response)
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.none, 3, 2)
    assert r.client.role == "follower" and r.client.leader_and_epoch.leader_id == 3
    assert r.store.state == ElectionState(2, 3, None)
    fetch = r.requests(r.ready, "FetchRequest")[0]  # it starts fetching from the leader at once
    assert fetch.destination == Destination(3, addr(3))
    assert part(fetch.request).current_leader_epoch == 2


def test_begin_quorum_epoch_of_a_lower_epoch_is_fenced() -> None:
    r = Replica()
    r.answer(10, rm.begin_epoch_request(CID, 3, 5, r.local, endpoints(3)))
    p = part(r.answer(20, rm.begin_epoch_request(CID, 2, 4, r.local, endpoints(2))))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.fenced_leader_epoch, 3, 5)
    assert r.store.state == ElectionState(5, 3, None) and r.client.quorum.leader_id == 3


def test_begin_quorum_epoch_from_another_cluster() -> None:
    r = Replica()
    response = r.answer(10, rm.begin_epoch_request("SomeOtherClusterIdAAAA", 3, 5, r.local, endpoints(3)))
    assert response.error_code == E.inconsistent_cluster_id
    assert r.client.role == "unattached" and r.store.writes == 0


@pytest.mark.parametrize("successors, delay", [
    ((1, 3), 0),  # first in line: campaign at once
    ((3, 1), 500),  # second of two: election.backoff.max.ms >> 1
    ((3,), 1000),  # not named: election.backoff.max.ms
    ((), 1000),
])
def test_end_quorum_epoch_moves_the_fetch_deadline(successors, delay: int) -> None:
    r = Replica()
    _follow(r, 100)
    request = rm.end_epoch_request(CID, 2, 1, tuple(ReplicaKey(i) for i in successors), endpoints(2))
    assert part(r.answer(300, request)).error_code == E.none
    # poll(300) ran with the new deadline: the first successor is already campaigning.
    if delay == 0:
        assert r.client.role == "prospective"
        return
    assert r.client.role == "follower" and r.client.quorum.state.fetch_deadline_ms == 300 + delay
    r.client.poll(300 + delay - 1)
    assert r.client.role == "follower"
    r.client.poll(300 + delay)
    assert r.client.role == "prospective"


def test_end_quorum_epoch_of_a_lower_epoch_is_fenced() -> None:
    r = Replica()
    _follow(r, 100, epoch=3)
    p = part(r.answer(200, rm.end_epoch_request(CID, 2, 2, (ReplicaKey(1),), endpoints(2))))
    assert p.error_code == E.fenced_leader_epoch and p.leader_epoch == 3
    assert r.client.role == "follower" and r.client.quorum.state.fetch_deadline_ms == 100 + r.config.fetch_timeout_ms


def test_end_quorum_epoch_of_a_higher_epoch_follows_then_backs_off() -> None:
    # Kafka's handleEndQuorumEpochRequest follows the new leader first, then backs off as its successor.
    r = Replica()
    _follow(r, 100, epoch=1)
    p = part(r.answer(200, rm.end_epoch_request(CID, 3, 2, (ReplicaKey(2), ReplicaKey(1)), endpoints(3))))
    assert (p.error_code, p.leader_id, p.leader_epoch) == (E.none, 3, 2)
    assert r.client.role == "follower" and r.client.leader_and_epoch.leader_id == 3 and r.client.epoch == 2
    assert r.store.state == ElectionState(2, 3, None)
    assert r.client.quorum.state.leader_address == addr(3)  # from the request's leader endpoints
    assert r.client.quorum.state.fetch_deadline_ms == 200 + 500


@pytest.mark.parametrize("successor, delay", [
    (dir_key(1), 0),  # our id and directory: first in line
    (ReplicaKey(1), 0),  # no directory given: the id alone matches
    (ReplicaKey(1, uuid.UUID(int=0xDEAD)), 1000),  # our id on another disk is not us
])
def test_end_quorum_epoch_successor_matches_the_directory_id(successor: ReplicaKey, delay: int) -> None:
    r = Replica(kraft_version=1)
    _follow(r, 100)
    r.answer(300, rm.end_epoch_request(CID, 2, 1, (successor, dir_key(3)), endpoints(2)))
    if delay == 0:
        assert r.client.role == "prospective"
    else:
        assert r.client.role == "follower" and r.client.quorum.state.fetch_deadline_ms == 300 + delay


# -- Fetch at a leader ----------------------------------------------------------------------------


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_single_voter_leads_at_once(kraft_version: int) -> None:
    r = Replica(voter_ids=(1,), kraft_version=kraft_version)
    assert r.client.role == "leader" and r.client.epoch == 1
    assert r.store.state == ElectionState(1, 1, r.local)
    (batch,) = r.log.batches(0)
    assert batch.control and batch.epoch == 1 and all(isinstance(x, ControlRecord) for x in batch.records)
    # kraft.version 1 with voters only in the bootstrap checkpoint: they go into the log with the
    # LeaderChangeMessage, in the same control batch (Kafka: KRaftVersionRecord + VotersRecord).
    kinds = [type(x.message).__name__ for x in batch.records]
    assert kinds == (["LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord"] if kraft_version == 1
                     else ["LeaderChangeMessage"])
    assert r.log.end_offset == r.leader_change_end() == len(kinds)
    r.client.poll(0)
    assert r.client.high_watermark == r.leader_change_end()  # a quorum of one commits its first batch


def test_election_by_hand_writes_a_leader_change_message() -> None:
    r = Replica()
    r.elect()
    assert r.client.epoch == 1 and r.store.state == ElectionState(1, 1, ReplicaKey(1))
    batches = list(r.log.batches(0))
    assert len(batches) == 1 and batches[0].control and batches[0].epoch == 1
    begins = r.requests(r.ready, "BeginQuorumEpochRequest")
    assert sorted(m.destination.node_id for m in begins) == [2, 3]
    assert r.client.high_watermark is None


def test_fetch_with_a_wrong_epoch_or_at_a_non_leader() -> None:
    r = Replica()
    (response,) = r.fetch(10, 2, 0, 0, epoch=0)
    assert part(response).error_code == E.not_leader_or_follower
    store = MemoryElectionStore()
    store.write(ElectionState(3))
    r = Replica(store=store)
    now = r.elect()
    assert r.client.epoch == 4
    (response,) = r.fetch(now, 2, 0, 0, epoch=3)
    assert part(response).error_code == E.fenced_leader_epoch
    assert (part(response).current_leader.leader_id, part(response).current_leader.leader_epoch) == (1, 4)
    (response,) = r.fetch(now, 2, 0, 0, epoch=5)
    assert part(response).error_code == E.unknown_leader_epoch
    (response,) = r.fetch(now, 2, 0, 0, cluster_id="SomeOtherClusterIdAAAA")
    assert response.error_code == E.inconsistent_cluster_id
    assert r.client.quorum.state.progress[2].end_offset == -1  # none of these counted


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_high_watermark_advances_once_a_majority_fetched_past_the_leader_change(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    now = r.elect()
    (response,) = r.fetch(now, 2, 0, 0)  # from an empty log (epoch 0): gets the LeaderChangeMessage
    assert part(response).high_watermark == -1 and len(part(response).records) > 0
    assert r.client.high_watermark is None
    end = r.leader_change_end()
    assert r.log.end_offset == end
    (response,) = r.fetch(now + 1, 2, end, 1)
    assert r.client.high_watermark == end
    assert part(response).high_watermark == end
    # An observer's fetch does not move it.
    r.client.append_now(1, [data_record("x")], now + 2)
    r.fetch(now + 3, 7, end + 1, 1)
    assert r.client.high_watermark == end
    r.fetch(now + 4, 3, end + 1, 1)
    assert r.client.high_watermark == end + 1


def test_fetch_divergence_answer_for_a_follower_of_an_older_epoch() -> None:
    log = MemoryRaftLog()
    append_history(log, [(1, 3), (3, 2)])  # epoch 1: offsets 0-2, epoch 3: 3-4
    store = MemoryElectionStore()
    store.write(ElectionState(3))
    r = Replica(log=log, store=store)
    now = r.elect()  # epoch 4, LeaderChangeMessage at 5
    # The follower's log went on in epoch 2 from offset 3: our epoch-1 entries end at 3.
    (response,) = r.fetch(now, 2, 6, 2)
    p = part(response)
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (1, 3)
    assert len(p.records or b"") == 0
    # It holds more of epoch 3 than we do.
    (response,) = r.fetch(now, 2, 9, 3)
    assert (part(response).diverging_epoch.epoch, part(response).diverging_epoch.end_offset) == (3, 5)
    # A fetch that agrees with us gets records, no divergence.
    (response,) = r.fetch(now, 2, 5, 3)
    assert part(response).diverging_epoch.epoch == -1 and len(part(response).records) > 0
    assert r.client.quorum.state.progress[2].end_offset == 5  # only the valid fetch counted


@pytest.mark.parametrize("fetch_offset, last_epoch", [(-5, 1), (1, -1), (0, -1), (1, 2)])
def test_malformed_fetch_is_invalid_request(fetch_offset: int, last_epoch: int) -> None:
    # Kafka's handleFetchRequest: fetchOffset < 0, lastFetchedEpoch < 0 or > the leader's epoch.
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now)
    (response,) = r.fetch(now + 1, 2, fetch_offset, last_epoch)
    assert part(response).error_code == E.invalid_request and len(part(response).records or b"") == 0
    progress = r.client.quorum.state.progress[2]
    assert (progress.end_offset, progress.last_fetch_ms) == (1, now)  # nothing recorded


def test_fetch_before_the_log_start_gets_the_snapshot() -> None:
    log = MemoryRaftLog()
    append_history(log, [(1, 10)])
    log.create_snapshot(SnapshotId(6, 1), [data_record("s")], kraft_control=[],
                        last_contained_log_timestamp_ms=5, now_ms=0)
    log.delete_before_snapshot()
    assert log.start_offset == 6
    store = MemoryElectionStore()
    store.write(ElectionState(1))
    r = Replica(log=log, store=store)
    now = r.elect()
    # Before the log start; at it with another epoch than the snapshot's; on an epoch older than it.
    for fetch_offset, last_epoch in [(2, 1), (0, 0), (6, 0), (7, 0)]:
        (response,) = r.fetch(now, 2, fetch_offset, last_epoch)
        p = part(response)
        assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (6, 1), (fetch_offset, last_epoch)
        assert len(p.records or b"") == 0
    (response,) = r.fetch(now, 2, 8, 1)
    assert part(response).snapshot_id.end_offset == -1 and len(part(response).records) > 0


def test_fetch_long_poll_waits_for_an_append() -> None:
    r = Replica(append_linger_ms=10)
    now = r.elect()
    r.commit_leader_change(now)
    assert r.fetch(now + 1, 2, 1, 1, max_wait_ms=500) == []  # nothing new: parked
    assert r.ready.next_poll_ms <= now + 1 + 500
    assert not [m for m in r.client.poll(now + 100).messages if isinstance(m, OutboundResponse)]
    r.client.schedule_append(1, [data_record("a")], now + 100)
    assert not [m for m in r.client.poll(now + 105).messages if isinstance(m, OutboundResponse)]  # lingering
    (response,) = [m.response for m in r.client.poll(now + 110).messages if isinstance(m, OutboundResponse)]
    assert part(response).error_code == E.none and len(part(response).records) > 0


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_fetch_long_poll_answers_empty_after_max_wait(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    now = r.elect()
    r.commit_leader_change(now)
    end = r.leader_change_end()
    assert r.fetch(now, 2, end, 1, max_wait_ms=500) == []
    ready = r.client.poll(now + 499)
    assert not [m for m in ready.messages if isinstance(m, OutboundResponse)]
    assert ready.next_poll_ms == now + 500
    (response,) = [m.response for m in r.client.poll(now + 500).messages if isinstance(m, OutboundResponse)]
    assert part(response).error_code == E.none and len(part(response).records or b"") == 0
    assert part(response).high_watermark == end


def test_fetch_long_poll_released_by_a_new_high_watermark() -> None:
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now, node_id=2)
    r.client.append_now(1, [data_record("a")], now)
    (response,) = r.fetch(now, 9, 1, 1)  # an observer gets the record, and high watermark 1
    assert part(response).high_watermark == 1 and len(part(response).records) > 0
    assert r.fetch(now, 9, 2, 1, max_wait_ms=500) == []  # nothing more for it: parked
    # Node 2 reaches offset 2: the high watermark moves, and the observer must hear of it.
    responses = r.fetch(now + 5, 2, 2, 1)
    assert r.client.high_watermark == 2
    released = [m.response for m in r.ready.messages if isinstance(m, OutboundResponse)]
    assert len(released) == 2 and responses[0] in released
    assert all(part(x).high_watermark == 2 for x in released)


def test_anonymous_fetcher_long_poll_released_by_a_new_high_watermark() -> None:
    # Replica id -1 (a live attachment, a tool) has no progress at the leader; Kafka's leader still
    # completes its parked fetch when the high watermark moves, so a commit reaches it at once.
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now, node_id=2)
    r.client.append_now(1, [data_record("a")], now)
    (response,) = r.fetch(now, -1, 1, 1)  # it gets the uncommitted record, high watermark 1
    assert part(response).high_watermark == 1 and len(part(response).records) > 0
    assert r.fetch(now, -1, 2, 1, max_wait_ms=500) == []  # nothing more for it: parked
    r.fetch(now + 5, 2, 2, 1)  # node 2 reaches offset 2: the high watermark moves
    assert r.client.high_watermark == 2
    answers = _parked_fetch_answers(r)  # node 2's and the parked one, released
    assert len(answers) == 2 and all(part(a).high_watermark == 2 and not part(a).records for a in answers)
    assert r.client.parked_fetches == []
    assert r.client.quorum.state.observers == {}  # and it is still tracked nowhere


def _parked_fetch_answers(r: Replica) -> list:
    return [m.response for m in r.ready.messages
            if isinstance(m, OutboundResponse) and type(m.response).__name__ == "FetchResponse"]


def test_parked_fetch_answered_when_a_vote_deposes_the_leader() -> None:
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now)
    assert r.fetch(now, 2, 1, 1, max_wait_ms=500) == []
    assert part(r.answer(now + 1, vote(ReplicaKey(3), 2, last_epoch=1, last_offset=1))).vote_granted
    assert r.client.role == "voted" and r.client.epoch == 2
    (answer,) = _parked_fetch_answers(r)
    assert part(answer).error_code == E.not_leader_or_follower
    assert r.client.parked_fetches == []


def test_parked_fetch_answered_when_a_new_leader_begins_its_epoch() -> None:
    # Kafka's onBecomeFollower: parked fetches are answered NOT_LEADER_OR_FOLLOWER (by the next poll).
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now)
    assert r.fetch(now, 2, 1, 1, max_wait_ms=500) == []
    r.request(now + 1, rm.begin_epoch_request(CID, 3, 2, r.local, endpoints(3)))
    assert r.client.role == "follower"
    (answer,) = _parked_fetch_answers(r)
    assert part(answer).error_code == E.not_leader_or_follower
    assert (part(answer).current_leader.leader_id, part(answer).current_leader.leader_epoch) == (3, 2)
    assert r.client.parked_fetches == []


def test_leader_without_fetches_resigns_after_check_quorum() -> None:
    r = Replica()
    now = r.elect()
    timeout = int(r.config.fetch_timeout_ms * 1.5)
    r.fetch(now + 10, 2, 0, 0)  # node 2 fetched once, node 3 never
    r.client.poll(now + timeout)
    assert r.client.role == "leader"  # leader + node 2 (at now + 10) are a majority until now + 10 + timeout
    ready = r.client.poll(now + 2 * timeout)  # nobody since
    assert r.client.role == "resigned" and r.client.epoch == 1
    ends = r.requests(ready, "EndQuorumEpochRequest")
    assert sorted(m.destination.node_id for m in ends) == [2, 3]
    successors = [c.candidate_id for c in part(ends[0].request).preferred_candidates]
    assert successors == [2, 3]  # node 2 fetched further than node 3
    with pytest.raises(NotLeaderError):
        r.client.schedule_append(1, [data_record("a")], now + 2 * timeout)


def test_check_quorum_expires_one_timeout_after_the_last_majority() -> None:
    # Kafka's LeaderState: the timer restarts on each majority and expires checkQuorumTimeoutMs after it.
    r = Replica()
    now = r.elect()
    timeout = int(r.config.fetch_timeout_ms * 1.5)
    r.fetch(now + 10, 2, 0, 0)
    assert r.client.poll(now + 9 + timeout).next_poll_ms == now + 10 + timeout
    assert r.client.role == "leader"
    r.client.poll(now + 10 + timeout)
    assert r.client.role == "resigned"


# -- DescribeQuorum --------------------------------------------------------------------------------


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_describe_quorum_from_the_leader(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    now = r.elect()
    r.commit_leader_change(now)
    r.fetch(now + 1, 9, 0, 0)  # an observer with an empty log
    response = r.answer(now + 2, rm.describe_quorum_request())
    p = part(response)
    end = r.leader_change_end()
    assert (response.error_code, p.error_code, p.leader_id, p.leader_epoch, p.high_watermark) == (
        E.none, E.none, 1, 1, end)
    voters = {v.replica_id: v for v in p.current_voters}
    assert set(voters) == {1, 2, 3}
    assert voters[1].log_end_offset == end and voters[2].log_end_offset == end and voters[3].log_end_offset == -1
    assert voters[2].last_fetch_timestamp == now and voters[3].last_fetch_timestamp == -1
    assert [o.replica_id for o in p.observers] == [9] and p.observers[0].log_end_offset == 0
    assert voters[2].replica_directory_id == r.keys[2].directory_id  # None for a static quorum
    assert sorted(n.node_id for n in response.nodes) == [1, 2, 3]


def test_describe_quorum_from_a_follower() -> None:
    r = Replica()
    _follow(r, 100)
    p = part(r.answer(200, rm.describe_quorum_request()))
    assert p.error_code == E.not_leader_or_follower
    assert (p.leader_id, p.leader_epoch) == (2, 1)
    assert p.current_voters == ()


# -- AddRaftVoter / RemoveRaftVoter ------------------------------------------------------------------


def test_voter_changes_refused_with_kraft_version_0() -> None:
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now)
    add = r.answer(now, rm.add_voter_request(CID, dir_key(4), endpoints(4)))
    assert add.error_code == E.unsupported_version
    remove = r.answer(now, rm.remove_voter_request(CID, ReplicaKey(3)))
    assert remove.error_code == E.unsupported_version
    assert r.log.end_offset == 1


def test_voter_changes_refused_when_not_leader() -> None:
    r = Replica(kraft_version=1)
    _follow(r, 100)
    assert r.answer(200, rm.add_voter_request(CID, dir_key(4), endpoints(4))).error_code == \
        E.not_leader_or_follower
    assert r.answer(200, rm.remove_voter_request(CID, dir_key(3))).error_code == E.not_leader_or_follower


def test_voter_changes_refused_before_the_first_commit() -> None:
    r = Replica(kraft_version=1)
    now = r.elect()
    assert r.answer(now, rm.remove_voter_request(CID, dir_key(3))).error_code == E.request_timed_out


def test_add_voter_refusals() -> None:
    r = Replica(kraft_version=1)
    now = r.elect()
    r.commit_leader_change(now)
    assert r.answer(now, rm.add_voter_request(CID, dir_key(3), endpoints(3))).error_code == E.duplicate_voter
    assert r.answer(now, rm.add_voter_request(CID, ReplicaKey(4), endpoints(4))).error_code == E.invalid_request
    assert r.answer(now, rm.add_voter_request(CID, dir_key(4), (("OTHER", addr(4)),))).error_code == \
        E.invalid_request
    assert r.answer(now, rm.add_voter_request("SomeOtherClusterIdAAAA", dir_key(4), endpoints(4))).error_code == \
        E.inconsistent_cluster_id
    assert r.log.end_offset == r.leader_change_end() == 3  # nothing appended
    assert r.client.quorum.state.pending_change is None


def test_remove_voter_refusals() -> None:
    r = Replica(kraft_version=1)
    now = r.elect()
    r.commit_leader_change(now)
    assert r.answer(now, rm.remove_voter_request(CID, dir_key(4))).error_code == E.voter_not_found
    other_disk = ReplicaKey(3, uuid.UUID(int=0xDEAD))
    assert r.answer(now, rm.remove_voter_request(CID, other_disk)).error_code == E.voter_not_found
    assert r.log.end_offset == r.leader_change_end() == 3  # nothing appended
    assert r.client.quorum.state.pending_change is None


def test_remove_voter_is_answered_once_committed() -> None:
    r = Replica(kraft_version=1)
    now = r.elect()
    r.commit_leader_change(now)
    end = r.leader_change_end()  # 3: the first batch also carried the bootstrap voters
    token = object()
    r.client.receive(now + 1, InboundRequest(token, rm.remove_voter_request(CID, dir_key(3))))
    ready = r.client.poll(now + 1)
    assert not [m for m in ready.messages if isinstance(m, OutboundResponse) and m.token is token]
    batch = list(r.log.batches(end))[-1]
    assert batch.control and batch.base_offset == end == batch.last_offset and batch.epoch == 1
    record = batch.records[0]
    assert isinstance(record, ControlRecord) and isinstance(record.message, VotersRecord)
    assert [int(v.voter_id) for v in record.message.voters] == [1, 2]
    assert r.client.control.latest_voters().ids == (1, 2)  # in force at once, before the commit
    assert r.client.has_uncommitted_voter_change()
    # Node 3 is no longer counted: its fetch past the record commits nothing.
    r.fetch(now + 2, 3, end + 1, 1)
    assert r.client.high_watermark == end
    assert not [m for m in r.ready.messages if isinstance(m, OutboundResponse) and m.token is token]
    r.fetch(now + 3, 2, end + 1, 1)
    assert r.client.high_watermark == end + 1
    (done,) = [m.response for m in r.ready.messages if isinstance(m, OutboundResponse) and m.token is token]
    assert done.error_code == E.none
    assert not r.client.has_uncommitted_voter_change()
    # A second change may now go ahead.
    assert r.answer(now + 4, rm.remove_voter_request(CID, dir_key(3))).error_code == E.voter_not_found


def test_one_voter_change_at_a_time() -> None:
    r = Replica(kraft_version=1, voter_ids=(1, 2, 3, 4))
    now = r.elect()
    r.fetch(now, 3, r.leader_change_end(), 1)
    r.commit_leader_change(now, 2)  # 3 of 4
    assert r.request(now, rm.remove_voter_request(CID, dir_key(4))) == []
    assert r.answer(now, rm.remove_voter_request(CID, dir_key(3))).error_code == E.request_timed_out


# -- appends ------------------------------------------------------------------------------------------


def test_appends_need_the_leadership_of_that_epoch() -> None:
    r = Replica()
    with pytest.raises(NotLeaderError):
        r.client.schedule_append(0, [data_record("a")], 0)
    with pytest.raises(NotLeaderError):
        r.client.append_now(0, [data_record("a")], 0)
    now = r.elect()
    with pytest.raises(NotLeaderError):
        r.client.schedule_append(0, [data_record("a")], now)
    with pytest.raises(NotLeaderError):
        r.client.append_now(2, [data_record("a")], now)
    assert r.log.end_offset == 1


def test_appends_linger_then_go_out_as_one_batch() -> None:
    r = Replica(append_linger_ms=25)
    now = r.elect()
    assert r.client.schedule_append(1, [data_record("a"), data_record("b")], now) == 2
    assert r.client.schedule_append(1, [data_record("c")], now + 10) == 3
    assert r.log.end_offset == 1
    ready = r.client.poll(now + 24)
    assert r.log.end_offset == 1 and ready.next_poll_ms == now + 25
    r.client.poll(now + 25)
    assert r.log.end_offset == 4
    batch = list(r.log.batches(1))
    assert len(batch) == 1 and (batch[0].base_offset, batch[0].last_offset, batch[0].epoch) == (1, 3, 1)
    assert [rec.value for rec in batch[0].records] == ["a", "b", "c"]
    assert r.log.flushed_end_offset == 4


def test_append_now_writes_pending_records_first() -> None:
    r = Replica(append_linger_ms=25)
    now = r.elect()
    r.client.schedule_append(1, [data_record("a")], now)
    assert r.client.append_now(1, [data_record("b"), data_record("c")], now + 1) == 3
    batches = list(r.log.batches(1))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(1, 1), (2, 3)]
    assert r.client.pending_records == []


def test_pending_appends_die_with_the_leadership() -> None:
    r = Replica(append_linger_ms=25)
    now = r.elect()
    r.client.schedule_append(1, [data_record("a")], now)
    r.request(now + 1, rm.begin_epoch_request(CID, 2, 2, r.local, endpoints(2)))
    assert r.client.role == "follower"
    r.client.poll(now + 100)
    assert r.log.end_offset == 1


# -- what a fresh replica sends --------------------------------------------------------------------


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_fresh_replica_sends_last_epoch_zero(kraft_version: int) -> None:
    # Kafka's KafkaMetadataLog.lastFetchedEpoch is 0 for an empty log (its leader refuses -1).
    r = Replica(kraft_version=kraft_version)
    r.answer(10, rm.begin_epoch_request(CID, 2, 1, r.local, endpoints(2)))
    (fetch,) = r.requests(r.ready, "FetchRequest")
    assert (part(fetch.request).fetch_offset, part(fetch.request).last_fetched_epoch) == (0, 0)
    r = Replica(kraft_version=kraft_version)
    pre = r.requests(r.client.poll(r.client.quorum.state.election_deadline_ms), "VoteRequest")
    assert pre and all((part(m.request).last_offset, part(m.request).last_offset_epoch) == (0, 0) for m in pre)


@pytest.mark.parametrize("kraft_version", [0, 1])
def test_fetch_from_an_empty_log_reporting_epoch_zero_gets_records(kraft_version: int) -> None:
    # Kafka's LeaderEpochFileCache.endOffsetFor: an epoch below all ends at the log start, so (0, 0) is
    # valid; the bootstrap checkpoint 0-0 (kraft.version 1) is local state, not a snapshot to send.
    r = Replica(kraft_version=kraft_version)
    now = r.elect()
    (response,) = r.fetch(now, 2, 0, 0)
    p = part(response)
    assert p.error_code == E.none
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (-1, -1)
    assert (p.snapshot_id.end_offset, p.snapshot_id.epoch) == (-1, -1)
    assert len(p.records or b"") > 0
    assert r.client.quorum.state.progress[2].end_offset == 0


def _fetch_v18(r: Replica, now_ms: int, node_id: int, fetch_offset: int, last_epoch: int, known_hw: int) -> list:
    """A Fetch read at v18 (as the driver reads every Fetch): the fetcher says which high watermark it knows."""
    from engine.net.message_versions import convert_message
    from engine.net.kafka_protocol import request_class

    v17 = rm.fetch_request(CID, ReplicaKey(node_id), r.client.epoch, fetch_offset, last_epoch, 500, 1 << 20)
    request = convert_message(v17, request_class(1, 18))
    part = request.topics[0].partitions[0]
    request = dataclasses.replace(request, topics=(dataclasses.replace(
        request.topics[0], partitions=(dataclasses.replace(part, high_watermark=known_hw),)),))
    return r.request(now_ms, request)


def test_a_v18_fetcher_behind_on_the_high_watermark_is_answered_at_once() -> None:
    """KIP-1166: a caught-up fetcher that knows an older high watermark (or none: -1) is not parked;
    one that knows the current one is, as is any v17 fetch (its field reads 'not supported')."""
    r = Replica()
    now = r.elect()
    r.commit_leader_change(now, node_id=2)
    r.client.append_now(1, [data_record("a")], now)
    r.fetch(now, 2, 2, 1)  # node 2 has it all: the high watermark is the log end
    end = r.client.log.end_offset
    assert r.client.high_watermark == end
    epoch = r.client.epoch
    (stale,) = _fetch_v18(r, now, -1, end, epoch, known_hw=end - 1)
    assert part(stale).high_watermark == end and not part(stale).records
    (unknown,) = _fetch_v18(r, now, -1, end, epoch, known_hw=-1)
    assert part(unknown).high_watermark == end
    assert _fetch_v18(r, now, -1, end, epoch, known_hw=end) == []  # knows it: parked
    assert r.fetch(now, -1, end, epoch, max_wait_ms=500) == []  # v17: parked
    assert len(r.client.parked_fetches) == 2
