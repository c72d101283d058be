"""``spark.readStream.format("kraft").option("bootstrap.controllers", ...)`` against a running
kraftd cluster (three controllers, one broker): real queries writing Parquet, stopped and
restarted from their checkpoints while the cluster changes (topics, configs, a leader killed, the
whole quorum down for a while), a micro-batch planned but not committed read again, and a query
started at the latest offset. The Parquet rows are compared record for record with the leader's
own log directory as the export's engine reads it: every offset once, the same rows. (A query's
whole Spark SIGKILLed, and an archive read as a recorder writes it: test_stream_processes_kraftd.py.)
"""

from __future__ import annotations

import pytest

from tests.live_cluster import bootstrap, running_cluster
from tests.metashell.record.recorder_process import log_end_offset
from tests.metashell.spark.stream_cluster import change, compare, leader_dir, leader_of, topics_of
from tests.metashell.spark.stream_fixtures import forget_last_commit, parquet_rows, register, start_query, wait_stream

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("stream") / "cluster", "--controllers", "3", "--brokers", "1")


def test_a_live_query_stopped_and_restarted_through_a_failover_loses_and_repeats_nothing(spark, cluster, tmp_path):
    fmt = register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def stream():
        return spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)) \
            .option("kafka.request.timeout.ms", "5000").option("kafka.controller.quorum.fetch.timeout.ms", "1000") \
            .load()

    query = start_query(spark, stream(), out, checkpoint, "live_restart")
    try:
        change(cluster, "before-stop")
        wait_stream(query, log_end_offset(leader_dir(cluster)))
        leader = leader_of(cluster)
        cluster.ok("kill", leader)  # the leader dies: the stream follows the next one
        change(cluster, "after-failover")
        wait_stream(query, log_end_offset(leader_dir(cluster)))
        cluster.ok("start", leader)
        controllers = [name for name in cluster.status() if name.startswith("controller")]
        for name in controllers:  # the whole quorum down: the query waits, it does not fail
            cluster.ok("stop", name)
        for name in controllers:
            cluster.ok("start", name)
        change(cluster, "after-quorum-down")
        wait_stream(query, log_end_offset(leader_dir(cluster)))
        assert query.isActive
    finally:
        query.stop()
    change(cluster, "while-stopped")
    query = start_query(spark, stream(), out, checkpoint, "live_restart")
    try:
        change(cluster, "after-restart")
        wait_stream(query, log_end_offset(leader_dir(cluster)))
    finally:
        query.stop()
    rows = compare(spark, cluster, out)
    assert {"before-stop", "after-failover", "after-quorum-down", "while-stopped", "after-restart"} <= topics_of(rows)
    assert min(r[1] for r in rows) == 0  # earliest: the log's start


def test_a_live_micro_batch_planned_and_not_committed_is_fetched_again_the_same(spark, cluster, tmp_path):
    fmt = register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run(topic: str) -> None:
        stream = spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)).load()
        query = start_query(spark, stream, out, checkpoint, "live_replay")
        try:
            first = wait_stream(query, 1)
            change(cluster, topic)
            wait_stream(query, max(first + 1, log_end_offset(leader_dir(cluster))))
        finally:
            query.stop()

    run("replay-1")
    before = sorted(parquet_rows(spark, out))
    forget_last_commit(checkpoint, out)  # its offsets stay: fetched again from their start and epoch
    assert len(parquet_rows(spark, out)) <= len(before)
    run("replay-2")
    rows = compare(spark, cluster, out)
    assert set(before) <= set(rows) and {"replay-1", "replay-2"} <= topics_of(rows)


def test_starting_offsets_latest_streams_what_is_committed_after_the_start(spark, cluster, tmp_path):
    fmt = register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    change(cluster, "before-latest")
    stream = spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)) \
        .option("startingOffsets", "latest").load()
    query = start_query(spark, stream, out, checkpoint, "live_latest")
    try:
        wait_stream(query, 0)  # started: its first offset is set
        change(cluster, "after-latest")
        wait_stream(query, log_end_offset(leader_dir(cluster)))
    finally:
        query.stop()
    rows = parquet_rows(spark, out)
    assert "after-latest" in topics_of(rows) and "before-latest" not in topics_of(rows)
    offsets = sorted(r[1] for r in rows)
    assert offsets == list(range(offsets[0], offsets[-1] + 1))


def test_an_available_now_query_takes_what_was_committed_at_its_start_and_ends(spark, cluster, tmp_path):
    fmt = register(spark)
    out = tmp_path / "out"
    change(cluster, "before-available-now")
    query = (spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)).load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120), "an availableNow query ends by itself"
    finally:
        query.stop()
    rows = compare(spark, cluster, out)
    assert "before-available-now" in topics_of(rows)  # committed before the start: in the one micro-batch
