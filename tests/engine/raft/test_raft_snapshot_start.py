"""A replica whose log starts after a snapshot: the format's 0-0 checkpoint left beside it,
fetches below the log start, a request the leader fails to answer, and the epoch it starts in.

Real files where the log is on disk (FileRaftLog in tmp_path), MemoryRaftLog for the rule alone,
and the deterministic simulator for a whole quorum started from a snapshot.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.common.errors import StorageError
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode as E
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState, MemoryElectionStore
from engine.raft.file_raft_log import FileRaftLog
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.quorum_state import QuorumState
from engine.sim.state_machine import SNAPSHOT_STATE, data_record
from engine.sim.raft_simulation import SimConfig, Simulation
from engine.raft.voter_set import ReplicaKey
from engine.storage.metadata_log import METADATA_PARTITION_DIR
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes, write_snapshot
from test_raft_client_rpcs import CID, Replica, append_history, part

BOOTSTRAP = SnapshotId(0, 0)
LATER = SnapshotId(100, 1)


def _formatted_dir(tmp_path: Path) -> Path:
    """What ``storage format`` leaves: the partition directory holding the 0-0 checkpoint."""
    directory = tmp_path / METADATA_PARTITION_DIR
    directory.mkdir()
    write_snapshot(directory, BOOTSTRAP, [], last_contained_log_timestamp_ms=0, now_ms=0)
    return directory


def _later_snapshot_bytes(epoch: int = 1) -> bytes:
    # The simulator's state machine loads a snapshot by its chain value (0: a fresh chain).
    state = m.ConfigRecordV0(resource_type=2, resource_name="sim", name=SNAPSHOT_STATE, value="0")
    return snapshot_bytes([state], epoch=epoch, last_contained_log_timestamp_ms=0, now_ms=0)


def _history_with_later_snapshot(tmp_path: Path) -> Path:
    """A formatted directory whose log holds 100 records of epoch 1 from offset 0, and a snapshot
    at 100 beside the 0-0 checkpoint."""
    directory = _formatted_dir(tmp_path)
    log = FileRaftLog(directory)
    append_history(log, [(1, 100)])
    log.create_snapshot(LATER, [data_record("state")], kraft_control=[], last_contained_log_timestamp_ms=0,
                        now_ms=0)
    log.close()
    return directory


def _fetched_snapshot(response) -> tuple[int, int]:
    p = part(response)
    assert p.error_code == E.none, p
    return p.snapshot_id.end_offset, p.snapshot_id.epoch


# -- FileRaftLog open: snapshots below the log start go --------------------------------------


def test_open_deletes_the_bootstrap_checkpoint_below_a_log_starting_at_a_later_snapshot(tmp_path):
    directory = _formatted_dir(tmp_path)
    (directory / LATER.file_name).write_bytes(_later_snapshot_bytes())  # no segment at all
    log = FileRaftLog(directory)
    try:
        assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (100, 100, 1)
        assert log.earliest_snapshot_id() == log.latest_snapshot_id() == LATER
        assert not (directory / BOOTSTRAP.file_name).exists()
        assert (directory / LATER.file_name).exists()
    finally:
        log.close()


def test_open_keeps_snapshots_while_the_log_still_holds_their_offsets(tmp_path):
    directory = _history_with_later_snapshot(tmp_path)
    log = FileRaftLog(directory)
    try:
        # The segment from 0 is still there (metashell reads history from it): Kafka keeps it too.
        assert (directory / BOOTSTRAP.file_name).exists()
        assert (log.earliest_snapshot_id(), log.latest_snapshot_id(), log.start_offset) == (BOOTSTRAP, LATER, 100)
    finally:
        log.close()


# -- the leader: a fetch below the log start gets the latest snapshot --------------------------


def _leader(log) -> Replica:
    r = Replica(log=log)
    r.elect(0)
    return r


def test_leader_sends_the_latest_snapshot_to_a_fetch_at_0_with_the_bootstrap_checkpoint_on_disk(tmp_path):
    directory = _history_with_later_snapshot(tmp_path)
    log = FileRaftLog(directory)  # segments from 0, snapshots 0-0 and 100-1, the log readable from 100
    try:
        r = _leader(log)
        [response] = r.fetch(1000, 2, 0, 0)
        assert _fetched_snapshot(response) == (100, 1)
        # At the log start in the snapshot's epoch the log is read; the leader is still serving.
        [response] = r.fetch(1000, 2, 100, 1)
        assert part(response).error_code == E.none and part(response).snapshot_id.end_offset == -1
        assert rm.fetched_records(part(response))
        assert r.client.role == "leader"
    finally:
        log.close()


def test_leader_started_from_a_snapshot_with_an_empty_log_sends_it(tmp_path):
    directory = _formatted_dir(tmp_path)
    (directory / LATER.file_name).write_bytes(_later_snapshot_bytes())
    log = FileRaftLog(directory)
    try:
        r = _leader(log)
        [response] = r.fetch(1000, 2, 0, 0)
        assert _fetched_snapshot(response) == (100, 1)
    finally:
        log.close()


def test_the_rule_ignores_an_older_snapshot_left_in_a_memory_log():
    log = MemoryRaftLog()
    log.create_snapshot(BOOTSTRAP, [], kraft_control=[], last_contained_log_timestamp_ms=0, now_ms=0)
    append_history(log, [(1, 100)])
    log.create_snapshot(LATER, [data_record("state")], kraft_control=[], last_contained_log_timestamp_ms=0,
                        now_ms=0)
    r = _leader(log)
    assert _fetched_snapshot(r.fetch(1000, 2, 0, 0)[0]) == (100, 1)
    assert _fetched_snapshot(r.fetch(1000, 2, 100, 0)[0]) == (100, 1)  # at the start, another epoch


def test_a_log_starting_at_0_is_read_whole_despite_its_bootstrap_checkpoint():
    log = MemoryRaftLog()
    log.create_snapshot(BOOTSTRAP, [], kraft_control=[], last_contained_log_timestamp_ms=0, now_ms=0)
    append_history(log, [(1, 5)])
    r = _leader(log)
    [response] = r.fetch(1000, 2, 0, 0)
    assert part(response).snapshot_id.end_offset == -1 and rm.fetched_records(part(response))


# -- a request the leader fails to answer is that request's error, not the node's ------------


class _BrokenRead:
    """The leader's log, whose reads fail (a disk error, or a bug)."""

    def __init__(self, log) -> None:
        self._log = log
        self.broken = True

    def __getattr__(self, name):
        return getattr(self._log, name)

    def read(self, start_offset: int, max_bytes: int) -> bytes:
        if self.broken:
            raise StorageError("cannot read the segment", path="/somewhere/00000000000000000000.log")
        return self._log.read(start_offset, max_bytes)

    def read_snapshot_chunk(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        if self.broken:
            raise StorageError("the snapshot file vanished", path=snapshot_id.file_name)
        return self._log.read_snapshot_chunk(snapshot_id, position, max_bytes)


def test_a_failing_fetch_is_answered_unknown_server_error_and_the_leader_serves_on(caplog):
    log = MemoryRaftLog()
    append_history(log, [(1, 5)])
    broken = _BrokenRead(log)
    r = _leader(broken)
    with caplog.at_level(logging.ERROR, logger="engine.raft.requests"):
        [response] = r.fetch(1000, 2, 0, 0)
    assert response.error_code == E.unknown_server_error
    [line] = [rec.getMessage() for rec in caplog.records if rec.name == "engine.raft.requests"]
    assert "FetchRequest" in line and "cannot read the segment" in line and "\n" not in line
    assert r.client.role == "leader"
    broken.broken = False
    [response] = r.fetch(1001, 2, 0, 0)
    assert response.error_code == E.none and rm.fetched_records(part(response))


def test_a_failing_fetch_snapshot_is_answered_unknown_server_error():
    log = MemoryRaftLog()
    append_history(log, [(1, 100)])
    log.create_snapshot(LATER, [data_record("state")], kraft_control=[], last_contained_log_timestamp_ms=0,
                        now_ms=0)
    broken = _BrokenRead(log)
    r = _leader(broken)
    request = rm.fetch_snapshot_request(CID, ReplicaKey(2), r.client.epoch, (100, 1), 0, 1 << 20)
    assert r.answer(1000, request).error_code == E.unknown_server_error
    broken.broken = False
    response = r.answer(1001, request)
    assert response.error_code == E.none and part(response).unaligned_records
    assert r.client.role == "leader"


def test_a_parked_fetch_whose_answer_fails_gets_an_error_answer():
    log = MemoryRaftLog()
    append_history(log, [(1, 5)])
    broken = _BrokenRead(log)
    broken.broken = False
    r = _leader(broken)
    end = log.end_offset
    r.fetch(1000, 2, end, r.client.epoch)  # follower 2 is caught up and told the high watermark
    assert r.fetch(1000, 2, end, r.client.epoch, max_wait_ms=500) == []  # parked: nothing new yet
    broken.broken = True
    r.client.append_now(r.client.epoch, [data_record("new")], 1000)
    token_responses = [m.response for m in r.client.poll(1600).messages if type(m).__name__ == "OutboundResponse"]
    assert [resp.error_code for resp in token_responses] == [E.unknown_server_error]
    assert r.client.role == "leader"


# -- QuorumState.initialize moves up to the log's epoch ---------------------------------------


def test_initialize_starts_unattached_in_the_log_epoch_when_the_stored_one_is_older():
    store = MemoryElectionStore()
    quorum = QuorumState(ReplicaKey(1), store)
    stored = quorum.initialize(0, 1000, log_epoch=4)
    assert (quorum.epoch, quorum.role, quorum.voted_key, quorum.leader_id) == (4, "unattached", None, -1)
    assert stored == store.state == ElectionState(4)


def test_initialize_keeps_a_stored_epoch_ahead_of_the_log():
    store = MemoryElectionStore()
    store.write(ElectionState(6, -1, ReplicaKey(2)))
    quorum = QuorumState(ReplicaKey(1), store)
    quorum.initialize(0, 1000, log_epoch=4)
    assert (quorum.epoch, quorum.voted_key, store.writes) == (6, ReplicaKey(2), 1)


def test_a_quorum_started_from_a_snapshot_in_epoch_1_without_quorum_state_elects_a_leader():
    sim = Simulation(11, SimConfig(voters=3, observers=0, kraft_version=0, loss=0.0, duplicate=0.0))
    data = _later_snapshot_bytes(epoch=1)
    for node_id, node in sim.nodes.items():
        sim.crash(node_id)
        node.log, node.store = MemoryRaftLog(), MemoryElectionStore()  # a snapshot, no quorum-state file
        node.log.begin_snapshot_download(LATER)
        node.log.append_snapshot_chunk(LATER, 0, data)
        node.log.complete_snapshot_download(LATER)
    for node_id in sim.nodes:
        sim.start(node_id)
        assert sim.nodes[node_id].client.epoch == 1
    assert sim.run_until(lambda: sim.leader() is not None, 10_000)
    leader = sim.leader()
    assert leader.client.epoch > 1
    assert sim.run_until(lambda: leader.client.high_watermark is not None
                         and leader.client.high_watermark > 100, 10_000)
