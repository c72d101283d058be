"""The archive stream's reader driven by hand, as Spark's stream process drives it (no Spark): the
segment the recorder is appending to may end inside a batch past the durable end, never short of
it; offsets are planned per segment and the rows are the export's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from metashell.record.archive import Archive
from metashell.spark.stream_archive import ArchiveStreamReader
from metashell.spark.stream_offsets import StreamError, StreamOptionError
from metashell.spark.table_schema import source_column_names
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


def test_latest_offset_asked_without_a_start_goes_on_from_the_last_end_handed_out(tmp_path):
    # PySpark 4.0 and 4.1 call latestOffset() with no arguments (start came in 4.2)
    archive, leader = _archive(tmp_path, 5)
    reader = ArchiveStreamReader([str(archive.root)], {})
    assert reader.latestOffset() == {"clusters": {CLUSTER: {"next": 15, "epoch": 1}}}  # from the first offset
    first = reader.initialOffset()
    end = reader.latestOffset()
    assert end == {"clusters": {CLUSTER: {"next": 15, "epoch": 1}}}
    reader.commit(end)
    archive.append(leader.append())
    archive.commit()
    after = reader.latestOffset()
    assert after == {"clusters": {CLUSTER: {"next": 18, "epoch": 1}}}
    assert sorted(_rows(reader, first, end) + _rows(reader, end, after)) == sorted(expected_rows(archive.root, CLUSTER))
    archive.close()


def test_an_archive_hole_that_swallowed_an_end_marker_closes_the_transaction_as_null(tmp_path):
    leader = TransactionLog()
    archive = Archive(tmp_path / "archive", segment_bytes=300).open()
    archive.set_cluster_id(CLUSTER)
    archive.append(leader.append(1))  # offset 0
    archive.append(leader.begin())  # offset 1: its End is in the hole
    archive.commit()
    leader.end()  # offset 2, never recorded
    for _ in range(7):
        leader.append(1)  # offsets 3 to 9, never recorded
    snapshot_id, data = leader.snapshot()
    archive.reset(data, snapshot_id, "the leader's log starts past the archive's end", 1)
    archive.commit()
    reader = ArchiveStreamReader([str(archive.root)], {})
    start = reader.initialOffset()
    # the hole is at the durable end: the stream goes past the Begin all the same
    at_hole = reader.latestOffset(start)
    assert at_hole["clusters"][CLUSTER]["next"] == 2
    archive.append(leader.append())  # offsets 10 to 12, after the hole
    archive.commit()
    end = reader.latestOffset(at_hole)
    assert end["clusters"][CLUSTER]["next"] == 13
    archive.append(leader.end())  # offset 13: an End outside any transaction marks nothing
    archive.commit()
    later = reader.latestOffset(end)
    assert later["clusters"][CLUSTER]["next"] == 14
    rows = _rows(reader, start, at_hole) + _rows(reader, at_hole, end) + _rows(reader, end, later)
    names = source_column_names("records")
    aborted = {row[names.index("offset")]: row[names.index("aborted")] for row in rows}
    assert aborted == {0: False, 1: None, 10: False, 11: False, 12: False, 13: False}
    assert sorted(rows, key=str) == sorted(expected_rows(archive.root, CLUSTER), key=str)
    # a restarted query replaying the batch across the hole plans the same rows
    again = ArchiveStreamReader([str(archive.root)], {})
    assert sorted(_rows(again, start, later), key=str) == sorted(rows, key=str)
    archive.close()


def test_starting_offsets_latest_starts_at_the_durable_end_never_inside_a_transaction(tmp_path):
    leader = TransactionLog()
    archive = Archive(tmp_path / "archive", segment_bytes=300).open()
    archive.set_cluster_id(CLUSTER)
    for batch in (leader.append(), leader.append(), leader.begin(), leader.append()):  # Begin at offset 6
        archive.append(batch)
    archive.commit()
    root = str(archive.root)
    assert ArchiveStreamReader([root], {}).initialOffset() == {"clusters": {CLUSTER: {"next": 0, "epoch": 0}}}
    earliest = ArchiveStreamReader([root], {"startingOffsets": "earliest"})
    assert earliest.initialOffset()["clusters"][CLUSTER]["next"] == 0
    reader = ArchiveStreamReader([root], {"startingOffsets": "LATEST"})
    start = reader.initialOffset()
    assert start == {"clusters": {CLUSTER: {"next": 6, "epoch": 1}}}
    archive.append(leader.end())  # offset 10
    archive.commit()
    end = reader.latestOffset(start)
    assert end["clusters"][CLUSTER]["next"] == 11
    assert [row[source_column_names("records").index("offset")] for row in _rows(reader, start, end)] == \
        [6, 7, 8, 9, 10]
    with pytest.raises(StreamOptionError, match=r"^option startingOffsets='newest': expected earliest or latest"):
        ArchiveStreamReader([root], {"startingOffsets": "newest"})
    archive.close()


def test_archive_paths_are_made_absolute_on_the_driver(tmp_path, monkeypatch):
    # an executor of a standalone cluster runs in its own work directory
    archive, _ = _archive(tmp_path, 2)
    archive.close()
    monkeypatch.chdir(tmp_path)
    reader = ArchiveStreamReader(["archive"], {})
    start = reader.initialOffset()
    tasks = reader.partitions(start, reader.latestOffset(start))
    assert tasks and all(Path(task.path).is_absolute() for task in tasks)
    assert all(Path(task.path).is_relative_to(tmp_path.absolute()) for task in tasks)
