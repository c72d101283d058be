"""The shell's first questions on a snapshot decode only the topics they name; a whole-image
question decodes the rest, and every answer is the eager image's."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.image import metadata_loader
from engine.image.image_writer import image_records
from engine.image.lazy_topics import undecoded_topics
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i16, i32, i64
from engine.storage.snapshot_writer import SnapshotId, write_snapshot
from metashell.shell.session import Session
from metashell.source.files import Source

TOPICS = 30


def _snapshot(tmp_path: Path) -> Path:
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)))
    delta.replay(m.RegisterBrokerRecordV3(broker_id=i32(1), is_migrating_zk_broker=False,
                                          incarnation_id=uuid.UUID(int=1), broker_epoch=i64(5), end_points=(),
                                          features=(), rack=None, fenced=False, in_controlled_shutdown=False,
                                          log_dirs=(uuid.UUID(int=77),)))
    for n in range(TOPICS):
        topic_id = uuid.UUID(int=n + 1)
        delta.replay(m.TopicRecordV0(name=f"t{n:02d}", topic_id=topic_id))
        for p in range(5):
            delta.replay(m.PartitionRecordV2(
                partition_id=i32(p), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),), removing_replicas=(),
                adding_replicas=(), leader=i32(1), leader_epoch=i32(p), partition_epoch=i32(0),
                directories=(uuid.UUID(int=77),)))
    return write_snapshot(tmp_path, SnapshotId(200, 1), image_records(delta.apply()),
                          last_contained_log_timestamp_ms=1, now_ms=2, fsync=False)


def _transcript(path: Path, lines: list[str]) -> tuple[list[str], Session]:
    out: list[str] = []
    session = Session(Source(snapshot=path), out=out.append)
    session.load()
    for line in lines:
        session.run_line(line)
    return out, session


FIRST = ["ls /", "ls /topics", "cat /topics/t07/3", "ls /brokers/1", "cat /brokers/1/rack",
         "cd /image/topics/byName/t07", "ls", "ls /image/topics/byName"]


def test_the_first_questions_decode_only_the_topic_they_name(tmp_path, monkeypatch) -> None:
    path = _snapshot(tmp_path)
    lazy, session = _transcript(path, FIRST)
    assert undecoded_topics(session.image.topics) == TOPICS - 1
    monkeypatch.setattr(metadata_loader, "index_snapshot", lambda buf, where, **options: None)
    monkeypatch.setattr(metadata_loader, "index_snapshot_on_two", lambda buf, where: None)
    eager, _ = _transcript(path, FIRST)
    assert lazy == eager and '"leaderEpoch": 3,' in "\n".join(lazy)


@pytest.mark.parametrize("question", ["find /topics -name 4", "tree /topics", "summary"])
def test_a_whole_image_question_decodes_the_rest_and_answers_as_the_eager_image(tmp_path, monkeypatch, question) -> None:
    path = _snapshot(tmp_path)
    lazy, session = _transcript(path, [question])
    assert undecoded_topics(session.image.topics) == 0
    monkeypatch.setattr(metadata_loader, "index_snapshot", lambda buf, where, **options: None)
    monkeypatch.setattr(metadata_loader, "index_snapshot_on_two", lambda buf, where: None)
    eager, _ = _transcript(path, [question])
    assert lazy == eager and len(lazy) > 1
