"""``spark.readStream.format("kraft").load(ARCHIVE)``: a growing archive read by a real streaming
query writing Parquet, stopped and restarted from its checkpoint while the archive grows; the
rows compared, record for record, with what the export's engine reads from the archive."""

from __future__ import annotations

import pytest

from metashell.record.archive import Archive
from metashell.record.manifest import read_manifest
from tests.metashell.spark.stream_fixtures import (TransactionLog, expected_rows, forget_last_commit, parquet_rows,
                                                   register, start_query)

CLUSTER = "stream-archive-cluster"


def _archive(tmp_path):
    archive = Archive(tmp_path / "archive", segment_bytes=300).open()
    archive.set_cluster_id(CLUSTER)
    return archive


def _commit(archive, batches) -> None:
    for batch in batches:
        archive.append(batch)
    archive.commit()


def test_a_growing_archive_gives_every_record_once_across_a_restart(spark, tmp_path):
    fmt = register(spark)
    leader, archive = TransactionLog(), _archive(tmp_path)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _commit(archive, [leader.append() for _ in range(3)])
    stream = spark.readStream.format(fmt).load(str(archive.root))
    query = start_query(spark, stream, out, checkpoint, "archive_restart")
    try:
        query.processAllAvailable()
        before_transaction = leader.next_offset
        _commit(archive, [leader.begin(), leader.append(2)])  # a transaction still open
        query.processAllAvailable()
        # no micro-batch ends inside a transaction: its records wait for their end marker
        assert max(r[1] for r in parquet_rows(spark, out)) == before_transaction - 1
        _commit(archive, [leader.append(), leader.end(aborted=True), leader.append()])
        query.processAllAvailable()
    finally:
        query.stop()
    _commit(archive, [leader.begin(), leader.append(), leader.end(), leader.append()])  # while it is stopped
    query = start_query(spark, spark.readStream.format(fmt).load(str(archive.root)), out, checkpoint,
                        "archive_restart")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    archive.close()
    rows = parquet_rows(spark, out)
    assert len(rows) == len(set(rows)), "a record written twice"
    assert sorted(rows) == sorted(expected_rows(archive.root, CLUSTER))
    aborted = {r[1] for r in rows if r[-1]}
    assert aborted == set(range(before_transaction, before_transaction + 1 + 2 + 3 + 1))  # Begin, 2, 3, Abort


def test_offsets_retention_dropped_fail_the_restart_in_one_line_or_are_skipped_when_asked(spark, tmp_path):
    fmt = register(spark)
    leader, archive = TransactionLog(), _archive(tmp_path)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _commit(archive, [leader.append() for _ in range(2)])
    query = start_query(spark, spark.readStream.format(fmt).load(str(archive.root)), out, checkpoint, "archive_loss")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    stopped_at = leader.next_offset
    for _ in range(6):
        _commit(archive, [leader.append()])
    archive.add_snapshot(*leader.snapshot())
    _commit(archive, [leader.append()])
    assert archive.drop_older_than(leader.time_ms, leader.time_ms, 1)  # retention drops the oldest segments
    first = read_manifest(archive.root).first_offset
    assert first > stopped_at

    query = start_query(spark, spark.readStream.format(fmt).load(str(archive.root)), out, checkpoint, "archive_loss")
    with pytest.raises(Exception) as failed:
        query.awaitTermination(60)
    line = next(x for x in str(failed.value).splitlines() if "are no longer available" in x)
    assert line.strip().endswith(
        f"cluster {CLUSTER}: offsets {stopped_at} to {first - 1} are no longer available (the archive "
        f"{archive.root} starts at offset {first}): the checkpoint's next offset {stopped_at} is lost. Set option "
        f"failOnDataLoss=false to go on from offset {first} (the skipped offsets are logged), or start the query "
        "from a new checkpoint")

    stream = spark.readStream.format(fmt).option("failOnDataLoss", "false").load(str(archive.root))
    query = start_query(spark, stream, out, checkpoint, "archive_loss")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    archive.close()
    offsets = sorted(r[1] for r in parquet_rows(spark, out))
    assert offsets == [*range(0, stopped_at), *range(first, leader.next_offset)]


def test_a_glob_of_archives_streams_each_cluster_with_its_own_offsets(spark, tmp_path):
    fmt = register(spark)
    archives = {}
    for name in ("east", "west"):
        archive = Archive(tmp_path / f"archive-{name}", segment_bytes=300).open()
        archive.set_cluster_id(f"cluster-{name}")
        archives[name] = (archive, TransactionLog())
    east, west = archives["east"], archives["west"]
    _commit(east[0], [east[1].append() for _ in range(3)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = start_query(spark, spark.readStream.format(fmt).load(str(tmp_path / "archive-*")), out, checkpoint,
                        "archive_glob")
    try:
        query.processAllAvailable()
        _commit(west[0], [west[1].append(), west[1].begin(), west[1].append(), west[1].end()])  # joins later
        _commit(east[0], [east[1].append()])
        query.processAllAvailable()
    finally:
        query.stop()
    rows = parquet_rows(spark, out)
    for name, (archive, _) in archives.items():
        archive.close()
        mine = [r for r in rows if r[0] == f"cluster-{name}"]
        assert sorted(mine) == sorted(expected_rows(archive.root, f"cluster-{name}"))


def test_a_micro_batch_planned_and_not_committed_is_read_again_the_same(spark, tmp_path):
    fmt = register(spark)
    leader, archive = TransactionLog(), _archive(tmp_path)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    _commit(archive, [leader.append()])
    query = start_query(spark, spark.readStream.format(fmt).load(str(archive.root)), out, checkpoint, "archive_replay")
    try:
        query.processAllAvailable()
        _commit(archive, [leader.append(), leader.begin(), leader.append(), leader.end(aborted=True)])
        query.processAllAvailable()
    finally:
        query.stop()
    before = sorted(parquet_rows(spark, out))
    forget_last_commit(checkpoint, out)
    assert len(parquet_rows(spark, out)) < len(before)  # the sink no longer counts that micro-batch's files
    query = start_query(spark, spark.readStream.format(fmt).load(str(archive.root)), out, checkpoint, "archive_replay")
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    archive.close()
    assert sorted(parquet_rows(spark, out)) == before == sorted(expected_rows(archive.root, CLUSTER))
