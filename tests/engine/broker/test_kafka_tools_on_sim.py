"""Kafka's own admin tools (the newest release's) administer our simulated cluster.

One ``kraftd cluster`` (1 controller, 3 simulated brokers) for the module, as in
tests/engine/broker/test_real_clients.py. Each operation is one tool run against bootstrap.servers (a JVM
each, so one call per operation); what it changed is read back from the controller's own
metadata log, and what it printed is checked where it tells what the cluster holds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic
from kafka_peer.distribution import KafkaDistribution
from kafka_peer.fixtures import VERSIONS

from tests.engine.broker.test_real_clients import BROKER, TOPIC, Sim, image_partitions, running_sim

pytestmark = [pytest.mark.kafka, pytest.mark.parametrize("kafka_dist", VERSIONS[-1:], indirect=True)]


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Iterator[Sim]:
    yield from running_sim(tmp_path_factory, "kafka-tools")


def create(sim: Sim, name: str, assignment: dict[int, list[int]]) -> None:
    """A topic the test needs but does not test the making of: by kafka-python, no JVM."""
    admin = KafkaAdminClient(bootstrap_servers=sim.bootstrap)
    try:
        admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment)])
    finally:
        admin.close()
    sim.synced()


def tool(dist: KafkaDistribution, sim: Sim, name: str, *args: str) -> str:
    """One of Kafka's tools against the brokers; its stdout (a non-zero exit fails the test). What
    a tool reads after a write waits for ``sim.synced()`` first, as every broker learns it late."""
    return dist.run(name, "--bootstrap-server", sim.bootstrap, *args, timeout_s=120).stdout


def test_kafka_topics(kafka_dist: KafkaDistribution, sim: Sim) -> None:
    tool(kafka_dist, sim, "kafka-topics", "--create", "--topic", "orders", "--partitions", "3",
         "--replication-factor", "3", "--config", "retention.ms=3600000")
    image = sim.synced()
    assert image.configs[(TOPIC, "orders")] == {"retention.ms": "3600000"}
    created = image_partitions(image, "orders")
    assert len(created) == 3 and all(sorted(replicas) == [1, 2, 3] for _, replicas, _ in created.values())

    described = tool(kafka_dist, sim, "kafka-topics", "--describe", "--topic", "orders")
    assert re.search(r"Topic: orders\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 3\t"
                     r"Configs: retention\.ms=3600000", described), described
    rows = re.findall(r"Partition: (\d+)\tLeader: (\d+)\tReplicas: ([\d,]+)\tIsr: ([\d,]+)", described)
    assert {int(p): (int(leader), [int(r) for r in replicas.split(",")], sorted(int(r) for r in isr.split(",")))
            for p, leader, replicas, isr in rows} == created

    tool(kafka_dist, sim, "kafka-topics", "--alter", "--topic", "orders", "--partitions", "5")
    assert len(sim.wait_image(lambda i: len(i.topics.topic("orders").partitions) == 5, "5 partitions")
               .topics.topic("orders").partitions) == 5

    create(sim, "kept", {0: [1, 2]})
    tool(kafka_dist, sim, "kafka-topics", "--delete", "--topic", "orders")
    assert sim.synced().topics.topic("orders") is None
    assert tool(kafka_dist, sim, "kafka-topics", "--list").split() == ["kept"]


def test_kafka_configs(kafka_dist: KafkaDistribution, sim: Sim) -> None:
    create(sim, "configured", {0: [1, 2]})
    tool(kafka_dist, sim, "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", "configured",
         "--add-config", "retention.ms=5000,cleanup.policy=[delete,compact]")
    tool(kafka_dist, sim, "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "2",
         "--add-config", "log.cleaner.threads=2")
    image = sim.synced()
    assert image.configs[(TOPIC, "configured")] == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    assert image.configs[(BROKER, "2")] == {"log.cleaner.threads": "2"}

    topic = tool(kafka_dist, sim, "kafka-configs", "--describe", "--entity-type", "topics",
                 "--entity-name", "configured")
    assert "Dynamic configs for topic configured are:" in topic
    assert "retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000, " \
           "DEFAULT_CONFIG:log.retention.hours=168}" in topic
    # --all: every broker config, the dynamic one with its layers, the others Kafka's defaults
    broker = tool(kafka_dist, sim, "kafka-configs", "--describe", "--all", "--entity-type", "brokers",
                  "--entity-name", "2")
    assert "All configs for broker 2 are:" in broker
    assert "log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, " \
           "DEFAULT_CONFIG:log.cleaner.threads=1}" in broker
    assert "num.io.threads=8 sensitive=false synonyms={DEFAULT_CONFIG:num.io.threads=8}" in broker


def test_kafka_acls(kafka_dist: KafkaDistribution, sim: Sim) -> None:
    tool(kafka_dist, sim, "kafka-acls", "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--operation", "Describe", "--topic", "orders", "--resource-pattern-type", "prefixed")
    acls = sim.wait_image(lambda i: len(i.acls) == 2, "two ACLs").acls
    assert sorted((a.principal, a.resource_name, a.operation) for a in acls.values()) == \
        [("User:alice", "orders", 3), ("User:alice", "orders", 8)]  # READ, DESCRIBE

    listed = tool(kafka_dist, sim, "kafka-acls", "--list", "--topic", "orders", "--resource-pattern-type", "prefixed")
    assert "ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)" in listed
    assert sorted(re.findall(r"operation=(\w+)", listed)) == ["DESCRIBE", "READ"]

    tool(kafka_dist, sim, "kafka-acls", "--remove", "--force", "--allow-principal", "User:alice", "--operation",
         "Read", "--topic", "orders", "--resource-pattern-type", "prefixed")
    left = sim.wait_image(lambda i: len(i.acls) == 1, "one ACL left").acls
    assert [a.operation for a in left.values()] == [8]


def test_kafka_reassign_partitions(kafka_dist: KafkaDistribution, sim: Sim, tmp_path: Path) -> None:
    create(sim, "moving", {0: [1, 2]})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "moving", "partition": 0,
                                                              "replicas": [3, 2]}]}))
    executed = tool(kafka_dist, sim, "kafka-reassign-partitions", "--execute", "--reassignment-json-file", str(plan))
    assert "Successfully started partition reassignment for moving-0" in executed
    # the tool printed the assignment it replaces, with the log dirs the brokers reported
    current = json.loads(executed.split("Current partition replica assignment", 1)[1].split("\n\n")[1])
    assert current["partitions"][0]["replicas"] == [1, 2] and "any" not in current["partitions"][0]["log_dirs"]
    image = sim.wait_image(lambda i: list(i.topics.topic("moving").partitions[0].replicas) == [3, 2],
                           "the reassignment completing")
    assert image_partitions(image, "moving")[0][1] == [3, 2]
    verified = tool(kafka_dist, sim, "kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan))
    assert "Reassignment of partition moving-0 is completed." in verified


def test_kafka_leader_election(kafka_dist: KafkaDistribution, sim: Sim) -> None:
    # a leader that is not the preferred one: the same replicas reordered, the leader kept
    create(sim, "electing", {0: [1, 2, 3]})
    admin = KafkaAdminClient(bootstrap_servers=sim.bootstrap)  # the reorder, without a JVM
    try:
        admin.alter_partition_reassignments({TopicPartition("electing", 0): [2, 3, 1]})
    finally:
        admin.close()
    sim.wait_image(lambda i: list(i.topics.topic("electing").partitions[0].replicas) == [2, 3, 1], "the reorder")
    assert image_partitions(sim.synced(), "electing")[0][0] == 1

    out = tool(kafka_dist, sim, "kafka-leader-election", "--election-type", "PREFERRED", "--all-topic-partitions")
    assert "Successfully completed leader election (PREFERRED) for partitions electing-0" in out
    assert image_partitions(sim.synced(), "electing")[0][0] == 2


def test_kafka_metadata_quorum_through_a_broker(kafka_dist: KafkaDistribution, sim: Sim) -> None:
    """DescribeQuorum sent to a broker, which forwards it to the active controller."""
    written = sim.synced().provenance.last_offset
    out = tool(kafka_dist, sim, "kafka-metadata-quorum", "describe", "--status")
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))
    controller = sim.cluster.registry()["nodes"][0]
    assert fields["LeaderId"] == "3001" and fields["ClusterId"] == sim.cluster.registry()["cluster_id"]
    assert int(fields["HighWatermark"]) >= written
    assert json.loads(fields["CurrentVoters"])[0]["endpoints"] == [f"CONTROLLER://127.0.0.1:{controller['port']}"]
    assert sorted(o["id"] for o in json.loads(fields["CurrentObservers"])) == [1, 2, 3]
