"""The RaftLog contract (engine.raft.raft_log), once, over MemoryRaftLog and FileRaftLog.

``logs.reopen(log)`` is a restart: the file log is closed and opened again, the memory
log crashes. Only what was flushed must survive either, so tests flush before it.
A Hypothesis property drives both implementations with the same operations and
checks they stay byte for byte alike.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engine.records import metadata_records as m
from engine.common.errors import StorageError
from engine.records.kio_codec import KRaftVersionRecord, LeaderChangeMessage, LeaderChangeVoter, i16, i32
from engine.records.metadata_record_serde import (
    LEADER_CHANGE, SNAPSHOT_FOOTER, SNAPSHOT_HEADER, ControlRecord, MetadataRecord, control_record, encode_record,
)
from engine.raft.file_raft_log import FileRaftLog
from engine.raft.memory_raft_log import MemoryRaftLog, leader_batch_bytes
from engine.raft.raft_log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, OffsetAndEpoch, RaftLog
from engine.records.record_batch import build_batch, encode_batch
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes

ALL = 1 << 30  # max_bytes that reads everything


def noop() -> MetadataRecord:
    return m.NoOpRecordV0()


def feature(level: int) -> MetadataRecord:
    return m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(level))


def leader_change(leader: int) -> ControlRecord:
    voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    return control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(leader), voters=voters,
                                              granting_voters=voters[:2]))


KRAFT_CONTROL = [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(0)))]


class Logs:
    """Makes fresh logs of one kind and restarts them; closes them all at the end."""

    def __init__(self, kind: str, tmp_path: Path, segment_bytes: int | None = None):
        self.kind, self.tmp_path, self.segment_bytes = kind, tmp_path, segment_bytes
        self.opened: list[RaftLog] = []
        self.count = 0

    def _open(self, directory: Path) -> RaftLog:
        extra = {} if self.segment_bytes is None else {"segment_bytes": self.segment_bytes}
        log = FileRaftLog.open(directory, **extra)
        self.opened.append(log)
        return log

    def new(self) -> RaftLog:
        if self.kind == "memory":
            return MemoryRaftLog()
        self.count += 1
        return self._open(self.tmp_path / f"log{self.count}")

    def reopen(self, log: RaftLog) -> RaftLog:
        if isinstance(log, MemoryRaftLog):
            log.crash()
            return log
        log.close()
        return self._open(log.directory.parent)

    def close_all(self) -> None:
        for log in self.opened:
            log.close()


@pytest.fixture(params=["memory", "file"])
def logs(request, tmp_path: Path) -> Iterator[Logs]:
    made = Logs(request.param, tmp_path)
    yield made
    made.close_all()


@pytest.fixture
def log(logs: Logs) -> RaftLog:
    return logs.new()


def fill(log: RaftLog, epochs: list[int], per_batch: int = 3) -> None:
    """One batch of ``per_batch`` FeatureLevelRecords per entry of ``epochs``."""
    for epoch in epochs:
        log.append_as_leader([feature(log.end_offset + i) for i in range(per_batch)], epoch=epoch,
                             timestamp_ms=1000 + log.end_offset)


def state(log: RaftLog) -> tuple:
    """What a caller can observe of a log, for 'nothing changed' checks."""
    return (log.start_offset, log.end_offset, log.flushed_end_offset, log.last_fetched_epoch(),
            log.latest_snapshot_id(), log.earliest_snapshot_id(), log.read(log.start_offset, ALL),
            [log.end_offset_for_epoch(e) for e in range(-1, 8)])


def make_snapshot(log: RaftLog, end_offset: int, epoch: int, records: int = 3) -> SnapshotId:
    snapshot_id = SnapshotId(end_offset, epoch)
    log.create_snapshot(snapshot_id, [feature(i) for i in range(records)], kraft_control=KRAFT_CONTROL,
                        last_contained_log_timestamp_ms=7, now_ms=8)
    return snapshot_id


def download(source: RaftLog, target: RaftLog, snapshot_id: SnapshotId, chunk: int = 37) -> None:
    """Copy a snapshot chunk by chunk, as FetchSnapshot does."""
    target.begin_snapshot_download(snapshot_id)
    position, size = 0, source.snapshot_size(snapshot_id)
    while position < size:
        data = source.read_snapshot_chunk(snapshot_id, position, chunk)
        target.append_snapshot_chunk(snapshot_id, position, data)
        position += len(data)
    target.complete_snapshot_download(snapshot_id)


# -- appending -------------------------------------------------------------------------


def test_empty_log(log: RaftLog) -> None:
    assert (log.start_offset, log.end_offset, log.flushed_end_offset) == (0, 0, 0)
    assert log.last_fetched_epoch() == UNDEFINED_EPOCH
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)
    assert log.read(0, ALL) == b"" and list(log.batches(0)) == []
    assert log.latest_snapshot_id() is None and log.earliest_snapshot_id() is None


def test_append_as_leader_offsets_epochs_and_bytes(log: RaftLog) -> None:
    assert log.append_as_leader([noop()] * 3, epoch=1, timestamp_ms=5) == OffsetAndEpoch(2, 1)
    assert log.append_as_leader([feature(1), feature(2)], epoch=1, timestamp_ms=6) == OffsetAndEpoch(4, 1)
    assert log.append_as_leader([feature(3)], epoch=3, timestamp_ms=7) == OffsetAndEpoch(5, 3)
    assert log.end_offset == 6 and log.last_fetched_epoch() == 3
    batches = list(log.batches(0))
    assert [(b.base_offset, b.last_offset, b.epoch, b.append_time_ms, b.control) for b in batches] == [
        (0, 2, 1, 5, False), (3, 4, 1, 6, False), (5, 5, 3, 7, False)]
    assert batches[1].records == (feature(1), feature(2))
    # exactly the bytes engine.records.record_batch builds, as the Foundation's MetadataLog writes them
    expected = encode_batch(build_batch(3, [encode_record(feature(1)), encode_record(feature(2))],
                                        timestamp_ms=6, leader_epoch=1))
    assert log.read(3, 1) == expected
    assert len(log.read(0, ALL)) == sum(b.size_bytes for b in batches)


def test_leader_batch_encoding_matches_record_batch() -> None:
    records = [feature(1), noop(), m.TopicRecordV0(name="t", topic_id=uuid.UUID(int=7))]
    for control, recs in ((False, records), (True, [leader_change(2)] + KRAFT_CONTROL)):
        entries = [encode_record(r) for r in recs]
        assert leader_batch_bytes(recs, base_offset=300, epoch=9, timestamp_ms=2 ** 40, control=control) == \
            encode_batch(build_batch(300, entries, timestamp_ms=2 ** 40, leader_epoch=9, control=control))


def test_append_as_leader_refuses_bad_batches(log: RaftLog) -> None:
    fill(log, [2])
    before = state(log)
    with pytest.raises(ValueError):
        log.append_as_leader([], epoch=2, timestamp_ms=0)
    with pytest.raises(ValueError):
        log.append_as_leader([noop()], epoch=2, timestamp_ms=0, control=True)
    with pytest.raises(ValueError):
        log.append_as_leader([leader_change(1)], epoch=2, timestamp_ms=0)
    with pytest.raises(StorageError):
        log.append_as_leader([noop()], epoch=1, timestamp_ms=0)  # epochs never decrease
    assert state(log) == before


def test_control_and_metadata_records_decode(log: RaftLog) -> None:
    topic = m.TopicRecordV0(name="orders", topic_id=uuid.UUID(int=42))
    log.append_as_leader([leader_change(2)], epoch=1, timestamp_ms=10, control=True)
    log.append_as_leader([topic, noop(), feature(17)], epoch=1, timestamp_ms=11)
    control, data = log.batches(0)
    assert control.control and not data.control
    assert control.records == (leader_change(2),)
    assert control.records[0].control_type == LEADER_CHANGE
    assert data.records == (topic, noop(), feature(17))
    assert [b.base_offset for b in log.batches(1)] == [1]  # from the batch holding offset 1
    assert [b.base_offset for b in log.batches(0, 1)] == [0]  # base offsets below end_offset only
    # decoded from the bytes, whatever the log may cache
    fresh = MemoryRaftLog()
    fresh.append_as_follower(log.read(0, ALL))
    assert list(fresh.batches(0)) == list(log.batches(0))


# -- epochs ----------------------------------------------------------------------------


def test_end_offset_for_epoch(log: RaftLog) -> None:
    fill(log, [1, 1, 3, 4])  # epoch 1: 0..5, epoch 3: 6..8, epoch 4: 9..11
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(6, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(6, 1)  # never led: the epoch before it
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(9, 3)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(12, 4)  # the latest ends at end_offset
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(12, 4)
    make_snapshot(log, 9, 3)
    log.delete_before_snapshot()
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(9, 3)  # below every epoch: the snapshot
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(9, 3)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(12, 4)


def test_last_fetched_epoch(logs: Logs) -> None:
    log = logs.new()
    assert log.last_fetched_epoch() == UNDEFINED_EPOCH
    fill(log, [1, 2])
    assert log.last_fetched_epoch() == 2
    make_snapshot(log, 6, 2)
    log.delete_before_snapshot()
    assert log.last_fetched_epoch() == 2
    only_snapshot = logs.new()
    download(log, only_snapshot, SnapshotId(6, 2))
    assert only_snapshot.last_fetched_epoch() == 2 and only_snapshot.end_offset == 6
    assert only_snapshot.end_offset_for_epoch(5) == OffsetAndEpoch(6, 2)


def test_follower_divergence_resolves_like_kafka(logs: Logs) -> None:
    """Follower with batch epochs [1, 2, 2, 4] fetching from a leader with [1, 2, 3]."""
    leader, follower = logs.new(), logs.new()
    fill(leader, [1, 2, 3], per_batch=2)
    fill(follower, [1, 2], per_batch=2)
    follower.append_as_leader([noop(), noop()], epoch=2, timestamp_ms=0)
    follower.append_as_leader([noop(), noop()], epoch=4, timestamp_ms=0)
    truncations = []
    for _ in range(5):
        fetch_offset, last_epoch = follower.end_offset, follower.last_fetched_epoch()
        answer = leader.end_offset_for_epoch(last_epoch)  # the leader's check of a Fetch
        if answer.epoch == last_epoch and answer.offset >= fetch_offset:
            break
        local = follower.end_offset_for_epoch(answer.epoch)  # Kafka's truncateToEndOffset
        cut = min(local.offset, answer.offset) if local.epoch == answer.epoch else local.offset
        truncations.append((answer, follower.truncate_to(cut)))
    assert truncations == [(OffsetAndEpoch(6, 3), 6), (OffsetAndEpoch(4, 2), 4)]
    follower.append_as_follower(leader.read(follower.end_offset, ALL))
    assert follower.read(0, ALL) == leader.read(0, ALL)
    assert follower.end_offset_for_epoch(2) == OffsetAndEpoch(4, 2)
    assert follower.last_fetched_epoch() == 3


# -- follower appends --------------------------------------------------------------------


def test_append_as_follower_keeps_bytes(logs: Logs) -> None:
    leader, follower = logs.new(), logs.new()
    leader.append_as_leader([leader_change(1)], epoch=1, timestamp_ms=1, control=True)
    fill(leader, [1, 1, 2])
    assert follower.append_as_follower(b"") == 0
    assert follower.append_as_follower(leader.read(0, ALL)) == leader.end_offset
    assert follower.read(0, ALL) == leader.read(0, ALL)
    assert list(follower.batches(0)) == list(leader.batches(0))
    assert follower.end_offset_for_epoch(1) == leader.end_offset_for_epoch(1) == OffsetAndEpoch(7, 1)


def test_append_as_follower_checks_crc(logs: Logs) -> None:
    leader, follower = logs.new(), logs.new()
    fill(leader, [1, 1])
    first = leader.read(0, 1)
    data = bytearray(leader.read(0, ALL))
    data[len(first) + 70] ^= 0x40  # inside the second batch's records
    with pytest.raises(StorageError, match="CRC"):
        follower.append_as_follower(bytes(data))
    assert follower.end_offset == 3 and follower.read(0, ALL) == first  # the good batch before it stays
    fresh = logs.new()
    before = state(fresh)
    damaged = bytearray(first)
    damaged[-1] ^= 1
    with pytest.raises(StorageError):
        fresh.append_as_follower(bytes(damaged))
    with pytest.raises(StorageError):
        fresh.append_as_follower(first[:-5])  # not a whole batch
    assert state(fresh) == before


def test_append_as_follower_refuses_gaps_and_older_epochs(logs: Logs) -> None:
    leader, follower = logs.new(), logs.new()
    fill(leader, [1, 2, 3])
    follower.append_as_follower(leader.read(0, 1))
    before = state(follower)
    with pytest.raises(StorageError, match="starts at offset 6"):
        follower.append_as_follower(leader.read(6, ALL))  # offsets 3..5 missing
    assert state(follower) == before
    follower.append_as_follower(leader.read(3, 1))
    old_epoch = leader_batch_bytes([noop()], base_offset=6, epoch=1, timestamp_ms=0, control=False)
    with pytest.raises(StorageError, match="epoch"):
        follower.append_as_follower(old_epoch)
    assert follower.end_offset == 6


# -- reading -----------------------------------------------------------------------------


def test_read_whole_batches_within_max_bytes(log: RaftLog) -> None:
    fill(log, [1, 1, 1, 2])
    sizes = [b.size_bytes for b in log.batches(0)]
    assert len(log.read(0, 0)) == sizes[0]  # always one whole batch
    assert len(log.read(0, sizes[0] + sizes[1] - 1)) == sizes[0]
    assert len(log.read(0, sizes[0] + sizes[1])) == sizes[0] + sizes[1]
    assert log.read(4, ALL) == log.read(3, ALL)  # from the batch holding offset 4
    assert log.read(12, ALL) == b""
    for bad in (-1, 13):
        with pytest.raises(StorageError):
            log.read(bad, ALL)
        with pytest.raises(StorageError):
            log.batches(bad)


def test_truncate_to_removes_whole_batches(log: RaftLog) -> None:
    fill(log, [1, 2, 3])
    log.flush()
    assert log.truncate_to(100) == 9  # past the end: nothing to do
    assert log.truncate_to(4) == 3  # the batch 3..5 goes whole
    assert log.end_offset == 3 and log.flushed_end_offset == 3
    assert log.last_fetched_epoch() == 1
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 1)
    fill(log, [5])
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(6, 5)


def test_truncate_never_cuts_the_snapshot(log: RaftLog) -> None:
    fill(log, [1, 1, 1])
    make_snapshot(log, 4, 1)  # inside the batch 3..5
    before = state(log)
    with pytest.raises(StorageError):
        log.truncate_to(3)  # below the snapshot
    with pytest.raises(StorageError):
        log.truncate_to(5)  # would remove the batch holding offsets 3 of the snapshot
    assert state(log) == before
    assert log.truncate_to(6) == 6


# -- durability --------------------------------------------------------------------------


def test_flushed_data_survives_restart(logs: Logs) -> None:
    log = logs.new()
    fill(log, [1, 2])
    make_snapshot(log, 3, 1)
    log.flush()
    before = state(log)
    log = logs.reopen(log)
    assert state(log) == before
    assert log.flushed_end_offset == log.end_offset == 6
    fill(log, [2])
    assert log.end_offset == 9


def test_memory_crash_loses_the_unflushed_suffix() -> None:
    log = MemoryRaftLog()
    fill(log, [1, 2])
    log.flush()
    durable = state(log)
    fill(log, [3, 3])
    log.truncate_to(6)
    fill(log, [4])
    log.begin_snapshot_download(SnapshotId(50, 4))
    assert log.flushed_end_offset == 6
    log.crash()
    assert state(log) == durable
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(6, 2)
    with pytest.raises(StorageError):
        log.append_snapshot_chunk(SnapshotId(50, 4), 0, b"x")  # the partial download is gone


def test_memory_crash_keeps_an_unflushed_truncation_and_a_snapshot() -> None:
    log = MemoryRaftLog()
    fill(log, [1, 2, 2])
    log.flush()
    log.truncate_to(6)  # truncation is durable at once, as on disk
    make_snapshot(log, 6, 2)
    log.crash()
    assert (log.end_offset, log.start_offset, log.latest_snapshot_id()) == (6, 6, SnapshotId(6, 2))


def test_file_log_recovers_a_torn_tail(tmp_path: Path) -> None:
    log = FileRaftLog.open(tmp_path)
    fill(log, [1, 2])
    log.flush()
    good = log.read(0, ALL)
    log.close()
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    with open(segment, "ab") as handle:
        handle.write(leader_batch_bytes([noop()], base_offset=6, epoch=2, timestamp_ms=0, control=False)[:-9])
    log = FileRaftLog.open(tmp_path)
    try:
        assert log._log.recovery is not None
        assert (log.end_offset, log.read(0, ALL), log.last_fetched_epoch()) == (6, good, 2)
    finally:
        log.close()


def test_file_log_reads_across_segments_and_retention(tmp_path: Path) -> None:
    log = FileRaftLog.open(tmp_path, segment_bytes=200)
    memory = MemoryRaftLog()
    try:
        for target in (log, memory):
            fill(target, [1, 1, 1, 2, 2, 2, 3])
        segments = sorted((tmp_path / "__cluster_metadata-0").glob("*.log"))
        assert len(segments) > 2
        assert log.read(0, ALL) == memory.read(0, ALL)
        assert log.read(7, 300) == memory.read(7, 300)
        for target in (log, memory):
            make_snapshot(target, 13, 2)
            assert target.delete_before_snapshot() == 13
        assert len(sorted((tmp_path / "__cluster_metadata-0").glob("*.log"))) < len(segments)
        assert log.read(13, ALL) == memory.read(13, ALL)
        assert list(log.batches(13)) == list(memory.batches(13))
        assert log.truncate_to(15) == memory.truncate_to(15) == 15
        assert log.read(13, ALL) == memory.read(13, ALL)
    finally:
        log.close()


# -- snapshots ---------------------------------------------------------------------------


def test_create_and_read_snapshot(log: RaftLog) -> None:
    fill(log, [1, 1, 2])
    first = make_snapshot(log, 3, 1)
    latest = make_snapshot(log, 8, 2, records=40)
    assert (log.earliest_snapshot_id(), log.latest_snapshot_id()) == (first, latest)
    assert log.start_offset == 8  # the latest snapshot's end offset
    expected = snapshot_bytes([feature(i) for i in range(40)], epoch=2, last_contained_log_timestamp_ms=7,
                              now_ms=8, kraft_control=KRAFT_CONTROL)
    assert log.snapshot_size(latest) == len(expected)
    chunks = [log.read_snapshot_chunk(latest, p, 100) for p in range(0, len(expected), 100)]
    assert b"".join(chunks) == expected and all(len(c) <= 100 for c in chunks)
    assert log.read_snapshot_chunk(latest, len(expected), 100) == b""
    batches = list(log.read_snapshot(latest))
    assert batches[0].control and batches[0].records[0].control_type == SNAPSHOT_HEADER
    assert batches[0].records[1:] == tuple(KRAFT_CONTROL)
    assert batches[-1].control and batches[-1].records[-1].control_type == SNAPSHOT_FOOTER
    assert [r for b in batches[1:-1] for r in b.records] == [feature(i) for i in range(40)]
    for bad in (SnapshotId(5, 1), SnapshotId(99, 2)):
        with pytest.raises(StorageError):
            log.snapshot_size(bad)
    with pytest.raises(StorageError):
        log.read_snapshot_chunk(latest, len(expected) + 1, 10)


def test_create_snapshot_preconditions(log: RaftLog) -> None:
    fill(log, [1, 2])
    make_snapshot(log, 3, 1)
    before = state(log)
    for bad in (SnapshotId(7, 2), SnapshotId(3, 1), SnapshotId(2, 1), SnapshotId(5, 1)):
        with pytest.raises(StorageError):  # past the end, not newer (twice), wrong epoch
            make_snapshot(log, bad.end_offset, bad.epoch)
    assert state(log) == before


def test_snapshot_download_resets_the_log(logs: Logs) -> None:
    source, target = logs.new(), logs.new()
    fill(source, [1, 2, 3, 3])
    snapshot_id = make_snapshot(source, 9, 3, records=30)
    fill(target, [1])
    make_snapshot(target, 2, 1)
    download(source, target, snapshot_id)
    assert (target.start_offset, target.end_offset, target.flushed_end_offset) == (9, 9, 9)
    assert target.last_fetched_epoch() == 3 and target.read(9, ALL) == b""
    assert target.earliest_snapshot_id() == target.latest_snapshot_id() == snapshot_id
    assert target.read_snapshot_chunk(snapshot_id, 0, ALL) == source.read_snapshot_chunk(snapshot_id, 0, ALL)
    target.append_as_follower(source.read(9, ALL))
    assert target.read(9, ALL) == source.read(9, ALL)
    target.flush()
    target = logs.reopen(target)
    assert (target.start_offset, target.end_offset, target.latest_snapshot_id()) == (9, 12, snapshot_id)
    assert target.read(9, ALL) == source.read(9, ALL)


@pytest.mark.parametrize("damage", ["flip", "cut", "no-footer", "not-newer"])
def test_bad_snapshot_download_changes_nothing(logs: Logs, damage: str) -> None:
    source, target = logs.new(), logs.new()
    fill(source, [1, 2])
    snapshot_id = make_snapshot(source, 6, 2)
    data = bytearray(source.read_snapshot_chunk(snapshot_id, 0, ALL))
    fill(target, [1])
    target.flush()
    if damage == "flip":
        data[80] ^= 0x10
    elif damage == "cut":
        data = data[:-3]
    elif damage == "no-footer":
        data = data[:len(data) - list(source.read_snapshot(snapshot_id))[-1].size_bytes]
    else:
        make_snapshot(target, 3, 1)
        snapshot_id = SnapshotId(3, 1)
        data = bytearray(source.read_snapshot_chunk(SnapshotId(6, 2), 0, ALL))
    before = state(target)
    target.begin_snapshot_download(snapshot_id)
    target.append_snapshot_chunk(snapshot_id, 0, bytes(data))
    with pytest.raises(StorageError):
        target.complete_snapshot_download(snapshot_id)
    assert state(target) == before


def test_snapshot_download_protocol_errors(logs: Logs) -> None:
    log = logs.new()
    snapshot_id = SnapshotId(10, 1)
    with pytest.raises(StorageError):
        log.append_snapshot_chunk(snapshot_id, 0, b"abc")  # no download begun
    log.begin_snapshot_download(snapshot_id)
    log.append_snapshot_chunk(snapshot_id, 0, b"abc")
    with pytest.raises(StorageError):
        log.append_snapshot_chunk(snapshot_id, 2, b"def")  # position must be the size so far
    with pytest.raises(StorageError):
        log.complete_snapshot_download(SnapshotId(11, 1))
    log.begin_snapshot_download(SnapshotId(11, 1))  # discards the first
    with pytest.raises(StorageError):
        log.append_snapshot_chunk(snapshot_id, 3, b"def")
    log.flush()
    log = logs.reopen(log)  # a partial download does not survive a restart
    with pytest.raises(StorageError):
        log.append_snapshot_chunk(SnapshotId(11, 1), 0, b"x")
    assert state(log) == state(MemoryRaftLog())


def test_file_log_finishes_an_interrupted_snapshot_install(tmp_path: Path) -> None:
    """A crash after the snapshot was renamed into place, before the segments went."""
    source = MemoryRaftLog()
    fill(source, [1, 2, 2, 2])
    snapshot_id = make_snapshot(source, 12, 2)
    log = FileRaftLog.open(tmp_path)
    fill(log, [1])
    log.close()
    directory = tmp_path / "__cluster_metadata-0"
    (directory / snapshot_id.file_name).write_bytes(source.read_snapshot_chunk(snapshot_id, 0, ALL))
    log = FileRaftLog.open(tmp_path)
    try:
        assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (12, 12, 2)
        assert [p.name for p in directory.glob("*.log")] == ["00000000000000000012.log"]
        log.append_as_follower(leader_batch_bytes([noop()], base_offset=12, epoch=3, timestamp_ms=0,
                                                  control=False))
        assert log.end_offset_for_epoch(2) == OffsetAndEpoch(12, 2)
    finally:
        log.close()


def test_delete_before_snapshot_keeps_reads_at_its_end(log: RaftLog) -> None:
    fill(log, [1, 1, 2])
    whole = log.read(3, ALL)
    make_snapshot(log, 2, 1)
    snapshot_id = make_snapshot(log, 4, 1)  # inside the batch 3..5
    assert log.delete_before_snapshot() == 4
    assert log.earliest_snapshot_id() == log.latest_snapshot_id() == snapshot_id
    assert log.read(4, ALL) == whole  # the batch holding the snapshot's end stays whole
    assert [b.base_offset for b in log.batches(4)] == [3, 6]
    with pytest.raises(StorageError):
        log.read(3, ALL)
    assert log.delete_before_snapshot() == 4  # idempotent


# -- both implementations agree ---------------------------------------------------------

OPS = st.lists(st.one_of(
    st.tuples(st.just("leader"), st.integers(1, 3), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("follower"), st.integers(1, 3), st.integers(0, 1)),
    st.tuples(st.just("truncate"), st.integers(0, 40)),
    st.tuples(st.just("flush")),
    st.tuples(st.just("snapshot"), st.integers(0, 40)),
    st.tuples(st.just("delete")),
    st.tuples(st.just("restart")),
    st.tuples(st.just("download"), st.integers(0, 5), st.integers(0, 1)),
), max_size=14)


def apply(log: RaftLog, op: tuple, logs: Logs) -> tuple[RaftLog, object]:
    """Apply one operation; returns the (possibly reopened) log and its result or error type."""
    try:
        kind = op[0]
        epoch = max(log.last_fetched_epoch(), 0)
        if kind == "leader":
            records = [leader_change(1)] * op[1] if op[3] else [feature(log.end_offset + i) for i in range(op[1])]
            return log, log.append_as_leader(records, epoch=epoch + op[2], timestamp_ms=log.end_offset,
                                             control=op[3])
        if kind == "follower":
            return log, log.append_as_follower(leader_batch_bytes(
                [noop()] * op[1], base_offset=log.end_offset, epoch=epoch + op[2], timestamp_ms=3, control=False))
        if kind == "truncate":
            return log, log.truncate_to(log.start_offset + op[1] % (log.end_offset - log.start_offset + 1))
        if kind == "flush":
            return log, log.flush()
        if kind == "snapshot":
            if log.end_offset == log.start_offset:
                return log, None
            end = log.start_offset + 1 + op[1] % (log.end_offset - log.start_offset)
            snapshot_epoch = next(iter(log.batches(end - 1))).epoch
            return log, make_snapshot(log, end, snapshot_epoch, records=op[1] % 4)
        if kind == "delete":
            return log, log.delete_before_snapshot()
        if kind == "restart":
            log.flush()
            return logs.reopen(log), None
        snapshot_id = SnapshotId(log.end_offset + op[1] + 1, epoch + op[2])
        data = snapshot_bytes([noop()], epoch=snapshot_id.epoch, last_contained_log_timestamp_ms=0, now_ms=0)
        log.begin_snapshot_download(snapshot_id)
        log.append_snapshot_chunk(snapshot_id, 0, data)
        return log, log.complete_snapshot_download(snapshot_id)
    except StorageError:
        return log, StorageError


def observe(log: RaftLog) -> tuple:
    latest = log.latest_snapshot_id()
    batches = list(log.batches(log.start_offset))
    limits, total = [], 0
    for batch in batches[:4]:  # max_bytes right at, and one short of, batch boundaries
        total += batch.size_bytes
        limits += [total - 1, total]
    return state(log) + (
        batches,
        latest and log.read_snapshot_chunk(latest, 0, ALL),
        [log.read(log.start_offset, limit) for limit in limits],
        [log.end_offset_for_epoch(e) for e in range(log.last_fetched_epoch() + 3)],
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_memory_and_file_logs_agree(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        logs = Logs("file", Path(tmp), segment_bytes=250)  # small segments: rolls and retention
        memory, file = MemoryRaftLog(), logs.new()
        try:
            for op in ops:
                memory, expected = apply(memory, op, logs)
                file, actual = apply(file, op, logs)
                assert actual == expected, op
                assert observe(file) == observe(memory), op
        finally:
            logs.close_all()


def test_a_fetched_batch_decodes_its_records_only_when_asked_and_as_the_general_path_does() -> None:
    from engine.raft.memory_raft_log import decode_all
    from engine.records.metadata_record_serde import decode_record
    from engine.records.record_batch import decode_batch

    topic = uuid.UUID(int=5)
    records = [m.TopicRecordV0(name="t", topic_id=topic)] + [
        m.PartitionRecordV0(partition_id=i32(p), topic_id=topic, replicas=(i32(1), i32(2)), isr=(i32(1),),
                            removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                            partition_epoch=i32(0)) for p in range(300)]  # offsets past 127: two-byte varints
    data = leader_batch_bytes(records, base_offset=1000, epoch=3, timestamp_ms=7, control=False) + \
        leader_batch_bytes([leader_change(1)], base_offset=1301, epoch=3, timestamp_ms=7, control=True)
    first, second = decode_all(data)
    assert first._records is None and second._records is None  # nothing decoded yet
    assert (first.base_offset, first.last_offset, first.control, second.control) == (1000, 1300, False, True)
    general = decode_batch(data)[0]
    assert first.records == tuple(records) == tuple(decode_record(r.key, r.value, False) for r in general.records)
    assert second.records == (leader_change(1),)


def _bad_framing(batch: bytes) -> bytes:
    """The batch with its first record's length varint made absurd, and its CRC made right again."""
    from engine.records.kio_codec import crc32c
    from engine.records.record_batch import HEADER_SIZE

    data = bytearray(batch)
    data[HEADER_SIZE] = 0x7E  # zigzag 63: a record of 63 bytes that is not there
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_a_crc_valid_batch_whose_records_do_not_parse_reads_as_one_unknown_record() -> None:
    from engine.raft.memory_raft_log import decode_all
    from engine.records.metadata_record_serde import UnknownRecord

    data = _bad_framing(leader_batch_bytes([noop(), noop()], base_offset=0, epoch=1, timestamp_ms=0, control=False))
    (batch,) = decode_all(data)
    (record,) = batch.records  # never raises: kept and shown
    assert isinstance(record, UnknownRecord) and "undecodable batch at offset 0" in record.reason


def test_a_downloaded_snapshot_with_an_undecodable_batch_is_refused_before_the_log_goes() -> None:
    from engine.raft.memory_raft_log import check_snapshot_bytes

    good = snapshot_bytes([noop(), noop()], epoch=1, last_contained_log_timestamp_ms=0, now_ms=0)
    check_snapshot_bytes(good)
    header_batch_end = int.from_bytes(good[8:12], "big") + 12
    data_batch_end = header_batch_end + int.from_bytes(good[header_batch_end + 8:header_batch_end + 12], "big") + 12
    bad = good[:header_batch_end] + _bad_framing(good[header_batch_end:data_batch_end]) + good[data_batch_end:]
    with pytest.raises(StorageError, match="undecodable batch at offset"):
        check_snapshot_bytes(bad)
