"""A snapshot built in slices: the bytes are those of one ``snapshot_bytes`` call, the file log
stages them beside itself and installs them atomically, a superseded snapshot is dropped, and a
node keeps serving while it encodes (the loop runs other work between slices)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from engine.common.errors import StorageError
from engine.raft.file_raft_log import FileRaftLog
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.records import metadata_records as m
from engine.records.kio_codec import i16, i32
from engine.records.metadata_record_serde import control_record, encode_record
from engine.records.kio_codec import KRaftVersionRecord
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotBuilder, SnapshotId, snapshot_bytes

from tests.node_quorum import start_quorum, wait_until


def records(count: int) -> list:
    topic = uuid.UUID(int=9)
    return [m.PartitionRecordV0(partition_id=i32(i), topic_id=topic, replicas=(i32(1), i32(2)), isr=(i32(1),),
                                removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                partition_epoch=i32(0)) for i in range(count)]


KRAFT_CONTROL = [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1)))]


@pytest.mark.parametrize("slice_records", [1, 7, 1000])
def test_slices_give_the_bytes_of_one_call(slice_records: int) -> None:
    items = records(300)
    expected = snapshot_bytes(items, epoch=3, last_contained_log_timestamp_ms=11, now_ms=12,
                              kraft_control=KRAFT_CONTROL, max_batch_bytes=2000)  # several data batches
    builder = SnapshotBuilder(epoch=3, last_contained_log_timestamp_ms=11, now_ms=12, kraft_control=KRAFT_CONTROL,
                              max_batch_bytes=2000)
    source, rounds = iter(items), 0
    while builder.add(source, slice_records):
        rounds += 1
    assert builder.finish() == expected
    assert rounds == (300 // slice_records if slice_records < 300 else 0)


def test_an_empty_state_is_header_and_footer_only() -> None:
    builder = SnapshotBuilder(epoch=1, last_contained_log_timestamp_ms=0, now_ms=0)
    assert builder.add(iter([]), 5) is False
    assert builder.finish() == snapshot_bytes([], epoch=1, last_contained_log_timestamp_ms=0, now_ms=0)


def filled_file_log(tmp_path: Path) -> FileRaftLog:
    (tmp_path / "__cluster_metadata-0").mkdir()
    log = FileRaftLog(tmp_path / "__cluster_metadata-0", fsync_policy="explicit")
    for _ in range(4):
        log.append_as_leader([m.NoOpRecordV0()], epoch=1, timestamp_ms=0)
    return log


def parts(log: FileRaftLog) -> list[Path]:
    return sorted(log.directory.glob("*.part"))


def test_the_file_log_stages_beside_itself_and_installs_atomically(tmp_path: Path) -> None:
    log = filled_file_log(tmp_path)
    sid = SnapshotId(3, 1)
    data = snapshot_bytes(records(5), epoch=1, last_contained_log_timestamp_ms=0, now_ms=0)
    staged = log.stage_snapshot(sid, data)
    assert parts(log) == [staged] and staged.read_bytes() == data
    assert log.latest_snapshot_id() is None  # staged is not complete: nobody may read it yet
    log.install_snapshot(sid, staged)
    assert parts(log) == [] and log.latest_snapshot_id() == sid
    assert (log.directory / sid.file_name).read_bytes() == data
    # A second staging of a snapshot no newer than the latest is refused at install, and its file goes.
    stale = log.stage_snapshot(SnapshotId(2, 1), data)
    with pytest.raises(StorageError, match="not past the latest snapshot"):
        log.install_snapshot(SnapshotId(2, 1), stale)
    assert parts(log) == [] and log.latest_snapshot_id() == sid
    log.close()


def test_a_staged_snapshot_left_by_a_crash_is_deleted_when_the_log_opens(tmp_path: Path) -> None:
    log = filled_file_log(tmp_path)
    log.stage_snapshot(SnapshotId(3, 1), snapshot_bytes([], epoch=1, last_contained_log_timestamp_ms=0, now_ms=0))
    log.close()  # "crash" before install
    reopened = FileRaftLog(MetadataLog(tmp_path / "__cluster_metadata-0"))
    assert parts(reopened) == [] and reopened.latest_snapshot_id() is None and reopened.end_offset == 4
    reopened.close()


def test_the_memory_log_installs_staged_bytes_on_the_same_conditions() -> None:
    log = MemoryRaftLog()
    for _ in range(4):
        log.append_as_leader([m.NoOpRecordV0()], epoch=1, timestamp_ms=0)
    data = snapshot_bytes([], epoch=1, last_contained_log_timestamp_ms=0, now_ms=0)
    log.install_snapshot(SnapshotId(4, 1), log.stage_snapshot(SnapshotId(4, 1), data))
    assert log.latest_snapshot_id() == SnapshotId(4, 1) and log.snapshot_size(SnapshotId(4, 1)) == len(data)
    with pytest.raises(StorageError, match="past the log end offset"):
        log.install_snapshot(SnapshotId(9, 1), data)


# -- a real node: slices between the loop's other work ------------------------------------------

def test_a_node_serves_between_slices_skips_a_second_request_and_installs(tmp_path: Path) -> None:
    async def scenario() -> None:
        (config,), (node,) = await start_quorum(tmp_path, count=1)
        try:
            driver = node.driver
            driver.snapshot_in_child = False  # the in-loop writer (engine.raft.snapshot_writing's child has its own tests)
            await wait_until(lambda: driver.is_leader, 10, "the solo leader")
            await wait_until(lambda: node.last_committed_offset >= 1, 10, "something committed")
            end = node.last_committed_offset + 1
            ticks = 0
            seen_ticks: list[int] = []

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            def slow_state():  # what the loop did meanwhile, seen from inside the encoding
                for i, record in enumerate(records(60_000)):
                    if i % 1000 == 0:
                        seen_ticks.append(ticks)
                    yield record

            tick_task = asyncio.create_task(ticker())
            done: list[SnapshotId] = []
            try:
                assert driver.request_snapshot(end, map(encode_record, slow_state()), last_contained_log_timestamp_ms=0,
                                               on_done=done.append) is True
                assert driver.request_snapshot(end, iter([]), last_contained_log_timestamp_ms=0) is False
                await wait_until(lambda: done, 60, "the sliced snapshot installed")
            finally:
                tick_task.cancel()
            # The loop ran the ticker while the snapshot was being encoded, not only before or after.
            assert len(set(seen_ticks)) > 2, seen_ticks
            (sid,) = done
            assert sid.end_offset == end and node.raft_log.latest_snapshot_id() == sid
            assert not list(node.raft_log.directory.glob("*.part"))
            assert node.raft_log.start_offset <= end  # the log before it may go; nothing after it
            assert driver.is_leader
        finally:
            await node.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))
