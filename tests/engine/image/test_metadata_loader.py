"""Loading images from snapshots and log directories, now and as of an offset or a time."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.common.errors import OffsetOutOfRange
from engine.records.kio_codec import i32
from engine.image.metadata_loader import load_file, load_log_dir, load_snapshot
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId

TOPIC = uuid.UUID(int=5)


def _history(tmp_path: Path) -> Path:
    """Offsets 0-1: topic + partition (t=1000); 2: ISR shrink (t=2000); 3: ISR expand (t=3000)."""
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([m.TopicRecordV0(name="t", topic_id=TOPIC),
                    m.PartitionRecordV0(partition_id=i32(0), topic_id=TOPIC, replicas=(i32(1), i32(2)),
                                        isr=(i32(1), i32(2)), removing_replicas=(), adding_replicas=(),
                                        leader=i32(1), leader_epoch=i32(0), partition_epoch=i32(0))],
                   epoch=1, timestamp_ms=1000)
        log.append([m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, isr=(i32(1),))],
                   epoch=1, timestamp_ms=2000)
        log.append([m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=TOPIC, isr=(i32(1), i32(2)))],
                   epoch=2, timestamp_ms=3000)
    return tmp_path


def _isr(image) -> tuple:
    return image.topics.topic("t").partitions[0].isr


def test_time_travel_by_offset_and_time(tmp_path: Path) -> None:
    directory = _history(tmp_path)
    assert _isr(load_log_dir(directory)[0]) == (1, 2)
    image, info = load_log_dir(directory, offset=2)
    assert _isr(image) == (1,) and info.end_offset == 3 and info.log_end_offset == 4
    assert image.provenance == (2, 1, 2000)
    assert _isr(load_log_dir(directory, time_ms=2999)[0]) == (1,)
    assert load_log_dir(directory, time_ms=999)[0].topics.by_id == {}


def test_snapshot_start_and_provenance(tmp_path: Path) -> None:
    directory = _history(tmp_path)
    with MetadataLog(directory / "__cluster_metadata-0") as log:
        image = load_log_dir(directory, offset=2)[0]
        from engine.image.image_writer import image_records
        log.write_snapshot(SnapshotId(3, 1), image_records(image), last_contained_log_timestamp_ms=2000, now_ms=9)
    latest, info = load_log_dir(directory)
    assert info.snapshot == SnapshotId(3, 1) and info.first_offset == 3 and _isr(latest) == (1, 2)
    from_snapshot, _ = load_snapshot(directory / "__cluster_metadata-0" / SnapshotId(3, 1).file_name)
    assert from_snapshot.provenance == (2, 1, 2000) and _isr(from_snapshot) == (1,)
    # an older point than the snapshot: the log still reaches back to offset 0
    assert load_log_dir(directory, offset=1)[1].snapshot is None


def test_one_file_reads_as_kafka_metadata_shell_reads_it(tmp_path: Path) -> None:
    """load_file: a segment is replayed from its first batch (as Kafka's shell reads any file),
    a snapshot, even renamed, read as a snapshot."""
    directory = _history(tmp_path)
    segment = directory / "__cluster_metadata-0" / "00000000000000000000.log"
    image, info = load_file(segment)
    assert image == load_log_dir(directory)[0] and image.provenance == (3, 2, 3000)
    assert (info.source, info.snapshot, info.first_offset, info.end_offset) == (segment, None, 0, 4)
    with MetadataLog(directory / "__cluster_metadata-0") as log:
        from engine.image.image_writer import image_records
        log.write_snapshot(SnapshotId(4, 2), image_records(image), last_contained_log_timestamp_ms=3000, now_ms=9)
    snapshot = directory / "__cluster_metadata-0" / SnapshotId(4, 2).file_name
    renamed = tmp_path / "copy.bin"
    shutil.copy(snapshot, renamed)
    assert load_file(snapshot)[0] == load_snapshot(snapshot)[0]
    assert load_file(renamed)[0] == load_snapshot(renamed)[0] != load_file(segment)[0]  # not replayed as a log


def test_offset_before_the_oldest_data_is_an_error(tmp_path: Path) -> None:
    directory = _history(tmp_path)
    with MetadataLog(directory / "__cluster_metadata-0", segment_bytes=1) as log:
        log.append([m.NoOpRecordV0()], epoch=2, timestamp_ms=4000)
        log.write_snapshot(SnapshotId(4, 2), [], last_contained_log_timestamp_ms=4000, now_ms=9)
        log.roll()
        log.delete_before_latest_snapshot()
    with pytest.raises(OffsetOutOfRange, match="offset 1 is before the oldest data here .*: offsets 3 to 4 can be "
                                               "reached") as refused:
        load_log_dir(directory, offset=1)
    assert (refused.value.first, refused.value.last) == (3, 4)


def test_node_files_come_along(corpus: Path, tmp_path: Path) -> None:
    image, info = load_log_dir(corpus / "hiage__kafka-raft" / "kafka1")
    assert info.quorum_state.leader_epoch == 1 and info.meta.cluster_id == "EP6hyiddQNW5FPrAvR9kWw"
    assert info.end_offset == info.log_end_offset == 2982 and image.partition_count == 60
    copy = tmp_path / "node"
    shutil.copytree(corpus / "hiage__kafka-raft" / "kafka1", copy)
    (copy / "__cluster_metadata-0" / "quorum-state").write_text("{not json")
    _, info = load_log_dir(copy)
    assert info.quorum_state is None and any("quorum-state" in note for note in info.notes)


def test_time_travel_before_a_snapshot_replays_the_log_from_its_start(tmp_path: Path) -> None:
    """A snapshot newer than the time asked for must not be the starting point."""
    directory = _history(tmp_path)
    from engine.image.image_writer import image_records

    with MetadataLog(directory / "__cluster_metadata-0") as log:
        log.write_snapshot(SnapshotId(4, 2), image_records(load_log_dir(directory)[0]),
                           last_contained_log_timestamp_ms=3000, now_ms=9)
    image, info = load_log_dir(directory, time_ms=2500)
    assert info.snapshot is None and _isr(image) == (1,) and image.provenance.last_offset == 2
    image, info = load_log_dir(directory, time_ms=3000)
    assert info.snapshot == SnapshotId(4, 2) and _isr(image) == (1, 2)


def test_corpus_time_travel_across_a_kafka_snapshot(corpus: Path) -> None:
    weebee = corpus / "weebee-io__backend"
    image, info = load_log_dir(weebee, time_ms=1747000000000)  # before anything was written
    assert info.snapshot is None and image.provenance.last_offset == -1 and image.topics.by_id == {}
    image, info = load_log_dir(weebee, time_ms=1747366979728)  # offset 100's time, before the snapshot's
    assert info.snapshot is None and image.provenance.last_timestamp_ms <= 1747366979728
