"""FileRaftLog hands a leader's own batches back with the records it appended (as Kafka's leader
commits from memory), and never after they stop being what the file holds."""

from __future__ import annotations

import uuid

from engine.raft import file_raft_log
from engine.raft.file_raft_log import FileRaftLog
from engine.raft.memory_raft_log import leader_batch_bytes
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.records.metadata_record_serde import UnknownRecord


def partitions(topic: uuid.UUID, first: int, count: int, leader: int = 1) -> list:
    return [m.PartitionRecordV0(partition_id=i32(first + i), topic_id=topic, replicas=(i32(leader),),
                                isr=(i32(leader),), removing_replicas=(), adding_replicas=(), leader=i32(leader),
                                leader_epoch=i32(0), partition_epoch=i32(0)) for i in range(count)]


def open_log(tmp_path) -> FileRaftLog:
    return FileRaftLog.open(tmp_path)


def test_a_leader_batch_comes_back_as_the_very_records_appended_and_equal_to_its_bytes(tmp_path):
    log = open_log(tmp_path)
    records = partitions(uuid.uuid4(), 0, 5)
    log.append_as_leader(records, epoch=1, timestamp_ms=7)
    [batch] = list(log.batches(0))
    assert all(a is b for a, b in zip(batch.records, records))  # not decoded again
    log.close()
    reopened = open_log(tmp_path)  # a fresh process decodes the file: the same records
    [decoded] = list(reopened.batches(0))
    assert decoded.records == tuple(records) and (decoded.base_offset, decoded.last_offset, decoded.epoch) == (0, 4, 1)
    reopened.close()


def test_after_a_truncation_the_follower_batch_at_the_same_offset_is_decoded_not_the_kept_one(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(partitions(uuid.uuid4(), 0, 2), epoch=1, timestamp_ms=1)
    mine = partitions(uuid.uuid4(), 0, 3, leader=1)
    log.append_as_leader(mine, epoch=1, timestamp_ms=2)
    log.flush()
    log.truncate_to(2)  # a new leader's log diverged after offset 1
    theirs = partitions(uuid.uuid4(), 0, 3, leader=2)
    log.append_as_follower(leader_batch_bytes(theirs, base_offset=2, epoch=2, timestamp_ms=3, control=False))
    assert [b.records for b in log.batches(2)] == [tuple(theirs)]
    log.close()


def test_a_follower_append_forgets_what_this_node_appended_as_leader(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(partitions(uuid.uuid4(), 0, 2), epoch=1, timestamp_ms=1)
    assert log._appended
    log.append_as_follower(leader_batch_bytes(partitions(uuid.uuid4(), 0, 1), base_offset=2, epoch=2,
                                              timestamp_ms=3, control=False))
    assert not log._appended
    log.close()


def test_kept_batches_are_bounded_and_the_rest_decoded_from_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(file_raft_log, "_KEEP_BATCHES", 2)
    log = open_log(tmp_path)
    topic = uuid.uuid4()
    appended = [partitions(topic, 3 * i, 3) for i in range(4)]
    for records in appended:
        log.append_as_leader(records, epoch=1, timestamp_ms=1)
    assert sorted(log._appended) == [6, 9]
    batches = list(log.batches(0))
    assert [b.records for b in batches] == [tuple(r) for r in appended]
    assert [all(a is b for a, b in zip(batch.records, records)) for batch, records in zip(batches, appended)] == \
        [False, False, True, True]
    log.close()


def test_a_batch_with_an_unknown_record_is_decoded(tmp_path):
    log = open_log(tmp_path)
    unknown = UnknownRecord(None, b"\x01\x7f\x00", "unknown type")
    log.append_as_leader([unknown], epoch=1, timestamp_ms=1)
    assert not log._appended
    [batch] = list(log.batches(0))
    assert isinstance(batch.records[0], UnknownRecord) and batch.records[0].value == b"\x01\x7f\x00"
    log.close()
