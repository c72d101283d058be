"""A real ``kraftd cluster`` for the live tests (no tests here): started per module, every
process SIGKILLed at the end (tests/engine/cluster/test_cluster_tool.py's Cluster), and what they ask of it."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.engine.cluster.test_cluster_tool import Cluster

CLIENT_TIMEOUT_S = 60.0  # a safety net


def running_cluster(root: Path, *up_args: str) -> Iterator[Cluster]:
    """``kraftd cluster up --racks 0 UP_ARGS`` in ``root``, for a module-scoped fixture to yield from."""
    cluster = Cluster(root)
    try:
        cluster.up_output = cluster.ok("up", "--racks", "0", "--heartbeat-interval-ms", "500", *up_args)
        yield cluster
    finally:
        cluster.kill_all()


def bootstrap(cluster: Cluster, servers: bool = False) -> str:
    """bootstrap.controllers (or bootstrap.servers) as ``kraftd cluster up`` printed it."""
    key = "bootstrap.servers=" if servers else "bootstrap.controllers="
    return next(line[len(key):] for line in cluster.up_output.splitlines() if line.startswith(key))


def create_topic(cluster: Cluster, topic: NewTopic) -> None:
    """Created through a real Kafka admin client on the simulated brokers."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                             request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        admin.create_topics([topic])
    finally:
        admin.close()
