"""A kraftd cluster for the kraft stream's live tests (no tests here): its leader's log, changes
made through a real Kafka admin client, and the rows of a query's Parquet compared with the
leader's log directory as the export's engine reads it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.live_cluster import CLIENT_TIMEOUT_S, bootstrap
from tests.metashell.spark.stream_fixtures import contiguous, expected_rows, parquet_rows


def cluster_id_of(cluster) -> str:
    props = (cluster.root / "controller-1" / "metadata" / "meta.properties").read_text()
    return next(line.split("=", 1)[1].strip() for line in props.splitlines() if line.startswith("cluster.id="))


def leader_of(cluster) -> str:
    """The leader once one is elected (the status names it): a safety net of tries, each a status call."""
    for _ in range(240):
        rows = cluster.status()
        found = [name for name, row in rows.items() if row["STATE"] == "leader"]
        if found:
            return found[0]
        threading.Event().wait(0.25)
    raise AssertionError(f"no leader elected:{cluster.logs()}")


def leader_dir(cluster) -> Path:
    return cluster.root / leader_of(cluster) / "metadata" / "__cluster_metadata-0"


def change(cluster, topic: str) -> None:
    """A topic with a config, then another deleted, through a real Kafka admin client on the brokers."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                             request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"}),
                             NewTopic(f"{topic}-gone", 1, 1)])
        admin.delete_topics([f"{topic}-gone"])
    finally:
        admin.close()


def compare(spark, cluster, out: Path) -> list[tuple]:
    """The query's rows: no offset twice, none missing, and the leader's log's own up to the last."""
    rows = parquet_rows(spark, out)
    contiguous(rows)
    last = max(r[1] for r in rows)
    expected = [r for r in expected_rows(leader_dir(cluster), cluster_id_of(cluster)) if r[1] <= last]
    assert sorted(rows) == sorted(expected)
    return rows


def topics_of(rows: list[tuple]) -> set[str]:
    return {json.loads(r[7])["name"] for r in rows if r[5] == "TOPIC_RECORD"}
