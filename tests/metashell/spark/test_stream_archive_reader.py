"""The archive stream's reader driven by hand, as Spark's stream process drives it (no Spark): the
segment the recorder is appending to may end inside a batch past the durable end, never short of
it; offsets are planned per segment and the rows are the export's."""

from __future__ import annotations

import pyarrow as pa
import pytest

from metashell.record.archive import Archive
from metashell.spark.stream_archive import ArchiveStreamReader
from metashell.spark.stream_offsets import StreamError
from tests.metashell.spark.stream_fixtures import TransactionLog, expected_rows

CLUSTER = "reader-cluster"


def _archive(tmp_path, batches: int) -> tuple[Archive, TransactionLog]:
    leader = TransactionLog()
    archive = Archive(tmp_path / "archive", segment_bytes=300).open()
    archive.set_cluster_id(CLUSTER)
    for _ in range(batches):
        archive.append(leader.append())
    archive.commit()
    return archive, leader


def _rows(reader: ArchiveStreamReader, start: dict, end: dict) -> list[tuple]:
    tables = [pa.Table.from_batches([b]) for task in reader.partitions(start, end) for b in reader.read(task)]
    return [tuple(row.values()) for table in tables for row in table.to_pylist()]


def test_a_half_written_batch_past_the_durable_end_is_left_for_later(tmp_path):
    archive, leader = _archive(tmp_path, 5)
    last_segment = sorted(archive.partition.glob("*.log"))[-1]
    with last_segment.open("ab") as f:
        f.write(leader.append()[:30])  # the recorder's next batch, cut short (not in the manifest)
    reader = ArchiveStreamReader([str(archive.root)], {})
    start = reader.initialOffset()
    end = reader.latestOffset(start)
    assert end == {"clusters": {CLUSTER: {"next": 15, "epoch": 1}}}
    assert len(reader.partitions(start, end)) == len(list(archive.partition.glob("*.log")))  # a task per segment
    assert sorted(_rows(reader, start, end)) == sorted(expected_rows(archive.root, CLUSTER))
    archive.close()


def test_a_segment_cut_short_of_the_durable_end_is_damage_named_in_one_line(tmp_path):
    archive, _ = _archive(tmp_path, 5)
    archive.close()
    last_segment = sorted(archive.partition.glob("*.log"))[-1]
    size = last_segment.stat().st_size
    with last_segment.open("r+b") as f:
        f.truncate(size - 7)  # the manifest counts the batch this cut
    reader = ArchiveStreamReader([str(archive.root)], {})
    with pytest.raises(StreamError, match=rf"^{last_segment}, byte offset \d+: "):
        reader.latestOffset(reader.initialOffset())
