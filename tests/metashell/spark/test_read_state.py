"""The tables that need state, read per snapshot interval (metashell.spark.intervals, read_state),
give the export's rows exactly: each task replays from the snapshot before its range, and the
tasks' rows, concatenated in plan order, are ``history_rows``' rows. Pure Python (no Spark): the
planner and the reader are called as the data source's tasks call them.

The logs: the corpus's real Kafka directories; the demo's; the change tables' scripted history
(every change table's domain, kraft.version and voters, transactions aborted, committed and open)
written with a snapshot at every offset (Kafka's snapshots carry kraft.version and the voters;
ours are also written without them, so the quorum must come from the segments), so a metadata
transaction straddles interval boundaries; the same damaged by a flipped byte; an archive with a
hole.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.image.image_writer import image_records
from engine.image.metadata_loader import load_log_dir
from engine.records.metadata_record_serde import ControlRecord
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.export import arrow_table
from metashell.export.history_tables import history_rows
from metashell.spark.cluster_files import cluster_files_of
from metashell.spark.intervals import IntervalTask, plan_intervals
from metashell.spark.pushed import Pushed
from metashell.spark.read_state import STATE_TABLES, interval_rows, interval_tables, read_interval
from tests.metashell.export.test_change_tables import SCRIPT, T0, kraft_version, voters

CORPUS_DIRS = ["Danielowo2000__BigDataTechnologies-Version-2__tarball-3.5.0", "djsoler__Big_Data_Proye_Docker",
               "weebee-io__backend", "AdiletBatyrbayev0520__air_analyzer", "Yashasvi960__kafka-service",
               "hiage__kafka-raft/kafka1"]


def task_rows(log_dir: Path, table: str, *, records_per_task: int = 1, pushed: Pushed = Pushed()) -> list[tuple]:
    files = cluster_files_of(log_dir, "c")
    tasks = plan_intervals(files, pushed, records_per_task=records_per_task, table=table)
    return [row for task in tasks for row in interval_rows(task, table)]


def assert_export_rows(log_dir: Path, *, records_per_task: int = 1, min_tasks: int = 1) -> None:
    """Every table's rows from the plan's tasks (each task replays once for all of them, as
    ``read_interval`` does for one) are the export's."""
    expected = history_rows(log_dir, tables=STATE_TABLES)
    files = cluster_files_of(log_dir, "c")
    tasks = plan_intervals(files, records_per_task=records_per_task)
    assert len(tasks) >= min_tasks
    got: dict[str, list[tuple]] = {table: [] for table in STATE_TABLES}
    for task in tasks:
        for table, rows in interval_tables(task, STATE_TABLES).items():
            got[table].extend(rows)
    assert got["gaps"] == [tuple(row) for row in expected["gaps"].rows]
    for table in STATE_TABLES:
        assert got[table] == [tuple(row) for row in expected[table].rows], table
    for table in ("partition_changes", "topic_changes"):  # one table alone: its own replay
        assert task_rows(log_dir, table, records_per_task=records_per_task) == got[table], table


def write_script_log(directory: Path, snapshots: list[int], *, kafka_like: bool = True,
                     rolls: tuple[int, ...] = (12, 25)) -> Path:
    """The scripted history with a snapshot at each end offset of ``snapshots`` (the image the
    log replays to there, written from one replay before any snapshot exists)."""
    offset = 0
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for records in SCRIPT:
            if offset in rolls:
                log.roll()
            log.append(records, epoch=1, timestamp_ms=T0 + offset, control=isinstance(records[0], ControlRecord))
            offset += len(records)
        images = {end: load_log_dir(directory, offset=end - 1)[0] for end in snapshots}
        for end, image in images.items():
            quorum = image.quorum
            control = []
            if kafka_like and quorum.kraft_version is not None:  # as Kafka's snapshots carry them (KIP-853)
                control = [kraft_version(quorum.kraft_version), voters(*(v.id for v in quorum.voters or ()))]
            log.write_snapshot(SnapshotId(end, 1), image_records(image), last_contained_log_timestamp_ms=T0 + end - 1,
                               now_ms=0, kraft_control=control)
    return directory


# A snapshot at every offset but three. 29 and 32 stand inside a transaction (aborted 27-29,
# committed 30-32), which Kafka's never do: the tasks starting there meet its end marker first and
# start from an older point; the tasks [27, 29) and [30, 32) read on past their range to the marker.
# Not 28, 31 or 34: a task starting there would end (or the log would) before the marker, and no
# task can tell a transaction's records from applied ones without reading back.
EVERY_OFFSET = [end for end in range(1, 35) if end not in (28, 31, 34)]


@pytest.mark.parametrize("name", CORPUS_DIRS)
def test_the_corpus_real_kafka_dirs_give_the_export_rows(corpus, name) -> None:
    assert_export_rows(corpus / name)


def test_the_demo_dirs_give_the_export_rows(demo_log_dir, dashboard_demo_dir) -> None:
    assert_export_rows(demo_log_dir)
    assert_export_rows(dashboard_demo_dir)


@pytest.mark.parametrize("kafka_like", [True, False], ids=["kraft-control-in-snapshots", "quorum-from-segments"])
def test_a_snapshot_at_every_offset_one_task_each(tmp_path, kafka_like) -> None:
    log_dir = write_script_log(tmp_path / "log", EVERY_OFFSET, kafka_like=kafka_like)
    assert_export_rows(log_dir, min_tasks=32)


def test_tasks_start_from_their_snapshot(tmp_path) -> None:
    """A task replays from its own snapshot, not from the log's start: its first row's state is
    the snapshot's even when the segments before it are gone."""
    log_dir = write_script_log(tmp_path / "log", [19], rolls=(19,))
    files = cluster_files_of(log_dir, "c")
    tasks = plan_intervals(files, records_per_task=1)
    assert [(t.begin, t.end, t.snapshot is not None) for t in tasks] == [(0, 19, False), (19, None, True)]
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"")  # the first segment emptied
    rows = interval_rows(tasks[1], "topic_changes")
    assert [(r[0], r[5], r[7]) for r in rows][:2] == [(19, "orders", None), (20, "orders", 0)]


@pytest.mark.parametrize("records_per_task", [1, 5, 10, 1000])
def test_merged_intervals_give_the_same_rows(tmp_path, records_per_task) -> None:
    log_dir = write_script_log(tmp_path / "log", EVERY_OFFSET)
    tasks = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=records_per_task)
    spans = [(t.begin, t.end) for t in tasks]
    assert all(not t.restarts or t.end - t.begin <= records_per_task for t in tasks)  # merged within the span
    assert len(tasks) == {1: 32, 5: 8, 10: 5, 1000: 2}[records_per_task]  # the last interval, open-ended, apart
    assert [s[0] for s in spans][1:] == [s[1] for s in spans][:-1]  # adjacent, no offset twice
    assert_export_rows(log_dir, records_per_task=records_per_task)


def test_a_long_log_with_a_snapshot_every_few_hundred_records(tmp_path) -> None:
    # the bench's history (partition, fencing and config changes of 20 topics), an archive with a
    # snapshot at its end; snapshots every 250 records added, from the image replayed there
    from engine.image.metadata_delta import MetadataDelta
    from engine.image.metadata_image import MetadataImage
    from engine.image.metadata_loader import segment_batches
    from engine.storage.log_reader import list_log_dir
    from metashell.bench.log_history import write_big_history

    archive = write_big_history(tmp_path / "big", 6_000, topics=20)
    log_dir = archive / "__cluster_metadata-0"
    delta, images, next_at = MetadataDelta(MetadataImage()), {}, 250
    for batch in segment_batches(list_log_dir(log_dir), 0, []):
        for entry in batch:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        if batch[-1].offset + 1 >= next_at:
            images[batch[-1].offset + 1] = (delta.apply(), batch[-1].timestamp_ms)
            delta, next_at = MetadataDelta(images[batch[-1].offset + 1][0]), next_at + 250
    with MetadataLog(log_dir, fsync_policy="never") as log:
        for end, (image, time_ms) in images.items():
            if end < 6_000:
                log.write_snapshot(SnapshotId(end, 1), image_records(image), last_contained_log_timestamp_ms=time_ms,
                                   now_ms=0)
    files = cluster_files_of(archive, "c")
    assert len(files.snapshots) >= 20
    assert len(plan_intervals(files, records_per_task=1_000)) <= 8  # merged: not a task a snapshot
    assert_export_rows(archive, records_per_task=1_000)
    assert_export_rows(archive, records_per_task=1, min_tasks=20)


def test_a_log_whose_segments_start_at_a_snapshot(tmp_path) -> None:
    # Kafka deleted the segments before its snapshot at 12 (and keeps an older one at 10): the
    # history starts at the snapshot the segments continue from, as the export's first run
    log_dir = write_script_log(tmp_path / "log", [10, 12, 20, 30])
    (log_dir / "__cluster_metadata-0" / "00000000000000000000.log").unlink()
    tasks = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=1)
    assert [(t.begin, t.end) for t in tasks] == [(12, 20), (20, 30), (30, None)]
    assert tasks[0].snapshot is None  # replay_start's earliest point: the snapshot at 12
    assert_export_rows(log_dir)


def _flip(segment: Path, at: int) -> None:
    data = bytearray(segment.read_bytes())
    data[at] ^= 0xFF
    segment.write_bytes(bytes(data))


def _batch_position(segment: Path, offset: int) -> int:
    """The byte position of the batch holding ``offset`` in ``segment``."""
    from engine.storage.log_segment import iter_batches, read_segment_bytes

    for pos, header, _ in iter_batches(read_segment_bytes(segment), str(segment), decode_records=False):
        if header.base_offset <= offset <= header.last_offset:
            return pos
    raise AssertionError(f"no batch holds {offset}")


@pytest.mark.parametrize("records_per_task", [1, 1000])
def test_a_damaged_log_gives_the_export_rows(tmp_path, records_per_task) -> None:
    # a batch's records damaged (its CRC fails) at offset 6 of the first segment: the replay from
    # the start stops there; snapshots at 10 and 20 start the history again past it
    log_dir = write_script_log(tmp_path / "log", [3, 10, 20, 27])
    segment = log_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    _flip(segment, _batch_position(segment, 6) + 70)
    expected = history_rows(log_dir, tables=["gaps", "config_changes"])
    assert [(g[0], g[1]) for g in expected["gaps"].rows] == [(6, 10)]
    assert 6 not in [r[0] for r in expected["config_changes"].rows]
    assert_export_rows(log_dir, records_per_task=records_per_task)
    # PERMISSIVE: the damage is also a row, at the offset where the replay stopped
    tasks = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=records_per_task)
    rows = [row for task in tasks for row in interval_rows(task, "config_changes", permissive=True)]
    corrupt = [(row[0], row[-1]) for row in rows if row[-1] is not None]
    assert len(corrupt) == 1 and corrupt[0][0] == 6 and f"{segment}, byte offset " in corrupt[0][1]
    assert [row[:-1] for row in rows if row[-1] is None] == [tuple(r) for r in expected["config_changes"].rows]


def test_a_damaged_record_just_before_a_snapshot_is_a_gap_of_one(tmp_path) -> None:
    # the one-record batch at 5 damaged, the snapshot at 6 holds the state after it: the history
    # goes on from the snapshot (engine.image.log_runs.runs_of once merged the run from 6 into the
    # run before the damage, whose replay stopped at 5: every row after 5 was lost, with no gap)
    log_dir = write_script_log(tmp_path / "log", [6, 20])
    segment = log_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    _flip(segment, _batch_position(segment, 5) + 70)
    expected = history_rows(log_dir, tables=["gaps", "config_changes"])
    assert [(g[0], g[1]) for g in expected["gaps"].rows] == [(5, 6)]
    assert [r[0] for r in expected["config_changes"].rows][:2] == [6, 7]
    assert_export_rows(log_dir)


def test_an_archive_with_a_hole_gives_the_export_rows(tmp_path) -> None:
    from tests.metashell.export.test_change_tables_archive import _archive

    _, archive = _archive(tmp_path)
    assert history_rows(archive, tables=["gaps"])["gaps"].rows  # a hole, named
    assert_export_rows(archive)
    assert_export_rows(archive, records_per_task=1000)


def test_arrow_batches_are_the_export_tables_led_by_cluster_id(tmp_path) -> None:
    log_dir = write_script_log(tmp_path / "log", [10, 20])
    files = cluster_files_of(log_dir, "cluster-a")
    expected = history_rows(log_dir, tables=STATE_TABLES)
    for table in STATE_TABLES:
        got = [row for task in plan_intervals(files, records_per_task=1, table=table)
               for batch in read_interval(task, table) for row in batch.to_pylist()]
        want = [{"cluster_id": "cluster-a", **row} for row in arrow_table(expected[table]).to_pylist()]
        assert got == want, table


def test_pushed_filters_keep_exactly_the_rows_spark_would(tmp_path) -> None:
    log_dir = write_script_log(tmp_path / "log", [10, 20, 30])
    every = history_rows(log_dir, tables=STATE_TABLES)
    # 31: inside the committed transaction 30-32, whose change rows took effect at 32
    pushed = Pushed(offset_min=31, offset_max=33, time_min_ms=T0 + 5)
    for table in ("config_changes", "topic_changes", "partition_changes"):
        want = [tuple(r) for r in every[table].rows if 31 <= r[0] <= 33]
        files = cluster_files_of(log_dir, "c")
        tasks = plan_intervals(files, pushed, records_per_task=1, table=table)
        got = [row for task in tasks for batch in read_interval(task, table) for row in batch.to_pylist()]
        assert [tuple(r.values())[1:] for r in got] == want, table
    assert [t.begin for t in plan_intervals(cluster_files_of(log_dir, "c"), pushed, records_per_task=1)] == [30]
    types = Pushed(types=frozenset({"PARTITION_RECORD"}))
    rows = task_rows(log_dir, "partition_changes", pushed=types)
    assert rows and all(r[2] == "PARTITION_RECORD" for r in rows)
    gone = Pushed(cluster_ids=frozenset({"other"}))
    assert plan_intervals(cluster_files_of(log_dir, "c"), gone) == []


@pytest.mark.parametrize("start, end", [(None, 31), (31, 31), (29, 33), (12, 28), (31, None), (None, 5)])
def test_start_and_end_offsets_as_the_export_takes_them(tmp_path, start, end) -> None:
    # startOffset keeps the rows at offsets from it (the offset column, as a filter would);
    # endOffset reads the log as if it ended there: the transaction open at 31 (30-32) is not applied
    log_dir = write_script_log(tmp_path / "log", [10, 20, 30])
    expected = history_rows(log_dir, start=start, end=end, tables=STATE_TABLES)
    files = cluster_files_of(log_dir, "c")
    pushed = Pushed(offset_min=start, offset_max=end)
    for table in STATE_TABLES:
        tasks = plan_intervals(files, pushed, records_per_task=1, table=table, end_offset=end)
        got = [tuple(row.values())[1:] for task in tasks for batch in read_interval(task, table)
               for row in batch.to_pylist()]
        want = [tuple(row.values()) for row in arrow_table(expected[table]).to_pylist()]
        assert got == want, table


def test_a_snapshot_inside_a_transaction_starts_its_task_earlier(tmp_path) -> None:
    # 31: inside the committed transaction 30-32 (BEGIN 30, a config 31, END 32), which Kafka never
    # writes: the task from 31 meets the END first, and replays from the snapshot at 30 instead
    log_dir = write_script_log(tmp_path / "log", [30, 31])
    tasks = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=1)
    assert [(t.begin, t.end) for t in tasks] == [(0, 30), (30, 31), (31, None)]
    rows = interval_rows(tasks[2], "config_changes")
    assert [(r[0], r[1], r[4], r[-1]) for r in rows] == [(32, 31, "segment.ms", False)]  # took effect at 32
    assert_export_rows(log_dir)


def test_a_corrupt_snapshot_fails_failfast_in_one_line_and_permissive_starts_earlier(tmp_path) -> None:
    from metashell.spark.read_state import KraftReadError

    log_dir = write_script_log(tmp_path / "log", [10, 20])
    snapshot = next((log_dir / "__cluster_metadata-0").glob("*20-0000000001.checkpoint"))
    _flip(snapshot, 80)
    tasks = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=1, table="config_changes")
    with pytest.raises(KraftReadError) as failed:
        list(read_interval(tasks[2], "config_changes"))
    line = str(failed.value)
    assert str(snapshot) in line and "byte offset" in line and "\n" not in line
    rows = [r for task in tasks for r in interval_rows(task, "config_changes", permissive=True)]
    corrupt = [r for r in rows if r[-1] is not None]
    assert [(r[0], r[-1]) for r in corrupt] == [(20, line)]
    want = [(*r, None) for r in history_rows(log_dir, tables=["config_changes"])["config_changes"].rows]
    assert [r for r in rows if r[-1] is None] == want  # the task started from the snapshot at 10


def test_gaps_come_from_the_first_task_only(tmp_path) -> None:
    from tests.metashell.export.test_change_tables_archive import _archive

    _, archive = _archive(tmp_path)
    tasks = plan_intervals(cluster_files_of(archive, "c"), table="gaps")
    assert len(tasks) == 1
    rows = [row for task in tasks for batch in read_interval(task, "gaps") for row in batch.to_pylist()]
    assert [(r["cluster_id"], r["first_offset"], r["resume_offset"]) for r in rows] == [("c", 12, 18)]
    permissive = [row for batch in read_interval(tasks[0], "gaps", True) for row in batch.to_pylist()]
    assert [(r["first_offset"], r["_corrupt"]) for r in permissive] == [(12, None)]
    others = plan_intervals(cluster_files_of(archive, "c"), records_per_task=1)[1:]  # the other tasks: none
    assert others and not [row for task in others for batch in read_interval(task, "gaps") for row in batch.to_pylist()]


def test_single_segment_files_give_the_rows_of_their_records(tmp_path) -> None:
    # load() given one segment file: the rows of the records it holds (offsets 12-24), the state
    # replayed from the snapshot before them all the same
    from dataclasses import replace

    log_dir = write_script_log(tmp_path / "log", [10, 20], rolls=(12, 25))
    files = cluster_files_of(log_dir, "c")
    one = replace(files, segments=files.segments[1:2])
    tasks = plan_intervals(one, records_per_task=1)
    assert [(t.begin, t.end) for t in tasks] == [(10, 20), (20, None)]
    every = history_rows(log_dir, tables=["config_changes", "partition_changes"])
    for table, at in (("config_changes", 1), ("partition_changes", 0)):
        want = [tuple(r) for r in every[table].rows if 12 <= r[at] < 25]
        assert want and [r for task in tasks for r in interval_rows(task, table)] == want


def test_a_task_pickles_with_plain_values(tmp_path) -> None:
    import pickle

    from pyspark.sql.datasource import InputPartition

    log_dir = write_script_log(tmp_path / "log", [10])
    task = plan_intervals(cluster_files_of(log_dir, "c"), records_per_task=1)[1]
    assert isinstance(task, InputPartition) and isinstance(task, IntervalTask)
    assert pickle.loads(pickle.dumps(task)) == task


def test_the_docs_say_which_tables_are_per_file_and_which_per_interval() -> None:
    text = (Path(__file__).parents[3] / "docs" / "export.md").read_text()
    table = text.split("### Per-file and per-interval tables\n", 1)[1].strip().split("\n\n", 1)[0]
    rows = [line.strip("|").split(" | ") for line in table.splitlines()[2:]]
    tasks = {cells[1].strip(): {name.strip(" `") for name in cells[0].split(", ")} for cells in rows}
    assert tasks["one per segment file"] == {"records"}
    assert tasks["one per snapshot interval of each cluster"] == set(STATE_TABLES) - {"gaps"}
    assert tasks["one per cluster"] == {"gaps"}
