"""``log`` and ``diff`` live, on a real quorum: a ``kraftd cluster`` (3 controllers, 2 simulated
brokers) attached as the live shell attaches; a topic created through a real Kafka admin client
and a config altered show in ``log`` once committed, and ``diff`` from attach time says what
changed since. Waits poll to a deadline, a safety net against hangs, never a performance claim."""

from __future__ import annotations

import json
from typing import Iterator

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from metashell import cli
from metashell.shell.session import Session
from tests.engine.cluster.test_cluster_tool import Cluster
from tests.engine.server.test_controller_processes import poll
from tests.live_cluster import bootstrap, create_topic, running_cluster

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    yield from running_cluster(tmp_path_factory.mktemp("log-live") / "state", "--controllers", "3",
                               "--brokers", "2", "--session-timeout-ms", "5000")


def test_log_and_diff_follow_commits(cluster: Cluster) -> None:
    lines: list[str] = []
    session = Session(cli.live_source(bootstrap(cluster)), out=lines.append, err=lines.append)
    session.load()
    attached = session.image.provenance.last_offset

    def answer(line: str) -> list[str]:
        lines.clear()
        session.run_line(line)
        return list(lines)

    try:
        create_topic(cluster, NewTopic("audited", num_partitions=1, replication_factor=2))
        poll(lambda: any("/topics/audited/0" in line for line in answer("log /topics/audited --json")),
             "the topic's creation in log", DEADLINE_S)
        rows = [json.loads(line) for line in answer("log /topics/audited --json")]
        assert [(r["path"], r["event"], r["aborted"]) for r in reversed(rows)][:2] == [
            ("/topics/audited", "created", False), ("/topics/audited/0", "created", False)]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","))
        try:
            admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "audited", configs={"retention.ms": "1234"})])
        finally:
            admin.close()
        poll(lambda: any(line.endswith("created 1234") for line in answer("log /configs/TOPIC/audited/retention.ms")),
             "the config change in log", DEADLINE_S)
        diff = answer(f"diff {attached} latest /configs/TOPIC/audited")
        assert diff == ["+ /configs/TOPIC/audited/retention.ms  1234"]
        assert answer(f"diff {attached} latest /topics --stat")[-1].endswith("paths differ")
    finally:
        session.source.close()
