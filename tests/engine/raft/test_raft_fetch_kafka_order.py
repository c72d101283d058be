"""A Fetch as Kafka 4.1's leader answers it (KafkaRaftClient.handleFetchRequest and
tryCompleteFetchRequest, ReplicatedLog.validateOffsetAndEpoch):

1. the sanity rule before anything else, leader or not: a negative MaxWaitMs, a negative fetch
   offset, a negative last fetched epoch, or one above the fetcher's own CurrentLeaderEpoch is
   INVALID_REQUEST;
2. then validateLeaderOnlyRequest in its order: fenced (an older epoch), unknown (a newer one),
   and only then "not the leader";
3. an error answer carries no high watermark (-1) and the log start offset;
4. where the fetch stands: at offset 0 the latest snapshot once there is one other than the
   format's 0-0 checkpoint; a log starting at 0 read from 0; a snapshot before the log start, at
   it in another epoch than the snapshot the log starts at, or on an older epoch; else valid or
   diverging.

The pure core (RaftClient over a MemoryRaftLog, a fixed clock) as the other RPC tests drive it.
"""

from __future__ import annotations

import pytest

from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState, MemoryElectionStore
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.raft_requests import fetch_position
from engine.raft.voter_set import ReplicaKey
from engine.records.kio_codec import ErrorCode as E
from engine.sim.state_machine import data_record
from engine.storage.snapshot_writer import SnapshotId
from test_raft_client_rpcs import CID, Replica, append_history, part


def _leader_in_epoch_4() -> tuple[Replica, int]:
    store = MemoryElectionStore()
    store.write(ElectionState(3))
    r = Replica(store=store)
    now = r.elect()
    assert r.client.epoch == 4
    r.commit_leader_change(now)
    return r, now


def _fetch(r: Replica, now: int, *, epoch: int, offset: int, last_epoch: int, max_wait_ms: int = 0):
    [response] = r.request(now, rm.fetch_request(CID, ReplicaKey(2), epoch, offset, last_epoch, max_wait_ms, 1 << 20))
    return part(response)


# -- 1. the sanity rule comes first --------------------------------------------------------------

def test_a_negative_max_wait_is_an_invalid_request() -> None:
    r, now = _leader_in_epoch_4()
    before = r.client.quorum.state.progress[2].last_fetch_ms
    p = _fetch(r, now + 5, epoch=4, offset=1, last_epoch=4, max_wait_ms=-1)
    assert p.error_code == E.invalid_request and not p.records
    assert r.client.quorum.state.progress[2].last_fetch_ms == before  # nothing recorded


def test_a_last_fetched_epoch_above_the_fetchers_own_epoch_is_invalid_even_where_ours_is_higher() -> None:
    # The fetcher names epoch 3 and says it holds epoch 4: impossible whatever our epoch is.
    r, now = _leader_in_epoch_4()
    assert _fetch(r, now, epoch=3, offset=1, last_epoch=4).error_code == E.invalid_request
    assert _fetch(r, now, epoch=5, offset=1, last_epoch=6).error_code == E.invalid_request
    # Within its own epoch it is sane, and the epoch checks answer.
    assert _fetch(r, now, epoch=3, offset=1, last_epoch=3).error_code == E.fenced_leader_epoch
    assert _fetch(r, now, epoch=5, offset=1, last_epoch=5).error_code == E.unknown_leader_epoch


@pytest.mark.parametrize("offset, last_epoch", [(-1, 0), (0, -1), (3, 1)])
def test_an_insane_fetch_at_a_replica_that_does_not_lead_is_invalid_not_redirected(offset, last_epoch) -> None:
    r = Replica()  # unattached in epoch 0
    assert not r.client.quorum.is_leader()
    p = _fetch(r, 10, epoch=0, offset=offset, last_epoch=last_epoch)
    assert p.error_code == E.invalid_request


# -- 2. the leader-only checks, in Kafka's order -------------------------------------------------

def test_an_older_epoch_is_fenced_before_not_leader_is_said() -> None:
    store = MemoryElectionStore()
    store.write(ElectionState(4))
    r = Replica(store=store)  # epoch 4, not leading
    assert not r.client.quorum.is_leader()
    assert _fetch(r, 10, epoch=3, offset=0, last_epoch=0).error_code == E.fenced_leader_epoch
    assert _fetch(r, 10, epoch=5, offset=0, last_epoch=0).error_code == E.unknown_leader_epoch
    assert _fetch(r, 10, epoch=4, offset=0, last_epoch=0).error_code == E.not_leader_or_follower


def test_fetch_snapshot_takes_the_same_checks_in_the_same_order() -> None:
    store = MemoryElectionStore()
    store.write(ElectionState(4))
    r = Replica(store=store)  # epoch 4, not leading

    def error(epoch: int):
        request = rm.fetch_snapshot_request(CID, ReplicaKey(2), epoch, (6, 1), 0, 1 << 20)
        return part(r.answer(10, request)).error_code

    assert [error(3), error(5), error(4)] == [E.fenced_leader_epoch, E.unknown_leader_epoch, E.not_leader_or_follower]


# -- 3. what an error answer carries -------------------------------------------------------------

def test_an_error_answer_tells_no_high_watermark_and_the_log_start() -> None:
    log = MemoryRaftLog()
    append_history(log, [(1, 10)])
    log.create_snapshot(SnapshotId(6, 1), [data_record("s")], kraft_control=[], last_contained_log_timestamp_ms=5,
                        now_ms=0)
    log.delete_before_snapshot()
    store = MemoryElectionStore()
    store.write(ElectionState(1))
    r = Replica(log=log, store=store)
    now = r.elect()
    r.commit_leader_change(now)
    assert r.client.high_watermark == 11
    p = _fetch(r, now + 1, epoch=1, offset=11, last_epoch=1)
    assert p.error_code == E.fenced_leader_epoch
    assert (p.high_watermark, p.log_start_offset) == (-1, 6)
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 2)


# -- 4. where a fetch stands ---------------------------------------------------------------------

def _log_with_snapshot_at_6() -> MemoryRaftLog:
    log = MemoryRaftLog()
    append_history(log, [(1, 10)])  # epoch 1: offsets 0-9
    log.create_snapshot(SnapshotId(6, 1), [data_record("s")], kraft_control=[], last_contained_log_timestamp_ms=5,
                        now_ms=0)
    log.delete_before_snapshot()
    return log


@pytest.mark.parametrize("offset, last_epoch, expected", [
    (0, 0, ("snapshot", (6, 1))),   # an empty follower: the snapshot, not the log
    (2, 1, ("snapshot", (6, 1))),   # before the log start
    (6, 0, ("snapshot", (6, 1))),   # at the start, in another epoch than the snapshot's
    (7, 0, ("snapshot", (6, 1))),   # on an epoch older than the snapshot's
    (6, 1, ("valid", None)),        # at the start in the snapshot's epoch: read the log
    (8, 1, ("valid", None)),
    (10, 1, ("valid", None)),       # at the end
    (12, 1, ("diverging", (10, 1))),  # more of epoch 1 than we hold
])
def test_where_a_fetch_stands_against_a_log_starting_at_a_snapshot(offset, last_epoch, expected) -> None:
    assert fetch_position(_log_with_snapshot_at_6(), offset, last_epoch) == expected


def test_a_log_starting_at_0_is_read_from_0_despite_its_bootstrap_checkpoint() -> None:
    log = MemoryRaftLog()
    log.create_snapshot(SnapshotId(0, 0), [], kraft_control=[], last_contained_log_timestamp_ms=0, now_ms=0)
    append_history(log, [(1, 3), (3, 2)])  # epoch 1: 0-2, epoch 3: 3-4
    assert fetch_position(log, 0, 0) == ("valid", None)
    assert fetch_position(log, 3, 1) == ("valid", None)
    assert fetch_position(log, 6, 2) == ("diverging", (3, 1))  # epoch 2 is not ours: epoch 1 ends at 3


def test_the_snapshot_the_log_starts_at_decides_not_an_older_one_left_beside_it() -> None:
    # The format's 0-0 checkpoint still there below a later snapshot (FileRaftLog keeps it while
    # the segments from 0 remain): the log starts at 100, in epoch 1.
    log = MemoryRaftLog()
    log.create_snapshot(SnapshotId(0, 0), [], kraft_control=[], last_contained_log_timestamp_ms=0, now_ms=0)
    append_history(log, [(1, 120)])
    log.create_snapshot(SnapshotId(100, 1), [data_record("s")], kraft_control=[], last_contained_log_timestamp_ms=0,
                        now_ms=0)
    assert (log.earliest_snapshot_id(), log.start_offset) == (SnapshotId(0, 0), 100)
    assert fetch_position(log, 0, 0) == ("snapshot", (100, 1))
    assert fetch_position(log, 100, 1) == ("valid", None)  # just installed that snapshot: no loop
    assert fetch_position(log, 100, 0) == ("snapshot", (100, 1))
