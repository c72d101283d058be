"""LeaderState: the high watermark, observers, check-quorum, successors, caught-up replicas."""

from __future__ import annotations

import uuid

import pytest

from engine.raft.leader_state import LeaderState
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet


def key(node_id: int) -> ReplicaKey:
    return ReplicaKey(node_id, uuid.UUID(int=node_id))


def voter_set(*ids: int) -> VoterSet:
    return VoterSet.of(VoterNode(key(i), (("CONTROLLER", (f"node{i}", 9093)),)) for i in ids)


def leader(*ids: int, epoch_start_offset: int = 10, now_ms: int = 0, timeout_ms: int = 3000) -> LeaderState:
    ids = ids or (1, 2, 3)
    return LeaderState(key(1), 5, epoch_start_offset, voter_set(*ids), frozenset({1, 2}), now_ms, timeout_ms)


def test_new_leader_has_no_high_watermark_and_owes_begin_epoch_to_the_others() -> None:
    state = leader(1, 2, 3)
    assert state.high_watermark is None
    assert state.unacked_voters == {2, 3}
    assert set(state.progress) == {1, 2, 3} and state.observers == {}
    state.update_replica(key(2), 0, 10, 11)
    assert state.unacked_voters == {3}  # a fetch acknowledges the epoch


def test_high_watermark_needs_a_majority_of_voters() -> None:
    state = leader(1, 2, 3)
    assert not state.update_local(15, 0)
    assert state.high_watermark is None  # only the leader has it
    assert state.update_replica(key(3), 12, 1, 15)
    assert state.high_watermark == 12  # leader 15, node 3 12: the second highest
    assert state.update_replica(key(2), 15, 2, 15)
    assert state.high_watermark == 15


def test_high_watermark_with_five_voters() -> None:
    state = leader(1, 2, 3, 4, 5)
    state.update_local(20, 0)
    state.update_replica(key(2), 18, 0, 20)
    assert state.high_watermark is None  # 2 of 5
    state.update_replica(key(5), 14, 0, 20)
    assert state.high_watermark == 14  # 20, 18, 14: three of five
    state.update_replica(key(4), 19, 0, 20)
    assert state.high_watermark == 18


def test_high_watermark_waits_for_an_entry_of_the_leaders_epoch() -> None:
    # The log held offsets 0..9 from earlier epochs; the LeaderChangeMessage is at 10.
    state = leader(1, 2, 3, epoch_start_offset=10)
    state.update_local(11, 0)
    assert not state.update_replica(key(2), 10, 0, 11)  # up to but not including our first entry
    assert state.high_watermark is None
    assert state.update_replica(key(2), 11, 1, 11)
    assert state.high_watermark == 11


def test_high_watermark_never_decreases_when_a_follower_truncates() -> None:
    state = leader(1, 2, 3)
    state.update_local(30, 0)
    state.update_replica(key(2), 30, 0, 30)
    state.update_replica(key(3), 25, 0, 30)
    assert state.high_watermark == 30
    assert not state.update_replica(key(2), 12, 1, 30)  # e.g. node 2 lost its disk's tail
    assert state.high_watermark == 30
    assert state.progress[2].end_offset == 12  # its progress does drop


def test_high_watermark_never_decreases_when_a_voter_is_added() -> None:
    state = leader(1, 2, 3)
    state.update_local(30, 0)
    state.update_replica(key(2), 30, 0, 30)
    assert state.high_watermark == 30
    state.set_voters(voter_set(1, 2, 3, 4))  # two new voters far behind: majority 3 of 4
    state.update_replica(key(4), 11, 1, 30)
    state.update_replica(key(3), 11, 1, 30)
    assert not state.update_local(31, 2)
    assert state.high_watermark == 30
    state.update_replica(key(3), 31, 3, 31)
    assert not state.update_replica(key(4), 29, 3, 31)  # third highest is 29 < 30
    assert state.high_watermark == 30
    assert state.update_replica(key(4), 31, 4, 31)
    assert state.high_watermark == 31


def test_high_watermark_never_decreases_when_a_voter_is_removed() -> None:
    state = leader(1, 2, 3)
    state.update_local(30, 0)
    state.update_replica(key(2), 30, 0, 30)
    state.update_replica(key(3), 12, 0, 30)
    state.set_voters(voter_set(1, 3))  # now leader 30 and node 3 12 form the majority
    assert not state.update_local(30, 1)
    assert state.high_watermark == 30
    assert 2 not in state.progress and key(2) in state.observers  # a removed voter may keep fetching
    assert not state.update_replica(key(2), 30, 2, 30)  # ... and no longer counts


def test_observers_do_not_count() -> None:
    state = leader(1, 2, 3)
    state.update_local(20, 0)
    assert not state.update_replica(key(7), 20, 0, 20)
    assert not state.update_replica(ReplicaKey(2, uuid.UUID(int=99)), 20, 0, 20)  # node 2 on another disk
    assert state.high_watermark is None
    assert set(state.observers) == {key(7), ReplicaKey(2, uuid.UUID(int=99))}
    assert state.progress[2].end_offset == -1
    assert state.unacked_voters == {2, 3}
    assert state.progress_of(key(7)).end_offset == 20
    assert state.progress_of(key(2)) is state.progress[2]


def test_an_observer_promoted_to_voter_keeps_its_progress() -> None:
    state = leader(1, 2, 3)
    state.update_local(20, 0)
    state.update_replica(key(4), 20, 7, 20)
    state.set_voters(voter_set(1, 2, 3, 4))
    assert state.progress[4].end_offset == 20 and state.progress[4].last_fetch_ms == 7
    assert key(4) not in state.observers


def test_check_quorum() -> None:
    # Kafka's check-quorum: the deadline is one timeout after the latest time a majority (the leader
    # counting as now) had fetched; voters that never fetched count from the leader's start.
    state = leader(1, 2, 3, now_ms=0, timeout_ms=3000)
    assert state.check_quorum(2999)
    assert state.check_quorum_deadline_ms == 3000
    state.update_replica(key(2), 0, 1000, 11)
    assert state.check_quorum(3000)  # leader + node 2 (at 1000) are a majority
    assert state.check_quorum_deadline_ms == 4000
    assert state.check_quorum(3999)
    state.update_replica(key(7), 0, 3500, 11)  # an observer does not keep us in office
    assert not state.check_quorum(4000)
    state.update_replica(key(3), 0, 3800, 11)  # node 3 fetched since: the timer restarts from it
    assert state.check_quorum(4000) and state.check_quorum_deadline_ms == 6800
    assert not state.check_quorum(6800)


def test_check_quorum_needs_a_majority_of_five() -> None:
    state = leader(1, 2, 3, 4, 5, now_ms=0, timeout_ms=100)
    state.update_replica(key(2), 0, 10, 11)
    assert not state.check_quorum(100)
    state.update_replica(key(2), 0, 110, 11)
    state.update_replica(key(5), 0, 120, 11)
    assert state.check_quorum(200)


def test_check_quorum_single_voter_never_expires() -> None:
    state = leader(1, now_ms=0, timeout_ms=100)
    for now in (100, 1_000, 100_000):
        assert state.check_quorum(now)


def test_check_quorum_leader_outside_the_voter_set_needs_a_majority_of_the_others() -> None:
    # Kafka's updateCheckQuorumForFollowingVoter: a leader outside the voter set is no part of the
    # majority (its resignation after the removal commits is voter_changes.poll_leader's business).
    state = leader(1, 2, 3, now_ms=0, timeout_ms=100)
    state.set_voters(voter_set(2, 3))
    assert 1 not in state.progress
    assert state.check_quorum(99)
    assert not state.check_quorum(100)  # neither remaining voter has fetched
    state.update_replica(key(2), 0, 50, 11)
    assert not state.check_quorum(100)  # one of two is no majority without the leader
    state.update_replica(key(3), 0, 60, 11)
    assert state.check_quorum(100) and state.check_quorum_deadline_ms == 150
    assert not state.check_quorum(150)


def test_successors_most_caught_up_first() -> None:
    state = leader(1, 2, 3, 4, 5)
    state.update_local(50, 0)
    state.update_replica(key(3), 40, 0, 50)
    state.update_replica(key(5), 45, 0, 50)
    state.update_replica(key(2), 40, 0, 50)
    state.update_replica(key(9), 50, 0, 50)  # an observer is no successor
    assert state.successors() == (key(5), key(2), key(3), key(4))


def test_caught_up() -> None:
    state = leader(1, 2, 3)
    state.update_local(100, 0)
    assert not state.caught_up(key(7), 0, 2000)  # never fetched
    state.update_replica(key(7), 20, 1000, 100)
    assert not state.caught_up(key(7), 1000, 2000)  # behind
    state.update_replica(key(7), 100, 1500, 110)  # reached our end of its previous fetch
    assert state.progress_of(key(7)).last_caught_up_ms == 1000
    assert state.caught_up(key(7), 2500, 2000)
    assert not state.caught_up(key(7), 3001, 2000)
    state.update_replica(key(7), 110, 4000, 110)  # at our end now
    assert state.caught_up(key(7), 4000, 0)


@pytest.mark.parametrize("fetch_offset", [0, 5, 10])
def test_no_high_watermark_at_or_before_the_epoch_start(fetch_offset: int) -> None:
    state = leader(1, 2, 3, epoch_start_offset=10)
    state.update_local(10, 0)
    state.update_replica(key(2), fetch_offset, 0, 10)
    state.update_replica(key(3), fetch_offset, 0, 10)
    assert state.high_watermark is None
