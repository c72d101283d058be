"""``spark.readStream.format("kraft").load(ARCHIVE)``: a growing archive read by a real streaming
query writing Parquet, stopped and restarted from its checkpoint while the archive grows; the
rows compared, record for record, with what the export's engine reads from the archive."""

from __future__ import annotations

import pytest

from metashell.record.archive import Archive
from tests.metashell.spark.stream_fixtures import (TransactionLog, expected_rows, parquet_rows, register,
                                                   start_query)

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
