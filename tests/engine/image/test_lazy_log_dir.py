"""A log directory whose newest snapshot starts the replay: the snapshot's topics stay undecoded
until a record after it (or a question) touches them, seek uses the same image, and the image
equals the eager one at every point."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.image import metadata_loader
from engine.image.lazy_topics import undecoded_topics
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.image_writer import image_records
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.source.files import Source

TOPICS = 12


def _topic_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def _topic(n: int) -> list:
    topic_id = _topic_id(n)
    return [m.TopicRecordV0(name=f"t{n}", topic_id=topic_id),
            *(m.PartitionRecordV2(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1), i32(2)), isr=(i32(1),),
                                  removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                  partition_epoch=i32(0), directories=(None, None),
                                  eligible_leader_replicas=(i32(2),) if n == 7 else None) for p in range(4))]


def _log_dir(tmp_path: Path) -> Path:
    """Offsets 0-59: 12 topics; a snapshot at 60; then records that touch t3, t5, t7 and a new t99."""
    records = [r for n in range(TOPICS) for r in _topic(n)]
    delta = MetadataDelta(MetadataImage())
    for r in records:
        delta.replay(r)
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append(records, epoch=1, timestamp_ms=1000)
        log.write_snapshot(SnapshotId(len(records), 1), image_records(delta.apply()),
                           last_contained_log_timestamp_ms=1000, now_ms=9)
        log.append([m.PartitionChangeRecordV0(partition_id=i32(2), topic_id=_topic_id(3), isr=(i32(1), i32(2)))],
                   epoch=1, timestamp_ms=2000)
        log.append([m.RemoveTopicRecordV0(topic_id=_topic_id(5))], epoch=1, timestamp_ms=3000)
        log.append([m.ClearElrRecordV0(topic_name="t7"), *_topic(99)], epoch=2, timestamp_ms=4000)
    return tmp_path


def _eager(monkeypatch: pytest.MonkeyPatch, directory: Path, offset: int | None = None) -> MetadataImage:
    with monkeypatch.context() as patched:
        patched.setattr(metadata_loader, "index_snapshot", lambda buf, where, **options: None)
        patched.setattr(metadata_loader, "index_snapshot_on_two", lambda buf, where: None)
        return Source(log_dir=directory).load(offset=offset)[0]


def test_records_after_the_snapshot_decode_only_the_topics_they_touch(tmp_path, monkeypatch) -> None:
    directory = _log_dir(tmp_path)
    lazy, info = Source(log_dir=directory).load()
    assert info.snapshot == SnapshotId(60, 1)
    by_name = {t.name: t for t in lazy.topics.by_id.values()}
    # t3 (a PartitionChangeRecord) and t7 (its ELR cleared) decoded; t5 removed; the rest untouched
    assert undecoded_topics(lazy.topics) == TOPICS - 3
    assert by_name["t3"].partitions[2].isr == (1, 2) and by_name["t7"].partitions[0].elr == ()
    assert "t5" not in by_name and list(by_name["t99"].partitions) == [0, 1, 2, 3]
    eager = _eager(monkeypatch, directory)
    assert lazy == eager and list(lazy.topics.by_id) == list(eager.topics.by_id)


def test_seek_uses_the_one_lazy_image_and_reads_the_snapshot_once(tmp_path, monkeypatch) -> None:
    directory = _log_dir(tmp_path)
    reads: list[Path] = []
    real = metadata_loader.read_segment_bytes
    monkeypatch.setattr(metadata_loader, "read_segment_bytes", lambda path: reads.append(path) or real(path))
    source = Source(log_dir=directory)
    latest, _ = source.load()
    at_points = {offset: source.load(offset=offset)[0] for offset in (60, 61, 62)}
    again, _ = source.load()
    snapshot_reads = [p for p in reads if p.name == SnapshotId(60, 1).file_name]
    monkeypatch.undo()
    for offset, image in at_points.items():
        assert image == _eager(monkeypatch, directory, offset), offset
    assert again == latest
    assert len(snapshot_reads) == 1
    # every point shares the snapshot's untouched topics: decoded once for all of them
    t0 = latest.topics.topic("t0")
    assert all(image.topics.topic("t0") is t0 for image in at_points.values())
