"""``spark.readStream.format("kraft")`` against real Apache Kafka controllers (the newest server:
three controllers on a dynamic quorum and a broker, tests/metashell/record/kafka_recorder_quorum.py,
which snapshots every few kilobytes and deletes what its snapshots cover at each cleaning).

- A query writing Parquet follows the quorum through a killed leader, is stopped, the cluster
  changes (topics, configs, through Kafka's own admin client), and it restarts from its
  checkpoint: its rows are the leader's log record for record, every offset once.
- Stopped again while Kafka snapshots and deletes the records after its checkpoint: the restart
  fails with the data-loss line naming the offsets; with failOnDataLoss=false it goes on from the
  leader's snapshot, the offsets it skipped being exactly the deleted ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import wait_until
from tests.metashell.record.kafka_recorder_quorum import forgetful_quorum, high_watermark, snapshot_ids_on_disk
from tests.metashell.record.kafka_recorder_steps import create_topic, set_topic_config, unique
from tests.metashell.spark.stream_fixtures import (contiguous, expected_rows, parquet_rows, register, start_query,
                                                   wait_stream)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
CLEANING_DEADLINE_S = 200.0  # Kafka cleans its metadata log every 60 s from its raft client's start


@pytest.fixture(scope="module")
def quorum(kafka_newest_server, tmp_path_factory) -> Iterator[KafkaCluster]:
    yield from forgetful_quorum(kafka_newest_server, tmp_path_factory.mktemp("stream-quorum"))


def _cluster_id(cluster: KafkaCluster) -> str:
    props = (cluster.voters[0].log_dir / "meta.properties").read_text()
    return next(line.split("=", 1)[1].strip() for line in props.splitlines() if line.startswith("cluster.id="))


def _leader_dir(cluster: KafkaCluster) -> Path:
    return cluster.node(cluster.wait_leader()).metadata_dir


def _stream(spark, fmt: str, cluster: KafkaCluster, **options: str):
    reader = spark.readStream.format(fmt).option("bootstrap.controllers", cluster.bootstrap_controllers) \
        .option("kafka.request.timeout.ms", "5000")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _run_until_caught_up(spark, fmt, cluster, out, checkpoint, **options) -> int:
    query = start_query(spark, _stream(spark, fmt, cluster, **options), out, checkpoint, "kafka_stream")
    try:
        return wait_stream(query, high_watermark(cluster))
    finally:
        query.stop()


def _topics(rows) -> set[str]:
    return {json.loads(r[7])["name"] for r in rows if r[5] == "TOPIC_RECORD"}


def test_kafka_controllers_stream_once_through_failover_restart_and_data_loss(spark, quorum, tmp_path):
    fmt = register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    names = [unique("stream") for _ in range(4)]
    query = start_query(spark, _stream(spark, fmt, quorum), out, checkpoint, "kafka_stream")
    try:
        create_topic(quorum, names[0], configs={"retention.ms": "3600000"})
        wait_stream(query, high_watermark(quorum))
        leader = quorum.node(quorum.wait_leader())
        leader.kill()  # the stream follows the next leader
        create_topic(quorum, names[1])
        set_topic_config(quorum, names[1], "retention.ms", "7200000")
        wait_stream(query, high_watermark(quorum))
        quorum.restart(leader)
    finally:
        query.stop()
    create_topic(quorum, names[2])  # while the query is stopped
    end = _run_until_caught_up(spark, fmt, quorum, out, checkpoint)
    rows = parquet_rows(spark, out)
    contiguous(rows)
    held = [r for r in expected_rows(_leader_dir(quorum), _cluster_id(quorum)) if r[1] < end]
    assert held and set(held) <= set(rows)  # the leader's records, the same rows
    assert {r[1] for r in rows if r[1] >= held[0][1]} == {r[1] for r in held}
    assert set(names[:3]) <= _topics(rows)

    # stopped while Kafka snapshots past the checkpoint and deletes the records after it
    for i in range(10):
        create_topic(quorum, f"{names[3]}-{i}", partitions=30)  # ~2.3 kB of records each
    leader = quorum.node(quorum.wait_leader())

    def one_snapshot_past_the_checkpoint() -> bool:
        # Kafka's cleanings (every 60 s) delete every snapshot but the newest: the log starts there
        ids = snapshot_ids_on_disk(leader.metadata_dir)
        return len(ids) == 1 and ids[0][0] > end + 1

    wait_until(one_snapshot_past_the_checkpoint, f"the leader's log start past {end}", quorum.live_nodes(),
               timeout_s=CLEANING_DEADLINE_S)
    [(start, _)] = snapshot_ids_on_disk(leader.metadata_dir)
    query = start_query(spark, _stream(spark, fmt, quorum), out, checkpoint, "kafka_stream")
    with pytest.raises(Exception) as failed:
        query.awaitTermination(120)
    line = next(x for x in str(failed.value).splitlines() if "are no longer available" in x)
    assert f"offsets {end} to {start - 1} are no longer available" in line and "failOnDataLoss=false" in line
    _run_until_caught_up(spark, fmt, quorum, out, checkpoint, failOnDataLoss="false")
    after = sorted(r[1] for r in parquet_rows(spark, out) if r[1] >= end)
    assert after[0] == start  # skipped up to the leader's snapshot, as the line says; nothing twice
    assert after == list(range(after[0], after[-1] + 1))
