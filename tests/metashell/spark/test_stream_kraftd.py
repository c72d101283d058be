"""``spark.readStream.format("kraft").option("bootstrap.controllers", ...)`` against a running
kraftd cluster (three controllers, one broker): real queries writing Parquet, stopped, and
SIGKILLed with their Spark, and restarted from their checkpoints while the cluster changes (topics,
configs, a leader killed). The Parquet rows are compared record for record with the leader's own
log directory as the export's engine reads it: every offset once, the same rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.live_cluster import CLIENT_TIMEOUT_S, bootstrap, running_cluster
from tests.metashell.record.recorder_process import log_end_offset
from tests.metashell.spark.stream_fixtures import (contiguous, expected_rows, parquet_rows, register, start_query,
                                                   wait_stream)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("stream") / "cluster", "--controllers", "3", "--brokers", "1")


def _cluster_id(cluster) -> str:
    props = (cluster.root / "controller-1" / "metadata" / "meta.properties").read_text()
    return next(line.split("=", 1)[1].strip() for line in props.splitlines() if line.startswith("cluster.id="))


def _leader(cluster) -> str:
    for _ in range(240):
        rows = cluster.status()
        found = [name for name, row in rows.items() if row["STATE"] == "leader"]
        if found:
            return found[0]
        import threading
        threading.Event().wait(0.25)
    raise AssertionError(f"no leader elected:{cluster.logs()}")


def _leader_dir(cluster) -> Path:
    return cluster.root / _leader(cluster) / "metadata" / "__cluster_metadata-0"


def _change(cluster, topic: str) -> None:
    """A topic with a config, then another deleted, through a real Kafka admin client on the brokers."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                             request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"}),
                             NewTopic(f"{topic}-gone", 1, 1)])
        admin.delete_topics([f"{topic}-gone"])
    finally:
        admin.close()


def _compare(spark, cluster, out: Path) -> list[tuple]:
    rows = parquet_rows(spark, out)
    contiguous(rows)
    last = max(r[1] for r in rows)
    expected = [r for r in expected_rows(_leader_dir(cluster), _cluster_id(cluster)) if r[1] <= last]
    assert sorted(rows) == sorted(expected)
    return rows


def _topics(rows: list[tuple]) -> set[str]:
    return {json.loads(r[7])["name"] for r in rows if r[5] == "TOPIC_RECORD"}


def test_a_live_query_stopped_and_restarted_through_a_failover_loses_and_repeats_nothing(spark, cluster, tmp_path):
    fmt = register(spark)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def stream():
        return spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)) \
            .option("kafka.request.timeout.ms", "5000").load()

    query = start_query(spark, stream(), out, checkpoint, "live_restart")
    try:
        _change(cluster, "before-stop")
        wait_stream(query, log_end_offset(_leader_dir(cluster)))
        leader = _leader(cluster)
        cluster.ok("kill", leader)  # the leader dies: the stream follows the next one
        _change(cluster, "after-failover")
        wait_stream(query, log_end_offset(_leader_dir(cluster)))
        cluster.ok("start", leader)
    finally:
        query.stop()
    _change(cluster, "while-stopped")
    query = start_query(spark, stream(), out, checkpoint, "live_restart")
    try:
        _change(cluster, "after-restart")
        wait_stream(query, log_end_offset(_leader_dir(cluster)))
    finally:
        query.stop()
    rows = _compare(spark, cluster, out)
    assert {"before-stop", "after-failover", "while-stopped", "after-restart"} <= _topics(rows)
    assert min(r[1] for r in rows) == 0  # earliest: the log's start


def _job(options: dict, out: Path, checkpoint: Path, stop_at: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.metashell.spark.stream_job", json.dumps(options),
                             str(out), str(checkpoint), str(stop_at)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def _read_until(proc: subprocess.Popen, done) -> list[str]:
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip())
        if done(line):
            return lines
    raise AssertionError("the job ended first:\n" + "\n".join(lines[-40:]))


def test_a_sigkilled_query_restarted_from_its_checkpoint_gives_every_record_once(spark, cluster, tmp_path):
    options = {"bootstrap.controllers": bootstrap(cluster), "kafka.request.timeout.ms": "5000"}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = _job(options, out, checkpoint, -1)
    try:
        _read_until(first, lambda line: line.startswith("end ") and int(line.split()[1]) > 0)
        _change(cluster, "before-kill")
        target = log_end_offset(_leader_dir(cluster))
        _read_until(first, lambda line: line.startswith("end ") and int(line.split()[1]) >= target)
        _change(cluster, "at-kill")  # the kill lands while this is being streamed
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the query's driver, its JVM and workers: a lost machine
        first.wait(60)
    _change(cluster, "after-kill")
    second = _job(options, out, checkpoint, log_end_offset(_leader_dir(cluster)))
    try:
        lines = _read_until(second, lambda line: line.startswith("stopped"))
        assert second.wait(120) == 0, "\n".join(lines)
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(60)
    rows = _compare(spark, cluster, out)
    assert {"before-kill", "at-kill", "after-kill"} <= _topics(rows)
