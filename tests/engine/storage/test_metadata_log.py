"""MetadataLog keeps Kafka's side files in step: leader-epoch-checkpoint and partition.metadata;
truncation for a diverged follower; the leader epoch cache itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.common.errors import StorageError
from engine.records.kio_codec import i16
from engine.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache
from engine.storage.leader_epoch_checkpoint import read_leader_epoch_checkpoint
from engine.storage.log_reader import read_log_dir
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_record_serde import MetadataRecord
from engine.storage.partition_metadata_file import read_partition_metadata
from engine.common.kafka_uuid import METADATA_TOPIC_ID
from engine.storage.snapshot_writer import SnapshotId


def noop() -> MetadataRecord:
    return m.NoOpRecordV0()


def feature(level: int) -> MetadataRecord:
    return m.FeatureLevelRecordV0(name="x", feature_level=i16(level))


def test_new_log_writes_partition_metadata_and_epochs(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        for epoch, count in [(1, 3), (1, 2), (3, 4), (4, 1)]:
            log.append([noop()] * count, epoch=epoch, timestamp_ms=0)
        directory = log.directory
    assert read_partition_metadata(directory / "partition.metadata").topic_id == METADATA_TOPIC_ID
    assert (directory / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n3 5\n4 9\n"


def test_epochs_survive_reopen_and_a_torn_tail_trims_them(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([noop()] * 2, epoch=1, timestamp_ms=0)
        log.append([noop()] * 2, epoch=2, timestamp_ms=0)
        segment = log._active.path
    segment.write_bytes(segment.read_bytes()[:-3])  # the epoch-2 batch is torn
    with MetadataLog(tmp_path / "__cluster_metadata-0") as log:
        assert log.end_offset == 2
        assert log.epochs.entries == [(1, 0)]
    assert read_leader_epoch_checkpoint(segment.parent / "leader-epoch-checkpoint") == [(1, 0)]


def test_end_offset_for_epoch() -> None:
    cache = LeaderEpochCache([(1, 0), (3, 10), (4, 20)])
    assert cache.end_offset_for(0, 25) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert cache.end_offset_for(1, 25) == (1, 10)
    assert cache.end_offset_for(2, 25) == (1, 10)  # epoch 2 never led: answer for the epoch before
    assert cache.end_offset_for(3, 25) == (3, 20)
    assert cache.end_offset_for(4, 25) == (4, 25)
    assert cache.end_offset_for(9, 25) == (4, 25)


def test_cache_assign_and_truncation_rules() -> None:
    cache = LeaderEpochCache()
    assert cache.assign(2, 5) and not cache.assign(2, 7) and not cache.assign(1, 9)
    assert cache.assign(5, 5)  # a newer epoch at the same offset replaces the older start
    assert cache.entries == [(5, 5)]
    cache = LeaderEpochCache([(1, 0), (2, 10), (3, 20)])
    assert cache.truncate_from_end(15) and cache.entries == [(1, 0), (2, 10)]
    assert cache.truncate_from_start(12) and cache.entries == [(2, 12)]


def test_truncate_to_cuts_at_batch_boundaries_across_segments(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, segment_bytes=200, fsync_policy="never") as log:
        for b in range(10):
            log.append([feature(b), feature(b)], epoch=1 + b // 4, timestamp_ms=b)
        assert log.end_offset == 20
        assert log.truncate_to(11) == 10  # offset 11 sits in the batch 10..11: it goes whole
        assert log.end_offset == 10
        assert log.epochs.entries == [(1, 0), (2, 8)]
        log.append([feature(99)], epoch=5, timestamp_ms=99)
        assert log.truncate_to(50) == 11  # past the end: nothing to do
    offsets = [e.offset for e in read_log_dir(tmp_path)]
    assert offsets == list(range(11))
    with MetadataLog(tmp_path / "__cluster_metadata-0") as reopened:
        assert reopened.end_offset == 11 and reopened.epochs.entries == [(1, 0), (2, 8), (5, 10)]


def test_truncate_below_the_snapshot_is_refused(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([noop()] * 5, epoch=1, timestamp_ms=0)
        log.write_snapshot(SnapshotId(4, 1), [noop()], last_contained_log_timestamp_ms=0, now_ms=0)
        with pytest.raises(StorageError, match="below the snapshot"):
            log.truncate_to(2)
        assert log.end_offset == 5


def test_append_below_the_end_is_refused(tmp_path: Path) -> None:
    from engine.records.record_batch import build_batch, encode_batch

    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([noop()] * 3, epoch=1, timestamp_ms=0)
        stale = encode_batch(build_batch(1, [(None, b"")], timestamp_ms=0, leader_epoch=1))
        with pytest.raises(StorageError, match="below the log end offset 3"):
            log.append_batch_bytes(stale, 2)


def test_rebuilt_epoch_cache_matches_kafkas_checkpoint(corpus: Path, tmp_path: Path) -> None:
    """Without its leader-epoch-checkpoint, a real node's directory gets Kafka's own back."""
    for index, directory in enumerate(sorted(corpus.rglob("__cluster_metadata-0"))):
        copy = tmp_path / str(index) / "__cluster_metadata-0"
        shutil.copytree(directory, copy)
        (copy / "leader-epoch-checkpoint").unlink()
        with MetadataLog(copy) as log:
            ours = log.epochs.entries
            end = log.end_offset
        theirs = read_leader_epoch_checkpoint(directory / "leader-epoch-checkpoint")
        # a corpus copy may hold a segment older than its checkpoint: compare what the log covers
        assert ours == [(e, o) for e, o in theirs if o < end], directory
        assert read_leader_epoch_checkpoint(copy / "leader-epoch-checkpoint") == ours
