"""QuorumState: every role change persists the election state first, and refuses illegal moves."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.common.kafka_uuid import uuid_to_kafka
from engine.storage.quorum_state_file import QuorumStateData, dump_quorum_state
from engine.raft.election_store import ElectionState, FileElectionStore, MemoryElectionStore
from engine.raft.leader_state import LeaderState
from engine.raft.quorum_state import (
    CandidateState, FollowerState, IllegalTransition, ProspectiveState, QuorumState, ResignedState, UnattachedState,
)
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet

LOCAL = ReplicaKey(1, uuid.UUID(int=0x11))
OTHER = ReplicaKey(2, uuid.UUID(int=0x22))
THIRD = ReplicaKey(3, uuid.UUID(int=0x33))
VOTERS = VoterSet.of(VoterNode(k, (("CONTROLLER", (f"node{k.node_id}", 9093)),)) for k in (LOCAL, OTHER, THIRD))


class FailingStore(MemoryElectionStore):
    """A store whose writes can be made to fail (a full disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    def write(self, state: ElectionState) -> None:
        if self.fail:
            raise OSError("no space left on device")
        super().write(state)


def quorum(store=None, now_ms: int = 0) -> QuorumState:
    q = QuorumState(LOCAL, store if store is not None else MemoryElectionStore())
    q.initialize(now_ms, 1000)
    return q


def leader_state(q: QuorumState, epoch_start_offset: int = 0) -> LeaderState:
    return LeaderState(LOCAL, q.epoch, epoch_start_offset, VOTERS, frozenset({1, 2}), 0, 3000)


def make_leader(q: QuorumState) -> None:
    q.to_prospective(100)
    q.to_candidate(200)
    q.to_leader(leader_state(q))


# -- the starting point -----------------------------------------------------------------------


def test_initialize_with_nothing_stored() -> None:
    store = MemoryElectionStore()
    q = quorum(store, now_ms=500)
    assert isinstance(q.state, UnattachedState)
    assert (q.epoch, q.role, q.leader_id, q.voted_key) == (0, "unattached", -1, None)
    assert q.state.election_deadline_ms == 1500
    assert store.writes == 0  # reading is not writing


def test_restart_reads_back_the_vote() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_voted(4, OTHER, 1000)
    again = quorum(store, now_ms=50)
    assert (again.epoch, again.role, again.voted_key) == (4, "voted", OTHER)
    with pytest.raises(IllegalTransition, match="already voted"):
        again.to_voted(4, THIRD, 2000)
    again.to_voted(4, OTHER, 2000)  # the same vote again is fine
    assert store.state == ElectionState(4, -1, OTHER)


def test_restarted_leader_comes_back_unattached_in_its_epoch() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    make_leader(q)
    again = quorum(store)
    assert (again.role, again.epoch, again.leader_id) == ("voted", 1, -1)
    assert again.voted_key == LOCAL


# -- prospective / candidate / leader ------------------------------------------------------------


def test_prospective_persists_nothing() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_voted(3, OTHER, 1000)
    writes = store.writes
    q.to_prospective(5000)
    assert isinstance(q.state, ProspectiveState)
    assert (q.epoch, q.role, store.writes, store.state) == (3, "prospective", writes, ElectionState(3, -1, OTHER))
    assert q.state.voted_key == OTHER
    # A failed pre-vote goes back to unattached in the same epoch, keeping the vote.
    q.to_unattached(3, 6000)
    assert (q.role, q.voted_key, store.writes) == ("voted", OTHER, writes)


def test_prospective_remembers_the_leader_it_followed() -> None:
    q = quorum()
    q.to_follower(2, 3, ("node3", 9093), 1000)
    q.to_prospective(2000)
    assert (q.state.leader_id, q.state.leader_address) == (3, ("node3", 9093))
    assert q.leader_id == -1  # a prospective replica does not claim to follow anyone


def test_candidate_bumps_the_epoch_and_votes_for_itself() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_follower(2, 3, ("node3", 9093), 1000)
    q.to_prospective(2000)
    q.to_candidate(3000)
    assert isinstance(q.state, CandidateState)
    assert (q.epoch, q.role, q.voted_key, q.state.granted) == (3, "candidate", LOCAL, {1})
    assert store.state == ElectionState(3, -1, LOCAL)


def test_candidate_only_from_prospective() -> None:
    q = quorum()
    with pytest.raises(IllegalTransition, match="unattached in epoch 0 cannot become candidate"):
        q.to_candidate(1000)
    q.to_follower(1, 2, None, 1000)
    with pytest.raises(IllegalTransition):
        q.to_candidate(1000)
    assert q.role == "follower"


def test_leader_persists_itself_as_leader() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    make_leader(q)
    assert q.is_leader() and q.role == "leader" and q.leader_id == 1
    assert store.state == ElectionState(1, 1, LOCAL)


def test_leader_only_from_candidate_of_the_same_epoch() -> None:
    q = quorum()
    with pytest.raises(IllegalTransition):
        q.to_leader(leader_state(q))
    q.to_prospective(100)
    q.to_candidate(200)
    with pytest.raises(IllegalTransition):
        q.to_leader(LeaderState(LOCAL, 7, 0, VOTERS, frozenset({1, 2}), 0, 3000))
    assert q.role == "candidate"


def test_leader_cannot_go_back_in_its_own_epoch() -> None:
    q = quorum()
    make_leader(q)
    for move in (lambda: q.to_unattached(1, 100), lambda: q.to_follower(1, 2, None, 100),
                 lambda: q.to_voted(1, OTHER, 100), lambda: q.to_prospective(100)):
        with pytest.raises(IllegalTransition):
            move()
        assert q.is_leader()
    q.to_resigned(500, (OTHER,), {2, 3})
    assert isinstance(q.state, ResignedState) and q.epoch == 1
    with pytest.raises(IllegalTransition):
        q.to_resigned(500, (), set())
    with pytest.raises(IllegalTransition):  # a resigned leader cannot follow itself
        q.to_follower(1, 1, None, 100)
    with pytest.raises(IllegalTransition):  # nor anyone else in the epoch it led
        q.to_follower(1, 2, None, 100)
    q.to_follower(2, 2, None, 100)  # but follows whoever wins the next epoch
    assert (q.role, q.epoch, q.leader_id) == ("follower", 2, 2)


# -- epochs never go back, one vote per epoch --------------------------------------------------------


def test_epochs_never_go_back() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_unattached(5, 1000)
    assert store.state == ElectionState(5, -1, None)
    for move in (lambda: q.to_unattached(4, 100), lambda: q.to_voted(4, OTHER, 100),
                 lambda: q.to_follower(4, 2, None, 100)):
        with pytest.raises(IllegalTransition, match="epoch 4"):
            move()
    assert (q.epoch, q.role, store.state) == (5, "unattached", ElectionState(5, -1, None))


def test_no_second_vote_in_one_epoch() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_voted(2, OTHER, 1000)
    with pytest.raises(IllegalTransition, match="already voted"):
        q.to_voted(2, THIRD, 1000)
    # Neither through prospective, which keeps the vote of its epoch.
    q.to_prospective(2000)
    with pytest.raises(IllegalTransition, match="already voted"):
        q.to_voted(2, THIRD, 1000)
    assert store.state == ElectionState(2, -1, OTHER)
    q.to_voted(3, THIRD, 1000)  # a new epoch, a new vote
    assert (q.voted_key, store.state) == (THIRD, ElectionState(3, -1, THIRD))


def test_follower_and_candidate_do_not_vote_in_their_epoch() -> None:
    q = quorum()
    q.to_follower(2, 3, None, 1000)
    with pytest.raises(IllegalTransition, match="cannot vote"):
        q.to_voted(2, OTHER, 1000)
    q.to_prospective(1000)
    q.to_candidate(1000)
    with pytest.raises(IllegalTransition, match="cannot vote"):
        q.to_voted(3, OTHER, 1000)


def test_follower_keeps_its_leader_within_an_epoch() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_voted(2, OTHER, 1000)
    q.to_follower(2, 2, ("node2", 9093), 3000)
    assert isinstance(q.state, FollowerState)
    assert (q.leader_id, q.voted_key, q.state.leader_address) == (2, OTHER, ("node2", 9093))
    assert store.state == ElectionState(2, 2, OTHER)  # the vote stays with the leader
    with pytest.raises(IllegalTransition, match="cannot follow 3 in the same epoch"):
        q.to_follower(2, 3, None, 3000)
    q.to_follower(3, 3, None, 3000)
    assert store.state == ElectionState(3, 3, None)  # a new epoch: no vote


# -- the write comes before the role change --------------------------------------------------------


@pytest.mark.parametrize("move, role", [
    (lambda q: q.to_unattached(3, 100), "unattached"),
    (lambda q: q.to_voted(3, OTHER, 100), "voted"),
    (lambda q: q.to_follower(3, 2, None, 100), "follower"),
    (lambda q: (q.to_prospective(100), q.to_candidate(100)), "candidate"),
])
def test_failed_write_leaves_the_role_unchanged(move, role: str) -> None:
    store = FailingStore()
    q = quorum(store)
    q.to_unattached(2, 100)
    before = (store.state, store.writes)
    store.fail = True
    with pytest.raises(OSError):
        move(q)
    assert (store.state, store.writes) == before
    assert q.epoch == 2 and q.voted_key is None and q.leader_id == -1
    assert q.role in ("unattached", "prospective")  # not the role the write was for, nor its epoch 3
    assert q.state.epoch == 2
    store.fail = False
    move(q)  # and the same move works once the disk does
    assert q.role == role


def test_failed_write_keeps_a_candidate_from_leading() -> None:
    store = FailingStore()
    q = quorum(store)
    q.to_prospective(100)
    q.to_candidate(200)
    store.fail = True
    with pytest.raises(OSError):
        q.to_leader(leader_state(q))
    assert q.role == "candidate" and store.state == ElectionState(1, -1, LOCAL)


def test_unchanged_election_state_is_not_written_again() -> None:
    store = MemoryElectionStore()
    q = quorum(store)
    q.to_voted(2, OTHER, 100)
    writes = store.writes
    q.to_voted(2, OTHER, 200)
    q.to_unattached(2, 300)
    assert store.writes == writes


# -- the quorum-state file ------------------------------------------------------------------------


def test_file_store_data_version_1(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    store = FileElectionStore(path, data_version=1)
    q = quorum(store)
    q.to_voted(4, OTHER, 100)
    assert path.read_text() == (f'{{"leaderId":-1,"leaderEpoch":4,"votedId":2,'
                                f'"votedDirectoryId":"{uuid_to_kafka(OTHER.directory_id)}","data_version":1}}')
    assert path.read_text() == dump_quorum_state(QuorumStateData(-1, 4, 2, OTHER.directory_id, data_version=1))
    q.to_follower(4, 2, None, 100)
    assert path.read_text() == dump_quorum_state(QuorumStateData(2, 4, 2, OTHER.directory_id, data_version=1))
    q.to_unattached(5, 100)
    assert path.read_text() == ('{"leaderId":-1,"leaderEpoch":5,"votedId":-1,'
                                '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    again = quorum(FileElectionStore(path, data_version=1))
    assert (again.epoch, again.voted_key, again.role) == (5, None, "unattached")


def test_file_store_data_version_0(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    local = ReplicaKey(1)
    store = FileElectionStore(path, data_version=0, static_voter_ids=(1, 2, 3))
    q = QuorumState(local, store)
    q.initialize(0, 1000)
    assert not path.exists()
    q.to_prospective(100)
    assert not path.exists()  # a pre-vote writes nothing
    q.to_candidate(200)
    assert path.read_text() == ('{"clusterId":"","leaderId":-1,"leaderEpoch":1,"votedId":1,"appliedOffset":0,'
                                '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    q.to_leader(LeaderState(local, 1, 0, VoterSet.of(VoterNode(ReplicaKey(i), ()) for i in (1, 2, 3)),
                            frozenset({1, 2}), 0, 3000))
    assert path.read_text() == dump_quorum_state(QuorumStateData(1, 1, 1, current_voters=(1, 2, 3), data_version=0))
    again = QuorumState(local, FileElectionStore(path, data_version=0, static_voter_ids=(1, 2, 3)))
    assert again.initialize(0, 1000) == ElectionState(1, 1, ReplicaKey(1))
    assert again.voted_key == ReplicaKey(1)


def test_file_store_restart_keeps_the_vote_and_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    q = quorum(FileElectionStore(path))
    q.to_voted(7, THIRD, 100)
    again = quorum(FileElectionStore(path))
    assert again.voted_key == THIRD and again.voted_key.directory_id == THIRD.directory_id
    with pytest.raises(IllegalTransition):
        again.to_voted(7, OTHER, 100)


def test_a_restarted_follower_fetches_from_its_leader_at_once():
    """Kafka's initialize: the election state names a leader, so the replica follows it again
    without an election timeout; nothing is written."""
    from engine.raft.election_store import ElectionState, MemoryElectionStore
    from engine.raft.quorum_state import FollowerState, IllegalTransition, QuorumState
    from engine.raft.voter_set import ReplicaKey

    store = MemoryElectionStore()
    store.write(ElectionState(4, 2, ReplicaKey(2)))
    q = QuorumState(ReplicaKey(1), store)
    q.initialize(100, 1000)
    q.resume_following(2, ("h", 1), 2100)
    assert isinstance(q.state, FollowerState) and (q.epoch, q.leader_id, q.voted_key) == (4, 2, ReplicaKey(2))
    assert store.writes == 1
    with pytest.raises(IllegalTransition):
        q.resume_following(3, ("h", 1), 2100)
