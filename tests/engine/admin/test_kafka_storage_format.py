"""Our writer against Kafka's reader: a directory formatted by ``kraftd storage format`` is accepted
by a real Kafka node, which starts and serves on it; and what we write at format time holds the
same facts as what ``kafka-storage format`` writes for the same config.

Also the harness's own node shapes: a static quorum (``controller.quorum.voters``) with a
combined node, and a dynamic one (``--standalone``)."""

from __future__ import annotations

import pytest

from engine.storage.meta_properties import read_meta_properties
from kafka_peer.cluster import KafkaCluster
from kafka_peer.distribution import bootstrap_records

pytestmark = pytest.mark.kafka


def release_of(version: str) -> str:
    """The release a Kafka version formats by default ("4.1" for 4.1.2): a Kafka node refuses a
    metadata.version newer than it knows, so a directory for an older Kafka names its release,
    with our tool as with Kafka's."""
    return ".".join(version.split(".")[:2])


def _serve_a_topic(cluster: KafkaCluster) -> list[bytes]:
    """Create a topic, produce to it and read it back through the node: it serves."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("formatted-by-kraftd", 2, 1)])["formatted-by-kraftd"].result(60)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(5):
        producer.produce("formatted-by-kraftd", value=f"m{i}".encode(), partition=i % 2)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["formatted-by-kraftd"])
    seen: list[bytes] = []
    try:
        for _ in range(600):  # a bound against a hang: each poll waits up to 0.1 s for a message
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                seen.append(message.value())
            if len(seen) == 5:
                break
    finally:
        consumer.close()
    return sorted(seen)


@pytest.mark.parametrize("quorum", ["static", "dynamic"])
def test_kafka_node_starts_and_serves_on_a_directory_formatted_by_kraftd(kafka_dist, tmp_path, quorum):
    cluster = KafkaCluster(kafka_dist, tmp_path / "cluster", voters=1, combined=True, quorum=quorum,
                           formatter="kraftd", release_version=release_of(kafka_dist.version))
    try:
        cluster.start()
        node = cluster.nodes[0]
        meta = read_meta_properties(node.log_dir / "meta.properties")
        assert meta.cluster_id == cluster.cluster_id and meta.node_id == 1
        assert _serve_a_topic(cluster) == [f"m{i}".encode() for i in range(5)]
        assert cluster.wait_leader() == 1
    finally:
        cluster.close()


def test_kraftd_and_kafka_storage_format_write_the_same_facts(kafka_dist, tmp_path):
    """Format one config with each tool for this Kafka's release: meta.properties and the bootstrap
    records (metadata.version and every feature's level) agree. Directory ids are random in both,
    so they are compared as present, not equal. Kafka 4.4's formatter writes those records into
    the first snapshot instead of bootstrap.checkpoint (ours keeps the 4.1-4.3 layout, which 4.4
    reads): the records are compared wherever each tool put them."""
    written = {}
    for formatter in ("kafka-storage", "kraftd"):
        cluster = KafkaCluster(kafka_dist, tmp_path / formatter, voters=1, combined=True, quorum="dynamic",
                               formatter=formatter, release_version=release_of(kafka_dist.version))
        cluster._plan()
        cluster.cluster_id = "MkU3OEVBNTcwNTJENDM2Qg"
        cluster.format()
        node = cluster.nodes[0]
        meta = read_meta_properties(node.log_dir / "meta.properties")
        written[formatter] = (meta, bootstrap_records(node.log_dir),
                              sorted(p.name for p in node.metadata_dir.iterdir()))
    (k_meta, k_boot, k_files), (o_meta, o_boot, o_files) = written["kafka-storage"], written["kraftd"]
    assert (o_meta.version, o_meta.cluster_id, o_meta.node_id) == (k_meta.version, k_meta.cluster_id, k_meta.node_id)
    assert o_meta.directory_id and k_meta.directory_id
    assert o_files == k_files
    assert o_boot == k_boot


def test_the_newest_kafka_server_starts_and_serves_on_a_directory_formatted_by_kraftd(kafka_newest_server, tmp_path):
    """Kafka 4.4's formatter writes its bootstrap records into the 0-0 checkpoint and no
    bootstrap.checkpoint; ours writes the 4.1-4.3 layout, which a 4.4 node must still accept."""
    cluster = KafkaCluster(kafka_newest_server, tmp_path / "cluster", voters=1, combined=True, quorum="dynamic",
                           formatter="kraftd", release_version=release_of(kafka_newest_server.version))
    try:
        cluster.start()
        assert _serve_a_topic(cluster) == [f"m{i}".encode() for i in range(5)]
    finally:
        cluster.close()
