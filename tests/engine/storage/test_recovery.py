"""Crash recovery, segment roll, snapshots and retention of the metadata log."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.common.errors import CorruptRecordError
from engine.records.kio_codec import i16
from engine.storage.log_reader import list_log_dir, read_file, read_log_dir
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_record_serde import MetadataRecord
from engine.storage.snapshot_writer import SnapshotId


def feature(i: int) -> MetadataRecord:
    return m.FeatureLevelRecordV0(name=f"feature.{i}", feature_level=i16(i % 30000))


def write_batches(tmp: Path, batches: int, per_batch: int = 3) -> tuple[Path, list[int]]:
    """Write ``batches`` batches; returns the segment and each batch's end byte position."""
    ends = []
    with MetadataLog.create(tmp, fsync_policy="explicit") as log:
        for b in range(batches):
            log.append([feature(b * per_batch + i) for i in range(per_batch)], epoch=1, timestamp_ms=1000 + b)
            log.flush()
            ends.append(log._active.size_bytes)
        segment = log._active.path
    return segment, ends


@pytest.mark.slow
def test_cut_at_every_byte_of_the_last_batch(tmp_path: Path) -> None:
    source, ends = write_batches(tmp_path / "source", batches=4)
    data = source.read_bytes()
    complete = ends[-2]
    for cut in range(complete, len(data)):
        node = tmp_path / f"cut-{cut}"
        segment_dir = node / "__cluster_metadata-0"
        segment_dir.mkdir(parents=True)
        (segment_dir / source.name).write_bytes(data[:cut])
        with MetadataLog(segment_dir) as log:
            assert log.end_offset == 9, cut
            if cut > complete:
                assert log.recovery is not None and log.recovery.truncated_bytes == cut - complete
            else:
                assert log.recovery is None
            assert (segment_dir / source.name).stat().st_size == complete
            log.append([feature(100)], epoch=2, timestamp_ms=5000)
        offsets = [e.offset for e in read_log_dir(node)]
        assert offsets == list(range(10)), cut


def test_corruption_before_the_tail_is_an_error_and_changes_nothing(tmp_path: Path) -> None:
    segment, ends = write_batches(tmp_path, batches=4)
    data = bytearray(segment.read_bytes())
    data[ends[0] + 30] ^= 0xFF  # inside the second batch's CRC-covered bytes
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as err:
        MetadataLog(segment.parent)
    assert f"byte offset {ends[0]}" in str(err.value) and str(segment) in str(err.value)
    assert segment.read_bytes() == bytes(data)


def test_zero_filled_tail_is_torn(tmp_path: Path) -> None:
    segment, ends = write_batches(tmp_path, batches=2)
    segment.write_bytes(segment.read_bytes() + bytes(4096))
    with MetadataLog(segment.parent) as log:
        assert log.recovery.truncated_bytes == 4096 and log.end_offset == 6


def test_reader_tolerates_a_write_in_progress_but_a_file_read_is_strict(tmp_path: Path) -> None:
    segment, ends = write_batches(tmp_path, batches=3)
    segment.write_bytes(segment.read_bytes()[:-5])
    assert [e.offset for e in read_log_dir(tmp_path)] == list(range(6))
    with pytest.raises(CorruptRecordError):
        list(read_file(segment))


def test_roll_snapshot_and_retention(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, segment_bytes=400, fsync_policy="never") as log:
        for b in range(12):
            log.append([feature(b * 2), feature(b * 2 + 1)], epoch=1, timestamp_ms=b)
        segments = list_log_dir(tmp_path).segments
        assert len(segments) > 3 and segments[0][0] == 0
        assert [base for base, _ in segments] == sorted(base for base, _ in segments)
        log.write_snapshot(SnapshotId(10, 1), [feature(0)], last_contained_log_timestamp_ms=4, now_ms=9)
        log.write_snapshot(SnapshotId(16, 1), [feature(1)], last_contained_log_timestamp_ms=7, now_ms=9)
        deleted = log.delete_before_latest_snapshot()
        assert any(p.name.startswith("00000000000000000010-") for p in deleted)
        listing = list_log_dir(tmp_path)
        assert [sid for sid, _ in listing.snapshots] == [SnapshotId(16, 1)]
        assert listing.segments[0][0] <= 16 and (len(listing.segments) == 1 or listing.segments[1][0] > 16)
        log_offsets = [e.offset for e in read_log_dir(tmp_path) if not e.in_snapshot]
        assert log_offsets == list(range(16, 24))
        log.append([feature(99)], epoch=2, timestamp_ms=99)
    with MetadataLog(tmp_path / "__cluster_metadata-0") as reopened:
        assert reopened.end_offset == 25


def test_interrupted_snapshot_write_is_invisible_and_cleaned(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([feature(1)], epoch=1, timestamp_ms=1)
    partial = tmp_path / "__cluster_metadata-0" / (SnapshotId(1, 1).file_name + ".part")
    partial.write_bytes(b"half a snapshot")
    assert list_log_dir(tmp_path).snapshots == ()
    with MetadataLog(tmp_path / "__cluster_metadata-0"):
        assert not partial.exists()


def test_a_bad_length_mid_segment_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    """A flipped bit in a middle batch's length makes it claim to run past the end of the file;
    the valid batches after it show the log goes on, so nothing may be cut."""
    segment, ends = write_batches(tmp_path, batches=6)
    data = bytearray(segment.read_bytes())
    data[ends[1] + 8] ^= 0x01  # high byte of the third batch's length
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as err:
        MetadataLog(segment.parent)
    assert f"byte offset {ends[1]}" in str(err.value)
    assert segment.read_bytes() == bytes(data)
    with pytest.raises(CorruptRecordError):
        list(read_log_dir(tmp_path))  # the reader of a live directory refuses it too
